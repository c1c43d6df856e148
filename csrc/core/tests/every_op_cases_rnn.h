/* Cases of the rnn family (ops/tpu_ops_rnn.h has the call layouts): the fused LSTM and GRU cells
 * with and without biases, and their backward (LSTM's with both output gradients and with the
 * cell's alone). The backward reads workspaces whose activated gates lie in (0, 1), as the forward
 * leaves them. */
#ifndef EVERY_OP_CASES_RNN_H
#define EVERY_OP_CASES_RNN_H

#include "every_op_case.h"

static const op_case rnn_cases[] = {
    {CASE(LSTM_CELL, "float32 with biases", 5, 3),
     .tensors = {{F32(3, 32)}, {F32(3, 32)}, {F32(3, 8)}, {F32(32)}, {F32(32)}, {F32(3, 8)},
                 {F32(3, 8)}, {F32(3, 32)}}},
    {CASE(LSTM_CELL, "bfloat16 without biases", 3, 3),
     .tensors = {{BF16(2, 16)}, {BF16(2, 16)}, {BF16(2, 4)}, {BF16(2, 4)}, {BF16(2, 4)},
                 {BF16(2, 16)}}},
    {CASE(LSTM_CELL_BACKWARD, "float32, both gradients and the bias", 5, 3),
     .scalars = {{.u = TPU_RNN_GRAD_HY | TPU_RNN_GRAD_CY}},
     .tensors = {{F32(3, 8)}, {F32(3, 8)}, {F32(3, 8)}, {F32(3, 8)},
                 {F32(3, 32), RANGE(0.05, 0.95)}, {F32(3, 32)}, {F32(3, 8)}, {F32(32)}}},
    {CASE(LSTM_CELL_BACKWARD, "float64, the cell gradient only", 4, 2),
     .scalars = {{.u = TPU_RNN_GRAD_CY}},
     .tensors = {{F64(2, 5)}, {F64(2, 5)}, {F64(2, 5)}, {F64(2, 20), RANGE(0.05, 0.95)},
                 {F64(2, 20)}, {F64(2, 5)}}},
    {CASE(GRU_CELL, "float32 with biases", 5, 2),
     .tensors = {{F32(3, 24)}, {F32(3, 24)}, {F32(3, 8)}, {F32(24)}, {F32(24)}, {F32(3, 8)},
                 {F32(3, 40)}}},
    {CASE(GRU_CELL_BACKWARD, "float32 with bias gradients", 2, 5),
     .tensors = {{F32(3, 8)}, {F32(3, 40), RANGE(0.05, 0.95)}, {F32(3, 24)}, {F32(3, 24)},
                 {F32(3, 8)}, {F32(24)}, {F32(24)}}},
};

#endif
