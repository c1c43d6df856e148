/* The shared-memory communicator (dist/tpu_comm.h). Groups of 2 and 3 forked ranks run every
 * collective on host buffers and compare the results with values computed here: every reduction
 * op on a representative set of dtypes, sizes of several chunks that the group size does not
 * divide, in place; the rooted and gathering collectives; all_to_all with uneven splits;
 * send/recv of a message larger than the mailbox. Then the failures: ranks that disagree fail
 * together with TPU_ERR_VALUE and the group goes on; a rank that never arrives, or that exits,
 * gives the others TPU_ERR_DIST. Each rank reports its failures through its exit status; no
 * segment outlives the test. */
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "dist/tpu_comm.h"
#include "dist/tpu_comm_internal.h" /* COMM_CHUNK_BYTES, COMM_MAILBOX_BYTES */
#include "tpu_test.h"

#define TIMEOUT_MS 30000 /* healthy collectives: generous for sanitizers on a busy machine */
#define SHORT_TIMEOUT_MS 300
#define MAX_GROUPS 16

#define FAIL(...)                                                                                  \
  do {                                                                                             \
    fprintf(stderr, __VA_ARGS__);                                                                  \
    tpu_test_failures++;                                                                           \
  } while (0)

static char group_names[MAX_GROUPS][64];
static int num_groups;

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static int run_rank(const char *name, int rank, int size, void (*body)(tpu_comm *)) {
  tpu_test_failures = 0; /* the parent's count came along with fork */
  alarm(120);            /* a rank that hangs dies, and its group fails */
  tpu_comm *c = NULL;
  if (tpu_comm_open(name, rank, size, TIMEOUT_MS, &c) != TPU_OK) {
    fprintf(stderr, "rank %d: open: %s\n", rank, tpu_last_error());
    return 1;
  }
  if (tpu_comm_barrier(c, TIMEOUT_MS) != TPU_OK)
    FAIL("rank %d: first barrier: %s\n", rank, tpu_last_error());
  else if (rank == 0)
    tpu_comm_unlink(name);
  body(c);
  tpu_comm_close(c);
  return tpu_test_failures ? 1 : 0;
}

/* Runs body on each rank of a new group of `size` forked processes; checks they all exit 0. */
static void run_group(const char *tag, int size, void (*body)(tpu_comm *)) {
  char *name = group_names[num_groups++];
  snprintf(name, sizeof group_names[0], "/tpu_test_comm_%d_%s", (int)getpid(), tag);
  fflush(stdout);
  fflush(stderr);
  pid_t pids[8];
  for (int r = 0; r < size; r++) {
    pids[r] = fork();
    if (pids[r] == 0)
      exit(run_rank(name, r, size, body)); /* exit, not _exit: the leak check runs */
  }
  for (int r = 0; r < size; r++) {
    int status = 0;
    CHECK(waitpid(pids[r], &status, 0) == pids[r]);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
      FAIL("%s: rank %d failed (status %#x)\n", name, r, status);
  }
}

