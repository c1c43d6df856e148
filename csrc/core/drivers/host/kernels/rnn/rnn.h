/* Private to the rnn kernels (kernels/rnn/): the matrix views and the job the fused cells share,
 * and the float32 rows (rnn_cells_f32.c) that the cells run instead of their general loops when
 * every operand is float32 with unit column stride and no output overlaps an input. */
#ifndef TPU_HOST_KERNELS_RNN_H
#define TPU_HOST_KERNELS_RNN_H

#include <stdbool.h>
#include <stdint.h>

#include "base/tpu_dtype.h"

/* A matrix of any floating dtype; a 1-d vector has rs 0. data is NULL for an absent operand. */
typedef struct rnn_mat {
  char *data;
  tpu_dtype dtype;
  int64_t es, rs, cs; /* bytes per element; element strides */
} rnn_mat;

/* One cell call: its inputs and outputs in call order (absent optional ones have NULL data),
 * `rows` rows of `hidden` units; `f32` picks the float32 rows. */
typedef struct rnn_cell_job {
  rnn_mat in[5], out[5];
  int64_t rows, hidden;
  bool f32;
} rnn_cell_job;

/* Rows [begin, end) of each cell op in float32, operands as in rnn_cell_job (the layouts of
 * ops/tpu_ops_rnn.h); the bias gradients are left to the caller. */
void tpu_rnn_lstm_rows_f32(const rnn_cell_job *j, int64_t begin, int64_t end);
void tpu_rnn_lstm_backward_rows_f32(const rnn_cell_job *j, int64_t begin, int64_t end);
void tpu_rnn_gru_rows_f32(const rnn_cell_job *j, int64_t begin, int64_t end);
void tpu_rnn_gru_backward_rows_f32(const rnn_cell_job *j, int64_t begin, int64_t end);

/* The column sums of float32 src (rows x cols) into dst, each summed in double in row order as
 * rnn_cells.c sums them; false (nothing written) when out of memory. */
bool tpu_rnn_column_sums_f32(const rnn_mat *src, const rnn_mat *dst, int64_t rows, int64_t cols);

#endif
