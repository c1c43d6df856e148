#include "drivers/pjrt/tpu_pjrt_lower.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "drivers/pjrt/tpu_pjrt_family.h"
#include "drivers/pjrt/tpu_pjrt_lower_complex.h"
#include "drivers/pjrt/tpu_pjrt_lower_divide.h"
#include "drivers/pjrt/tpu_pjrt_lower_elementwise.h"
#include "drivers/pjrt/tpu_pjrt_lower_matmul.h"
#include "drivers/pjrt/tpu_pjrt_lower_reduce.h"
#include "drivers/pjrt/tpu_pjrt_lowerings.h"
#include "drivers/pjrt/tpu_pjrt_storage.h"
#include "drivers/pjrt/tpu_pjrt_view.h"

/* The state of one lowering: the module and which argument holds what. */
typedef struct lowering {
  tpu_hlo h;
  const tpu_op_call *call; /* the call being lowered, calls[call_index] of the run */
  bool every_storage_an_arg; /* as if every storage had a buffer: the widest this run lowers */
  int call_index;
  tpu_pjrt_program *p;
  int n_storages;
  tpu_buffer *storage[TPU_HLO_MAX_ARGS];
  int storage_call[TPU_HLO_MAX_ARGS], storage_tensor[TPU_HLO_MAX_ARGS]; /* where first named */
  tpu_hlo_value value[TPU_HLO_MAX_ARGS]; /* each storage's latest contents */
  bool written[TPU_HLO_MAX_ARGS];
  bool used[TPU_HLO_MAX_ARGS];  /* value[s] holds its contents */
  int arg_of[TPU_HLO_MAX_ARGS]; /* its argument, or -1 */
  int scalar_arg[TPU_OP_MAX_SCALARS];
  tpu_hlo_value scalar_value[TPU_OP_MAX_SCALARS];
  bool too_many_checks; /* more checks than one program holds: the run must be cut shorter */
} lowering;

/* How an op lowers: the kinds of drivers/pjrt/tpu_pjrt_lowerings.h. */
typedef enum lowering_kind {
  LOWERING_NONE,
  LOWERING_COPY,
  LOWERING_FILL,
  LOWERING_ARANGE,
  LOWERING_ELEMENTWISE,
  LOWERING_REDUCE,
  LOWERING_MATMUL,
  LOWERING_FAMILY,
} lowering_kind;

typedef struct op_lowering {
  lowering_kind kind;
  const tpu_pjrt_family *family; /* LOWERING_FAMILY's */
} op_lowering;

/* The op -> lowering table. Every op has exactly one entry: the count matches the op table, and a
 * second entry for an op would be an initializer override, an error under -Wextra -Werror. */
static const op_lowering lowerings[TPU_OP_COUNT] = {
#define TPU_PJRT_LOWERING_ENTRY(id, kind, family) [TPU_OP_##id] = {LOWERING_##kind, family},
    TPU_PJRT_LOWERINGS(TPU_PJRT_LOWERING_ENTRY)
#undef TPU_PJRT_LOWERING_ENTRY
};

#define TPU_PJRT_LOWERING_ONE(id, kind, family) +1
_Static_assert(0 TPU_PJRT_LOWERINGS(TPU_PJRT_LOWERING_ONE) == TPU_OP_COUNT,
               "the PJRT driver's lowering table must name one lowering for every op");
#undef TPU_PJRT_LOWERING_ONE

static op_lowering lowering_of(tpu_op_id op) {
  return (unsigned)op < TPU_OP_COUNT ? lowerings[op] : (op_lowering){LOWERING_NONE, NULL};
}

const tpu_pjrt_family *tpu_pjrt_family_of(const tpu_op_call *call) {
  op_lowering how = lowering_of(call->op);
  return how.kind == LOWERING_FAMILY && how.family->supports(call) ? how.family : NULL;
}

static bool absent(const tpu_pjrt_family *f, const tpu_op_call *call, int i) {
  return f && f->absent && f->absent(call, i);
}

/* The view tensor i of `call` is read and written through: its own, or the one of its storage
 * its family names instead (into *other). */
static const tpu_tensor *view_of(const tpu_pjrt_family *f, const tpu_op_call *call, int i,
                                 tpu_tensor *other) {
  return f && f->view && f->view(call, i, other) ? other : &call->tensors[i];
}