static uint64_t draw(uint64_t salt, int who, size_t i) {
  uint64_t x = salt * 0x100000001b3ull ^ (uint64_t)who << 48 ^ i;
  x += 0x9e3779b97f4a7c15ull; /* splitmix64 */
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

static void fill_bytes(uint64_t salt, int who, size_t n, char *dst) {
  for (size_t i = 0; i < n; i++)
    dst[i] = (char)draw(salt, who, i);
}

static bool bytes_are(uint64_t salt, int who, size_t n, const char *got) {
  for (size_t i = 0; i < n; i++)
    if (got[i] != (char)draw(salt, who, i))
      return false;
  return true;
}

/* A multiple of 1/4 in [-4, 4], exact in every floating dtype; every 97th of the last rank is
 * NaN. */
static double real_value(uint64_t salt, int rank, int size, size_t i) {
  if (rank == size - 1 && i % 97 == 5)
    return NAN;
  return (double)((int)(draw(salt, rank, i) % 33) - 16) / 4;
}

/* Rank `rank`'s input of n elements: small reals, full-range integers (so sums wrap), 0/1 bools. */
static void fill(tpu_dtype dtype, uint64_t salt, int rank, int size, size_t n, char *dst) {
  size_t esize = tpu_dtype_size(dtype);
  for (size_t i = 0; i < n; i++) {
    char *p = dst + i * esize;
    double v = real_value(salt, rank, size, i);
    uint64_t bits = draw(salt, rank, i);
    float f = (float)v;
    uint16_t h;
    tpu_c64 z = {(float)real_value(salt, rank, size, 2 * i),
                 (float)real_value(salt, rank, size, 2 * i + 1)};
    switch (dtype) {
    case TPU_FLOAT64: memcpy(p, &v, 8); break;
    case TPU_FLOAT32: memcpy(p, &f, 4); break;
    case TPU_FLOAT16: h = tpu_f32_to_f16(f), memcpy(p, &h, 2); break;
    case TPU_BFLOAT16: h = tpu_f32_to_bf16(f), memcpy(p, &h, 2); break;
    case TPU_COMPLEX64: memcpy(p, &z, 8); break;
    case TPU_BOOL: *p = (char)(bits & 1); break;
    default: memcpy(p, &bits, esize); break; /* the low bytes: x86 is little-endian */
    }
  }
}

static int64_t load_int(const char *p, tpu_dtype dtype) {
  uint8_t u8;
  int8_t i8;
  int16_t i16;
  int32_t i32;
  int64_t i64;
  switch (dtype) {
  case TPU_UINT8: return memcpy(&u8, p, 1), u8;
  case TPU_INT8: return memcpy(&i8, p, 1), i8;
  case TPU_INT16: return memcpy(&i16, p, 2), i16;
  case TPU_INT32: return memcpy(&i32, p, 4), i32;
  default: return memcpy(&i64, p, 8), i64;
  }
}

/* Rounds to the accumulator: float for all but float64 (an exact double op then rounded to float
 * is the float op). */
static double acc_round(double v, bool narrow) { return narrow ? (double)(float)v : v; }

static double real_op(tpu_reduce_op op, double acc, double x, double f, bool narrow) {
  switch (op) {
  case TPU_REDUCE_PRODUCT: return acc_round(acc * x, narrow);
  case TPU_REDUCE_MIN: return isnan(acc) || isnan(x) ? NAN : fmin(acc, x);
  case TPU_REDUCE_MAX: return isnan(acc) || isnan(x) ? NAN : fmax(acc, x);
  case TPU_REDUCE_PREMUL_SUM: return acc_round(acc + acc_round(x * f, narrow), narrow);
  default: return acc_round(acc + x, narrow);
  }
}

/* want = op over the ranks' inputs, as dist/tpu_comm.h documents it, one element at a time. */
static void expect_reduction(tpu_dtype dtype, tpu_reduce_op op, double factor, int size,
                             char *const *ins, size_t n, char *want) {
  size_t esize = tpu_dtype_size(dtype);
  bool complex_product = dtype == TPU_COMPLEX64 && op == TPU_REDUCE_PRODUCT;
  if (dtype == TPU_COMPLEX64 && !complex_product) {
    expect_reduction(TPU_FLOAT32, op, factor, size, ins, 2 * n, want); /* part by part */
    return;
  }
  for (size_t i = 0; i < n; i++) {
    char *w = want + i * esize;
    if (complex_product) {
      tpu_c64 acc, x;
      memcpy(&acc, ins[0] + i * esize, 8);
      for (int p = 1; p < size; p++) {
        memcpy(&x, ins[p] + i * esize, 8);
        acc = (tpu_c64){acc.re * x.re - acc.im * x.im, acc.re * x.im + acc.im * x.re};
      }
      memcpy(w, &acc, 8);
    } else if (tpu_dtype_is_floating(dtype)) {
      bool narrow = dtype != TPU_FLOAT64;
      double f = acc_round(factor, narrow);
      double acc = tpu_real_load(ins[0] + i * esize, dtype);
      if (op == TPU_REDUCE_PREMUL_SUM)
        acc = acc_round(acc * f, narrow);
      for (int p = 1; p < size; p++)
        acc = real_op(op, acc, tpu_real_load(ins[p] + i * esize, dtype), f, narrow);
      if (op == TPU_REDUCE_AVG)
        acc = acc_round(acc / size, narrow);
      float a = (float)acc;
      uint16_t h = dtype == TPU_FLOAT16 ? tpu_f32_to_f16(a) : tpu_f32_to_bf16(a);
      if (dtype == TPU_FLOAT64)
        memcpy(w, &acc, 8);
      else if (dtype == TPU_FLOAT32)
        memcpy(w, &a, 4);
      else
        memcpy(w, &h, 2);
    } else if (dtype == TPU_BOOL) {
      int any = 0, all = 1, parity = 0;
      for (int p = 0; p < size; p++) {
        int b = ins[p][i] != 0;
        any |= b, all &= b, parity ^= b;
      }
      bool is_all = op == TPU_REDUCE_PRODUCT || op == TPU_REDUCE_MIN || op == TPU_REDUCE_BAND;
      *w = (char)(is_all ? all : op == TPU_REDUCE_BXOR ? parity : any);
    } else {
      int64_t lo = load_int(ins[0] + i * esize, dtype), hi = lo;
      uint64_t acc = (uint64_t)lo;
      for (int p = 1; p < size; p++) {
        int64_t x = load_int(ins[p] + i * esize, dtype);
        lo = x < lo ? x : lo;
        hi = x > hi ? x : hi;
        switch (op) {
        case TPU_REDUCE_PRODUCT: acc *= (uint64_t)x; break;
        case TPU_REDUCE_BAND: acc &= (uint64_t)x; break;
        case TPU_REDUCE_BOR: acc |= (uint64_t)x; break;
        case TPU_REDUCE_BXOR: acc ^= (uint64_t)x; break;
        default: acc += (uint64_t)x; break;
        }
      }
      if (op == TPU_REDUCE_MIN || op == TPU_REDUCE_MAX)
        acc = (uint64_t)(op == TPU_REDUCE_MIN ? lo : hi);
      if (op == TPU_REDUCE_AVG)
        acc = (uint64_t)((int64_t)acc / size);
      memcpy(w, &acc, esize); /* the low bytes: the result wraps to the dtype */
    }
  }
}

/* Equal element by element, a NaN matching any NaN. */
static bool same_elements(tpu_dtype dtype, const char *got, const char *want, size_t n) {
  if (dtype == TPU_COMPLEX64)
    return same_elements(TPU_FLOAT32, got, want, 2 * n);
  if (!tpu_dtype_is_floating(dtype))
    return n == 0 || memcmp(got, want, n * tpu_dtype_size(dtype)) == 0;
  size_t esize = tpu_dtype_size(dtype);
  for (size_t i = 0; i < n; i++) {
    double a = tpu_real_load(got + i * esize, dtype), b = tpu_real_load(want + i * esize, dtype);
    if (!(a == b || (isnan(a) && isnan(b))))
      return false;
  }
  return true;
}

static const tpu_dtype reduce_dtypes[] = {TPU_FLOAT32, TPU_FLOAT64, TPU_BFLOAT16, TPU_FLOAT16,
                                          TPU_INT8,    TPU_INT16,   TPU_INT32,    TPU_INT64,
                                          TPU_UINT8,   TPU_BOOL,    TPU_COMPLEX64};

/* Every rank's input of n elements (ins[p]) and room for the result. */
typedef struct inputs {
  char *ins[8], *out, *want;
  size_t bytes;
} inputs;

static inputs make_inputs(tpu_dtype dtype, uint64_t salt, int size, size_t n) {
  inputs in = {.bytes = n * tpu_dtype_size(dtype)};
  for (int p = 0; p < size; p++) {
    in.ins[p] = malloc(in.bytes + 1);
    fill(dtype, salt, p, size, n, in.ins[p]);
  }
  in.out = calloc(1, in.bytes + 1);
  in.want = calloc(1, in.bytes + 1);
  return in;
}

static void free_inputs(inputs *in) {
  for (int p = 0; p < 8; p++)
    free(in->ins[p]);
  free(in->out);
  free(in->want);
}

/* `direct`: the buffers' `data` is set, so this rank reads and writes its own share in place;
 * otherwise they go through the callbacks only (ranks of one call may differ). */
static void all_reduce_case(tpu_comm *c, tpu_dtype dtype, tpu_reduce_op op, size_t n,
                            bool in_place, bool direct) {
  int rank = tpu_comm_rank(c), size = tpu_comm_size(c);
  uint64_t salt = n * 131 + (uint64_t)dtype * 17 + (uint64_t)op;
  inputs in = make_inputs(dtype, salt, size, n);
  expect_reduction(dtype, op, 0.5, size, in.ins, n, in.want);
  tpu_comm_buf src = tpu_comm_host_buf(in.ins[rank], in.bytes);
  tpu_comm_buf dst = in_place ? src : tpu_comm_host_buf(in.out, in.bytes);
  if (!direct)
    src.data = dst.data = NULL;
  tpu_status st = tpu_comm_all_reduce(c, &src, &dst, dtype, op, 0.5, TIMEOUT_MS);
  const char *what = tpu_dtype_name(dtype);
  if (!tpu_comm_op_supported(op, dtype)) {
    if (st != TPU_ERR_TYPE)
      FAIL("rank %d: all_reduce of %s by op %d: status %d, not a type error\n", rank, what, op, st);
  } else if (st != TPU_OK) {
    FAIL("rank %d: all_reduce of %zu %s by op %d: %s\n", rank, n, what, op, tpu_last_error());
  } else if (!same_elements(dtype, in_place ? in.ins[rank] : in.out, in.want, n)) {
    FAIL("rank %d: all_reduce of %zu %s by op %d: wrong result\n", rank, n, what, op);
  }
  free_inputs(&in);
}

static void all_reduce_body(tpu_comm *c) {
  static const size_t sizes[] = {0, 1, 2, 1031};
  int k = 0;
  for (size_t d = 0; d < sizeof reduce_dtypes / sizeof *reduce_dtypes; d++)
    for (int op = TPU_REDUCE_SUM; op <= TPU_REDUCE_BXOR; op++)
      for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++, k++)
        all_reduce_case(c, reduce_dtypes[d], (tpu_reduce_op)op, sizes[s], k % 2,
                        (k + tpu_comm_rank(c)) % 3 != 0);
  /* Several chunks, the last one partial. */
  static const struct {
    tpu_dtype dtype;
    tpu_reduce_op op;
  } large[] = {{TPU_FLOAT32, TPU_REDUCE_SUM},      {TPU_BFLOAT16, TPU_REDUCE_AVG},
               {TPU_INT64, TPU_REDUCE_PRODUCT},    {TPU_COMPLEX64, TPU_REDUCE_PRODUCT},
               {TPU_UINT8, TPU_REDUCE_MAX},        {TPU_FLOAT64, TPU_REDUCE_PREMUL_SUM}};
  for (size_t i = 0; i < sizeof large / sizeof *large; i++)
    all_reduce_case(c, large[i].dtype, large[i].op,
                    2 * COMM_CHUNK_BYTES / tpu_dtype_size(large[i].dtype) + 517, i % 2,
                    (i + (size_t)tpu_comm_rank(c)) % 3 != 0);
}

