#include "ops/tpu_op_fallback.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/tpu_env.h"
#include "drivers/tpu_driver.h"

/* The driver that runs refused calls: the host driver, unless it is the one refusing or the
 * fallback is off (TORCH_TPU_CPU_FALLBACK=0). */
static const tpu_driver_i *fallback_driver(const tpu_driver_i *active) {
  if (!tpu_env_flag("TORCH_TPU_CPU_FALLBACK", true))
    return NULL;
  const tpu_driver_i *host = tpu_driver_find("host");
  return host && host != active ? host : NULL;
}

static bool driver_supports(const tpu_driver_i *d, const tpu_op_call *call) {
  return !d->supports_op || d->supports_op(call);
}

/* A uint8 view of all of a buffer's bytes, on the device (buf) or the host (staging). */
static tpu_tensor bytes_view(tpu_buffer *buf, void *host) {
  tpu_tensor t = {.buf = buf, .host = host, .dtype = TPU_UINT8, .ndim = 1};
  t.sizes[0] = (int64_t)tpu_buffer_nbytes(buf);
  t.strides[0] = 1;
  return t;
}

/* Copies all of `buf` from the device to `host`, or back when `to_device`. */
static tpu_status move_bytes(const tpu_driver_i *d, tpu_buffer *buf, void *host, bool to_device) {
  if (tpu_buffer_nbytes(buf) == 0)
    return TPU_OK;
  tpu_op_call *copy = tpu_op_call_new(TPU_OP_COPY, 1, 1);
  if (!copy)
    return tpu_error(TPU_ERR_OUT_OF_MEMORY, "out of host memory for a fallback copy");
  tpu_tensor device = bytes_view(buf, NULL), staged = bytes_view(buf, host);
  staged.buf = NULL;
  copy->tensors[0] = to_device ? staged : device;
  copy->tensors[1] = to_device ? device : staged;
  tpu_status st = d->op_run(copy);
  tpu_op_call_free(copy);
  return st;
}

static atomic_bool warned[TPU_OP_COUNT];

static void count_fallback(const tpu_driver_i *d, const tpu_op_call *call) {
  tpu_op_count_driver_fallback(call->op);
  if (!atomic_exchange(&warned[call->op], true))
    fprintf(stderr,
            "torch_tpu: the %s driver cannot run tpu op '%s' for these operands: it runs on the "
            "CPU (counted in torch.tpu.op_stats()[\"driver_fallback\"])\n",
            d->name, tpu_op_name(call->op));
}

/* The fallback: stage each storage on the host, run the host kernel there, copy written storages
 * back. */
static tpu_status run_on_host(const tpu_driver_i *d, const tpu_driver_i *host,
                              const tpu_op_call *call) {
  int n = call->n_inputs + call->n_outputs;
  size_t call_bytes = sizeof *call + (size_t)n * sizeof(tpu_tensor);
  tpu_op_call *staged = malloc(call_bytes);
  tpu_buffer **bufs = calloc((size_t)n, sizeof *bufs);
  void **mem = calloc((size_t)n, sizeof *mem);
  tpu_status st = staged && bufs && mem
                      ? TPU_OK
                      : tpu_error(TPU_ERR_OUT_OF_MEMORY, "out of host memory for a fallback");
  int n_bufs = 0;
  if (st == TPU_OK) {
    memcpy(staged, call, call_bytes);
    staged->cleanup = NULL;
  }
  for (int i = 0; i < n && st == TPU_OK; i++) {
    tpu_buffer *b = call->tensors[i].buf;
    if (!b)
      continue;
    int k = 0;
    while (k < n_bufs && bufs[k] != b)
      k++;
    if (k == n_bufs) {
      size_t bytes = tpu_buffer_nbytes(b);
      mem[k] = aligned_alloc(64, (bytes + 63) / 64 * 64 + 64);
      if (!mem[k]) {
        st = tpu_error(TPU_ERR_OUT_OF_MEMORY, "out of host memory to stage %zu bytes", bytes);
        break;
      }
      bufs[n_bufs++] = b;
      st = move_bytes(d, b, mem[k], false);
    }
    staged->tensors[i].buf = NULL;
    staged->tensors[i].host = mem[k];
  }
  if (st == TPU_OK)
    st = host->op_run(staged);
  for (int k = 0; k < n_bufs && st == TPU_OK; k++) {
    bool written = false;
    for (int o = call->n_inputs; o < n; o++)
      written |= call->tensors[o].buf == bufs[k];
    if (written)
      st = move_bytes(d, bufs[k], mem[k], true);
  }
  for (int k = 0; k < n_bufs; k++)
    free(mem[k]);
  free(mem);
  free(bufs);
  free(staged);
  return st;
}

tpu_status tpu_op_route(tpu_op_call *call) {
  const tpu_driver_i *d = tpu_driver();
  if (!d)
    return tpu_driver_error();
  call->host_fallback = !driver_supports(d, call);
  if (!call->host_fallback)
    return TPU_OK;
  const tpu_driver_i *host = fallback_driver(d);
  if (host && driver_supports(host, call))
    return TPU_OK;
  const char *dtype = call->n_inputs + call->n_outputs > 0 ? tpu_dtype_name(call->tensors[0].dtype)
                                                           : "these operands";
  return tpu_error(TPU_ERR_NOT_IMPLEMENTED, "tpu op '%s' is not implemented for %s by the %s driver",
                   tpu_op_name(call->op), dtype, d->name);
}

tpu_status tpu_op_run(const tpu_op_call *call) {
  const tpu_driver_i *d = tpu_driver();
  if (!call->host_fallback)
    return d->op_run(call);
  const tpu_driver_i *host = fallback_driver(d);
  if (!host)
    return tpu_error(TPU_ERR_NOT_IMPLEMENTED, "tpu op '%s' is not supported by the %s driver",
                     tpu_op_name(call->op), d->name);
  count_fallback(d, call);
  return run_on_host(d, host, call);
}
