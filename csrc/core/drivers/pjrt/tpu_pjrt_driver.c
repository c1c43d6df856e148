#include "drivers/pjrt/tpu_pjrt_driver.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/tpu_env.h"
#include "drivers/pjrt/tpu_pjrt_buffer.h"
#include "drivers/pjrt/tpu_pjrt_cache.h"
#include "drivers/pjrt/tpu_pjrt_disk_cache.h"
#include "drivers/pjrt/tpu_pjrt_error.h"
#include "drivers/pjrt/tpu_pjrt_inflight.h"
#include "drivers/pjrt/tpu_pjrt_lower.h"
#include "drivers/pjrt/tpu_pjrt_plugin.h"
#include "drivers/pjrt/tpu_pjrt_programs.h"
#include "drivers/pjrt/tpu_pjrt_scalars.h"
#include "drivers/pjrt/tpu_pjrt_storage.h"
#include "drivers/pjrt/tpu_pjrt_view.h"
#include "device/tpu_stream.h"
#include "graph/tpu_graph.h"
#include "ops/tpu_op_fallback.h"

/* The process's client, made once; init_status and init_message say why not. */
static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static tpu_status init_status;
static char init_message[1024];
static tpu_pjrt_client *client;
static char platform[32], version[96];

/* A name or version string the client owns, copied NUL-terminated. */
static void copy_string(char *dst, size_t len, const char *src, size_t src_len) {
  snprintf(dst, len, "%.*s", (int)(src_len < len ? src_len : len - 1), src ? src : "");
}

static tpu_status describe_platform(void) {
  const PJRT_Api *api = client->api;
  PJRT_Client_PlatformName_Args name = {.struct_size = PJRT_Client_PlatformName_Args_STRUCT_SIZE,
                                        .client = client->client};
  tpu_status st =
      tpu_pjrt_status(api, api->PJRT_Client_PlatformName(&name), "PJRT_Client_PlatformName");
  if (st != TPU_OK)
    return st;
  copy_string(platform, sizeof platform, name.platform_name, name.platform_name_size);
  PJRT_Client_PlatformVersion_Args ver = {
      .struct_size = PJRT_Client_PlatformVersion_Args_STRUCT_SIZE, .client = client->client};
  st = tpu_pjrt_status(api, api->PJRT_Client_PlatformVersion(&ver), "PJRT_Client_PlatformVersion");
  if (st == TPU_OK)
    copy_string(version, sizeof version, ver.platform_version, ver.platform_version_size);
  return st;
}

static void start(void) {
  const char *path = tpu_env_get("TORCH_TPU_PJRT_PLUGIN");
  const PJRT_Api *api = NULL;
  if (!path || !*path)
    init_status = tpu_error(TPU_ERR_RUNTIME,
                            "no PJRT plugin: set TORCH_TPU_PJRT_PLUGIN to a plugin's path or "
                            "package (XLA's CPU plugin: pip install --no-deps "
                            "lammps-jax-pjrt-cpu==0.11.2)");
  else
    init_status = tpu_pjrt_plugin_load(path, &api);
  if (init_status == TPU_OK)
    init_status = tpu_pjrt_client_create(api, &client);
  if (init_status == TPU_OK)
    init_status = describe_platform();
  if (init_status == TPU_OK) {
    char identity[sizeof platform + sizeof version + 2];
    snprintf(identity, sizeof identity, "%s %s", platform, version);
    tpu_pjrt_disk_cache_open(client, path, identity);
  }
  if (init_status != TPU_OK)
    snprintf(init_message, sizeof init_message, "%s", tpu_last_error());
}

static tpu_status pjrt_init(void) {
  pthread_once(&init_once, start);
  return init_status == TPU_OK ? TPU_OK : tpu_error(init_status, "%s", init_message);
}

/* The client's devices (tpu_pjrt_client.h): tpu:N is client->devices[N]. */
static int pjrt_device_count(void) { return (int)client->device_count; }

