/* An op family with its own StableHLO emitter for calls of several operands and outputs (index
 * ops, advanced and masked indexing, set membership, norms, losses, attention, random and
 * multinomial draws, recurrent cells,
 * convolutions, pooling, batch norm, the reductions that pick or test elements and those computing
 * statistics, the gradient scaler). The lowering (drivers/pjrt/tpu_pjrt_lower.c) reads the
 * present inputs from their views (or those the family names), calls emit, and writes each
 * present output, rounded to its dtype. */
#ifndef TPU_PJRT_FAMILY_H
#define TPU_PJRT_FAMILY_H

#include <stdbool.h>
#include <stddef.h>

#include "drivers/pjrt/tpu_pjrt_hlo.h"
#include "drivers/pjrt/tpu_pjrt_lower_elementwise.h"
#include "ops/tpu_op.h"

/* Operands and outputs one family call may have: INDEX has self, then an index and a view of
 * its dimension per indexed dimension. */
#define TPU_PJRT_FAMILY_MAX_IN (2 * TPU_MAX_DIMS + 1)
#define TPU_PJRT_FAMILY_MAX_OUT 5
/* Checks one call may make: an error whose message depends on the values takes one each. */
#define TPU_PJRT_FAMILY_MAX_CHECKS 3

typedef struct tpu_pjrt_family {
  /* Whether the call lowers (its op, operands' ranks and dtypes). */
  bool (*supports)(const tpu_op_call *call);
  /* Whether tensor i of a supported call is absent (an empty optional operand or output): not
   * read, not written. NULL: every tensor is present. */
  bool (*absent)(const tpu_op_call *call, int i);
  /* Whether present output k is also read (running statistics updated in place): its contents
   * before the call are then in[n_inputs + k]. NULL: no output is. */
  bool (*reads_output)(const tpu_op_call *call, int k);
  /* Whether present tensor i of a supported call is read (and written) through another view of
   * its storage, *t, than its own (INDEX and INDEX_PUT carry self restrided, stride 0 across the
   * indexed positions, and read it whole). NULL: every tensor through its own view. */
  bool (*view)(const tpu_op_call *call, int i, tpu_tensor *t);
  /* out[k], the value of each present output k (in any floating or integer type), from in[i], the
   * present inputs as read from their views (or view's). bad[c] receives the uint8 scalar flag
   * of each check c the call makes (message says which), nonzero when the input was invalid. */
  void (*emit)(tpu_hlo *h, const tpu_op_call *call, const tpu_hlo_value *in,
               tpu_pjrt_scalar_fn scalar, void *ctx, tpu_hlo_value *out, tpu_hlo_value *bad);
  /* Whether the call makes check c (0 <= c < TPU_PJRT_FAMILY_MAX_CHECKS; a call's checks are
   * numbered from 0): then buf receives the error of a run whose flag c is set, and *code its
   * status (TPU_ERR_INDEX when left as it is). The first flag set, in order of c, fails the run.
   * NULL: the family never checks. */
  bool (*message)(const tpu_op_call *call, int check, char *buf, size_t len, tpu_status *code);
} tpu_pjrt_family;

extern const tpu_pjrt_family tpu_pjrt_index_family;     /* tpu_pjrt_lower_index.c */
extern const tpu_pjrt_family tpu_pjrt_advanced_index_family; /* tpu_pjrt_lower_index_advanced.c */
extern const tpu_pjrt_family tpu_pjrt_mask_family;      /* tpu_pjrt_lower_mask.c */
extern const tpu_pjrt_family tpu_pjrt_trilu_family;     /* tpu_pjrt_lower_index.c */
extern const tpu_pjrt_family tpu_pjrt_norm_family;      /* tpu_pjrt_lower_norm.c */
extern const tpu_pjrt_family tpu_pjrt_nn_family;        /* tpu_pjrt_lower_nn.c */
extern const tpu_pjrt_family tpu_pjrt_loss_family;      /* tpu_pjrt_lower_nn_loss.c */
extern const tpu_pjrt_family tpu_pjrt_embedding_bag_family; /* tpu_pjrt_lower_embedding_bag.c */
extern const tpu_pjrt_family tpu_pjrt_attention_family; /* tpu_pjrt_lower_attention.c */
extern const tpu_pjrt_family tpu_pjrt_random_family;    /* tpu_pjrt_lower_random.c */
extern const tpu_pjrt_family tpu_pjrt_multinomial_family; /* tpu_pjrt_lower_multinomial.c */
extern const tpu_pjrt_family tpu_pjrt_isin_family;      /* tpu_pjrt_lower_isin.c */
extern const tpu_pjrt_family tpu_pjrt_rnn_family;       /* tpu_pjrt_lower_rnn.c */
extern const tpu_pjrt_family tpu_pjrt_conv_family;      /* tpu_pjrt_lower_conv.c */
extern const tpu_pjrt_family tpu_pjrt_pool_family;      /* tpu_pjrt_lower_pool.c */
extern const tpu_pjrt_family tpu_pjrt_batch_norm_family; /* tpu_pjrt_lower_norm_batch.c */
extern const tpu_pjrt_family tpu_pjrt_reduce_pick_family; /* tpu_pjrt_lower_reduce_pick.c */
extern const tpu_pjrt_family tpu_pjrt_reduce_stats_family; /* tpu_pjrt_lower_reduce_stats.c */
extern const tpu_pjrt_family tpu_pjrt_optim_family;      /* tpu_pjrt_lower_optim.c */
extern const tpu_pjrt_family tpu_pjrt_sort_family;       /* tpu_pjrt_lower_sort.c */
extern const tpu_pjrt_family tpu_pjrt_special_family;    /* tpu_pjrt_lower_special.c */
extern const tpu_pjrt_family tpu_pjrt_scan_family;       /* tpu_pjrt_lower_scan.c */
extern const tpu_pjrt_family tpu_pjrt_vision_family;     /* tpu_pjrt_lower_vision.c */
extern const tpu_pjrt_family tpu_pjrt_linalg_family;     /* tpu_pjrt_lower_linalg.c */

/* The family whose emitter lowers `call`, or NULL. */
const tpu_pjrt_family *tpu_pjrt_family_of(const tpu_op_call *call);

#endif
