/* Allocation failures on demand, for test_fault_injection (built with TPU_FAULT_INJECTION): the
 * program is linked with -Wl,--wrap for every allocation function the core and its drivers call
 * (CMakeLists.txt lists them), so each of their calls comes here first. While armed, the wrappers
 * count the calls of every thread, and the one numbered `target` fails as the real function fails
 * when memory runs out. Included by that one program. */
#ifndef TPU_TEST_FAULT_H
#define TPU_TEST_FAULT_H

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/common_interface_defs.h>
#endif

static atomic_bool fault_armed;
static atomic_long fault_calls;  /* allocations since fault_arm */
static atomic_long fault_target; /* the allocation that fails, counted from 1; 0: none */
static atomic_bool fault_fired;

/* Counts from here, failing allocation `target` (0: none, only counting). */
static inline void fault_arm(long target) {
  atomic_store(&fault_calls, 0);
  atomic_store(&fault_target, target);
  atomic_store(&fault_fired, false);
  atomic_store(&fault_armed, true);
}

/* Stops counting and failing; returns the allocations counted. */
static inline long fault_disarm(void) {
  atomic_store(&fault_armed, false);
  return atomic_load(&fault_calls);
}

/* Whether the calling allocation is the one to fail. With FAULT_TRACE set (and ASan), prints
 * where it is. */
static bool fault_now(void) {
  if (!atomic_load(&fault_armed))
    return false;
  if (atomic_fetch_add(&fault_calls, 1) + 1 != atomic_load(&fault_target))
    return false;
  atomic_store(&fault_fired, true);
#if defined(__SANITIZE_ADDRESS__)
  if (getenv("FAULT_TRACE"))
    __sanitizer_print_stack_trace();
#endif
  return true;
}

/* The real functions (the linker's __real_ names) and their wrappers; prototypes first, as
 * nothing else declares them. */
void *__real_malloc(size_t n);
void *__real_calloc(size_t count, size_t n);
void *__real_realloc(void *p, size_t n);
void *__real_aligned_alloc(size_t align, size_t n);
char *__real_strdup(const char *s);
FILE *__real_open_memstream(char **buf, size_t *len);
void *__real_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t offset);
int __real_pthread_create(pthread_t *thread, const pthread_attr_t *attr, void *(*fn)(void *),
                          void *arg);
void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t count, size_t n);
void *__wrap_realloc(void *p, size_t n);
void *__wrap_aligned_alloc(size_t align, size_t n);
char *__wrap_strdup(const char *s);
FILE *__wrap_open_memstream(char **buf, size_t *len);
void *__wrap_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t offset);
int __wrap_pthread_create(pthread_t *thread, const pthread_attr_t *attr, void *(*fn)(void *),
                          void *arg);

void *__wrap_malloc(size_t n) {
  if (fault_now()) {
    errno = ENOMEM;
    return NULL;
  }
  return __real_malloc(n);
}

void *__wrap_calloc(size_t count, size_t n) {
  if (fault_now()) {
    errno = ENOMEM;
    return NULL;
  }
  return __real_calloc(count, n);
}

void *__wrap_realloc(void *p, size_t n) {
  if (fault_now()) {
    errno = ENOMEM;
    return NULL; /* `p` stays valid, as when realloc fails */
  }
  return __real_realloc(p, n);
}

void *__wrap_aligned_alloc(size_t align, size_t n) {
  if (fault_now()) {
    errno = ENOMEM;
    return NULL;
  }
  return __real_aligned_alloc(align, n);
}

char *__wrap_strdup(const char *s) {
  if (fault_now()) {
    errno = ENOMEM;
    return NULL;
  }
  return __real_strdup(s);
}

FILE *__wrap_open_memstream(char **buf, size_t *len) {
  if (fault_now()) {
    errno = ENOMEM;
    return NULL;
  }
  return __real_open_memstream(buf, len);
}

/* Reservations of address space (mem/tpu_heap.c). */
void *__wrap_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t offset) {
  if (fault_now()) {
    errno = ENOMEM;
    return MAP_FAILED;
  }
  return __real_mmap(addr, len, prot, flags, fd, offset);
}

/* A thread is an allocation too: its stack (stream workers, the host driver's pool). */
int __wrap_pthread_create(pthread_t *thread, const pthread_attr_t *attr, void *(*fn)(void *),
                          void *arg) {
  if (fault_now())
    return EAGAIN;
  return __real_pthread_create(thread, attr, fn, arg);
}

#endif
