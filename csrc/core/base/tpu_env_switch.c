#include "base/tpu_env_switch.h"

#include "base/tpu_env.h"

bool tpu_env_switch_get(tpu_env_switch *s) {
  int v = atomic_load_explicit(&s->state, memory_order_relaxed);
  if (v < 0) {
    /* First read: a racing tpu_env_switch_set wins over the environment. */
    int expected = -1;
    atomic_compare_exchange_strong(&s->state, &expected, tpu_env_flag(s->name, false) ? 1 : 0);
    v = atomic_load(&s->state);
  }
  return v == 1;
}

void tpu_env_switch_set(tpu_env_switch *s, bool on) { atomic_store(&s->state, on ? 1 : 0); }
