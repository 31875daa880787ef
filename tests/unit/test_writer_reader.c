/* The writer (A1–A4) and the reader (R1–R4) on the mem: stores, with faults. */
#include "testutil.h"
#include "tu_compacted.h"
#include "tu_index.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tarn/catalog.h"
#include "tarn/companion.h"
#include "tarn/entryindex.h"
#include "tarn/fileindex.h"
#include "tarn/key.h"
#include "tarn/meta.h"
#include "tarn/objstore.h"
#include "tarn/testing.h"
#include "tarn/parquet.h"
#include "tarn/reader.h"
#include "tarn/wal.h"
#include "tarn/writer.h"
#include "tu_fixture.h"
#include "util/clock.h"

static void fast_opts(tarn_writer_options *o) {
  tarn_writer_options_default(o);
  o->batch_ms = 5;
  o->object_retries = 0;
}

/* A fresh mem: deployment and a writer with the fast options on it. */
static tarn_writer *env_writer(tu_fixture *e, const char *tag) {
  tu_fixture_open_unique(e, tag);
  tarn_writer_options o;
  fast_opts(&o);
  tarn_writer *w;
  assert_int_equal(tarn_writer_open(e->m, e->wal, &o, &w), 0);
  return w;
}

/* One entry's outcome, filled by the callback. */
typedef struct ack {
  int done, status;
  uint64_t offset;
  int64_t ts;
} ack;

static pthread_mutex_t ack_mu = PTHREAD_MUTEX_INITIALIZER;

static void ack_cb(void *arg, int status, uint64_t offset, int64_t ts) {
  ack *a = arg;
  pthread_mutex_lock(&ack_mu);
  a->status = status;
  a->offset = offset;
  a->ts = ts;
  a->done++;
  pthread_mutex_unlock(&ack_mu);
}

static size_t count_objects(tarn_objstore *s) {
  tarn_objstore_listing l = {0};
  size_t n = 0;
  const char *after = NULL;
  char last[TARN_OBJSTORE_NAME_MAX + 1] = "";
  do {
    assert_int_equal(tarn_objstore_list(s, "", after, 1000, &l), 0);
    n += l.n;
    if (l.n)
      snprintf(last, sizeof last, "%s", l.names[l.n - 1]);
    after = last;
    int more = l.truncated;
    tarn_objstore_listing_free(&l);
    if (!more)
      break;
  } while (1);
  return n;
}

/* Reads log L from `from` to the end; checks R4's contiguity and the
 * cumulative sizes; returns the entries' payloads concatenated with their
 * offsets in offs[]. */
static size_t read_all(tarn_reader *r, uint64_t log, uint64_t from, uint64_t *offs, char **payloads,
                       size_t max) {
  tarn_log_iter *it;
  assert_int_equal(tarn_log_iter_open(r, log, from, &it), 0);
  tarn_entry e;
  size_t n = 0;
  uint64_t prev_end = 0, prev_cum = 0;
  int rc;
  while ((rc = tarn_log_iter_next(it, &e, 0)) == 0) {
    assert_true(n < max);
    if (n > 0) {
      assert_int_equal(e.offset, prev_end); /* R4: each read starts where the last ended */
      assert_int_equal(e.cumulative_size, prev_cum + e.payload_len);
    }
    prev_end = e.offset + e.record_count;
    prev_cum = e.cumulative_size;
    offs[n] = e.offset;
    payloads[n] = strndup((const char *)e.payload, e.payload_len);
    n++;
  }
  assert_int_equal(rc, TARN_EEND);
  tarn_log_iter_close(it);
  return n;
}

/* LS-036, LS-039, LS-016, LS-001, LS-008: the whole path, several logs, one writer. */
static void append_then_read(void **state) {
  (void)state;
  tu_fixture E;
  tu_fixture_open_unique(&E, "wr-basic");
  tarn_writer_options o;
  fast_opts(&o);
  o.max_logs_per_object = 2;
  tarn_writer *w;
  assert_int_equal(tarn_writer_open(E.m, E.wal, &o, &w), 0);
  enum { N = 300 };
  static ack acks[N];
  memset(acks, 0, sizeof acks);
  char buf[64];
  /* LS-016: an entry with no records is refused */
  assert_int_equal(tarn_writer_append(w, 1, "x", 1, 0, ack_cb, &acks[0]), TARN_EINVAL);
  for (int i = 0; i < N; i++) {
    int n = snprintf(buf, sizeof buf, "log%d-entry%d", i % 3, i);
    assert_int_equal(tarn_writer_append(w, (uint64_t)(i % 3) + 1, buf, (size_t)n,
                                        (uint32_t)(i % 4) + 1, ack_cb, &acks[i]),
                     0);
  }
  assert_int_equal(tarn_writer_flush(w), 0);
  uint64_t next[4] = {0, 0, 0, 0};
  for (int i = 0; i < N; i++) {
    assert_int_equal(acks[i].done, 1);
    assert_int_equal(acks[i].status, 0);
    int log = i % 3 + 1;
    /* one writer's appends to a log take offsets in issue order */
    assert_int_equal(acks[i].offset, next[log]);
    next[log] += (uint64_t)(i % 4) + 1;
    assert_true(acks[i].ts > 0);
  }
  tarn_writer_stats st;
  tarn_writer_stats_get(w, &st);
  assert_int_equal(st.entries_acked, N);
  assert_int_equal(st.bytes_in_flight, 0);

  /* Every object is v3 (LS-001) with at most 2 sections, under a unique name of
   * our scheme (LS-008); every index value is v3 RAW naming an existing object
   * (LS-037) with index_type COMPACT iff one section, file_size the payload
   * region (§3.5). */
  for (uint64_t log = 1; log <= 3; log++) {
    tarn_meta_recs recs = tu_index_records(E.m, log);
    assert_true(recs.n > 0);
    uint64_t prev_cum = 0;
    for (size_t i = 0; i < recs.n; i++) {
      tarn_entry_index ei;
      assert_int_equal(tarn_entry_index_decode(recs.v[i].value, recs.v[i].value_len, &ei), 0);
      assert_int_equal(ei.version, 3);
      assert_int_equal(ei.file_type, TARN_FILE_RAW);
      assert_true(strlen(ei.location) == 56 && strcmp(ei.location + 52, ".wal") == 0);
      assert_memory_equal(ei.location, ei.location + 20, 2);
      tarn_buf obj = TARN_BUF_INIT;
      assert_int_equal(tarn_objstore_get(E.wal, ei.location, &obj), 0);
      tarn_wal wal;
      assert_int_equal(tarn_wal_decode(obj.data, obj.len, &wal), 0);
      assert_int_equal(wal.version, TARN_WAL_VERSION);
      assert_int_equal(wal.index_version, 3);
      assert_true(wal.section_count <= 2);
      assert_int_equal(ei.index_type,
                       wal.section_count == 1 ? TARN_INDEX_COMPACT : TARN_INDEX_NORMAL);
      assert_int_equal(ei.file_size, (int64_t)wal.payload_region_size);
      const tarn_wal_section *sec = tarn_wal_find(&wal, log);
      assert_non_null(sec);
      assert_int_equal(ei.message_count, (int32_t)sec->record_total);
      assert_int_equal(ei.entry_count, (int32_t)sec->entry_count);
      tarn_key k;
      assert_int_equal(tarn_key_parse(recs.v[i].key, TARN_KEY_LEN, &k), 0);
      /* adjacent records: c(R) - entry_size_bytes(R) = c(Q) */
      assert_int_equal(k.cumulative_size - (uint64_t)ei.entry_size_bytes, prev_cum);
      prev_cum = k.cumulative_size;
      tarn_wal_free(&wal);
      tarn_buf_free(&obj);
      tarn_entry_index_free(&ei);
    }
    tarn_meta_recs_free(&recs);
  }
  /* LS-009: one create-only PUT per object, never a second write to a name */
  assert_int_equal(tarn_objstore_mem_calls(E.wal, TARN_MEM_OP_PUT), st.objects_written);
  assert_int_equal(count_objects(E.wal), st.objects_written);

  tarn_reader *r;
  assert_int_equal(tarn_reader_open(E.m, E.wal, NULL, NULL, &r), 0);
  static uint64_t offs[N];
  static char *pl[N];
  for (uint64_t log = 1; log <= 3; log++) {
    size_t n = read_all(r, log, 0, offs, pl, N);
    assert_int_equal(n, N / 3);
    for (size_t j = 0; j < n; j++) {
      int i = (int)(j * 3 + (log - 1));
      snprintf(buf, sizeof buf, "log%d-entry%d", i % 3, i);
      assert_string_equal(pl[j], buf);
      assert_int_equal(offs[j], acks[i].offset);
      free(pl[j]);
    }
    uint64_t end, first;
    assert_int_equal(tarn_reader_end_offset(r, log, &end, NULL), 0);
    assert_int_equal(end, next[log]);
    assert_int_equal(tarn_reader_first_offset(r, log, &first), 0);
    assert_int_equal(first, 0);
  }
  /* an entry's timestamp is its record's creation time, as acknowledged */
  tarn_log_iter *it;
  assert_int_equal(tarn_log_iter_open(r, 2, 0, &it), 0);
  tarn_entry e;
  assert_int_equal(tarn_log_iter_next(it, &e, 0), 0);
  assert_int_equal(e.timestamp_ms, acks[1].ts);
  tarn_log_iter_close(it);
  tarn_reader_close(r);
  assert_int_equal(tarn_writer_close(w), 0);
  tu_fixture_close(&E);
}

