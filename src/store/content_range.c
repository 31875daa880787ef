/* The Content-Range header value: complete-length, or range + complete-length. */
#include "store/content_range.h"

#include <string.h>

#include "util/error.h"

#define WHAT "Content-Range"

static int is_ows(char c) { return c == ' ' || c == '\t'; }

/* A decimal number at v[*i..n) without sign; leading zeros are allowed (the
 * RFC's 1*DIGIT) but the value must fit 64 bits. */
static int number(const char *v, size_t n, size_t *i, uint64_t *out, const char *field) {
  size_t start = *i;
  uint64_t x = 0;
  while (*i < n && v[*i] >= '0' && v[*i] <= '9') {
    unsigned d = (unsigned)(v[*i] - '0');
    if (x > (UINT64_MAX - d) / 10)
      return tarn__corrupt(WHAT, start, "%s does not fit 64 bits", field);
    x = x * 10 + d;
    (*i)++;
  }
  if (*i == start)
    return tarn__corrupt(WHAT, start, "%s: expected a decimal digit", field);
  *out = x;
  return 0;
}

static int expect(const char *v, size_t n, size_t *i, char c, const char *after) {
  if (*i >= n || v[*i] != c)
    return tarn__corrupt(WHAT, *i, "expected '%c' after %s", c, after);
  (*i)++;
  return 0;
}

int tarn__content_range_parse(const char *v, size_t n, tarn__content_range *out) {
  memset(out, 0, sizeof *out);
  size_t i = 0;
  while (i < n && is_ows(v[i]))
    i++;
  while (n > i && is_ows(v[n - 1]))
    n--;
  static const char unit[] = "bytes ";
  if (n - i < sizeof unit - 1 || memcmp(v + i, unit, sizeof unit - 1) != 0)
    return tarn__corrupt(WHAT, i, "does not begin with \"bytes \"");
  i += sizeof unit - 1;
  int rc;
  if (i < n && v[i] == '*') {
    i++;
  } else {
    if ((rc = number(v, n, &i, &out->first, "first byte")) ||
        (rc = expect(v, n, &i, '-', "the first byte")) ||
        (rc = number(v, n, &i, &out->last, "last byte")))
      return rc;
    if (out->last < out->first)
      return tarn__corrupt(WHAT, i, "last byte %llu before first byte %llu",
                           (unsigned long long)out->last, (unsigned long long)out->first);
    out->has_range = 1;
  }
  if ((rc = expect(v, n, &i, '/', out->has_range ? "the range" : "'*'")))
    return rc;
  if (i < n && v[i] == '*') {
    if (!out->has_range)
      return tarn__corrupt(WHAT, i, "neither range nor length given");
    i++;
  } else {
    if ((rc = number(v, n, &i, &out->total, "complete length")))
      return rc;
    out->has_total = 1;
    if (out->has_range && out->last >= out->total)
      return tarn__corrupt(WHAT, i, "last byte %llu not below the complete length %llu",
                           (unsigned long long)out->last, (unsigned long long)out->total);
  }
  if (i != n)
    return tarn__corrupt(WHAT, i, "unexpected byte 0x%02x after the complete length",
                         (unsigned)(unsigned char)v[i]);
  return 0;
}
