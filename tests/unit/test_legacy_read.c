/* Reading a legacy (format version 1 and 2) deployment end to end (spec
 * Appendix C; tables-and-vectors §4.9): the example's 80-byte WAL object and
 * its two index records, one per entry, written with the sequenced put, in
 * v1 and in v2 form. The reader tells the versions from the bytes and reads
 * the RAW entries through tarn_reader; on the sqlite: + file:// variant also
 * through `tarn read` (TARN_BIN) of a catalog whose stream lists log 7.
 * LS-001 (issue 31): tarn writes version 3 only, so the writer refuses to
 * append to the legacy log, and fsck reports a log that mixes versions.
 * ctest-variants: mem sqlite */
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log/format_version.h"
#include "tarn/catalog.h"
#include "tarn/deployment.h"
#include "tarn/error.h"
#include "tarn/fsck.h"
#include "tarn/key.h"
#include "tarn/meta.h"
#include "tarn/objstore.h"
#include "tarn/testing.h"
#include "tarn/reader.h"
#include "tarn/wal.h"
#include "tarn/writer.h"
#include "tu_log.h"

/* §4.9: index_length 64, tuples (7, 0, 0, 5) and (7, 1, 5, 3), payload 01..08. */
static const uint8_t OBJECT[80] = {
    0, 0, 0, 0, 0, 0, 0, 0x40,                         /* index_length */
    0, 0, 0, 0, 0, 0, 0, 7,    0, 0, 0, 0, 0, 0, 0, 0, /* log 7, entry 0 */
    0, 0, 0, 0, 0, 0, 0, 0,    0, 0, 0, 0, 0, 0, 0, 5, /* offset 0, length 5 */
    0, 0, 0, 0, 0, 0, 0, 7,    0, 0, 0, 0, 0, 0, 0, 1, /* log 7, entry 1 */
    0, 0, 0, 0, 0, 0, 0, 5,    0, 0, 0, 0, 0, 0, 0, 3, /* offset 5, length 3 */
    1, 2, 3, 4, 5, 6, 7, 8};
#define OBJECT_NAME "7-00000001.wal" /* the location of the example's values */

typedef struct fx {
  tarn_meta *m;
  char *uri;
  tarn_objstore *wal;
  char dir[64];
} fx;

static void fx_open(fx *f, const char *variant) {
  f->m = tu_meta_open(variant, &f->uri);
  char wal[96];
  if (strcmp(variant, "sqlite") == 0) {
    snprintf(f->dir, sizeof f->dir, "/tmp/tarn-legacy-XXXXXX");
    assert_non_null(mkdtemp(f->dir));
    snprintf(wal, sizeof wal, "file://%s/wal", f->dir);
  } else {
    f->dir[0] = 0;
    snprintf(wal, sizeof wal, "mem:legacy-%d", (int)getpid());
  }
  assert_int_equal(tarn_objstore_open(wal, &f->wal), 0);
}

static void fx_close(fx *f) {
  tarn_objstore_close(f->wal);
  tu_meta_done(f->m, f->uri);
  if (f->dir[0]) {
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", f->dir);
    assert_int_equal(system(cmd), 0);
  } else {
    char wal[96];
    snprintf(wal, sizeof wal, "legacy-%d", (int)getpid());
    tarn_objstore_mem_drop(wal);
  }
}

/* The legacy index record of one entry, as Ursa writes it. */
static void publish(tarn_meta *m, uint64_t log, int version, uint64_t records, uint64_t size,
                    const char *location, uint64_t entry_id, const char *file_type) {
  char v[256], prefix[TARN_KEY_FIELD_LEN + 1], part[TARN_KEY_PARTITION_LEN + 1];
  int n = snprintf(v, sizeof v, "%020llu-%020llu-%s-%llu", (unsigned long long)records,
                   (unsigned long long)size, location, (unsigned long long)entry_id);
  if (version == 2)
    n += snprintf(v + n, sizeof v - (size_t)n, "-%s", file_type);
  snprintf(prefix, sizeof prefix, "%020llu", (unsigned long long)log);
  tarn_key_partition(part, log);
  tarn_meta_rec r = {0};
  assert_int_equal(tarn_meta_sequenced_put(m, part, prefix, records, size, v, (size_t)n, &r), 0);
  tarn_meta_rec_free(&r);
}

static void example_deployment(fx *f, int version) {
  assert_int_equal(tarn_objstore_put(f->wal, OBJECT_NAME, OBJECT, sizeof OBJECT), 0);
  publish(f->m, 7, version, 2, 5, OBJECT_NAME, 0, "RAW"); /* K(7, 2, 5) */
  publish(f->m, 7, version, 1, 3, OBJECT_NAME, 1, "RAW"); /* K(7, 3, 8) */
}