/* Size limits: an entry larger than the object limit gets its own object. */
static void big_entry_own_object(void **state) {
  (void)state;
  tu_fixture E;
  tu_fixture_open_unique(&E, "wr-big");
  tarn_writer_options o;
  fast_opts(&o);
  o.max_object_bytes = 1000;
  o.batch_ms = 10000;
  tarn_writer *w;
  assert_int_equal(tarn_writer_open(E.m, E.wal, &o, &w), 0);
  char small[100], big[5000];
  memset(small, 's', sizeof small);
  memset(big, 'b', sizeof big);
  ack a[12] = {{0}};
  for (int i = 0; i < 5; i++)
    assert_int_equal(tarn_writer_append(w, 9, small, sizeof small, 1, ack_cb, &a[i]), 0);
  assert_int_equal(tarn_writer_append(w, 9, big, sizeof big, 1, ack_cb, &a[5]), 0);
  for (int i = 6; i < 12; i++)
    assert_int_equal(tarn_writer_append(w, 9, small, sizeof small, 1, ack_cb, &a[i]), 0);
  tarn_writer_flush(w);
  for (int i = 0; i < 12; i++) {
    assert_int_equal(a[i].status, 0);
    assert_int_equal(a[i].offset, (uint64_t)i);
  }
  /* 5 small | big | 6 small split at 1000 bytes: 10 + 6 → 3 objects */
  assert_int_equal(count_objects(E.wal), 3);
  tarn_meta_recs recs = tu_index_records(E.m, 9);
  assert_int_equal(recs.n, 3);
  tarn_key k;
  assert_int_equal(tarn_key_parse(recs.v[1].key, TARN_KEY_LEN, &k), 0);
  assert_int_equal(k.end_offset, 6);
  assert_int_equal(k.cumulative_size, 5 * 100 + 5000);
  tarn_meta_recs_free(&recs);
  assert_int_equal(tarn_writer_close(w), 0);
  tu_fixture_close(&E);
}

/* Entries of 4 logs appended interleaved, small ones and ones above the
 * writer's copy-before-lock size (64 KiB), one over the object limit: each
 * log's payloads are contiguous in its object (one range read per section),
 * in append order (LS-021), and read back byte for byte. */
static void interleaved_logs_contiguous_sections(void **state) {
  (void)state;
  tu_fixture E;
  tu_fixture_open_unique(&E, "wr-interleave");
  tarn_writer_options o;
  fast_opts(&o);
  o.batch_ms = 10000;
  o.max_object_bytes = 400000;
  tarn_writer *w;
  assert_int_equal(tarn_writer_open(E.m, E.wal, &o, &w), 0);
  enum { N = 40 };
  static char pay[N][150001];
  size_t len[N];
  for (int i = 0; i < N; i++) {
    len[i] = i == 17 ? 150001 : i % 9 == 4 ? 70000 : (size_t)(1 + i * 37 % 300);
    for (size_t k = 0; k < len[i]; k++)
      pay[i][k] = (char)('a' + (i * 7 + (int)k) % 26);
    assert_int_equal(tarn_writer_append(w, 60 + (uint64_t)(i % 4), pay[i], len[i], 1, NULL, NULL),
                     0);
  }
  assert_int_equal(tarn_writer_flush(w), 0);
  /* every object: each section's payloads form one run, in append order */
  tarn_objstore_listing l = {0};
  assert_int_equal(tarn_objstore_list(E.wal, "", NULL, 1000, &l), 0);
  assert_true(l.n >= 2);
  for (size_t j = 0; j < l.n; j++) {
    tarn_buf b = TARN_BUF_INIT;
    assert_int_equal(tarn_objstore_get(E.wal, l.names[j], &b), 0);
    tarn_wal wal;
    assert_int_equal(tarn_wal_decode(b.data, b.len, &wal), 0);
    for (size_t si = 0; si < wal.section_count; si++) {
      const tarn_wal_section *sec = &wal.sections[si];
      for (size_t k = 1; k < sec->entry_count; k++)
        assert_int_equal(sec->entries[k].payload_pos,
                         sec->entries[k - 1].payload_pos + sec->entries[k - 1].payload_size);
    }
    tarn_wal_free(&wal);
    tarn_buf_free(&b);
  }
  tarn_objstore_listing_free(&l);
  tarn_reader *r;
  assert_int_equal(tarn_reader_open(E.m, E.wal, NULL, NULL, &r), 0);
  for (uint64_t log = 60; log < 64; log++) {
    tarn_log_iter *it;
    assert_int_equal(tarn_log_iter_open(r, log, 0, &it), 0);
    tarn_entry e;
    for (int i = (int)(log - 60); i < N; i += 4) {
      assert_int_equal(tarn_log_iter_next(it, &e, 0), 0);
      assert_int_equal(e.offset, (uint64_t)(i / 4));
      assert_int_equal(e.payload_len, len[i]);
      assert_memory_equal(e.payload, pay[i], len[i]);
    }
    assert_int_equal(tarn_log_iter_next(it, &e, 0), TARN_EEND);
    tarn_log_iter_close(it);
  }
  tarn_reader_close(r);
  assert_int_equal(tarn_writer_close(w), 0);
  tu_fixture_close(&E);
}

