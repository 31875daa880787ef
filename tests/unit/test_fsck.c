/* fsck: a healthy deployment passes; each planted fault is found, named by
 * its kind, log, offset and object.
 * Reproduction of issue #11 part 6 (fails on 4d5a889): a compacted file whose
 * footer's counts would amplify into a large allocation stopped the run for
 * want of memory (under a per-allocation bound, tu_alloc_limit) instead of
 * being reported as a fault, with the next file still checked.
 * ctest-wrap-alloc */
#include "testutil.h"
#include "tu_alloc_fail.h"
#include "tu_compacted.h"
#include "tu_fixture.h"
#include "tu_index.h"
#include "tu_parquet_bomb.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tarn/catalog.h"
#include "tarn/companion.h"
#include "tarn/entryindex.h"
#include "tarn/fileindex.h"
#include "tarn/fsck.h"
#include "tarn/key.h"
#include "tarn/testing.h"
#include "tarn/parquet.h"
#include "tarn/reader.h"
#include "tarn/writer.h"

enum { N = 6 };

/* The world of these tests: a deployment (the fixture) with stream ns/st
 * whose log L holds N entries, each in a RAW record of its own (entry i has
 * i%3+1 records); part is L's partition key. */
typedef struct fsck_log {
  tu_fixture d;
  uint64_t L;
  char part[32];
} fsck_log;

static void log_open(fsck_log *e) {
  tu_fixture_open_unique(&e->d, "fsck");
  tu_fixture_catalog(&e->d, 1);
  tarn_catalog_record st;
  assert_int_equal(tarn_catalog_create_stream(e->d.cat, "ns", "st", 1, NULL, 0, &st), 0);
  e->L = st.logs[0];
  tarn_catalog_record_free(&st);
  tarn_key_partition(e->part, e->L);
  tarn_writer_options o;
  tarn_writer_options_default(&o);
  o.batch_ms = 5;
  tarn_writer *w;
  assert_int_equal(tarn_writer_open(e->d.m, e->d.wal, &o, &w), 0);
  for (int i = 0; i < N; i++) {
    char b[16];
    int k = snprintf(b, sizeof b, "entry-%d", i);
    assert_int_equal(
        tarn_writer_append_sync(w, e->L, b, (size_t)k, (uint32_t)(i % 3) + 1, NULL, NULL), 0);
  }
  assert_int_equal(tarn_writer_close(w), 0);
}

static void run(fsck_log *e, tarn_fsck_report *rep) {
  assert_int_equal(tarn_fsck_run(e->d.m, e->d.wal, e->d.compacted, NULL, rep), 0);
  for (size_t i = 0; i < rep->n_faults; i++)
    print_message("  fault %s log %llu offset %llu key %s object %s: %s\n", rep->faults[i].kind,
                  (unsigned long long)rep->faults[i].log_id,
                  (unsigned long long)rep->faults[i].offset,
                  rep->faults[i].key ? rep->faults[i].key : "-",
                  rep->faults[i].object ? rep->faults[i].object : "-", rep->faults[i].message);
}

/* The first fault of a kind, or NULL. */
static const tarn_fsck_fault *find(const tarn_fsck_report *rep, const char *kind) {
  for (size_t i = 0; i < rep->n_faults; i++)
    if (strcmp(rep->faults[i].kind, kind) == 0)
      return &rep->faults[i];
  return NULL;
}

/* The value of the index record i (key order) and its key. */
static tarn_meta_recs records(fsck_log *e) { return tu_index_records(e->d.m, e->L); }

static void healthy_passes(void **state) {
  fsck_log e;
  log_open(&e);
  tarn_fsck_report rep;
  run(&e, &rep);
  assert_int_equal(rep.n_faults, 0);
  assert_int_equal(rep.streams, 1);
  assert_int_equal(rep.logs, 1);
  assert_int_equal(rep.records, N);
  assert_int_equal(rep.entries_read, N);
  tarn_fsck_report_free(&rep);
  tu_fixture_close(&e.d);
}

