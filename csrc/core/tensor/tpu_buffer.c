#include "tensor/tpu_buffer.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device/tpu_address_space.h"
#include "device/tpu_device.h"
#include "mem/tpu_allocator.h"
#include "mem/tpu_heap.h"
#include "mem/tpu_reserve.h"

struct tpu_buffer {
  atomic_int refcount;
  atomic_int pending_readers; /* nodes of open graphs that read or write this buffer */
  atomic_bool storage_released;
  atomic_bool live;
  int device;
  int stream; /* index of the stream whose pool the memory comes from */
  size_t nbytes;
  void *identity;
  void *mem;                    /* NULL while pending */
  tpu_materialize_fn materializer; /* pending: runs the graph that writes this buffer */
  void *materializer_ctx;
  _Atomic(char *) poison;       /* message of the failed async op that wrote it, or NULL */
};

/* The poison of a buffer whose message could not be allocated: the contents are invalid all the
 * same, and a read must say so. Never freed. */
static char poison_without_message[] =
    "tensor contents are invalid: a tpu op writing them failed (out of host memory to say which)";

/* Identities of pending buffers come from an inaccessible range per chip, so a stray dereference
 * faults instead of reading another tensor's memory. Its size (mem/tpu_reserve.h) only bounds how
 * many pending bytes can exist at once; under an address-space limit it may shrink to an eighth
 * of the planned size, and below that the chip has no pending range: fused mode is off there. */
#define PENDING_MIN_FRACTION 8

static pthread_mutex_t pending_mu = PTHREAD_MUTEX_INITIALIZER;
static tpu_heap *pending_heaps[TPU_MAX_DEVICES];
/* 0 until the first use, then 1 with a range or -1 without one (never tried again); written
 * under pending_mu, read without it by every fused-mode call (tpu_buffer_pending_supported). */
static atomic_int pending_state[TPU_MAX_DEVICES];
static pthread_once_t refusal_warning = PTHREAD_ONCE_INIT;
static size_t refused_bytes;

static void warn_refusal(void) {
  fprintf(stderr,
          "torch_tpu: warning: fused mode is off: %zu bytes of address space for the identities "
          "of pending buffers cannot be reserved (an address-space limit such as ulimit -v?); "
          "ops of fused mode run as in strict mode\n",
          refused_bytes);
}

/* With pending_mu held: the chip's pending range, reserved on first use; NULL when the address
 * space cannot hold one, which is warned about once in the process. */
static tpu_heap *pending_heap_locked(int device) {
  if (atomic_load(&pending_state[device]) == 0) {
    size_t bytes = tpu_address_space_pending_bytes(device);
    if (tpu_reserve_heap(bytes, bytes / PENDING_MIN_FRACTION, false, &pending_heaps[device]) ==
        TPU_OK) {
      atomic_store(&pending_state[device], 1);
    } else {
      atomic_store(&pending_state[device], -1);
      refused_bytes = bytes;
      pthread_once(&refusal_warning, warn_refusal);
    }
  }
  return pending_heaps[device];
}

bool tpu_buffer_pending_supported(int device) {
  if (tpu_device_check(device) != TPU_OK)
    return false;
  int state = atomic_load(&pending_state[device]);
  if (state == 0) {
    pthread_mutex_lock(&pending_mu);
    state = pending_heap_locked(device) ? 1 : -1;
    pthread_mutex_unlock(&pending_mu);
  }
  return state > 0;
}

/* Serializes materialization, so two threads reading one pending buffer give it memory once. */
static pthread_mutex_t materialize_mu = PTHREAD_MUTEX_INITIALIZER;

static tpu_buffer *buffer_new(int device, int stream, size_t nbytes) {
  tpu_buffer *b = calloc(1, sizeof *b);
  if (!b)
    return NULL;
  atomic_init(&b->refcount, 1);
  b->device = device;
  b->stream = stream;
  b->nbytes = nbytes;
  return b;
}