/* LS-038, LS-037: a failed object write publishes nothing and fails its entries. */
static void object_write_fails(void **state) {
  (void)state;
  tu_fixture E;
  tu_fixture_open_unique(&E, "wr-objfail");
  tarn_writer_options o;
  fast_opts(&o);
  o.object_retries = 1;
  tarn_writer *w;
  assert_int_equal(tarn_writer_open(E.m, E.wal, &o, &w), 0);
  /* both attempts fail: one an error, one a lost reply (the object exists) */
  assert_int_equal(
      tarn_objstore_mem_fault(E.wal, TARN_MEM_OP_PUT, 1, 1, TARN_MEM_FAULT_BEFORE, TARN_EIO), 0);
  assert_int_equal(
      tarn_objstore_mem_fault(E.wal, TARN_MEM_OP_PUT, 2, 1, TARN_MEM_FAULT_AFTER, TARN_EUNKNOWN),
      0);
  ack a = {0}, b = {0};
  assert_int_equal(tarn_writer_append(w, 4, "lost", 4, 1, ack_cb, &a), 0);
  tarn_writer_flush(w);
  assert_int_equal(a.done, 1);
  assert_true(a.status < 0 && a.status != TARN_EUNKNOWN);
  tarn_meta_recs recs = tu_index_records(E.m, 4);
  assert_int_equal(recs.n, 0); /* nothing published */
  tarn_meta_recs_free(&recs);
  /* the writer goes on: the next entry takes offset 0 */
  assert_int_equal(tarn_writer_append(w, 4, "kept", 4, 1, ack_cb, &b), 0);
  tarn_writer_flush(w);
  assert_int_equal(b.status, 0);
  assert_int_equal(b.offset, 0);
  assert_int_equal(tarn_writer_close(w), 0);
  tu_fixture_close(&E);
}

/* An index put of unknown outcome is reported as unknown (no dedup); a failed
 * put fails its entries. */
static void index_put_unknown_or_failed(void **state) {
  (void)state;
  tu_fixture E;
  tarn_writer *w = env_writer(&E, "wr-putfault");
  ack a = {0}, b = {0}, c = {0};
  assert_int_equal(tarn_writer_append_sync(w, 5, "first", 5, 1, NULL, NULL), 0); /* lease taken */
  assert_int_equal(tarn_meta_inject_fault(E.m, TARN_META_FAULT_COMMIT_UNKNOWN, 1), 0);
  assert_int_equal(tarn_writer_append(w, 5, "maybe", 5, 1, ack_cb, &a), 0);
  tarn_writer_flush(w);
  assert_int_equal(a.status, TARN_EUNKNOWN);
  assert_int_equal(tarn_meta_inject_fault(E.m, TARN_META_FAULT_FAIL, 1), 0);
  assert_int_equal(tarn_writer_append(w, 5, "failed", 6, 1, ack_cb, &b), 0);
  tarn_writer_flush(w);
  assert_true(b.status < 0 && b.status != TARN_EUNKNOWN);
  assert_int_equal(tarn_writer_append(w, 5, "after", 5, 1, ack_cb, &c), 0);
  tarn_writer_flush(w);
  assert_int_equal(c.status, 0);
  assert_int_equal(c.offset, 2); /* the unknown put committed; the failed one did not */
  tarn_reader *r;
  assert_int_equal(tarn_reader_open(E.m, E.wal, NULL, NULL, &r), 0);
  uint64_t offs[8];
  char *pl[8];
  size_t n = read_all(r, 5, 0, offs, pl, 8);
  assert_int_equal(n, 3);
  assert_string_equal(pl[1], "maybe");
  assert_string_equal(pl[2], "after");
  for (size_t i = 0; i < n; i++)
    free(pl[i]);
  tarn_reader_close(r);
  assert_int_equal(tarn_writer_close(w), 0);
  tu_fixture_close(&E);
}

/* LS-042, LS-041: a lease per log while open, released at close; a fenced
 * log is refused. (LS-043, the release after the puts: test_lease_steps.c.) */
static void leases_held_and_released(void **state) {
  (void)state;
  tu_fixture E;
  tu_fixture_open_unique(&E, "wr-lease");
  tarn_meta *other;
  char uri[96];
  snprintf(uri, sizeof uri, "%s", E.meta_uri);
  assert_int_equal(tarn_meta_open(uri, &other), 0);
  tarn_writer_options o;
  fast_opts(&o);
  o.batch_ms = 200;
  tarn_writer *w;
  assert_int_equal(tarn_writer_open(E.m, E.wal, &o, &w), 0);
  ack a = {0};
  assert_int_equal(tarn_writer_append(w, 11, "x", 1, 1, ack_cb, &a), 0);
  assert_int_equal(tu_lease_count(other, 11), 1); /* A1 before anything is published */
  char fence[TARN_KEY_SLASH_MAX];
  tarn_key_fence(fence, 12);
  assert_int_equal(tarn_meta_create(other, "12", fence, "", 0, TARN_META_PERSISTENT, NULL), 0);
  assert_int_equal(tarn_writer_append(w, 12, "x", 1, 1, ack_cb, NULL), TARN_EFENCED);
  assert_int_equal(tu_lease_count(other, 12), 0);
  /* close drains first: the entry is acknowledged before the lease goes */
  assert_int_equal(tarn_writer_close(w), 0);
  assert_int_equal(a.status, 0);
  assert_int_equal(tu_lease_count(other, 11), 0);
  tarn_meta_close(other);
  tu_fixture_close(&E);
}

