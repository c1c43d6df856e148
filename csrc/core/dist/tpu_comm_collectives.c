/* The collectives' pipeline, the collectives that move data without reducing it, and send/recv
 * (dist/tpu_comm_internal.h; the reducing ones are in tpu_comm_reduce.c).
 *
 * A collective runs two or three steps per chunk: stage (each rank copies its chunk into the
 * segment), optionally combine (each rank reduces its share of the chunk into the result slot),
 * and deliver (each rank copies what it needs out). Phase i runs stage for chunk i, combine for
 * chunk i - 1 and deliver for chunk i - 2 (deliver for chunk i - 1 without a combine step), and
 * the ranks meet at one barrier per phase.
 *
 * Chunk k uses data set k % 2, which is what lets one barrier per chunk suffice. What a phase
 * writes is never read in the same phase and was last read two phases earlier: stage writes the
 * slots of set i % 2, last read by phase i - 1's combine (or deliver) of chunk i - 2; combine
 * writes the result slot of set (i - 1) % 2, last read by phase i - 1's deliver of chunk i - 3.
 * The barrier between two phases orders those reads before the writes. With a single set, stage
 * could not share a phase with the step reading the slots, and each step would need its own
 * barrier. The chunk count runs on across calls, so a collective's first stage, which comes
 * before its first barrier, writes the set the previous collective's last phase is not reading.
 *
 * Every rank validates its arguments first; a rank whose arguments are invalid still takes part in
 * the first barrier, with a signature saying so, and then returns its own error: the others fail
 * fast with TPU_ERR_VALUE instead of waiting out their timeout, and the group stays usable. Only
 * a NULL communicator or a timeout that is not positive, which the barrier itself needs, fail at
 * once. */
#include "dist/tpu_comm_internal.h"

#include <string.h>

static size_t min_size(size_t a, size_t b) { return a < b ? a : b; }

size_t comm_chunk_len(const comm_coll *x, size_t chunk, size_t bytes) {
  size_t offset = chunk * x->piece;
  return offset < bytes ? min_size(x->piece, bytes - offset) : 0;
}

static tpu_status read_in(const tpu_comm_buf *b, size_t offset, size_t n, void *dst) {
  return n ? b->read(b->ctx, offset, n, dst) : TPU_OK;
}

tpu_status comm_write_out(const tpu_comm_buf *b, size_t offset, size_t n, const void *src) {
  return n ? b->write(b->ctx, offset, n, src) : TPU_OK;
}

static tpu_status run_step(comm_coll *x, int step, size_t chunk) {
  tpu_status st = x->steps[step](x, chunk, (int)((x->c->chunks + chunk) & 1));
  if (st != TPU_OK)
    comm_break(x->c); /* a copy failed midway: the other ranks are told, not left waiting */
  return st;
}

tpu_status comm_coll_run(comm_coll *x) {
  tpu_comm *c = x->c;
  x->sig.invalid = x->invalid != TPU_OK;
  x->chunks = x->invalid == TPU_OK ? (x->total + x->piece - 1) / x->piece : 0;
  tpu_status st = x->chunks ? run_step(x, 0, 0) : TPU_OK;
  if (st != TPU_OK)
    return st;
  size_t max_split = 0;
  st = comm_agree(c, &x->sig, x->sig.kind == COMM_ALL_TO_ALL ? x->splits : NULL, x->timeout_ms,
                  &max_split);
  if (st != TPU_OK || x->invalid != TPU_OK)
    return st != TPU_OK ? st : x->invalid;
  if (x->sig.kind == COMM_ALL_TO_ALL)
    x->chunks = (max_split + x->piece - 1) / x->piece;
  size_t phases = x->chunks + (size_t)x->nsteps - 1;
  for (size_t phase = 1; phase < phases; phase++) {
    for (int s = 0; s < x->nsteps && (size_t)s <= phase; s++) {
      if (phase - (size_t)s < x->chunks && (st = run_step(x, s, phase - (size_t)s)) != TPU_OK)
        return st;
    }
    if (phase + 1 < phases && (st = comm_barrier(c, x->sig.kind, x->timeout_ms)) != TPU_OK)
      return st;
  }
  c->chunks += x->chunks;
  return TPU_OK;
}