bool tpu_pjrt_lowerable(const tpu_op_call *call) {
  int n = call->n_inputs + call->n_outputs;
  /* Asked before the launch checks the views: a malformed one is the host's to refuse (its
   * sizes could overflow the arithmetic below). */
  for (int i = 0; i < n; i++)
    if (tpu_tensor_check(&call->tensors[i]) != TPU_OK)
      return false;
  const tpu_pjrt_family *family = tpu_pjrt_family_of(call);
  lowering_kind kind = lowering_of(call->op).kind;
  /* Copies, fills and the matmuls compute on complex numbers (as their parts); nothing else
   * lowers them yet. */
  bool complex_ok = kind == LOWERING_COPY || kind == LOWERING_FILL || kind == LOWERING_MATMUL;
  if (call->n_outputs != 1 && !family)
    return false;
  for (int i = 0; i < n; i++) {
    tpu_tensor other;
    const tpu_tensor *t = view_of(family, call, i, &other);
    bool output = i >= call->n_inputs;
    if (absent(family, call, i))
      continue;
    if (t == &other && tpu_tensor_check(t) != TPU_OK)
      return false;
    if (!tpu_dtype_is_computable(t->dtype) || (tpu_dtype_is_complex(t->dtype) && !complex_ok))
      return false;
    /* An empty view reads or writes nothing a module could slice: such calls run on the host
     * (or, with an empty output, not at all). */
    if (t->buf && (tpu_tensor_numel(t) == 0 || !tpu_pjrt_view_supported(t, output)))
      return false;
  }
  switch (kind) {
  case LOWERING_COPY: /* host to host is not the chip's; other sizes are the host's to refuse */
    return (call->tensors[0].buf || call->tensors[1].buf) &&
           tpu_tensor_same_sizes(&call->tensors[0], &call->tensors[1]);
  case LOWERING_FILL:
    return true;
  case LOWERING_ARANGE:
    return call->tensors[0].ndim == 1 && call->tensors[0].dtype != TPU_BOOL;
  case LOWERING_ELEMENTWISE:
    return call->n_inputs <= 4 && tpu_pjrt_ew_supports(call->op, call->compute);
  case LOWERING_REDUCE:
    return tpu_pjrt_reduce_supports(call);
  case LOWERING_MATMUL:
    return tpu_pjrt_matmul_supports(call);
  case LOWERING_FAMILY:
    return family != NULL;
  case LOWERING_NONE:
    break;
  }
  return false;
}

/* The index of the storage of view t, which stands for tensors[index] of the call being lowered
 * (added on first use). */
static int storage_index(lowering *l, const tpu_tensor *t, int index) {
  for (int i = 0; i < l->n_storages; i++)
    if (l->storage[i] == t->buf)
      return i;
  if (l->n_storages == TPU_HLO_MAX_ARGS) {
    l->h.failed = true; /* reported as too many operands */
    return 0;
  }
  int i = l->n_storages++;
  l->storage[i] = t->buf;
  l->storage_call[i] = l->call_index;
  l->storage_tensor[i] = index;
  l->arg_of[i] = -1;
  l->written[i] = false;
  l->used[i] = false;
  return i;
}

/* Storage s's value on first use: its argument, typed as its buffer is now, or zeros when it has
 * no buffer yet (nothing has written it), as elements of `want` (the dtype of the view that uses
 * it) where they fit its size, so a storage a partial write creates is typed too. */
static tpu_hlo_value storage_value(lowering *l, int s, tpu_dtype want) {
  if (l->used[s])
    return l->value[s];
  l->used[s] = true;
  size_t nbytes = tpu_buffer_nbytes(l->storage[s]);
  tpu_dtype elem;
  if (l->every_storage_an_arg) {
    elem = tpu_pjrt_view_storage_elem(want);
    elem = nbytes % tpu_dtype_size(elem) == 0 ? elem : TPU_UINT8;
  } else if (!tpu_pjrt_storage_elem(tpu_buffer_memory(l->storage[s]), nbytes, &elem)) {
    elem = tpu_pjrt_view_storage_elem(want);
    elem = nbytes % tpu_dtype_size(elem) == 0 ? elem : TPU_UINT8;
    tpu_hlo_value like = {.elem = elem, .rank = 1};
    like.dims[0] = (int64_t)(nbytes / tpu_dtype_size(elem));
    l->p->zeros[l->p->n_zeros++] =
        (tpu_pjrt_slot){TPU_PJRT_STORAGE, l->storage_call[s], l->storage_tensor[s], elem};
    l->value[s] = tpu_hlo_full(&l->h, elem, tpu_dtype_is_floating(elem) ? "0.0" : "0", &like);
    return l->value[s];
  }
  int64_t n = (int64_t)(nbytes / tpu_dtype_size(elem));
  l->arg_of[s] = l->p->n_args;
  l->value[s] = tpu_hlo_arg(&l->h, elem, 1, &n, -1);
  if (l->p->n_args < TPU_HLO_MAX_ARGS)
    l->p->args[l->p->n_args++] = (tpu_pjrt_slot){
        TPU_PJRT_STORAGE, l->storage_call[s], l->storage_tensor[s], elem};
  return l->value[s];
}