static void rooted_reduction_body(tpu_comm *c) {
  int rank = tpu_comm_rank(c), size = tpu_comm_size(c);
  for (int root = 0; root < size; root++) {
    size_t n = COMM_CHUNK_BYTES / 4 + 1031;
    inputs in = make_inputs(TPU_FLOAT32, 7 + (uint64_t)root, size, n);
    expect_reduction(TPU_FLOAT32, TPU_REDUCE_SUM, 0, size, in.ins, n, in.want);
    tpu_comm_buf src = tpu_comm_host_buf(in.ins[rank], in.bytes);
    tpu_comm_buf dst = tpu_comm_host_buf(in.out, in.bytes);
    /* Off root, out is ignored: NULL on one rank, untouched on the others. */
    tpu_comm_buf *out = rank == root ? &dst : rank == (root + 1) % size ? NULL : &dst;
    CHECK_OK(tpu_comm_reduce(c, &src, out, root, TPU_FLOAT32, TPU_REDUCE_SUM, 0, TIMEOUT_MS));
    if (rank == root)
      CHECK(same_elements(TPU_FLOAT32, in.out, in.want, n));
    else
      CHECK(out == NULL || in.out[0] == 0);
    free_inputs(&in);
  }
  /* reduce_scatter: rank r gets part r of the reduction of every rank's size parts. */
  static const size_t part_elems[] = {1000, COMM_CHUNK_BYTES / 4 / 2 + 5, 0};
  for (size_t i = 0; i < sizeof part_elems / sizeof *part_elems; i++) {
    tpu_dtype dtype = i == 1 ? TPU_INT32 : TPU_FLOAT32;
    tpu_reduce_op op = i == 1 ? TPU_REDUCE_MAX : TPU_REDUCE_SUM;
    size_t n = part_elems[i], part = n * tpu_dtype_size(dtype);
    inputs in = make_inputs(dtype, 100 + i, size, n * (size_t)size);
    char *parts[8];
    for (int p = 0; p < size; p++)
      parts[p] = in.ins[p] + (size_t)rank * part;
    expect_reduction(dtype, op, 0, size, parts, n, in.want);
    tpu_comm_buf src = tpu_comm_host_buf(in.ins[rank], part * (size_t)size);
    tpu_comm_buf dst = tpu_comm_host_buf(in.out, part);
    CHECK_OK(tpu_comm_reduce_scatter(c, &src, &dst, dtype, op, 0, TIMEOUT_MS));
    CHECK(same_elements(dtype, in.out, in.want, n));
    free_inputs(&in);
  }
}

