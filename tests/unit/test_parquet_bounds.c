/* The Parquet footer decoder allocates no more than the footer's bytes can
 * hold. Reproductions of issue #11 part 6 (they fail on 4d5a889):
 *   - a footer whose FileMetaData.row_groups list counts N empty structs (one
 *     byte each) made the decoder calloc N row groups of 112 bytes: a 50 MB
 *     footer asked for ~6 GB (schema: 24 bytes per 1-byte element,
 *     key_value_metadata: 16);
 *   - the same footer in a file opened by tarn_parquet_open.
 * Each crafted footer is decoded under a per-allocation bound of
 * BOUND_FACTOR times its length (tu_alloc_limit): it must be refused as
 * corrupt, not fail for want of memory. A real file with many row groups still
 * opens under the same bound.
 * ctest-wrap-alloc */
#include "testutil.h"
#include "tu_alloc_fail.h"
#include "tu_parquet_bomb.h"

#include <string.h>

#include "format/parquet_internal.h"
#include "tarn/buf.h"
#include "tarn/error.h"
#include "tarn/parquet.h"

/* The decoded metadata may take at most this many bytes per footer byte (the
 * decoder's own bound is below it: docs/parquet.md). */
#define BOUND_FACTOR 10

enum { K = 1 << 18 }; /* elements in a crafted list */

static void footer_counts_are_bounded_by_its_bytes(void **state) {
  (void)state;
  static const int fields[] = {2, 4, 5};
  int refused = 0;
  for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++) {
    tarn_buf b = TARN_BUF_INIT;
    tu_parquet_bomb_footer(&b, fields[i], K);
    tarn_parquet_meta m;
    tu_alloc_limit(BOUND_FACTOR * b.len);
    int rc = tarn__pq_meta_decode(b.data, b.len, 0, &m);
    tu_alloc_limit(0);
    print_message("field %d: %zu-byte footer: %s\n", fields[i], b.len, tarn_errmsg());
    refused += rc == TARN_ECORRUPT;
    tarn__pq_meta_free(&m);
    tarn_buf_free(&b);
  }
  assert_int_equal(refused, 3);
}

typedef struct mem_file {
  const uint8_t *p;
  size_t n;
} mem_file;

static int read_mem(void *ctx, uint64_t off, void *buf, size_t n) {
  const mem_file *f = ctx;
  if (off > f->n || n > f->n - off)
    return TARN_EIO;
  memcpy(buf, f->p + off, n);
  return 0;
}

static int sink(void *ctx, const void *p, size_t n) { return tarn_buf_append(ctx, p, n); }

static void reader_refuses_an_amplifying_footer(void **state) {
  (void)state;
  tarn_buf footer = TARN_BUF_INIT, file = TARN_BUF_INIT;
  tu_parquet_bomb_footer(&footer, 4, K);
  tu_parquet_wrap_footer(&file, &footer);
  mem_file f = {file.data, file.len};
  tarn_parquet_reader *r = NULL;
  tu_alloc_limit(BOUND_FACTOR * footer.len);
  int rc = tarn_parquet_open(&r, read_mem, &f, file.len, NULL);
  tu_alloc_limit(0);
  assert_int_equal(rc, TARN_ECORRUPT);
  assert_null(r);
  tarn_buf_free(&footer);
  tarn_buf_free(&file);
}

/* The bound refuses lies only: a file of many one-row row groups opens. */
static void many_row_groups_still_open(void **state) {
  (void)state;
  tarn_buf file = TARN_BUF_INIT;
  tarn_parquet_writer *w;
  tarn_parquet_writer_opts o = {.record_name = "rec",
                                .entry_serde_type = "t",
                                .codec = TARN_PARQUET_UNCOMPRESSED,
                                .row_group_size = 1};
  assert_int_equal(tarn_parquet_writer_open(&w, &o, sink, &file), 0);
  enum { ROWS = 2000 };
  for (int i = 0; i < ROWS; i++)
    assert_int_equal(tarn_parquet_writer_add(w, "x", 1), 0);
  assert_int_equal(tarn_parquet_writer_finish(w, NULL), 0);
  tarn_parquet_writer_close(w);
  size_t flen = tu_parquet_footer_len(&file);
  mem_file f = {file.data, file.len};
  tarn_parquet_reader *r = NULL;
  tu_alloc_limit(BOUND_FACTOR * flen);
  int rc = tarn_parquet_open(&r, read_mem, &f, file.len, NULL);
  tu_alloc_limit(0);
  assert_int_equal(rc, 0);
  assert_int_equal(tarn_parquet_get_meta(r)->n_row_groups, ROWS);
  tarn_parquet_close(r);
  tarn_buf_free(&file);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(footer_counts_are_bounded_by_its_bytes),
      cmocka_unit_test(reader_refuses_an_amplifying_footer),
      cmocka_unit_test(many_row_groups_still_open),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