/* Where tensors[index] of the call being lowered, a host view, sits in the run. */
static tpu_pjrt_slot host_slot(const lowering *l, int index, tpu_dtype dtype) {
  return (tpu_pjrt_slot){TPU_PJRT_HOST, l->call_index, index, dtype};
}

/* A host operand, tensors[index]: an argument of its dense contents. */
static tpu_hlo_value host_arg(lowering *l, const tpu_tensor *t, int index) {
  /* bool travels as uint8 bytes (an i1 argument would be a PRED buffer), complex as its parts. */
  tpu_dtype value = tpu_pjrt_view_value_elem(t->dtype);
  tpu_dtype type = t->dtype == TPU_BOOL ? TPU_UINT8 : value;
  int64_t dims[TPU_MAX_DIMS + 1];
  tpu_hlo_value v = tpu_hlo_arg(&l->h, type, tpu_pjrt_view_value_dims(t, dims), dims, -1);
  if (l->p->n_args < TPU_HLO_MAX_ARGS)
    l->p->args[l->p->n_args++] = host_slot(l, index, type);
  return tpu_hlo_cast(&l->h, v, value);
}

static tpu_hlo_value scalar_arg(void *ctx, int slot, bool is_float) {
  lowering *l = ctx;
  if (l->scalar_arg[slot] < 0) {
    tpu_dtype type = is_float ? TPU_FLOAT64 : TPU_INT64;
    l->scalar_arg[slot] = l->p->n_args;
    l->scalar_value[slot] = tpu_hlo_arg(&l->h, type, 0, NULL, -1);
    if (l->p->n_args < TPU_HLO_MAX_ARGS)
      l->p->args[l->p->n_args++] = (tpu_pjrt_slot){TPU_PJRT_SCALAR, l->call_index, slot, type};
  }
  return l->scalar_value[slot];
}

/* The elements of view t, which stands for tensors[index] of the call being lowered. */
static tpu_hlo_value read_view(lowering *l, const tpu_tensor *t, int index) {
  if (!t->buf)
    return host_arg(l, t, index);
  return tpu_pjrt_view_read(&l->h, storage_value(l, storage_index(l, t, index), t->dtype), t);
}

static tpu_hlo_value read_input(lowering *l, const tpu_tensor *t) {
  return read_view(l, t, (int)(t - l->call->tensors));
}

/* `x` broadcast to `out`'s sizes, dimensions aligned from the right. */
static tpu_hlo_value broadcast_to(lowering *l, tpu_hlo_value x, const tpu_tensor *out) {
  int64_t bdims[TPU_MAX_DIMS];
  for (int i = 0; i < x.rank; i++)
    bdims[i] = out->ndim - x.rank + i;
  return tpu_hlo_broadcast(&l->h, x, out->ndim, out->sizes, bdims);
}

/* Writes `value` (converted to the type of t's values: complex ones are given as their parts)
 * into view t, which stands for output tensors[index] of the call being lowered. */
static void write_view(lowering *l, const tpu_tensor *t, int index, tpu_hlo_value value) {
  tpu_dtype elem = tpu_pjrt_view_value_elem(t->dtype);
  value = tpu_hlo_cast(&l->h, value, elem);
  if (!t->buf) {
    if (l->p->n_results < TPU_HLO_MAX_RESULTS)
      l->p->results[l->p->n_results++] = host_slot(l, index, t->dtype);
    tpu_hlo_result(&l->h, tpu_hlo_convert(&l->h, value, t->dtype == TPU_BOOL ? TPU_UINT8 : elem));
    return;
  }
  int s = storage_index(l, t, index);
  size_t nbytes = tpu_buffer_nbytes(t->buf);
  if (!l->used[s] && tpu_pjrt_view_covers(t, nbytes)) {
    l->value[s] = tpu_pjrt_view_write(&l->h, NULL, t, value);
  } else {
    tpu_hlo_value old = storage_value(l, s, t->dtype);
    l->value[s] = tpu_pjrt_view_write(&l->h, &old, t, value);
  }
  l->used[s] = true;
  l->written[s] = true;
}