static void data_movement_body(tpu_comm *c) {
  int rank = tpu_comm_rank(c), size = tpu_comm_size(c);
  static const size_t sizes[] = {0, 13, 2 * COMM_CHUNK_BYTES + 123};
  for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
    size_t n = sizes[i], all = n * (size_t)size;
    char *mine = malloc(n + 1), *gathered = malloc(all + 1);
    int root = (int)i % size;
    /* broadcast */
    if (rank == root)
      fill_bytes(i, root, n, mine);
    else
      memset(mine, 0, n + 1);
    tpu_comm_buf buf = tpu_comm_host_buf(mine, n);
    CHECK_OK(tpu_comm_broadcast(c, &buf, root, TIMEOUT_MS));
    CHECK(bytes_are(i, root, n, mine));
    /* all_gather and gather */
    fill_bytes(i, rank, n, mine);
    tpu_comm_buf whole = tpu_comm_host_buf(gathered, all);
    CHECK_OK(tpu_comm_all_gather(c, &buf, &whole, TIMEOUT_MS));
    for (int p = 0; p < size; p++)
      CHECK(bytes_are(i, p, n, gathered + (size_t)p * n));
    memset(gathered, 0, all + 1);
    CHECK_OK(tpu_comm_gather(c, &buf, rank == root ? &whole : NULL, root, TIMEOUT_MS));
    for (int p = 0; p < size && rank == root; p++)
      CHECK(bytes_are(i, p, n, gathered + (size_t)p * n));
    /* scatter: root's parts, in on the other ranks ignored */
    for (int p = 0; p < size && rank == root; p++)
      fill_bytes(i + 1000, p, n, gathered + (size_t)p * n);
    memset(mine, 0, n + 1);
    CHECK_OK(tpu_comm_scatter(c, rank == root ? &whole : NULL, &buf, root, TIMEOUT_MS));
    CHECK(bytes_are(i + 1000, rank, n, mine));
    free(mine);
    free(gathered);
  }
  for (int i = 0; i < 5; i++)
    CHECK_OK(tpu_comm_barrier(c, TIMEOUT_MS));
}

