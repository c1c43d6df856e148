/* The reduction engine's plan (kept and reduced dimensions, mode) and final values; the walk and
 * the parallel split are in reduce_run.c, the loops in reduce_loops.c. See
 * reduce.h for the design. */
#include "drivers/host/kernels/reduce/reduce.h"

#include <math.h>
#include <string.h>

/* ---- Final values ---- */

void rk_store(tpu_dtype dt, char *p, bool is_int, int64_t i, double f) {
  union {
    uint8_t u8;
    int8_t i8;
    int16_t i16;
    int32_t i32;
    int64_t i64;
    uint16_t h;
    float f32;
    double f64;
  } v;
  double x = is_int ? (double)i : f;
  int64_t n = is_int ? i : (x >= -0x1p63 && x < 0x1p63 ? (int64_t)x : INT64_MIN);
  switch (dt) {
  case TPU_BOOL: v.u8 = is_int ? i != 0 : f != 0; break;
  case TPU_UINT8: v.u8 = (uint8_t)n; break;
  case TPU_INT8: v.i8 = (int8_t)n; break;
  case TPU_INT16: v.i16 = (int16_t)n; break;
  case TPU_INT32: v.i32 = (int32_t)n; break;
  case TPU_INT64: v.i64 = n; break;
  case TPU_FLOAT16: v.h = tpu_f32_to_f16((float)x); break;
  case TPU_BFLOAT16: v.h = tpu_f32_to_bf16((float)x); break;
  case TPU_FLOAT32: v.f32 = (float)x; break;
  default: v.f64 = x; break;
  }
  memcpy(p, &v, tpu_dtype_size(dt));
}

double rk_first_pass(const rk_plan *pl, const rk_state *st) {
  if (pl->pre == RK_SUM)
    return st->f / (double)pl->n_red;
  return isinf(st->f) ? 0.0 : st->f;
}

void rk_finish(const rk_plan *pl, const rk_state *st, double aux, char *o0, char *o1) {
  const rk_spec *s = pl->spec;
  const bool ints = pl->cls == RK_I;
  const double n = (double)pl->n_red;
  switch (s->fin) {
  case RK_VALUE:
    if (s->kind == RK_ARGMAX || s->kind == RK_ARGMIN) {
      if (pl->nout == 2)
        rk_store(pl->out_dtype[0], o0, ints, st->i, st->f);
      rk_store(pl->out_dtype[pl->nout - 1], pl->nout == 2 ? o1 : o0, true, st->idx, 0);
    } else if (s->kind == RK_COUNT) {
      rk_store(pl->out_dtype[0], o0, true, st->i, 0);
    } else if (s->kind == RK_LSE) {
      rk_store(pl->out_dtype[0], o0, false, 0, log(st->f) + aux);
    } else {
      rk_store(pl->out_dtype[0], o0, ints, st->i, st->f);
    }
    break;
  case RK_MEAN: rk_store(pl->out_dtype[0], o0, false, 0, st->f / n); break;
  case RK_ANY: rk_store(pl->out_dtype[0], o0, true, st->i > 0, 0); break;
  case RK_ALL: rk_store(pl->out_dtype[0], o0, true, (double)st->i == n, 0); break;
  case RK_SQRT: rk_store(pl->out_dtype[0], o0, false, 0, sqrt(st->f)); break;
  case RK_ROOT: rk_store(pl->out_dtype[0], o0, false, 0, pow(st->f, 1.0 / s->p)); break;
  case RK_VARIANCE: {
    double dof = n - s->p > 0 ? n - s->p : 0;
    double var = (st->g - st->f * st->f / n) / dof;
    if (var < 0)
      var = 0; /* the correction can undershoot by an ulp */
    rk_store(pl->out_dtype[0], o0, false, 0, s->sqrt ? sqrt(var) : var);
    if (pl->nout == 2)
      rk_store(pl->out_dtype[1], o1, false, 0, aux);
    break;
  }
  }
}

/* ---- Plan ---- */

static void add_dim(rk_dims *d, int64_t size, const int64_t strides[RK_OPS]) {
  d->shape[d->nd] = size;
  for (int op = 0; op < RK_OPS; op++)
    d->stride[op][d->nd] = strides[op];
  d->nd++;
}

static uint64_t mag(int64_t v) { return v < 0 ? -(uint64_t)v : (uint64_t)v; }

