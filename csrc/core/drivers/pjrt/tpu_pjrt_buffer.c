#include "drivers/pjrt/tpu_pjrt_buffer.h"

#include "drivers/pjrt/tpu_pjrt_error.h"
#include "drivers/pjrt/tpu_pjrt_event.h"
#include "tensor/tpu_tensor.h"

static PJRT_Buffer_Type pjrt_type(tpu_dtype dtype) {
  switch (dtype) {
  case TPU_BOOL: return PJRT_Buffer_Type_PRED;
  case TPU_UINT8: return PJRT_Buffer_Type_U8;
  case TPU_INT8: return PJRT_Buffer_Type_S8;
  case TPU_INT16: return PJRT_Buffer_Type_S16;
  case TPU_INT32: return PJRT_Buffer_Type_S32;
  case TPU_INT64: return PJRT_Buffer_Type_S64;
  case TPU_FLOAT16: return PJRT_Buffer_Type_F16;
  case TPU_BFLOAT16: return PJRT_Buffer_Type_BF16;
  case TPU_FLOAT32: return PJRT_Buffer_Type_F32;
  case TPU_FLOAT64: return PJRT_Buffer_Type_F64;
  case TPU_COMPLEX64: return PJRT_Buffer_Type_C64;
  case TPU_COMPLEX128: return PJRT_Buffer_Type_C128;
  case TPU_UINT16: return PJRT_Buffer_Type_U16;
  case TPU_UINT32: return PJRT_Buffer_Type_U32;
  case TPU_UINT64: return PJRT_Buffer_Type_U64;
  case TPU_FLOAT8_E4M3FN: return PJRT_Buffer_Type_F8E4M3FN;
  case TPU_FLOAT8_E5M2: return PJRT_Buffer_Type_F8E5M2;
  case TPU_DTYPE_COUNT: break;
  }
  return PJRT_Buffer_Type_INVALID;
}

/* Plugins CHECK-fail (abort) on some malformed requests instead of returning an error, so the
 * arguments are checked here first. */
static tpu_status check_array(const tpu_pjrt_client *client, size_t device, tpu_dtype dtype,
                              const int64_t *dims, size_t ndim, const void *data) {
  if (device >= client->device_count)
    return tpu_error(TPU_ERR_INDEX, "PJRT device %zu out of range (the client has %zu)", device,
                     client->device_count);
  if ((unsigned)dtype >= TPU_DTYPE_COUNT)
    return tpu_error(TPU_ERR_TYPE, "not a dtype: %d", (int)dtype);
  if (ndim > TPU_MAX_DIMS || (ndim && !dims))
    return tpu_error(TPU_ERR_VALUE, "a PJRT buffer needs dims for its %zu dimensions", ndim);
  size_t bytes = tpu_dtype_size(dtype);
  for (size_t i = 0; i < ndim; i++) {
    if (dims[i] < 0)
      return tpu_error(TPU_ERR_VALUE, "negative size %lld in dimension %zu", (long long)dims[i], i);
    if (dims[i] && bytes > SIZE_MAX / (uint64_t)dims[i])
      return tpu_error(TPU_ERR_VALUE, "a PJRT buffer of more than SIZE_MAX bytes");
    bytes *= (size_t)dims[i];
  }
  if (bytes && !data)
    return tpu_error(TPU_ERR_VALUE, "no host data for a PJRT buffer of %zu bytes", bytes);
  return TPU_OK;
}

