/* RESAMPLE's taps (ops/tpu_resample.h), ported from PyTorch CPU's index and weight helpers
 * (ATen/native/UpSample.h, UpSampleKernel.cpp's antialiasing weights, ReflectionPad.cpp,
 * ReplicationPadding.cpp) with their arithmetic:
 * the scale and source index in the compute type, floorf on the index, float scales for the
 * nearest modes. */
#include "ops/tpu_resample.h"

#include <math.h>
#include <stdlib.h>

static int mode_of(const tpu_op_call *call) {
  return (int)(call->scalars[0].i & TPU_RESAMPLE_MODE_MASK);
}

bool tpu_resample_gathers(const tpu_op_call *call) {
  int mode = mode_of(call);
  return mode == TPU_RESAMPLE_NEAREST || mode == TPU_RESAMPLE_NEAREST_EXACT ||
         mode == TPU_RESAMPLE_REFLECT || mode == TPU_RESAMPLE_REPLICATE;
}

tpu_status tpu_resample_check(const tpu_op_call *call, int *spatial) {
  if (call->n_inputs != 1 || call->n_outputs != 1)
    return tpu_error(TPU_ERR_VALUE, "resample takes one input and one output");
  const tpu_tensor *a = &call->tensors[0], *b = &call->tensors[1];
  int64_t s = call->scalars[1].i, mode = call->scalars[0].i & TPU_RESAMPLE_MODE_MASK;
  if (s < 1 || s > 3 || a->ndim != b->ndim || a->ndim < s || mode > TPU_RESAMPLE_CUBIC_AA)
    return tpu_error(TPU_ERR_VALUE, "resample: bad mode, spatial rank or tensor ranks");
  for (int d = 0; d < a->ndim - s; d++)
    if (a->sizes[d] != b->sizes[d])
      return tpu_error(TPU_ERR_VALUE, "resample: leading sizes differ");
  if (a->dtype != b->dtype)
    return tpu_error(TPU_ERR_VALUE, "resample: the tensors' dtypes differ");
  bool backward = call->op == TPU_OP_RESAMPLE_BACKWARD;
  if ((backward || !tpu_resample_gathers(call)) && !tpu_dtype_is_floating(a->dtype))
    return tpu_error(TPU_ERR_NOT_IMPLEMENTED, "resample: %s takes floating dtypes, not %s",
                     backward ? "the backward" : "interpolation", tpu_dtype_name(a->dtype));
  *spatial = (int)s;
  return TPU_OK;
}

/* The index and weights of the linear and cubic modes in one compute type T (float or double),
 * as ATen's area_pixel_compute_scale, area_pixel_compute_source_index, guard_index_and_lambda,
 * compute_source_index_and_lambda and get_cubic_upsample_coefficients compute them. */
