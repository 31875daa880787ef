/* Internal helpers that set the thread's last error and return its code. */
#ifndef TARN_UTIL_ERROR_H
#define TARN_UTIL_ERROR_H

#include <stddef.h>
#include "tarn/error.h"

#define TARN__PRINTF(a, b) TARN_PRINTF(a, b)

/* Sets the message from a printf format and returns code: the public
 * tarn_set_errmsg, under the name the library has always used. */
#define tarn__err tarn_set_errmsg

/* A decoding fault: sets "<structure>: byte <offset>: <what>" and returns
 * TARN_ECORRUPT. Every total decoder reports through this. */
int tarn__corrupt(const char *structure, size_t offset, const char *fmt, ...) TARN__PRINTF(3, 4);

/* Prefixes the current message with "<context>: " and returns code unchanged;
 * for adding where a failure happened as it travels up. */
int tarn__errctx(int code, const char *fmt, ...) TARN__PRINTF(2, 3);

/* Sets the message from errno (with what failed) and returns TARN_EIO,
 * TARN_ENOTFOUND, TARN_EEXIST or TARN_ENOMEM as errno suggests: the public
 * tarn_set_errno. */
#define tarn__errno tarn_set_errno

#endif
