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

/* The alphabet's values, 1 + value (0: not in the alphabet): one load per
 * character in the strict check, which runs for every companion row. */
#define B64_RANGE(c0, v0, k) [c0 + k] = v0 + k + 1
#define B64_10(c0, v0, k)                                                                          \
  B64_RANGE(c0, v0, k + 0), B64_RANGE(c0, v0, k + 1), B64_RANGE(c0, v0, k + 2),                    \
      B64_RANGE(c0, v0, k + 3), B64_RANGE(c0, v0, k + 4), B64_RANGE(c0, v0, k + 5),                \
      B64_RANGE(c0, v0, k + 6), B64_RANGE(c0, v0, k + 7), B64_RANGE(c0, v0, k + 8),                \
      B64_RANGE(c0, v0, k + 9)
static const uint8_t b64_table[256] = {B64_10('A', 0, 0),
                                       B64_10('A', 0, 10),
                                       B64_RANGE('A', 0, 20),
                                       B64_RANGE('A', 0, 21),
                                       B64_RANGE('A', 0, 22),
                                       B64_RANGE('A', 0, 23),
                                       B64_RANGE('A', 0, 24),
                                       B64_RANGE('A', 0, 25),
                                       B64_10('a', 26, 0),
                                       B64_10('a', 26, 10),
                                       B64_RANGE('a', 26, 20),
                                       B64_RANGE('a', 26, 21),
                                       B64_RANGE('a', 26, 22),
                                       B64_RANGE('a', 26, 23),
                                       B64_RANGE('a', 26, 24),
                                       B64_RANGE('a', 26, 25),
                                       B64_10('0', 52, 0),
                                       ['+'] = 63,
                                       ['/'] = 64};

static int b64_value(unsigned char c) { return (int)b64_table[c] - 1; }

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
