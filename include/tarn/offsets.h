/* tarn — entry offsets: the IntegratedIntCompressor words of JavaFastPFOR 0.2.1.
 *
 * A RAW record holding n > 1 entries carries its entry boundaries A (A[i] = the
 * records of entries 0..i, A[n-1] = message_count) as the 32-bit words that
 * IntegratedIntCompressor.compress(A) returns, each stored big-endian
 * (spec "Entry offsets", Appendix D). The codec itself takes any uint32 array:
 * deltas are unsigned 32-bit differences, so a non-increasing A still
 * round-trips; the EntryIndex layer enforces increasing boundaries. */
#ifndef TARN_OFFSETS_H
#define TARN_OFFSETS_H

#include <stddef.h>
#include <stdint.h>

#include "tarn/buf.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The largest n the words can carry: word 0 is a Java int. */
#define TARN_ENTRY_OFFSETS_MAX_N 2147483647u

/* Appends the words of compress(a[0..n)) to out as big-endian bytes
 * (compressed_payload). n = 0 gives the single word 0. */
int tarn_entry_offsets_encode(const uint32_t *a, size_t n, tarn_buf *out);

/* Decodes compressed_payload back to the array. Total and strict: it accepts
 * exactly the byte strings tarn_entry_offsets_encode produces, so a decode
 * followed by an encode gives the same bytes. *a is malloc'd (free() it; never
 * NULL on success, even for n = 0). */
int tarn_entry_offsets_decode(const uint8_t *p, size_t len, uint32_t **a, size_t *n);

/* Word 0 of compressed_payload, the array's length, without decoding the rest. */
int tarn_entry_offsets_peek_count(const uint8_t *p, size_t len, size_t *n);

/* The boundaries of a log section from its entries' record counts (LS-035): a[i]
 * = counts[0] + ... + counts[i]. Fails if a count is 0 or the sum exceeds 2^31-1
 * (message_count is an int32). */
int tarn_entry_offsets_from_counts(const uint32_t *counts, size_t n, uint32_t *a);

#ifdef __cplusplus
}
#endif
#endif
