/* The linalg family's ops: X(ID, "name", attribute scalars) per op; see ops/tpu_op.h. Dense
 * factorizations and solves of float32 and float64 matrices, batched over leading dimensions:
 * a matrix is a tensor's last two dimensions, the others are its batch (equal in every tensor
 * of a call: the caller expands broadcast batches), and any strides are accepted. The host runs
 * them through LAPACK; a status (info) output holds LAPACK's info per matrix, so a caller that
 * must raise PyTorch's errors reads it back, as CUDA does.
 *
 * CHOLESKY: tensors[0] = A (..., n, n), tensors[1] = L (A's sizes and dtype), tensors[2] = info
 *   (int32, the batch's sizes). scalars[0].i = 1 for upper, else 0. Reads only the lower (upper)
 *   triangle of A as that of a symmetric positive-definite matrix and writes its Cholesky factor
 *   L with A = L L^T (U with A = U^T U), zeros in the other triangle; info is 0, or k when the
 *   leading minor of order k is not positive-definite, and then L's values are unspecified.
 * TRIANGULAR_SOLVE: tensors[0] = A (..., n, n), tensors[1] = B (..., n, k) or (..., k, n) when
 *   right, tensors[2] = X (B's sizes and dtype). scalars[0].i = upper, scalars[1].i = left,
 *   scalars[2].i = unit diagonal (each 1 or 0). Solves A X = B (left) or X A = B with A read as
 *   the lower (upper) triangle of A, its diagonal taken as ones when unit; a zero on the diagonal
 *   gives infinities and NaN as the substitution does, never an error.
 * LU_FACTOR: tensors[0] = A (..., m, n), tensors[1] = LU (A's sizes and dtype), tensors[2] =
 *   pivots (int32, (..., min(m, n))), tensors[3] = info (int32, the batch's sizes). LU with
 *   partial pivoting (LAPACK's getrf): A = P L U, L unit lower triangular below the diagonal of LU
 *   and U on and above it; pivots are 1-based rows swapped in turn with row i; info is 0, or k
 *   when U[k-1][k-1] is exactly zero (the factorization completes all the same).
 * LU_SOLVE: tensors[0] = LU (..., n, n), tensors[1] = pivots (int32, (..., n)), tensors[2] = B
 *   (..., n, k), tensors[3] = X (B's sizes and dtype). scalars[0].i = 1 to solve A^T X = B, else
 *   A X = B, A being what LU_FACTOR factored into LU and pivots (LAPACK's getrs).
 * EIGH: tensors[0] = A (..., n, n), tensors[1] = eigenvalues ((..., n), A's dtype), tensors[2] =
 *   eigenvectors (A's sizes and dtype), tensors[3] = info (int32, the batch's sizes).
 *   scalars[0].i = 1 to read the upper triangle, else the lower. The eigenvalues of the symmetric
 *   matrix with that triangle, ascending, and orthonormal eigenvectors as columns (each up to
 *   sign); info is 0, or nonzero when the algorithm did not converge. */
#ifndef TPU_OPS_LINALG_H
#define TPU_OPS_LINALG_H

#define TPU_OPS_LINALG(X)                                                                          \
  X(CHOLESKY, "cholesky", TPU_ATTRS_BELOW(1))                                                      \
  X(TRIANGULAR_SOLVE, "triangular_solve", TPU_ATTRS_BELOW(3))                                      \
  X(LU_FACTOR, "lu_factor", 0)                                                                     \
  X(LU_SOLVE, "lu_solve", TPU_ATTRS_BELOW(1))                                                      \
  X(EIGH, "eigh", TPU_ATTRS_BELOW(1))

#endif
