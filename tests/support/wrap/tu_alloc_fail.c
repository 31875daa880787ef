/* The --wrap allocator shim of tu_alloc_fail.h. Not in tarn_testsupport (which
 * every test links): only a test marked ctest-wrap-alloc gets it, with the
 * link options that route libtarn's allocations here. */
#include "tu_alloc_fail.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t size);
void *__real_realloc(void *p, size_t n);
char *__real_strdup(const char *s);
char *__real_strndup(const char *s, size_t n);
int __real_posix_memalign(void **p, size_t align, size_t n);

void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t n, size_t size);
void *__wrap_realloc(void *p, size_t n);
char *__wrap_strdup(const char *s);
char *__wrap_strndup(const char *s, size_t n);
int __wrap_posix_memalign(void **p, size_t align, size_t n);

static uint64_t calls, fail_at;
static int failed, persist;
static size_t limit;

void tu_alloc_limit(size_t max) { __atomic_store_n(&limit, max, __ATOMIC_SEQ_CST); }

/* A request above the bound (calloc's product checked for overflow first). */
static int too_big(size_t n, size_t size) {
  size_t max = __atomic_load_n(&limit, __ATOMIC_SEQ_CST);
  return max && (size && n > max / size);
}

void tu_alloc_fail_at(uint64_t k) {
  __atomic_store_n(&fail_at, 0, __ATOMIC_SEQ_CST);
  __atomic_store_n(&failed, 0, __ATOMIC_SEQ_CST);
  __atomic_store_n(&calls, 0, __ATOMIC_SEQ_CST);
  __atomic_store_n(&persist, 0, __ATOMIC_SEQ_CST);
  __atomic_store_n(&fail_at, k, __ATOMIC_SEQ_CST);
}

void tu_alloc_fail_from(uint64_t k) {
  tu_alloc_fail_at(0);
  __atomic_store_n(&persist, 1, __ATOMIC_SEQ_CST);
  __atomic_store_n(&fail_at, k, __ATOMIC_SEQ_CST);
}

uint64_t tu_alloc_calls(void) { return __atomic_load_n(&calls, __ATOMIC_SEQ_CST); }

int tu_alloc_failed(void) { return __atomic_load_n(&failed, __ATOMIC_SEQ_CST); }

/* Counts one allocation; true when it is the one to fail. */
static int should_fail(void) {
  uint64_t n = __atomic_add_fetch(&calls, 1, __ATOMIC_SEQ_CST);
  uint64_t at = __atomic_load_n(&fail_at, __ATOMIC_SEQ_CST);
  if (at == 0 || n < at || (n > at && !__atomic_load_n(&persist, __ATOMIC_SEQ_CST)))
    return 0;
  __atomic_store_n(&failed, 1, __ATOMIC_SEQ_CST);
  return 1;
}

void *__wrap_malloc(size_t n) {
  if (should_fail() || too_big(n, 1))
    return errno = ENOMEM, NULL;
  return __real_malloc(n);
}

void *__wrap_calloc(size_t n, size_t size) {
  if (should_fail() || too_big(n, size))
    return errno = ENOMEM, NULL;
  return __real_calloc(n, size);
}

void *__wrap_realloc(void *p, size_t n) {
  if (should_fail() || too_big(n, 1))
    return errno = ENOMEM, NULL; /* p stays allocated, as realloc's does */
  return __real_realloc(p, n);
}

char *__wrap_strdup(const char *s) {
  if (should_fail())
    return errno = ENOMEM, NULL;
  return __real_strdup(s);
}

char *__wrap_strndup(const char *s, size_t n) {
  if (should_fail())
    return errno = ENOMEM, NULL;
  return __real_strndup(s, n);
}

int __wrap_posix_memalign(void **p, size_t align, size_t n) {
  if (should_fail() || too_big(n, 1))
    return ENOMEM;
  return __real_posix_memalign(p, align, n);
}