/* all_to_all: rank r sends rank p (r + 1) * (p + 2) * unit + r bytes, the parts 16 bytes apart. */
static size_t split_bytes(int from, int to, size_t unit) {
  return (size_t)(from + 1) * (size_t)(to + 2) * unit + (size_t)from;
}

static void all_to_all_body(tpu_comm *c) {
  int rank = tpu_comm_rank(c), size = tpu_comm_size(c);
  static const size_t units[] = {0, 10, COMM_CHUNK_BYTES / 10};
  for (size_t u = 0; u < sizeof units / sizeof *units; u++) {
    size_t send_offsets[8], send_bytes[8], recv_offsets[8], recv_bytes[8];
    size_t in_bytes = 0, out_bytes = 0;
    for (int p = 0; p < size; p++) {
      send_offsets[p] = in_bytes;
      send_bytes[p] = split_bytes(rank, p, units[u]);
      in_bytes += send_bytes[p] + 16;
      recv_offsets[p] = out_bytes;
      recv_bytes[p] = split_bytes(p, rank, units[u]);
      out_bytes += recv_bytes[p] + 16;
    }
    char *in = malloc(in_bytes), *out = calloc(1, out_bytes);
    for (int p = 0; p < size; p++)
      fill_bytes(u, rank * 64 + p, send_bytes[p], in + send_offsets[p]);
    tpu_comm_buf src = tpu_comm_host_buf(in, in_bytes), dst = tpu_comm_host_buf(out, out_bytes);
    CHECK_OK(tpu_comm_all_to_all(c, &src, send_offsets, send_bytes, &dst, recv_offsets,
                                 recv_bytes, TIMEOUT_MS));
    for (int p = 0; p < size; p++)
      CHECK(bytes_are(u, p * 64 + rank, recv_bytes[p], out + recv_offsets[p]));
    free(in);
    free(out);
  }
}

static void send_to(tpu_comm *c, int peer, uint64_t salt, size_t n) {
  char *data = malloc(n + 1);
  fill_bytes(salt, tpu_comm_rank(c), n, data);
  tpu_comm_buf buf = tpu_comm_host_buf(data, n);
  if (tpu_comm_send(c, &buf, peer, TIMEOUT_MS) != TPU_OK)
    FAIL("rank %d: send to %d: %s\n", tpu_comm_rank(c), peer, tpu_last_error());
  free(data);
}

