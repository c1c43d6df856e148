/* Direct convolutions (conv_direct.h has the layout). The forward and the input gradient are one
 * computation: the input gradient (stride 1) is the convolution of dy, padded by
 * dil * (k - 1) - pad, with the weight flipped and its two channel dims swapped. A work unit is a
 * band of output rows of one image and group, sized so that its part of the padded source stays
 * in L2 while every block of output channels passes over it. The weight gradient sums, per kernel
 * position, dy times the padded x shifted by that position's offset: one GEMM per image, group
 * and position, with no column matrix. */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "drivers/host/engine/engine_pool.h"
#include "drivers/host/kernels/conv/conv_direct.h"

/* Bytes of padded source a unit reads while every channel block passes over it. */
#define SOURCE_BAND_BYTES (512 * 1024)

/* Steps (source channel, kernel position) per pass over a band. */
#define STEP_BLOCK 256

/* The flattened output domain of one image (conv_direct.h). */
typedef struct direct_shape {
  int64_t stride[3];
  int64_t out[3], span[3]; /* stored outputs; a phase plane's sizes */
  int64_t phase_plane;     /* floats per phase plane */
  int64_t plane;           /* floats per channel: its phase planes and the last vector's slack */
  int64_t pq;              /* flattened outputs per image */
  uint64_t used;           /* the phases some kernel position reads (at most 64) */
  int64_t kk;
  int64_t *off; /* per kernel position */
} direct_shape;

static bool shape_init(direct_shape *s, const conv_geom *q, const int64_t out[3],
                       const int64_t stride[3]) {
  s->kk = q->kk;
  s->used = 0;
  int64_t phases = 1;
  for (int d = 0; d < 3; d++) {
    s->stride[d] = stride[d];
    s->out[d] = out[d];
    s->span[d] = out[d] + q->dil[d] * (q->ker[d] - 1) / stride[d];
    phases *= stride[d];
  }
  s->phase_plane = s->span[0] * s->span[1] * s->span[2];
  s->plane = phases * s->phase_plane + q->dil[2] * (q->ker[2] - 1) / stride[2] + 8;
  s->pq = ((s->out[0] - 1) * s->span[1] + s->out[1]) * s->span[2];
  s->off = malloc((size_t)q->kk * sizeof *s->off);
  if (!s->off)
    return false;
  for (int64_t kp = 0; kp < q->kk; kp++) {
    int64_t k[3] = {kp / (q->ker[1] * q->ker[2]), kp / q->ker[2] % q->ker[1], kp % q->ker[2]};
    int64_t phase = 0, within = 0;
    for (int d = 0; d < 3; d++) {
      int64_t t = k[d] * q->dil[d];
      phase = phase * stride[d] + t % stride[d];
      within = within * s->span[d] + t / stride[d];
    }
    s->off[kp] = phase * s->phase_plane + within;
    s->used |= (uint64_t)1 << phase;
  }
  return true;
}

/* ---- Sources in phase planes ---- */

typedef struct pad_job {
  const conv_view *v;
  const direct_shape *s; /* its phases (s->used: the ones to fill; the rest stay zero) */
  const int64_t *place;  /* where the view's first element lands in the padded source, >= 0 */
  float *dst;            /* [N][channels][plane] */
} pad_job;

/* The phase plane's indices i < span whose source index stride * i + phase - place lies in
 * [0, size): [*lo, *hi), empty when *hi <= *lo. */
static void phase_range(int64_t phase, int64_t place, int64_t stride, int64_t size, int64_t span,
                        int64_t *lo, int64_t *hi) {
  *lo = place > phase ? (place - phase + stride - 1) / stride : 0;
  *hi = tpu_conv_floor_div(size - 1 + place - phase, stride) + 1;
  *hi = *hi < span ? *hi : span;
}

