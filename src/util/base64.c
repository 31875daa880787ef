#include "util/base64.h"

#include <openssl/evp.h>

#include "util/error.h"

int tarn__b64_encode(const uint8_t *p, size_t n, tarn_buf *out) {
  if (n > (size_t)INT32_MAX / 4 * 3 - 3)
    return tarn__err(TARN_ERANGE, "base64: %zu bytes are too many to encode", n);
  size_t m = (n + 2) / 3 * 4;
  int rc = tarn_buf_reserve(out, m + 1); /* EVP_EncodeBlock writes a NUL */
  if (rc)
    return rc;
  int w = EVP_EncodeBlock(out->data + out->len, p, (int)n);
  out->len += (size_t)w;
  return 0;
}

static int b64_value(unsigned char c) {
  if (c >= 'A' && c <= 'Z')
    return c - 'A';
  if (c >= 'a' && c <= 'z')
    return c - 'a' + 26;
  if (c >= '0' && c <= '9')
    return c - '0' + 52;
  if (c == '+')
    return 62;
  if (c == '/')
    return 63;
  return -1;
}

int tarn__b64_decode(const char *s, size_t n, tarn_buf *out, const char *what) {
  if (n % 4)
    return tarn__corrupt(what, n - n % 4, "base64 length %zu is not a multiple of 4", n);
  if (n > (size_t)INT32_MAX)
    return tarn__corrupt(what, 0, "base64 text of %zu characters is too long", n);
  size_t pad = 0;
  if (n && s[n - 1] == '=')
    pad = n >= 2 && s[n - 2] == '=' ? 2 : 1;
  for (size_t i = 0; i < n - pad; i++)
    if (b64_value((unsigned char)s[i]) < 0)
      return tarn__corrupt(what, i, "base64: 0x%02x is not a Base64 character%s",
                           (unsigned char)s[i],
                           s[i] == '=' ? " here (padding only at the end)" : "");
  if (pad) { /* the bits below the last full byte must be 0 */
    int last = b64_value((unsigned char)s[n - pad - 1]);
    if (last & (pad == 2 ? 0x0f : 0x03))
      return tarn__corrupt(what, n - pad - 1, "base64: non-zero bits after the last byte");
  }
  int rc = tarn_buf_reserve(out, n / 4 * 3 + 1);
  if (rc)
    return rc;
  if (n == 0)
    return 0;
  int w = EVP_DecodeBlock(out->data + out->len, (const unsigned char *)s, (int)n);
  if (w < 0 || (size_t)w != n / 4 * 3)
    return tarn__corrupt(what, 0, "base64: OpenSSL refused the text");
  out->len += (size_t)w - pad;
  return 0;
}
