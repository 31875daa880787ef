/* tarn's Parquet files against independent implementations (npm packages in
 * tests/interop, installed by `TARN_WITH_NPM=1 scripts/install-deps.sh`):
 *  - tarn writes files with every codec and several row-group and page sizes;
 *    DuckDB, arrow-rs (parquet-wasm) and hyparquet must read the same payloads
 *    byte for byte, nulls included, the schema and the five footer keys
 *    (tests/interop/check_tarn_files.mjs);
 *  - DuckDB writes files in many layouts (codecs, dictionary on and off,
 *    version 2 encodings, small row groups, other columns, required payload),
 *    and arrow-rs writes data pages v1 and v2 (DuckDB writes no v2 data pages)
 *    with every codec, dictionary on and off, small pages; tarn must read the
 *    payloads they read back or were given (tests/interop/duckdb_write_files.mjs,
 *    arrow_write_files.mjs), also after seeking.
 * Without node or the packages the test skips, except in CI (CI=true). */
#include "testutil.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "tarn/buf.h"
#include "tarn/error.h"
#include "tarn/parquet.h"
#include "util/bytes.h"

static char interop[4096];

static int have_interop(void) {
  const char *data = getenv("TARN_TESTDATA");
  if (!data)
    return 0;
  /* tests/data -> tests/interop; tests/data need not exist, so no "..". */
  snprintf(interop, sizeof interop, "%s", data);
  char *slash = strrchr(interop, '/');
  if (!slash)
    return 0;
  snprintf(slash, sizeof interop - (size_t)(slash - interop), "/interop");
  char probe[4200];
  snprintf(probe, sizeof probe, "%s/node_modules/@duckdb/node-api/package.json", interop);
  struct stat st;
  return stat(probe, &st) == 0 && system("node --version >/dev/null 2>&1") == 0;
}

static int file_sink(void *ctx, const void *p, size_t n) {
  return fwrite(p, 1, n, (FILE *)ctx) == n ? 0 : TARN_EIO;
}

static int file_read(void *ctx, uint64_t off, void *buf, size_t n) {
  FILE *f = ctx;
  if (fseeko(f, (off_t)off, SEEK_SET) != 0 || fread(buf, 1, n, f) != n)
    return TARN_EIO;
  return 0;
}

static void put_expect(FILE *e, const uint8_t *p, size_t n, int is_null) {
  uint8_t h[5] = {!is_null};
  if (is_null) {
    fwrite(h, 1, 1, e);
    return;
  }
  tarn__st_le32(h + 1, (uint32_t)n);
  fwrite(h, 1, 5, e);
  fwrite(p, 1, n, e);
}

typedef struct layout {
  const char *name;
  uint32_t page_size;
  uint64_t row_group_size;
  size_t rows, max_len;
} layout;

static void write_tarn_file(const char *dir, int codec, const char *codec_name, const layout *l,
                            uint64_t seed) {
  char path[4200], epath[4200], companion[256];
  snprintf(path, sizeof path, "%s/%s-%s.parquet", dir, codec_name, l->name);
  snprintf(epath, sizeof epath, "%s/%s-%s.expect", dir, codec_name, l->name);
  snprintf(companion, sizeof companion, "%s-%s.index", codec_name, l->name);
  FILE *f = fopen(path, "wb"), *e = fopen(epath, "wb");
  assert_non_null(f);
  assert_non_null(e);
  tarn_parquet_writer_opts o = {TARN_PARQUET_KAFKA_RECORD,
                                TARN_PARQUET_KAFKA_SERDE,
                                companion,
                                codec,
                                0,
                                l->row_group_size,
                                l->page_size,
                                0};
  tarn_parquet_writer *w;
  assert_int_equal(tarn_parquet_writer_open(&w, &o, file_sink, f), 0);
  uint8_t *buf = malloc(l->max_len + 1);
  uint64_t s = seed;
  for (size_t i = 0; i < l->rows; i++) {
    uint64_t k = tu_rand(&s);
    if (k % 9 == 0) {
      assert_int_equal(tarn_parquet_writer_add_null(w), 0);
      put_expect(e, NULL, 0, 1);
      continue;
    }
    size_t n = k % 17 == 0 ? 0 : (size_t)(tu_rand(&s) % (l->max_len + 1));
    for (size_t j = 0; j < n; j++)
      buf[j] = (uint8_t)(tu_rand(&s) >> (j % 5 == 0 ? 0 : 56));
    assert_int_equal(tarn_parquet_writer_add(w, buf, n), 0);
    put_expect(e, buf, n, 0);
  }
  if (tarn_parquet_writer_finish(w, NULL))
    fail_msg("%s", tarn_errmsg());
  tarn_parquet_writer_close(w);
  free(buf);
  assert_int_equal(fclose(f), 0);
  assert_int_equal(fclose(e), 0);
}

static int run_node(const char *script, const char *dir) {
  char cmd[9000];
  snprintf(cmd, sizeof cmd, "cd '%s' && node %s '%s'", interop, script, dir);
  return system(cmd);
}

