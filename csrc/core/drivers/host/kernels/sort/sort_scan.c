/* The SCAN kernel (contract in ops/tpu_ops_sort.h): cumprod, cummax / cummin with positions and
 * logcumsumexp. Lines along the dimension are independent and split over the pool; each line is
 * loaded RK_BLOCK elements at a time into its accumulation class (kernels/reduce/reduce.h) and
 * stepped through in order, as PyTorch CPU's kernels step. */
#include <math.h>
#include <string.h>

#include "drivers/host/kernels/kernels.h"
#include "drivers/host/kernels/reduce/reduce.h"
#include "drivers/host/engine/engine_iter.h"
#include "drivers/host/engine/engine_pool.h"

enum { SCAN_PRODUCT, SCAN_MAX, SCAN_MIN, SCAN_LOGSUMEXP };

typedef struct scanner {
  rk_load_fn load;
  tpu_dtype dtype;
  rk_class cls;
  int kind;
  bool indexed;                        /* MAX and MIN write positions */
  int64_t len;                         /* elements per line */
  int64_t in_step, out_step, idx_step; /* bytes between a line's elements */
  tpu_iter it; /* over the line starts: operand 0 = values, 1 = input [, 2 = indices] */
} scanner;

/* The running value of a line, as an integer (RK_I) or a double otherwise. */
typedef struct running {
  double f;
  int64_t i, at;
  bool started;
} running;

/* x rounded to the scanned dtype when that is narrower than float (bfloat16, float16). */
static float round_to(tpu_dtype dt, float x) {
  if (dt == TPU_BFLOAT16)
    return tpu_bf16_to_f32(tpu_f32_to_bf16(x));
  if (dt == TPU_FLOAT16)
    return tpu_f16_to_f32(tpu_f32_to_f16(x));
  return x;
}

/* PyTorch CPU's log_add_exp(x, s) in double. */
static double log_add_exp(double x, double s) {
  double lo = isnan(s) ? s : fmin(x, s), hi = isnan(s) ? s : fmax(x, s);
  if (isnan(x))
    lo = hi = x;
  if (lo != hi || isfinite(lo))
    return log1p(exp(lo - hi)) + hi;
  return x;
}

/* The same in float, for float32 and the narrower floats. */
static float log_add_expf(float x, float s) {
  float lo = isnan(s) ? s : fminf(x, s), hi = isnan(s) ? s : fmaxf(x, s);
  if (isnan(x))
    lo = hi = x;
  if (lo != hi || isfinite(lo))
    return log1pf(expf(lo - hi)) + hi;
  return x;
}

/* Whether the floating element x at a later position replaces the held extreme h. */
static inline bool replaces_f(int kind, double x, double h) {
  return isnan(x) || (!isnan(h) && (kind == SCAN_MAX ? x >= h : x <= h));
}

/* Folds value j of v (position k of the line) into r. */
static inline void step(const scanner *s, running *r, const rk_buf *v, int64_t j, int64_t k) {
  switch (s->kind) {
  case SCAN_PRODUCT:
    if (s->cls == RK_I)
      r->i = (int64_t)((uint64_t)r->i * (uint64_t)v->i[j]);
    else if (s->cls == RK_D)
      r->f *= v->d[j];
    else if (s->dtype == TPU_FLOAT32)
      r->f *= v->f[j]; /* float32 multiplies in double, like at::acc_type<float, false> */
    else
      r->f = round_to(s->dtype, (float)r->f * v->f[j]);
    break;
  case SCAN_LOGSUMEXP:
    if (s->cls == RK_D)
      r->f = log_add_exp(v->d[j], r->f);
    else
      r->f = round_to(s->dtype, log_add_expf(v->f[j], (float)r->f));
    break;
  default:
    if (s->cls == RK_I) {
      int64_t x = v->i[j];
      if (!r->started || (s->kind == SCAN_MAX ? x >= r->i : x <= r->i))
        r->i = x, r->at = k;
    } else {
      double x = s->cls == RK_D ? v->d[j] : v->f[j];
      if (!r->started || replaces_f(s->kind, x, r->f))
        r->f = x, r->at = k;
    }
    r->started = true;
    break;
  }
}

static void scan_line(const scanner *s, char *out, const char *in, char *idx) {
  running r = {.f = s->kind == SCAN_PRODUCT ? 1.0 : -INFINITY, .i = 1};
  rk_buf v;
  for (int64_t k = 0; k < s->len; k += RK_BLOCK) {
    int64_t m = s->len - k < RK_BLOCK ? s->len - k : RK_BLOCK;
    s->load(&v, in + k * s->in_step, m, s->in_step);
    for (int64_t j = 0; j < m; j++) {
      step(s, &r, &v, j, k + j);
      rk_store(s->dtype, out + (k + j) * s->out_step, s->cls == RK_I, r.i, r.f);
      if (s->indexed)
        memcpy(idx + (k + j) * s->idx_step, &r.at, sizeof r.at);
    }
  }
}

