/* Bounded gzip decompression with zlib (see gunzip.h). */
#include "format/gunzip.h"

#include <stdio.h>
#include <string.h>
#include <zlib.h>

#include "util/error.h"

int tarn__gunzip(tarn_buf *out, const uint8_t *in, size_t len, size_t max, int members, size_t *at,
                 char *why, size_t whylen) {
  if (len < 2 || in[0] != 0x1f || in[1] != 0x8b) {
    *at = 0;
    snprintf(why, whylen, "not a gzip stream (no 1f 8b magic)");
    return -1;
  }
  z_stream z;
  memset(&z, 0, sizeof z);
  if (inflateInit2(&z, 15 + 16) != Z_OK)
    return tarn__err(TARN_ENOMEM, "inflateInit2 failed");
  size_t start = out->len, used = 0; /* used: bytes of the members already finished */
  int rc = 0;
  z.next_in = (Bytef *)(uintptr_t)in;
  for (;;) {
    size_t left = len - used - z.total_in;
    z.avail_in = left > (1u << 30) ? (1u << 30) : (uInt)left;
    /* One byte beyond the cap shows that the cap is passed. */
    size_t room = max - (out->len - start);
    size_t chunk = room < 65535 ? room + 1 : 65536;
    if ((rc = tarn_buf_reserve(out, chunk)))
      break;
    z.next_out = out->data + out->len;
    z.avail_out = (uInt)chunk;
    int zr = inflate(&z, Z_NO_FLUSH);
    out->len += chunk - z.avail_out;
    *at = used + z.total_in;
    rc = -1;
    if (out->len - start > max) {
      snprintf(why, whylen, "decompresses past the limit of %zu bytes", max);
    } else if (zr == Z_STREAM_END) {
      used += z.total_in;
      if (used == len) {
        rc = 0;
      } else if (members && len - used >= 2 && in[used] == 0x1f && in[used + 1] == 0x8b) {
        inflateReset(&z);
        z.next_in = (Bytef *)(uintptr_t)(in + used);
        continue;
      } else {
        snprintf(why, whylen, "%zu trailing bytes after the gzip stream", len - used);
      }
    } else if ((zr == Z_OK || zr == Z_BUF_ERROR) && (used + z.total_in < len || !z.avail_out)) {
      continue; /* more input (the next slice), or more room, lets it go on */
    } else if (zr == Z_OK || zr == Z_BUF_ERROR) {
      *at = len;
      snprintf(why, whylen, "gzip stream truncated");
    } else {
      snprintf(why, whylen, "gzip: %s", z.msg ? z.msg : "inflate failed");
    }
    break;
  }
  inflateEnd(&z);
  if (rc)
    out->len = start;
  return rc;
}
