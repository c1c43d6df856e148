/* What the pool family's files share (tpu_pjrt_lower_pool.c, the family; _pool_window.c, the
 * windows): a pooling call's geometry, and its windows' reductions, divisors and positions. */
#ifndef TPU_PJRT_LOWER_POOL_H
#define TPU_PJRT_LOWER_POOL_H

#include "drivers/pjrt/tpu_pjrt_family.h"

/* One spatial dimension: the input's (x-like) and output's (y-like) sizes, and the window's size,
 * stride, padding before the input and dilation (regular windows only). */
typedef struct tpu_pjrt_pool_dim {
  int64_t in, out, size, stride, pad, dilation;
} tpu_pjrt_pool_dim;

typedef struct tpu_pjrt_pool {
  unsigned mode;      /* TPU_POOL_* */
  bool max;           /* max or adaptive max */
  bool count_pad;     /* average pooling dividing by the window padding included */
  bool irregular;     /* adaptive windows of varying size in some dimension: every dimension's
                         windows are then the adaptive ones, as masks */
  int64_t divisor;    /* 0: none */
  int spatial;        /* 1 to 3, dimensions 2.. of every tensor */
  tpu_pjrt_pool_dim dim[3];
} tpu_pjrt_pool;

/* v[0..n) (2 at most, of the input's dims) reduced over each output's window by `body`, from
 * init (also the value of the padding and of the taps outside the input): of y_dims. */
void tpu_pjrt_pool_windows(tpu_hlo *h, const tpu_pjrt_pool *p, const int64_t *y_dims, int n,
                           tpu_hlo_value *v, const tpu_hlo_value *init, tpu_hlo_region_fn body,
                           void *ctx);

/* Each element's row-major position in its input plane (int64, x's dims; x of the input's). */
tpu_hlo_value tpu_pjrt_pool_positions(tpu_hlo *h, const tpu_pjrt_pool *p, const tpu_hlo_value *x);

/* The position in its input plane of each output's first tap at or past the input's start (int64,
 * y's dims; y of the output's): an empty window's index on the host. Regular windows only. */
tpu_hlo_value tpu_pjrt_pool_first_tap(tpu_hlo *h, const tpu_pjrt_pool *p, const tpu_hlo_value *y);

/* v (of the output's dims, floating or int64) divided by each window's divisor, 0 where that is 0
 * (an empty window), as the host kernel divides. */
tpu_hlo_value tpu_pjrt_pool_share(tpu_hlo *h, const tpu_pjrt_pool *p, tpu_hlo_value v);

/* Average pooling's input gradient from each output's share of its gradient (floating): the sum,
 * at each input position, of the shares of the windows holding it. */
tpu_hlo_value tpu_pjrt_pool_avg_backward(tpu_hlo *h, const tpu_pjrt_pool *p, tpu_hlo_value share);

#endif
