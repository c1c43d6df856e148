/* The CUMSUM kernel (contract in ops/tpu_ops_reduce.h). Lines along the dimension are
 * independent and split over the pool. A run of neighbouring lines is scanned together, one block
 * of running sums stepping along the dimension, when the lines lie closer together than the
 * elements within a line (a scan over an outer dimension); otherwise each line is scanned on its
 * own. */
#include "drivers/host/kernels/kernels.h"
#include "drivers/host/kernels/reduce/reduce.h"
#include "drivers/host/engine/engine_iter.h"
#include "drivers/host/engine/engine_pool.h"

typedef struct scan {
  rk_load_fn load;
  tpu_dtype out, compute; /* compute: the output's dtype, or its real part's for complex */
  rk_class cls;
  bool narrow;          /* loaded values round to `compute` first */
  int64_t len;          /* elements per line */
  int64_t in_step, out_step; /* bytes between a line's elements */
  int64_t in_size, out_size; /* bytes per (real) element */
  tpu_iter it;          /* over the line starts: operand 0 = output, 1 = input */
} scan;

/* Adds v to acc in the accumulation type and returns the new sum, rounded where PyTorch rounds. */
static inline void accumulate(const scan *s, double *acc, int64_t *iacc, const rk_buf *v,
                              int64_t j) {
  if (s->cls == RK_I)
    *iacc = (int64_t)((uint64_t)*iacc + (uint64_t)v->i[j]);
  else if (s->cls == RK_D)
    *acc += v->d[j];
  else if (s->compute == TPU_FLOAT32)
    *acc += v->f[j]; /* float32 sums in double, like at::acc_type<float, false> */
  else
    *acc = (float)((float)*acc + v->f[j]);
}

/* Lines a column scan steps together. */
#define SCAN_BLOCK 512

/* Scans n lines starting at out/in (lines `ostride`/`istride` bytes apart), up to SCAN_BLOCK at a
 * time, stepping all of them along the dimension together. */
static void scan_block(const scan *s, char *out, const char *in, int64_t n, int64_t ostride,
                       int64_t istride) {
  double acc[SCAN_BLOCK];
  int64_t iacc[SCAN_BLOCK];
  rk_buf v;
  for (int64_t j = 0; j < n; j++)
    acc[j] = 0, iacc[j] = 0;
  for (int64_t k = 0; k < s->len; k++) {
    s->load(&v, in + k * s->in_step, n, istride);
    if (s->narrow)
      rk_narrow(&v, n, s->compute);
    for (int64_t j = 0; j < n; j++) {
      accumulate(s, &acc[j], &iacc[j], &v, j);
      rk_store(s->compute, out + k * s->out_step + j * ostride, s->cls == RK_I, iacc[j], acc[j]);
    }
  }
}

/* Scans one line, loading RK_BLOCK elements at a time. */
static void scan_line(const scan *s, char *out, const char *in) {
  double acc = 0;
  int64_t iacc = 0;
  rk_buf v;
  for (int64_t k = 0; k < s->len; k += RK_BLOCK) {
    int64_t m = s->len - k < RK_BLOCK ? s->len - k : RK_BLOCK;
    s->load(&v, in + k * s->in_step, m, s->in_step);
    if (s->narrow)
      rk_narrow(&v, m, s->compute);
    for (int64_t j = 0; j < m; j++) {
      accumulate(s, &acc, &iacc, &v, j);
      rk_store(s->compute, out + (k + j) * s->out_step, s->cls == RK_I, iacc, acc);
    }
  }
}

static uint64_t mag(int64_t v) { return v < 0 ? -(uint64_t)v : (uint64_t)v; }

static void scan_run(char **data, const int64_t *strides, int64_t n, void *ctx) {
  const scan *s = ctx;
  if (n > 1 && mag(strides[1]) < mag(s->in_step)) {
    for (int64_t j = 0; j < n; j += SCAN_BLOCK)
      scan_block(s, data[0] + j * strides[0], data[1] + j * strides[1],
                 n - j < SCAN_BLOCK ? n - j : SCAN_BLOCK, strides[0], strides[1]);
    return;
  }
  for (int64_t j = 0; j < n; j++)
    scan_line(s, data[0] + j * strides[0], data[1] + j * strides[1]);
}