static void pjrt_device_props(int device, tpu_device_props *props) {
  (void)device;
  memset(props, 0, sizeof *props);
  snprintf(props->name, sizeof props->name, "%.8s (PJRT %.40s)", platform, version);
  props->kind = strcmp(platform, "tpu") == 0   ? TPU_DEVICE_TPU
                : strcmp(platform, "cpu") == 0 ? TPU_DEVICE_CPU
                                               : TPU_DEVICE_GPU;
  /* The plugin's memory as the host driver sizes its chip: half the RAM, at most 16 GiB. */
  long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  uint64_t half = pages > 0 && page > 0 ? (uint64_t)pages * (uint64_t)page / 2 : 16ull << 30;
  props->memory_bytes = (size_t)(half < (16ull << 30) ? half : 16ull << 30);
}

/* Addresses only name storages: nothing reads them. */
static tpu_status pjrt_arena_create(int device, size_t bytes, tpu_heap **arena) {
  (void)device;
  return tpu_heap_create(bytes, false, arena);
}

static void pjrt_arena_discard(int device, tpu_heap *arena, void *ptr, size_t bytes) {
  (void)device;
  (void)arena;
  tpu_pjrt_storage_discard(client, ptr, bytes);
}

static bool pjrt_supports_op(const tpu_op_call *call) { return tpu_pjrt_lowerable(call); }

/* Visits the byte offset of every element of host view t, row-major. */
static void each_element(const tpu_tensor *t, void (*visit)(char *elem, void *ctx), void *ctx) {
  int64_t index[TPU_MAX_DIMS] = {0}, size = (int64_t)tpu_dtype_size(t->dtype);
  char *base = (char *)t->host + t->offset;
  for (;;) {
    int64_t off = 0;
    for (int d = 0; d < t->ndim; d++)
      off += index[d] * t->strides[d];
    visit(base + off * size, ctx);
    int d = t->ndim - 1;
    while (d >= 0 && ++index[d] == t->sizes[d])
      index[d--] = 0;
    if (d < 0)
      return;
  }
}

typedef struct cursor {
  char *dense;
  size_t size;
  bool pack; /* host view to dense, else back */
} cursor;

static void move_element(char *elem, void *ctx) {
  cursor *c = ctx;
  if (c->pack)
    memcpy(c->dense, elem, c->size);
  else
    memcpy(elem, c->dense, c->size);
  c->dense += c->size;
}

/* Copies between host view t and a dense row-major array of its elements. */
static void host_move(const tpu_tensor *t, void *dense, bool pack) {
  cursor c = {.dense = dense, .size = tpu_dtype_size(t->dtype), .pack = pack};
  each_element(t, move_element, &c);
}

static size_t dense_bytes(const tpu_tensor *t) {
  size_t n = tpu_dtype_size(t->dtype);
  for (int i = 0; i < t->ndim; i++)
    n *= (size_t)t->sizes[i];
  return n;
}

/* Executable runs and storages copied between devices, for tpu_executable_stats (whose run time
 * is the devices' busy time, tpu_pjrt_inflight_busy_us). */
static atomic_uint_least64_t runs, device_copies;

/* The device a run executes on: every device view of a run is on it but a copy's source on
 * another chip, so it is the first call's last device tensor's (its output's, or a copy to the
 * host's source). */
static size_t run_device(const tpu_op_call *first) {
  for (int t = first->n_inputs + first->n_outputs - 1; t >= 0; t--)
    if (first->tensors[t].buf)
      return (size_t)tpu_buffer_device(first->tensors[t].buf);
  return 0;
}

/* The buffer of storage `storage` on `device`: its own, or a copy made there for the run (*owned)
 * when it lives on another chip. */
static tpu_status storage_on(const tpu_buffer *storage, size_t device, tpu_dtype *elem,
                             PJRT_Buffer **out, bool *owned) {
  size_t home = (size_t)tpu_buffer_device(storage);
  tpu_status st = tpu_pjrt_storage_get(client, home, tpu_buffer_memory(storage),
                                       tpu_buffer_nbytes(storage), out, elem);
  *owned = st == TPU_OK && home != device;
  if (*owned && (st = tpu_pjrt_buffer_to_device(client, *out, device, out)) == TPU_OK)
    atomic_fetch_add(&device_copies, 1);
  return st;
}

/* The argument buffers of program p for calls, on `device`; owned[i] marks the ones made for the
 * run, which it destroys. */
