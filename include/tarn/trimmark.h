/* tarn — the trim marker's value (spec "Trim marker"): B in ASCII decimal. */
#ifndef TARN_TRIMMARK_H
#define TARN_TRIMMARK_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The longest value: 2^63-1 has 19 digits. */
#define TARN_TRIMMARK_MAX_LEN 19

/* Strict: 1..19 ASCII digits, no sign, no leading zero except "0", at most
 * 2^63-1. TARN_ECORRUPT ("trim marker: byte N: ...") otherwise. */
int tarn_trimmark_parse(const uint8_t *p, size_t len, uint64_t *b);
/* Writes B (<= 2^63-1) into out, returns the length (no NUL is counted). */
size_t tarn_trimmark_format(char out[TARN_TRIMMARK_MAX_LEN + 1], uint64_t b);

#ifdef __cplusplus
}
#endif
#endif