void comm_coll_init(comm_coll *x, tpu_comm *c, comm_kind kind, int64_t timeout_ms) {
  memset(x, 0, sizeof *x);
  x->c = c;
  x->sig = (comm_sig){.kind = kind, .dtype = -1, .op = -1, .root = -1};
  x->timeout_ms = timeout_ms;
  x->piece = COMM_CHUNK_BYTES;
}

void comm_reject(comm_coll *x, tpu_status st) {
  if (x->invalid == TPU_OK)
    x->invalid = st;
}

void comm_need_buf(comm_coll *x, const tpu_comm_buf *b, const char *role, bool reads) {
  if (!b || (reads ? !b->read : !b->write))
    comm_reject(x, tpu_error(TPU_ERR_VALUE, "tpu_dist: %s: the %s buffer is missing",
                             comm_kind_name(x->sig.kind), role));
}

void comm_need_root(comm_coll *x, int root) {
  if (root < 0 || root >= x->c->size)
    comm_reject(x, tpu_error(TPU_ERR_VALUE, "tpu_dist: %s: root %d is outside a group of %d",
                             comm_kind_name(x->sig.kind), root, x->c->size));
  x->root = x->sig.root = root;
}

void comm_need_parts(comm_coll *x, const tpu_comm_buf *part, const tpu_comm_buf *whole) {
  size_t n = (size_t)x->c->size;
  if (part->bytes > SIZE_MAX / n || whole->bytes != part->bytes * n)
    comm_reject(x, tpu_error(TPU_ERR_VALUE,
                             "tpu_dist: %s: %zu bytes are not %zu parts of %zu bytes, one per rank",
                             comm_kind_name(x->sig.kind), whole->bytes, n, part->bytes));
}

bool comm_is_root(const comm_coll *x) { return x->c->rank == x->root; }

size_t comm_sub_slot_bytes(const tpu_comm *c) {
  return COMM_CHUNK_BYTES / (size_t)c->size / 64 * 64;
}

char *comm_sub_slot(const comm_coll *x, int set, int slot, int part) {
  return comm_slot(x->c, set, slot) + (size_t)part * x->piece;
}

tpu_status comm_stage_own(comm_coll *x, size_t chunk, int set) {
  return read_in(x->in, chunk * x->piece, comm_chunk_len(x, chunk, x->total),
                 comm_slot(x->c, set, x->c->rank));
}

tpu_status comm_stage_parts(comm_coll *x, size_t chunk, int set) {
  if (x->sig.kind == COMM_SCATTER && !comm_is_root(x))
    return TPU_OK;
  size_t n = comm_chunk_len(x, chunk, x->total);
  for (int p = 0; p < x->c->size; p++) {
    tpu_status st = read_in(x->in, (size_t)p * x->total + chunk * x->piece, n,
                            comm_sub_slot(x, set, x->c->rank, p));
    if (st != TPU_OK)
      return st;
  }
  return TPU_OK;
}

static tpu_status stage_root(comm_coll *x, size_t chunk, int set) {
  if (!comm_is_root(x))
    return TPU_OK;
  return read_in(x->in, chunk * x->piece, comm_chunk_len(x, chunk, x->total),
                 comm_slot(x->c, set, x->root));
}

static tpu_status deliver_root(comm_coll *x, size_t chunk, int set) {
  if (comm_is_root(x))
    return TPU_OK;
  return comm_write_out(x->out, chunk * x->piece, comm_chunk_len(x, chunk, x->total),
                        comm_slot(x->c, set, x->root));
}

tpu_status tpu_comm_broadcast(tpu_comm *c, const tpu_comm_buf *buf, int root, int64_t timeout_ms) {
  tpu_status st = comm_enter(c, COMM_BROADCAST, timeout_ms);
  if (st != TPU_OK)
    return st;
  comm_coll x;
  comm_coll_init(&x, c, COMM_BROADCAST, timeout_ms);
  comm_need_root(&x, root);
  comm_need_buf(&x, buf, "data", comm_is_root(&x));
  x.in = x.out = buf;
  x.total = x.sig.bytes = buf ? buf->bytes : 0;
  x.steps[0] = stage_root;
  x.steps[1] = deliver_root;
  x.nsteps = 2;
  return comm_coll_run(&x);
}