static void pad_chunk(int64_t begin, int64_t end, int chunk, void *ctx) {
  (void)chunk;
  const pad_job *p = ctx;
  const conv_view *v = p->v;
  const direct_shape *sh = p->s;
  const int64_t *s = sh->stride, *pl = p->place, *span = sh->span;
  int64_t es = (int64_t)tpu_dtype_size(v->dtype), channels = v->size[1];
  for (int64_t u = begin; u < end; u++) {
    float *dst = p->dst + u * sh->plane;
    memset(dst, 0, (size_t)sh->plane * sizeof *dst);
    const char *img =
        v->data + ((u / channels) * v->stride[0] + (u % channels) * v->stride[1]) * es;
    for (int64_t f0 = 0; f0 < s[0]; f0++)
      for (int64_t f1 = 0; f1 < s[1]; f1++)
        for (int64_t f2 = 0; f2 < s[2]; f2++) {
          int64_t index = (f0 * s[1] + f1) * s[2] + f2, lo[3], hi[3];
          float *phase = dst + index * sh->phase_plane;
          if (!(sh->used >> index & 1))
            continue;
          phase_range(f0, pl[0], s[0], v->size[2], span[0], &lo[0], &hi[0]);
          phase_range(f1, pl[1], s[1], v->size[3], span[1], &lo[1], &hi[1]);
          phase_range(f2, pl[2], s[2], v->size[4], span[2], &lo[2], &hi[2]);
          if (hi[2] <= lo[2])
            continue;
          for (int64_t i0 = lo[0]; i0 < hi[0]; i0++)
            for (int64_t i1 = lo[1]; i1 < hi[1]; i1++) {
              int64_t r0 = s[0] * i0 + f0 - pl[0], r1 = s[1] * i1 + f1 - pl[1],
                      c = s[2] * lo[2] + f2 - pl[2];
              tpu_conv_load_run(phase + (i0 * span[1] + i1) * span[2] + lo[2],
                                img + (r0 * v->stride[2] + r1 * v->stride[3] + c * v->stride[4]) *
                                          es,
                                s[2] * v->stride[4], hi[2] - lo[2], v->dtype);
            }
        }
  }
}

/* The view's channels, image by image, as float phase planes of shape s (the source zero-padded
 * by `place`); NULL when out of memory. */
static float *pad_source(const conv_view *v, const int64_t place[3], const direct_shape *s) {
  int64_t planes = v->size[0] * v->size[1];
  pad_job p = {v, s, place, tpu_conv_alloc(planes * s->plane * (int64_t)sizeof(float))};
  if (p.dst && planes)
    tpu_parallel_for(planes, 1, pad_chunk, &p);
  return p.dst;
}

/* ---- Forward and input gradient ---- */

typedef struct direct_job {
  direct_shape s;
  int64_t n, g, cin, cout; /* channels per group */
  int64_t nob;             /* channel blocks per group */
  const float *src;        /* [N][G * cin][plane] */
  int64_t *steps;          /* the tiles' offsets: [cin][kk] */
  float *wpk;              /* [G][nob][cin][kk][OCB] */
  const float *bias;       /* all output channels, or NULL */
  const conv_view *y;
  int64_t band, bands; /* rows per unit; units per image and group */
  _Atomic tpu_status status;
} direct_job;

/* Rounds output rows [r0, r1) of channels c0.. c0 + ocb of image n from the tile rows into y. */
static void store_rows(const direct_job *j, const float *out, int64_t ldo, int64_t n, int64_t c0,
                       int ocb, int64_t r0, int64_t r1) {
  const conv_view *y = j->y;
  const direct_shape *s = &j->s;
  int64_t yes = (int64_t)tpu_dtype_size(y->dtype);
  for (int o = 0; o < ocb; o++)
    for (int64_t r = r0; r < r1; r++) {
      int64_t od = r / s->span[1], oh = r % s->span[1];
      if (oh >= s->out[1])
        continue;
      char *dst = y->data + (n * y->stride[0] + (c0 + o) * y->stride[1] + od * y->stride[2] +
                             oh * y->stride[3]) * yes;
      tpu_conv_store_run(dst, y->stride[4], out + o * ldo + (r - r0) * s->span[2], 1, s->out[2],
                         y->dtype, j->bias ? j->bias + c0 + o : NULL, 0);
    }
}