/* Orders dimensions by the input's stride (smallest first; a stable sort keeps the logical order
 * of ties) unless `logical`, then merges neighbours that are contiguous for every operand. An
 * empty set becomes one dimension of size 1. */
static void normalize(rk_dims *d, bool logical) {
  if (!logical)
    for (int i = 1; i < d->nd; i++)
      for (int j = i; j > 0 && mag(d->stride[0][j]) < mag(d->stride[0][j - 1]); j--) {
        int64_t s = d->shape[j];
        d->shape[j] = d->shape[j - 1];
        d->shape[j - 1] = s;
        for (int op = 0; op < RK_OPS; op++) {
          int64_t t = d->stride[op][j];
          d->stride[op][j] = d->stride[op][j - 1];
          d->stride[op][j - 1] = t;
        }
      }
  int kept = 0;
  for (int k = 1; k < d->nd; k++) {
    bool merge = true;
    for (int op = 0; op < RK_OPS; op++)
      merge &= d->stride[op][k] == d->stride[op][kept] * d->shape[kept];
    if (merge) {
      d->shape[kept] *= d->shape[k];
    } else {
      kept++;
      d->shape[kept] = d->shape[k];
      for (int op = 0; op < RK_OPS; op++)
        d->stride[op][kept] = d->stride[op][k];
    }
  }
  if (d->nd == 0) {
    d->shape[0] = 1;
    for (int op = 0; op < RK_OPS; op++)
      d->stride[op][0] = 0;
  }
  d->nd = kept + 1;
}

/* The real dtype whose pairs make up a complex one. */
static tpu_dtype real_of(tpu_dtype dt) {
  return dt == TPU_COMPLEX64 ? TPU_FLOAT32 : dt == TPU_COMPLEX128 ? TPU_FLOAT64 : dt;
}

/* The base of tensors without elements: offsets from it stay defined, nothing is accessed. */
static _Alignas(16) char nothing[16];