static tpu_status bind_args(const tpu_pjrt_program *p, const tpu_op_call *const *calls,
                            size_t device, PJRT_Buffer **bufs, bool *owned) {
  for (int i = 0; i < p->n_args; i++) {
    const tpu_pjrt_slot *a = &p->args[i];
    owned[i] = a->source == TPU_PJRT_HOST;
    tpu_status st;
    if (a->source == TPU_PJRT_STORAGE) {
      tpu_dtype elem;
      st = storage_on(calls[a->call]->tensors[a->index].buf, device, &elem, &bufs[i], &owned[i]);
      /* Only another stream writing the storage between lowering and now could change it. */
      if (st == TPU_OK && elem != a->dtype)
        st = tpu_error(TPU_ERR_RUNTIME, "a storage changed type while a PJRT module ran on it "
                       "(written from two streams without synchronization)");
    } else if (a->source == TPU_PJRT_SCALAR) {
      st = tpu_pjrt_scalar_buffer(client, device, a->dtype, &calls[a->call]->scalars[a->index],
                                  &bufs[i], &owned[i]);
    } else {
      const tpu_tensor *host = &calls[a->call]->tensors[a->index];
      size_t bytes = dense_bytes(host);
      void *dense = malloc(bytes ? bytes : 1);
      if (!dense)
        return tpu_error(TPU_ERR_OUT_OF_MEMORY, "out of host memory for %zu bytes", bytes);
      host_move(host, dense, true);
      int64_t dims[TPU_MAX_DIMS + 1]; /* a complex view's elements as their parts */
      int rank = tpu_pjrt_view_value_dims(host, dims);
      st = tpu_pjrt_buffer_from_host(client, device, a->dtype, dims, (size_t)rank, dense,
                                     &bufs[i]);
      free(dense);
    }
    if (st != TPU_OK)
      return st;
  }
  return TPU_OK;
}

/* The message of the first check result that is set, or NULL (or an error reading one); *call
 * receives the index in the run of the call it is about. */
static tpu_status failed_check(const tpu_pjrt_program *p, PJRT_Buffer **outs, const char **why,
                               tpu_status *code, int *call) {
  *why = NULL;
  for (int i = 0; i < p->n_results && !*why; i++) {
    uint8_t flag = 0;
    if (p->results[i].source != TPU_PJRT_CHECK)
      continue;
    tpu_status st = tpu_pjrt_buffer_to_host(client, outs[i], &flag, 1);
    if (st != TPU_OK)
      return st;
    if (flag) {
      *why = p->messages[p->results[i].index];
      *code = p->message_status[p->results[i].index];
      *call = p->message_call[p->results[i].index];
    }
  }
  return TPU_OK;
}

/* Stores each result: a storage's next contents, or elements copied into a host view; none when a
 * check failed (the run then changes nothing; *failed: the index of the call that failed). */
static tpu_status take_results(const tpu_pjrt_program *p, const tpu_op_call *const *calls,
                               PJRT_Buffer **outs, int *failed) {
  const char *why;
  tpu_status code = TPU_ERR_INDEX;
  tpu_status st = failed_check(p, outs, &why, &code, failed);
  if (st != TPU_OK || why) {
    for (int i = 0; i < p->n_results; i++)
      tpu_pjrt_buffer_destroy(client, outs[i]);
    return st != TPU_OK ? st : tpu_error(code, "%s", why);
  }
  for (int i = 0; i < p->n_results; i++) {
    const tpu_pjrt_slot *r = &p->results[i];
    if (r->source == TPU_PJRT_CHECK) {
      tpu_pjrt_buffer_destroy(client, outs[i]);
      continue;
    }
    const tpu_tensor *t = &calls[r->call]->tensors[r->index];
    if (r->source == TPU_PJRT_STORAGE) {
      tpu_status set = tpu_pjrt_storage_set(client, tpu_buffer_memory(t->buf),
                                            tpu_buffer_nbytes(t->buf), r->dtype, outs[i]);
      st = st == TPU_OK ? set : st;
      continue;
    }
    size_t bytes = dense_bytes(t);
    void *dense = malloc(bytes ? bytes : 1);
    tpu_status got = dense ? tpu_pjrt_buffer_to_host(client, outs[i], dense, bytes)
                           : tpu_error(TPU_ERR_OUT_OF_MEMORY, "out of host memory");
    if (got == TPU_OK)
      host_move(t, dense, false);
    free(dense);
    tpu_pjrt_buffer_destroy(client, outs[i]);
    st = st == TPU_OK ? got : st;
  }
  return st;
}

