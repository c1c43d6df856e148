/* A communicator: `size` processes of one host that run collectives through one POSIX
 * shared-memory segment (the transport behind the tpu_dist backend, docs/ARCHITECTURE.md).
 *
 * Each collective moves the caller's data through the segment in chunks: a rank stages its chunk
 * into its own slot, the ranks meet at a barrier, each rank reduces (or copies) its own share of
 * the chunk, they meet again and each copies the result out. The caller's data is reached through
 * tpu_comm_buf callbacks, so that a device buffer is copied straight to and from the segment.
 *
 * Every call blocks the calling thread until the collective is done on this rank. A rank that does
 * not arrive within the timeout, or whose process has exited, makes the call fail with
 * TPU_ERR_DIST naming it; the communicator is then broken on every rank: later calls fail at once.
 * The ranks of one collective must agree on its kind, dtype, op, root and sizes, or the call fails
 * on every rank with TPU_ERR_VALUE and the communicator stays usable. Timeouts are in milliseconds
 * and positive; each bounds one wait (a barrier, or one stall of a send or receive). Calls on one
 * communicator must not overlap (one thread at a time), except tpu_comm_send, which one other
 * thread may run beside the rest (sends to one peer in order). */
#ifndef TPU_COMM_H
#define TPU_COMM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/tpu_dtype.h"
#include "base/tpu_status.h"

typedef struct tpu_comm tpu_comm;

typedef enum tpu_reduce_op {
  TPU_REDUCE_SUM,
  TPU_REDUCE_AVG,        /* the sum divided by the group size (integers: truncated) */
  TPU_REDUCE_PRODUCT,
  TPU_REDUCE_MIN,
  TPU_REDUCE_MAX,
  TPU_REDUCE_PREMUL_SUM, /* each input multiplied by a factor, then summed */
  TPU_REDUCE_BAND,       /* bitwise ops: integer and bool dtypes only */
  TPU_REDUCE_BOR,
  TPU_REDUCE_BXOR,
} tpu_reduce_op;

/* One side of a collective: `bytes` bytes of the caller's data, read and written in pieces at byte
 * offsets. `read` copies [offset, offset + n) of the data to `dst`, `write` copies `src` there.
 * `data`, when not NULL, is the same bytes as host memory this process may read and write in
 * place: all_reduce and reduce then read the caller's own share of each chunk from the input and
 * write its result to the output there, instead of staging it through the segment and copying it
 * back (a pass less over the data each way). */
typedef struct tpu_comm_buf {
  tpu_status (*read)(void *ctx, size_t offset, size_t n, void *dst);
  tpu_status (*write)(void *ctx, size_t offset, size_t n, const void *src);
  void *ctx;
  size_t bytes;
  void *data;
} tpu_comm_buf;

/* A tpu_comm_buf over plain host memory (memcpy both ways, `data` set). */
tpu_comm_buf tpu_comm_host_buf(void *data, size_t bytes);

/* Opens the communicator of `rank` in a group of `size` over the segment `name` (a shm_open name,
 * "/..."): rank 0 creates it, the others open the one rank 0 created and wait for it up to
 * `timeout_ms`. */
tpu_status tpu_comm_open(const char *name, int rank, int size, int64_t timeout_ms, tpu_comm **out);

/* Removes the segment's name once every rank has opened it (after a tpu_comm_barrier): the memory
 * then goes away when the last process unmaps it, even when processes are killed. */
void tpu_comm_unlink(const char *name);

/* Unmaps the segment and frees the communicator (NULL is ignored). */
void tpu_comm_close(tpu_comm *c);

/* This rank's index and the group size. */
int tpu_comm_rank(const tpu_comm *c);
int tpu_comm_size(const tpu_comm *c);

/* Blocks until every rank has called it. */
tpu_status tpu_comm_barrier(tpu_comm *c, int64_t timeout_ms);

/* Whether `op` applies to `dtype` (e.g. no bitwise ops on floats, no MIN/MAX on complex). */
bool tpu_comm_op_supported(tpu_reduce_op op, tpu_dtype dtype);

/* out = op over ranks of in, elementwise; in and out hold the same number of `dtype` elements and
 * may be the same buffer. float16 and bfloat16 are reduced in float32 and rounded once.
 * `factor` is PREMUL_SUM's multiplier (ignored otherwise). */
tpu_status tpu_comm_all_reduce(tpu_comm *c, const tpu_comm_buf *in, const tpu_comm_buf *out,
                               tpu_dtype dtype, tpu_reduce_op op, double factor,
                               int64_t timeout_ms);

/* As tpu_comm_all_reduce, with the result written only on `root` (out is ignored elsewhere). */
tpu_status tpu_comm_reduce(tpu_comm *c, const tpu_comm_buf *in, const tpu_comm_buf *out, int root,
                           tpu_dtype dtype, tpu_reduce_op op, double factor, int64_t timeout_ms);

/* Copies root's buf into every rank's buf (same size everywhere). */
tpu_status tpu_comm_broadcast(tpu_comm *c, const tpu_comm_buf *buf, int root, int64_t timeout_ms);

/* out (size * in->bytes) = every rank's in, in rank order. */
tpu_status tpu_comm_all_gather(tpu_comm *c, const tpu_comm_buf *in, const tpu_comm_buf *out,
                               int64_t timeout_ms);

/* out = rank r's share of the reduction of every rank's in, where in holds size equal shares of
 * out->bytes each. */
tpu_status tpu_comm_reduce_scatter(tpu_comm *c, const tpu_comm_buf *in, const tpu_comm_buf *out,
                                   tpu_dtype dtype, tpu_reduce_op op, double factor,
                                   int64_t timeout_ms);

/* On root, out (size * in->bytes) = every rank's in in rank order; out is ignored elsewhere. */
tpu_status tpu_comm_gather(tpu_comm *c, const tpu_comm_buf *in, const tpu_comm_buf *out, int root,
                           int64_t timeout_ms);

/* out = root's in share r, where root's in holds size shares of out->bytes (in is ignored
 * elsewhere). */
tpu_status tpu_comm_scatter(tpu_comm *c, const tpu_comm_buf *in, const tpu_comm_buf *out, int root,
                            int64_t timeout_ms);

/* Every rank sends send_bytes[p] bytes at send_offsets[p] of in to rank p, and receives
 * recv_bytes[p] bytes from rank p at recv_offsets[p] of out (arrays of `size` entries; rank p's
 * send_bytes[r] must equal rank r's recv_bytes[p]). */
tpu_status tpu_comm_all_to_all(tpu_comm *c, const tpu_comm_buf *in, const size_t *send_offsets,
                               const size_t *send_bytes, const tpu_comm_buf *out,
                               const size_t *recv_offsets, const size_t *recv_bytes,
                               int64_t timeout_ms);

/* Point to point: sends buf to `peer`, which must post a matching tpu_comm_recv of the same size
 * with this rank as its peer. Sends to one peer arrive in order; a send may complete before the
 * receive is posted (up to one mailbox, 256 KiB, is buffered per pair). */
tpu_status tpu_comm_send(tpu_comm *c, const tpu_comm_buf *buf, int peer, int64_t timeout_ms);

/* Receives into buf what `peer` sends with tpu_comm_send (same size). */
tpu_status tpu_comm_recv(tpu_comm *c, const tpu_comm_buf *buf, int peer, int64_t timeout_ms);

#endif
