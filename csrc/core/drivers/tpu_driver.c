#include "drivers/tpu_driver.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "base/tpu_env.h"

static pthread_mutex_t registry_mu = PTHREAD_MUTEX_INITIALIZER;
static const tpu_driver_i *registered[TPU_MAX_DRIVERS];
static int n_registered;

/* The selected driver; written once under registry_mu, read without it. */
static const tpu_driver_i *_Atomic active;
/* Why the last selection failed, for tpu_driver_error on any thread. */
static tpu_status selection_status = TPU_OK;
static char selection_message[512];

static bool complete(const tpu_driver_i *d) {
  return d->name && d->device_count && d->device_props && d->arena_create && d->op_run &&
         d->graph_compile && d->graph_free && d->graph_run && !d->device_wait == !d->device_idle;
}

tpu_status tpu_driver_register(const tpu_driver_i *driver) {
  if (!driver || !complete(driver))
    return tpu_error(TPU_ERR_VALUE, "a tpu driver needs a name and every required entry");
  pthread_mutex_lock(&registry_mu);
  tpu_status st = TPU_OK;
  const tpu_driver_i *current = atomic_load(&active);
  int slot = 0;
  while (slot < n_registered && strcmp(registered[slot]->name, driver->name) != 0)
    slot++;
  if (slot < n_registered && registered[slot] == driver)
    st = TPU_OK; /* registered already */
  else if (current && strcmp(current->name, driver->name) == 0)
    st = tpu_error(TPU_ERR_RUNTIME, "the tpu driver '%s' is in use", driver->name);
  else if (slot == TPU_MAX_DRIVERS)
    st = tpu_error(TPU_ERR_VALUE, "more than %d tpu drivers registered", TPU_MAX_DRIVERS);
  else
    registered[slot] = driver;
  if (st == TPU_OK && slot == n_registered)
    n_registered++;
  pthread_mutex_unlock(&registry_mu);
  return st;
}

/* Lists the registered names into buf: "host, counting". */
static void list_names(char *buf, size_t len) {
  buf[0] = '\0';
  for (int i = 0; i < n_registered; i++) {
    size_t used = strlen(buf);
    snprintf(buf + used, len - used, "%s%s", i ? ", " : "", registered[i]->name);
  }
}

/* With registry_mu held: selects `name`, or records why not. */
static tpu_status select_locked(const char *name) {
  const tpu_driver_i *current = atomic_load(&active);
  if (current)
    return strcmp(current->name, name) == 0
               ? TPU_OK
               : tpu_error(TPU_ERR_RUNTIME, "the tpu driver '%s' is in use; cannot switch to '%s'",
                           current->name, name);
  for (int i = 0; i < n_registered; i++) {
    if (strcmp(registered[i]->name, name) == 0) {
      tpu_status st = registered[i]->init ? registered[i]->init() : TPU_OK;
      if (st != TPU_OK) {
        snprintf(selection_message, sizeof selection_message, "TORCH_TPU_DRIVER=%s: %s", name,
                 tpu_last_error());
        selection_status = st;
        return tpu_error(st, "%s", selection_message);
      }
      atomic_store(&active, registered[i]);
      selection_status = TPU_OK;
      return TPU_OK;
    }
  }
  char names[256];
  list_names(names, sizeof names);
  snprintf(selection_message, sizeof selection_message,
           "TORCH_TPU_DRIVER=%s: no tpu driver of that name (registered: %s)", name,
           n_registered ? names : "none");
  selection_status = TPU_ERR_RUNTIME;
  return tpu_error(selection_status, "%s", selection_message);
}

/* With registry_mu held: TORCH_TPU_DRIVER, else the first registered driver. */
static const char *requested_name(void) {
  const char *name = tpu_env_get("TORCH_TPU_DRIVER");
  return name ? name : n_registered ? registered[0]->name : "host";
}

tpu_status tpu_driver_select(const char *name) {
  pthread_mutex_lock(&registry_mu);
  tpu_status st = select_locked(name ? name : requested_name());
  pthread_mutex_unlock(&registry_mu);
  return st;
}

const tpu_driver_i *tpu_driver(void) {
  const tpu_driver_i *d = atomic_load(&active);
  if (d)
    return d;
  /* Not selected yet, or selection failed: try (again: a driver may have been registered since). */
  pthread_mutex_lock(&registry_mu);
  select_locked(requested_name());
  d = atomic_load(&active);
  pthread_mutex_unlock(&registry_mu);
  return d;
}

tpu_status tpu_driver_error(void) {
  if (tpu_driver())
    return TPU_OK;
  pthread_mutex_lock(&registry_mu);
  tpu_status st = tpu_error(selection_status, "%s", selection_message);
  pthread_mutex_unlock(&registry_mu);
  return st;
}

const tpu_driver_i *tpu_driver_find(const char *name) {
  pthread_mutex_lock(&registry_mu);
  const tpu_driver_i *found = NULL;
  for (int i = 0; i < n_registered && !found; i++)
    if (strcmp(registered[i]->name, name) == 0)
      found = registered[i];
  pthread_mutex_unlock(&registry_mu);
  return found;
}

tpu_proc tpu_driver_proc(const char *name) {
  const tpu_driver_i *d = tpu_driver();
  return d && d->get_proc_address ? d->get_proc_address(name) : NULL;
}