static void expect_entry(tarn_log_iter *it, uint64_t offset, uint32_t records, uint64_t cum,
                         const char *payload) {
  tarn_entry e;
  assert_int_equal(tarn_log_iter_next(it, &e, 0), 0);
  assert_int_equal(e.offset, offset);
  assert_int_equal(e.record_count, records);
  assert_int_equal(e.cumulative_size, cum);
  assert_int_equal(e.payload_len, strlen(payload));
  assert_memory_equal(e.payload, payload, e.payload_len);
}

/* Reads log 7 from `from`: the entries of the example, then the end. */
static void read_example(fx *f, uint64_t from) {
  tarn_reader *r;
  assert_int_equal(tarn_reader_open(f->m, f->wal, NULL, NULL, &r), 0);
  tarn_log_iter *it;
  assert_int_equal(tarn_log_iter_open(r, 7, from, &it), 0);
  if (from < 2)
    expect_entry(it, 0, 2, 5, "\1\2\3\4\5");
  expect_entry(it, 2, 1, 8, "\6\7\10");
  tarn_entry e;
  assert_int_equal(tarn_log_iter_next(it, &e, 0), TARN_EEND);
  tarn_log_iter_close(it);
  uint64_t end, first;
  assert_int_equal(tarn_reader_end_offset(r, 7, &end, NULL), 0);
  assert_int_equal(end, 3);
  assert_int_equal(tarn_reader_first_offset(r, 7, &first), 0);
  assert_int_equal(first, 0);
  tarn_reader_close(r);
}

static void reads_v1_and_v2(void **state) {
  for (int version = 1; version <= 2; version++) {
    fx f;
    fx_open(&f, (const char *)*state);
    example_deployment(&f, version);
    for (uint64_t from = 0; from <= 2; from++)
      read_example(&f, from);
    fx_close(&f);
  }
}

/* The tuples come in no particular order: swapped, the same entries. */
static void tuples_in_any_order(void **state) {
  fx f;
  fx_open(&f, (const char *)*state);
  uint8_t obj[sizeof OBJECT];
  memcpy(obj, OBJECT, sizeof obj);
  memcpy(obj + 8, OBJECT + 40, 32);
  memcpy(obj + 40, OBJECT + 8, 32);
  assert_int_equal(tarn_objstore_put(f.wal, OBJECT_NAME, obj, sizeof obj), 0);
  publish(f.m, 7, 1, 2, 5, OBJECT_NAME, 0, NULL);
  publish(f.m, 7, 1, 1, 3, OBJECT_NAME, 1, NULL);
  read_example(&f, 0);
  fx_close(&f);
}

/* What a legacy record cannot be read as: an error naming it, never data. */
static int first_read(fx *f) {
  tarn_reader *r;
  assert_int_equal(tarn_reader_open(f->m, f->wal, NULL, NULL, &r), 0);
  tarn_log_iter *it;
  assert_int_equal(tarn_log_iter_open(r, 7, 0, &it), 0);
  tarn_entry e;
  int rc = tarn_log_iter_next(it, &e, 0);
  tarn_log_iter_close(it);
  tarn_reader_close(r);
  return rc;
}

static void legacy_refusals(void **state) {
  /* A v2 PARQUET record: legacy compacted data is out of scope. */
  fx f;
  fx_open(&f, (const char *)*state);
  publish(f.m, 7, 2, 2, 5, "c/x.parquet", 0, "PARQUET");
  assert_int_equal(first_read(&f), TARN_EUNSUPPORTED);
  fx_close(&f);
  /* An entry_id the object does not hold. */
  fx_open(&f, (const char *)*state);
  assert_int_equal(tarn_objstore_put(f.wal, OBJECT_NAME, OBJECT, sizeof OBJECT), 0);
  publish(f.m, 7, 1, 2, 5, OBJECT_NAME, 9, NULL);
  assert_int_equal(first_read(&f), TARN_ECORRUPT);
  assert_non_null(strstr(tarn_errmsg(), OBJECT_NAME));
  fx_close(&f);
  /* A size that is not the entry's. */
  fx_open(&f, (const char *)*state);
  assert_int_equal(tarn_objstore_put(f.wal, OBJECT_NAME, OBJECT, sizeof OBJECT), 0);
  publish(f.m, 7, 2, 2, 4, OBJECT_NAME, 0, "RAW");
  assert_int_equal(first_read(&f), TARN_ECORRUPT);
  fx_close(&f);
  /* LS-001: a legacy record naming a version 3 object. */
  fx_open(&f, (const char *)*state);
  tarn_wal_builder b;
  tarn_buf v3 = TARN_BUF_INIT;
  tarn_wal_builder_init(&b);
  assert_int_equal(tarn_wal_builder_add(&b, 7, "\1\2\3\4\5", 5, 2), 0);
  assert_int_equal(tarn_wal_builder_finish(&b, &v3), 0);
  tarn_wal_builder_free(&b);
  assert_int_equal(tarn_objstore_put(f.wal, OBJECT_NAME, v3.data, v3.len), 0);
  tarn_buf_free(&v3);
  publish(f.m, 7, 1, 2, 5, OBJECT_NAME, 0, NULL);
  assert_int_equal(first_read(&f), TARN_EVERSION);
  fx_close(&f);
}

