#include "tarn/trimmark.h"

#include <stdio.h>

#include "util/error.h"

int tarn_trimmark_parse(const uint8_t *p, size_t len, uint64_t *b) {
  if (len == 0)
    return tarn__corrupt("trim marker", 0, "empty value");
  if (len > TARN_TRIMMARK_MAX_LEN)
    return tarn__corrupt("trim marker", TARN_TRIMMARK_MAX_LEN, "longer than %d digits",
                         TARN_TRIMMARK_MAX_LEN);
  if (p[0] == '0' && len > 1)
    return tarn__corrupt("trim marker", 0, "leading zero");
  uint64_t v = 0;
  for (size_t i = 0; i < len; i++) {
    if (p[i] < '0' || p[i] > '9')
      return tarn__corrupt("trim marker", i, "0x%02x is not a decimal digit", p[i]);
    v = v * 10 + (uint64_t)(p[i] - '0');
  }
  if (v > 9223372036854775807ull)
    return tarn__corrupt("trim marker", 0, "%llu exceeds 2^63-1", (unsigned long long)v);
  *b = v;
  return 0;
}

size_t tarn_trimmark_format(char out[TARN_TRIMMARK_MAX_LEN + 1], uint64_t b) {
  return (size_t)snprintf(out, TARN_TRIMMARK_MAX_LEN + 1, "%llu", (unsigned long long)b);
}