static void compute_chunk(int64_t begin, int64_t end, int chunk, void *ctx) {
  (void)chunk;
  direct_job *j = ctx;
  const direct_shape *s = &j->s;
  int64_t row = s->span[2], rows = s->pq / row, ldo = (j->band * row + 7) / 8 * 8;
  float *out = tpu_conv_alloc(TPU_CONV_DIRECT_OCB * ldo * (int64_t)sizeof(float));
  if (!out) {
    tpu_status ok = TPU_OK;
    atomic_compare_exchange_strong(&j->status, &ok, TPU_ERR_OUT_OF_MEMORY);
    return;
  }
  for (int64_t u = begin; u < end; u++) {
    int64_t n = u / (j->g * j->bands), g = u / j->bands % j->g, b = u % j->bands;
    int64_t r0 = b * j->band, r1 = r0 + j->band < rows ? r0 + j->band : rows;
    int64_t qa = r0 * row, qb = r1 * row;
    int64_t total = j->cin * s->kk;
    tpu_conv_direct_tile t = {j->src + (n * j->g + g) * j->cin * s->plane, NULL, 0, NULL, ldo};
    for (int64_t ob = 0; ob < j->nob; ob++) {
      int64_t left = j->cout - ob * TPU_CONV_DIRECT_OCB;
      int ocb = left < TPU_CONV_DIRECT_OCB ? (int)left : TPU_CONV_DIRECT_OCB;
      int nvmax = tpu_conv_direct_vectors(ocb);
      const float *weight = j->wpk + (g * j->nob + ob) * j->cin * s->kk * TPU_CONV_DIRECT_OCB;
      /* The reduction in blocks of steps, each over the whole band: one tile's source rows
       * stay in L1 from one tile to the next. */
      for (int64_t s0 = 0; s0 < total; s0 += STEP_BLOCK) {
        t.off = j->steps + s0;
        t.weight = weight + s0 * TPU_CONV_DIRECT_OCB;
        t.steps = total - s0 < STEP_BLOCK ? total - s0 : STEP_BLOCK;
        /* The band's vectors split evenly over the fewest tiles: a narrow last tile would
         * leave its accumulators waiting on the FMA latency. */
        int64_t vectors = (qb - qa + 7) / 8, tiles = (vectors + nvmax - 1) / nvmax;
        for (int64_t i = 0, q0 = qa; i < tiles; i++) {
          int nv = (int)(vectors / tiles + (i < vectors % tiles));
          tpu_conv_direct_run_tile(&t, q0, out + (q0 - qa), s0 > 0, ocb, nv);
          q0 += 8 * nv;
        }
      }
      store_rows(j, out, ldo, n, g * j->cout + ob * TPU_CONV_DIRECT_OCB, ocb, r0, r1);
    }
  }
  free(out);
}

/* The weight in the tiles' layout, from the packed [G][Kg][Cg * kk] weight: for the input
 * gradient (`input`), the tile's outputs are x's channels and its kernel is flipped. */
static void pack_tiles(direct_job *j, const conv_geom *q, const float *packed, bool input) {
  int64_t kk = q->kk;
  for (int64_t g = 0; g < j->g; g++)
    for (int64_t ob = 0; ob < j->nob; ob++)
      for (int64_t c = 0; c < j->cin; c++)
        for (int64_t kp = 0; kp < kk; kp++)
          for (int o = 0; o < TPU_CONV_DIRECT_OCB; o++) {
            int64_t k = ob * TPU_CONV_DIRECT_OCB + o;
            float v = 0.0f;
            if (k < j->cout)
              v = input ? packed[(g * q->kg + c) * q->r + k * kk + kk - 1 - kp]
                        : packed[(g * q->kg + k) * q->r + c * kk + kp];
            j->wpk[(((g * j->nob + ob) * j->cin + c) * kk + kp) * TPU_CONV_DIRECT_OCB + o] = v;
          }
}

/* Rows per unit: a band of source within SOURCE_BAND_BYTES, split further while there are
 * fewer than two units per thread. */
static void choose_bands(direct_job *j) {
  int64_t row = j->s.span[2], rows = j->s.pq / row;
  int64_t band = SOURCE_BAND_BYTES / (j->cin * row * (int64_t)sizeof(float));
  band = band < 1 ? 1 : band > rows ? rows : band;
  int64_t want = 2 * tpu_pool_threads();
  while (band > 1 && j->n * j->g * ((rows + band - 1) / band) < want)
    band = (band + 1) / 2;
  j->band = band;
  j->bands = (rows + band - 1) / band;
}