static void write_output(lowering *l, const tpu_tensor *t, tpu_hlo_value value) {
  write_view(l, t, (int)(t - l->call->tensors), value);
}

/* A flag result: nonzero makes the run fail with `message` and status `code`. */
static void add_check(lowering *l, tpu_hlo_value flag, const char *message, tpu_status code) {
  tpu_pjrt_program *p = l->p;
  if (p->n_messages == TPU_PJRT_MAX_RUN || p->n_results == TPU_HLO_MAX_RESULTS) {
    l->too_many_checks = true;
    return;
  }
  snprintf(p->messages[p->n_messages], TPU_PJRT_MESSAGE_LEN, "%s", message);
  p->message_status[p->n_messages] = code;
  p->message_call[p->n_messages] = l->call_index;
  p->results[p->n_results++] =
      (tpu_pjrt_slot){TPU_PJRT_CHECK, l->call_index, p->n_messages++, TPU_UINT8};
  tpu_hlo_result(&l->h, flag);
}

static bool is_dropped(tpu_buffer *b, tpu_buffer *const *dropped, int n_dropped) {
  for (int i = 0; i < n_dropped; i++)
    if (dropped[i] == b)
      return true;
  return false;
}

/* One result per written storage not dropped; each argument that held one donates its buffer to
 * it (when the types agree), unless a check may fail the run. */
static void finish_results(lowering *l, tpu_buffer *const *dropped, int n_dropped) {
  for (int s = 0; s < l->n_storages; s++) {
    if (!l->written[s] || is_dropped(l->storage[s], dropped, n_dropped))
      continue;
    int r = l->p->n_results;
    tpu_dtype elem = l->value[s].elem;
    int a = l->arg_of[s]; /* past h's arguments when the module overflowed (refused below) */
    if (a >= 0 && a < l->h.n_args && l->p->n_messages == 0 && l->h.args[a].elem == elem)
      l->h.arg_alias[a] = r;
    if (r < TPU_HLO_MAX_RESULTS)
      l->p->results[l->p->n_results++] = (tpu_pjrt_slot){
          TPU_PJRT_STORAGE, l->storage_call[s], l->storage_tensor[s], elem};
    tpu_hlo_result(&l->h, l->value[s]);
  }
}

/* start + i * step as PyTorch CPU's loop computes it (ops/tpu_ops_index.h): in float64 for
 * float32 and float64, float32 for float16 and bfloat16, wrapping int64 for integers. */
static void lower_arange(lowering *l, const tpu_tensor *out) {
  bool floating = tpu_dtype_is_floating(out->dtype);
  tpu_dtype work = !floating                    ? TPU_INT64
                   : tpu_dtype_size(out->dtype) == 2 ? TPU_FLOAT32
                                                     : TPU_FLOAT64;
  tpu_hlo_value start = scalar_arg(l, floating ? 0 : 2, floating);
  tpu_hlo_value step = scalar_arg(l, floating ? 1 : 3, floating);
  tpu_hlo_value i = tpu_hlo_iota(&l->h, work, out->sizes[0]);
  start = tpu_hlo_splat(&l->h, tpu_hlo_convert(&l->h, start, work), &i);
  step = tpu_hlo_splat(&l->h, tpu_hlo_convert(&l->h, step, work), &i);
  write_output(l, out, tpu_hlo_binary(&l->h, "add", start, tpu_hlo_binary(&l->h, "multiply", i,
                                                                           step)));
}

static void lower_fill(lowering *l, const tpu_tensor *out) {
  bool is_float = tpu_dtype_is_floating(out->dtype) || tpu_dtype_is_complex(out->dtype);
  tpu_hlo_value s = scalar_arg(l, 0, is_float);
  tpu_hlo_value like = {.elem = s.elem, .rank = out->ndim};
  memcpy(like.dims, out->sizes, (size_t)out->ndim * sizeof *out->sizes);
  tpu_hlo_value value = tpu_hlo_splat(&l->h, s, &like);
  if (tpu_dtype_is_complex(out->dtype)) /* scalars[1] is the imaginary part */
    value = tpu_pjrt_complex_pair(&l->h, value, tpu_hlo_splat(&l->h, scalar_arg(l, 1, true),
                                                              &like));
  write_output(l, out, value);
}

