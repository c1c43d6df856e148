/* The communicator's segment (creating, attaching, closing), its wait loop, barrier and agreement
 * check (dist/tpu_comm_internal.h). */
#include "dist/tpu_comm_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define COMM_READY 0x74707564697374ull /* "tpudist": the segment is laid out */

/* A peer a few microseconds behind is caught spinning; one that is descheduled (ranks may
 * outnumber cores) gets the CPU through sched_yield; a slow one costs naps, not a busy core. */
#define SPIN_ITERS 256
#define YIELD_NS ((int64_t)1000000)
#define NAP_NS 30000
/* How often a waiter looks at the clock's deadline, the peer's process and the abort word. */
#define CHECK_NS ((int64_t)5000000)
#define OPEN_RETRY_NS 1000000

typedef struct comm_layout {
  size_t records, mailboxes, splits, rings, data, total;
} comm_layout;

static size_t align_up(size_t v, size_t a) { return (v + a - 1) / a * a; }

static comm_layout layout_of(int size) {
  size_t n = (size_t)size;
  comm_layout l;
  l.records = align_up(sizeof(comm_header), 64);
  l.mailboxes = l.records + n * sizeof(comm_record);
  l.splits = l.mailboxes + n * n * sizeof(comm_mailbox);
  l.rings = align_up(l.splits + 2 * n * 2 * n * sizeof(unsigned long long), 4096);
  l.data = l.rings + n * n * COMM_MAILBOX_BYTES;
  l.total = l.data + 2 * (n + 1) * COMM_CHUNK_BYTES;
  return l;
}

static int64_t now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

static void nap(long ns) {
  struct timespec t = {0, ns};
  nanosleep(&t, NULL);
}

static int64_t ms_to_ns(int64_t ms) { return ms > INT64_MAX / 1000000 ? INT64_MAX : ms * 1000000; }

static void cpu_pause(void) {
#if defined(__x86_64__)
  __builtin_ia32_pause();
#endif
}

/* Whether `pid` has exited. An exited child its parent has not reaped yet still answers kill(),
 * so its /proc state (Z, or X while it is being reaped) is read as well. The ranks share /dev/shm
 * and are assumed to share a PID namespace too. */
static bool process_gone(pid_t pid) {
  if (kill(pid, 0) == -1 && errno == ESRCH)
    return true;
  char path[32], stat[256];
  snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return false;
  ssize_t n = read(fd, stat, sizeof stat - 1);
  close(fd);
  if (n <= 0)
    return false;
  stat[n] = '\0';
  const char *end_of_name = strrchr(stat, ')'); /* the name may hold spaces and parentheses */
  return end_of_name && (end_of_name[2] == 'Z' || end_of_name[2] == 'X');
}

const char *comm_kind_name(comm_kind kind) {
  static const char *const names[] = {
      [COMM_BARRIER] = "barrier",       [COMM_ALL_REDUCE] = "all_reduce",
      [COMM_REDUCE] = "reduce",         [COMM_BROADCAST] = "broadcast",
      [COMM_ALL_GATHER] = "all_gather", [COMM_REDUCE_SCATTER] = "reduce_scatter",
      [COMM_GATHER] = "gather",         [COMM_SCATTER] = "scatter",
      [COMM_ALL_TO_ALL] = "all_to_all", [COMM_SEND] = "send",
      [COMM_RECV] = "recv",
  };
  return names[kind];
}

