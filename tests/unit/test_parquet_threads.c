/* The Parquet writer's compression thread (opts.threads, issue 16): a file
 * written with it is byte for byte the file written without it, for every
 * codec, with pages and row groups of many sizes and null rows (the
 * pipeline hands pages to the sink in order, and the row-group accounting
 * waits for the page in flight); a sink failure while a page is in flight is
 * reported and the writer frees cleanly. Labelled "threads" (TSan). */
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tarn/buf.h"
#include "tarn/error.h"
#include "tarn/parquet.h"

static int buf_sink(void *ctx, const void *p, size_t n) {
  return tarn_buf_append((tarn_buf *)ctx, p, n);
}

typedef struct failing {
  size_t left;
} failing;

static int failing_sink(void *ctx, const void *p, size_t n) {
  (void)p;
  failing *f = ctx;
  if (n > f->left)
    return TARN_EIO;
  f->left -= n;
  return 0;
}

static uint8_t payload[70000];

/* Rows of 0..~69 KB with a null every 37th row. */
static int write_file(int codec, int threads, uint32_t page, uint64_t group, size_t rows,
                      tarn_parquet_write_fn sink, void *ctx) {
  tarn_parquet_writer_opts o = {TARN_PARQUET_KAFKA_RECORD,
                                TARN_PARQUET_KAFKA_SERDE,
                                "x.index",
                                codec,
                                0,
                                group,
                                page,
                                threads};
  tarn_parquet_writer *w;
  int rc = tarn_parquet_writer_open(&w, &o, sink, ctx);
  if (rc)
    return rc;
  for (size_t i = 0; rc == 0 && i < rows; i++) {
    if (i % 37 == 5)
      rc = tarn_parquet_writer_add_null(w);
    else
      rc = tarn_parquet_writer_add(w, payload + i % 97, (i * 7919) % (i % 11 == 0 ? 69000 : 3000));
  }
  if (rc == 0)
    rc = tarn_parquet_writer_finish(w, NULL);
  tarn_parquet_writer_close(w);
  return rc;
}

typedef struct src {
  const uint8_t *p;
  size_t n;
} src;

static int mem_read(void *ctx, uint64_t off, void *buf, size_t n) {
  src *s = ctx;
  memcpy(buf, s->p + off, n);
  return 0;
}

static void same_bytes(void **state) {
  (void)state;
  for (size_t i = 0; i < sizeof payload; i++)
    payload[i] = (uint8_t)((i * 2654435761u) >> (i % 3 == 0 ? 29 : 13));
  static const int codecs[] = {TARN_PARQUET_ZSTD, TARN_PARQUET_GZIP, TARN_PARQUET_SNAPPY,
                               TARN_PARQUET_LZ4_RAW, TARN_PARQUET_UNCOMPRESSED};
  static const uint32_t pages[] = {1, 4096, 65536, 0};
  static const uint64_t groups[] = {100000, 0};
  for (size_t c = 0; c < 5; c++)
    for (size_t p = 0; p < 4; p++)
      for (size_t g = 0; g < 2; g++) {
        tarn_buf a = TARN_BUF_INIT, b = TARN_BUF_INIT;
        assert_int_equal(write_file(codecs[c], 0, pages[p], groups[g], 600, buf_sink, &a), 0);
        assert_int_equal(write_file(codecs[c], 1, pages[p], groups[g], 600, buf_sink, &b), 0);
        assert_int_equal(a.len, b.len);
        assert_memory_equal(a.data, b.data, a.len);
        src s = {b.data, b.len};
        tarn_parquet_reader *r;
        assert_int_equal(tarn_parquet_open(&r, mem_read, &s, b.len, NULL), 0);
        size_t rows = 0, nulls = 0;
        const uint8_t *v;
        size_t n;
        int is_null, rc;
        while ((rc = tarn_parquet_next(r, &v, &n, &is_null)) == 0) {
          if (is_null)
            nulls++;
          else
            assert_int_equal(n, (rows * 7919) % (rows % 11 == 0 ? 69000 : 3000));
          rows++;
        }
        assert_int_equal(rc, TARN_EEND);
        assert_int_equal(rows, 600);
        assert_int_equal(nulls, 17);
        tarn_parquet_close(r);
        tarn_buf_free(&a), tarn_buf_free(&b);
      }
}

static void sink_failure(void **state) {
  (void)state;
  /* Fails at several points: the magic, a page header, a page, the footer. */
  static const size_t at[] = {0, 10, 5000, 60000, 200000, 400000};
  for (size_t i = 0; i < sizeof at / sizeof *at; i++) {
    failing f = {at[i]};
    int rc = write_file(TARN_PARQUET_ZSTD, 1, 4096, 0, 300, failing_sink, &f);
    assert_int_equal(rc, TARN_EIO);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(same_bytes),
      cmocka_unit_test(sink_failure),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