/* y = the convolution of src's channels (source sizes and placement from the op) into `out`
 * sizes. */
static tpu_status run_direct(const conv_geom *q, bool input, const conv_view *src,
                             const conv_view *w, const void *bias, const conv_view *y,
                             const char *op) {
  direct_job j = {.n = q->n, .g = q->g, .bias = bias, .y = y};
  atomic_init(&j.status, TPU_OK);
  j.cin = input ? q->kg : q->cg;
  j.cout = input ? q->cg : q->kg;
  j.nob = (j.cout + TPU_CONV_DIRECT_OCB - 1) / TPU_CONV_DIRECT_OCB;
  int64_t place[3];
  for (int d = 0; d < 3; d++)
    place[d] = input ? q->dil[d] * (q->ker[d] - 1) - q->pad[d] : q->pad[d];
  float *packed = NULL, *source = NULL;
  tpu_status st = TPU_ERR_OUT_OF_MEMORY;
  int64_t unit[3] = {1, 1, 1};
  if (!shape_init(&j.s, q, input ? q->in : q->out, input ? unit : q->stride))
    goto done;
  j.steps = tpu_conv_alloc(j.cin * q->kk * (int64_t)sizeof *j.steps);
  packed = tpu_conv_alloc(q->g * q->kg * q->r * (int64_t)sizeof(float));
  j.wpk = tpu_conv_alloc(q->g * j.nob * j.cin * q->kk * TPU_CONV_DIRECT_OCB *
                         (int64_t)sizeof(float));
  if (!j.steps || !packed || !j.wpk)
    goto done;
  for (int64_t c = 0; c < j.cin; c++)
    for (int64_t kp = 0; kp < q->kk; kp++)
      j.steps[c * q->kk + kp] = c * j.s.plane + j.s.off[kp];
  tpu_conv_pack_weight(q, w, packed);
  pack_tiles(&j, q, packed, input);
  source = pad_source(src, place, &j.s);
  if (!source)
    goto done;
  j.src = source;
  choose_bands(&j);
  tpu_parallel_for(j.n * j.g * j.bands, 1, compute_chunk, &j);
  st = atomic_load(&j.status);
done:
  free(j.s.off);
  free(j.steps);
  free(packed);
  free(j.wpk);
  free(source);
  return st == TPU_OK ? TPU_OK : tpu_error(st, "%s: cannot allocate host scratch memory", op);
}

bool tpu_conv_direct_fits(const conv_geom *q, tpu_conv_direct_op op) {
  if (q->cl || q->acc != TPU_FLOAT32 || !tpu_conv_direct_cpu_ok())
    return false;
  int64_t phases = 1;
  for (int d = 0; d < 3; d++) {
    phases *= q->stride[d];
    if (op == TPU_CONV_DIRECT_INPUT &&
        (q->stride[d] != 1 || q->pad[d] > q->dil[d] * (q->ker[d] - 1)))
      return false;
  }
  /* The columns computed and dropped, as a share of a row: beyond 1/8 (an 8-wide 3x3 output),
   * im2col's GEMM is faster. */
  int64_t out = op == TPU_CONV_DIRECT_INPUT ? q->in[2] : q->out[2];
  int64_t dropped = q->dil[2] * (q->ker[2] - 1) / (op == TPU_CONV_DIRECT_INPUT ? 1 : q->stride[2]);
  return phases <= 64 && dropped * 8 <= out + dropped;
}

tpu_status tpu_conv_direct_forward(const conv_geom *q, const conv_view *x, const conv_view *w,
                                   const void *bias, const conv_view *y) {
  return run_direct(q, false, x, w, bias, y, "conv");
}

tpu_status tpu_conv_direct_input(const conv_geom *q, const conv_view *dy, const conv_view *w,
                                 const void *bias, const conv_view *dx) {
  return run_direct(q, true, dy, w, bias, dx, "conv_backward_input");
}

/* ---- Weight gradient ---- */