static void scan_run(char **data, const int64_t *strides, int64_t n, void *ctx) {
  const scanner *s = ctx;
  for (int64_t j = 0; j < n; j++)
    scan_line(s, data[0] + j * strides[0], data[1] + j * strides[1],
              s->indexed ? data[2] + j * strides[2] : NULL);
}

static void scan_chunk(int64_t begin, int64_t end, int chunk, void *ctx) {
  (void)chunk;
  const scanner *s = ctx;
  tpu_iter_run(&s->it, begin, end, scan_run, ctx);
}

/* Checks the call against the contract. */
static tpu_status check_call(const tpu_op_call *call) {
  const int64_t kind = call->scalars[1].i, dim = call->scalars[0].i;
  const bool indexed = kind == SCAN_MAX || kind == SCAN_MIN;
  if (kind < SCAN_PRODUCT || kind > SCAN_LOGSUMEXP || call->n_inputs != 1 ||
      call->n_outputs != (indexed ? 2 : 1))
    return tpu_error(TPU_ERR_VALUE, "scan: bad combine kind or tensor count");
  const tpu_tensor *in = &call->tensors[0];
  if (in->ndim < 1 || dim < 0 || dim >= in->ndim)
    return tpu_error(TPU_ERR_VALUE, "scan: bad dimension");
  for (int t = 1; t <= call->n_outputs; t++)
    if (!tpu_tensor_same_sizes(in, &call->tensors[t]))
      return tpu_error(TPU_ERR_VALUE, "scan: output sizes differ from the input's");
  if (call->tensors[1].dtype != in->dtype || (indexed && call->tensors[2].dtype != TPU_INT64))
    return tpu_error(TPU_ERR_VALUE, "scan: values take the input's dtype, indices int64");
  if (!tpu_dtype_is_computable(in->dtype) || tpu_dtype_is_complex(in->dtype) ||
      (kind == SCAN_LOGSUMEXP && !tpu_dtype_is_floating(in->dtype)))
    return tpu_error(TPU_ERR_NOT_IMPLEMENTED, "scan is not implemented for %s",
                     tpu_dtype_name(in->dtype));
  return TPU_OK;
}

tpu_status tpu_kernel_scan(const tpu_op_call *call) {
  tpu_status st = check_call(call);
  if (st != TPU_OK)
    return st;
  const tpu_tensor *in = &call->tensors[0], *out = &call->tensors[1];
  const int dim = (int)call->scalars[0].i;
  scanner s = {.dtype = in->dtype, .kind = (int)call->scalars[1].i};
  s.indexed = s.kind == SCAN_MAX || s.kind == SCAN_MIN;
  s.cls = rk_class_of(in->dtype);
  s.load = rk_loader(in->dtype, s.cls, false);
  if (!s.load)
    return tpu_error(TPU_ERR_NOT_IMPLEMENTED, "scan is not implemented for %s",
                     tpu_dtype_name(in->dtype));
  if (tpu_tensor_numel(in) == 0)
    return TPU_OK;
  const int64_t size = (int64_t)tpu_dtype_size(in->dtype), isize = (int64_t)sizeof(int64_t);
  int64_t shape[TPU_MAX_DIMS], ost[TPU_MAX_DIMS], ist[TPU_MAX_DIMS], xst[TPU_MAX_DIMS];
  for (int d = 0; d < in->ndim; d++) {
    shape[d] = d == dim ? 1 : in->sizes[d];
    ost[d] = out->strides[d] * size;
    ist[d] = in->strides[d] * size;
    xst[d] = s.indexed ? call->tensors[2].strides[d] * isize : 0;
  }
  s.len = in->sizes[dim];
  s.in_step = ist[dim];
  s.out_step = ost[dim];
  s.idx_step = xst[dim];
  tpu_iter_init(&s.it, in->ndim, shape);
  tpu_iter_add(&s.it, tpu_tensor_data(out), size, ost);
  tpu_iter_add(&s.it, tpu_tensor_data(in), size, ist);
  if (s.indexed)
    tpu_iter_add(&s.it, tpu_tensor_data(&call->tensors[2]), isize, xst);
  tpu_iter_build(&s.it, 0);
  int64_t grain = TPU_ITER_GRAIN / s.len;
  tpu_parallel_for(s.it.numel, grain > 1 ? grain : 1, scan_chunk, &s);
  return TPU_OK;
}