/* LS-048: once the session ended the writer publishes nothing more. */
static void session_expiry_stops_publishing(void **state) {
  (void)state;
  tu_fixture E;
  tu_fixture_open_unique(&E, "wr-expire");
  tarn_meta *w_meta;
  char uri[96];
  snprintf(uri, sizeof uri, "%s", E.meta_uri);
  assert_int_equal(tarn_meta_open(uri, &w_meta), 0);
  tarn_writer_options o;
  fast_opts(&o);
  o.batch_ms = 100;
  tarn_writer *w;
  assert_int_equal(tarn_writer_open(w_meta, E.wal, &o, &w), 0);
  assert_int_equal(tarn_writer_append_sync(w, 13, "one", 3, 1, NULL, NULL), 0);
  ack a = {0};
  assert_int_equal(tarn_writer_append(w, 13, "two", 3, 1, ack_cb, &a), 0);
  assert_int_equal(tarn_meta_inject_fault(w_meta, TARN_META_FAULT_EXPIRE_SESSION, 0), 0);
  tarn_writer_flush(w);
  assert_int_equal(a.status, TARN_ESESSION);
  assert_int_equal(tarn_writer_append(w, 13, "three", 5, 1, ack_cb, NULL), TARN_ESESSION);
  tarn_meta_recs recs = tu_index_records(E.m, 13);
  assert_int_equal(recs.n, 1); /* only "one" */
  tarn_meta_recs_free(&recs);
  tarn_writer_close(w);
  tarn_meta_close(w_meta);
  tu_fixture_close(&E);
}

/* Bounded memory: nonblocking appends over the limit get TARN_EBUSY. */
static void backpressure(void **state) {
  (void)state;
  tu_fixture E;
  tu_fixture_open_unique(&E, "wr-busy");
  tarn_writer_options o;
  fast_opts(&o);
  o.batch_ms = 300;
  o.max_bytes_in_flight = 250;
  o.nonblocking = 1;
  tarn_objstore_mem_latency(E.wal, TARN_MEM_OP_PUT, 200000);
  tarn_writer *w;
  assert_int_equal(tarn_writer_open(E.m, E.wal, &o, &w), 0);
  char p[100] = {0};
  assert_int_equal(tarn_writer_append(w, 3, p, 100, 1, NULL, NULL), 0);
  assert_int_equal(tarn_writer_append(w, 3, p, 100, 1, NULL, NULL), 0);
  assert_int_equal(tarn_writer_append(w, 3, p, 100, 1, NULL, NULL), TARN_EBUSY);
  tarn_writer_flush(w);
  assert_int_equal(tarn_writer_append(w, 3, p, 100, 1, NULL, NULL), 0);
  assert_int_equal(tarn_writer_close(w), 0);
  tu_fixture_close(&E);
}

static int64_t store_hour_ahead(void *arg) {
  (void)arg;
  return tarn__now_ms() + 3600 * 1000;
}

/* A4: an entry's timestamp is its index record's created_ms, the store's
 * clock, not the writer's: with the store an hour ahead the two cannot agree
 * by accident (on one machine they usually fall in the same millisecond). */
static void ack_ts_is_the_stores(void **state) {
  (void)state;
  tu_fixture E;
  tarn_writer *w = env_writer(&E, "wr-ackts");
  tarn__clock_set_store(store_hour_ahead, NULL);
  ack a;
  memset(&a, 0, sizeof a);
  int64_t t0 = tarn__now_ms();
  assert_int_equal(tarn_writer_append(w, 23, "ts", 2, 1, ack_cb, &a), 0);
  assert_int_equal(tarn_writer_flush(w), 0);
  tarn__clock_set_store(NULL, NULL);
  assert_int_equal(a.status, 0);
  assert_true(a.ts >= t0 + 3600 * 1000);
  tarn_reader *r;
  assert_int_equal(tarn_reader_open(E.m, E.wal, NULL, NULL, &r), 0);
  tarn_log_iter *it;
  assert_int_equal(tarn_log_iter_open(r, 23, 0, &it), 0);
  tarn_entry e;
  assert_int_equal(tarn_log_iter_next(it, &e, 0), 0);
  assert_int_equal(e.timestamp_ms, a.ts);
  tarn_log_iter_close(it);
  tarn_reader_close(r);
  assert_int_equal(tarn_writer_close(w), 0);
  tu_fixture_close(&E);
}

/* LS-039: the entries of one section take consecutive offsets, each as many
 * as it has records (A4: e - d1 for the first, then + records). */
static void section_entries_offsets(void **state) {
  (void)state;
  tu_fixture E;
  tu_fixture_open_unique(&E, "wr-secoffs");
  tarn_writer_options o;
  fast_opts(&o);
  o.batch_ms = 60000; /* one batch, sealed by the flush: one section */
  tarn_writer *w;
  assert_int_equal(tarn_writer_open(E.m, E.wal, &o, &w), 0);
  ack a[5];
  memset(a, 0, sizeof a);
  for (uint32_t i = 0; i < 5; i++)
    assert_int_equal(tarn_writer_append(w, 22, "entry", 5, i + 1, ack_cb, &a[i]), 0);
  assert_int_equal(tarn_writer_flush(w), 0);
  tarn_meta_recs recs = tu_index_records(E.m, 22);
  assert_int_equal(recs.n, 1);
  tarn_meta_recs_free(&recs);
  static const uint64_t want[5] = {0, 1, 3, 6, 10};
  for (int i = 0; i < 5; i++) {
    assert_int_equal(a[i].done, 1);
    assert_int_equal(a[i].status, 0);
    assert_int_equal(a[i].offset, want[i]);
  }
  tarn_reader *r;
  assert_int_equal(tarn_reader_open(E.m, E.wal, NULL, NULL, &r), 0);
  uint64_t offs[8];
  char *pl[8];
  assert_int_equal(read_all(r, 22, 0, offs, pl, 8), 5);
  for (int i = 0; i < 5; i++) {
    assert_int_equal(offs[i], a[i].offset);
    free(pl[i]);
  }
  tarn_reader_close(r);
  assert_int_equal(tarn_writer_close(w), 0);
  tu_fixture_close(&E);
}