static void recv_from(tpu_comm *c, int peer, uint64_t salt, size_t n) {
  char *data = malloc(n + 1);
  tpu_comm_buf buf = tpu_comm_host_buf(data, n);
  if (tpu_comm_recv(c, &buf, peer, TIMEOUT_MS) != TPU_OK)
    FAIL("rank %d: recv from %d: %s\n", tpu_comm_rank(c), peer, tpu_last_error());
  else
    CHECK(bytes_are(salt, peer, n, data));
  free(data);
}

static void send_recv_body(tpu_comm *c) {
  int rank = tpu_comm_rank(c), size = tpu_comm_size(c);
  size_t large = 3 * COMM_MAILBOX_BYTES + 7;
  /* A chain 0 -> 1 -> ... -> 0 of messages larger than the mailbox: each rank but 0 receives
   * first, so nobody waits on a full ring in a cycle. */
  int next = (rank + 1) % size, prev = (rank + size - 1) % size;
  if (rank == 0) {
    send_to(c, next, 1, large);
    recv_from(c, prev, 1, large);
  } else {
    recv_from(c, prev, 1, large);
    send_to(c, next, 1, large);
  }
  /* Small messages queue up in the ring and arrive in order. */
  if (rank == 0) {
    send_to(c, 1, 2, 10);
    send_to(c, 1, 3, 0);
    send_to(c, 1, 4, 20);
  } else if (rank == 1) {
    recv_from(c, 0, 2, 10);
    recv_from(c, 0, 3, 0);
    recv_from(c, 0, 4, 20);
  }
  /* A receive of the wrong size fails, and the pair's next message still arrives. */
  char small[200];
  tpu_comm_buf buf = tpu_comm_host_buf(small, sizeof small);
  if (rank == 0) {
    send_to(c, 1, 5, 100);
    send_to(c, 1, 6, 50);
  } else if (rank == 1) {
    CHECK(tpu_comm_recv(c, &buf, 0, TIMEOUT_MS) == TPU_ERR_VALUE);
    CHECK(strstr(tpu_last_error(), "sent 100 bytes") != NULL);
    recv_from(c, 0, 6, 50);
  }
  CHECK(tpu_comm_send(c, &buf, rank, TIMEOUT_MS) == TPU_ERR_VALUE);
  CHECK(tpu_comm_recv(c, &buf, size, TIMEOUT_MS) == TPU_ERR_VALUE);
  CHECK_OK(tpu_comm_barrier(c, TIMEOUT_MS));
}

/* Disagreements fail on every rank, the group carries on. */
static void mismatch_body(tpu_comm *c) {
  int rank = tpu_comm_rank(c), size = tpu_comm_size(c);
  float data[1024] = {0}, out[1024];
  size_t n = rank == 1 ? 512 : 1024;
  tpu_comm_buf in = tpu_comm_host_buf(data, n * 4), res = tpu_comm_host_buf(out, n * 4);
  CHECK(tpu_comm_all_reduce(c, &in, &res, TPU_FLOAT32, TPU_REDUCE_SUM, 0, TIMEOUT_MS) ==
        TPU_ERR_VALUE);
  CHECK(strstr(tpu_last_error(), "rank 1 has 2048 bytes of float32") != NULL);
  if (rank == 0)
    CHECK(strstr(tpu_last_error(), "rank 0 has 4096 bytes of float32") != NULL);
  /* Different collectives. */
  tpu_status st = rank == 0 ? tpu_comm_barrier(c, TIMEOUT_MS)
                            : tpu_comm_broadcast(c, &res, 0, TIMEOUT_MS);
  CHECK(st == TPU_ERR_VALUE);
  /* Invalid arguments on one rank: its own error there, a value error elsewhere, at once. */
  double start = now_ms();
  tpu_reduce_op op = rank == size - 1 ? TPU_REDUCE_BAND : TPU_REDUCE_SUM;
  st = tpu_comm_all_reduce(c, &in, &in, TPU_FLOAT32, op, 0, TIMEOUT_MS);
  CHECK(st == (rank == size - 1 ? TPU_ERR_TYPE : TPU_ERR_VALUE));
  CHECK(now_ms() - start < TIMEOUT_MS / 2);
  CHECK(tpu_comm_broadcast(c, &in, rank == 1 ? size : 0, TIMEOUT_MS) == TPU_ERR_VALUE);
  /* all_to_all: rank 0 expects one byte more from rank 1 than rank 1 sends. */
  size_t offsets[8] = {0}, bytes[8] = {0}, recv_bytes[8] = {0};
  recv_bytes[1] = rank == 0;
  CHECK(tpu_comm_all_to_all(c, &in, offsets, bytes, &res, offsets, recv_bytes, TIMEOUT_MS) ==
        TPU_ERR_VALUE);
  CHECK(strstr(tpu_last_error(), "rank 1 sends 0 bytes to rank 0, which expects 1") != NULL);
  /* And the group still works. */
  n = 1024;
  in.bytes = res.bytes = n * 4;
  for (size_t i = 0; i < n; i++)
    data[i] = (float)(rank + 1);
  CHECK_OK(tpu_comm_all_reduce(c, &in, &res, TPU_FLOAT32, TPU_REDUCE_SUM, 0, TIMEOUT_MS));
  CHECK(out[0] == (float)(size * (size + 1) / 2) && out[n - 1] == out[0]);
}

