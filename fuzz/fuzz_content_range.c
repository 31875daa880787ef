/* The Content-Range parser: any bytes give a range or a fault, never a read
 * outside the input; what parses keeps its invariants and survives a round
 * trip through its canonical text. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "store/content_range.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  tarn__content_range a, b;
  if (tarn__content_range_parse((const char *)data, size, &a) != 0)
    return 0;
  if (!a.has_range && !a.has_total)
    __builtin_trap();
  if (a.has_range && (a.last < a.first || (a.has_total && a.last >= a.total)))
    __builtin_trap();
  char canon[96], r[48], t[24];
  if (a.has_range)
    snprintf(r, sizeof r, "%llu-%llu", (unsigned long long)a.first, (unsigned long long)a.last);
  else
    snprintf(r, sizeof r, "*");
  if (a.has_total)
    snprintf(t, sizeof t, "%llu", (unsigned long long)a.total);
  else
    snprintf(t, sizeof t, "*");
  int n = snprintf(canon, sizeof canon, "bytes %s/%s", r, t);
  if (tarn__content_range_parse(canon, (size_t)n, &b) != 0 || memcmp(&a, &b, sizeof a) != 0)
    __builtin_trap();
  return 0;
}