static void deleted_wal_object(void **state) {
  fsck_log e;
  log_open(&e);
  tarn_meta_recs r = records(&e);
  tarn_entry_index ei;
  assert_int_equal(tarn_entry_index_decode(r.v[2].value, r.v[2].value_len, &ei), 0);
  assert_int_equal(tarn_objstore_delete(e.d.wal, ei.location), 0);
  tarn_fsck_report rep;
  run(&e, &rep);
  const tarn_fsck_fault *f = find(&rep, "wal-missing");
  assert_non_null(f);
  assert_int_equal(f->log_id, e.L);
  assert_string_equal(f->object, ei.location);
  assert_string_equal(f->key, r.v[2].key);
  tarn_key k;
  assert_int_equal(tarn_key_parse(r.v[2].key, TARN_KEY_LEN, &k), 0);
  assert_int_equal(f->offset, k.end_offset - (uint64_t)ei.message_count);
  assert_non_null(find(&rep, "read")); /* and the reader cannot read it */
  tarn_fsck_report_free(&rep);
  /* below B its object may go: not a fault (the reclaimer's case) */
  char tk[TARN_KEY_SLASH_MAX], b[24];
  tarn_key_trim_marker(tk, e.L);
  int n = snprintf(b, sizeof b, "%llu", (unsigned long long)k.end_offset);
  assert_int_equal(tarn_meta_put(e.d.m, e.part, tk, b, (size_t)n, NULL), 0);
  run(&e, &rep);
  assert_int_equal(rep.n_faults, 0);
  tarn_fsck_report_free(&rep);
  tarn_entry_index_free(&ei);
  tarn_meta_recs_free(&r);
  tu_fixture_close(&e.d);
}

static void gap_in_the_index(void **state) {
  fsck_log e;
  log_open(&e);
  tarn_meta_recs r = records(&e);
  assert_int_equal(tarn_meta_delete(e.d.m, e.part, r.v[3].key), 0);
  tarn_key k;
  assert_int_equal(tarn_key_parse(r.v[2].key, TARN_KEY_LEN, &k), 0);
  tarn_fsck_report rep;
  run(&e, &rep);
  const tarn_fsck_fault *f = find(&rep, "gap");
  assert_non_null(f);
  assert_int_equal(f->offset, k.end_offset); /* the gap starts where record 2 ends */
  assert_string_equal(f->key, r.v[4].key);
  assert_null(find(&rep, "cumulative")); /* a gap is not also a size fault */
  tarn_fsck_report_free(&rep);
  /* the same gap at or below B is the spec's second exception */
  tarn_key k4;
  assert_int_equal(tarn_key_parse(r.v[4].key, TARN_KEY_LEN, &k4), 0);
  char tk[TARN_KEY_SLASH_MAX], b[24];
  tarn_key_trim_marker(tk, e.L);
  int n = snprintf(b, sizeof b, "%llu", (unsigned long long)k4.end_offset - 1);
  assert_int_equal(tarn_meta_put(e.d.m, e.part, tk, b, (size_t)n, NULL), 0);
  run(&e, &rep);
  assert_int_equal(rep.n_faults, 0);
  tarn_fsck_report_free(&rep);
  tarn_meta_recs_free(&r);
  tu_fixture_close(&e.d);
}

static void cumulative_size_mismatch(void **state) {
  fsck_log e;
  log_open(&e);
  tarn_meta_recs r = records(&e);
  tarn_key k;
  assert_int_equal(tarn_key_parse(r.v[4].key, TARN_KEY_LEN, &k), 0);
  char bad[TARN_KEY_LEN + 1];
  assert_int_equal(tarn_key_format(bad, e.L, k.end_offset, k.cumulative_size + 3), 0);
  assert_int_equal(tarn_meta_delete(e.d.m, e.part, r.v[4].key), 0);
  assert_int_equal(tarn_meta_put(e.d.m, e.part, bad, r.v[4].value, r.v[4].value_len, NULL), 0);
  tarn_fsck_report rep;
  run(&e, &rep);
  const tarn_fsck_fault *f = find(&rep, "cumulative");
  assert_non_null(f);
  assert_string_equal(f->key, bad);
  /* record 5 now disagrees with the wrong key before it, too */
  assert_int_equal(rep.n_faults >= 2, 1);
  assert_null(find(&rep, "gap"));
  tarn_fsck_report_free(&rep);
  tarn_meta_recs_free(&r);
  tu_fixture_close(&e.d);
}

static void corrupt_index_value(void **state) {
  fsck_log e;
  log_open(&e);
  tarn_meta_recs r = records(&e);
  uint8_t junk[r.v[1].value_len];
  memcpy(junk, r.v[1].value, sizeof junk);
  junk[2] = 0xff; /* a field tag no EntryIndex has, or a broken length */
  junk[3] = 0xff;
  assert_int_equal(tarn_meta_put(e.d.m, e.part, r.v[1].key, junk, sizeof junk, NULL), 0);
  tarn_fsck_report rep;
  run(&e, &rep);
  const tarn_fsck_fault *f = find(&rep, "value");
  assert_non_null(f);
  assert_string_equal(f->key, r.v[1].key);
  assert_non_null(strstr(f->message, "byte"));
  assert_null(find(&rep, "gap")); /* the records after it are not blamed */
  tarn_fsck_report_free(&rep);
  tarn_meta_recs_free(&r);
  tu_fixture_close(&e.d);
}

/* Compacts the whole log into files a-0 (entries 0..2) and a-7 (3..5), the
 * second's companion missing its last row when bad; installs the PARQUET
 * record (C3) and, when c4, retires the RAW records (C4). */
