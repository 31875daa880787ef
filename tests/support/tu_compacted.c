#include "tu_compacted.h"

#include <stdio.h>
#include <string.h>

#include "testutil.h"
#include "tarn/buf.h"
#include "tarn/parquet.h"

static int buf_sink(void *ctx, const void *p, size_t n) {
  return tarn_buf_append((tarn_buf *)ctx, p, n);
}

void tu_write_compacted(tarn_objstore *cs, const char *dir, const char *name,
                        const tarn_entry_header *hs, char **payloads, size_t first, size_t last,
                        size_t last_row, int64_t ts_step) {
  char path[256], iname[128];
  snprintf(path, sizeof path, "%s/%s.parquet", dir, name);
  snprintf(iname, sizeof iname, "%s.index", name);
  tarn_buf file = TARN_BUF_INIT, comp = TARN_BUF_INIT;
  tarn_parquet_writer_opts po = {.record_name = TARN_PARQUET_KAFKA_RECORD,
                                 .entry_serde_type = TARN_PARQUET_KAFKA_SERDE,
                                 .row_metadata = iname,
                                 .codec = TARN_PARQUET_UNCOMPRESSED};
  tarn_parquet_writer *pw;
  assert_int_equal(tarn_parquet_writer_open(&pw, &po, buf_sink, &file), 0);
  tarn_companion_writer *cw;
  assert_int_equal(tarn_companion_writer_open(&cw, &comp, 2, 0), 0);
  for (size_t i = first; i <= last; i++)
    assert_int_equal(tarn_parquet_writer_add(pw, payloads[i], strlen(payloads[i])), 0);
  for (size_t i = first; i <= last_row; i++) {
    tarn_entry_header h = hs[i];
    h.timestamp_ms += ts_step * (int64_t)i;
    assert_int_equal(tarn_companion_writer_add(cw, &h), 0);
  }
  assert_int_equal(tarn_parquet_writer_finish(pw, NULL), 0);
  tarn_parquet_writer_close(pw);
  assert_int_equal(tarn_companion_writer_close(cw), 0);
  assert_int_equal(tarn_objstore_put(cs, path, file.data, file.len), 0);
  snprintf(path, sizeof path, "%s/%s.index", dir, name);
  assert_int_equal(tarn_objstore_put(cs, path, comp.data, comp.len), 0);
  tarn_buf_free(&file);
  tarn_buf_free(&comp);
}