/* A copy converts as COPY's contract says; its views have equal sizes (a broadcast source reads
 * as its full sizes). */
static void lower_copy(lowering *l, const tpu_tensor *src, const tpu_tensor *dst) {
  write_output(l, dst, tpu_pjrt_complex_convert(&l->h, read_input(l, src), src->dtype,
                                                dst->dtype));
}

static void lower_family(lowering *l, const tpu_pjrt_family *f, const tpu_op_call *call) {
  tpu_hlo_value in[TPU_PJRT_FAMILY_MAX_IN + TPU_PJRT_FAMILY_MAX_OUT],
      outs[TPU_PJRT_FAMILY_MAX_OUT], bad[TPU_PJRT_FAMILY_MAX_CHECKS];
  if (call->n_inputs > TPU_PJRT_FAMILY_MAX_IN || call->n_outputs > TPU_PJRT_FAMILY_MAX_OUT) {
    l->h.failed = true;
    return;
  }
  tpu_tensor other;
  for (int i = 0; i < call->n_inputs + call->n_outputs; i++) {
    bool output = i >= call->n_inputs;
    if (!absent(f, call, i) &&
        (!output || (f->reads_output && f->reads_output(call, i - call->n_inputs))))
      in[i] = read_view(l, view_of(f, call, i, &other), i);
  }
  f->emit(&l->h, call, in, scalar_arg, l, outs, bad);
  for (int k = 0, i = call->n_inputs; k < call->n_outputs; k++, i++)
    if (!absent(f, call, i))
      write_view(l, view_of(f, call, i, &other), i, outs[k]);
  for (int c = 0; c < TPU_PJRT_FAMILY_MAX_CHECKS && f->message; c++) {
    char message[TPU_PJRT_MESSAGE_LEN];
    tpu_status code = TPU_ERR_INDEX;
    if (f->message(call, c, message, sizeof message, &code))
      add_check(l, bad[c], message, code);
  }
}

/* Adds one call to the module. */
static void lower_call(lowering *l, const tpu_op_call *call) {
  l->call = call;
  for (int k = 0; k < TPU_OP_MAX_SCALARS; k++)
    l->scalar_arg[k] = -1;
  const tpu_tensor *out = &call->tensors[call->n_inputs];
  tpu_hlo_value in[4];
  switch (lowering_of(call->op).kind) {
  case LOWERING_FILL:
    lower_fill(l, out);
    break;
  case LOWERING_ARANGE:
    lower_arange(l, out);
    break;
  case LOWERING_COPY:
    lower_copy(l, &call->tensors[0], out);
    break;
  case LOWERING_FAMILY:
    lower_family(l, tpu_pjrt_family_of(call), call);
    break;
  case LOWERING_REDUCE:
    write_output(l, out, tpu_pjrt_reduce_emit(&l->h, call, read_input(l, &call->tensors[0])));
    break;
  case LOWERING_MATMUL:
    for (int i = 0; i < call->n_inputs && i < 3; i++)
      in[i] = read_input(l, &call->tensors[i]);
    write_output(l, out, tpu_pjrt_matmul_emit(&l->h, call, in, scalar_arg, l));
    break;
  case LOWERING_ELEMENTWISE:
    for (int i = 0; i < call->n_inputs && i < 4; i++)
      in[i] = broadcast_to(l, read_input(l, &call->tensors[i]), out);
    if (tpu_pjrt_int_divides(call)) {
      tpu_hlo_value zero;
      write_output(l, out, tpu_pjrt_int_divide(&l->h, call, in[0], in[1], &zero));
      add_check(l, zero, "ZeroDivisionError", TPU_ERR_RUNTIME);
    } else {
      write_output(l, out, tpu_pjrt_ew_emit(&l->h, call, in, scalar_arg, l));
    }
    break;
  case LOWERING_NONE: /* refused by tpu_pjrt_lowerable: the run is the host's */
    l->h.failed = true;
    break;
  }
}

/* Builds one program from body(l, ctx), which adds its ops to the module; `what` names them in
 * errors. */
