/* Cases of the optim family (ops/tpu_ops_optim.h has the call layouts): optimizer steps update
 * their outputs in place, so the harness copies the outputs in as well. The cases run a plain
 * AdamW step and one with every optional tensor, SGD with and without tensors, the gradient
 * scaler's unscale over a gradient with infinities, and its scale update both ways. Second
 * moments are drawn non-negative and found_inf 0 where the step must happen. */
#ifndef EVERY_OP_CASES_OPTIM_H
#define EVERY_OP_CASES_OPTIM_H

#include "every_op_case.h"

static const op_case optim_cases[] = {
    {CASE(FUSED_ADAM, "float32 AdamW", 1, 4),
     .scalars = {{.f = 1e-3}, {.f = 0.9}, {.f = 0.999}, {.f = 0.01}, {.f = 1e-8},
                 {.u = TPU_ADAM_DECOUPLED}},
     .tensors = {{F32(1), CONST(3)}, {F32(300)}, {F32(300)}, {F32(300)},
                 {F32(300), RANGE(0, 0.5)}}},
    {CASE(FUSED_ADAM, "bfloat16 amsgrad, maximize, lr, grad_scale and found_inf tensors", 4, 5),
     .scalars = {{.f = 0}, {.f = 0.8}, {.f = 0.99}, {.f = 0.1}, {.f = 1e-6},
                 {.u = TPU_ADAM_AMSGRAD | TPU_ADAM_MAXIMIZE | TPU_ADAM_LR_TENSOR |
                       TPU_ADAM_GRAD_SCALE | TPU_ADAM_FOUND_INF}},
     .tensors = {{F32(1), CONST(5)}, {F32(1), CONST(0.01)}, {F32(1), CONST(4)}, {F32(1), CONST(0)},
                 {BF16(20, 30)}, {BF16(20, 30)}, {BF16(20, 30)}, {BF16(20, 30), RANGE(0, 0.5)},
                 {BF16(20, 30), RANGE(0, 0.5)}}},
    {CASE(FUSED_ADAM, "large float32 Adam", 1, 4),
     .scalars = {{.f = 1e-3}, {.f = 0.9}, {.f = 0.999}, {.f = 0}, {.f = 1e-8}, {.u = 0}},
     .tensors = {{F32(1), CONST(2)}, {F32(70000)}, {F32(70000)}, {F32(70000)},
                 {F32(70000), RANGE(0, 0.5)}}},
    {CASE(FUSED_SGD, "float32 Nesterov momentum", 0, 3),
     .scalars = {{.f = 0.1}, {.f = 1e-4}, {.f = 0.9}, {.f = 0}, {.u = TPU_SGD_NESTEROV}},
     .tensors = {{F32(400)}, {F32(400)}, {F32(400)}}},
    {CASE(FUSED_SGD, "float64 first step with lr and grad_scale tensors", 2, 3),
     .scalars = {{.f = 0}, {.f = 0}, {.f = 0.5}, {.f = 0.1},
                 {.u = TPU_SGD_FIRST_STEP | TPU_SGD_LR_TENSOR | TPU_SGD_GRAD_SCALE |
                       TPU_SGD_MAXIMIZE}},
     .tensors = {{F64(1), CONST(0.05)}, {F64(1), CONST(8)}, {F64(13, 17)}, {F64(13, 17)},
                 {F64(13, 17)}}},
    {CASE(FUSED_SGD, "float32 without momentum", 0, 2),
     .scalars = {{.f = 0.2}, {.f = 0.01}, {.f = 0}, {.f = 0}, {.u = 0}},
     .tensors = {{F32(250)}, {F32(250)}}},
    {CASE(AMP_UNSCALE, "float32 gradient with infinities", 1, 2),
     .tensors = {{F32(1), CONST(0.5)}, {F32(400), SPECIAL}, {F32(1), CONST(0)}}},
    {CASE(AMP_UNSCALE, "bfloat16 finite gradient", 1, 2),
     .tensors = {{F32(1), CONST(0.25)}, {BF16(10, 40)}, {F32(1), CONST(0)}}},
    {CASE(AMP_UPDATE_SCALE, "growth after good steps", 1, 2),
     .scalars = {{.f = 2}, {.f = 0.5}, {.i = 2}},
     .tensors = {{F32(1), CONST(0)}, {F32(1), CONST(1024)}, {I32(1), CONST(1)}}},
    {CASE(AMP_UPDATE_SCALE, "back-off on found_inf", 1, 2),
     .scalars = {{.f = 2}, {.f = 0.5}, {.i = 2}},
     .tensors = {{F32(1), CONST(1)}, {F32(1), CONST(1024)}, {I32(1), CONST(1)}}},
};

#endif
