/* A reclaim pass mark's value (src/log/reclaim.c, docs/compaction.md "Pass
 * marks"; added by issue 31 item 7): the decoder is total, says exactly one
 * of "none", "every name" or a range, and a range encodes again
 * ("r\n{lo}\n{hi}") to the same bytes. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "log/reclaim_mark.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  int all = -1, none = -1;
  char *lo = NULL, *hi = NULL;
  if (tarn__reclaim_mark_parse(data, size, &all, &none, &lo, &hi) != 0)
    abort();
  int range = lo != NULL;
  if (all + none + range != 1 || (lo == NULL) != (hi == NULL))
    abort();
  if (none && (size != 4 || memcmp(data, "none", 4) != 0))
    abort();
  if (range) {
    size_t nlo = strlen(lo), nhi = strlen(hi);
    if (nlo + nhi + 3 != size || memcmp(data, "r\n", 2) != 0 || memcmp(data + 2, lo, nlo) != 0 ||
        data[2 + nlo] != '\n' || memcmp(data + 3 + nlo, hi, nhi) != 0 || memchr(lo, '\n', nlo) ||
        memchr(hi, '\n', nhi))
      abort();
  }
  free(lo);
  free(hi);
  return 0;
}
