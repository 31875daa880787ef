/* DuckDB reads every compacted file the compactor writes, with the original
 * payloads (LS-056, LS-058), for tarn's and the Kafka binding's identifiers.
 * Uses the npm packages of tests/interop; without node or them the test
 * skips, except in CI (CI=true), where it fails. */
#include "testutil.h"
#include "tu_compact.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "tarn/companion.h"
#include "tarn/compactor.h"
#include "tarn/parquet.h"

static char interop[4096];

static int have_interop(void) {
  const char *data = getenv("TARN_TESTDATA");
  if (!data)
    return 0;
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

/* Compacts ns/s1 (written in several ranges and files) and copies every file
 * with an .expect of its payloads, taken from the snapshot before. */
static void run(const char *const *props, const char *serde, const char *record) {
  if (!have_interop()) {
    if (tu_in_ci())
      fail_msg("node and the tests/interop packages are required in CI");
    skip();
  }
  tu_cenv E;
  tu_cenv_open(&E, "interop", 1, 1, props);
  tu_append(&E, E.log, 0, 120, 20);
  tu_snap before;
  tu_snapshot(&E, E.log, &before);
  tarn_compactor_options o;
  tarn_compactor_options_default(&o);
  o.max_range_bytes = 6000;
  o.max_file_bytes = 2500;
  tarn_compactor *c;
  assert_int_equal(tarn_compactor_open(E.m, E.wal, E.compacted, &o, &c), 0);
  char *out = tu_tmpdir("interop-out");
  size_t nfiles = 0;
  for (int did = 1; did;) {
    tarn_compact_range r;
    assert_int_equal(tarn_compact_once(c, E.log, 1, &r, &did), 0);
    for (size_t i = 0; did && i < r.n_files; i++, nfiles++) {
      char src[600], comp[600], dst[4300], exp[4300];
      snprintf(src, sizeof src, "%s%s", r.dir, r.files[i].name);
      snprintf(comp, sizeof comp, "%.*s.index", (int)(strlen(src) - 8), src);
      tarn_buf b = TARN_BUF_INIT, gz = TARN_BUF_INIT;
      assert_int_equal(tarn_objstore_get(E.compacted, src, &b), 0);
      assert_int_equal(tarn_objstore_get(E.compacted, comp, &gz), 0);
      snprintf(dst, sizeof dst, "%s/%s", out, r.files[i].name);
      snprintf(exp, sizeof exp, "%.*s.expect", (int)(strlen(dst) - 8), dst);
      FILE *f = fopen(dst, "wb"), *e = fopen(exp, "wb");
      assert_non_null(f);
      assert_non_null(e);
      fwrite(b.data, 1, b.len, f);
      tarn_companion cp;
      assert_int_equal(tarn_companion_decode(&cp, gz.data, gz.len, 0), 0);
      for (size_t k = 0; k < cp.nrows; k++) {
        const tu_snap_ent *s = NULL;
        for (size_t j = 0; j < before.n && !s; j++)
          if (before.v[j].offset == (uint64_t)cp.rows[k].offset)
            s = &before.v[j];
        assert_non_null(s);
        uint8_t h[5] = {1, (uint8_t)s->len, (uint8_t)(s->len >> 8), (uint8_t)(s->len >> 16),
                        (uint8_t)(s->len >> 24)};
        fwrite(h, 1, 5, e);
        fwrite(s->payload, 1, s->len, e);
      }
      tarn_companion_free(&cp);
      fclose(f);
      fclose(e);
      tarn_buf_free(&b);
      tarn_buf_free(&gz);
    }
    tarn_compact_range_free(&r);
  }
  assert_true(nfiles >= 4);
  char cmd[9000];
  snprintf(cmd, sizeof cmd, "node %s/check_compacted.mjs %s %s %s", interop, out, serde, record);
  assert_int_equal(system(cmd), 0);
  tu_rmtree(out);
  free(out);
  tu_snap_free(&before);
  tarn_compactor_close(c);
  tu_cenv_close(&E);
}

static void duckdb_reads_tarn_binding(void **state) {
  (void)state;
  run(NULL, TARN_PARQUET_TARN_SERDE, TARN_PARQUET_TARN_RECORD);
}

static void duckdb_reads_kafka_binding(void **state) {
  (void)state;
  const char *props[] = {"lakestream.kafka.topic.name", "t", NULL};
  run(props, TARN_PARQUET_KAFKA_SERDE, TARN_PARQUET_KAFKA_RECORD);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(duckdb_reads_tarn_binding),
      cmocka_unit_test(duckdb_reads_kafka_binding),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
