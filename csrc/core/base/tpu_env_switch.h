/* A boolean setting that starts from a registered environment variable and can be changed at run
 * time (from Python): debug mode's checks are switched this way. Reading it costs one atomic load
 * once the variable has been read. C only (C11 atomics), never included by the C++ binding. */
#ifndef TPU_ENV_SWITCH_H
#define TPU_ENV_SWITCH_H

#include <stdatomic.h>
#include <stdbool.h>

typedef struct tpu_env_switch {
  const char *name; /* a variable registered in base/tpu_env.c */
  atomic_int state; /* -1 until the variable is read, then 0 or 1 */
} tpu_env_switch;

/* Initializer: `static tpu_env_switch s = TPU_ENV_SWITCH("TORCH_TPU_...");`. */
#define TPU_ENV_SWITCH(var) {(var), -1}

/* The setting: the last value set, else the variable read as a flag (false when unset). */
bool tpu_env_switch_get(tpu_env_switch *s);

/* Overrides the variable from now on. */
void tpu_env_switch_set(tpu_env_switch *s, bool on);

#endif
