/* The metadata-store key decoding is total, and decode -> encode gives the
 * input back; encoding order agrees with tarn_meta_key_compare. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tarn/meta.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *key = malloc(size + 1);
  if (!key)
    return 0;
  if (tarn_meta_key_decode(data, size, key) == 0) {
    size_t n = tarn_meta_key_encode(key, NULL);
    uint8_t *enc = malloc(n);
    if (!enc)
      abort();
    if (tarn_meta_key_encode(key, enc) != n || n != size || memcmp(enc, data, n) != 0)
      abort();
    free(enc);
    /* Order: split the input's bytes into two NUL-free keys and compare. */
    size_t half = strlen(key) / 2;
    char *a = strndup(key, half), *b = strdup(key + half);
    if (!a || !b)
      abort();
    size_t na = tarn_meta_key_encode(a, NULL), nb = tarn_meta_key_encode(b, NULL);
    uint8_t *ea = malloc(na), *eb = malloc(nb);
    if (!ea || !eb)
      abort();
    tarn_meta_key_encode(a, ea), tarn_meta_key_encode(b, eb);
    int c = memcmp(ea, eb, na < nb ? na : nb);
    if (!c)
      c = na < nb ? -1 : na > nb;
    int k = tarn_meta_key_compare(a, b);
    if ((c < 0) != (k < 0) || (c > 0) != (k > 0))
      abort();
    free(ea), free(eb), free(a), free(b);
  }
  free(key);
  return 0;
}
