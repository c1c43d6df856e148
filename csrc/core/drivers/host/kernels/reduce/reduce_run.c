/* The reduction engine's execution: walking flat ranges of dimensions, folding rows and column
 * blocks, and splitting the work over the pool by outputs or by chunks of the reduced range. See
 * reduce.h. */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "drivers/host/kernels/reduce/reduce.h"
#include "drivers/host/engine/engine_iter.h"
#include "drivers/host/engine/engine_pool.h"

/* Values per direct row call: float lanes then hold at most RK_RUN / 32 terms each. */
#define RK_RUN 4096

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
        aux = rk_first_pass(pl, &st);
      }
      rk_state st = rk_state_init(pl->spec->kind, pl->cls);
      fold_row(pl, main, &st, base, 0, pl->n_red, aux);
      rk_finish(pl, &st, aux, pl->out[0] + off[1] + t * pl->kept.stride[1][0],
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
        aux[j] = rk_first_pass(pl, &st);
      }
    }
    else
      memset(aux, 0, (size_t)n * sizeof *aux);
    cols_init(c, n, pl->spec->kind, pl->cls);
    fold_cols(pl, pl->spec->kind, main, s, pl->in + off[0], n, 0, pl->n_red, aux);
    for (int64_t j = 0; j < n; j++) {
      rk_state st = cols_get(c, j);
      rk_finish(pl, &st, aux[j], pl->out[0] + off[1] + j * pl->kept.stride[1][0],
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
  for (int c = 1; c < job->chunks; c++) {
    rk_state *into = job->partial, *from = job->partial + (int64_t)c * pl->n_out;
    if (kind == RK_SUM) /* rk_merge's sum, without a call per output */
      for (int64_t o = 0; o < pl->n_out; o++) {
        into[o].f += from[o].f;
        into[o].i = (int64_t)((uint64_t)into[o].i + (uint64_t)from[o].i);
      }
    else
      for (int64_t o = 0; o < pl->n_out; o++)
        rk_merge(kind, pl->cls, &into[o], &from[o]);
  }
}

/* Stores float sums and means into float32 or float64 outputs, the common case (a bias
 * gradient), as rk_finish does but one run of outputs per loop. False for any other case. */
static bool store_sums(const rk_plan *pl, const rk_state *states) {
  const rk_spec *spec = pl->spec;
  tpu_dtype dt = pl->out_dtype[0];
  if (spec->kind != RK_SUM || (spec->fin != RK_VALUE && spec->fin != RK_MEAN) ||
      pl->cls == RK_I || pl->nout != 1 || (dt != TPU_FLOAT32 && dt != TPU_FLOAT64))
    return false;
  const bool mean = spec->fin == RK_MEAN;
  const double count = (double)pl->n_red;
  const int64_t step = pl->kept.stride[1][0];
  rk_walk w;
  walk_start(&w, &pl->kept, 0, pl->n_out);
  int64_t off[RK_OPS], n, pos;
  while (walk_next(&w, off, &n, &pos)) {
    char *out = pl->out[0] + off[1];
    for (int64_t t = 0; t < n; t++) {
      double v = mean ? states[pos + t].f / count : states[pos + t].f;
      if (dt == TPU_FLOAT32) {
        float f = (float)v;
        memcpy(out + t * step, &f, sizeof f);
      } else {
        memcpy(out + t * step, &v, sizeof v);
      }
    }
  }
  return true;
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
      aux[o] = rk_first_pass(pl, &job.partial[o]);
  }
  split_pass(&job, pl->spec->kind, aux);
  if (atomic_load(&job.out_of_memory)) {
    free(job.partial);
    free(aux);
    return tpu_error(TPU_ERR_OUT_OF_MEMORY, "reduction: cannot allocate column scratch");
  }
  if (!store_sums(pl, job.partial)) {
    rk_walk w;
    walk_start(&w, &pl->kept, 0, pl->n_out);
    int64_t off[RK_OPS], n, pos;
    while (walk_next(&w, off, &n, &pos))
      for (int64_t t = 0; t < n; t++)
        rk_finish(pl, &job.partial[pos + t], aux ? aux[pos + t] : 0,
               pl->out[0] + off[1] + t * pl->kept.stride[1][0],
               pl->out[1] + off[2] + t * pl->kept.stride[2][0]);
  }
  free(job.partial);
  free(aux);
  return TPU_OK;
}

/* The most partial states split mode keeps (32 MiB): beyond that it uses fewer chunks. */
#define RK_MAX_PARTIAL ((int64_t)1 << 20)

tpu_status rk_run(const rk_plan *pl) {
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
