/* tarn — error codes and the calling thread's last error message.
 *
 * Every function of libtarn that can fail returns int: 0 on success or one of
 * the negative TARN_E* codes below. tarn_errmsg() gives the message of the
 * calling thread's last failure; decoders name the structure, the byte offset
 * and the fault ("wal object: byte 17: varint32 longer than 5 bytes"). */
#ifndef TARN_ERROR_H
#define TARN_ERROR_H

#ifdef __cplusplus
extern "C" {
#endif

enum {
  TARN_OK = 0,
  TARN_EINVAL = -1,      /* an argument is out of its domain */
  TARN_ENOMEM = -2,      /* an allocation failed */
  TARN_ECORRUPT = -3,    /* bytes do not decode as the structure they claim to be */
  TARN_EVERSION = -4,    /* a format version this build does not read */
  TARN_ENOTFOUND = -5,   /* no such object, key, stream or log */
  TARN_EEXIST = -6,      /* create-only operation found the name taken */
  TARN_EIO = -7,         /* an operating-system or transport I/O error */
  TARN_ECONFLICT = -8,   /* a compare-and-set lost: the version changed */
  TARN_ETIMEDOUT = -9,   /* a deadline passed before the operation finished */
  TARN_EUNKNOWN = -10,   /* the operation may or may not have taken effect */
  TARN_EFENCED = -11,    /* the log is fenced: no new write leases */
  TARN_ESESSION = -12,   /* the metadata-store session ended */
  TARN_EUNSUPPORTED = -13, /* a valid input this implementation does not handle */
  TARN_EBUSY = -14,      /* the resource is held by someone else */
  TARN_ERANGE = -15,     /* a number would overflow its field */
  TARN_EUNAVAIL = -16,   /* a store or server cannot be reached */
  TARN_EAUTH = -17,      /* credentials were refused */
  TARN_ECLOSED = -18,    /* the handle was closed or is shutting down */
  TARN_ETRIMMED = -19,   /* the offset lies below the trim marker */
  TARN_EEND = -20,       /* the offset lies at or past the end of the log */
  TARN_EGUARD = -21      /* a guarded write's condition failed: nothing was written */
};

/* The message of the calling thread's last failure; never NULL. */
const char *tarn_errmsg(void);

/* A short fixed name for a code: "TARN_ECORRUPT". */
const char *tarn_strerror(int code);

/* Clears the calling thread's message. */
void tarn_errclear(void);

#ifdef __cplusplus
}
#endif
#endif