static void compact(fsck_log *e, int bad, int c4) {
  tarn_reader *r;
  assert_int_equal(tarn_reader_open(e->d.m, e->d.wal, e->d.compacted, NULL, &r), 0);
  tarn_entry_header hs[N];
  char *pl[N];
  tarn_log_iter *it;
  assert_int_equal(tarn_log_iter_open(r, e->L, 0, &it), 0);
  tarn_entry en;
  for (int i = 0; i < N; i++) {
    assert_int_equal(tarn_log_iter_next(it, &en, 0), 0);
    hs[i] = (tarn_entry_header){(int64_t)en.offset, (int32_t)en.record_count, en.timestamp_ms,
                                (int32_t)en.payload_len, (int64_t)en.cumulative_size};
    pl[i] = strndup((const char *)en.payload, en.payload_len);
  }
  tarn_log_iter_close(it);
  tarn_reader_close(r);
  int64_t end = hs[N - 1].offset + hs[N - 1].record_count;
  tu_write_compacted(e->d.compacted, "ns/st", "a-0", hs, pl, 0, 2, 2, 0);
  tu_write_compacted(e->d.compacted, "ns/st", "a-7", hs, pl, 3, 5, bad ? 4 : 5, 0);
  tarn_file_index_entry files[2] = {{hs[2].offset + hs[2].record_count - 1, (char *)"a-0.parquet"},
                                    {end - 1, (char *)"a-7.parquet"}};
  tarn_parquet_record pr = {.s = 0,
                            .e = end,
                            .c_s = 0,
                            .c_e = hs[N - 1].cumulative_size,
                            .file_size = hs[N - 1].cumulative_size,
                            .files = files,
                            .n_files = 2};
  tarn_buf val = TARN_BUF_INIT;
  assert_int_equal(tarn_entry_index_build_parquet(&pr, &val, NULL), 0);
  tarn_meta_recs recs = records(e);
  char k0[TARN_KEY_LEN + 1];
  tarn_key_format(k0, e->L, 0, 0);
  assert_int_equal(tarn_meta_put(e->d.m, e->part, recs.v[recs.n - 1].key, val.data, val.len, NULL),
                   0);
  if (c4)
    assert_int_equal(tarn_meta_delete_range(e->d.m, e->part, k0, recs.v[recs.n - 1].key, NULL), 0);
  tarn_meta_recs_free(&recs);
  tarn_buf_free(&val);
  for (int i = 0; i < N; i++)
    free(pl[i]);
}

static void compacted_log_passes(void **state) {
  fsck_log e;
  log_open(&e);
  compact(&e, 0, 1);
  tarn_fsck_report rep;
  run(&e, &rep);
  assert_int_equal(rep.n_faults, 0);
  assert_int_equal(rep.records, 1);
  assert_int_equal(rep.entries_read, N);
  tarn_fsck_report_free(&rep);
  tu_fixture_close(&e.d);
}

/* Between C3 and C4 the PARQUET record overlaps the records it replaces: the
 * spec's first exception, a warning and no fault. */
static void overlap_between_c3_and_c4(void **state) {
  fsck_log e;
  log_open(&e);
  compact(&e, 0, 0);
  tarn_fsck_report rep;
  run(&e, &rep);
  assert_int_equal(rep.n_faults, 0);
  assert_int_equal(rep.warnings, 1);
  tarn_fsck_report_free(&rep);
  tu_fixture_close(&e.d);
}

static void companion_disagrees(void **state) {
  fsck_log e;
  log_open(&e);
  compact(&e, 1, 1);
  tarn_fsck_report rep;
  run(&e, &rep);
  const tarn_fsck_fault *f = find(&rep, "companion");
  assert_non_null(f);
  assert_string_equal(f->object, "ns/st/a-7.index");
  assert_non_null(strstr(f->message, "last row ends"));
  f = find(&rep, "cumulative"); /* its last row is not the record's end */
  assert_non_null(f);
  assert_string_equal(f->object, "ns/st/a-7.parquet");
  f = find(&rep, "parquet"); /* the file has a row more than its companion */
  assert_non_null(f);
  assert_string_equal(f->object, "ns/st/a-7.parquet");
  tarn_fsck_report_free(&rep);
  tu_fixture_close(&e.d);
}