/* The last rank arrives late: the others time out, then every call fails at once. */
static void timeout_body(tpu_comm *c) {
  int rank = tpu_comm_rank(c), size = tpu_comm_size(c);
  double start = now_ms();
  if (rank == size - 1) {
    struct timespec late = {1, 0};
    nanosleep(&late, NULL);
    start = now_ms();
    CHECK(tpu_comm_barrier(c, SHORT_TIMEOUT_MS) == TPU_ERR_DIST);
    CHECK(now_ms() - start < 200); /* at once: the others broke the group */
    return;
  }
  CHECK(tpu_comm_barrier(c, SHORT_TIMEOUT_MS) == TPU_ERR_DIST);
  double waited = now_ms() - start;
  CHECK(waited >= SHORT_TIMEOUT_MS - 50 && waited < SHORT_TIMEOUT_MS + 2000);
  CHECK(strstr(tpu_last_error(), "timed out after 300 ms waiting for rank 2 (of 3)") ||
        strstr(tpu_last_error(), "failed on rank"));
  start = now_ms();
  float x = 0;
  tpu_comm_buf buf = tpu_comm_host_buf(&x, sizeof x);
  CHECK(tpu_comm_all_reduce(c, &buf, &buf, TPU_FLOAT32, TPU_REDUCE_SUM, 0, TIMEOUT_MS) ==
        TPU_ERR_DIST);
  CHECK(strstr(tpu_last_error(), "an earlier collective failed") != NULL);
  CHECK(now_ms() - start < 200);
}

/* Rank 1 exits: rank 0 learns within milliseconds, not at its 30 s timeout. */
static void exit_body(tpu_comm *c) {
  if (tpu_comm_rank(c) == 1)
    _exit(0); /* as if it crashed: nothing closed, no leak check */
  char data[64] = {0};
  tpu_comm_buf buf = tpu_comm_host_buf(data, sizeof data);
  double start = now_ms();
  CHECK(tpu_comm_all_reduce(c, &buf, &buf, TPU_UINT8, TPU_REDUCE_SUM, 0, TIMEOUT_MS) ==
        TPU_ERR_DIST);
  CHECK(strstr(tpu_last_error(), "all_reduce: rank 1 (pid ") != NULL);
  CHECK(strstr(tpu_last_error(), "exited") != NULL);
  CHECK(now_ms() - start < 3000);
}

static void test_collectives(void) {
  run_group("all_reduce2", 2, all_reduce_body);
  run_group("all_reduce3", 3, all_reduce_body);
  run_group("rooted2", 2, rooted_reduction_body);
  run_group("rooted3", 3, rooted_reduction_body);
  run_group("movement2", 2, data_movement_body);
  run_group("movement3", 3, data_movement_body);
  run_group("all_to_all3", 3, all_to_all_body);
  run_group("send_recv2", 2, send_recv_body);
  run_group("send_recv3", 3, send_recv_body);
}

static void test_failures(void) {
  run_group("mismatch3", 3, mismatch_body);
  run_group("timeout3", 3, timeout_body);
  run_group("exit2", 2, exit_body);
}