/* LS-001: an append to a legacy log would put a version 3 record into a
 * version 1 or 2 deployment; the writer refuses it with TARN_EVERSION naming
 * the log and its version, and writes nothing. Having seen a legacy log, it
 * records the deployment's version, and an empty log of the deployment is
 * refused from then on (issue 31). */
static void append_to_legacy_refused(void **state) {
  for (int version = 1; version <= 2; version++) {
    fx f;
    fx_open(&f, (const char *)*state);
    example_deployment(&f, version);
    tarn_writer *w;
    assert_int_equal(tarn_writer_open(f.m, f.wal, NULL, &w), 0);
    assert_int_equal(tarn_writer_append_sync(w, 7, "new", 3, 1, NULL, NULL), TARN_EVERSION);
    char want[64];
    snprintf(want, sizeof want, "log 7 is a legacy format version %d log", version);
    assert_non_null(strstr(tarn_errmsg(), want));
    int dv;
    assert_int_equal(tarn__deployment_version_get(f.m, &dv), 0);
    assert_int_equal(dv, version);
    assert_int_equal(tarn_writer_append_sync(w, 8, "new", 3, 1, NULL, NULL), TARN_EVERSION);
    snprintf(want, sizeof want, "legacy format version %d deployment", version);
    assert_non_null(strstr(tarn_errmsg(), want));
    assert_int_equal(tarn_writer_close(w), 0);
    assert_int_equal(tu_count_index(f.m, 7), 2);
    assert_int_equal(tu_count_index(f.m, 8), 0);
    read_example(&f, 0); /* still the legacy log, and readable */
    fx_close(&f);
  }
}

/* A catalog whose stream default/old has 7 partitions: logs 1..7, the
 * legacy log 7 its partition 6. */
static void legacy_stream(tarn_meta *m) {
  tarn_catalog *c;
  assert_int_equal(tarn_catalog_open(m, NULL, &c), 0);
  assert_int_equal(tarn_catalog_init(c, NULL), 0);
  tarn_catalog_record s;
  assert_int_equal(tarn_catalog_create_stream(c, "default", "old", 7, NULL, 0, &s), 0);
  assert_int_equal(s.logs[6], 7);
  tarn_catalog_record_free(&s);
  tarn_catalog_close(c);
}

/* LS-001 at the deployment (issue 31): a log without records cannot tell
 * its deployment's version, so the deployment records it, once, when a
 * process first claims it (tarn_deployment_claim_roots, through
 * tarn__deployment_version_settle): the highest legacy version among its
 * logs' last records, else 3. An empty log of a legacy deployment is then
 * refused; one of a new deployment takes appends. Before, the first append
 * to an empty log of a legacy deployment wrote version 3 records into it. */
static void empty_log_of_legacy_deployment_refused(void **state) {
  for (int version = 1; version <= 3; version++) {
    fx f;
    fx_open(&f, (const char *)*state);
    if (version < 3) { /* a stream whose partition 6 is the legacy log 7 */
      legacy_stream(f.m);
      example_deployment(&f, version);
    }
    int dv = -1;
    assert_int_equal(tarn__deployment_version_get(f.m, &dv), 0);
    assert_int_equal(dv, 0); /* nothing recorded yet */
    assert_int_equal(tarn__deployment_version_settle(f.m, &dv), 0);
    assert_int_equal(dv, version);
    assert_int_equal(tarn__deployment_version_settle(f.m, &dv), 0); /* once */
    assert_int_equal(dv, version);
    tarn_writer *w;
    assert_int_equal(tarn_writer_open(f.m, f.wal, NULL, &w), 0);
    uint64_t off = 99;
    int rc = tarn_writer_append_sync(w, 1, "new", 3, 1, &off, NULL);
    if (version < 3) {
      assert_int_equal(rc, TARN_EVERSION);
      char want[64];
      snprintf(want, sizeof want, "legacy format version %d deployment", version);
      assert_non_null(strstr(tarn_errmsg(), want));
      assert_int_equal(tu_count_index(f.m, 1), 0);
    } else {
      assert_int_equal(rc, 0);
      assert_int_equal(off, 0);
    }
    assert_int_equal(tarn_writer_close(w), 0);
    fx_close(&f);
  }
}

