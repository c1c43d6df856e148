/* A buffer is the memory behind one storage. Its identity (the address PyTorch sees as the DataPtr)
 * is unique, 64-byte aligned and fixed at creation. A live buffer's identity is its memory. A
 * pending buffer (the output of a node of a fused-mode graph, exec/tpu_fused.h) has an identity from
 * a reserved, inaccessible range and no memory until something reads it or the graph runs; one
 * that dies unread is never allocated.
 *
 * Lifetime: the storage holds one reference and each queued op holds one. When the storage dies
 * (tpu_buffer_release_storage) the memory goes back to the allocator at once, stream-ordered, unless
 * a node of an open graph still reads or writes it. */
#ifndef TPU_BUFFER_H
#define TPU_BUFFER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/tpu_status.h"

typedef struct tpu_buffer tpu_buffer;

/* A live buffer of `nbytes` on `device`, allocated for stream index `stream`; refcount 1. */
tpu_status tpu_buffer_create(int device, int stream, size_t nbytes, tpu_buffer **out);

/* A pending buffer: identity only, refcount 1. Its graph sets its materializer. On a chip without a pending range (tpu_buffer_pending_supported) a live buffer instead. */
tpu_status tpu_buffer_create_pending(int device, int stream, size_t nbytes, tpu_buffer **out);

/* Whether the chip has a range of pending identities, reserved on the first call: false when an
 * address-space limit leaves no room for one (a warning on stderr says so, once). Fused mode
 * needs it (exec/tpu_fused.h). */
bool tpu_buffer_pending_supported(int device);

/* Makes a pending buffer live: runs its materializer, then allocates its memory if the
 * materializer did not. A no-op for a live buffer. */
tpu_status tpu_buffer_materialize(tpu_buffer *buffer);

/* Called when a pending buffer must become live, e.g. to run the fused-mode graph that writes it;
 * it may make the buffer live itself. */
typedef tpu_status (*tpu_materialize_fn)(void *ctx);

/* Sets (or, with fn NULL, clears) the pending buffer's materializer: tpu_buffer_materialize calls
 * fn(ctx) first, then gives the buffer memory if fn did not. */
void tpu_buffer_set_materializer(tpu_buffer *buffer, tpu_materialize_fn fn, void *ctx);

/* The materializer's ctx, or NULL: tells whose graph a pending buffer belongs to. */
void *tpu_buffer_materializer_ctx(const tpu_buffer *buffer);

/* True until the storage that owns the buffer dies (tpu_buffer_release_storage). */
bool tpu_buffer_storage_alive(const tpu_buffer *buffer);

/* One more unlaunched reader or writer (a node of an open graph): memory is not given back when
 * the storage dies until the matching tpu_buffer_reader_done. */
void tpu_buffer_add_reader(tpu_buffer *buffer);

/* True once the buffer has memory. */
bool tpu_buffer_is_live(const tpu_buffer *buffer);

/* Adds a reference (a queued op). */
void tpu_buffer_retain(tpu_buffer *buffer);

/* Drops a reference; the last one frees the buffer's bookkeeping. */
void tpu_buffer_release(tpu_buffer *buffer);

/* The storage that owns the buffer died: give the memory back (see the header comment) and drop the
 * storage's reference. A pending buffer is never allocated. */
void tpu_buffer_release_storage(tpu_buffer *buffer);

/* Device, stream index (whose pool gives its memory), size, identity (the DataPtr address) and
 * memory (NULL while pending) of a buffer. */
int tpu_buffer_device(const tpu_buffer *buffer);
int tpu_buffer_stream(const tpu_buffer *buffer);
size_t tpu_buffer_nbytes(const tpu_buffer *buffer);
void *tpu_buffer_identity(const tpu_buffer *buffer);
void *tpu_buffer_memory(const tpu_buffer *buffer);

/* Nodes of open graphs that read or write the buffer (tpu_buffer_add_reader). */
int tpu_buffer_pending_readers(const tpu_buffer *buffer);

/* Gives `to`, a pending buffer, the memory of `from`, a live buffer of the same
 * size, device and stream whose storage died: a memory plan's in-place reuse. `from` keeps the
 * address (its last readers still locate it) but no longer owns the memory, which goes back when
 * `to` dies. False, changing nothing, when a condition does not hold. */
bool tpu_buffer_donate(tpu_buffer *from, tpu_buffer *to);

/* The poison message (see tpu_buffer_poison), or NULL. */
const char *tpu_buffer_poison_message(const tpu_buffer *buffer);

/* Called when a graph node reading or writing this buffer ran or was dropped: one pending reader
 * fewer. */
void tpu_buffer_reader_done(tpu_buffer *buffer);

/* Marks the buffer's contents invalid because `op` failed with `message` asynchronously. */
void tpu_buffer_poison(tpu_buffer *buffer, const char *op, const char *message);

/* TPU_OK, or the error recorded by tpu_buffer_poison (a RuntimeError naming the op). */
tpu_status tpu_buffer_check_poison(const tpu_buffer *buffer);

/* Device of a buffer identity or arena address, or -1 when `ptr` is not tpu memory. */
int tpu_buffer_device_of(const void *ptr);

#endif
