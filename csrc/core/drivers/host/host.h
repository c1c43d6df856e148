/* The host driver's extras: what only the simulated chip has, found by name through
 * tpu_driver_proc (drivers/tpu_driver.h), which returns NULL on another driver. The only header of
 * the host driver that the core's upper layers and the binding include. */
#ifndef TPU_HOST_H
#define TPU_HOST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TPU_HOST_SET_THREADS "set_threads"       /* void (int): torch.set_num_threads */
#define TPU_HOST_GRAPH_STATS "graph_stats"       /* void (tpu_graph_run_stats *) */
#define TPU_HOST_RESET_GRAPH_STATS "reset_graph_stats" /* void (void) */
#define TPU_HOST_BLAS_INFO "blas_info"           /* void (char *buf, size_t len) */
#define TPU_HOST_SET_BLAS_PATH "set_blas_path"   /* void (const char *): a CBLAS library */
#define TPU_HOST_USE_F32_KERNEL "use_f32_kernel" /* void (bool): fp32 GEMMs on the own kernel */

typedef void (*tpu_host_set_threads_fn)(int threads);
typedef void (*tpu_host_blas_info_fn)(char *buf, size_t len);
typedef void (*tpu_host_set_blas_path_fn)(const char *path);
typedef void (*tpu_host_use_f32_kernel_fn)(bool enabled);

/* What graph_run ran since start or reset: steps, fused steps among them, the nodes those covered,
 * and the fused steps that were a GEMM with its epilogue. */
typedef struct tpu_graph_run_stats {
  uint64_t steps, fused_steps, fused_nodes, gemm_epilogues;
} tpu_graph_run_stats;
typedef void (*tpu_host_graph_stats_fn)(tpu_graph_run_stats *stats);
typedef void (*tpu_host_reset_graph_stats_fn)(void);

#endif
