#include "util/sb.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "tarn/error.h"
#include "util/error.h"

void tarn__sb_init(tarn__sb *s, tarn_buf *b) { s->b = b, s->rc = 0; }

int tarn__sb_append(tarn__sb *s, const void *p, size_t n) {
  if (s->rc)
    return s->rc;
  return s->rc = tarn_buf_append(s->b, p, n);
}

int tarn__sb_puts(tarn__sb *s, const char *str) { return tarn__sb_append(s, str, strlen(str)); }

int tarn__sb_putc(tarn__sb *s, char c) { return tarn__sb_append(s, &c, 1); }

int tarn__sb_appendf(tarn__sb *s, const char *fmt, ...) {
  if (s->rc)
    return s->rc;
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  if (n < 0)
    return s->rc = tarn__err(TARN_EINVAL, "string builder: bad format \"%s\"", fmt);
  /* One more for vsnprintf's terminator, which is then not counted. */
  if ((s->rc = tarn_buf_reserve(s->b, (size_t)n + 1)))
    return s->rc;
  va_start(ap, fmt);
  int m = vsnprintf((char *)s->b->data + s->b->len, (size_t)n + 1, fmt, ap);
  va_end(ap);
  if (m != n)
    return s->rc = tarn__err(TARN_EINVAL, "string builder: format \"%s\" changed length", fmt);
  s->b->len += (size_t)n;
  return 0;
}

int tarn__sb_cstr(tarn__sb *s) {
  if (s->rc)
    return s->rc;
  if ((s->rc = tarn_buf_reserve(s->b, 1)))
    return s->rc;
  s->b->data[s->b->len] = 0;
  return 0;
}
