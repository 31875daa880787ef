/* The HTTP Content-Range response header (RFC 9110 §14.4), which a ranged
 * GET's 206 answer carries ("bytes 0-99/1000") and a 416 may carry
 * ("bytes * /1000" without the space): the s3:// backend learns an object's
 * size from it instead of asking HEAD. */
#ifndef TARN_STORE_CONTENT_RANGE_H
#define TARN_STORE_CONTENT_RANGE_H

#include <stddef.h>
#include <stdint.h>

typedef struct tarn__content_range {
  int has_range;        /* first-last given (0: "*", the unsatisfied-range form) */
  uint64_t first, last; /* inclusive byte positions */
  int has_total;        /* the complete length given (0: "*", unknown) */
  uint64_t total;
} tarn__content_range;

/* Parses the header's value v[0..n) (surrounding spaces and tabs allowed).
 * Strict: unit "bytes", one space, decimal digits without sign or spaces,
 * first <= last, last < total when both are known, not a star on both sides; any other
 * bytes are TARN_ECORRUPT naming the byte offset ("Content-Range: byte 6: ..."). */
int tarn__content_range_parse(const char *v, size_t n, tarn__content_range *out);

#endif