tpu_status tpu_pjrt_buffer_from_host(const tpu_pjrt_client *client, size_t device, tpu_dtype dtype,
                                     const int64_t *dims, size_t ndim, const void *data,
                                     PJRT_Buffer **out) {
  *out = NULL;
  tpu_status status = check_array(client, device, dtype, dims, ndim, data);
  if (status != TPU_OK)
    return status;
  const PJRT_Api *api = client->api;
  /* The plugin may read `data` after the call returns, until done_with_host_buffer: awaiting it
   * here lets the caller reuse its memory at once, as the core's copies expect. */
  PJRT_Client_BufferFromHostBuffer_Args args = {
      .struct_size = PJRT_Client_BufferFromHostBuffer_Args_STRUCT_SIZE,
      .client = client->client,
      .data = data,
      .type = pjrt_type(dtype),
      .dims = dims,
      .num_dims = ndim,
      .host_buffer_semantics = PJRT_HostBufferSemantics_kImmutableUntilTransferCompletes,
      .device = client->devices[device],
  };
  status = tpu_pjrt_status(api, api->PJRT_Client_BufferFromHostBuffer(&args),
                           "PJRT_Client_BufferFromHostBuffer");
  if (status != TPU_OK)
    return status;
  status =
      tpu_pjrt_event_await(api, args.done_with_host_buffer, "PJRT_Client_BufferFromHostBuffer");
  if (status != TPU_OK) {
    PJRT_Buffer_Destroy_Args destroy = {.struct_size = PJRT_Buffer_Destroy_Args_STRUCT_SIZE,
                                        .buffer = args.buffer};
    tpu_pjrt_error_drop(api, api->PJRT_Buffer_Destroy(&destroy));
    return status;
  }
  *out = args.buffer;
  return TPU_OK;
}

tpu_status tpu_pjrt_buffer_to_host(const tpu_pjrt_client *client, PJRT_Buffer *buffer, void *dst,
                                   size_t size) {
  const PJRT_Api *api = client->api;
  /* A first call without dst asks for the size, so a short dst is an error and not an overflow. */
  PJRT_Buffer_ToHostBuffer_Args args = {.struct_size = PJRT_Buffer_ToHostBuffer_Args_STRUCT_SIZE,
                                        .src = buffer};
  tpu_status status =
      tpu_pjrt_status(api, api->PJRT_Buffer_ToHostBuffer(&args), "PJRT_Buffer_ToHostBuffer");
  if (status == TPU_OK) /* the size query makes no event in XLA's plugins; others may */
    status = tpu_pjrt_event_await(api, args.event, "PJRT_Buffer_ToHostBuffer");
  if (status != TPU_OK)
    return status;
  args.event = NULL;
  if (args.dst_size != size)
    return tpu_error(TPU_ERR_VALUE, "the PJRT buffer holds %zu bytes, not %zu", args.dst_size,
                     size);
  if (size && !dst)
    return tpu_error(TPU_ERR_VALUE, "no host memory to copy a PJRT buffer into");
  args.dst = dst;
  status = tpu_pjrt_status(api, api->PJRT_Buffer_ToHostBuffer(&args), "PJRT_Buffer_ToHostBuffer");
  if (status != TPU_OK)
    return status;
  return tpu_pjrt_event_await(api, args.event, "PJRT_Buffer_ToHostBuffer");
}

tpu_status tpu_pjrt_buffer_to_device(const tpu_pjrt_client *client, PJRT_Buffer *buffer,
                                     size_t device, PJRT_Buffer **out) {
  *out = NULL;
  if (device >= client->device_count)
    return tpu_error(TPU_ERR_VALUE, "no PJRT device %zu (the client has %zu)", device,
                     client->device_count);
  const PJRT_Api *api = client->api;
  PJRT_Buffer_CopyToDevice_Args args = {.struct_size = PJRT_Buffer_CopyToDevice_Args_STRUCT_SIZE,
                                        .buffer = buffer,
                                        .dst_device = client->devices[device]};
  tpu_status status =
      tpu_pjrt_status(api, api->PJRT_Buffer_CopyToDevice(&args), "PJRT_Buffer_CopyToDevice");
  *out = status == TPU_OK ? args.dst_buffer : NULL;
  return status;
}

tpu_status tpu_pjrt_buffer_destroy(const tpu_pjrt_client *client, PJRT_Buffer *buffer) {
  if (!buffer)
    return TPU_OK;
  PJRT_Buffer_Destroy_Args args = {.struct_size = PJRT_Buffer_Destroy_Args_STRUCT_SIZE,
                                   .buffer = buffer};
  return tpu_pjrt_status(client->api, client->api->PJRT_Buffer_Destroy(&args),
                         "PJRT_Buffer_Destroy");
}
