/* The reduction engine: plan (kept and reduced dimensions, mode), walk, parallel split, final
 * values. See kernels_reduce.h for the design and kernels_reduce_loops.c for the loops. */
#include "drivers/host/kernels_reduce.h"

#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "drivers/host/tpu_iter.h"
#include "exec/tpu_pool.h"

/* Values per direct row call: float lanes then hold at most RK_RUN / 32 terms each. */
#define RK_RUN 4096

/* Operands of a dimension set: 0 is the input, 1 and 2 the outputs. */
#define RK_OPS 3

/* Dimensions, innermost first, with byte strides per operand. */
typedef struct rk_dims {
  int nd; /* at least 1 */
  int64_t shape[TPU_MAX_DIMS + 1];
  int64_t stride[RK_OPS][TPU_MAX_DIMS + 1];
} rk_dims;

typedef struct rk_plan {
  const rk_spec *spec;
  rk_kind pre;       /* the first pass of two-pass kinds, else RK_NONE */
  rk_class cls;
  rk_load_fn load;   /* input -> class values */
  bool direct;       /* the input already holds class values: dense runs need no loading */
  bool narrow;       /* loaded values round to the compute dtype (see rk_narrow) */
  int64_t elsize;    /* bytes per input element */
  const char *in;
  char *out[2];
  tpu_dtype out_dtype[2];
  int nout;
  rk_dims kept, red; /* red uses operand 0 only */
  int64_t n_out, n_red;
  bool cols;         /* column mode */
  int64_t blocks;    /* column mode: blocks of RK_BLOCK along kept dimension 0 */
} rk_plan;

/* ---- Walking a flat range of a dimension set in runs along dimension 0 ---- */

typedef struct rk_walk {
  const rk_dims *d;
  int64_t idx[TPU_MAX_DIMS + 1];
  int64_t off[RK_OPS];
  int64_t pos, end;
} rk_walk;

static void walk_start(rk_walk *w, const rk_dims *d, int64_t begin, int64_t end) {
  w->d = d;
  w->pos = begin;
  w->end = end;
  memset(w->off, 0, sizeof w->off);
  int64_t rest = begin;
  for (int k = 0; k < d->nd; k++) {
    w->idx[k] = d->shape[k] ? rest % d->shape[k] : 0;
    rest = d->shape[k] ? rest / d->shape[k] : 0;
    for (int op = 0; op < RK_OPS; op++)
      w->off[op] += w->idx[k] * d->stride[op][k];
  }
}

/* The next run: its offsets, length and flat position; false at the end of the range. */
static bool walk_next(rk_walk *w, int64_t off[RK_OPS], int64_t *n, int64_t *pos) {
  if (w->pos >= w->end)
    return false;
  const rk_dims *d = w->d;
  int64_t len = d->shape[0] - w->idx[0];
  if (len > w->end - w->pos)
    len = w->end - w->pos;
  memcpy(off, w->off, sizeof w->off);
  *n = len;
  *pos = w->pos;
  w->pos += len;
  if (w->pos >= w->end)
    return true;
  /* The run ended dimension 0: carry into the outer dimensions. */
  for (int op = 0; op < RK_OPS; op++)
    w->off[op] -= w->idx[0] * d->stride[op][0];
  w->idx[0] = 0;
  for (int k = 1; k < d->nd; k++) {
    if (w->idx[k] + 1 < d->shape[k]) {
      w->idx[k]++;
      for (int op = 0; op < RK_OPS; op++)
        w->off[op] += d->stride[op][k];
      break;
    }
    for (int op = 0; op < RK_OPS; op++)
      w->off[op] -= w->idx[k] * d->stride[op][k];
    w->idx[k] = 0;
  }
  return true;
}

/* ---- Folding ---- */

