/* What the communicator's files share: the layout of the shared segment, the communicator itself,
 * the wait loop, the barrier with its agreement check, the collectives' pipeline and the reduction
 * kernels.
 *
 * The segment holds, in order: a header; one record per rank (its barrier sequence, its process
 * id and the signatures of the collectives it enters); one mailbox control block per ordered pair
 * of ranks; the all_to_all split tables; the mailboxes' rings; and the data: two sets of size + 1
 * chunk slots (one slot per rank, then a result slot). */
#ifndef TPU_COMM_INTERNAL_H
#define TPU_COMM_INTERNAL_H

#include <stdalign.h>
#include <stdatomic.h>

#include "dist/tpu_comm.h"

/* Every word two processes touch at once is an atomic in the segment; that only works when the
 * atomics are lock-free (a lock-based one would lock within one process only). */
#if ATOMIC_LLONG_LOCK_FREE != 2 || ATOMIC_INT_LOCK_FREE != 2
#error "tpu_comm needs lock-free int and long long atomics"
#endif

/* The segment grows with size^2 (mailboxes) and size (slots), and rank 0 reserves all of it in
 * /dev/shm up front. */
#define COMM_MAX_RANKS 64

/* One rank's slot. Small enough that a chunk staged in and reduced is still in the last-level
 * cache when it is copied out, large enough that a phase's copies dwarf its barrier and that a
 * device buffer's read and write callbacks move sizable pieces; a multiple of every element size
 * and of a cache line. bench/dist.py measures the trade. */
#define COMM_CHUNK_BYTES ((size_t)512 << 10)

/* One ordered pair's ring for send/recv: large enough that copying, not the handshakes, dominates
 * a large message, small enough that size^2 of them stay modest. */
#define COMM_MAILBOX_BYTES ((size_t)256 << 10)

typedef enum comm_kind {
  COMM_BARRIER,
  COMM_ALL_REDUCE,
  COMM_REDUCE,
  COMM_BROADCAST,
  COMM_ALL_GATHER,
  COMM_REDUCE_SCATTER,
  COMM_GATHER,
  COMM_SCATTER,
  COMM_ALL_TO_ALL,
  COMM_SEND,
  COMM_RECV,
} comm_kind;

/* What a rank is about to run; every rank of a collective must publish the same one. Fields a
 * collective does not have are -1 (dtype, op, root) or 0 (bytes). */
typedef struct comm_sig {
  int32_t kind;
  int32_t invalid; /* this rank's arguments failed validation: the others fail fast */
  int32_t dtype, op, root;
  uint64_t bytes;
} comm_sig;

typedef struct comm_header {
  alignas(64) atomic_ullong ready; /* COMM_READY once rank 0 has laid the segment out */
  atomic_int aborted_by;           /* 1 + the first rank whose communicator broke, or 0 */
} comm_header;

/* One per rank, on its own cache lines. */
typedef struct comm_record {
  alignas(64) atomic_ullong arrived; /* the last barrier sequence this rank reached */
  atomic_int pid;                    /* 0 until the rank has opened the segment */
  /* Indexed by the barrier sequence's parity: a rank writes the slot of sequence s + 2 only after
   * barrier s + 1, which every rank reaches after reading the signatures of s. */
  comm_sig sig[2];
} comm_record;

/* One per ordered pair (src, dst): running totals of the bytes streamed through its ring. */
typedef struct comm_mailbox {
  alignas(64) atomic_ullong written;  /* by src */
  alignas(64) atomic_ullong consumed; /* by dst */
} comm_mailbox;

struct tpu_comm {
  int rank, size;
  atomic_bool broken; /* a wait or copy failed midway: the ranks are out of step (atomic: a send
                       * may run on another thread) */
  unsigned long long seq;     /* barriers entered */
  unsigned long long chunks;  /* chunks moved through the data sets: chunk k uses set k % 2 */
  char *base;
  size_t bytes;
  comm_header *header;
  comm_record *records;
  comm_mailbox *mailboxes;    /* [src * size + dst] */
  unsigned long long *splits; /* [parity][rank][2 * size]: all_to_all send then receive bytes */
  char *rings;                /* [src * size + dst][COMM_MAILBOX_BYTES] */
  char *data;                 /* [set][slot][COMM_CHUNK_BYTES], slot size is the result */
};

/* Waiting for a peer: spin, then yield, then nap; periodically check the timeout, the peer's
 * process and whether another rank broke the group. */
typedef struct comm_wait {
  unsigned spins;
  int64_t since_ns, next_check_ns;
  int gone_peer, gone_pid; /* a peer found exited (pid > 0): the next step for it fails */
} comm_wait;

const char *comm_kind_name(comm_kind kind);

/* Checks the communicator and timeout at the start of a call: fails when either is unusable. */
tpu_status comm_enter(tpu_comm *c, comm_kind kind, int64_t timeout_ms);

/* Marks the communicator broken and tells the other ranks, after a failure that leaves this rank
 * out of step with them. */
void comm_break(tpu_comm *c);

