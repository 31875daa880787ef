/* tarn — error codes and the calling thread's last error message.
 *
 * Every function of libtarn that can fail returns int: 0 on success or one of
 * the negative TARN_E* codes below. tarn_errmsg() gives the message of the
 * calling thread's last failure; decoders name the structure, the byte offset
 * and the fault ("wal object: byte 17: varint32 longer than 5 bytes"). */
#ifndef TARN_ERROR_H
#define TARN_ERROR_H

#include <stdarg.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Marks a printf-like function so that the compiler checks its arguments. */
#if defined(__GNUC__)
#define TARN_PRINTF(fmt_index, first_arg) __attribute__((format(printf, fmt_index, first_arg)))
#else
#define TARN_PRINTF(fmt_index, first_arg)
#endif

/* The codes lie below TARN_ERRBASE, as LMDB's do, so that no TARN_E* equals a
 * negated errno (-1..-4095): a callback or a backend that returns -errno by
 * mistake cannot be read as a tarn code, and a tarn code is never mistaken for
 * one. Their values are not part of the API: compare with the names. */
#define TARN_ERRBASE (-31000)

enum {
  TARN_OK = 0,
  TARN_EINVAL = TARN_ERRBASE - 1,        /* an argument is out of its domain */
  TARN_ENOMEM = TARN_ERRBASE - 2,        /* an allocation failed */
  TARN_ECORRUPT = TARN_ERRBASE - 3,      /* bytes do not decode as the structure they claim to be */
  TARN_EVERSION = TARN_ERRBASE - 4,      /* a format version this build does not read */
  TARN_ENOTFOUND = TARN_ERRBASE - 5,     /* no such object, key, stream or log */
  TARN_EEXIST = TARN_ERRBASE - 6,        /* create-only operation found the name taken */
  TARN_EIO = TARN_ERRBASE - 7,           /* an operating-system or transport I/O error */
  TARN_ECONFLICT = TARN_ERRBASE - 8,     /* a compare-and-set lost: the version changed */
  TARN_ETIMEDOUT = TARN_ERRBASE - 9,     /* a deadline passed before the operation finished */
  TARN_EUNKNOWN = TARN_ERRBASE - 10,     /* the operation may or may not have taken effect */
  TARN_EFENCED = TARN_ERRBASE - 11,      /* the log is fenced: no new write leases */
  TARN_ESESSION = TARN_ERRBASE - 12,     /* the metadata-store session ended */
  TARN_EUNSUPPORTED = TARN_ERRBASE - 13, /* a valid input this implementation does not handle */
  TARN_EBUSY = TARN_ERRBASE - 14,        /* the resource is held by someone else */
  TARN_ERANGE = TARN_ERRBASE - 15,       /* a number would overflow its field */
  TARN_EUNAVAIL = TARN_ERRBASE - 16,     /* a store or server cannot be reached */
  TARN_EAUTH = TARN_ERRBASE - 17,        /* credentials were refused */
  TARN_ECLOSED = TARN_ERRBASE - 18,      /* the handle was closed or is shutting down */
  TARN_ETRIMMED = TARN_ERRBASE - 19,     /* the offset lies below the trim marker */
  TARN_EEND = TARN_ERRBASE - 20,         /* the offset lies at or past the end of the log */
  TARN_EGUARD = TARN_ERRBASE - 21, /* a guarded write's condition failed: nothing was written */
  TARN_ELAST = TARN_EGUARD /* the lowest code: every TARN_E* lies in [TARN_ELAST, TARN_ERRBASE) */
};

/* The message of the calling thread's last failure; never NULL. */
const char *tarn_errmsg(void);

/* A sentence saying what a code means: tarn_strerror(TARN_EUNKNOWN) is "the
 * operation may or may not have taken effect". Never NULL: a code that is not
 * one of TARN_E* gives "not a tarn error code". */
const char *tarn_strerror(int code);

/* The code's name: tarn_errname(TARN_EUNKNOWN) is "TARN_EUNKNOWN"; for logs,
 * metric labels and JSON. A code that is not one of TARN_E* gives "TARN_E?". */
const char *tarn_errname(int code);

/* Clears the calling thread's message. */
void tarn_errclear(void);

/* Sets the calling thread's message (what tarn_errmsg() returns) from a printf
 * format and returns code unchanged. This is the one way code outside libtarn
 * reports a failure with a message: a callback libtarn calls (a Parquet
 * read-at function, a throttle, a user backend) sets its message and returns
 * its code, and the caller of libtarn sees that message from tarn_errmsg().
 * A message longer than the buffer (1023 bytes) is truncated. */
int tarn_set_errmsg(int code, const char *fmt, ...) TARN_PRINTF(2, 3);

/* tarn_set_errmsg with a va_list, for wrappers of their own. */
int tarn_set_errmsgv(int code, const char *fmt, va_list ap) TARN_PRINTF(2, 0);

/* Sets the message "<fmt...>: <strerror(err)>" from an errno value and
 * returns the code errno suggests: TARN_ENOTFOUND (ENOENT), TARN_EEXIST,
 * TARN_ENOMEM, TARN_ETIMEDOUT, else TARN_EIO. */
int tarn_set_errno(int err, const char *fmt, ...) TARN_PRINTF(2, 3);

#ifdef __cplusplus
}
#endif
#endif
