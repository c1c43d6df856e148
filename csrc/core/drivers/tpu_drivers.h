/* The built-in drivers: the layer above the core and the drivers that knows them all. Whatever
 * runs the core (the PyTorch binding, the C tests) registers them once before the first tpu call;
 * the core then selects one by TORCH_TPU_DRIVER (drivers/tpu_driver.h). */
#ifndef TPU_DRIVERS_H
#define TPU_DRIVERS_H

#include "base/tpu_status.h"

/* Registers every built-in driver (drivers/tpu_drivers.c lists them); safe to call again. Starts
 * nothing and reads no environment. */
tpu_status tpu_drivers_register_builtin(void);

#endif
