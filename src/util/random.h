/* Random bytes from the kernel, for names and tokens that must never repeat. */
#ifndef TARN_UTIL_RANDOM_H
#define TARN_UTIL_RANDOM_H

#include <stddef.h>

/* Fills p with n random bytes (getrandom); TARN_EIO with a message on failure. */
int tarn__random(void *p, size_t n, const char *what);

/* Replaces the kernel's bytes with fn's (NULL restores them): the simulator
 * (tests/sim) makes names and tokens a function of its seed. Not thread-safe:
 * call it before the library is used. */
void tarn__random_set_hook(void (*fn)(void *arg, void *p, size_t n), void *arg);

#endif
