/* Internal helpers that set the thread's last error and return its code. */
#ifndef TARN_UTIL_ERROR_H
#define TARN_UTIL_ERROR_H

#include <stddef.h>
#include "tarn/error.h"

#if defined(__GNUC__)
#define TARN__PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define TARN__PRINTF(a, b)
#endif

/* Sets the message from a printf format and returns code. */
int tarn__err(int code, const char *fmt, ...) TARN__PRINTF(2, 3);

/* A decoding fault: sets "<structure>: byte <offset>: <what>" and returns
 * TARN_ECORRUPT. Every total decoder reports through this. */
int tarn__corrupt(const char *structure, size_t offset, const char *fmt, ...)
    TARN__PRINTF(3, 4);

/* Prefixes the current message with "<context>: " and returns code unchanged;
 * for adding where a failure happened as it travels up. */
int tarn__errctx(int code, const char *fmt, ...) TARN__PRINTF(2, 3);

/* Sets the message from errno (with what failed) and returns TARN_EIO,
 * TARN_ENOTFOUND, TARN_EEXIST or TARN_ENOMEM as errno suggests. */
int tarn__errno(int err, const char *fmt, ...) TARN__PRINTF(2, 3);

#endif