static tpu_status lower_module(void (*body)(lowering *l, const void *ctx), const void *ctx,
                               const char *what, tpu_buffer *const *dropped, int n_dropped,
                               bool widest, tpu_pjrt_program **out) {
  *out = NULL;
  tpu_pjrt_program *p = calloc(1, sizeof *p);
  lowering *l = p ? calloc(1, sizeof *l) : NULL;
  if (!l) {
    free(p);
    return tpu_error(TPU_ERR_OUT_OF_MEMORY, "out of host memory to lower %s", what);
  }
  tpu_hlo_init(&l->h);
  l->p = p;
  l->every_storage_an_arg = widest;
  body(l, ctx);
  finish_results(l, dropped, n_dropped);
  bool too_many = l->too_many_checks || p->n_args != l->h.n_args ||
                  p->n_results != l->h.n_results ||
                  l->n_storages == TPU_HLO_MAX_ARGS || l->h.n_args == TPU_HLO_MAX_ARGS ||
                  l->h.n_results == TPU_HLO_MAX_RESULTS;
  tpu_status st = too_many ? tpu_error(TPU_ERR_NOT_IMPLEMENTED,
                                       "%s: more operands than one PJRT module holds", what)
                           : tpu_hlo_finish(&l->h, &p->text, &p->len);
  tpu_hlo_free(&l->h);
  free(l);
  if (st != TPU_OK) {
    tpu_pjrt_program_free(p);
    return st;
  }
  *out = p;
  return TPU_OK;
}

typedef struct run {
  const tpu_op_call *const *calls;
  int n;
} run;

static void lower_calls(lowering *l, const void *ctx) {
  const run *r = ctx;
  for (int i = 0; i < r->n; i++) {
    l->call_index = i;
    lower_call(l, r->calls[i]);
  }
}

static tpu_status lower_run(const tpu_op_call *const *calls, int n, tpu_buffer *const *dropped,
                            int n_dropped, bool widest, tpu_pjrt_program **out) {
  *out = NULL;
  if (n < 1 || n > TPU_PJRT_MAX_RUN)
    return tpu_error(TPU_ERR_VALUE, "a PJRT module holds 1 to %d calls, not %d",
                     TPU_PJRT_MAX_RUN, n);
  for (int i = 0; i < n; i++)
    if (!tpu_pjrt_lowerable(calls[i]))
      return tpu_error(TPU_ERR_NOT_IMPLEMENTED, "the PJRT driver has no lowering for %s",
                       tpu_op_name(calls[i]->op));
  char what[96];
  snprintf(what, sizeof what, "%d calls from %s on", n, tpu_op_name(calls[0]->op));
  run r = {calls, n};
  return lower_module(lower_calls, &r, what, dropped, n_dropped, widest, out);
}

tpu_status tpu_pjrt_lower(const tpu_op_call *const *calls, int n, tpu_buffer *const *dropped,
                          int n_dropped, tpu_pjrt_program **out) {
  return lower_run(calls, n, dropped, n_dropped, false, out);
}

tpu_status tpu_pjrt_run_fits(const tpu_op_call *const *calls, int n, bool *fits) {
  tpu_pjrt_program *p;
  tpu_status st = lower_run(calls, n, NULL, 0, true, &p);
  tpu_pjrt_program_free(p);
  *fits = st == TPU_OK;
  return st == TPU_ERR_NOT_IMPLEMENTED ? TPU_OK : st;
}

bool tpu_pjrt_nonfinite_lowers(const tpu_tensor *t) {
  return t->buf && tpu_dtype_is_floating(t->dtype) && tpu_dtype_is_computable(t->dtype) &&
         !tpu_dtype_is_complex(t->dtype) && tpu_tensor_check(t) == TPU_OK &&
         tpu_tensor_numel(t) > 0 && tpu_pjrt_view_supported(t, false);
}

static void lower_scan(lowering *l, const void *ctx) {
  l->call = ctx;
  tpu_hlo_value v = read_input(l, &l->call->tensors[0]);
  tpu_hlo_value bad = tpu_hlo_unary(&l->h, "not", tpu_hlo_unary(&l->h, "is_finite", v));
  write_output(l, &l->call->tensors[1], tpu_hlo_any(&l->h, bad));
}

tpu_status tpu_pjrt_lower_nonfinite(const tpu_op_call *scan, tpu_pjrt_program **out) {
  *out = NULL;
  const tpu_tensor *t = &scan->tensors[0];
  if (!tpu_pjrt_nonfinite_lowers(t))
    return tpu_error(TPU_ERR_NOT_IMPLEMENTED, "the PJRT driver cannot scan this %s view",
                     tpu_dtype_name(t->dtype));
  return lower_module(lower_scan, scan, "a NaN scan", NULL, 0, false, out);
}

void tpu_pjrt_program_free(tpu_pjrt_program *p) {
  if (!p)
    return;
  free(p->text);
  free(p);
}
