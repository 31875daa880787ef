/* Allocation-failure injection for tests, in the style of SQLite's and curl's
 * OOM tests: every allocation of an operation fails in turn.
 *
 * Only for a test whose file has the line  ctest-wrap-alloc  in a comment:
 * tests/CMakeLists.txt then links it with GNU ld's --wrap for malloc, calloc,
 * realloc, strdup, strndup and posix_memalign (the allocators libtarn's
 * objects call: `nm -u libtarn.a`) and adds support/wrap/tu_alloc_fail.c, so
 * those calls from libtarn's static objects (and the test's) go through the
 * counter here. Allocations inside shared libraries (zlib, protobuf-c, libc's
 * own) are not counted. ASan still sees every real allocation. */
#ifndef TARN_TU_ALLOC_FAIL_H
#define TARN_TU_ALLOC_FAIL_H

#include <stddef.h>
#include <stdint.h>

/* Resets the counter and arms it: the k-th allocation from now fails (once);
 * k = 0 disarms (allocations are still counted). Thread-safe: calls from
 * any thread count. */
void tu_alloc_fail_at(uint64_t k);
/* As tu_alloc_fail_at(k), but every allocation from the k-th on fails (the
 * "persistent" mode of SQLite's tests: error paths that allocate fail too). */
void tu_alloc_fail_from(uint64_t k);
/* Allocations counted since the last tu_alloc_fail_at(). */
uint64_t tu_alloc_calls(void);
/* Whether the armed failure happened since the last tu_alloc_fail_at(). */
int tu_alloc_failed(void);
/* From now on every single allocation of more than max bytes fails (a memory
 * bound, as a ulimit would set it, that shows a request sized by a count read
 * from untrusted bytes); 0 lifts the bound. Independent of the counter. */
void tu_alloc_limit(size_t max);

#endif