/* LS-050, LS-053, LS-054: B from the trim marker; nothing ending at or below B. */
static void trim_marker_respected(void **state) {
  (void)state;
  tu_fixture E;
  tarn_writer *w = env_writer(&E, "wr-trim");
  /* entries of 3 records: offsets 0,3,6,9,12 in one record */
  for (int i = 0; i < 5; i++) {
    char b[8];
    snprintf(b, sizeof b, "e%d", i);
    assert_int_equal(tarn_writer_append(w, 21, b, 2, 3, NULL, NULL), 0);
  }
  tarn_writer_flush(w);
  char key[TARN_KEY_SLASH_MAX];
  tarn_key_trim_marker(key, 21);
  assert_int_equal(tarn_meta_put(E.m, "21", key, "6", 1, NULL), 0);
  tarn_reader *r;
  assert_int_equal(tarn_reader_open(E.m, E.wal, NULL, NULL, &r), 0);
  uint64_t offs[8];
  char *pl[8];
  size_t n = read_all(r, 21, 0, offs, pl, 8);
  assert_int_equal(n, 3); /* the entry [3,6) ends at B = 6: not returned */
  assert_int_equal(offs[0], 6);
  assert_string_equal(pl[0], "e2");
  for (size_t i = 0; i < n; i++)
    free(pl[i]);
  /* B inside an entry: the entry holding B starts before it, and is returned */
  assert_int_equal(tarn_meta_put(E.m, "21", key, "7", 1, NULL), 0);
  n = read_all(r, 21, 2, offs, pl, 8);
  assert_int_equal(n, 3);
  assert_int_equal(offs[0], 6);
  for (size_t i = 0; i < n; i++)
    free(pl[i]);
  uint64_t first;
  assert_int_equal(tarn_reader_first_offset(r, 21, &first), 0);
  assert_int_equal(first, 7); /* max(start 0, B 7) */
  /* LS-053: B at the last offset of an entry, [6, 9) ending at B + 1: it holds
   * offset B, so it is returned (only an entry ending at or below B is not) */
  assert_int_equal(tarn_meta_put(E.m, "21", key, "8", 1, NULL), 0);
  n = read_all(r, 21, 0, offs, pl, 8);
  assert_int_equal(n, 3);
  assert_int_equal(offs[0], 6);
  assert_string_equal(pl[0], "e2");
  for (size_t i = 0; i < n; i++)
    free(pl[i]);
  tarn_reader_close(r);
  assert_int_equal(tarn_writer_close(w), 0);
  tu_fixture_close(&E);
}

/* Copies every index record of log `from` into partition `part`, under its
 * own keys: a neighbouring log's records, as a store whose partitions hold
 * many logs' keys (Oxia's shards) has them next to L's. */
static void copy_index(tarn_meta *m, uint64_t from, const char *part) {
  tarn_meta_recs rs = tu_index_records(m, from);
  assert_true(rs.n > 0);
  for (size_t i = 0; i < rs.n; i++)
    assert_int_equal(tarn_meta_put(m, part, rs.v[i].key, rs.v[i].value, rs.v[i].value_len, NULL),
                     0);
  tarn_meta_recs_free(&rs);
}

/* LS-051: the key Higher returns must begin with L's prefix. Past log 30's
 * last record Higher(P(30)) finds log 31's index record (a well-formed key
 * and value, so only the prefix check tells it apart), then the lease record
 * of 30 (a '/' key that does not parse: the check must come before decoding).
 * Floor, for the end offset, gets the same check (LS-054's first offset goes
 * through Higher). */
static void prefix_check(void **state) {
  (void)state;
  tu_fixture E;
  tarn_writer *w = env_writer(&E, "wr-prefix");
  assert_int_equal(tarn_writer_append_sync(w, 30, "a", 1, 1, NULL, NULL), 0);
  assert_int_equal(tarn_writer_append_sync(w, 31, "bb", 2, 1, NULL, NULL), 0);
  assert_int_equal(tarn_writer_append_sync(w, 31, "cc", 2, 1, NULL, NULL), 0);
  copy_index(E.m, 31, "30");
  copy_index(E.m, 31, "32"); /* 32 has no records of its own */
  tarn_reader *r;
  assert_int_equal(tarn_reader_open(E.m, E.wal, NULL, NULL, &r), 0);
  tarn_entry e;
  for (uint64_t from = 1; from <= 2; from++) {
    tarn_log_iter *it;
    assert_int_equal(tarn_log_iter_open(r, 30, from, &it), 0);
    assert_int_equal(tarn_log_iter_next(it, &e, 0), TARN_EEND);
    tarn_log_iter_close(it);
  }
  /* From 0: log 30's own entry, then the end, not 31's entries. */
  tarn_log_iter *it;
  assert_int_equal(tarn_log_iter_open(r, 30, 0, &it), 0);
  assert_int_equal(tarn_log_iter_next(it, &e, 0), 0);
  assert_int_equal(e.offset, 0);
  assert_int_equal(e.payload_len, 1);
  assert_int_equal(tarn_log_iter_next(it, &e, 0), TARN_EEND);
  tarn_log_iter_close(it);
  uint64_t end = 99, first;
  assert_int_equal(tarn_reader_end_offset(r, 30, &end, NULL), 0);
  assert_int_equal(end, 1);
  assert_int_equal(tarn_reader_end_offset(r, 32, &end, NULL), 0);
  assert_int_equal(end, 0);
  assert_int_equal(tarn_reader_first_offset(r, 32, &first), TARN_ENOTFOUND);
  /* Only the writer's lease record of 30 lies past its last record now. */
  char a[TARN_KEY_LEN + 1], b[TARN_KEY_LEN + 1];
  tarn_key_format(a, 31, 0, 0);
  tarn_key_format(b, 31, TARN_KEY_MAX, TARN_KEY_MAX);
  assert_int_equal(tarn_meta_delete_range(E.m, "30", a, b, NULL), 0);
  assert_int_equal(tu_lease_count(E.m, 30), 1); /* a key > every index key of 30 in P(30) */
  tarn_reader_close(r);
  assert_int_equal(tarn_reader_open(E.m, E.wal, NULL, NULL, &r), 0);
  assert_int_equal(tarn_log_iter_open(r, 30, 1, &it), 0);
  assert_int_equal(tarn_log_iter_next(it, &e, 0), TARN_EEND);
  tarn_log_iter_close(it);
  tarn_reader_close(r);
  assert_int_equal(tarn_writer_close(w), 0);
  tu_fixture_close(&E);
}

/* Range reads: a log's entries come from its section only, not the whole object. */
static void range_reads_only(void **state) {
  (void)state;
  tu_fixture E;
  tu_fixture_open_unique(&E, "wr-range");
  tarn_writer_options o;
  fast_opts(&o);
  o.batch_ms = 10000;
  tarn_writer *w;
  assert_int_equal(tarn_writer_open(E.m, E.wal, &o, &w), 0);
  static char big[200000];
  memset(big, 'z', sizeof big);
  assert_int_equal(tarn_writer_append(w, 40, big, sizeof big, 1, NULL, NULL), 0);
  assert_int_equal(tarn_writer_append(w, 41, "small", 5, 1, NULL, NULL), 0);
  assert_int_equal(tarn_writer_flush(w), 0);
  assert_int_equal(count_objects(E.wal), 1);
  tarn_reader *r;
  assert_int_equal(tarn_reader_open(E.m, E.wal, NULL, NULL, &r), 0);
  uint64_t offs[2];
  char *pl[2];
  assert_int_equal(read_all(r, 41, 0, offs, pl, 2), 1);
  assert_string_equal(pl[0], "small");
  free(pl[0]);
  tarn_reader_stats st;
  tarn_reader_stats_get(r, &st);
  assert_true(st.bytes_read < 70000); /* the probe and 5 payload bytes, not 200 KB */
  assert_int_equal(st.range_reads, 1);
  tarn_reader_close(r);
  assert_int_equal(tarn_writer_close(w), 0);
  tu_fixture_close(&E);
}

