#include "drivers/pjrt/tpu_pjrt_disk_cache.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/tpu_env.h"

/* Files start with this; a new layout changes it, so old files are misses. */
static const char magic[8] = {'T', 'P', 'U', 'X', 'L', 'A', '0', '1'};

static char dir[4096]; /* empty: the cache is off */
static atomic_bool warned;

uint64_t tpu_pjrt_hash(uint64_t h, const void *data, size_t len) {
  const unsigned char *p = data;
  for (size_t i = 0; i < len; i++)
    h = (h ^ p[i]) * 0x100000001b3ull;
  return h;
}

static void warn_once(const char *what, const char *path) {
  if (!atomic_exchange(&warned, true))
    fprintf(stderr, "torch_tpu: the PJRT disk cache cannot %s %s (%s); executables compile anew\n",
            what, path, strerror(errno));
}

/* mkdir -p: each missing component of `path` is made. */
static bool make_dirs(char *path) {
  for (char *p = path + 1;; p++) {
    if (*p != '/' && *p != '\0')
      continue;
    char c = *p;
    *p = '\0';
    bool ok = mkdir(path, 0755) == 0 || errno == EEXIST;
    *p = c;
    if (!ok || c == '\0')
      return ok;
  }
}

static bool base_dir(char *out, size_t len) {
  const char *set = tpu_env_get("TORCH_TPU_CACHE_DIR"), *xdg = getenv("XDG_CACHE_HOME"),
             *home = getenv("HOME");
  int n = set                 ? snprintf(out, len, "%s", set)
          : xdg && *xdg       ? snprintf(out, len, "%s/torch_tpu", xdg)
          : home && *home     ? snprintf(out, len, "%s/.cache/torch_tpu", home)
                              : -1;
  return n > 0 && (size_t)n < len;
}

void tpu_pjrt_disk_cache_open(const tpu_pjrt_client *client, const char *plugin_path,
                              const char *platform) {
  char base[3072];
  struct stat st;
  dir[0] = '\0';
  if (!tpu_env_flag("TORCH_TPU_DISK_CACHE", true) ||
      !tpu_pjrt_executable_can_serialize(client->api) || !base_dir(base, sizeof base) ||
      stat(plugin_path, &st) != 0)
    return;
  uint64_t id = tpu_pjrt_hash(TPU_PJRT_HASH_SEED, magic, sizeof magic);
  id = tpu_pjrt_hash(id, plugin_path, strlen(plugin_path));
  id = tpu_pjrt_hash(id, &st.st_size, sizeof st.st_size);
  id = tpu_pjrt_hash(id, &st.st_mtime, sizeof st.st_mtime);
  id = tpu_pjrt_hash(id, platform, strlen(platform));
  size_t options_size;
  const char *options = tpu_pjrt_executable_options(&options_size);
  id = tpu_pjrt_hash(id, options, options_size);
  /* XLA reads its compiler options from XLA_FLAGS: other flags, other executables. */
  const char *xla_flags = getenv("XLA_FLAGS");
  if (xla_flags)
    id = tpu_pjrt_hash(id, xla_flags, strlen(xla_flags) + 1);
  char path[sizeof dir];
  snprintf(path, sizeof path, "%s/pjrt-%016llx", base, (unsigned long long)id);
  if (!make_dirs(path)) {
    warn_once("make the directory", path);
    return;
  }
  memcpy(dir, path, sizeof dir);
}

static void file_path(char *out, size_t len, uint64_t hash) {
  snprintf(out, len, "%s/%016llx.xla", dir, (unsigned long long)hash);
}

/* The whole file in a malloc'd buffer, or NULL. */
static char *read_file(const char *path, size_t *size) {
  FILE *f = fopen(path, "rb");
  if (!f)
    return NULL;
  char *data = NULL;
  long end = fseek(f, 0, SEEK_END) == 0 ? ftell(f) : -1;
  if (end > 0 && fseek(f, 0, SEEK_SET) == 0 && (data = malloc((size_t)end)) &&
      fread(data, 1, (size_t)end, f) != (size_t)end) {
    free(data);
    data = NULL;
  }
  fclose(f);
  *size = data ? (size_t)end : 0;
  return data;
}

/* The file's layout: magic, the text's length and the blob's (uint64, native order), text, blob. */
#define HEADER (sizeof magic + 2 * sizeof(uint64_t))

void tpu_pjrt_disk_cache_load(const tpu_pjrt_client *client, const char *text, size_t len,
                              uint64_t hash, tpu_pjrt_executable **out) {
  *out = NULL;
  if (!dir[0])
    return;
  char path[sizeof dir + 32];
  file_path(path, sizeof path, hash);
  size_t size;
  char *data = read_file(path, &size);
  if (!data)
    return;
  uint64_t text_len, blob_len;
  if (size >= HEADER) {
    memcpy(&text_len, data + sizeof magic, sizeof text_len);
    memcpy(&blob_len, data + sizeof magic + sizeof text_len, sizeof blob_len);
  }
  /* Another module of the same hash, or a file from another layout, is a miss. */
  if (size >= HEADER && memcmp(data, magic, sizeof magic) == 0 && text_len == len &&
      blob_len == size - HEADER - len && size - HEADER >= len &&
      memcmp(data + HEADER, text, len) == 0 &&
      tpu_pjrt_executable_deserialize(client, data + HEADER + len, blob_len, out) != TPU_OK)
    *out = NULL;
  free(data);
}

bool tpu_pjrt_disk_cache_store(const tpu_pjrt_executable *exe, const char *text, size_t len,
                               uint64_t hash) {
  char *blob;
  size_t blob_size;
  if (!dir[0] || tpu_pjrt_executable_serialize(exe, &blob, &blob_size) != TPU_OK)
    return false;
  char path[sizeof dir + 32], tmp[sizeof path + 32];
  file_path(path, sizeof path, hash);
  snprintf(tmp, sizeof tmp, "%s.%ld.tmp", path, (long)getpid());
  uint64_t lens[2] = {len, blob_size};
  FILE *f = fopen(tmp, "wb");
  bool ok = f && fwrite(magic, sizeof magic, 1, f) == 1 && fwrite(lens, sizeof lens, 1, f) == 1 &&
            fwrite(text, 1, len, f) == len && fwrite(blob, 1, blob_size, f) == blob_size;
  ok = f && fclose(f) == 0 && ok;
  /* rename is atomic: a reader sees the old file, the new one, or none. */
  ok = ok && rename(tmp, path) == 0;
  if (!ok) {
    warn_once("write", tmp);
    unlink(tmp);
  }
  free(blob);
  return ok;
}
