/* Random bytes from the kernel, for names and tokens that must never repeat. */
#ifndef TARN_UTIL_RANDOM_H
#define TARN_UTIL_RANDOM_H

#include <stddef.h>

/* Fills p with n random bytes (getrandom); TARN_EIO with a message on failure. */
int tarn__random(void *p, size_t n, const char *what);

#endif