/* LS-056, LS-057, LS-058: other implementations read tarn's files as the spec says. */
static void others_read_tarn_files(void **state) {
  if (!have_interop()) {
    if (tu_in_ci())
      fail_msg("CI: node and tests/interop/node_modules are required (TARN_WITH_NPM=1 "
               "scripts/install-deps.sh)");
    skip();
  }
  char *dir = tu_tmpdir("pq-tarn");
  static const struct {
    int codec;
    const char *name;
  } codecs[] = {{TARN_PARQUET_UNCOMPRESSED, "uncompressed"},
                {TARN_PARQUET_SNAPPY, "snappy"},
                {TARN_PARQUET_GZIP, "gzip"},
                {TARN_PARQUET_ZSTD, "zstd"},
                {TARN_PARQUET_LZ4_RAW, "lz4_raw"}};
  static const layout layouts[] = {
      {"defaults", 0, 0, 2000, 600},
      {"smallpages", 1000, 20000, 3000, 300},
      {"tinygroups", 100, 3000, 1500, 120},
      {"largerows", 0, 3u << 20, 12, 1500000},
      {"empty", 0, 0, 0, 1},
  };
  uint64_t seed = 1;
  for (size_t c = 0; c < sizeof codecs / sizeof codecs[0]; c++)
    for (size_t l = 0; l < sizeof layouts / sizeof layouts[0]; l++)
      write_tarn_file(dir, codecs[c].codec, codecs[c].name, &layouts[l], seed++);
  assert_int_equal(run_node("check_tarn_files.mjs", dir), 0);
  tu_rmtree(dir);
  free(dir);
}

static uint8_t *read_all(const char *path, size_t *n) {
  FILE *f = fopen(path, "rb");
  assert_non_null(f);
  tarn_buf b = TARN_BUF_INIT;
  uint8_t chunk[65536];
  size_t k;
  while ((k = fread(chunk, 1, sizeof chunk, f)) > 0)
    assert_int_equal(tarn_buf_append(&b, chunk, k), 0);
  fclose(f);
  assert_int_equal(tarn_buf_reserve(&b, 1), 0);
  return tarn_buf_steal(&b, n);
}

/* Compares the reader from its position on with the .expect rows from row `from`. */
static void compare(tarn_parquet_reader *r, const uint8_t *e, size_t elen, size_t from,
                    const char *name) {
  size_t off = 0, row = 0;
  while (off < elen) {
    int want_null = e[off] == 0;
    uint32_t n = want_null ? 0 : tarn__ld_le32(e + off + 1);
    const uint8_t *want = e + off + 5;
    off += want_null ? 1 : 5 + n;
    if (row++ < from)
      continue;
    const uint8_t *p;
    size_t len;
    int is_null;
    if (tarn_parquet_next(r, &p, &len, &is_null))
      fail_msg("%s: row %zu: %s", name, row - 1, tarn_errmsg());
    if (is_null != want_null || len != n || (n && memcmp(p, want, n) != 0))
      fail_msg("%s: row %zu differs (null %d/%d, %zu/%u bytes)", name, row - 1, is_null, want_null,
               len, n);
  }
  const uint8_t *p;
  size_t len;
  int is_null;
  if (tarn_parquet_next(r, &p, &len, &is_null) != TARN_EEND)
    fail_msg("%s: rows after the last expected one", name);
}

static void tarn_reads_duckdb_and_arrow_files(void **state) {
  if (!have_interop()) {
    if (tu_in_ci())
      fail_msg("CI: node and tests/interop/node_modules are required (TARN_WITH_NPM=1 "
               "scripts/install-deps.sh)");
    skip();
  }
  char *dir = tu_tmpdir("pq-duckdb");
  assert_int_equal(run_node("duckdb_write_files.mjs", dir), 0);
  assert_int_equal(run_node("arrow_write_files.mjs", dir), 0);
  DIR *d = opendir(dir);
  assert_non_null(d);
  struct dirent *de;
  int files = 0;
  const char *const types[] = {TARN_PARQUET_KAFKA_SERDE};
  tarn_parquet_reader_opts ro = {types, 1, 0, 0};
  while ((de = readdir(d)) != NULL) {
    size_t nl = strlen(de->d_name);
    if (nl < 9 || strcmp(de->d_name + nl - 8, ".parquet") != 0)
      continue;
    char path[4400], epath[4400];
    snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
    snprintf(epath, sizeof epath, "%s/%.*s.expect", dir, (int)(nl - 8), de->d_name);
    size_t elen;
    uint8_t *e = read_all(epath, &elen);
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseeko(f, 0, SEEK_END);
    uint64_t size = (uint64_t)ftello(f);
    tarn_parquet_reader *r;
    if (tarn_parquet_open(&r, file_read, f, size, &ro))
      fail_msg("%s: %s", de->d_name, tarn_errmsg());
    compare(r, e, elen, 0, de->d_name);
    /* Seek into the middle and read on. */
    uint64_t rows = (uint64_t)tarn_parquet_get_meta(r)->num_rows;
    for (uint64_t at = rows / 3; at < rows; at += rows / 3 + 1) {
      if (tarn_parquet_seek(r, at))
        fail_msg("%s: seek %llu: %s", de->d_name, (unsigned long long)at, tarn_errmsg());
      compare(r, e, elen, (size_t)at, de->d_name);
    }
    tarn_parquet_close(r);
    fclose(f);
    free(e);
    files++;
  }
  closedir(d);
  assert_true(files >= 40);
  tu_rmtree(dir);
  free(dir);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(others_read_tarn_files),
      cmocka_unit_test(tarn_reads_duckdb_and_arrow_files),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