/* Opening: bad arguments, a name in use, a segment a crashed rank 0 left behind, no rank 0. */
static void test_open(void) {
  char name[64];
  snprintf(name, sizeof name, "/tpu_test_comm_%d_open", (int)getpid());
  tpu_comm *c = NULL, *again = NULL;
  CHECK(tpu_comm_open("no_slash", 0, 1, TIMEOUT_MS, &c) == TPU_ERR_VALUE);
  CHECK(tpu_comm_open(name, 1, 1, TIMEOUT_MS, &c) == TPU_ERR_VALUE);
  CHECK(tpu_comm_open(name, 0, 0, TIMEOUT_MS, &c) == TPU_ERR_VALUE);
  CHECK(tpu_comm_open(name, 0, 1, 0, &c) == TPU_ERR_VALUE && c == NULL);
  /* A group of one: collectives copy. */
  CHECK_OK(tpu_comm_open(name, 0, 1, TIMEOUT_MS, &c));
  CHECK(tpu_comm_open(name, 0, 1, TIMEOUT_MS, &again) == TPU_ERR_DIST && again == NULL);
  CHECK(strstr(tpu_last_error(), "already exists") != NULL);
  tpu_comm_unlink(name);
  int32_t in[3] = {1, -2, 3}, out[3] = {0};
  tpu_comm_buf src = tpu_comm_host_buf(in, sizeof in), dst = tpu_comm_host_buf(out, sizeof out);
  CHECK_OK(tpu_comm_all_reduce(c, &src, &dst, TPU_INT32, TPU_REDUCE_AVG, 0, TIMEOUT_MS));
  CHECK(memcmp(in, out, sizeof in) == 0);
  CHECK(tpu_comm_all_reduce(c, &src, &dst, TPU_INT32, TPU_REDUCE_SUM, 0, -1) == TPU_ERR_VALUE);
  CHECK(tpu_comm_all_reduce(NULL, &src, &dst, TPU_INT32, TPU_REDUCE_SUM, 0, 1) == TPU_ERR_VALUE);
  tpu_comm_close(c);
  tpu_comm_close(NULL);
  /* Rank 0 exits without unlinking: rank 1 refuses the segment at once. */
  pid_t pid = fork();
  if (pid == 0) {
    tpu_comm *orphan = NULL;
    _exit(tpu_comm_open(name, 0, 2, TIMEOUT_MS, &orphan) == TPU_OK ? 0 : 1);
  }
  int status = 0;
  CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0);
  CHECK(tpu_comm_open(name, 1, 2, TIMEOUT_MS, &c) == TPU_ERR_DIST);
  CHECK(strstr(tpu_last_error(), "left over from an earlier run") != NULL);
  tpu_comm_unlink(name);
  /* Nobody creates it. */
  double start = now_ms();
  CHECK(tpu_comm_open(name, 1, 2, 50, &c) == TPU_ERR_DIST);
  CHECK(now_ms() - start < 2000);
}

static void test_op_support(void) {
  CHECK(tpu_comm_op_supported(TPU_REDUCE_PRODUCT, TPU_COMPLEX128));
  CHECK(tpu_comm_op_supported(TPU_REDUCE_BXOR, TPU_BOOL));
  CHECK(tpu_comm_op_supported(TPU_REDUCE_AVG, TPU_INT8));
  CHECK(!tpu_comm_op_supported(TPU_REDUCE_BAND, TPU_FLOAT32));
  CHECK(!tpu_comm_op_supported(TPU_REDUCE_AVG, TPU_BOOL));
  CHECK(!tpu_comm_op_supported(TPU_REDUCE_MIN, TPU_COMPLEX64));
  CHECK(!tpu_comm_op_supported(TPU_REDUCE_PREMUL_SUM, TPU_INT32));
  CHECK(!tpu_comm_op_supported(TPU_REDUCE_SUM, TPU_UINT16));
  CHECK(!tpu_comm_op_supported((tpu_reduce_op)99, TPU_FLOAT32));
}

/* Every group's rank 0 removed its segment's name. */
static void test_no_segment_left(void) {
  for (int g = 0; g < num_groups; g++) {
    char path[80];
    snprintf(path, sizeof path, "/dev/shm%.63s", group_names[g]);
    if (access(path, F_OK) == 0) {
      FAIL("%s is left behind\n", path);
      tpu_comm_unlink(group_names[g]);
    }
  }
}

int main(void) {
  TEST_MAIN_BEGIN();
  alarm(600); /* the whole test, should a group hang despite its ranks' own alarms */
  RUN_TEST(test_op_support);
  RUN_TEST(test_open);
  RUN_TEST(test_collectives);
  RUN_TEST(test_failures);
  RUN_TEST(test_no_segment_left);
  TEST_MAIN_END();
}