#define DEFINE_INTERP_TAPS(T, suffix)                                                              \
  static T scale_##suffix(int64_t in, int64_t out, bool align, double given) {                   \
    if (align)                                                                                     \
      return out > 1 ? (T)(in - 1) / (T)(out - 1) : (T)0;                                          \
    return given > 0. ? (T)(1.0 / given) : (T)in / (T)out;                                         \
  }                                                                                                \
  static T source_##suffix(T scale, int64_t o, bool align, bool cubic) {                         \
    if (align)                                                                                     \
      return scale * (T)o;                                                                         \
    T src = scale * ((T)o + (T)0.5) - (T)0.5;                                                      \
    return !cubic && src < (T)0 ? (T)0 : src;                                                      \
  }                                                                                                \
  static void guard_##suffix(T real, int64_t in, int64_t *index, T *lambda) {                    \
    int64_t i = (int64_t)floorf((float)real);                                                      \
    *index = i < in - 1 ? i : in - 1;                                                              \
    T l = real - (T)*index;                                                                        \
    *lambda = l < (T)0 ? (T)0 : l > (T)1 ? (T)1 : l;                                               \
  }                                                                                                \
  static T cubic1_##suffix(T x, T a) {                                                           \
    return ((a + 2) * x - (a + 3)) * x * x + 1;                                                    \
  }                                                                                                \
  static T cubic2_##suffix(T x, T a) {                                                           \
    return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a;                                              \
  }                                                                                                \
  static void interp_taps_##suffix(tpu_resample_axis *a, bool cubic, bool align, double given) { \
    const T scale = scale_##suffix(a->in, a->out, align, given), coef = (T)-0.75;               \
    for (int64_t o = 0; o < a->out; o++) {                                                         \
      int64_t *index = a->index + o * a->taps;                                                     \
      double *weight = a->weight + o * a->taps;                                                    \
      if (!cubic && a->in == a->out) {                                                             \
        index[0] = index[1] = o;                                                                   \
        weight[0] = 1;                                                                             \
        weight[1] = 0;                                                                             \
        continue;                                                                                  \
      }                                                                                            \
      int64_t i0;                                                                                  \
      T t;                                                                                         \
      guard_##suffix(source_##suffix(scale, o, align, cubic), a->in, &i0, &t);                     \
      if (!cubic) {                                                                                \
        index[0] = i0;                                                                             \
        index[1] = i0 + (i0 < a->in - 1 ? 1 : 0);                                                  \
        weight[0] = (T)1 - t;                                                                      \
        weight[1] = t;                                                                             \
        continue;                                                                                  \
      }                                                                                            \
      const T x2 = (T)(1.0 - t);                                                                   \
      weight[0] = cubic2_##suffix((T)(t + 1.0), coef);                                             \
      weight[1] = cubic1_##suffix(t, coef);                                                        \
      weight[2] = cubic1_##suffix(x2, coef);                                                       \
      weight[3] = cubic2_##suffix((T)(x2 + 1.0), coef);                                            \
      for (int j = 0; j < 4; j++) {                                                                \
        int64_t i = i0 - 1 + j;                                                                    \
        index[j] = i < 0 ? 0 : i > a->in - 1 ? a->in - 1 : i;                                      \
      }                                                                                            \
    }                                                                                              \
  }                                                                                                \
  static T filter_##suffix(T x, bool cubic) {                                                    \
    const T a = (T)-0.5;                                                                           \
    x = x < 0 ? -x : x;                                                                            \
    if (!cubic)                                                                                    \
      return x < 1 ? 1 - x : (T)0;                                                                 \
    if (x < 1)                                                                                     \
      return ((a + 2) * x - (a + 3)) * x * x + 1;                                                  \
    return x < 2 ? (((x - 5) * x + 8) * x - 4) * a : (T)0;                                         \
  }                                                                                                \
  /* The antialiasing taps: _compute_weights_aa's window [xmin, xmin + xsize) and normalized     \
   * weights, padded with zero weights to the widest window. */                                    \
  static void aa_taps_##suffix(tpu_resample_axis *a, bool cubic, bool align, double given) {     \
    const T scale = scale_##suffix(a->in, a->out, align, given);                                  \
    const T half = (T)(cubic ? 2 : 1);                                                             \
    const T support = scale >= (T)1 ? half * scale : half;                                         \
    const T invscale = scale >= (T)1 ? (T)(1.0 / scale) : (T)1;                                    \
    for (int64_t o = 0; o < a->out; o++) {                                                         \
      int64_t *index = a->index + o * a->taps;                                                     \
      double *weight = a->weight + o * a->taps;                                                    \
      const T center = (T)(scale * ((double)o + 0.5));                                             \
      int64_t xmin = (int64_t)((double)(center - support) + 0.5);                                  \
      xmin = xmin > 0 ? xmin : 0;                                                                  \
      int64_t xend = (int64_t)((double)(center + support) + 0.5);                                  \
      xend = xend < a->in ? xend : a->in;                                                          \
      const int64_t xsize = xend - xmin;                                                           \
      T w[TPU_RESAMPLE_AA_MAX_TAPS], total = 0;                                                    \
      for (int64_t j = 0; j < xsize && j < a->taps; j++) {                                         \
        w[j] = filter_##suffix(                                                                    \
            (T)(((double)((T)(j + xmin) - center) + 0.5) * (double)invscale), cubic);            \
        total += w[j];                                                                             \
      }                                                                                            \
      for (int64_t j = 0; j < a->taps; j++) {                                                      \
        const bool inside = j < xsize;                                                             \
        index[j] = inside ? xmin + j : (xmin < a->in ? xmin : a->in - 1);                          \
        weight[j] = !inside ? 0 : total != (T)0 ? w[j] / total : w[j];                             \
      }                                                                                            \
    }                                                                                              \
  }                                                                                                \
  static int aa_width_##suffix(int64_t in, int64_t out, bool cubic, bool align, double given) {  \
    const T scale = scale_##suffix(in, out, align, given);                                        \
    const T half = (T)(cubic ? 2 : 1);                                                             \
    const T support = scale >= (T)1 ? half * scale : half;                                         \
    return (int)ceil((double)support) * 2 + 1;                                                     \
  }

DEFINE_INTERP_TAPS(float, f)
DEFINE_INTERP_TAPS(double, d)