/* A catch-up read of N records, each alone in an object larger than the
 * reader's first probe, sends no HEAD: the probe's range read brings the
 * object's size along. Per object one probe GET and one payload GET. */
static void catch_up_without_head(void **state) {
  (void)state;
  tu_fixture E;
  tarn_writer *w = env_writer(&E, "wr-nohead");
  enum { N = 5, LEN = 100000 };
  static char payload[N][LEN + 1];
  for (int i = 0; i < N; i++) {
    memset(payload[i], 'a' + i, LEN);
    assert_int_equal(tarn_writer_append_sync(w, 77, payload[i], LEN, 1, NULL, NULL), 0);
  }
  assert_int_equal(count_objects(E.wal), N);
  uint64_t heads0 = tarn_objstore_mem_calls(E.wal, TARN_MEM_OP_HEAD);
  uint64_t gets0 = tarn_objstore_mem_calls(E.wal, TARN_MEM_OP_GET);
  tarn_reader *r;
  assert_int_equal(tarn_reader_open(E.m, E.wal, NULL, NULL, &r), 0);
  uint64_t offs[N + 1];
  char *pl[N + 1];
  assert_int_equal(read_all(r, 77, 0, offs, pl, N + 1), N);
  for (int i = 0; i < N; i++) {
    assert_int_equal(offs[i], (uint64_t)i);
    assert_string_equal(pl[i], payload[i]);
    free(pl[i]);
  }
  tarn_reader_stats st;
  tarn_reader_stats_get(r, &st);
  assert_int_equal(tarn_objstore_mem_calls(E.wal, TARN_MEM_OP_HEAD) - heads0, 0);
  assert_int_equal(st.head_reads, N);
  assert_int_equal(st.range_reads, N);
  assert_int_equal(tarn_objstore_mem_calls(E.wal, TARN_MEM_OP_GET) - gets0,
                   st.head_reads + st.range_reads);
  tarn_reader_close(r);
  assert_int_equal(tarn_writer_close(w), 0);
  tu_fixture_close(&E);
}

/* LS-055: a missing object makes the reader look the record up again; a
 * replaced record (as compaction or a re-publish would leave) is then read. */
static void missing_object_relookup(void **state) {
  (void)state;
  for (int headcache = 0; headcache < 2; headcache++) {
    tu_fixture E;
    tarn_writer *w = env_writer(&E, "wr-missing");
    assert_int_equal(tarn_writer_append_sync(w, 50, "hello", 5, 2, NULL, NULL), 0);
    tarn_reader_options ro;
    tarn_reader_options_default(&ro);
    ro.head_cache_bytes = headcache ? ro.head_cache_bytes : 0;
    tarn_reader *r;
    assert_int_equal(tarn_reader_open(E.m, E.wal, NULL, &ro, &r), 0);
    uint64_t offs[2];
    char *pl[2];
    assert_int_equal(read_all(r, 50, 0, offs, pl, 2), 1); /* caches the record */
    free(pl[0]);
    /* move the object and rewrite the record's value under its key */
    tarn_meta_recs recs = tu_index_records(E.m, 50);
    assert_int_equal(recs.n, 1);
    tarn_entry_index ei;
    assert_int_equal(tarn_entry_index_decode(recs.v[0].value, recs.v[0].value_len, &ei), 0);
    tarn_buf obj = TARN_BUF_INIT, val = TARN_BUF_INIT;
    assert_int_equal(tarn_objstore_get(E.wal, ei.location, &obj), 0);
    assert_int_equal(tarn_objstore_put(E.wal, "moved/x.wal", obj.data, obj.len), 0);
    assert_int_equal(tarn_objstore_delete(E.wal, ei.location), 0);
    free(ei.location);
    ei.location = strdup("moved/x.wal");
    assert_int_equal(tarn_entry_index_encode(&ei, &val), 0);
    assert_int_equal(tarn_meta_put(E.m, "50", recs.v[0].key, val.data, val.len, NULL), 0);
    assert_int_equal(read_all(r, 50, 0, offs, pl, 2), 1);
    assert_string_equal(pl[0], "hello");
    free(pl[0]);
    /* gone for good: the error names the object */
    assert_int_equal(tarn_objstore_delete(E.wal, "moved/x.wal"), 0);
    tarn_log_iter *it;
    assert_int_equal(tarn_log_iter_open(r, 50, 0, &it), 0);
    tarn_entry e;
    assert_int_equal(tarn_log_iter_next(it, &e, 0), TARN_ENOTFOUND);
    assert_non_null(strstr(tarn_errmsg(), "moved/x.wal"));
    tarn_log_iter_close(it);
    tarn_buf_free(&obj);
    tarn_buf_free(&val);
    tarn_entry_index_free(&ei);
    tarn_meta_recs_free(&recs);
    tarn_reader_close(r);
    assert_int_equal(tarn_writer_close(w), 0);
    tu_fixture_close(&E);
  }
}

/* LS-028, LS-052: the reader goes by file_type; index_type decides nothing. */
static void dispatch_by_file_type(void **state) {
  (void)state;
  tu_fixture E;
  tarn_writer *w = env_writer(&E, "wr-dispatch");
  assert_int_equal(tarn_writer_append_sync(w, 60, "raw", 3, 1, NULL, NULL), 0);
  tarn_meta_recs recs = tu_index_records(E.m, 60);
  tarn_entry_index ei;
  assert_int_equal(tarn_entry_index_decode(recs.v[0].value, recs.v[0].value_len, &ei), 0);
  assert_int_equal(ei.index_type, TARN_INDEX_COMPACT); /* one section */
  ei.index_type = TARN_INDEX_NORMAL;
  tarn_buf val = TARN_BUF_INIT;
  assert_int_equal(tarn_entry_index_encode(&ei, &val), 0);
  assert_int_equal(tarn_meta_put(E.m, "60", recs.v[0].key, val.data, val.len, NULL), 0);
  tarn_reader_options ro;
  tarn_reader_options_default(&ro);
  ro.index_ttl_ms = 0;
  tarn_reader *r;
  assert_int_equal(tarn_reader_open(E.m, E.wal, NULL, &ro, &r), 0);
  uint64_t offs[2];
  char *pl[2];
  assert_int_equal(read_all(r, 60, 0, offs, pl, 2), 1);
  assert_string_equal(pl[0], "raw");
  free(pl[0]);
  /* a PARQUET record under the same key: not read from the WAL object */
  tarn_file_index_entry f = {.last_offset = 0, .name = (char *)"60-0.parquet"};
  tarn_parquet_record pr = {.location = NULL,
                            .s = 0,
                            .e = 1,
                            .c_s = 0,
                            .c_e = 3,
                            .file_size = 3,
                            .files = &f,
                            .n_files = 1};
  tarn_buf_reset(&val);
  assert_int_equal(tarn_entry_index_build_parquet(&pr, &val, NULL), 0);
  assert_int_equal(tarn_meta_put(E.m, "60", recs.v[0].key, val.data, val.len, NULL), 0);
  tarn_log_iter *it;
  assert_int_equal(tarn_log_iter_open(r, 60, 0, &it), 0);
  tarn_entry e;
  assert_int_equal(tarn_log_iter_next(it, &e, 0), TARN_EUNSUPPORTED);
  assert_non_null(strstr(tarn_errmsg(), "PARQUET"));
  tarn_log_iter_close(it);
  tarn_buf_free(&val);
  tarn_entry_index_free(&ei);
  tarn_meta_recs_free(&recs);
  tarn_reader_close(r);
  assert_int_equal(tarn_writer_close(w), 0);
  tu_fixture_close(&E);
}