static void executable_stats(tpu_executable_stats *out) {
  tpu_pjrt_cache_stats(out);
  out->runs = atomic_load(&runs);
  out->run_us = tpu_pjrt_inflight_busy_us();
  out->device_copies = atomic_load(&device_copies);
  tpu_pjrt_programs_stats(&out->lowerings, &out->program_hits, &out->unkeyed);
}

static void reset_executable_stats(void) {
  tpu_pjrt_cache_reset_stats();
  atomic_store(&runs, 0);
  tpu_pjrt_inflight_reset_busy();
  atomic_store(&device_copies, 0);
  tpu_pjrt_programs_reset_stats();
}

/* Whether a run of program p waits for its execution: it reads results back to the host (a check's
 * flag, a host view), or its caller raises errors at the call (debug mode). Other runs return once
 * enqueued (drivers/pjrt/tpu_pjrt_inflight.h). */
static bool run_waits(const tpu_pjrt_program *p) {
  for (int i = 0; i < p->n_results; i++)
    if (p->results[i].source != TPU_PJRT_STORAGE)
      return true;
  return tpu_launch_blocking();
}

/* Runs executable exe of program p on the operands of calls. */
static tpu_status run_program(const tpu_pjrt_program *p, const tpu_pjrt_executable *exe,
                              const tpu_op_call *const *calls, int *failed) {
  PJRT_Buffer *args[TPU_HLO_MAX_ARGS] = {0}, *outs[TPU_HLO_MAX_RESULTS] = {0};
  bool owned[TPU_HLO_MAX_ARGS] = {0};
  size_t device = run_device(calls[0]);
  tpu_status st = bind_args(p, calls, device, args, owned);
  if (st == TPU_OK) {
    double start = tpu_now_us();
    PJRT_Event *done;
    st = tpu_pjrt_executable_run(exe, device, args, (size_t)p->n_args, outs,
                                 (size_t)p->n_results, &done);
    atomic_fetch_add(&runs, 1);
    if (st == TPU_OK)
      st = tpu_pjrt_inflight_add(client->api, device, done, start, run_waits(p));
    if (st != TPU_OK)
      for (int i = 0; i < p->n_results; i++)
        tpu_pjrt_buffer_destroy(client, outs[i]);
  }
  for (int i = 0; i < p->n_args; i++)
    if (owned[i])
      tpu_pjrt_buffer_destroy(client, args[i]);
  return st == TPU_OK ? take_results(p, calls, outs, failed) : st;
}

/* Runs calls[0..n) as one module (tpu_pjrt_programs.h), returning no storage of
 * dropped[0..n_dropped); on an error, *failed is the index of the call it is about (0 when it is
 * about the whole run). */
static tpu_status run_calls(const tpu_op_call *const *calls, int n, tpu_buffer *const *dropped,
                            int n_dropped, int *failed) {
  tpu_pjrt_compiled compiled;
  *failed = 0;
  tpu_status st = tpu_pjrt_programs_get(client, calls, n, dropped, n_dropped, &compiled);
  /* A run whose results are all dropped (and that checks nothing) has no effect. */
  if (st == TPU_OK && compiled.exe)
    st = run_program(compiled.program, compiled.exe, calls, failed);
  tpu_pjrt_compiled_release(&compiled);
  return st;
}