static tpu_status map_segment(tpu_comm *c, int fd, const char *name, const comm_layout *l) {
  void *base = mmap(NULL, l->total, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (base == MAP_FAILED)
    return tpu_error(TPU_ERR_DIST, "tpu_dist: cannot map the segment %s: %s", name,
                     strerror(errno));
  c->base = base;
  c->bytes = l->total;
  c->header = base;
  c->records = (comm_record *)(c->base + l->records);
  c->mailboxes = (comm_mailbox *)(c->base + l->mailboxes);
  c->splits = (unsigned long long *)(c->base + l->splits);
  c->rings = c->base + l->rings;
  c->data = c->base + l->data;
  return TPU_OK;
}

/* Sizes the segment and reserves its memory: a /dev/shm too small for it (a container's is often
 * 64 MiB) fails here, not with SIGBUS in the middle of a collective. */
static tpu_status size_segment(int fd, const char *name, size_t bytes) {
  if (ftruncate(fd, (off_t)bytes) != 0)
    return tpu_error(TPU_ERR_DIST, "tpu_dist: cannot size the segment %s: %s", name,
                     strerror(errno));
  int err = posix_fallocate(fd, 0, (off_t)bytes);
  if (err == ENOSPC)
    return tpu_error(TPU_ERR_OUT_OF_MEMORY,
                     "tpu_dist: /dev/shm has no room for the %zu-byte segment %s (in a container, "
                     "raise its size, e.g. docker run --shm-size)",
                     bytes, name);
  if (err != 0 && err != EOPNOTSUPP && err != EINVAL)
    return tpu_error(TPU_ERR_DIST, "tpu_dist: cannot allocate the segment %s: %s", name,
                     strerror(err));
  return TPU_OK;
}

static tpu_status create_segment(tpu_comm *c, const char *name, const comm_layout *l) {
  int fd = shm_open(name, O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0600);
  if (fd < 0 && errno == EEXIST)
    return tpu_error(TPU_ERR_DIST,
                     "tpu_dist: the shared-memory segment %s already exists: another group uses "
                     "the name, or a crashed run left it behind (remove /dev/shm%s)",
                     name, name);
  if (fd < 0)
    return tpu_error(TPU_ERR_DIST, "tpu_dist: cannot create the segment %s: %s", name,
                     strerror(errno));
  tpu_status st = size_segment(fd, name, l->total);
  if (st == TPU_OK)
    st = map_segment(c, fd, name, l);
  close(fd);
  if (st != TPU_OK) {
    shm_unlink(name);
    return st;
  }
  /* ftruncate zeroed the segment: every counter starts at 0. */
  atomic_store_explicit(&c->records[0].pid, (int)getpid(), memory_order_relaxed);
  atomic_store_explicit(&c->header->ready, COMM_READY, memory_order_release);
  return TPU_OK;
}

/* Claims this rank's record; a record already claimed, or a rank 0 that has exited, means the
 * segment is another group's or one a crashed run left behind. */
static tpu_status claim_rank(tpu_comm *c, const char *name) {
  int creator = atomic_load_explicit(&c->records[0].pid, memory_order_relaxed);
  if (process_gone(creator))
    return tpu_error(TPU_ERR_DIST,
                     "tpu_dist: the segment %s is left over from an earlier run (its rank 0, pid "
                     "%d, has exited): remove /dev/shm%s",
                     name, creator, name);
  int owner = 0;
  if (!atomic_compare_exchange_strong(&c->records[c->rank].pid, &owner, (int)getpid()))
    return tpu_error(TPU_ERR_DIST, "tpu_dist: rank %d of the segment %s is already taken by pid %d",
                     c->rank, name, owner);
  return TPU_OK;
}

/* One try at attaching to rank 0's segment: *attached stays false while it does not exist yet
 * or is not laid out yet. */
static tpu_status try_attach(tpu_comm *c, const char *name, const comm_layout *l, bool *attached) {
  int fd = shm_open(name, O_RDWR | O_CLOEXEC, 0);
  if (fd < 0)
    return errno == ENOENT ? TPU_OK
                           : tpu_error(TPU_ERR_DIST, "tpu_dist: cannot open the segment %s: %s",
                                       name, strerror(errno));
  struct stat st_buf;
  tpu_status st = TPU_OK;
  if (fstat(fd, &st_buf) != 0)
    st = tpu_error(TPU_ERR_DIST, "tpu_dist: cannot stat the segment %s: %s", name,
                   strerror(errno));
  else if (st_buf.st_size != 0 && (size_t)st_buf.st_size != l->total)
    st = tpu_error(TPU_ERR_VALUE,
                   "tpu_dist: the segment %s has %lld bytes where a group of %d ranks needs %zu: "
                   "the ranks disagree on the group size, or an earlier run left it behind",
                   name, (long long)st_buf.st_size, c->size, l->total);
  else if (st_buf.st_size != 0)
    st = map_segment(c, fd, name, l);
  close(fd);
  if (st != TPU_OK || !c->base)
    return st;
  if (atomic_load_explicit(&c->header->ready, memory_order_acquire) == COMM_READY) {
    st = claim_rank(c, name);
    *attached = st == TPU_OK;
  }
  if (!*attached) {
    munmap(c->base, c->bytes);
    c->base = NULL;
  }
  return st;
}

static tpu_status attach_segment(tpu_comm *c, const char *name, const comm_layout *l,
                                 int64_t timeout_ms) {
  int64_t start = now_ns();
  for (;;) {
    bool attached = false;
    tpu_status st = try_attach(c, name, l, &attached);
    if (st != TPU_OK || attached)
      return st;
    if (now_ns() - start >= ms_to_ns(timeout_ms))
      return tpu_error(TPU_ERR_DIST,
                       "tpu_dist: rank %d timed out after %lld ms waiting for rank 0 to create "
                       "the segment %s",
                       c->rank, (long long)timeout_ms, name);
    nap(OPEN_RETRY_NS);
  }
}

tpu_status tpu_comm_open(const char *name, int rank, int size, int64_t timeout_ms, tpu_comm **out) {
  if (!out)
    return tpu_error(TPU_ERR_VALUE, "tpu_dist: tpu_comm_open needs somewhere to put the result");
  *out = NULL;
  if (!name || name[0] != '/')
    return tpu_error(TPU_ERR_VALUE, "tpu_dist: a segment name starts with '/', not \"%s\"",
                     name ? name : "(null)");
  if (size < 1 || size > COMM_MAX_RANKS)
    return tpu_error(TPU_ERR_VALUE, "tpu_dist: a group has 1 to %d ranks, not %d", COMM_MAX_RANKS,
                     size);
  if (rank < 0 || rank >= size)
    return tpu_error(TPU_ERR_VALUE, "tpu_dist: rank %d is outside a group of %d", rank, size);
  if (timeout_ms <= 0)
    return tpu_error(TPU_ERR_VALUE, "tpu_dist: the timeout must be positive, not %lld ms",
                     (long long)timeout_ms);
  tpu_comm *c = calloc(1, sizeof *c);
  if (!c)
    return tpu_error(TPU_ERR_OUT_OF_MEMORY, "tpu_dist: out of memory for a communicator");
  c->rank = rank;
  c->size = size;
  comm_layout l = layout_of(size);
  tpu_status st = rank == 0 ? create_segment(c, name, &l) : attach_segment(c, name, &l, timeout_ms);
  if (st != TPU_OK) {
    free(c);
    return st;
  }
  *out = c;
  return TPU_OK;
}

void tpu_comm_unlink(const char *name) {
  if (name)
    shm_unlink(name);
}

void tpu_comm_close(tpu_comm *c) {
  if (!c)
    return;
  munmap(c->base, c->bytes);
  free(c);
}

int tpu_comm_rank(const tpu_comm *c) { return c->rank; }

int tpu_comm_size(const tpu_comm *c) { return c->size; }

void comm_break(tpu_comm *c) {
  atomic_store(&c->broken, true);
  int none = 0;
  atomic_compare_exchange_strong(&c->header->aborted_by, &none, c->rank + 1);
}

/* Fails when another rank broke the group. */
static tpu_status check_group(tpu_comm *c, comm_kind kind) {
  int by = atomic_load_explicit(&c->header->aborted_by, memory_order_relaxed);
  if (by == 0 || by == c->rank + 1)
    return TPU_OK;
  atomic_store(&c->broken, true);
  return tpu_error(TPU_ERR_DIST,
                   "tpu_dist: %s: a collective failed on rank %d (a timeout, an exited peer or a "
                   "failed copy there), so the group cannot go on",
                   comm_kind_name(kind), by - 1);
}

tpu_status comm_enter(tpu_comm *c, comm_kind kind, int64_t timeout_ms) {
  if (!c)
    return tpu_error(TPU_ERR_VALUE, "tpu_dist: %s on a NULL communicator", comm_kind_name(kind));
  if (timeout_ms <= 0)
    return tpu_error(TPU_ERR_VALUE, "tpu_dist: %s: the timeout must be positive, not %lld ms",
                     comm_kind_name(kind), (long long)timeout_ms);
  if (atomic_load(&c->broken))
    return tpu_error(TPU_ERR_DIST,
                     "tpu_dist: %s: an earlier collective failed on this communicator, which "
                     "cannot be used again",
                     comm_kind_name(kind));
  return check_group(c, kind);
}

tpu_status comm_wait_step(tpu_comm *c, comm_wait *w, comm_kind kind, int peer, int64_t timeout_ms) {
  if (w->gone_pid > 0 && w->gone_peer == peer) {
    comm_break(c);
    return tpu_error(TPU_ERR_DIST, "tpu_dist: %s: rank %d (pid %d) exited", comm_kind_name(kind),
                     peer, w->gone_pid);
  }
  if (w->spins < SPIN_ITERS) {
    w->spins++;
    cpu_pause();
    return TPU_OK;
  }
  int64_t now = now_ns();
  if (w->since_ns == 0) {
    w->since_ns = now;
    w->next_check_ns = now + CHECK_NS;
  }
  if (now - w->since_ns < YIELD_NS)
    sched_yield();
  else
    nap(NAP_NS);
  if (now < w->next_check_ns)
    return TPU_OK;
  w->next_check_ns = now + CHECK_NS;
  tpu_status st = check_group(c, kind);
  if (st != TPU_OK)
    return st;
  int pid = atomic_load_explicit(&c->records[peer].pid, memory_order_relaxed);
  if (pid > 0 && process_gone(pid)) {
    w->gone_peer = peer;
    w->gone_pid = pid;
    return TPU_OK;
  }
  if (now - w->since_ns >= ms_to_ns(timeout_ms)) {
    comm_break(c);
    return tpu_error(TPU_ERR_DIST,
                     "tpu_dist: %s timed out after %lld ms waiting for rank %d (of %d)%s",
                     comm_kind_name(kind), (long long)timeout_ms, peer, c->size,
                     pid > 0 ? "" : ", which never opened the communicator");
  }
  return TPU_OK;
}

tpu_status comm_barrier(tpu_comm *c, comm_kind kind, int64_t timeout_ms) {
  unsigned long long seq = ++c->seq;
  atomic_store_explicit(&c->records[c->rank].arrived, seq, memory_order_release);
  comm_wait w = {0};
  for (int p = 0; p < c->size; p++) {
    while (atomic_load_explicit(&c->records[p].arrived, memory_order_acquire) < seq) {
      tpu_status st = comm_wait_step(c, &w, kind, p, timeout_ms);
      if (st != TPU_OK)
        return st;
    }
  }
  return TPU_OK;
}

tpu_status tpu_comm_barrier(tpu_comm *c, int64_t timeout_ms) {
  tpu_status st = comm_enter(c, COMM_BARRIER, timeout_ms);
  if (st != TPU_OK)
    return st;
  comm_sig sig = {.kind = COMM_BARRIER, .dtype = -1, .op = -1, .root = -1};
  return comm_agree(c, &sig, NULL, timeout_ms, NULL);
}

static unsigned long long *split_row(const tpu_comm *c, int parity, int rank) {
  size_t n = (size_t)c->size;
  return c->splits + ((size_t)parity * n + (size_t)rank) * 2 * n;
}

/* E.g. "4096 bytes of float32 reduced by sum at root 1". */
static void describe(const comm_sig *s, char *buf, size_t n) {
  char root[32] = "";
  if (s->root >= 0)
    snprintf(root, sizeof root, " at root %d", s->root);
  snprintf(buf, n, "%llu bytes%s%s%s%s%s", (unsigned long long)s->bytes,
           s->dtype >= 0 ? " of " : "", s->dtype >= 0 ? tpu_dtype_name((tpu_dtype)s->dtype) : "",
           s->op >= 0 ? " reduced by " : "", s->op >= 0 ? comm_op_name((tpu_reduce_op)s->op) : "",
           root);
}

static tpu_status mismatch(const tpu_comm *c, const comm_sig *mine, int peer,
                           const comm_sig *theirs) {
  if (theirs->invalid)
    return tpu_error(TPU_ERR_VALUE,
                     "tpu_dist: %s: rank %d passed invalid arguments (its error says which)",
                     comm_kind_name(mine->kind), peer);
  if (theirs->kind != mine->kind)
    return tpu_error(TPU_ERR_VALUE, "tpu_dist: rank %d is in %s while rank %d is in %s", c->rank,
                     comm_kind_name(mine->kind), peer, comm_kind_name(theirs->kind));
  char a[160], b[160];
  describe(mine, a, sizeof a);
  describe(theirs, b, sizeof b);
  return tpu_error(TPU_ERR_VALUE, "tpu_dist: %s: rank %d has %s, rank %d has %s",
                   comm_kind_name(mine->kind), c->rank, a, peer, b);
}

/* Every rank checks every pair, so all of them fail together. */
static tpu_status check_splits(const tpu_comm *c, int parity, size_t *max_split) {
  size_t n = (size_t)c->size, largest = 0;
  for (int src = 0; src < c->size; src++) {
    for (int dst = 0; dst < c->size; dst++) {
      unsigned long long sends = split_row(c, parity, src)[dst];
      unsigned long long expects = split_row(c, parity, dst)[n + (size_t)src];
      if (sends != expects)
        return tpu_error(TPU_ERR_VALUE,
                         "tpu_dist: all_to_all: rank %d sends %llu bytes to rank %d, which "
                         "expects %llu",
                         src, sends, dst, expects);
      if (sends > largest)
        largest = sends;
    }
  }
  *max_split = largest;
  return TPU_OK;
}

tpu_status comm_agree(tpu_comm *c, const comm_sig *sig, const unsigned long long *splits,
                      int64_t timeout_ms, size_t *max_split) {
  int parity = (int)((c->seq + 1) & 1);
  c->records[c->rank].sig[parity] = *sig;
  if (splits)
    memcpy(split_row(c, parity, c->rank), splits, 2 * (size_t)c->size * sizeof *splits);
  tpu_status st = comm_barrier(c, sig->kind, timeout_ms);
  if (st != TPU_OK || sig->invalid)
    return st;
  for (int p = 0; p < c->size; p++) {
    const comm_sig *theirs = &c->records[p].sig[parity];
    if (theirs->invalid || theirs->kind != sig->kind || theirs->dtype != sig->dtype ||
        theirs->op != sig->op || theirs->root != sig->root || theirs->bytes != sig->bytes)
      return mismatch(c, sig, p, theirs);
  }
  return sig->kind == COMM_ALL_TO_ALL ? check_splits(c, parity, max_split) : TPU_OK;
}
