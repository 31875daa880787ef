/* Parquet's DELTA_BINARY_PACKED integers, as the lengths of the
 * DELTA_LENGTH_BYTE_ARRAY and DELTA_BYTE_ARRAY encodings (which DuckDB and
 * parquet-mr write for byte arrays in version 2 files). */
#include <stdlib.h>

#include "format/parquet_internal.h"
#include "util/bytes.h"
#include "util/error.h"

#define PAGE "parquet page"

static uint64_t unpack(const uint8_t *p, size_t bitpos, unsigned bw) {
  uint64_t v = 0;
  for (unsigned got = 0; got < bw;) {
    unsigned sh = (unsigned)(bitpos & 7), take = 8 - sh < bw - got ? 8 - sh : bw - got;
    v |= (uint64_t)((p[bitpos >> 3] >> sh) & ((1u << take) - 1)) << got;
    got += take;
    bitpos += take;
  }
  return v;
}

int tarn__pq_delta_lengths(const uint8_t *p, size_t len, uint64_t page, size_t max_count,
                           uint32_t **out, size_t *count, size_t *used) {
  tarn__rd rd;
  tarn__rd_init(&rd, p, len, PAGE);
  rd.base = 0;
  uint64_t block = 0, minis = 0, total = 0, first = 0;
  *out = NULL;
  if (tarn__rd_uvarint(&rd, &block, 5, 1u << 20, "block size") ||
      tarn__rd_uvarint(&rd, &minis, 5, 1u << 20, "miniblocks") ||
      tarn__rd_uvarint(&rd, &total, 10, UINT64_MAX, "value count") ||
      tarn__rd_uvarint(&rd, &first, 10, UINT64_MAX, "first value"))
    return tarn__corrupt(PAGE, (size_t)page, "bad DELTA_BINARY_PACKED header");
  if (block == 0 || block % 128 || minis == 0 || block % minis || (block / minis) % 32)
    return tarn__corrupt(PAGE, (size_t)page,
                         "DELTA_BINARY_PACKED block of %llu values in %llu miniblocks",
                         (unsigned long long)block, (unsigned long long)minis);
  if (total > max_count)
    return tarn__corrupt(PAGE, (size_t)page, "DELTA_BINARY_PACKED holds %llu values, the page %zu",
                         (unsigned long long)total, max_count);
  uint32_t *v = malloc((size_t)(total ? total : 1) * sizeof *v);
  if (!v)
    return tarn__err(TARN_ENOMEM, PAGE ": out of memory");
  size_t vpm = (size_t)(block / minis), i = 0;
  int64_t last = (int64_t)(first >> 1) ^ -(int64_t)(first & 1);
  int rc = 0;
  if (total) {
    if (last < 0 || last > INT32_MAX)
      goto bad_len;
    v[i++] = (uint32_t)last;
  }
  while (i < total) {
    uint64_t zz = 0;
    const uint8_t *widths;
    if (tarn__rd_uvarint(&rd, &zz, 10, UINT64_MAX, "min delta") ||
        tarn__rd_bytes(&rd, (size_t)minis, &widths, "bit widths")) {
      rc = tarn__corrupt(PAGE, (size_t)page, "DELTA_BINARY_PACKED block truncated");
      goto fail;
    }
    int64_t min_delta = (int64_t)(zz >> 1) ^ -(int64_t)(zz & 1);
    for (size_t m = 0; m < minis && i < total; m++) {
      unsigned bw = widths[m];
      if (bw > 64) {
        rc = tarn__corrupt(PAGE, (size_t)page, "DELTA_BINARY_PACKED bit width %u", bw);
        goto fail;
      }
      size_t bytes = vpm * bw / 8, avail = tarn__rd_left(&rd);
      size_t want = total - i < vpm ? (size_t)(total - i) : vpm;
      /* The last miniblock should be padded; accept it unpadded when its values are there. */
      if (bytes > avail && (want * bw + 7) / 8 > avail) {
        rc = tarn__corrupt(PAGE, (size_t)page, "DELTA_BINARY_PACKED miniblock truncated");
        goto fail;
      }
      const uint8_t *mb = p + rd.off;
      for (size_t j = 0; j < want; j++) {
        last = (int64_t)((uint64_t)last + (uint64_t)min_delta + unpack(mb, j * bw, bw));
        if (last < 0 || last > INT32_MAX)
          goto bad_len;
        v[i++] = (uint32_t)last;
      }
      rd.off += bytes < avail ? bytes : avail;
    }
  }
  *out = v;
  *count = (size_t)total;
  *used = rd.off;
  return 0;
bad_len:
  rc = tarn__corrupt(PAGE, (size_t)page, "DELTA length %lld of value %zu is out of range",
                     (long long)last, i);
fail:
  free(v);
  return rc;
}
