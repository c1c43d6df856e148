/* The one registry of environment variables the project reads: each entry carries its meaning,
 * default and stability stage, so documentation and `torch.tpu.env_vars()` come from here. */
#ifndef TPU_ENV_H
#define TPU_ENV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum tpu_env_stage {
  TPU_ENV_STABLE,       /* kept compatible across releases */
  TPU_ENV_EXPERIMENTAL, /* may change or go away */
  TPU_ENV_TESTING,      /* for the project's own tests and benchmarks */
} tpu_env_stage;

typedef struct tpu_env_var {
  const char *name;
  const char *default_value;
  const char *meaning;
  tpu_env_stage stage;
} tpu_env_var;

/* All registered variables; *count receives their number. */
const tpu_env_var *tpu_env_list(size_t *count);

/* The value of a registered variable, or NULL when unset or empty. Aborts on an unregistered name,
 * which is a programming error caught by the tests. */
const char *tpu_env_get(const char *name);

/* A registered variable read as a boolean ("1", "true", "yes", "on"), or `fallback` when unset. */
bool tpu_env_flag(const char *name, bool fallback);

/* A registered variable read as an integer, or `fallback` when unset or malformed. */
int64_t tpu_env_int(const char *name, int64_t fallback);

/* Parses a byte size such as "512MiB", "2GB", "1G" or "4096" (binary multiples for K/M/G/T);
 * returns false when malformed. */
bool tpu_parse_bytes(const char *text, uint64_t *out);

/* Name of a stage: "stable", "experimental" or "testing". */
const char *tpu_env_stage_name(tpu_env_stage stage);

#endif