typedef struct late_arg {
  tarn_writer *w;
  int delay_ms;
} late_arg;

static void *late_append(void *p) {
  late_arg *a = p;
  usleep((useconds_t)a->delay_ms * 1000);
  tarn_writer_append_sync(a->w, 70, "late", 4, 1, NULL, NULL);
  return NULL;
}

/* Tailing: next() waits for a new record through the change notification. */
static void tailing(void **state) {
  (void)state;
  tu_fixture E;
  tarn_writer *w = env_writer(&E, "wr-tail");
  tarn_reader *r;
  assert_int_equal(tarn_reader_open(E.m, E.wal, NULL, NULL, &r), 0);
  tarn_log_iter *it;
  assert_int_equal(tarn_log_iter_open(r, 70, 0, &it), 0);
  tarn_entry e;
  assert_int_equal(tarn_log_iter_next(it, &e, 50), TARN_ETIMEDOUT);
  pthread_t t;
  late_arg a = {w, 150};
  pthread_create(&t, NULL, late_append, &a);
  assert_int_equal(tarn_log_iter_next(it, &e, 10000), 0);
  assert_int_equal(e.payload_len, 4);
  assert_memory_equal(e.payload, "late", 4);
  assert_int_equal(tarn_log_iter_position(it), 1);
  pthread_join(t, NULL);
  tarn_log_iter_close(it);
  tarn_reader_close(r);
  assert_int_equal(tarn_writer_close(w), 0);
  tu_fixture_close(&E);
}

/* LS-025: every index key the writer created came from its sequenced puts —
 * the keys in P(L) are exactly the ones its acknowledgements account for. */
static void keys_only_from_sequenced_put(void **state) {
  (void)state;
  tu_fixture E;
  tarn_writer *w = env_writer(&E, "wr-keys");
  ack a[40] = {{0}};
  for (int i = 0; i < 40; i++) {
    assert_int_equal(tarn_writer_append(w, 80, "abcd", 4, 1, ack_cb, &a[i]), 0);
    if (i % 10 == 9)
      tarn_writer_flush(w);
  }
  tarn_writer_flush(w);
  tarn_writer_stats st;
  tarn_writer_stats_get(w, &st);
  tarn_meta_recs recs = tu_index_records(E.m, 80);
  assert_int_equal(recs.n, st.index_puts);
  for (size_t i = 0; i < recs.n; i++) {
    tarn_key k;
    assert_int_equal(tarn_key_parse(recs.v[i].key, TARN_KEY_LEN, &k), 0);
    /* the key's end offset is the end of an acknowledged entry */
    int found = 0;
    for (int j = 0; j < 40; j++)
      found |= a[j].status == 0 && a[j].offset + 1 == k.end_offset &&
               k.cumulative_size == 4 * k.end_offset;
    assert_true(found);
  }
  tarn_meta_recs_free(&recs);
  assert_int_equal(tarn_writer_close(w), 0);
  tu_fixture_close(&E);
}

/* LS-067, LS-064, LS-065, LS-059, LS-052: a PARQUET record (installed as
 * compaction steps C3/C4 would) is read through its file index, the files in
 * the stream's directory and their companions. */
