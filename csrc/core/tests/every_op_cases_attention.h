/* Cases of the attention family (ops/tpu_ops_attention.h has the call layout): grouped-query
 * heads, the causal flag, a boolean mask broadcast over heads and an additive mask with its
 * gradient. The backward's saved logsumexp is drawn near what the forward gives for these sizes
 * (|q kᵀ scale| < 3 over about 10 keys), so its probabilities stay in range. */
#ifndef EVERY_OP_CASES_ATTENTION_H
#define EVERY_OP_CASES_ATTENTION_H

#include "every_op_case.h"

static const op_case attention_cases[] = {
    {CASE(SDPA, "float32, grouped heads, causal", 3, 2),
     .scalars = {{.f = 0.35}, {.i = TPU_SDPA_CAUSAL}},
     .tensors = {{F32(2, 4, 10, 8)}, {F32(2, 2, 12, 8)}, {F32(2, 2, 12, 8)}, {F32(2, 4, 10, 8)},
                 {F32(2, 4, 10)}}},
    {CASE(SDPA, "bfloat16, transposed q, a bool mask broadcast over heads", 4, 2),
     .scalars = {{.f = 0.25}, {.i = 0}},
     .tensors = {{BF16(1, 2, 9, 16), TRANSPOSED}, {BF16(1, 2, 11, 16)}, {BF16(1, 2, 11, 8)},
                 {BOOL_(1, 2, 9, 11), VIEW(0, 99, 0, 11, 1)}, {BF16(1, 2, 9, 8)}, {F32(1, 2, 9)}}},
    {CASE(SDPA_BACKWARD, "float32, grouped heads, causal", 6, 3),
     .scalars = {{.f = 0.35}, {.i = TPU_SDPA_CAUSAL}},
     .tensors = {{F32(2, 4, 10, 8)}, {F32(2, 4, 10, 8)}, {F32(2, 2, 12, 8)}, {F32(2, 2, 12, 8)},
                 {F32(2, 4, 10, 8)}, {F32(2, 4, 10), RANGE(2, 4)}, {F32(2, 4, 10, 8)},
                 {F32(2, 2, 12, 8)}, {F32(2, 2, 12, 8)}}},
    {CASE(SDPA_BACKWARD, "float32 with an additive mask and its gradient", 7, 4),
     .scalars = {{.f = 0.3}, {.i = 0}},
     .tensors = {{F32(1, 2, 6, 8)}, {F32(1, 2, 6, 8)}, {F32(1, 2, 7, 8)}, {F32(1, 2, 7, 8)},
                 {F32(1, 2, 6, 8)}, {F32(1, 2, 6), RANGE(2, 3)}, {F32(1, 2, 6, 7), RANGE(-1, 0)},
                 {F32(1, 2, 6, 8)}, {F32(1, 2, 7, 8)}, {F32(1, 2, 7, 8)}, {F32(1, 2, 6, 7)}}},
};

#endif