tpu_status tpu_buffer_create(int device, int stream, size_t nbytes, tpu_buffer **out) {
  tpu_status st = tpu_device_check(device);
  if (st != TPU_OK)
    return st;
  tpu_buffer *b = buffer_new(device, stream, nbytes);
  if (!b)
    return tpu_error(TPU_ERR_OUT_OF_MEMORY, "cannot allocate a buffer descriptor");
  st = tpu_mem_alloc(device, stream, nbytes, &b->mem);
  if (st != TPU_OK) {
    free(b);
    return st;
  }
  b->identity = b->mem;
  atomic_store(&b->live, true);
  *out = b;
  return TPU_OK;
}

tpu_status tpu_buffer_create_pending(int device, int stream, size_t nbytes, tpu_buffer **out) {
  tpu_status st = tpu_device_check(device);
  if (st != TPU_OK)
    return st;
  tpu_buffer *b = buffer_new(device, stream, nbytes);
  if (!b)
    return tpu_error(TPU_ERR_OUT_OF_MEMORY, "cannot allocate a buffer descriptor");
  pthread_mutex_lock(&pending_mu);
  tpu_heap *heap = pending_heap_locked(device);
  if (heap)
    b->identity = tpu_heap_alloc(heap, nbytes ? nbytes : 1, 64);
  pthread_mutex_unlock(&pending_mu);
  if (!heap) {
    free(b);
    return tpu_buffer_create(device, stream, nbytes, out); /* fused mode is off on this chip */
  }
  if (!b->identity) {
    free(b);
    return tpu_error(TPU_ERR_OUT_OF_MEMORY,
                     "no address range left for a pending buffer of %zu bytes", nbytes);
  }
  *out = b;
  return TPU_OK;
}

void tpu_buffer_set_materializer(tpu_buffer *b, tpu_materialize_fn fn, void *ctx) {
  pthread_mutex_lock(&materialize_mu);
  b->materializer = fn;
  b->materializer_ctx = fn ? ctx : NULL;
  pthread_mutex_unlock(&materialize_mu);
}

void *tpu_buffer_materializer_ctx(const tpu_buffer *b) {
  pthread_mutex_lock(&materialize_mu);
  void *ctx = b->materializer_ctx;
  pthread_mutex_unlock(&materialize_mu);
  return ctx;
}

bool tpu_buffer_storage_alive(const tpu_buffer *b) { return !atomic_load(&b->storage_released); }

void tpu_buffer_add_reader(tpu_buffer *b) { atomic_fetch_add(&b->pending_readers, 1); }

bool tpu_buffer_is_live(const tpu_buffer *b) { return atomic_load(&b->live); }

int tpu_buffer_device(const tpu_buffer *b) { return b->device; }
int tpu_buffer_stream(const tpu_buffer *b) { return b->stream; }
size_t tpu_buffer_nbytes(const tpu_buffer *b) { return b->nbytes; }
void *tpu_buffer_identity(const tpu_buffer *b) { return b->identity; }
void *tpu_buffer_memory(const tpu_buffer *b) { return b->mem; }
const char *tpu_buffer_poison_message(const tpu_buffer *b) { return atomic_load(&b->poison); }

tpu_status tpu_buffer_materialize(tpu_buffer *b) {
  if (atomic_load(&b->live))
    return TPU_OK;
  /* Outside the lock: the materializer takes its graph's lock, which is held while it sets and
   * clears materializers. */
  pthread_mutex_lock(&materialize_mu);
  tpu_materialize_fn fn = b->materializer;
  void *ctx = b->materializer_ctx;
  pthread_mutex_unlock(&materialize_mu);
  if (fn) {
    tpu_status st = fn(ctx);
    if (st != TPU_OK)
      return st;
  }
  pthread_mutex_lock(&materialize_mu);
  tpu_status st = TPU_OK;
  if (!atomic_load(&b->live)) {
    st = tpu_mem_alloc(b->device, b->stream, b->nbytes, &b->mem);
    if (st == TPU_OK)
      atomic_store(&b->live, true);
  }
  pthread_mutex_unlock(&materialize_mu);
  return st;
}