/* Whole storages between the host and the chip move without an executable. */
static bool copy_direct(const tpu_op_call *call, tpu_status *st) {
  const tpu_tensor *src = &call->tensors[0], *dst = &call->tensors[1];
  if (call->op != TPU_OP_COPY || src->dtype != dst->dtype || !!src->buf == !!dst->buf)
    return false;
  const tpu_tensor *dev = src->buf ? src : dst, *host = src->buf ? dst : src;
  size_t nbytes = tpu_buffer_nbytes(dev->buf), device = (size_t)tpu_buffer_device(dev->buf);
  if (!tpu_pjrt_view_covers(dev, nbytes) || !tpu_tensor_is_contiguous(host))
    return false;
  char *mem = (char *)host->host + host->offset;
  if (dev == dst) {
    tpu_dtype elem = tpu_pjrt_view_storage_elem(dev->dtype);
    int64_t dims[1] = {(int64_t)(nbytes / tpu_dtype_size(elem))};
    PJRT_Buffer *buf;
    *st = tpu_pjrt_buffer_from_host(client, device, elem, dims, 1, mem, &buf);
    if (*st == TPU_OK)
      *st = tpu_pjrt_storage_set(client, tpu_buffer_memory(dev->buf), nbytes, elem, buf);
  } else {
    PJRT_Buffer *buf;
    tpu_dtype elem;
    *st = tpu_pjrt_storage_get(client, device, tpu_buffer_memory(dev->buf), nbytes, &buf, &elem);
    if (*st == TPU_OK)
      *st = tpu_pjrt_buffer_to_host(client, buf, mem, nbytes);
  }
  return true;
}

static tpu_status pjrt_op_run(const tpu_op_call *call) {
  bool writes = false; /* an output with elements (absent ones are empty) */
  for (int o = call->n_inputs; o < call->n_inputs + call->n_outputs; o++)
    writes |= tpu_tensor_numel(&call->tensors[o]) > 0;
  if (!writes)
    return TPU_OK;
  tpu_status st;
  if (copy_direct(call, &st))
    return st;
  int failed;
  return run_calls(&call, 1, NULL, 0, &failed);
}

/* A fused graph's plan: its nodes cut into steps, each a run of lowerable nodes compiled as one
 * module (at most TPU_PJRT_MAX_RUN), or a single node the driver runs alone (a copy to the host)
 * or the core's fallback runs; and which outputs reach memory. A module keeps a storage's
 * contents inside it when no version it writes there is needed by the caller or read by another
 * step (an intermediate): that storage is no result of the module and never gets memory.
 * Lowerability and needed flags are structure, so equal graphs share the plan. */
typedef struct plan {
  int n_steps;
  int *out_base; /* node n's outputs are stores[out_base[n] ...] */
  bool *stores;
  struct step {
    int first, count;
    bool module;
  } steps[];
} plan;

/* Lowerable, writing only device memory (a copy to the host runs alone). */
static bool in_module(const tpu_op_call *c) {
  if (!tpu_pjrt_lowerable(c))
    return false;
  for (int o = c->n_inputs; o < c->n_inputs + c->n_outputs; o++)
    if (!c->tensors[o].buf && tpu_tensor_numel(&c->tensors[o]) > 0)
      return false;
  return true;
}

static void pjrt_graph_free(void *p) {
  plan *pl = p;
  if (!pl)
    return;
  free(pl->out_base);
  free(pl->stores);
  free(pl);
}

/* Fills pl->stores once the steps are cut (step_of[n]: node n's step). A version must reach
 * memory when the caller needs it or a node of another step reads (or partly overwrites) it; in a
 * module, then, so must every version of its slot the module writes, since the module returns a
 * storage's last contents only. */
static void plan_stores(const tpu_graph *g, plan *pl, const int *step_of, bool *keep_slot) {
  int total = pl->out_base[g->n_nodes];
  for (int f = 0; f < total; f++)
    pl->stores[f] = false;
  for (int m = 0; m < g->n_nodes; m++) {
    const tpu_graph_node *node = &g->nodes[m];
    for (int i = 0; i < node->call->n_inputs + node->call->n_outputs; i++) {
      const tpu_graph_ref *r = &node->refs[i];
      if (r->node >= 0 && step_of[r->node] != step_of[m])
        pl->stores[pl->out_base[r->node] + r->index] = true;
    }
    for (int k = 0; k < node->call->n_outputs; k++)
      pl->stores[pl->out_base[m] + k] |= node->refs[node->call->n_inputs + k].needed ||
                                         !pl->steps[step_of[m]].module;
  }
  /* Per step: clear the written slots, gather whether any version stays, spread it back. */
  for (int s = 0; s < pl->n_steps; s++)
    for (int pass = 0; pass < 3; pass++)
      for (int n = pl->steps[s].first; n < pl->steps[s].first + pl->steps[s].count; n++) {
        const tpu_graph_node *node = &g->nodes[n];
        for (int k = 0; k < node->call->n_outputs; k++) {
          int slot = node->refs[node->call->n_inputs + k].slot, f = pl->out_base[n] + k;
          if (slot < 0)
            continue;
          if (pass == 0)
            keep_slot[slot] = false;
          else if (pass == 1)
            keep_slot[slot] |= pl->stores[f];
          else
            pl->stores[f] = keep_slot[slot];
        }
      }
}

