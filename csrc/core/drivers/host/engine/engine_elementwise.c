#include "drivers/host/engine/engine_elementwise.h"

#include <string.h>

#include "drivers/host/kernels/elementwise/elementwise.h"
#include "drivers/host/engine/engine_iter.h"

/* Elements per block of the buffered path: small enough that every operand's buffer stays in L1,
 * large enough that the per-block calls cost nothing. */
#define BLOCK 512

/* Bytes of one buffer: a block of the widest loop type. */
#define BUF_BYTES (BLOCK * 8)

/* How one operand reaches the loop. */
typedef struct operand {
  tpu_dtype actual;   /* the tensor's dtype */
  tpu_dtype want;     /* the loop's dtype for it */
  tpu_dtype via;      /* the compute dtype a conversion passes through, or TPU_DTYPE_COUNT */
  tpu_loop_fn to_via; /* actual -> via (outputs: want -> via), when via is set */
  tpu_loop_fn last;   /* the final conversion (into want for inputs, into actual for outputs), or
                         NULL for a plain copy */
  bool buffered;      /* gathered or scattered through a buffer */
} operand;

typedef struct plan {
  tpu_iter it;
  tpu_ew_loop loop;
  tpu_ew_ctx ctx;
  int n_out, nops;
  bool direct; /* every operand dense and of its loop dtype: no buffer at all */
  operand ops[TPU_EW_MAX_OPERANDS];
} plan;

static bool is_real(tpu_dtype d) { return d <= TPU_FLOAT64; }

tpu_dtype tpu_ew_loop_dtype(tpu_dtype compute) {
  return compute == TPU_FLOAT16 || compute == TPU_BFLOAT16 ? TPU_FLOAT32 : compute;
}

static const tpu_ew_op *const *const op_tables[TPU_OP_COUNT] = {
#define EW_TABLE_ENTRY(id, kernel) [TPU_OP_##id] = &kernel##_table,
    TPU_HOST_KERNELS_ELEMENTWISE(EW_TABLE_ENTRY)
#undef EW_TABLE_ENTRY
};

const tpu_ew_op *tpu_ew_op_of(tpu_op_id op) {
  return (unsigned)op < TPU_OP_COUNT && op_tables[op] ? *op_tables[op] : NULL;
}

bool tpu_ew_supports(tpu_op_id op, tpu_dtype compute) {
  if ((unsigned)op >= TPU_OP_COUNT || !op_tables[op] || !is_real(compute))
    return false;
  return (*op_tables[op])->loops[tpu_ew_loop_dtype(compute)] != NULL;
}

/* A strided copy of same-size elements; the buffers it touches never overlap the tensors. */
static void copy_elems(char *dst, int64_t ds, const char *src, int64_t ss, int64_t n, size_t size) {
  for (int64_t i = 0; i < n; i++)
    memcpy(dst + i * ds, src + i * ss, size);
}

/* Moves n elements from src to dst through the operand's conversions (`reverse` for outputs). */
static void move(const operand *o, bool reverse, char *dst, int64_t ds, const char *src,
                 int64_t ss, int64_t n) {
  tpu_dtype from = reverse ? o->want : o->actual;
  _Alignas(64) char mid[BUF_BYTES];
  if (o->via != TPU_DTYPE_COUNT) {
    char *d[2] = {mid, (char *)src};
    int64_t s[2] = {(int64_t)tpu_dtype_size(o->via), ss};
    o->to_via(d, s, n, NULL);
    src = mid, ss = s[0], from = o->via;
  }
  if (o->last) {
    char *d[2] = {dst, (char *)src};
    int64_t s[2] = {ds, ss};
    o->last(d, s, n, NULL);
  } else {
    copy_elems(dst, ds, src, ss, n, tpu_dtype_size(from));
  }
}

/* One run of the buffered path: every buffered input is gathered (and converted) into its buffer a
 * block at a time, the loop runs on dense pointers, buffered outputs are scattered back. An input
 * that is constant along the run (stride 0) is converted once and repeated over its buffer. */
static void run_buffered(const plan *p, char **data, const int64_t *strides, int64_t n) {
  _Alignas(64) char buf[TPU_EW_MAX_OPERANDS][BUF_BYTES];
  for (int k = p->n_out; k < p->nops; k++) {
    const operand *o = &p->ops[k];
    if (o->buffered && strides[k] == 0) {
      size_t size = tpu_dtype_size(o->want);
      move(o, false, buf[k], (int64_t)size, data[k], 0, 1);
      for (int64_t i = 1; i < (n < BLOCK ? n : BLOCK); i++)
        memcpy(buf[k] + i * (int64_t)size, buf[k], size);
    }
  }
  for (int64_t done = 0; done < n; done += BLOCK) {
    int64_t m = n - done < BLOCK ? n - done : BLOCK;
    char *ptr[TPU_EW_MAX_OPERANDS];
    for (int k = 0; k < p->nops; k++) {
      const operand *o = &p->ops[k];
      char *at = data[k] + done * strides[k];
      ptr[k] = o->buffered ? buf[k] : at;
      if (o->buffered && k >= p->n_out && strides[k] != 0)
        move(o, false, buf[k], (int64_t)tpu_dtype_size(o->want), at, strides[k], m);
    }
    p->loop(ptr, m, &p->ctx);
    for (int k = 0; k < p->n_out; k++) {
      const operand *o = &p->ops[k];
      if (o->buffered)
        move(o, true, data[k] + done * strides[k], strides[k], buf[k],
             (int64_t)tpu_dtype_size(o->want), m);
    }
  }
}

static void run_plan(char **data, const int64_t *strides, int64_t n, void *arg) {
  const plan *p = arg;
  if (p->direct)
    p->loop(data, n, &p->ctx);
  else
    run_buffered(p, data, strides, n);
}

