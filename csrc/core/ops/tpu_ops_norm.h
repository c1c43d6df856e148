/* The norm family's ops: X(ID, "name", host kernel) per op; see ops/tpu_op.h. */
#ifndef TPU_OPS_NORM_H
#define TPU_OPS_NORM_H

#define TPU_OPS_NORM(X)

#endif