static void parquet_record_read(void **state) {
  (void)state;
  tu_fixture E;
  tarn_writer *w = env_writer(&E, "wr-parquet");
  tarn_objstore *cs = E.compacted;
  tarn_catalog *cat;
  assert_int_equal(tarn_catalog_open(E.m, NULL, &cat), 0);
  assert_int_equal(tarn_catalog_init(cat, NULL), 0);
  tarn_catalog_record st;
  assert_int_equal(tarn_catalog_create_stream(cat, "ns", "st", 1, NULL, 0, &st), 0);
  uint64_t L = st.logs[0];
  tarn_catalog_record_free(&st);
  tarn_catalog_close(cat);
  enum { N = 6 };
  for (int i = 0; i < N; i++) {
    char b[16];
    int n = snprintf(b, sizeof b, "entry-%d", i);
    assert_int_equal(tarn_writer_append(w, L, b, (size_t)n, (uint32_t)(i % 3) + 1, NULL, NULL), 0);
    if (i % 2)
      tarn_writer_flush(w);
  }
  tarn_writer_flush(w);
  /* the RAW entries, as the compactor reads them */
  tarn_reader *r;
  assert_int_equal(tarn_reader_open(E.m, E.wal, cs, NULL, &r), 0);
  tarn_entry_header hs[N];
  char *pl[N];
  tarn_log_iter *it;
  assert_int_equal(tarn_log_iter_open(r, L, 0, &it), 0);
  tarn_entry e;
  for (int i = 0; i < N; i++) {
    assert_int_equal(tarn_log_iter_next(it, &e, 0), 0);
    hs[i] = (tarn_entry_header){(int64_t)e.offset, (int32_t)e.record_count, e.timestamp_ms,
                                (int32_t)e.payload_len, (int64_t)e.cumulative_size};
    pl[i] = strndup((const char *)e.payload, e.payload_len);
  }
  tarn_log_iter_close(it);
  uint64_t end = (uint64_t)(hs[N - 1].offset + hs[N - 1].record_count);
  tu_write_compacted(cs, "ns/st", "a-0", hs, pl, 0, 2, 2, 1000);
  tu_write_compacted(cs, "ns/st", "a-7", hs, pl, 3, 5, 5, 1000);
  tarn_file_index_entry files[2] = {{hs[2].offset + hs[2].record_count - 1, (char *)"a-0.parquet"},
                                    {(int64_t)end - 1, (char *)"a-7.parquet"}};
  tarn_parquet_record pr = {.location = NULL,
                            .s = 0,
                            .e = (int64_t)end,
                            .c_s = 0,
                            .c_e = hs[N - 1].cumulative_size,
                            .file_size = hs[N - 1].cumulative_size,
                            .files = files,
                            .n_files = 2};
  tarn_buf val = TARN_BUF_INIT;
  assert_int_equal(tarn_entry_index_build_parquet(&pr, &val, NULL), 0);
  /* C3 under the last RAW record's key, then C4 retires the others */
  tarn_meta_recs recs = tu_index_records(E.m, L);
  assert_true(recs.n >= 2);
  char part[32], k0[TARN_KEY_LEN + 1];
  tarn_key_partition(part, L);
  tarn_key_format(k0, L, 0, 0);
  assert_int_equal(tarn_meta_put(E.m, part, recs.v[recs.n - 1].key, val.data, val.len, NULL), 0);
  assert_int_equal(tarn_meta_delete_range(E.m, part, k0, recs.v[recs.n - 1].key, NULL), 0);
  tarn_meta_recs_free(&recs);
  tarn_reader_close(r);
  /* the WAL objects go (as reclamation would): only compacted files remain */
  tarn_objstore_listing ls = {0};
  assert_int_equal(tarn_objstore_list(E.wal, "", NULL, 1000, &ls), 0);
  assert_true(ls.n > 0);
  for (size_t i = 0; i < ls.n; i++)
    assert_int_equal(tarn_objstore_delete(E.wal, ls.names[i]), 0);
  tarn_objstore_listing_free(&ls);
  assert_int_equal(tarn_reader_open(E.m, E.wal, cs, NULL, &r), 0);
  /* every entry, with its offset, cumulative size and its row's timestamp */
  assert_int_equal(tarn_log_iter_open(r, L, 0, &it), 0);
  for (int i = 0; i < N; i++) {
    assert_int_equal(tarn_log_iter_next(it, &e, 0), 0);
    assert_int_equal(e.offset, (uint64_t)hs[i].offset);
    assert_int_equal(e.record_count, (uint32_t)hs[i].record_count);
    assert_int_equal(e.cumulative_size, (uint64_t)hs[i].cumulative_size);
    assert_int_equal(e.timestamp_ms, hs[i].timestamp_ms + 1000 * i); /* LS-064 */
    assert_int_equal(e.payload_len, strlen(pl[i]));
    assert_memory_equal(e.payload, pl[i], e.payload_len);
  }
  assert_int_equal(tarn_log_iter_next(it, &e, 0), TARN_EEND);
  tarn_log_iter_close(it);
  /* from inside entry 4 (offsets [hs4, hs4+2)): its row by the floor lookup (LS-065) */
  assert_int_equal(tarn_log_iter_open(r, L, (uint64_t)hs[4].offset + 1, &it), 0);
  assert_int_equal(tarn_log_iter_next(it, &e, 0), 0);
  assert_int_equal(e.offset, (uint64_t)hs[4].offset);
  tarn_log_iter_close(it);
  tarn_reader_close(r);
  /* a reader implementing another binding rejects the files (LS-059) */
  const char *other[] = {"SOME_OTHER_SERDE"};
  tarn_reader_options ro;
  tarn_reader_options_default(&ro);
  ro.serde_types = other;
  ro.n_serde_types = 1;
  assert_int_equal(tarn_reader_open(E.m, E.wal, cs, &ro, &r), 0);
  assert_int_equal(tarn_log_iter_open(r, L, 0, &it), 0);
  assert_true(tarn_log_iter_next(it, &e, 0) < 0);
  assert_non_null(strstr(tarn_errmsg(), "a-0.parquet"));
  tarn_log_iter_close(it);
  tarn_reader_close(r);
  for (int i = 0; i < N; i++)
    free(pl[i]);
  tarn_buf_free(&val);
  assert_int_equal(tarn_writer_close(w), 0);
  tu_fixture_close(&E);
}

/* The record cache answers repeated lookups until its TTL passes; the head
 * cache keeps heads within its byte bound. */
static void free3(char **p) {
  for (int i = 0; i < 3; i++)
    free(p[i]);
}

static void caches(void **state) {
  (void)state;
  tu_fixture E;
  tarn_writer *w = env_writer(&E, "wr-cache");
  for (int i = 0; i < 3; i++) /* three records, three objects */
    assert_int_equal(tarn_writer_append_sync(w, 90, "abc", 3, 1, NULL, NULL), 0);
  tarn_reader_options ro;
  tarn_reader_options_default(&ro);
  ro.index_ttl_ms = 300;
  tarn_reader *r;
  assert_int_equal(tarn_reader_open(E.m, E.wal, NULL, &ro, &r), 0);
  uint64_t offs[4];
  char *pl[4];
  tarn_reader_stats a, b, c;
  assert_int_equal(read_all(r, 90, 0, offs, pl, 4), 3);
  free3(pl);
  tarn_reader_stats_get(r, &a);
  assert_int_equal(read_all(r, 90, 0, offs, pl, 4), 3);
  free3(pl);
  tarn_reader_stats_get(r, &b);
  assert_int_equal(b.index_hits - a.index_hits, 3); /* every record from the cache */
  assert_int_equal(b.head_hits - a.head_hits, 3);
  assert_int_equal(b.head_reads, a.head_reads);
  usleep(350000);
  assert_int_equal(read_all(r, 90, 0, offs, pl, 4), 3);
  free3(pl);
  tarn_reader_stats_get(r, &c);
  assert_int_equal(c.index_hits, b.index_hits); /* expired: looked up again */
  assert_true(c.index_lookups > b.index_lookups);
  tarn_reader_close(r);
  /* a head cache too small for one head keeps none */
  ro.head_cache_bytes = 16;
  assert_int_equal(tarn_reader_open(E.m, E.wal, NULL, &ro, &r), 0);
  assert_int_equal(read_all(r, 90, 0, offs, pl, 4), 3);
  free3(pl);
  assert_int_equal(read_all(r, 90, 0, offs, pl, 4), 3);
  free3(pl);
  tarn_reader_stats_get(r, &a);
  assert_int_equal(a.head_hits, 0);
  assert_int_equal(a.head_reads, 6);
  tarn_reader_close(r);
  assert_int_equal(tarn_writer_close(w), 0);
  tu_fixture_close(&E);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(append_then_read),
      cmocka_unit_test(big_entry_own_object),
      cmocka_unit_test(interleaved_logs_contiguous_sections),
      cmocka_unit_test(object_write_fails),
      cmocka_unit_test(index_put_unknown_or_failed),
      cmocka_unit_test(leases_held_and_released),
      cmocka_unit_test(session_expiry_stops_publishing),
      cmocka_unit_test(backpressure),
      cmocka_unit_test(trim_marker_respected),
      cmocka_unit_test(section_entries_offsets),
      cmocka_unit_test(ack_ts_is_the_stores),
      cmocka_unit_test(prefix_check),
      cmocka_unit_test(range_reads_only),
      cmocka_unit_test(catch_up_without_head),
      cmocka_unit_test(missing_object_relookup),
      cmocka_unit_test(dispatch_by_file_type),
      cmocka_unit_test(tailing),
      cmocka_unit_test(keys_only_from_sequenced_put),
      cmocka_unit_test(parquet_record_read),
      cmocka_unit_test(caches),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