/* Shortens module step s to the longest run of its nodes that one module holds (at least one
 * node): most runs fit whole, so the prefix is searched only when the whole does not. */
static tpu_status fit_step(const tpu_graph *g, struct step *s) {
  const tpu_op_call *calls[TPU_PJRT_MAX_RUN];
  for (int i = 0; i < s->count; i++)
    calls[i] = g->nodes[s->first + i].call;
  bool fits;
  tpu_status st = tpu_pjrt_run_fits(calls, s->count, &fits);
  if (st != TPU_OK || fits)
    return st;
  int lo = 1, hi = s->count - 1; /* the answer lies in [lo, hi] */
  while (st == TPU_OK && lo < hi) {
    int mid = (lo + hi + 1) / 2;
    st = tpu_pjrt_run_fits(calls, mid, &fits);
    if (fits)
      lo = mid;
    else
      hi = mid - 1;
  }
  s->count = lo;
  return st;
}

static tpu_status pjrt_graph_compile(const tpu_graph *g, void **out) {
  plan *pl = calloc(1, sizeof *pl + (size_t)(g->n_nodes ? g->n_nodes : 1) * sizeof pl->steps[0]);
  int *step_of = malloc((size_t)(g->n_nodes + 1) * sizeof *step_of);
  bool *keep_slot = malloc((size_t)(g->n_slots + 1) * sizeof *keep_slot);
  if (pl)
    pl->out_base = malloc((size_t)(g->n_nodes + 1) * sizeof *pl->out_base);
  if (pl && pl->out_base) {
    pl->out_base[0] = 0;
    for (int n = 0; n < g->n_nodes; n++)
      pl->out_base[n + 1] = pl->out_base[n] + g->nodes[n].call->n_outputs;
    pl->stores = malloc((size_t)pl->out_base[g->n_nodes] + 1);
  }
  if (!pl || !pl->out_base || !pl->stores || !step_of || !keep_slot) {
    pjrt_graph_free(pl);
    free(step_of);
    free(keep_slot);
    return tpu_error(TPU_ERR_OUT_OF_MEMORY, "out of host memory for a PJRT graph plan");
  }
  tpu_status st = TPU_OK;
  for (int n = 0; st == TPU_OK && n < g->n_nodes;) {
    struct step *s = &pl->steps[pl->n_steps++];
    s->first = n;
    s->module = in_module(g->nodes[n].call);
    s->count = 1;
    while (s->module && n + s->count < g->n_nodes && s->count < TPU_PJRT_MAX_RUN &&
           in_module(g->nodes[n + s->count].call))
      s->count++;
    if (s->module)
      st = fit_step(g, s);
    for (int i = 0; i < s->count; i++)
      step_of[n + i] = pl->n_steps - 1;
    n += s->count;
  }
  if (st != TPU_OK) {
    pjrt_graph_free(pl);
    free(step_of);
    free(keep_slot);
    return st;
  }
  plan_stores(g, pl, step_of, keep_slot);
  free(step_of);
  free(keep_slot);
  *out = pl;
  return TPU_OK;
}

static bool pjrt_graph_step(const void *p, int i, int *first, int *count) {
  const plan *pl = p;
  if (i >= pl->n_steps)
    return false;
  *first = pl->steps[i].first;
  *count = pl->steps[i].count;
  return true;
}

static bool pjrt_graph_stores(const void *p, int node, int out) {
  const plan *pl = p;
  return pl->stores[pl->out_base[node] + out];
}

/* Runs one step, its module returning no storage the plan keeps inside it; on an error, *failed
 * is the index in the step of the node it is about. */