/* Nearest and nearest-exact: ATen's nearest_idx and nearest_exact_idx. */
static int64_t nearest(int64_t o, int64_t in, int64_t out, double given, bool exact) {
  if (!exact && out == in)
    return o;
  if (!exact && out == 2 * in)
    return o >> 1;
  const float scale = given > 0. ? (float)(1.0 / given) : (float)in / (float)out;
  const float src = exact ? (float)(((double)o + 0.5) * (double)scale) : (float)o * scale;
  int64_t i = (int64_t)floorf(src);
  return i < in - 1 ? i : in - 1;
}

/* The pads: ATen's ReflectionPad::index and ReplicationPad::index. */
static int64_t padded(int64_t j, int64_t in, int64_t pad, bool reflect) {
  const int64_t i_start = pad < 0 ? -pad : 0, o_start = pad > 0 ? pad : 0;
  int64_t ip;
  if (j < pad)
    ip = reflect ? pad * 2 - j : pad;
  else if (j < in + pad)
    ip = j;
  else
    ip = reflect ? (in + pad - 1) * 2 - j : in + pad - 1;
  return ip - o_start + i_start;
}

tpu_status tpu_resample_axis_init(const tpu_op_call *call, int s, tpu_resample_axis *a) {
  const bool backward = call->op == TPU_OP_RESAMPLE_BACKWARD;
  const tpu_tensor *x = &call->tensors[backward ? 1 : 0], *y = &call->tensors[backward ? 0 : 1];
  const int d = x->ndim - (int)call->scalars[1].i + s, mode = mode_of(call);
  const bool align = (call->scalars[0].i & TPU_RESAMPLE_ALIGN_CORNERS) != 0;
  const double given = call->scalars[2 + s].f;
  *a = (tpu_resample_axis){.in = x->sizes[d], .out = y->sizes[d]};
  a->taps = mode == TPU_RESAMPLE_LINEAR ? 2 : mode == TPU_RESAMPLE_CUBIC ? 4 : 1;
  const bool aa = mode == TPU_RESAMPLE_LINEAR_AA || mode == TPU_RESAMPLE_CUBIC_AA;
  const bool cubic = mode == TPU_RESAMPLE_CUBIC || mode == TPU_RESAMPLE_CUBIC_AA;
  if (aa) {
    a->taps = x->dtype == TPU_FLOAT64 ? aa_width_d(a->in, a->out, cubic, align, given)
                                      : aa_width_f(a->in, a->out, cubic, align, given);
    if (a->taps > TPU_RESAMPLE_AA_MAX_TAPS)
      return tpu_error(TPU_ERR_NOT_IMPLEMENTED,
                       "resample: antialiasing over more than %d input positions",
                       TPU_RESAMPLE_AA_MAX_TAPS);
  }
  size_t n = (size_t)(a->out > 0 ? a->out : 1) * (size_t)a->taps;
  a->index = malloc(n * sizeof *a->index);
  a->weight = malloc(n * sizeof *a->weight);
  if (!a->index || !a->weight) {
    tpu_resample_axis_free(a);
    return tpu_error(TPU_ERR_OUT_OF_MEMORY, "resample: out of host memory for taps");
  }
  if (a->out > 0 && a->in == 0) {
    tpu_resample_axis_free(a);
    return tpu_error(TPU_ERR_VALUE, "resample: an empty input dimension has no taps");
  }
  if (aa) {
    if (x->dtype == TPU_FLOAT64)
      aa_taps_d(a, cubic, align, given);
    else
      aa_taps_f(a, cubic, align, given);
  } else if (mode == TPU_RESAMPLE_LINEAR || mode == TPU_RESAMPLE_CUBIC) {
    if (x->dtype == TPU_FLOAT64)
      interp_taps_d(a, cubic, align, given);
    else
      interp_taps_f(a, cubic, align, given);
  } else {
    for (int64_t o = 0; o < a->out; o++) {
      a->weight[o] = 1;
      if (mode == TPU_RESAMPLE_NEAREST || mode == TPU_RESAMPLE_NEAREST_EXACT)
        a->index[o] = nearest(o, a->in, a->out, given, mode == TPU_RESAMPLE_NEAREST_EXACT);
      else
        a->index[o] = padded(o, a->in, call->scalars[5 + s].i, mode == TPU_RESAMPLE_REFLECT);
    }
  }
  for (int64_t k = 0; k < a->out * a->taps; k++)
    if (a->index[k] < 0 || a->index[k] >= a->in) {
      tpu_resample_axis_free(a);
      return tpu_error(TPU_ERR_VALUE, "resample: the padding or sizes reach outside the input");
    }
  return TPU_OK;
}

void tpu_resample_axis_free(tpu_resample_axis *a) {
  free(a->index);
  free(a->weight);
  a->index = NULL;
  a->weight = NULL;
}
