/* ListOffsets by timestamp (src/kafka/time_lookup.c, issue 13 §2, issue 37):
 * the first batch whose max timestamp is at or after the target,
 * found by a binary search over a Kafka topic's log of many entries, each in
 * its own WAL object, and in it the first record at or after the target (as
 * Kafka's findOffsetByTimestamp) — checked against the answer worked out from the
 * batches appended, for targets before, inside, between and after them, and
 * with a log start inside the log. The reader's range reads per lookup show
 * that it is a search, not a scan of the log. */
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kafka/time_lookup.h"
#include "tarn/kafka_topics.h"
#include "tarn/reader.h"
#include "tarn/writer.h"
#include "tu_compact.h"
#include "tu_kafka.h"

#define N 200

static const char *const kafka_props[] = {TARN_KAFKA_PROP_TOPIC_NAME, "t", NULL};

typedef struct ent {
  uint64_t offset;
  int32_t n;
  int64_t first_ts, max_ts;
} ent;

/* Entry j: 1-3 records, timestamps rising with gaps of 10 (and one repeat). */
static void append_all(tu_cenv *E, ent *v) {
  tarn_writer_options o;
  tarn_writer_options_default(&o);
  o.batch_ms = 1;
  tarn_writer *w;
  assert_int_equal(tarn_writer_open(E->m, E->wal, &o, &w), 0);
  for (int j = 0; j < N; j++) {
    v[j].n = 1 + j % 3;
    v[j].first_ts = 1000 + 10 * (int64_t)j - (j == 100 ? 10 : 0);
    v[j].max_ts = v[j].first_ts + v[j].n - 1;
    tarn_buf b = TARN_BUF_INIT;
    tu_kafka_v2_timed(&b, v[j].n, v[j].first_ts);
    assert_int_equal(
        tarn_writer_append_sync(w, E->log, b.data, b.len, (uint32_t)v[j].n, &v[j].offset, NULL), 0);
    tarn_buf_free(&b);
  }
  tarn_writer_close(w);
}

/* What the lookup must answer, as Kafka does: in the first entry whose max
 * timestamp >= ts, the first record at or after `first` whose timestamp (the
 * batch's first + its index) >= ts. */
static void expected(const ent *v, uint64_t first, int64_t ts, int64_t *off, int64_t *t) {
  *off = *t = -1;
  for (int j = 0; j < N; j++) {
    if (v[j].offset + (uint64_t)v[j].n <= first || v[j].max_ts < ts)
      continue;
    for (int i = 0; i < v[j].n; i++) {
      if (v[j].offset + (uint64_t)i < first || v[j].first_ts + i < ts)
        continue;
      *off = (int64_t)v[j].offset + i;
      *t = v[j].first_ts + i;
      return;
    }
  }
}

static uint64_t reads(tarn_reader *r) {
  tarn_reader_stats s;
  tarn_reader_stats_get(r, &s);
  return s.range_reads + s.head_reads;
}

static void check_targets(tarn_reader *r, tu_cenv *E, const ent *v, uint64_t first, uint64_t end,
                          uint64_t *most) {
  for (int j = -1; j <= N; j++) {
    int64_t base = j < 0 ? 0 : j == N ? v[N - 1].max_ts + 1 : v[j].first_ts;
    int64_t targets[] = {base, base + 1, base + 5, base - 1};
    for (size_t i = 0; i < sizeof targets / sizeof *targets; i++) {
      int64_t ts = targets[i] < 0 ? 0 : targets[i], off, t, want_off, want_t;
      expected(v, first, ts, &want_off, &want_t);
      uint64_t before = reads(r);
      assert_int_equal(tarn__kafka_offset_for_time(r, E->log, first, end, ts, &off, &t), 0);
      uint64_t used = reads(r) - before;
      if (used > *most)
        *most = used;
      if (off != want_off || t != want_t)
        fail_msg("ts %lld from %llu: offset %lld ts %lld, want %lld ts %lld", (long long)ts,
                 (unsigned long long)first, (long long)off, (long long)t, (long long)want_off,
                 (long long)want_t);
    }
  }
}

static void binary_search_over_many_entries(void **state) {
  (void)state;
  tu_cenv E;
  tu_cenv_open(&E, "ktime", 0, 1, kafka_props);
  ent v[N];
  append_all(&E, v);
  /* heads not cached: every entry read costs its object's reads */
  tarn_reader_options o;
  tarn_reader_options_default(&o);
  o.head_cache_bytes = 0;
  o.index_ttl_ms = 0;
  tarn_reader *r;
  assert_int_equal(tarn_reader_open(E.m, E.wal, E.compacted, &o, &r), 0);
  uint64_t end;
  assert_int_equal(tarn_reader_end_offset(r, E.log, &end, NULL), 0);
  assert_int_equal(end, v[N - 1].offset + (uint64_t)v[N - 1].n);
  uint64_t most = 0;
  check_targets(r, &E, v, 0, end, &most);
  /* a log start inside entry 50: offsets below it are never answered */
  check_targets(r, &E, v, v[50].offset + 1, end, &most);
  /* a search reads about log2(400 offsets) + 1 = 10 entries; a scan up to N */
  uint64_t per_entry = 0;
  {
    uint64_t before = reads(r);
    tarn_log_iter *it;
    assert_int_equal(tarn_log_iter_open(r, E.log, v[10].offset, &it), 0);
    tarn_entry e;
    assert_int_equal(tarn_log_iter_next(it, &e, 0), 0);
    tarn_log_iter_close(it);
    per_entry = reads(r) - before;
  }
  assert_true(per_entry >= 1);
  if (most > per_entry * 10)
    fail_msg("a lookup made %llu reads: %llu entries of %d (a scan, not a search)",
             (unsigned long long)most, (unsigned long long)(most / per_entry), N);
  tarn_reader_close(r);
  tu_cenv_close(&E);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(binary_search_over_many_entries),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
