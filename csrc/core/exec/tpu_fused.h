/* Fused eager mode (DeferAndFuse, docs/ARCHITECTURE.md) and the eager mode of each stream.
 *
 * In fused mode an op call is not launched: it becomes the next node of its stream's open graph
 * (graph/tpu_graph.h), and its outputs stay pending buffers with no memory. At a trigger the graph
 * is cut ("flushed"): the driver may reorder it (graph_optimize), each output is marked needed
 * while its storage is alive and not overwritten whole by a later node, the graph's plan comes
 * from the shared compile cache (the driver's graph_compile), the outputs the plan writes get
 * memory, and the graph runs as one work item on the stream (graph_run). An output whose tensors all died before the cut never gets memory.
 *
 * Every cut records its reason. Buffers of an open graph carry a materializer, so whatever needs
 * one of them live (a launch in another mode, a copy to the host, another stream's graph) cuts the
 * graph first. Thread-safe: each stream's graph has its own lock. */
#ifndef TPU_FUSED_H
#define TPU_FUSED_H

#include <stdbool.h>
#include <stdint.h>

#include "device/tpu_stream.h"
#include "ops/tpu_op.h"

/* Nodes after which an open graph is cut (a bound on planning time and on what a cut holds);
 * large enough for a foreach optimizer step over ~120 parameters to be one graph. */
#define TPU_FUSED_MAX_NODES 1024

typedef enum tpu_eager_mode {
  TPU_EAGER_UNSET = -1, /* a stream without its own mode follows the process default */
  TPU_EAGER_DEBUG,
  TPU_EAGER_STRICT,
  TPU_EAGER_FUSED,
} tpu_eager_mode;

/* Why a graph was cut. */
typedef enum tpu_cut_reason {
  TPU_CUT_SYNC,         /* stream or device synchronize */
  TPU_CUT_HOST_READ,    /* a synchronous launch: copy to the host, .item(), a scalar read */
  TPU_CUT_MATERIALIZE,  /* a pending buffer of the graph was needed by a path that does not defer */
  TPU_CUT_EVENT,        /* event record */
  TPU_CUT_QUERY,        /* stream query */
  TPU_CUT_WAIT_STREAM,  /* a stream waits for an event */
  TPU_CUT_FALLBACK,     /* an op without a native kernel runs on the CPU */
  TPU_CUT_UNDEFERRABLE, /* a call that cannot wait in a graph (it uses host memory it does not own) */
  TPU_CUT_GRAPH_CAP,    /* TPU_FUSED_MAX_NODES reached */
  TPU_CUT_MODE_SWITCH,  /* the eager mode changed, or a call of another mode came to the stream */
  TPU_CUT_BACKWARD_START, /* the first op of a backward pass (an autograd graph task) */
  TPU_CUT_BACKWARD,     /* the end of a backward pass (an autograd graph task) that recorded ops */
  TPU_CUT_COMPILED,     /* the start or end of a torch.compile graph's run (one graph each) */
  TPU_CUT_COUNT
} tpu_cut_reason;

/* "sync", "host_read", ...: the reason's name as Python reports it. */
const char *tpu_cut_reason_name(tpu_cut_reason reason);

/* "debug", "strict" or "fused"; tpu_eager_mode_parse returns TPU_EAGER_UNSET for other text. */
const char *tpu_eager_mode_name(tpu_eager_mode mode);
tpu_eager_mode tpu_eager_mode_parse(const char *text);

/* The process default: set by tpu_set_default_eager_mode, else from the environment
 * (TORCH_TPU_EAGER_MODE, else TORCH_TPU_DEFER_AND_FUSE=1 for fused, else TORCH_TPU_LAUNCH_BLOCKING
 * for debug, else strict). Debug is launch blocking, so setting the default also sets it. */
tpu_eager_mode tpu_default_eager_mode(void);
void tpu_set_default_eager_mode(tpu_eager_mode mode);

/* A stream's own mode (TPU_EAGER_UNSET: it follows the default), so work queued from other threads
 * (autograd's device thread) runs in the mode its user chose. */
void tpu_stream_set_eager_mode(tpu_stream *stream, tpu_eager_mode mode);
tpu_eager_mode tpu_stream_eager_mode(tpu_stream *stream);

/* The calling thread's own mode (TPU_EAGER_UNSET: none), which overrides its streams' (`with
 * torch.tpu.eager_mode(...)`); debug is launch blocking for that thread alone. */
tpu_eager_mode tpu_thread_eager_mode(void);
void tpu_set_thread_eager_mode(tpu_eager_mode mode);

/* The mode work submitted to `stream` by the calling thread runs in: the thread's mode, else the
 * stream's (NULL: none), else the process default. */
tpu_eager_mode tpu_eager_mode_for(tpu_stream *stream);

/* Records `call` as the next node of the stream's open graph, taking ownership of it in every case
 * (tpu_submit calls this in fused mode). Validates it as a launch does and counts it as a native
 * call. A call that cannot wait (see
 * TPU_CUT_UNDEFERRABLE) cuts the graph and is launched, and so is every call on a chip without a
 * pending range (tpu_buffer_pending_supported: fused mode is off there). Cuts at the stream's
 * node cap (tpu_fused_set_graph_cap). */
tpu_status tpu_fused_add(tpu_stream *stream, tpu_op_call *call);

/* The stream's node cap: its open graph is cut (TPU_CUT_GRAPH_CAP) when it reaches `cap` nodes; 0
 * restores TPU_FUSED_MAX_NODES. A torch.compile graph lifts it so that it stays one graph. */
void tpu_fused_set_graph_cap(tpu_stream *stream, int cap);

/* Cuts the stream's open graph for `reason` and queues it (nothing when it is empty). An error of
 * planning or memory returns here; errors of the kernels surface at the next synchronization. */
tpu_status tpu_fused_flush(tpu_stream *stream, tpu_cut_reason reason);

/* Cuts every open graph of `device`, or of every device for device -1. */
tpu_status tpu_fused_flush_device(int device, tpu_cut_reason reason);

/* Nodes in the stream's open graph. */
int tpu_fused_pending_nodes(tpu_stream *stream);

/* The stream's open graph as text or Graphviz dot (tpu_graph_dump); a malloc'd string the caller
 * frees ("" for no graph), NULL when out of host memory. */
char *tpu_fused_dump(tpu_stream *stream, bool dot);

typedef struct tpu_fused_stats {
  uint64_t cuts[TPU_CUT_COUNT]; /* graphs cut, by reason (empty graphs are not counted) */
  uint64_t nodes;               /* nodes in the cut graphs */
  uint64_t recomputed;          /* forward results computed again for backward (tpu_remat.h) */
  uint64_t recomputed_bytes;    /* their bytes */
} tpu_fused_stats;

void tpu_fused_get_stats(tpu_fused_stats *stats);
void tpu_fused_reset_stats(void);

#endif