/* A fault of a record that overlaps the one before it and is RAW. */
static void overlap_is_a_fault(void **state) {
  fsck_log e;
  log_open(&e);
  tarn_meta_recs r = records(&e);
  tarn_key k;
  assert_int_equal(tarn_key_parse(r.v[3].key, TARN_KEY_LEN, &k), 0);
  /* record 4's value copied under a key ending one offset after record 3's
   * end: it now starts before record 3 ends */
  tarn_entry_index ei;
  assert_int_equal(tarn_entry_index_decode(r.v[4].value, r.v[4].value_len, &ei), 0);
  assert_true(ei.message_count >= 2);
  char key[TARN_KEY_LEN + 1];
  tarn_key_format(key, e.L, k.end_offset + 1, k.cumulative_size + (uint64_t)ei.entry_size_bytes);
  assert_int_equal(tarn_meta_delete(e.d.m, e.part, r.v[4].key), 0);
  assert_int_equal(tarn_meta_put(e.d.m, e.part, key, r.v[4].value, r.v[4].value_len, NULL), 0);
  tarn_fsck_report rep;
  run(&e, &rep);
  const tarn_fsck_fault *f = find(&rep, "overlap");
  assert_non_null(f);
  assert_string_equal(f->key, key);
  tarn_fsck_report_free(&rep);
  tarn_entry_index_free(&ei);
  tarn_meta_recs_free(&r);
  tu_fixture_close(&e.d);
}

/* Issue 31 item 4: one append indexed twice, as etcd's duplicate sequenced
 * put left it (40 entries at 5480-5519 and again at 5520-5559, "ok" from
 * fsck on 4b2fedd): the last record's value again under the next key. The
 * records are adjacent and each reads; the fault is that both name the same
 * WAL section. */
static void double_index_is_a_fault(void **state) {
  fsck_log e;
  log_open(&e);
  tarn_meta_recs r = records(&e);
  const tarn_meta_rec *last = &r.v[r.n - 1];
  tarn_key k;
  assert_int_equal(tarn_key_parse(last->key, TARN_KEY_LEN, &k), 0);
  tarn_entry_index ei;
  assert_int_equal(tarn_entry_index_decode(last->value, last->value_len, &ei), 0);
  char key[TARN_KEY_LEN + 1];
  tarn_key_format(key, e.L, k.end_offset + (uint64_t)ei.message_count,
                  k.cumulative_size + (uint64_t)ei.entry_size_bytes);
  assert_int_equal(tarn_meta_put(e.d.m, e.part, key, last->value, last->value_len, NULL), 0);
  tarn_fsck_report rep;
  run(&e, &rep);
  const tarn_fsck_fault *f = find(&rep, "index-double");
  assert_non_null(f);
  assert_int_equal(f->log_id, e.L);
  assert_int_equal(f->offset, k.end_offset); /* the second copy starts where the first ends */
  assert_string_equal(f->key, key);
  assert_string_equal(f->object, ei.location);
  assert_int_equal(rep.n_faults, 1); /* adjacent, sized right: nothing else is wrong */
  tarn_fsck_report_free(&rep);
  tarn_entry_index_free(&ei);
  tarn_meta_recs_free(&r);
  tu_fixture_close(&e.d);
}

/* A file fsck cannot check (its footer is a lie that would ask for ~110
 * bytes per byte) is a parquet fault, and the run goes on to the next file. */
static void uncheckable_file_is_a_fault(void **state) {
  fsck_log e;
  log_open(&e);
  compact(&e, 0, 1);
  tarn_buf footer = TARN_BUF_INIT, file = TARN_BUF_INIT;
  tu_parquet_bomb_footer(&footer, 4, 1 << 18);
  tu_parquet_wrap_footer(&file, &footer);
  assert_int_equal(tarn_objstore_delete(e.d.compacted, "ns/st/a-0.parquet"), 0);
  assert_int_equal(tarn_objstore_put(e.d.compacted, "ns/st/a-0.parquet", file.data, file.len), 0);
  tarn_fsck_options o = {.skip_read = 1};
  tarn_fsck_report rep;
  tu_alloc_limit(10 * footer.len);
  int rc = tarn_fsck_run(e.d.m, e.d.wal, e.d.compacted, &o, &rep);
  tu_alloc_limit(0);
  assert_int_equal(rc, 0);
  const tarn_fsck_fault *f = find(&rep, "parquet");
  assert_non_null(f);
  assert_string_equal(f->object, "ns/st/a-0.parquet");
  assert_int_equal(rep.n_faults, 1); /* a-7 checked and found sound */
  assert_int_equal(rep.compacted_files, 2);
  tarn_fsck_report_free(&rep);
  tarn_buf_free(&footer);
  tarn_buf_free(&file);
  tu_fixture_close(&e.d);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(healthy_passes),
      cmocka_unit_test(deleted_wal_object),
      cmocka_unit_test(gap_in_the_index),
      cmocka_unit_test(cumulative_size_mismatch),
      cmocka_unit_test(corrupt_index_value),
      cmocka_unit_test(compacted_log_passes),
      cmocka_unit_test(overlap_between_c3_and_c4),
      cmocka_unit_test(companion_disagrees),
      cmocka_unit_test(overlap_is_a_fault),
      cmocka_unit_test(uncheckable_file_is_a_fault),
      cmocka_unit_test(double_index_is_a_fault),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