/* The record's value is one digit 1-3; anything else is an error naming it. */
static void deployment_version_value_checked(void **state) {
  fx f;
  fx_open(&f, (const char *)*state);
  assert_int_equal(tarn_meta_create(f.m, TARN_DEPLOYMENT_ID_PARTITION, TARN__FORMAT_VERSION_KEY,
                                    "30", 2, TARN_META_PERSISTENT, NULL),
                   0);
  int dv;
  assert_int_equal(tarn__deployment_version_get(f.m, &dv), TARN_ECORRUPT);
  assert_non_null(strstr(tarn_errmsg(), "tarn-deployment/format-version"));
  assert_non_null(strstr(tarn_errmsg(), "byte 0"));
  fx_close(&f);
}

static size_t count_kind(const tarn_fsck_report *rep, const char *kind, const char **key) {
  size_t n = 0;
  for (size_t i = 0; i < rep->n_faults; i++)
    if (strcmp(rep->faults[i].kind, kind) == 0 && ++n && key)
      *key = rep->faults[i].key;
  return n;
}

/* LS-001: fsck reports a log whose records mix versions (a version 3 record
 * after the v2 ones, as an older tarn's append wrote it): one fault, naming
 * the record where the version changes. The legacy log alone is clean. */
static void fsck_reports_mixed_versions(void **state) {
  fx f;
  fx_open(&f, (const char *)*state);
  example_deployment(&f, 2);
  tarn_fsck_options o = {.skip_read = 1};
  tarn_fsck_report rep = {0};
  assert_int_equal(tarn_fsck_log(f.m, f.wal, f.wal, 7, "ns", "old", &o, &rep), 0);
  assert_int_equal(rep.n_faults, 0);
  tarn_fsck_report_free(&rep);
  uint64_t end;
  assert_int_equal(tu_publish(f.m, 7, 1, 4, &end), 0);
  assert_int_equal(end, 4);
  assert_int_equal(tarn_fsck_log(f.m, f.wal, f.wal, 7, "ns", "old", &o, &rep), 0);
  const char *key = NULL;
  assert_int_equal(count_kind(&rep, "version-mixed", &key), 1);
  char k[TARN_KEY_LEN + 1];
  tarn_key_format(k, 7, 4, 12);
  assert_string_equal(key, k);
  tarn_fsck_report_free(&rep);
  fx_close(&f);
}

/* `tarn read` of the deployment: a catalog whose stream's partition 6 is
 * log 7 (its logs are 1..7), the legacy records and object under it. */
static void cli_reads_legacy(void **state) {
  (void)state;
  const char *bin = getenv("TARN_BIN");
  assert_non_null(bin);
  fx f;
  fx_open(&f, "sqlite");
  legacy_stream(f.m);
  example_deployment(&f, 2);
  char cmd[1024], out[64] = "";
  snprintf(cmd, sizeof cmd,
           "'%s' read --meta '%s' --wal 'file://%s/wal' --compacted 'file://%s/c' default/old "
           "--partition 6 --format hex",
           bin, f.uri, f.dir, f.dir);
  FILE *p = popen(cmd, "r");
  assert_non_null(p);
  char line[256];
  size_t k = 0;
  while (fgets(line, sizeof line, p)) {
    char *sp = strrchr(line, ' ');
    assert_non_null(sp);
    k += (size_t)snprintf(out + k, sizeof out - k, "%s", sp + 1);
  }
  assert_int_equal(pclose(p), 0);
  assert_string_equal(out, "0102030405\n060708\n");
  fx_close(&f);
}

int main(int argc, char **argv) {
  const char *v = argc > 1 ? argv[1] : "mem";
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_prestate(reads_v1_and_v2, (void *)v),
      cmocka_unit_test_prestate(tuples_in_any_order, (void *)v),
      cmocka_unit_test_prestate(legacy_refusals, (void *)v),
      cmocka_unit_test_prestate(append_to_legacy_refused, (void *)v),
      cmocka_unit_test_prestate(fsck_reports_mixed_versions, (void *)v),
      cmocka_unit_test_prestate(empty_log_of_legacy_deployment_refused, (void *)v),
      cmocka_unit_test_prestate(deployment_version_value_checked, (void *)v),
      cmocka_unit_test_prestate(cli_reads_legacy, (void *)v),
  };
  /* the command reads a deployment on disk: the sqlite: + file:// variant */
  size_t n = sizeof tests / sizeof *tests - (strcmp(v, "sqlite") != 0);
  return _cmocka_run_group_tests("test_legacy_read", tests, n, NULL, NULL);
}