static tpu_status run_step(const plan *pl, const tpu_graph *g, const struct step *s,
                           int *failed) {
  tpu_buffer *dropped[TPU_HLO_MAX_ARGS];
  int n_dropped = 0;
  *failed = 0;
  for (int n = s->first; n < s->first + s->count; n++) {
    const tpu_op_call *c = g->nodes[n].call;
    for (int o = c->n_inputs; o < c->n_inputs + c->n_outputs; o++) {
      tpu_buffer *b = c->tensors[o].buf;
      if (b && !pl->stores[pl->out_base[n] + o - c->n_inputs]) {
        bool seen = false; /* at most one entry per storage: there are as many as arguments */
        for (int i = 0; i < n_dropped && !seen; i++)
          seen = dropped[i] == b;
        if (!seen && n_dropped < TPU_HLO_MAX_ARGS)
          dropped[n_dropped++] = b;
      } else if (b && !tpu_buffer_is_live(b) && !tpu_buffer_memory(b)) {
        tpu_status st = tpu_buffer_materialize(b);
        if (st != TPU_OK)
          return st;
      }
    }
  }
  if (!s->module)
    return tpu_op_run(g->nodes[s->first].call);
  const tpu_op_call *calls[TPU_PJRT_MAX_RUN];
  for (int i = 0; i < s->count; i++)
    calls[i] = g->nodes[s->first + i].call;
  tpu_status st = run_calls(calls, s->count, dropped, n_dropped, failed);
  if (st == TPU_OK || *failed == 0)
    return st;
  /* A failed check stored nothing: the nodes before the failing one run again, as the host would
   * have run them. */
  char message[4096]; /* copied: the run writes the thread's error text */
  snprintf(message, sizeof message, "%s", tpu_last_error());
  int failed_again;
  tpu_status again = run_calls(calls, *failed, dropped, n_dropped, &failed_again);
  if (again != TPU_OK) {
    *failed = failed_again;
    return again;
  }
  return tpu_error(st, "%s", message);
}

static tpu_status pjrt_graph_run(const void *p, const tpu_graph *g) {
  const plan *pl = p;
  for (int i = 0; i < pl->n_steps; i++) {
    const struct step *s = &pl->steps[i];
    int end = s->first + s->count;
    const char *poison = tpu_graph_poisoned_input(g, s->first, end);
    if (poison) {
      tpu_graph_poison_outputs(g, s->first, end, tpu_op_name(g->nodes[s->first].call->op),
                               poison);
      continue;
    }
    int failed;
    tpu_status st = run_step(pl, g, s, &failed);
    if (st != TPU_OK) {
      char message[4096]; /* copied: poisoning may overwrite the thread's error text */
      snprintf(message, sizeof message, "%s", tpu_last_error());
      /* From the failing node on: run_step stored the outputs of the nodes before it. */
      const char *op = tpu_op_name(g->nodes[s->first + failed].call->op);
      tpu_graph_poison_outputs(g, s->first + failed, g->n_nodes, op, message);
      return tpu_error(st, "'%s' failed: %s", op, message);
    }
  }
  return TPU_OK;
}

/* View t over a host copy of its storage's bytes (*mem, malloc'd, freed by the caller). */
static tpu_status host_copy(const tpu_tensor *t, tpu_tensor *copy, void **mem) {
  size_t nbytes = tpu_buffer_nbytes(t->buf);
  *mem = malloc(nbytes ? nbytes : 1);
  if (!*mem)
    return tpu_error(TPU_ERR_OUT_OF_MEMORY, "out of host memory for %zu bytes", nbytes);
  PJRT_Buffer *buf;
  tpu_dtype elem;
  tpu_status st = tpu_pjrt_storage_get(client, (size_t)tpu_buffer_device(t->buf),
                                       tpu_buffer_memory(t->buf), nbytes, &buf, &elem);
  if (st == TPU_OK)
    st = tpu_pjrt_buffer_to_host(client, buf, *mem, nbytes);
  *copy = *t;
  copy->buf = NULL;
  copy->host = *mem;
  return st;
}

/* Views the device does not scan (complex dtypes, the first bad element) are scanned on a host
 * copy by the host driver's scan, reached through the driver registry as the core's fallback
 * reaches its kernels (ops/tpu_op_fallback.h). */
static tpu_proc host_proc(const char *name) {
  const tpu_driver_i *host = tpu_driver_find("host");
  return host && host->get_proc_address ? host->get_proc_address(name) : NULL;
}

static bool host_has_nonfinite(const tpu_tensor *t) {
  tpu_proc_has_nonfinite scan = (tpu_proc_has_nonfinite)host_proc(TPU_PROC_HAS_NONFINITE);
  return scan && scan(t);
}

