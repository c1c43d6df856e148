/* libFuzzer target: view validation (tpu_tensor_check, tensor/tpu_tensor.h).
 *
 * The input decodes into one view: dtype, rank, sizes, strides and byte offset, each any int64
 * (negative, huge, overflowing), over a buffer of a known size, over host memory, or over neither.
 * Here the view's validity is computed apart from the check, with overflow-checked int64
 * arithmetic where the check uses 128-bit integers:
 *   - a device view is valid exactly when its dtype and rank are, no size is negative, its element
 *     count fits in int64 (the product of its non-zero sizes, so that every partial product
 *     tpu_tensor_numel forms does), and it has no element or every element lies inside the
 *     buffer; the check must agree both ways;
 *   - a host view has no size to compare against: an accepted one must have every element's byte
 *     offset within int64 (kernels add them to pointers), and one that reaches less than 2^40
 *     bytes either way must be accepted.
 * An accepted device view is then read element by element from memory of exactly the buffer's
 * size, as a kernel would walk it, so ASan and UBSan see any access past it. */
#include <string.h>

#include "drivers/tpu_drivers.h"
#include "fuzz_util.h"
#include "tensor/tpu_tensor.h"

/* The buffers views are checked against: pending buffers (an identity and a size, no memory),
 * since the check reads nothing else; the large ones test arithmetic near the top of the range. */
static const size_t buffer_bytes[] = {
    0,   1,   2,    3,    4,     7,      8,  15, 16, 24, 31, 64, 100, 255,
    256, 1000, 4096, 65536, (size_t)1 << 31, ((size_t)1 << 32) + 8, (size_t)1 << 38,
};
#define N_BUFFERS (sizeof buffer_bytes / sizeof buffer_bytes[0])
static tpu_buffer *buffers[N_BUFFERS];

/* Memory of exactly each small buffer's size, where accepted views are read (NULL: too large to
 * read, or empty). */
#define READ_MAX_BYTES 65536
static unsigned char *mirrors[N_BUFFERS];

/* Elements read per view at most; larger views have their lowest and highest element read. */
#define READ_MAX_ELEMENTS 4096

/* What a host view points at: never read. */
static char host_memory[1];

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc, (void)argv;
  FUZZ_REQUIRE(tpu_drivers_register_builtin() == TPU_OK, "%s", tpu_last_error());
  for (size_t i = 0; i < N_BUFFERS; i++) {
    FUZZ_REQUIRE(tpu_buffer_create_pending(0, 0, buffer_bytes[i], &buffers[i]) == TPU_OK, "%s",
                 tpu_last_error());
    if (buffer_bytes[i] && buffer_bytes[i] <= READ_MAX_BYTES)
      mirrors[i] = calloc(buffer_bytes[i], 1);
  }
  return 0;
}

/* Expected verdict for a device view over `nbytes`, or for a host view the verdict it must have
 * when it is sure (see the header comment): 1 valid, 0 invalid, -1 either way. */
static int expect(const tpu_tensor *t, size_t nbytes) {
  if ((unsigned)t->dtype >= TPU_DTYPE_COUNT || t->ndim < 0 || t->ndim > TPU_MAX_DIMS)
    return 0;
  int64_t numel = 1;
  bool empty = false;
  for (int d = 0; d < t->ndim; d++) {
    if (t->sizes[d] < 0)
      return 0;
    if (t->sizes[d] == 0)
      empty = true;
    else if (__builtin_mul_overflow(numel, t->sizes[d], &numel))
      return 0;
  }
  if (empty)
    return 1;
  if (!t->buf && !t->host)
    return 0;
  /* Byte offsets, from element [0, ..., 0], of the lowest and highest byte of any element. An
   * overflow means a span of 2^63 bytes or more: past any buffer, and for a host view past what
   * the sure answers below look at. */
  int64_t item = (int64_t)tpu_dtype_size(t->dtype), lo = 0, hi = item - 1, extent;
  for (int d = 0; d < t->ndim; d++)
    if (__builtin_mul_overflow(t->sizes[d] - 1, t->strides[d], &extent) ||
        __builtin_mul_overflow(extent, item, &extent) ||
        __builtin_add_overflow(extent < 0 ? lo : hi, extent, extent < 0 ? &lo : &hi))
      return t->buf ? 0 : -1;
  int64_t first, last;
  bool over = __builtin_add_overflow(t->offset, lo, &first) ||
              __builtin_add_overflow(t->offset, hi, &last);
  if (t->buf)
    return !over && first >= 0 && (uint64_t)last < nbytes;
  const int64_t near = (int64_t)1 << 40;
  return !over && first > -near && last < near ? 1 : -1;
}

