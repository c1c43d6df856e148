/* The softmax kernels (contract in ops/tpu_ops_norm.h). A row of float32 in dense memory is used
 * in place; any other row is loaded into a per-thread buffer, so rows of every stride (softmax
 * over an outer dimension) work, those of a dense last dimension fastest. A row costs one read
 * from memory: its later passes find it in cache. */
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "drivers/host/kernels/kernels.h"
#include "drivers/host/kernels/norm/norm.h"
#include "drivers/host/engine/engine_iter.h"
#include "drivers/host/engine/engine_pool.h"

typedef struct softmax_job {
  rk_class cls;
  bool log, backward;
  int nops;                         /* operands: output first, then the inputs */
  tpu_dtype dtype[3];               /* per operand: [out, in] or [grad_in, grad_out, out] */
  int64_t step[3];                  /* bytes between a row's elements, per operand */
  int64_t len;                      /* elements per row */
  tpu_iter it;                      /* over the row starts */
  atomic_bool out_of_memory;
} softmax_job;

static void forward_row(const softmax_job *j, char *out, const char *in, void *buf_x,
                        void *buf_y) {
  const rk_class c = j->cls;
  const int64_t n = j->len;
  const void *x = nk_load(c, j->dtype[1], in, n, j->step[1], buf_x);
  void *y = nk_dense(c, j->dtype[0], j->step[0]) ? (void *)out : buf_y;
  double m = nk_max(c, x, n);
  if (j->log) {
    double s = nk_exp_sum(c, x, n, m);
    nk_sub2(c, y, x, n, m, c == RK_F ? (double)logf((float)s) : log(s));
  } else {
    double s = nk_exp_store(c, y, x, n, m);
    nk_scale(c, y, n, c == RK_F ? (double)(1.0f / (float)s) : 1.0 / s);
  }
  nk_store(c, j->dtype[0], out, y, n, j->step[0]);
}

/* grad_input from grad_output g and the forward output y. */
static void backward_row(const softmax_job *j, char *gi, const char *go, const char *out,
                         void *buf_g, void *buf_y, void *buf_r) {
  const rk_class c = j->cls;
  const int64_t n = j->len;
  const void *g = nk_load(c, j->dtype[1], go, n, j->step[1], buf_g);
  const void *y = nk_load(c, j->dtype[2], out, n, j->step[2], buf_y);
  void *r = nk_dense(c, j->dtype[0], j->step[0]) ? (void *)gi : buf_r;
  if (j->log) {
    /* gi = g - exp(y) * sum(g): exp(y) - 0 through exp_store, then scaled and subtracted. */
    double s = nk_sum(c, g, n);
    nk_exp_store(c, r, y, n, 0);
    nk_scale(c, r, n, -s);
    nk_affine(c, r, r, n, 1, 0, NULL, g);
  } else {
    /* gi = y * (g - dot): (g * 1 - dot) * y. */
    double dot = nk_dot(c, g, y, n);
    nk_affine(c, r, g, n, 1, -dot, y, NULL);
  }
  nk_store(c, j->dtype[0], gi, r, n, j->step[0]);
}

typedef struct chunk_ctx {
  softmax_job *job;
  char *buf; /* three rows */
} chunk_ctx;

static void rows(char **data, const int64_t *strides, int64_t n, void *arg) {
  chunk_ctx *ctx = arg;
  const softmax_job *j = ctx->job;
  const int64_t row_bytes = j->len * (j->cls == RK_F ? 4 : 8);
  for (int64_t r = 0; r < n; r++) {
    char *p0 = data[0] + r * strides[0];
    const char *p1 = data[1] + r * strides[1];
    if (j->backward)
      backward_row(j, p0, p1, data[2] + r * strides[2], ctx->buf, ctx->buf + row_bytes,
                   ctx->buf + 2 * row_bytes);
    else
      forward_row(j, p0, p1, ctx->buf, ctx->buf + row_bytes);
  }
}

static void chunk(int64_t begin, int64_t end, int index, void *arg) {
  (void)index;
  softmax_job *j = arg;
  chunk_ctx ctx = {.job = j, .buf = malloc((size_t)j->len * 3 * 8 + 64)};
  if (!ctx.buf) {
    atomic_store(&j->out_of_memory, true);
    return;
  }
  tpu_iter_run(&j->it, begin, end, rows, &ctx);
  free(ctx.buf);
}

static tpu_status run_softmax(const tpu_op_call *call, bool log, bool backward) {
  softmax_job j = {.log = log, .backward = backward, .nops = backward ? 3 : 2};
  const tpu_tensor *t[3];
  /* Operand 0 is the written tensor, so the iterator follows its memory order. */
  t[0] = &call->tensors[backward ? 2 : 1];
  t[1] = &call->tensors[0];
  t[2] = backward ? &call->tensors[1] : NULL;
  const int ndim = t[0]->ndim;
  const int64_t dim = call->scalars[0].i;
  if (ndim > 0 && (dim < 0 || dim >= ndim))
    return tpu_error(TPU_ERR_VALUE, "softmax: dimension %lld out of range", (long long)dim);
  for (int k = 0; k < j.nops; k++) {
    if (!tpu_dtype_is_floating(t[k]->dtype) || t[k]->ndim != ndim)
      return tpu_error(TPU_ERR_TYPE, "softmax: expected floating tensors of one shape");
    if (!tpu_tensor_same_sizes(t[k], t[0]))
      return tpu_error(TPU_ERR_VALUE, "softmax: tensor sizes differ");
    j.dtype[k] = t[k]->dtype;
  }
  if (tpu_tensor_numel(t[0]) == 0)
    return TPU_OK;
  j.cls = nk_class(t[0]->dtype) == RK_D || nk_class(t[1]->dtype) == RK_D ? RK_D : RK_F;
  j.len = ndim > 0 ? t[0]->sizes[dim] : 1;
  int64_t shape[TPU_MAX_DIMS];
  for (int d = 0; d < ndim; d++)
    shape[d] = d == dim ? 1 : t[0]->sizes[d];
  tpu_iter_init(&j.it, ndim, shape);
  for (int k = 0; k < j.nops; k++) {
    int64_t el = (int64_t)tpu_dtype_size(t[k]->dtype), st[TPU_MAX_DIMS];
    for (int d = 0; d < ndim; d++)
      st[d] = d == dim || t[k]->sizes[d] == 1 ? 0 : t[k]->strides[d] * el;
    j.step[k] = ndim > 0 ? t[k]->strides[dim] * el : el;
    tpu_iter_add(&j.it, tpu_tensor_data(t[k]), el, st);
  }
  tpu_iter_build(&j.it, 0);
  atomic_init(&j.out_of_memory, false);
  int64_t grain = TPU_ITER_GRAIN / j.len;
  tpu_parallel_for(j.it.numel, grain > 1 ? grain : 1, chunk, &j);
  if (atomic_load(&j.out_of_memory))
    return tpu_error(TPU_ERR_OUT_OF_MEMORY, "softmax: cannot allocate row buffers");
  return TPU_OK;
}

tpu_status tpu_kernel_softmax(const tpu_op_call *call) { return run_softmax(call, false, false); }

tpu_status tpu_kernel_log_softmax(const tpu_op_call *call) {
  return run_softmax(call, true, false);
}

tpu_status tpu_kernel_softmax_backward(const tpu_op_call *call) {
  return run_softmax(call, false, true);
}

tpu_status tpu_kernel_log_softmax_backward(const tpu_op_call *call) {
  return run_softmax(call, true, true);
}