/* One step of a wait for `peer` (the caller rechecks its condition after each): fails with
 * TPU_ERR_DIST, breaking the communicator, on a timeout, an exited peer or a broken group. A peer
 * found exited fails the step after the one that found it, so that the caller's recheck between
 * them sees what the peer did before it exited (a root that wrote its broadcast and left).
 * `timeout_ms` bounds one wait (a barrier, or a stall of send/recv), not a whole call. */
tpu_status comm_wait_step(tpu_comm *c, comm_wait *w, comm_kind kind, int peer, int64_t timeout_ms);

/* Blocks until every rank has entered as many barriers as this one. */
tpu_status comm_barrier(tpu_comm *c, comm_kind kind, int64_t timeout_ms);

/* The first barrier of a collective: publishes `sig` (and for all_to_all this rank's send and
 * receive byte counts, 2 * size of them), waits for every rank, then fails on every rank with
 * TPU_ERR_VALUE when the signatures (or splits) disagree or a rank's arguments were invalid. For
 * all_to_all, *max_split receives the largest piece any rank sends. A rank whose own signature
 * is invalid only takes part in the barrier. */
tpu_status comm_agree(tpu_comm *c, const comm_sig *sig, const unsigned long long *splits,
                      int64_t timeout_ms, size_t *max_split);

/* Slot `slot` (a rank, or size for the result) of data set `set`. */
static inline char *comm_slot(const tpu_comm *c, int set, int slot) {
  return c->data + ((size_t)set * (size_t)(c->size + 1) + (size_t)slot) * COMM_CHUNK_BYTES;
}

/* A collective in flight, run as a pipeline of two or three steps per chunk
 * (tpu_comm_collectives.c explains it). */
typedef struct comm_coll comm_coll;

/* One step of a collective for chunk `chunk`, on data set `set`. */
typedef tpu_status (*comm_step)(comm_coll *x, size_t chunk, int set);

struct comm_coll {
  tpu_comm *c;
  comm_sig sig;
  tpu_status invalid; /* this rank's first validation error, or TPU_OK */
  int64_t timeout_ms;
  comm_step steps[3];
  int nsteps;
  size_t piece;  /* bytes per chunk of one rank's part */
  size_t total;  /* bytes the chunks cover */
  size_t chunks; /* ceil(total / piece); all_to_all: its largest split's, once agreed */
  const tpu_comm_buf *in, *out;
  tpu_dtype dtype;
  tpu_reduce_op op;
  double factor;
  int root;
  const size_t *send_offsets, *send_bytes, *recv_offsets, *recv_bytes;
  unsigned long long splits[2 * COMM_MAX_RANKS]; /* all_to_all: what comm_agree publishes */
};

/* A collective of `kind` without steps, in chunks of COMM_CHUNK_BYTES. */
void comm_coll_init(comm_coll *x, tpu_comm *c, comm_kind kind, int64_t timeout_ms);

/* Runs the steps over every chunk, after the agreement check; returns x->invalid on a rank whose
 * arguments were invalid. */
tpu_status comm_coll_run(comm_coll *x);

/* Argument checks: each records the first failure in x->invalid. */
void comm_reject(comm_coll *x, tpu_status st);
void comm_need_buf(comm_coll *x, const tpu_comm_buf *b, const char *role, bool reads);
void comm_need_root(comm_coll *x, int root);
/* `whole` must hold one part of `part`'s size per rank. */
void comm_need_parts(comm_coll *x, const tpu_comm_buf *part, const tpu_comm_buf *whole);

bool comm_is_root(const comm_coll *x);

/* The bytes of chunk `chunk` of a part of `bytes` bytes (0 past its end). */
size_t comm_chunk_len(const comm_coll *x, size_t chunk, size_t bytes);

/* b->write, skipped for 0 bytes. */
tpu_status comm_write_out(const tpu_comm_buf *b, size_t offset, size_t n, const void *src);

/* For the collectives that split a rank's part by destination (scatter, reduce_scatter,
 * all_to_all): each slot holds one sub-slot of comm_sub_slot_bytes per rank, sub-slot q of slot p
 * being what rank p sends rank q. */
size_t comm_sub_slot_bytes(const tpu_comm *c);
char *comm_sub_slot(const comm_coll *x, int set, int slot, int part);

/* Stage steps: this rank's chunk of in into its slot; part p's chunk of in into sub-slot p of its
 * slot, for every p (reduce_scatter; scatter on root). */
tpu_status comm_stage_own(comm_coll *x, size_t chunk, int set);
tpu_status comm_stage_parts(comm_coll *x, size_t chunk, int set);

/* dst[i] = op over s of src[s][i] for i < n, the sources combined in order, as
 * tpu_comm_all_reduce documents; `op` must be supported for `dtype`. */
void comm_reduce_elems(void *dst, const void *const *src, int nsrc, size_t n, tpu_dtype dtype,
                       tpu_reduce_op op, double factor);

const char *comm_op_name(tpu_reduce_op op);

#endif