/* Every rank's chunk to out, rank p's at p * total (all_gather; gather on root only). */
static tpu_status deliver_all(comm_coll *x, size_t chunk, int set) {
  if (x->sig.kind == COMM_GATHER && !comm_is_root(x))
    return TPU_OK;
  size_t n = comm_chunk_len(x, chunk, x->total);
  for (int p = 0; p < x->c->size; p++) {
    tpu_status st = comm_write_out(x->out, (size_t)p * x->total + chunk * x->piece, n,
                                   comm_slot(x->c, set, p));
    if (st != TPU_OK)
      return st;
  }
  return TPU_OK;
}

static tpu_status gathering(tpu_comm *c, comm_kind kind, const tpu_comm_buf *in,
                            const tpu_comm_buf *out, int root, int64_t timeout_ms) {
  tpu_status st = comm_enter(c, kind, timeout_ms);
  if (st != TPU_OK)
    return st;
  comm_coll x;
  comm_coll_init(&x, c, kind, timeout_ms);
  if (kind == COMM_GATHER)
    comm_need_root(&x, root);
  comm_need_buf(&x, in, "input", true);
  if (kind == COMM_ALL_GATHER || comm_is_root(&x)) {
    comm_need_buf(&x, out, "output", false);
    if (x.invalid == TPU_OK)
      comm_need_parts(&x, in, out);
  }
  x.in = in;
  x.out = out;
  x.total = x.sig.bytes = in ? in->bytes : 0;
  x.steps[0] = comm_stage_own;
  x.steps[1] = deliver_all;
  x.nsteps = 2;
  return comm_coll_run(&x);
}

tpu_status tpu_comm_all_gather(tpu_comm *c, const tpu_comm_buf *in, const tpu_comm_buf *out,
                               int64_t timeout_ms) {
  return gathering(c, COMM_ALL_GATHER, in, out, 0, timeout_ms);
}

tpu_status tpu_comm_gather(tpu_comm *c, const tpu_comm_buf *in, const tpu_comm_buf *out, int root,
                           int64_t timeout_ms) {
  return gathering(c, COMM_GATHER, in, out, root, timeout_ms);
}

static tpu_status deliver_part(comm_coll *x, size_t chunk, int set) {
  return comm_write_out(x->out, chunk * x->piece, comm_chunk_len(x, chunk, x->total),
                        comm_sub_slot(x, set, x->root, x->c->rank));
}

tpu_status tpu_comm_scatter(tpu_comm *c, const tpu_comm_buf *in, const tpu_comm_buf *out, int root,
                            int64_t timeout_ms) {
  tpu_status st = comm_enter(c, COMM_SCATTER, timeout_ms);
  if (st != TPU_OK)
    return st;
  comm_coll x;
  comm_coll_init(&x, c, COMM_SCATTER, timeout_ms);
  comm_need_root(&x, root);
  comm_need_buf(&x, out, "output", false);
  if (comm_is_root(&x)) {
    comm_need_buf(&x, in, "input", true);
    if (x.invalid == TPU_OK)
      comm_need_parts(&x, out, in);
  }
  x.in = in;
  x.out = out;
  x.piece = comm_sub_slot_bytes(c);
  x.total = x.sig.bytes = out ? out->bytes : 0;
  x.steps[0] = comm_stage_parts;
  x.steps[1] = deliver_part;
  x.nsteps = 2;
  return comm_coll_run(&x);
}

/* The chunk of what this rank sends each rank p into its sub-slot p. */
static tpu_status stage_splits(comm_coll *x, size_t chunk, int set) {
  for (int p = 0; p < x->c->size; p++) {
    tpu_status st = read_in(x->in, x->send_offsets[p] + chunk * x->piece,
                            comm_chunk_len(x, chunk, x->send_bytes[p]),
                            comm_sub_slot(x, set, x->c->rank, p));
    if (st != TPU_OK)
      return st;
  }
  return TPU_OK;
}