/* Folds n elements, `stride` bytes apart from p, at reduced indices idx.. into st. */
static void fold_run(const rk_plan *pl, rk_row_fn fn, rk_state *st, const char *p, int64_t n,
                     int64_t stride, int64_t idx, double aux) {
  if (pl->direct && stride == pl->elsize) {
    for (int64_t k = 0; k < n; k += RK_RUN) {
      int64_t m = n - k < RK_RUN ? n - k : RK_RUN;
      fn(st, p + k * stride, m, idx + k, aux, pl->spec->p);
    }
    return;
  }
  rk_buf buf;
  for (int64_t k = 0; k < n; k += RK_BLOCK) {
    int64_t m = n - k < RK_BLOCK ? n - k : RK_BLOCK;
    pl->load(&buf, p + k * stride, m, stride);
    if (pl->narrow)
      rk_narrow(&buf, m, pl->spec->compute);
    fn(st, &buf, m, idx + k, aux, pl->spec->p);
  }
}

/* Folds the reduced elements [rb, re) of the output whose input starts at base. */
static void fold_row(const rk_plan *pl, rk_row_fn fn, rk_state *st, const char *base, int64_t rb,
                     int64_t re, double aux) {
  rk_walk w;
  walk_start(&w, &pl->red, rb, re);
  int64_t off[RK_OPS], n, pos;
  while (walk_next(&w, off, &n, &pos))
    fold_run(pl, fn, st, base + off[0], n, pl->red.stride[0][0], pos, aux);
}

/* What a column block works in: its states, the first pass's results, a loaded row and a row of
 * float partial sums (about 200 KiB: on the heap, not on a worker's stack). */
typedef struct rk_scratch {
  rk_cols cols;
  double aux[RK_BLOCK];
  rk_buf row, partial;
} rk_scratch;

/* Rows a float column sum adds in float before it adds them into its double states. */
#define RK_FLOAT_ROWS 64

/* Folds the reduced elements [rb, re) of the n outputs of a column block starting at base. A float
 * sum (the common sum over a batch dimension) first adds RK_FLOAT_ROWS rows in float, so the
 * loop stays as cheap as the row sum's; other kinds fold each row into the states. */
static void fold_cols(const rk_plan *pl, rk_kind kind, rk_col_fn fn, rk_scratch *s,
                      const char *base, int64_t n, int64_t rb, int64_t re, const double *aux) {
  const int64_t kstride = pl->kept.stride[0][0], rstride = pl->red.stride[0][0];
  const bool direct = pl->direct && kstride == pl->elsize;
  const bool float_sum = kind == RK_SUM && pl->cls == RK_F;
  rk_cols *c = &s->cols;
  int rows = 0;
  if (float_sum)
    memset(s->partial.f, 0, (size_t)n * sizeof(float));
  rk_walk w;
  walk_start(&w, &pl->red, rb, re);
  int64_t off[RK_OPS], len, pos;
  while (walk_next(&w, off, &len, &pos)) {
    for (int64_t t = 0; t < len; t++) {
      const char *p = base + off[0] + t * rstride;
      const void *v = p;
      if (!direct) {
        pl->load(&s->row, p, n, kstride);
        if (pl->narrow)
          rk_narrow(&s->row, n, pl->spec->compute);
        v = &s->row;
      }
      if (!float_sum) {
        fn(c, v, n, pos + t, aux, pl->spec->p);
      } else {
        rk_add_f(s->partial.f, v, n);
        if (++rows == RK_FLOAT_ROWS) {
          rk_flush_f(c->f, s->partial.f, n);
          rows = 0;
        }
      }
    }
  }
  if (rows)
    rk_flush_f(c->f, s->partial.f, n);
}

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

/* What the first pass hands the second: the mean, or the maximum (0 when infinite, as
 * PyTorch's logsumexp does). */
static double first_pass_result(const rk_plan *pl, const rk_state *st) {
  if (pl->pre == RK_SUM)
    return st->f / (double)pl->n_red;
  return isinf(st->f) ? 0.0 : st->f;
}