static tpu_status plan(const tpu_op_call *call, const rk_spec *spec, rk_plan *pl) {
  memset(pl, 0, sizeof *pl);
  const tpu_tensor *in = &call->tensors[0];
  pl->spec = spec;
  pl->nout = call->n_outputs;
  if (call->n_inputs != 1 || pl->nout < 1 || pl->nout > 2)
    return tpu_error(TPU_ERR_VALUE, "reduction: expected one input and one or two outputs");
  /* A complex sum is the sum of its real view, with a kept dimension of 2 for the parts. */
  bool as_real = tpu_dtype_is_complex(in->dtype) && !spec->abs;
  tpu_dtype compute = as_real ? real_of(spec->compute) : spec->compute;
  pl->cls = rk_class_of(compute);
  pl->pre = spec->kind == RK_VAR ? RK_SUM : spec->kind == RK_LSE ? RK_MAX : RK_NONE;
  tpu_dtype in_dt = as_real ? real_of(in->dtype) : in->dtype;
  /* A cast to bool tests x != 0; going through int64 would truncate 0.25 to false. */
  const bool to_bool = compute == TPU_BOOL && !spec->abs;
  pl->load = to_bool ? rk_bool_loader(in_dt) : rk_loader(in_dt, pl->cls, spec->abs);
  if (!pl->load || !rk_row(spec->kind, pl->cls) || (as_real && spec->kind != RK_SUM))
    return tpu_error(TPU_ERR_NOT_IMPLEMENTED, "reduction %d of %s in %s is not implemented",
                     (int)spec->kind, tpu_dtype_name(in->dtype), tpu_dtype_name(spec->compute));
  pl->elsize = (int64_t)tpu_dtype_size(in_dt);
  pl->direct = !spec->abs && compute == in_dt &&
               (in_dt == TPU_FLOAT32 || in_dt == TPU_FLOAT64 || in_dt == TPU_INT64);
  pl->narrow = compute != in_dt && !to_bool && compute != TPU_FLOAT32 &&
               compute != TPU_FLOAT64 && compute != TPU_INT64;
  pl->in = tpu_tensor_numel(in) ? tpu_tensor_data(in) : nothing;
  if ((uintptr_t)pl->in % (uintptr_t)pl->elsize)
    return tpu_error(TPU_ERR_NOT_IMPLEMENTED, "reduction: the input is not aligned to its dtype");
  const int64_t parts = as_real ? 2 : 1;
  pl->n_out = 1;
  pl->n_red = 1;
  for (int o = 0; o < pl->nout; o++) {
    const tpu_tensor *t = &call->tensors[1 + o];
    if (t->ndim != in->ndim || (as_real && !tpu_dtype_is_complex(t->dtype)))
      return tpu_error(TPU_ERR_VALUE, "reduction: output %d does not match the input", o);
    pl->out_dtype[o] = real_of(t->dtype);
    if (!tpu_dtype_is_computable(t->dtype) || tpu_dtype_is_complex(pl->out_dtype[o]))
      return tpu_error(TPU_ERR_NOT_IMPLEMENTED, "reduction: cannot write %s outputs",
                       tpu_dtype_name(t->dtype));
    pl->out[o] = tpu_tensor_numel(t) ? tpu_tensor_data(t) : nothing;
  }
  pl->out[1] = pl->out[pl->nout - 1]; /* never written with one output; keeps offsets defined */
  for (int d = in->ndim - 1; d >= 0; d--) {
    int64_t size = in->sizes[d];
    int64_t st[RK_OPS] = {in->strides[d] * pl->elsize * parts, 0, 0};
    bool reduced = false;
    for (int o = 0; o < pl->nout; o++) {
      const tpu_tensor *t = &call->tensors[1 + o];
      int64_t oel = (int64_t)tpu_dtype_size(t->dtype);
      if (t->sizes[d] == 1 && size != 1)
        reduced = true;
      else if (t->sizes[d] != size)
        return tpu_error(TPU_ERR_VALUE, "reduction: output %d does not match the input", o);
      st[1 + o] = t->strides[d] * oel;
    }
    if (reduced && pl->nout == 2 &&
        (call->tensors[1].sizes[d] != 1 || call->tensors[2].sizes[d] != 1))
      return tpu_error(TPU_ERR_VALUE, "reduction: the outputs reduce different dimensions");
    if (reduced) {
      pl->n_red *= size;
      add_dim(&pl->red, size, (int64_t[RK_OPS]){st[0], 0, 0});
    } else if (size != 1) {
      pl->n_out *= size;
      add_dim(&pl->kept, size, st);
    }
  }
  if (as_real) { /* the parts: innermost, kept, one real element apart */
    pl->n_out *= 2;
    int64_t st[RK_OPS] = {pl->elsize, 0, 0};
    for (int o = 0; o < pl->nout; o++)
      st[1 + o] = (int64_t)tpu_dtype_size(pl->out_dtype[o]);
    rk_dims tmp = pl->kept;
    pl->kept.nd = 0;
    add_dim(&pl->kept, 2, st);
    for (int k = 0; k < tmp.nd; k++)
      add_dim(&pl->kept, tmp.shape[k], (int64_t[RK_OPS]){tmp.stride[0][k], tmp.stride[1][k],
                                                           tmp.stride[2][k]});
  }
  bool arg = spec->kind == RK_ARGMAX || spec->kind == RK_ARGMIN;
  normalize(&pl->kept, false);
  normalize(&pl->red, arg); /* arg kinds count indices in the logical order */
  if (pl->n_red == 0 && pl->n_out > 0 &&
      (spec->kind == RK_MAX || spec->kind == RK_MIN || arg))
    return tpu_error(TPU_ERR_INDEX, "reduction: cannot reduce over a zero-size dimension");
  /* Columns when neighbouring outputs are nearer in memory than neighbouring reduced elements, or
   * when each output reduces too few elements for a row loop to pay. */
  pl->cols = pl->n_out > 1 && (mag(pl->kept.stride[0][0]) < mag(pl->red.stride[0][0]) ||
                                pl->n_red < 16);
  pl->blocks = (pl->kept.shape[0] + RK_BLOCK - 1) / RK_BLOCK;
  return TPU_OK;
}

tpu_status tpu_reduce(const tpu_op_call *call, const rk_spec *spec) {
  rk_plan pl;
  tpu_status st = plan(call, spec, &pl);
  if (st != TPU_OK || pl.n_out == 0)
    return st;
  st = rk_run(&pl);
  if (st == TPU_OK && spec->kind == RK_VAR)
    rk_fix_variance(&pl);
  if (st == TPU_OK && (spec->fin == RK_SQRT || spec->fin == RK_ROOT))
    rk_fix_norm(&pl);
  if (st == TPU_OK && spec->kind == RK_PROD)
    rk_fix_prod(&pl);
  return st;
}
