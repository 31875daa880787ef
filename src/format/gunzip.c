/* Bounded gzip decompression with ISA-L's igzip inflate (see gunzip.h): it
 * parses the gzip header and trailer itself (ISAL_GZIP: CRC-32 and ISIZE
 * checked) and inflates three to four times as fast as zlib, which was half
 * of a gzip companion read (issue 36, item 4). */
#include "format/gunzip.h"

#include <isa-l/igzip_lib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/error.h"

static const char *isal_why(int r) {
  switch (r) {
  case ISAL_INVALID_BLOCK: return "invalid deflate block";
  case ISAL_INVALID_SYMBOL: return "invalid deflate symbol";
  case ISAL_INVALID_LOOKBACK: return "invalid lookback distance";
  case ISAL_INVALID_WRAPPER: return "invalid gzip header or trailer";
  case ISAL_UNSUPPORTED_METHOD: return "unsupported compression method";
  case ISAL_INCORRECT_CHECKSUM: return "incorrect data check (CRC-32 or length)";
  default: return "inflate failed";
  }
}

int tarn__gunzip(tarn_buf *out, const uint8_t *in, size_t len, size_t max, int members, size_t *at,
                 char *why, size_t whylen) {
  if (len < 2 || in[0] != 0x1f || in[1] != 0x8b) {
    *at = 0;
    snprintf(why, whylen, "not a gzip stream (no 1f 8b magic)");
    return -1;
  }
  /* inflate_state holds its 32 KiB window and tables: too large for a stack
   * that Kafka workers and fuzzers keep small. */
  struct inflate_state *z = malloc(sizeof *z);
  if (!z)
    return tarn__err(TARN_ENOMEM, "out of memory");
  isal_inflate_init(z);
  z->crc_flag = ISAL_GZIP;
  size_t start = out->len, used = 0; /* used: bytes of the members already finished */
  int rc = 0;
  z->next_in = (uint8_t *)(uintptr_t)in;
  for (;;) {
    size_t done_in = (size_t)(z->next_in - in); /* bytes handed over so far */
    size_t left = len - done_in;
    if (z->avail_in == 0 && left)
      z->avail_in = left > (1u << 30) ? (1u << 30) : (uint32_t)left;
    /* One byte beyond the cap shows that the cap is passed. */
    size_t room = max - (out->len - start);
    size_t chunk = room < (1u << 20) - 1 ? room + 1 : (1u << 20);
    if ((rc = tarn_buf_reserve(out, chunk)))
      break;
    z->next_out = out->data + out->len;
    z->avail_out = (uint32_t)chunk;
    const uint8_t *in_before = z->next_in;
    int zr = isal_inflate(z);
    out->len += chunk - z->avail_out;
    int stuck = z->next_in == in_before && z->avail_out == chunk;
    /* Bytes buffered as bits are not yet consumed. */
    size_t consumed = (size_t)(z->next_in - in) - (size_t)(z->read_in_length / 8);
    *at = consumed;
    rc = -1;
    if (out->len - start > max) {
      snprintf(why, whylen, "decompresses past the limit of %zu bytes", max);
    } else if (zr < 0) {
      snprintf(why, whylen, "gzip: %s", isal_why(zr));
    } else if (z->block_state == ISAL_BLOCK_FINISH) {
      used = consumed;
      if (used == len) {
        rc = 0;
      } else if (members && len - used >= 2 && in[used] == 0x1f && in[used + 1] == 0x8b) {
        isal_inflate_reset(z);
        z->crc_flag = ISAL_GZIP;
        z->next_in = (uint8_t *)(uintptr_t)(in + used);
        z->avail_in = 0;
        continue;
      } else {
        snprintf(why, whylen, "%zu trailing bytes after the gzip stream", len - used);
      }
    } else if (!stuck && (z->avail_in || (size_t)(z->next_in - in) < len || !z->avail_out)) {
      continue; /* more input (the next slice), or more room, lets it go on */
    } else {
      *at = len;
      snprintf(why, whylen, "gzip stream truncated");
    }
    break;
  }
  free(z);
  if (rc)
    out->len = start;
  return rc;
}
