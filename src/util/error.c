#include "util/error.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define MSG_MAX 1024

static _Thread_local char msg[MSG_MAX];

const char *tarn_errmsg(void) { return msg; }

void tarn_errclear(void) { msg[0] = 0; }

/* One row a code: its name and a sentence on what it means to a caller. */
static const struct {
  int code;
  const char *name, *sentence;
} codes[] = {
    {TARN_OK, "TARN_OK", "success"},
    {TARN_EINVAL, "TARN_EINVAL", "an argument is out of its domain"},
    {TARN_ENOMEM, "TARN_ENOMEM", "an allocation failed"},
    {TARN_ECORRUPT, "TARN_ECORRUPT", "bytes do not decode as the structure they claim to be"},
    {TARN_EVERSION, "TARN_EVERSION", "a format version this build does not read"},
    {TARN_ENOTFOUND, "TARN_ENOTFOUND", "no such object, key, stream or log"},
    {TARN_EEXIST, "TARN_EEXIST", "the name is already taken"},
    {TARN_EIO, "TARN_EIO", "an operating-system or transport I/O error"},
    {TARN_ECONFLICT, "TARN_ECONFLICT", "a compare-and-set lost: the version changed"},
    {TARN_ETIMEDOUT, "TARN_ETIMEDOUT", "a deadline passed before the operation finished"},
    {TARN_EUNKNOWN, "TARN_EUNKNOWN", "the operation may or may not have taken effect"},
    {TARN_EFENCED, "TARN_EFENCED", "the log is fenced: no new write leases"},
    {TARN_ESESSION, "TARN_ESESSION", "the metadata-store session ended"},
    {TARN_EUNSUPPORTED, "TARN_EUNSUPPORTED", "a valid input this implementation does not handle"},
    {TARN_EBUSY, "TARN_EBUSY", "the resource is held by someone else"},
    {TARN_ERANGE, "TARN_ERANGE", "a number would overflow its field"},
    {TARN_EUNAVAIL, "TARN_EUNAVAIL", "a store or server cannot be reached"},
    {TARN_EAUTH, "TARN_EAUTH", "credentials were refused"},
    {TARN_ECLOSED, "TARN_ECLOSED", "the handle was closed or is shutting down"},
    {TARN_ETRIMMED, "TARN_ETRIMMED", "the offset lies below the trim marker"},
    {TARN_EEND, "TARN_EEND", "the offset lies at or past the end of the log"},
    {TARN_EGUARD, "TARN_EGUARD", "a guarded write's condition failed: nothing was written"},
};

static int code_row(int code) {
  for (size_t i = 0; i < sizeof codes / sizeof codes[0]; i++)
    if (codes[i].code == code)
      return (int)i;
  return -1;
}

const char *tarn_errname(int code) {
  int i = code_row(code);
  return i < 0 ? "TARN_E?" : codes[i].name;
}

const char *tarn_strerror(int code) {
  int i = code_row(code);
  return i < 0 ? "not a tarn error code" : codes[i].sentence;
}

int tarn_set_errmsgv(int code, const char *fmt, va_list ap) {
  vsnprintf(msg, sizeof msg, fmt, ap);
  return code;
}

int tarn_set_errmsg(int code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  tarn_set_errmsgv(code, fmt, ap);
  va_end(ap);
  return code;
}

int tarn__corrupt(const char *structure, size_t offset, const char *fmt, ...) {
  int n = snprintf(msg, sizeof msg, "%s: byte %zu: ", structure, offset);
  if (n < 0 || (size_t)n >= sizeof msg)
    return TARN_ECORRUPT;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg + n, sizeof msg - (size_t)n, fmt, ap);
  va_end(ap);
  return TARN_ECORRUPT;
}

/* Appends ": <tail>" to msg after its first n bytes, truncating to fit. */
static void append_tail(size_t n, const char *tail) {
  if (n >= sizeof msg - 3)
    return;
  msg[n++] = ':', msg[n++] = ' ';
  size_t t = strlen(tail), room = sizeof msg - 1 - n;
  if (t > room)
    t = room;
  memmove(msg + n, tail, t);
  msg[n + t] = 0;
}

int tarn__errctx(int code, const char *fmt, ...) {
  char old[MSG_MAX];
  memcpy(old, msg, sizeof old);
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  if (n >= 0)
    append_tail((size_t)n, old);
  return code;
}

static int set_errno(int err, const char *fmt, va_list ap) {
  int n = vsnprintf(msg, sizeof msg, fmt, ap);
  if (n >= 0)
    append_tail((size_t)n, strerror(err));
  switch (err) {
  case ENOENT: return TARN_ENOTFOUND;
  case EEXIST: return TARN_EEXIST;
  case ENOMEM: return TARN_ENOMEM;
  case ETIMEDOUT: return TARN_ETIMEDOUT;
  default: return TARN_EIO;
  }
}

int tarn_set_errno(int err, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int rc = set_errno(err, fmt, ap);
  va_end(ap);
  return rc;
}