/* The chunk of what each rank p sends this one, from p's slot, out. */
static tpu_status deliver_splits(comm_coll *x, size_t chunk, int set) {
  for (int p = 0; p < x->c->size; p++) {
    tpu_status st = comm_write_out(x->out, x->recv_offsets[p] + chunk * x->piece,
                                   comm_chunk_len(x, chunk, x->recv_bytes[p]),
                                   comm_sub_slot(x, set, p, x->c->rank));
    if (st != TPU_OK)
      return st;
  }
  return TPU_OK;
}

static void need_splits(comm_coll *x, const tpu_comm_buf *b, const size_t *offsets,
                        const size_t *bytes, const char *role) {
  if (x->invalid != TPU_OK)
    return;
  if (!offsets || !bytes) {
    comm_reject(x, tpu_error(TPU_ERR_VALUE, "tpu_dist: all_to_all: the %s splits are missing",
                             role));
    return;
  }
  for (int p = 0; p < x->c->size; p++) {
    if (offsets[p] > b->bytes || bytes[p] > b->bytes - offsets[p]) {
      comm_reject(x, tpu_error(TPU_ERR_VALUE,
                               "tpu_dist: all_to_all: the %s split of rank %d (%zu bytes at %zu) "
                               "overruns the buffer's %zu bytes",
                               role, p, bytes[p], offsets[p], b->bytes));
      return;
    }
  }
}

tpu_status tpu_comm_all_to_all(tpu_comm *c, const tpu_comm_buf *in, const size_t *send_offsets,
                               const size_t *send_bytes, const tpu_comm_buf *out,
                               const size_t *recv_offsets, const size_t *recv_bytes,
                               int64_t timeout_ms) {
  tpu_status st = comm_enter(c, COMM_ALL_TO_ALL, timeout_ms);
  if (st != TPU_OK)
    return st;
  comm_coll x;
  comm_coll_init(&x, c, COMM_ALL_TO_ALL, timeout_ms);
  comm_need_buf(&x, in, "input", true);
  comm_need_buf(&x, out, "output", false);
  need_splits(&x, in, send_offsets, send_bytes, "send");
  need_splits(&x, out, recv_offsets, recv_bytes, "receive");
  for (int p = 0; x.invalid == TPU_OK && p < c->size; p++) {
    x.splits[p] = send_bytes[p];
    x.splits[c->size + p] = recv_bytes[p];
    x.total = send_bytes[p] > x.total ? send_bytes[p] : x.total;
  }
  x.in = in;
  x.out = out;
  x.send_offsets = send_offsets;
  x.send_bytes = send_bytes;
  x.recv_offsets = recv_offsets;
  x.recv_bytes = recv_bytes;
  x.piece = comm_sub_slot_bytes(c);
  x.steps[0] = stage_splits;
  x.steps[1] = deliver_splits;
  x.nsteps = 2;
  return comm_coll_run(&x);
}

/* n == 0 copies nothing: memcpy's pointers, possibly NULL then, must not be. */
static tpu_status host_read(void *ctx, size_t offset, size_t n, void *dst) {
  if (n)
    memcpy(dst, (const char *)ctx + offset, n);
  return TPU_OK;
}

static tpu_status host_write(void *ctx, size_t offset, size_t n, const void *src) {
  if (n)
    memcpy((char *)ctx + offset, src, n);
  return TPU_OK;
}

tpu_comm_buf tpu_comm_host_buf(void *data, size_t bytes) {
  return (tpu_comm_buf){
      .read = host_read, .write = host_write, .ctx = data, .bytes = bytes, .data = data};
}

/* Point to point: the pair (src, dst) streams bytes through its ring, whose running totals
 * `written` and `consumed` say where: the ring holds written - consumed bytes, starting at
 * consumed % COMM_MAILBOX_BYTES. A message is its size (8 bytes), then its data. A bad argument
 * fails the caller at once; its peer then waits out its timeout. */
typedef struct comm_stream {
  tpu_comm *c;
  comm_mailbox *box;
  char *ring;
  comm_kind kind;
  int peer;
  int64_t timeout_ms;
} comm_stream;

