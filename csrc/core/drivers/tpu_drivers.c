#include "drivers/tpu_drivers.h"

#include "drivers/host/host_driver.h"
#include "drivers/pjrt/tpu_pjrt_driver.h"
#include "drivers/tpu_driver.h"

/* The registry: one line per built-in driver. The first is the default of TORCH_TPU_DRIVER. */
static const tpu_driver_i *(*const builtin[])(void) = {
    tpu_host_driver,
    tpu_pjrt_driver,
};

tpu_status tpu_drivers_register_builtin(void) {
  for (size_t i = 0; i < sizeof builtin / sizeof builtin[0]; i++) {
    tpu_status st = tpu_driver_register(builtin[i]());
    if (st != TPU_OK)
      return st;
  }
  return TPU_OK;
}