static void scan_chunk(int64_t begin, int64_t end, int chunk, void *ctx) {
  (void)chunk;
  const scan *s = ctx;
  tpu_iter_run(&s->it, begin, end, scan_run, ctx);
}

static tpu_dtype real_of(tpu_dtype dt) {
  return dt == TPU_COMPLEX64 ? TPU_FLOAT32 : dt == TPU_COMPLEX128 ? TPU_FLOAT64 : dt;
}

tpu_status tpu_kernel_cumsum(const tpu_op_call *call) {
  const tpu_tensor *in = &call->tensors[0], *out = &call->tensors[1];
  int64_t dim = call->scalars[0].i;
  if (in->ndim != out->ndim || (in->ndim > 0 && (dim < 0 || dim >= in->ndim)))
    return tpu_error(TPU_ERR_VALUE, "cumsum: bad dimension or output rank");
  for (int d = 0; d < in->ndim; d++)
    if (in->sizes[d] != out->sizes[d])
      return tpu_error(TPU_ERR_VALUE, "cumsum: output sizes differ from the input's");
  bool complex = tpu_dtype_is_complex(out->dtype);
  if (complex != tpu_dtype_is_complex(in->dtype))
    return tpu_error(TPU_ERR_NOT_IMPLEMENTED, "cumsum: complex and real tensors do not mix");
  if (tpu_tensor_numel(out) == 0)
    return TPU_OK;
  scan s = {.out = out->dtype, .compute = real_of(out->dtype)};
  tpu_dtype in_dt = real_of(in->dtype);
  s.cls = rk_class_of(s.compute);
  /* A cast to bool tests x != 0; going through int64 would truncate 0.25 to false. */
  const bool to_bool = s.compute == TPU_BOOL;
  s.load = to_bool ? rk_bool_loader(in_dt) : rk_loader(in_dt, s.cls, false);
  if (!s.load || !tpu_dtype_is_computable(out->dtype))
    return tpu_error(TPU_ERR_NOT_IMPLEMENTED, "cumsum is not implemented from %s to %s",
                     tpu_dtype_name(in->dtype), tpu_dtype_name(out->dtype));
  s.narrow = in_dt != s.compute && !to_bool;
  s.in_size = (int64_t)tpu_dtype_size(in_dt);
  s.out_size = (int64_t)tpu_dtype_size(s.compute);
  const int64_t parts = complex ? 2 : 1;
  /* The iterator covers the line starts: the scanned dimension gets size 1, and complex tensors a
   * trailing dimension for their two parts. */
  int nd = in->ndim;
  int64_t shape[TPU_MAX_DIMS + 1], ist[TPU_MAX_DIMS + 1], ost[TPU_MAX_DIMS + 1];
  for (int d = 0; d < nd; d++) {
    shape[d] = d == dim ? 1 : in->sizes[d];
    ist[d] = in->sizes[d] == 1 ? 0 : in->strides[d] * s.in_size * parts;
    ost[d] = out->sizes[d] == 1 ? 0 : out->strides[d] * s.out_size * parts;
  }
  s.len = nd > 0 ? in->sizes[dim] : 1;
  s.in_step = nd > 0 ? ist[dim] : 0;
  s.out_step = nd > 0 ? ost[dim] : 0;
  if (complex) {
    shape[nd] = 2, ist[nd] = s.in_size, ost[nd] = s.out_size;
    nd++;
  }
  if (nd > TPU_MAX_DIMS)
    return tpu_error(TPU_ERR_VALUE, "cumsum: too many dimensions");
  tpu_iter_init(&s.it, nd, shape);
  tpu_iter_add(&s.it, tpu_tensor_data(out), s.out_size, ost);
  tpu_iter_add(&s.it, tpu_tensor_data(in), s.in_size, ist);
  tpu_iter_build(&s.it, 0);
  int64_t grain = TPU_ITER_GRAIN / (s.len > 0 ? s.len : 1);
  tpu_parallel_for(s.it.numel, grain > 1 ? grain : 1, scan_chunk, &s);
  return TPU_OK;
}
