/* Any bytes decode as a catalog record or are refused with a message; a
 * decoded record encodes, and that encoding decodes to a record that encodes
 * to the same bytes. Also: stream identities never crash the checker. */
#include <stdlib.h>
#include <string.h>

#include "tarn/catalog_record.h"
#include "tarn/error.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *s = malloc(size + 1);
  memcpy(s, data, size);
  s[size] = 0;
  char *ns, *name;
  if (tarn_stream_ident_parse(s, &ns, &name) == 0) {
    if (strchr(ns, '/') || strchr(name, '/') || !*ns || !*name)
      abort();
    free(ns), free(name);
  }
  free(s);

  tarn_catalog_record r;
  int rc = tarn_catalog_record_decode(data, size, &r);
  if (rc) {
    if (!*tarn_errmsg())
      abort();
    return 0;
  }
  tarn_buf a = TARN_BUF_INIT, b = TARN_BUF_INIT;
  if (tarn_catalog_record_encode(&r, &a))
    abort();
  tarn_catalog_record r2;
  if (tarn_catalog_record_decode(a.data, a.len, &r2) || tarn_catalog_record_encode(&r2, &b) ||
      a.len != b.len || memcmp(a.data, b.data, a.len) || r2.kind != r.kind ||
      r2.n_logs != r.n_logs || r2.n_props != r.n_props)
    abort();
  tarn_catalog_record_free(&r2);
  tarn_catalog_record_free(&r);
  tarn_buf_free(&a);
  tarn_buf_free(&b);
  return 0;
}