int tpu_buffer_pending_readers(const tpu_buffer *b) { return atomic_load(&b->pending_readers); }

bool tpu_buffer_donate(tpu_buffer *from, tpu_buffer *to) {
  pthread_mutex_lock(&materialize_mu);
  bool ok = from != to && atomic_load(&from->storage_released) && !atomic_load(&to->live) &&
            from->device == to->device && from->stream == to->stream &&
            from->nbytes == to->nbytes;
  /* Taking `live` from `from` keeps maybe_return_memory from freeing what `to` now owns. */
  bool expected = true;
  ok = ok && atomic_compare_exchange_strong(&from->live, &expected, false);
  if (ok) {
    to->mem = from->mem;
    atomic_store(&to->live, true);
  }
  pthread_mutex_unlock(&materialize_mu);
  return ok;
}

void tpu_buffer_retain(tpu_buffer *b) { atomic_fetch_add(&b->refcount, 1); }

void tpu_buffer_release(tpu_buffer *b) {
  if (atomic_fetch_sub(&b->refcount, 1) != 1)
    return;
  char *poison = atomic_load(&b->poison);
  if (poison != poison_without_message)
    free(poison);
  free(b);
}

/* Memory goes back once the storage is gone and no unlaunched deferred op still reads it. Queued
 * (launched) ops do not hold it: the pool hands it out again only to work ordered after them. */
static void maybe_return_memory(tpu_buffer *b) {
  if (!atomic_load(&b->storage_released) || atomic_load(&b->pending_readers) != 0)
    return;
  bool expected = true;
  if (atomic_compare_exchange_strong(&b->live, &expected, false))
    tpu_mem_free(b->mem);
}

void tpu_buffer_reader_done(tpu_buffer *b) {
  if (atomic_fetch_sub(&b->pending_readers, 1) == 1)
    maybe_return_memory(b);
}

void tpu_buffer_release_storage(tpu_buffer *b) {
  pthread_mutex_lock(&materialize_mu);
  bool pending = !atomic_load(&b->live);
  atomic_store(&b->storage_released, true);
  pthread_mutex_unlock(&materialize_mu);
  if (b->identity != b->mem) {
    pthread_mutex_lock(&pending_mu);
    tpu_heap_free(pending_heaps[b->device], b->identity);
    pthread_mutex_unlock(&pending_mu);
  }
  if (!pending)
    maybe_return_memory(b);
  tpu_buffer_release(b);
}

void tpu_buffer_poison(tpu_buffer *b, const char *op, const char *message) {
  size_t len = strlen(op) + strlen(message) + 64;
  char *text = malloc(len);
  if (text)
    snprintf(text, len, "tensor contents are invalid: tpu op '%s' failed: %s", op, message);
  else
    text = poison_without_message;
  char *expected = NULL;
  if (!atomic_compare_exchange_strong(&b->poison, &expected, text) &&
      text != poison_without_message)
    free(text);
}

tpu_status tpu_buffer_check_poison(const tpu_buffer *b) {
  const char *text = atomic_load(&b->poison);
  return text ? tpu_error(TPU_ERR_RUNTIME, "%s", text) : TPU_OK;
}

int tpu_buffer_device_of(const void *ptr) {
  int device = tpu_mem_device_of(ptr);
  if (device >= 0)
    return device;
  pthread_mutex_lock(&pending_mu);
  for (int d = 0; d < TPU_MAX_DEVICES && device < 0; d++)
    if (pending_heaps[d] && tpu_heap_contains(pending_heaps[d], ptr))
      device = d;
  pthread_mutex_unlock(&pending_mu);
  return device;
}