static tpu_status open_stream(tpu_comm *c, comm_kind kind, const tpu_comm_buf *b, int peer,
                              int64_t timeout_ms, comm_stream *s) {
  tpu_status st = comm_enter(c, kind, timeout_ms);
  if (st != TPU_OK)
    return st;
  if (!b || (kind == COMM_SEND ? !b->read : !b->write))
    return tpu_error(TPU_ERR_VALUE, "tpu_dist: %s: the buffer is missing", comm_kind_name(kind));
  if (peer < 0 || peer >= c->size || peer == c->rank)
    return tpu_error(TPU_ERR_VALUE, "tpu_dist: %s: rank %d cannot be the peer of rank %d of %d",
                     comm_kind_name(kind), peer, c->rank, c->size);
  size_t pair = kind == COMM_SEND ? (size_t)c->rank * (size_t)c->size + (size_t)peer
                                  : (size_t)peer * (size_t)c->size + (size_t)c->rank;
  *s = (comm_stream){c, &c->mailboxes[pair], c->rings + pair * COMM_MAILBOX_BYTES, kind, peer,
                     timeout_ms};
  return TPU_OK;
}

/* Moves n bytes between b (from offset 0; NULL on the receiving side discards them) and the ring,
 * as the peer makes room or data. */
static tpu_status stream(const comm_stream *s, const tpu_comm_buf *b, size_t n) {
  bool sending = s->kind == COMM_SEND;
  atomic_ullong *mine = sending ? &s->box->written : &s->box->consumed;
  atomic_ullong *theirs = sending ? &s->box->consumed : &s->box->written;
  unsigned long long at = atomic_load_explicit(mine, memory_order_relaxed);
  comm_wait w = {0};
  for (size_t done = 0; done < n;) {
    unsigned long long other = atomic_load_explicit(theirs, memory_order_acquire);
    size_t ready = (size_t)(sending ? COMM_MAILBOX_BYTES - (at - other) : other - at);
    if (ready == 0) {
      tpu_status st = comm_wait_step(s->c, &w, s->kind, s->peer, s->timeout_ms);
      if (st != TPU_OK)
        return st;
      continue;
    }
    char *ring = s->ring + at % COMM_MAILBOX_BYTES;
    size_t k = min_size(min_size(ready, n - done), COMM_MAILBOX_BYTES - at % COMM_MAILBOX_BYTES);
    tpu_status st = sending ? read_in(b, done, k, ring) : b ? comm_write_out(b, done, k, ring)
                                                            : TPU_OK;
    if (st != TPU_OK) {
      comm_break(s->c);
      return st;
    }
    at += k;
    done += k;
    atomic_store_explicit(mine, at, memory_order_release);
    w = (comm_wait){0};
  }
  return TPU_OK;
}

tpu_status tpu_comm_send(tpu_comm *c, const tpu_comm_buf *buf, int peer, int64_t timeout_ms) {
  comm_stream s;
  tpu_status st = open_stream(c, COMM_SEND, buf, peer, timeout_ms, &s);
  uint64_t bytes = buf ? buf->bytes : 0;
  tpu_comm_buf header = tpu_comm_host_buf(&bytes, sizeof bytes);
  if (st == TPU_OK)
    st = stream(&s, &header, sizeof bytes);
  return st == TPU_OK ? stream(&s, buf, buf->bytes) : st;
}

tpu_status tpu_comm_recv(tpu_comm *c, const tpu_comm_buf *buf, int peer, int64_t timeout_ms) {
  comm_stream s;
  tpu_status st = open_stream(c, COMM_RECV, buf, peer, timeout_ms, &s);
  uint64_t bytes = 0;
  tpu_comm_buf header = tpu_comm_host_buf(&bytes, sizeof bytes);
  if (st == TPU_OK)
    st = stream(&s, &header, sizeof bytes);
  if (st != TPU_OK || bytes == buf->bytes)
    return st == TPU_OK ? stream(&s, buf, buf->bytes) : st;
  /* Drained, so that the pair's next message starts where the sender put it. */
  st = stream(&s, NULL, bytes);
  if (st != TPU_OK)
    return st;
  return tpu_error(TPU_ERR_VALUE,
                   "tpu_dist: recv: rank %d sent %llu bytes, the receive expects %zu", peer,
                   (unsigned long long)bytes, buf->bytes);
}