/* Writes the final values of one output from its state. */
static void finish(const rk_plan *pl, const rk_state *st, double aux, char *o0, char *o1) {
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

/* ---- Rows ---- */

/* Reduces outputs [ob, oe) completely (both passes). */
static void rows_outputs(const rk_plan *pl, int64_t ob, int64_t oe) {
  rk_row_fn pre = rk_row(pl->pre, pl->cls), main = rk_row(pl->spec->kind, pl->cls);
  rk_walk w;
  walk_start(&w, &pl->kept, ob, oe);
  int64_t off[RK_OPS], n, pos;
  while (walk_next(&w, off, &n, &pos)) {
    for (int64_t t = 0; t < n; t++) {
      const char *base = pl->in + off[0] + t * pl->kept.stride[0][0];
      double aux = 0;
      if (pre) {
        rk_state st = rk_state_init(pl->pre, pl->cls);
        fold_row(pl, pre, &st, base, 0, pl->n_red, 0);
        aux = first_pass_result(pl, &st);
      }
      rk_state st = rk_state_init(pl->spec->kind, pl->cls);
      fold_row(pl, main, &st, base, 0, pl->n_red, aux);
      finish(pl, &st, aux, pl->out[0] + off[1] + t * pl->kept.stride[1][0],
             pl->out[1] + off[2] + t * pl->kept.stride[2][0]);
    }
  }
}

/* Folds the reduced range [rb, re) of every output into states[o] (a chunk of split mode). */
static void rows_partial(const rk_plan *pl, rk_kind kind, const double *aux, rk_state *states,
                         int64_t rb, int64_t re) {
  rk_row_fn fn = rk_row(kind, pl->cls);
  rk_walk w;
  walk_start(&w, &pl->kept, 0, pl->n_out);
  int64_t off[RK_OPS], n, pos;
  while (walk_next(&w, off, &n, &pos))
    for (int64_t t = 0; t < n; t++) {
      rk_state *st = &states[pos + t];
      *st = rk_state_init(kind, pl->cls);
      fold_row(pl, fn, st, pl->in + off[0] + t * pl->kept.stride[0][0], rb, re,
               aux ? aux[pos + t] : 0);
    }
}

/* ---- Columns ---- */

/* A column unit: block `b` of kept dimension 0 at outer index `outer`. Returns the block's length
 * and its offsets (input, outputs) and flat index of its first output. */
static int64_t unit_at(const rk_plan *pl, int64_t unit, int64_t off[RK_OPS], int64_t *first) {
  const rk_dims *k = &pl->kept;
  int64_t outer = unit / pl->blocks, b = unit % pl->blocks;
  int64_t j0 = b * RK_BLOCK;
  for (int op = 0; op < RK_OPS; op++)
    off[op] = j0 * k->stride[op][0];
  int64_t rest = outer;
  for (int d = 1; d < k->nd; d++) {
    int64_t i = rest % k->shape[d];
    rest /= k->shape[d];
    for (int op = 0; op < RK_OPS; op++)
      off[op] += i * k->stride[op][d];
  }
  *first = outer * k->shape[0] + j0;
  return k->shape[0] - j0 < RK_BLOCK ? k->shape[0] - j0 : RK_BLOCK;
}

static void cols_init(rk_cols *c, int64_t n, rk_kind kind, rk_class cls) {
  rk_state s = rk_state_init(kind, cls);
  for (int64_t j = 0; j < n; j++)
    c->f[j] = s.f, c->g[j] = s.g, c->i[j] = s.i, c->idx[j] = s.idx;
}

static rk_state cols_get(const rk_cols *c, int64_t j) {
  return (rk_state){.f = c->f[j], .g = c->g[j], .i = c->i[j], .idx = c->idx[j]};
}

/* Reduces column units [ub, ue) completely. */
static void cols_units(const rk_plan *pl, rk_scratch *s, int64_t ub, int64_t ue) {
  rk_col_fn pre = rk_col(pl->pre, pl->cls), main = rk_col(pl->spec->kind, pl->cls);
  rk_cols *c = &s->cols;
  double *aux = s->aux;
  for (int64_t u = ub; u < ue; u++) {
    int64_t off[RK_OPS], first;
    int64_t n = unit_at(pl, u, off, &first);
    (void)first;
    if (pre) {
      cols_init(c, n, pl->pre, pl->cls);
      fold_cols(pl, pl->pre, pre, s, pl->in + off[0], n, 0, pl->n_red, NULL);
      for (int64_t j = 0; j < n; j++) {
        rk_state st = cols_get(c, j);
        aux[j] = first_pass_result(pl, &st);
      }
    }
    else
      memset(aux, 0, (size_t)n * sizeof *aux);
    cols_init(c, n, pl->spec->kind, pl->cls);
    fold_cols(pl, pl->spec->kind, main, s, pl->in + off[0], n, 0, pl->n_red, aux);
    for (int64_t j = 0; j < n; j++) {
      rk_state st = cols_get(c, j);
      finish(pl, &st, aux[j], pl->out[0] + off[1] + j * pl->kept.stride[1][0],
             pl->out[1] + off[2] + j * pl->kept.stride[2][0]);
    }
  }
}

/* Folds the reduced range [rb, re) of every output into states[o] (a chunk of split mode). */
static void cols_partial(const rk_plan *pl, rk_scratch *s, rk_kind kind, const double *aux,
                         rk_state *states, int64_t rb, int64_t re) {
  rk_col_fn fn = rk_col(kind, pl->cls);
  rk_cols *c = &s->cols;
  int64_t units = pl->n_out / pl->kept.shape[0] * pl->blocks;
  for (int64_t u = 0; u < units; u++) {
    int64_t off[RK_OPS], first;
    int64_t n = unit_at(pl, u, off, &first);
    cols_init(c, n, kind, pl->cls);
    fold_cols(pl, kind, fn, s, pl->in + off[0], n, rb, re, aux ? aux + first : NULL);
    for (int64_t j = 0; j < n; j++)
      states[first + j] = cols_get(c, j);
  }
}

/* ---- Parallel split ---- */

typedef struct rk_job {
  const rk_plan *pl;
  rk_kind kind;
  const double *aux;
  rk_state *partial; /* [chunk][n_out] */
  int chunks;
  atomic_bool out_of_memory; /* a column chunk could not allocate its scratch */
} rk_job;

/* A column chunk's scratch, or NULL (with the job marked) when there is no memory for it. */
static rk_scratch *scratch_new(rk_job *job) {
  rk_scratch *s = malloc(sizeof *s);
  if (!s)
    atomic_store(&job->out_of_memory, true);
  return s;
}

static void by_outputs(int64_t begin, int64_t end, int chunk, void *arg) {
  (void)chunk;
  rk_job *job = arg;
  if (!job->pl->cols) {
    rows_outputs(job->pl, begin, end);
    return;
  }
  rk_scratch *s = scratch_new(job);
  if (s)
    cols_units(job->pl, s, begin, end);
  free(s);
}

/* Runs chunks [begin, end) of the reduced range; the chunk boundaries are the job's own, so the
 * partial results do not depend on how the pool groups them. */
static void by_reduced(int64_t begin, int64_t end, int piece, void *arg) {
  (void)piece;
  rk_job *job = arg;
  const rk_plan *pl = job->pl;
  rk_scratch *s = pl->cols ? scratch_new(job) : NULL;
  if (pl->cols && !s)
    return;
  for (int64_t c = begin; c < end; c++) {
    int64_t rb = pl->n_red * c / job->chunks, re = pl->n_red * (c + 1) / job->chunks;
    rk_state *states = job->partial + c * pl->n_out;
    if (pl->cols)
      cols_partial(pl, s, job->kind, job->aux, states, rb, re);
    else
      rows_partial(pl, job->kind, job->aux, states, rb, re);
  }
  free(s);
}

/* One pass of split mode: every chunk's partial states, merged in chunk order into partial[0]. */
static void split_pass(rk_job *job, rk_kind kind, const double *aux) {
  const rk_plan *pl = job->pl;
  job->kind = kind;
  job->aux = aux;
  tpu_parallel_for(job->chunks, 1, by_reduced, job);
  for (int c = 1; c < job->chunks; c++)
    for (int64_t o = 0; o < pl->n_out; o++)
      rk_merge(kind, pl->cls, &job->partial[o], &job->partial[(int64_t)c * pl->n_out + o]);
}

/* Split mode: chunks of the reduced range for all (few) outputs. */
static tpu_status run_split(const rk_plan *pl, int chunks) {
  rk_job job = {.pl = pl, .chunks = chunks};
  atomic_init(&job.out_of_memory, false);
  job.partial = malloc((size_t)chunks * (size_t)pl->n_out * sizeof *job.partial);
  double *aux = pl->pre != RK_NONE ? malloc((size_t)pl->n_out * sizeof *aux) : NULL;
  if (!job.partial || (pl->pre != RK_NONE && !aux)) {
    free(job.partial);
    free(aux);
    return tpu_error(TPU_ERR_OUT_OF_MEMORY, "reduction: cannot allocate partial results");
  }
  if (pl->pre != RK_NONE) {
    split_pass(&job, pl->pre, NULL);
    for (int64_t o = 0; o < pl->n_out; o++)
      aux[o] = first_pass_result(pl, &job.partial[o]);
  }
  split_pass(&job, pl->spec->kind, aux);
  if (atomic_load(&job.out_of_memory)) {
    free(job.partial);
    free(aux);
    return tpu_error(TPU_ERR_OUT_OF_MEMORY, "reduction: cannot allocate column scratch");
  }
  rk_walk w;
  walk_start(&w, &pl->kept, 0, pl->n_out);
  int64_t off[RK_OPS], n, pos;
  while (walk_next(&w, off, &n, &pos))
    for (int64_t t = 0; t < n; t++)
      finish(pl, &job.partial[pos + t], aux ? aux[pos + t] : 0,
             pl->out[0] + off[1] + t * pl->kept.stride[1][0],
             pl->out[1] + off[2] + t * pl->kept.stride[2][0]);
  free(job.partial);
  free(aux);
  return TPU_OK;
}

/* The most partial states split mode keeps (32 MiB): beyond that it uses fewer chunks. */
#define RK_MAX_PARTIAL ((int64_t)1 << 20)

static tpu_status run(const rk_plan *pl) {
  int64_t units = pl->cols ? pl->n_out / pl->kept.shape[0] * pl->blocks : pl->n_out;
  int64_t work_per_unit = (pl->cols ? RK_BLOCK : 1) * (pl->n_red > 0 ? pl->n_red : 1);
  int threads = tpu_pool_threads();
  /* Outputs split well when each thread gets several units; otherwise the reduced range splits. */
  if (units < 4 * (int64_t)threads) {
    int64_t chunks = tpu_parallel_chunks(pl->n_out * pl->n_red, TPU_ITER_GRAIN);
    if (chunks > pl->n_red)
      chunks = pl->n_red;
    if (chunks * pl->n_out > RK_MAX_PARTIAL)
      chunks = RK_MAX_PARTIAL / pl->n_out;
    if (chunks > 1)
      return run_split(pl, (int)chunks);
  }
  int64_t grain = TPU_ITER_GRAIN / work_per_unit;
  rk_job job = {.pl = pl};
  atomic_init(&job.out_of_memory, false);
  tpu_parallel_for(units, grain > 1 ? grain : 1, by_outputs, &job);
  if (atomic_load(&job.out_of_memory))
    return tpu_error(TPU_ERR_OUT_OF_MEMORY, "reduction: cannot allocate column scratch");
  return TPU_OK;
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
  pl->load = rk_loader(in_dt, pl->cls, spec->abs);
  if (!pl->load || !rk_row(spec->kind, pl->cls) || (as_real && spec->kind != RK_SUM))
    return tpu_error(TPU_ERR_NOT_IMPLEMENTED, "reduction %d of %s in %s is not implemented",
                     (int)spec->kind, tpu_dtype_name(in->dtype), tpu_dtype_name(spec->compute));
  pl->elsize = (int64_t)tpu_dtype_size(in_dt);
  pl->direct = !spec->abs && compute == in_dt &&
               (in_dt == TPU_FLOAT32 || in_dt == TPU_FLOAT64 || in_dt == TPU_INT64);
  pl->narrow = compute != in_dt && compute != TPU_FLOAT32 && compute != TPU_FLOAT64 &&
               compute != TPU_INT64;
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
  return run(&pl);
}