static bool host_first_nonfinite(const tpu_tensor *t, int64_t *index, double *value) {
  tpu_proc_first_nonfinite first = (tpu_proc_first_nonfinite)host_proc(TPU_PROC_FIRST_NONFINITE);
  return first && first(t, index, value);
}

/* Debug mode's scan (TPU_PROC_HAS_NONFINITE): on the device, one byte coming back, where the view
 * lowers; on a host copy of the storage otherwise. A scan that cannot run (out of memory) finds
 * nothing. */
static bool has_nonfinite(const tpu_tensor *t) {
  if (!t->buf)
    return host_has_nonfinite(t);
  if (!(tpu_dtype_is_floating(t->dtype) || tpu_dtype_is_complex(t->dtype)) ||
      tpu_tensor_numel(t) == 0)
    return false;
  if (!tpu_pjrt_nonfinite_lowers(t)) {
    tpu_tensor copy;
    void *mem;
    bool found = host_copy(t, &copy, &mem) == TPU_OK && host_has_nonfinite(&copy);
    free(mem);
    return found;
  }
  uint8_t flag = 0;
  tpu_op_call *scan = tpu_op_call_new(TPU_OP_COPY, 1, 1); /* the op is not read */
  if (!scan)
    return false;
  scan->tensors[0] = *t;
  scan->tensors[1] = (tpu_tensor){.dtype = TPU_UINT8, .ndim = 0, .host = &flag};
  const tpu_op_call *calls[1] = {scan};
  tpu_pjrt_program *p;
  const tpu_pjrt_executable *exe;
  int failed;
  tpu_status st = tpu_pjrt_lower_nonfinite(scan, &p);
  if (st == TPU_OK)
    st = tpu_pjrt_cache_get(client, p->text, p->len, &exe);
  if (st == TPU_OK)
    st = run_program(p, exe, calls, &failed);
  tpu_pjrt_program_free(p);
  tpu_op_call_free(scan);
  return st == TPU_OK && flag;
}

/* For the error message only: the first one, found on a host copy (TPU_PROC_FIRST_NONFINITE). */
static bool first_nonfinite(const tpu_tensor *t, int64_t *index, double *value) {
  if (!t->buf)
    return host_first_nonfinite(t, index, value);
  tpu_tensor copy;
  void *mem;
  bool found =
      host_copy(t, &copy, &mem) == TPU_OK && host_first_nonfinite(&copy, index, value);
  free(mem);
  return found;
}

static tpu_status pjrt_device_wait(int device) { return tpu_pjrt_inflight_wait((size_t)device); }

static bool pjrt_device_idle(int device) { return tpu_pjrt_inflight_idle((size_t)device); }

static tpu_proc pjrt_proc(const char *name) {
  if (strcmp(name, TPU_PROC_HAS_NONFINITE) == 0)
    return (tpu_proc)has_nonfinite;
  if (strcmp(name, TPU_PROC_FIRST_NONFINITE) == 0)
    return (tpu_proc)first_nonfinite;
  if (strcmp(name, TPU_PJRT_EXECUTABLE_STATS) == 0)
    return (tpu_proc)executable_stats;
  if (strcmp(name, TPU_PJRT_RESET_EXECUTABLE_STATS) == 0)
    return (tpu_proc)reset_executable_stats;
  return NULL;
}

static const tpu_driver_i pjrt_driver = {
    .name = "pjrt",
    .init = pjrt_init,
    .device_count = pjrt_device_count,
    .device_props = pjrt_device_props,
    .arena_create = pjrt_arena_create,
    .arena_discard = pjrt_arena_discard,
    .supports_op = pjrt_supports_op,
    .op_run = pjrt_op_run,
    .graph_compile = pjrt_graph_compile,
    .graph_free = pjrt_graph_free,
    .graph_run = pjrt_graph_run,
    .graph_step = pjrt_graph_step,
    .graph_stores = pjrt_graph_stores,
    .device_wait = pjrt_device_wait,
    .device_idle = pjrt_device_idle,
    .get_proc_address = pjrt_proc,
};

const tpu_driver_i *tpu_pjrt_driver(void) { return &pjrt_driver; }