/* Adds a tensor to the iterator, broadcast to the iterator's shape; false when it cannot be. */
static bool add_broadcast(tpu_iter *it, const tpu_tensor *t, int ndim, const int64_t *shape) {
  if (t->ndim > ndim)
    return false;
  int64_t elsize = (int64_t)tpu_dtype_size(t->dtype);
  int64_t strides[TPU_MAX_DIMS];
  int lead = ndim - t->ndim;
  for (int d = 0; d < ndim; d++) {
    int64_t size = d < lead ? 1 : t->sizes[d - lead];
    if (size != shape[d] && size != 1)
      return false;
    /* Unused, so not multiplied (it could overflow): the stride of a size-1 dimension, and any
     * stride when there is no element (tpu_iter_add_tensor says why). */
    strides[d] = size == 1 || it->numel == 0 ? 0 : t->strides[d - lead] * elsize;
  }
  tpu_iter_add(it, tpu_tensor_data(t), elsize, strides);
  return true;
}

/* Sets how operand k (an output when k < n_out) gets from its tensor's dtype to the loop's. */
static void plan_conversion(operand *o, tpu_dtype compute, bool output, bool keep_precision) {
  o->via = TPU_DTYPE_COUNT;
  /* A float16/bfloat16 result is rounded to the compute dtype before any further conversion, and a
   * foreign input is rounded to it before it widens to float: also when the operand is float32
   * itself, the loop's own dtype (a bfloat16 exp into a float32 out=, a float32 0-d input of a
   * bfloat16 add), as PyTorch computes in the common dtype and casts the result. */
  bool through =
      compute != o->want && o->want != TPU_BOOL && o->actual != compute && !keep_precision;
  if (!through && o->actual == o->want)
    return;
  if (through) {
    o->via = compute;
    o->to_via = output ? tpu_cast_loop(o->want, compute) : tpu_cast_loop(o->actual, compute);
    o->last = output ? tpu_cast_loop(compute, o->actual) : tpu_cast_loop(compute, o->want);
  } else {
    o->last = output ? tpu_cast_loop(o->want, o->actual) : tpu_cast_loop(o->actual, o->want);
  }
}

static void load_ctx(tpu_ew_ctx *ctx, const tpu_op_call *call) {
  ctx->call = call;
  for (int k = 0; k < TPU_OP_MAX_SCALARS; k++) {
    ctx->f64[k] = call->scalars[k].f;
    ctx->f32[k] = (float)call->scalars[k].f;
    ctx->i64[k] = call->scalars[k].i;
  }
}

tpu_status tpu_ew_run(const tpu_op_call *call, const tpu_ew_op *op) {
  const char *name = tpu_op_name(call->op);
  int n_in = call->n_inputs, n_out = call->n_outputs;
  if (n_in < 1 || n_in > TPU_EW_MAX_INPUTS || n_out < 1 || n_out > TPU_EW_MAX_OUTPUTS)
    return tpu_error(TPU_ERR_VALUE, "%s: %d inputs and %d outputs is not an elementwise call",
                     name, n_in, n_out);
  tpu_dtype compute = call->compute;
  tpu_dtype loop_dtype = is_real(compute) ? tpu_ew_loop_dtype(compute) : TPU_DTYPE_COUNT;
  if (loop_dtype == TPU_DTYPE_COUNT || !op->loops[loop_dtype])
    return tpu_error(TPU_ERR_NOT_IMPLEMENTED, "\"%s\" is not implemented for '%s' on tpu", name,
                     tpu_dtype_name(compute));
  plan p;
  memset(&p, 0, sizeof p);
  p.loop = op->loops[loop_dtype];
  p.n_out = n_out;
  p.nops = n_in + n_out;
  const tpu_tensor *out0 = &call->tensors[n_in];
  tpu_iter_init(&p.it, out0->ndim, out0->sizes);
  for (int k = 0; k < p.nops; k++) {
    bool output = k < n_out;
    const tpu_tensor *t = &call->tensors[output ? n_in + k : k - n_out];
    operand *o = &p.ops[k];
    o->actual = t->dtype;
    o->want = op->bool_operands & TPU_EW_BOOL(k) ? TPU_BOOL : loop_dtype;
    if (!is_real(t->dtype))
      return tpu_error(TPU_ERR_NOT_IMPLEMENTED, "\"%s\" is not implemented for '%s' on tpu",
                       name, tpu_dtype_name(t->dtype));
    if (!add_broadcast(&p.it, t, out0->ndim, out0->sizes) ||
        (output && !tpu_tensor_same_sizes(t, out0)))
      return tpu_error(TPU_ERR_VALUE, "%s: operand %d does not broadcast to the output shape",
                       name, k);
    bool keep = (op->flags & TPU_EW_OPMATH_SCALAR1) && k == n_out + 1 &&
                tpu_tensor_numel(t) == 1;
    plan_conversion(o, compute, output, keep);
  }
  if (p.it.numel == 0)
    return TPU_OK;
  tpu_iter_build(&p.it, 0);
  p.direct = true;
  for (int k = 0; k < p.nops; k++) {
    operand *o = &p.ops[k];
    int64_t dense = (int64_t)tpu_dtype_size(o->want);
    o->buffered =
        o->actual != o->want || o->via != TPU_DTYPE_COUNT || p.it.strides[0][k] != dense;
    p.direct &= !o->buffered;
  }
  int failed = 0;
  load_ctx(&p.ctx, call);
  p.ctx.failed = &failed;
  tpu_iter_run_parallel(&p.it, run_plan, &p);
  if (__atomic_load_n(&failed, __ATOMIC_RELAXED))
    return tpu_error(TPU_ERR_RUNTIME, "ZeroDivisionError");
  return TPU_OK;
}