typedef struct weight_job {
  const conv_geom *q;
  direct_shape s;
  const float *x;  /* padded x: [N][G * Cg][plane] */
  const float *dy; /* dy on the flattened domain, zero between rows: [N][G * Kg][dy_plane] */
  int64_t dy_plane;
  float *partials; /* one [G][kk][Kg][Cg] sum per chunk: dense GEMM outputs, as BLAS takes them */
  _Atomic tpu_status status;
} weight_job;

static void weight_chunk(int64_t begin, int64_t end, int chunk, void *ctx) {
  weight_job *j = ctx;
  const conv_geom *q = j->q;
  const direct_shape *s = &j->s;
  float *acc = j->partials + chunk * q->g * q->kg * q->r;
  for (int64_t u = begin; u < end; u++) {
    int64_t n = u / q->g, g = u % q->g;
    conv_mat a = {(void *)(j->dy + (n * q->g + g) * q->kg * j->dy_plane), j->dy_plane, 1};
    for (int64_t kp = 0; kp < s->kk; kp++) {
      conv_mat b = {(void *)(j->x + (n * q->g + g) * q->cg * s->plane + s->off[kp]), 1,
                    s->plane};
      conv_mat c = {acc + ((g * s->kk + kp) * q->kg) * q->cg, q->cg, 1};
      tpu_status st = tpu_conv_gemm(q, q->kg, q->cg, s->pq, a, b, c, true);
      if (st != TPU_OK) {
        tpu_status ok = TPU_OK;
        atomic_compare_exchange_strong(&j->status, &ok, st);
        return;
      }
    }
  }
}

tpu_status tpu_conv_direct_weight(const conv_geom *q, const conv_view *x, const conv_view *dy,
                                  const conv_view *dw) {
  weight_job j = {.q = q};
  atomic_init(&j.status, TPU_OK);
  float *xs = NULL, *dys = NULL, *packed = NULL;
  tpu_status st = TPU_ERR_OUT_OF_MEMORY;
  direct_shape dy_shape = {0};
  int64_t unit[3] = {1, 1, 1}, zero[3] = {0, 0, 0};
  if (!shape_init(&j.s, q, q->out, q->stride))
    goto done;
  /* dy on the same flattened domain: one phase, no slack. */
  dy_shape = j.s;
  dy_shape.off = NULL;
  memcpy(dy_shape.stride, unit, sizeof unit);
  dy_shape.plane = dy_shape.phase_plane;
  dy_shape.used = 1;
  int64_t wsize = q->g * q->kg * q->r, units = q->n * q->g;
  int chunks = units ? tpu_parallel_chunks(units, 1) : 1;
  j.dy_plane = dy_shape.plane;
  xs = pad_source(x, q->pad, &j.s);
  dys = pad_source(dy, zero, &dy_shape);
  j.partials = calloc((size_t)(chunks * wsize), sizeof(float));
  if (!xs || !dys || !j.partials)
    goto done;
  j.x = xs;
  j.dy = dys;
  if (units)
    tpu_parallel_for(units, 1, weight_chunk, &j);
  st = atomic_load(&j.status);
  if (st == TPU_OK) {
    for (int c = 1; c < chunks; c++)
      tpu_conv_add_run(j.partials, 1, j.partials + c * wsize, wsize, TPU_FLOAT32);
    packed = tpu_conv_alloc(wsize * (int64_t)sizeof(float));
    if (!packed) {
      st = TPU_ERR_OUT_OF_MEMORY;
      goto done;
    }
    for (int64_t g = 0; g < q->g; g++)
      for (int64_t kp = 0; kp < q->kk; kp++)
        for (int64_t k = 0; k < q->kg; k++)
          for (int64_t c = 0; c < q->cg; c++)
            packed[(g * q->kg + k) * q->r + c * q->kk + kp] =
                j.partials[((g * q->kk + kp) * q->kg + k) * q->cg + c];
    tpu_conv_unpack_weight(q, packed, dw);
  }
done:
  free(j.s.off);
  free(xs);
  free(dys);
  free(packed);
  free(j.partials);
  if (st == TPU_OK)
    return TPU_OK;
  return st == TPU_ERR_OUT_OF_MEMORY
             ? tpu_error(st, "conv_backward_weight: cannot allocate host scratch memory")
             : st;
}
