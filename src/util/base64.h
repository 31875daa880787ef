/* Standard Base64 (RFC 4648, with padding) through OpenSSL, with a strict decoder. */
#ifndef TARN_UTIL_BASE64_H
#define TARN_UTIL_BASE64_H

#include <stddef.h>
#include <stdint.h>

#include "tarn/buf.h"

/* Appends the Base64 text of p[0..n) to out (no NUL terminator). */
int tarn__b64_encode(const uint8_t *p, size_t n, tarn_buf *out);

/* Appends the bytes of the Base64 text s[0..n) to out. Strict: the length is a
 * multiple of 4, only the standard alphabet, '=' only as one or two final
 * characters, and the bits below the last full byte are 0 — so exactly the
 * texts the encoder writes are accepted. what names the structure in errors. */
int tarn__b64_decode(const char *s, size_t n, tarn_buf *out, const char *what);

#endif
