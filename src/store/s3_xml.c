#include "store/s3_xml.h"

#include <string.h>

#include "util/error.h"

/* Index of needle in p[from..n), or n. */
static size_t find(const char *p, size_t n, size_t from, const char *needle, size_t nl) {
  if (nl == 0 || nl > n)
    return n;
  for (size_t i = from; i + nl <= n; i++)
    if (p[i] == needle[0] && memcmp(p + i, needle, nl) == 0)
      return i;
  return n;
}

int tarn__xml_next(const char *p, size_t n, size_t *pos, const char *tag, const char **content,
                   size_t *clen) {
  size_t tl = strlen(tag);
  char open[80], close[84];
  if (tl + 3 >= sizeof open)
    return tarn__err(TARN_EINVAL, "xml: tag name too long");
  open[0] = '<';
  memcpy(open + 1, tag, tl);
  close[0] = '<', close[1] = '/';
  memcpy(close + 2, tag, tl);
  close[tl + 2] = '>';
  for (size_t i = *pos; i < n;) {
    size_t at = find(p, n, i, open, tl + 1);
    if (at >= n)
      return 0;
    size_t after = at + tl + 1;
    if (after >= n)
      return tarn__corrupt("s3 xml", at, "<%s> cut off", tag);
    char c = p[after];
    if (c != '>' && c != ' ' && c != '/' && c != '\t' && c != '\r' && c != '\n') {
      i = at + 1; /* a longer name with this one as its prefix */
      continue;
    }
    size_t gt = after;
    while (gt < n && p[gt] != '>')
      gt++;
    if (gt >= n)
      return tarn__corrupt("s3 xml", at, "<%s> start tag has no '>'", tag);
    if (p[gt - 1] == '/') { /* <tag/> */
      *content = p + gt + 1;
      *clen = 0;
      *pos = gt + 1;
      return 1;
    }
    size_t end = find(p, n, gt + 1, close, tl + 3);
    if (end >= n)
      return tarn__corrupt("s3 xml", at, "<%s> has no </%s>", tag, tag);
    *content = p + gt + 1;
    *clen = end - (gt + 1);
    *pos = end + tl + 3;
    return 1;
  }
  return 0;
}

static int put_utf8(tarn_buf *out, unsigned long cp) {
  uint8_t b[4];
  size_t k;
  if (cp < 0x80)
    b[0] = (uint8_t)cp, k = 1;
  else if (cp < 0x800)
    b[0] = (uint8_t)(0xc0 | cp >> 6), b[1] = (uint8_t)(0x80 | (cp & 0x3f)), k = 2;
  else if (cp < 0x10000)
    b[0] = (uint8_t)(0xe0 | cp >> 12), b[1] = (uint8_t)(0x80 | ((cp >> 6) & 0x3f)),
    b[2] = (uint8_t)(0x80 | (cp & 0x3f)), k = 3;
  else
    b[0] = (uint8_t)(0xf0 | cp >> 18), b[1] = (uint8_t)(0x80 | ((cp >> 12) & 0x3f)),
    b[2] = (uint8_t)(0x80 | ((cp >> 6) & 0x3f)), b[3] = (uint8_t)(0x80 | (cp & 0x3f)), k = 4;
  return tarn_buf_append(out, b, k);
}

int tarn__xml_text(const char *p, size_t n, tarn_buf *out) {
  static const struct {
    const char *name;
    char c;
  } named[] = {{"amp", '&'}, {"lt", '<'}, {"gt", '>'}, {"quot", '"'}, {"apos", '\''}};
  for (size_t i = 0; i < n;) {
    if (p[i] != '&') {
      size_t j = i;
      while (j < n && p[j] != '&')
        j++;
      int rc = tarn_buf_append(out, p + i, j - i);
      if (rc)
        return rc;
      i = j;
      continue;
    }
    size_t semi = i + 1;
    while (semi < n && semi - i <= 12 && p[semi] != ';')
      semi++;
    if (semi >= n || p[semi] != ';')
      return tarn__corrupt("s3 xml text", i, "'&' without a ';' within 12 bytes");
    const char *e = p + i + 1;
    size_t el = semi - i - 1;
    int rc = 1;
    if (el >= 2 && e[0] == '#') {
      int hex = e[1] == 'x' || e[1] == 'X';
      size_t d = hex ? 2 : 1;
      if (d >= el)
        return tarn__corrupt("s3 xml text", i, "empty character reference");
      unsigned long cp = 0;
      for (; d < el; d++) {
        int v;
        char c = e[d];
        if (c >= '0' && c <= '9')
          v = c - '0';
        else if (hex && c >= 'a' && c <= 'f')
          v = c - 'a' + 10;
        else if (hex && c >= 'A' && c <= 'F')
          v = c - 'A' + 10;
        else
          return tarn__corrupt("s3 xml text", i, "bad digit in character reference");
        cp = cp * (hex ? 16u : 10u) + (unsigned long)v;
        if (cp > 0x10ffff)
          return tarn__corrupt("s3 xml text", i, "character reference above U+10FFFF");
      }
      if (cp == 0 || (cp >= 0xd800 && cp <= 0xdfff))
        return tarn__corrupt("s3 xml text", i, "character reference to U+%04lX", cp);
      rc = put_utf8(out, cp);
    } else {
      for (size_t k = 0; k < sizeof named / sizeof named[0]; k++)
        if (strlen(named[k].name) == el && memcmp(named[k].name, e, el) == 0) {
          rc = tarn_buf_putc(out, (uint8_t)named[k].c);
          break;
        }
      if (rc == 1)
        return tarn__corrupt("s3 xml text", i, "unknown entity &%.*s;", (int)el, e);
    }
    if (rc)
      return rc;
    i = semi + 1;
  }
  return 0;
}

int tarn__xml_get(const char *p, size_t n, const char *tag, tarn_buf *out) {
  tarn_buf_reset(out);
  size_t pos = 0;
  const char *c;
  size_t cl;
  int rc = tarn__xml_next(p, n, &pos, tag, &c, &cl);
  if (rc <= 0)
    return rc;
  rc = tarn__xml_text(c, cl, out);
  if (rc == 0)
    rc = tarn_buf_putc(out, 0);
  if (rc)
    return rc;
  out->len--;
  return 1;
}
