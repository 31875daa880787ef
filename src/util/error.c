#include "util/error.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define MSG_MAX 1024

static _Thread_local char msg[MSG_MAX];

const char *tarn_errmsg(void) { return msg; }

void tarn_errclear(void) { msg[0] = 0; }

const char *tarn_strerror(int code) {
  switch (code) {
  case TARN_OK: return "TARN_OK";
  case TARN_EINVAL: return "TARN_EINVAL";
  case TARN_ENOMEM: return "TARN_ENOMEM";
  case TARN_ECORRUPT: return "TARN_ECORRUPT";
  case TARN_EVERSION: return "TARN_EVERSION";
  case TARN_ENOTFOUND: return "TARN_ENOTFOUND";
  case TARN_EEXIST: return "TARN_EEXIST";
  case TARN_EIO: return "TARN_EIO";
  case TARN_ECONFLICT: return "TARN_ECONFLICT";
  case TARN_ETIMEDOUT: return "TARN_ETIMEDOUT";
  case TARN_EUNKNOWN: return "TARN_EUNKNOWN";
  case TARN_EFENCED: return "TARN_EFENCED";
  case TARN_ESESSION: return "TARN_ESESSION";
  case TARN_EUNSUPPORTED: return "TARN_EUNSUPPORTED";
  case TARN_EBUSY: return "TARN_EBUSY";
  case TARN_ERANGE: return "TARN_ERANGE";
  case TARN_EUNAVAIL: return "TARN_EUNAVAIL";
  case TARN_EAUTH: return "TARN_EAUTH";
  case TARN_ECLOSED: return "TARN_ECLOSED";
  case TARN_ETRIMMED: return "TARN_ETRIMMED";
  case TARN_EEND: return "TARN_EEND";
  case TARN_EGUARD: return "TARN_EGUARD";
  default: return "TARN_E?";
  }
}

int tarn__err(int code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
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

int tarn__errno(int err, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
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
