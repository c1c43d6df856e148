#include "drivers/pjrt/tpu_pjrt_scalars.h"

#include <pthread.h>
#include <string.h>

#include "drivers/pjrt/tpu_pjrt_buffer.h"

#define SLOTS 1024 /* a power of two */

typedef struct slot {
  PJRT_Buffer *buffer; /* NULL: free */
  size_t device;
  tpu_dtype dtype;
  uint64_t bits;
} slot;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static slot slots[SLOTS];

tpu_status tpu_pjrt_scalar_buffer(const tpu_pjrt_client *client, size_t device, tpu_dtype dtype,
                                  const void *value, PJRT_Buffer **out, bool *owned) {
  uint64_t bits;
  memcpy(&bits, value, sizeof bits);
  uint64_t key = bits ^ (uint64_t)dtype ^ (uint64_t)device << 56;
  slot *s = &slots[(key * 0x9e3779b97f4a7c15ull) >> 54 & (SLOTS - 1)];
  pthread_mutex_lock(&mu);
  if (s->buffer && s->device == device && s->dtype == dtype && s->bits == bits) {
    *out = s->buffer;
    *owned = false;
    pthread_mutex_unlock(&mu);
    return TPU_OK;
  }
  bool keep = s->buffer == NULL;
  tpu_status st = tpu_pjrt_buffer_from_host(client, device, dtype, NULL, 0, value, out);
  if (st == TPU_OK && keep)
    *s = (slot){.buffer = *out, .device = device, .dtype = dtype, .bits = bits};
  *owned = !keep;
  pthread_mutex_unlock(&mu);
  return st;
}