/* For an accepted host view: every byte of every element has an offset within int64. */
static bool host_reach_fits(const tpu_tensor *t) {
  for (int d = 0; d < t->ndim; d++)
    if (t->sizes[d] == 0)
      return true;
  const __int128 span = (__int128)1 << 64; /* more than int64 offsets can reach */
  __int128 item = (__int128)tpu_dtype_size(t->dtype), lo = t->offset, hi = t->offset + item - 1;
  for (int d = 0; d < t->ndim; d++) {
    __int128 extent = (__int128)(t->sizes[d] - 1) * t->strides[d]; /* |extent| <= 2^126 */
    if (extent > span || extent < -span)
      return false;
    *(extent < 0 ? &lo : &hi) += extent * item;
  }
  return lo >= INT64_MIN && hi <= INT64_MAX;
}

/* Where reads go, so that the compiler keeps them. */
static volatile unsigned char sink;

/* Reads the element at `byte_offset` of an accepted view from `mem`, checking first that it lies
 * inside the buffer. */
static void read_element(const tpu_tensor *t, const unsigned char *mem, size_t nbytes,
                         int64_t byte_offset) {
  int64_t item = (int64_t)tpu_dtype_size(t->dtype);
  FUZZ_REQUIRE(byte_offset >= 0 && (uint64_t)(byte_offset + item) <= nbytes,
               "accepted view reaches bytes [%lld, %lld) of a %zu-byte buffer",
               (long long)byte_offset, (long long)(byte_offset + item), nbytes);
  unsigned char element[16];
  memcpy(element, mem + byte_offset, (size_t)item);
  sink ^= element[item - 1];
}

/* Walks every element of an accepted device view (dimensions of size 1 or stride 0 repeat an
 * address, so they are skipped), or when there are too many its two extreme elements. */
static void read_view(const tpu_tensor *t, const unsigned char *mem, size_t nbytes) {
  int64_t item = (int64_t)tpu_dtype_size(t->dtype), count = 1, lo = 0, hi = 0;
  int dims[TPU_MAX_DIMS], n = 0;
  for (int d = 0; d < t->ndim; d++) {
    if (t->sizes[d] == 1 || t->strides[d] == 0)
      continue;
    int64_t extent = (t->sizes[d] - 1) * t->strides[d] * item; /* inside the buffer: no overflow */
    *(extent < 0 ? &lo : &hi) += extent;
    dims[n++] = d;
    /* A size here is at most the buffer's byte count, so the product cannot overflow. */
    count = count > READ_MAX_ELEMENTS ? count : count * t->sizes[d];
  }
  if (count > READ_MAX_ELEMENTS) {
    read_element(t, mem, nbytes, t->offset + lo);
    read_element(t, mem, nbytes, t->offset + hi);
    return;
  }
  int64_t idx[TPU_MAX_DIMS] = {0};
  for (int64_t e = 0; e < count; e++) {
    int64_t at = t->offset;
    for (int k = 0; k < n; k++)
      at += idx[k] * t->strides[dims[k]] * item;
    read_element(t, mem, nbytes, at);
    for (int k = n - 1; k >= 0 && ++idx[k] == t->sizes[dims[k]]; k--)
      idx[k] = 0;
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fuzz_in in = {data, size};
  tpu_tensor t;
  memset(&t, 0, sizeof t);
  unsigned where = take_below(&in, N_BUFFERS + 2); /* a buffer, host memory, or neither */
  if (where < N_BUFFERS)
    t.buf = buffers[where];
  else if (where == N_BUFFERS)
    t.host = host_memory;
  t.dtype = (tpu_dtype)((int)take_below(&in, TPU_DTYPE_COUNT + 3) - 1); /* -1 and 2 past */
  t.ndim = (int)take_below(&in, TPU_MAX_DIMS + 5) - 2;                 /* -2 to 27 */
  for (int d = 0; d < t.ndim && d < TPU_MAX_DIMS; d++) {
    t.sizes[d] = take_i64(&in);
    t.strides[d] = take_i64(&in);
  }
  t.offset = take_i64(&in);
  size_t nbytes = t.buf ? tpu_buffer_nbytes(t.buf) : 0;
  int expected = expect(&t, nbytes);
  bool accepted = tpu_tensor_check(&t) == TPU_OK;
  FUZZ_REQUIRE(expected < 0 || accepted == (expected == 1),
               "tpu_tensor_check %s a view it should %s (%s)", accepted ? "accepts" : "rejects",
               expected ? "accept" : "reject", accepted ? "" : tpu_last_error());
  if (!accepted)
    return 0;
  /* What kernels compute from every accepted view must be defined (UBSan watches). */
  int64_t numel = tpu_tensor_numel(&t);
  (void)tpu_tensor_is_contiguous(&t);
  if (!t.buf) {
    FUZZ_REQUIRE(host_reach_fits(&t), "accepted host view reaches past int64 byte offsets");
    return 0;
  }
  (void)tpu_tensor_covers_buffer(&t);
  if (numel > 0 && mirrors[where])
    read_view(&t, mirrors[where], nbytes);
  return 0;
}
