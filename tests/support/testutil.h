/* Helpers shared by the cmocka tests. Include after <cmocka.h>'s prerequisites. */
#ifndef TARN_TESTUTIL_H
#define TARN_TESTUTIL_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

/* Parses hex (spaces allowed) into a malloc'd buffer; fails the test on bad hex. */
uint8_t *tu_hex(const char *hex, size_t *len);
/* Asserts that n bytes at p equal the hex string. */
void tu_assert_hex(const uint8_t *p, size_t n, const char *hex);
/* A fresh empty directory under $TMPDIR; the caller frees the string. */
char *tu_tmpdir(const char *tag);
/* rm -rf */
void tu_rmtree(const char *path);
/* A deterministic PRNG for tests (xorshift64*); seed 0 is replaced by 1. */
uint64_t tu_rand(uint64_t *state);
/* True when running in CI (CI=true): tests that need a server must then fail, not skip. */
int tu_in_ci(void);
/* Reads an environment variable, or NULL; in CI a missing required one fails the test. */
const char *tu_env_required(const char *name);
/* The library's wall clock (util/clock.h) moved by tu_skew ms: time still
 * passes (writers' timers need it), and a test runs a job at the time it
 * names. The monotonic clock and sleeping stay real. Install once, first. */
extern int64_t tu_skew;
void tu_skew_clock(void);
int64_t tu_real_ms(void);

#endif
