/* The Kafka binding on the data path (spec Appendix A): every append to a
 * Kafka topic's log is checked by the writer, whoever calls it (LS-095 …
 * LS-098), and a reader asked for Kafka offsets assigns each batch its
 * offsets from the entry's offset, from WAL objects and compacted files alike
 * (LS-099). The batches are built by tests/support/tu_kafka.c, whose CRCs
 * come from ISA-L and zlib, not from tarn. */
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tarn/catalog.h"
#include "tarn/compactor.h"
#include "tarn/kafka.h"
#include "tarn/kafka_topics.h"
#include "tarn/reader.h"
#include "tarn/writer.h"
#include "tu_compact.h"
#include "tu_kafka.h"
#include "util/bytes.h"

static tarn_writer *open_writer(tu_cenv *E) {
  tarn_writer_options o;
  tarn_writer_options_default(&o);
  o.batch_ms = 5;
  tarn_writer *w;
  assert_int_equal(tarn_writer_open(E->m, E->wal, &o, &w), 0);
  return w;
}

static uint64_t end_of(tu_cenv *E, uint64_t log) {
  tarn_reader *r;
  assert_int_equal(tarn_reader_open(E->m, E->wal, E->compacted, NULL, &r), 0);
  uint64_t end;
  assert_int_equal(tarn_reader_end_offset(r, log, &end, NULL), 0);
  tarn_reader_close(r);
  return end;
}

/* Appends p with `records` and expects the refusal naming the batch, the
 * byte and the rule (want), with nothing stored. */
static void refused(tu_cenv *E, tarn_writer *w, const tarn_buf *p, uint32_t records,
                    const char *want) {
  uint64_t before = end_of(E, E->log);
  int rc = tarn_writer_append(w, E->log, p->data, p->len, records, NULL, NULL);
  if (rc != TARN_ECORRUPT)
    fail_msg("append of a bad entry (%s) gave %d, not TARN_ECORRUPT: %s", want, rc, tarn_errmsg());
  const char *msg = tarn_errmsg();
  if (!strstr(msg, want) || !strstr(msg, "byte ") || !strstr(msg, "Kafka topic"))
    fail_msg("refusal message \"%s\" does not name \"%s\", the byte, the topic", msg, want);
  assert_int_equal(tarn_writer_flush(w), 0);
  assert_int_equal(end_of(E, E->log), before); /* nothing of it is stored */
}

static const char *const kafka_props[] = {"lakestream.kafka.topic.name", "t", NULL};

/* LS-095, LS-096, LS-097, LS-098 */
static void writer_checks_every_kafka_append(void **state) {
  (void)state;
  tu_cenv E;
  tu_cenv_open(&E, "kbind-w", 0, 1, kafka_props);
  tarn_writer *w = open_writer(&E);
  tarn_buf good = TARN_BUF_INIT, p = TARN_BUF_INIT;
  tu_kafka_v2_simple(&good, 3);
  tu_kafka_legacy_msg(&good, 1, 0, 0, "a", 1);
  uint64_t off;
  assert_int_equal(tarn_writer_append_sync(w, E.log, good.data, good.len, 4, &off, NULL), 0);
  assert_int_equal(off, 0);

  /* LS-095: bytes that are no record batch; a truncated batch; bytes after
   * the last batch; a record count that is not the batches'; a bad CRC */
  refused(&E, w, &(tarn_buf){.data = (uint8_t *)"hello world, no batch", .len = 21}, 1, "batch 0");
  tarn_buf_reset(&p);
  tarn_buf_append(&p, good.data, good.len - 3);
  refused(&E, w, &p, 4, "runs past");
  tarn_buf_reset(&p);
  tarn_buf_append(&p, good.data, good.len);
  tarn_buf_append(&p, "xyzxyzxyzxyzxyzxyzxyz", 21);
  refused(&E, w, &p, 4, "batch 2");
  refused(&E, w, &good, 3, "its batches hold 4 records, the entry says 3");
  refused(&E, w, &good, 5, "its batches hold 4 records, the entry says 5");
  tarn_buf_reset(&p);
  tu_kafka_v2_simple(&p, 2);
  p.data[p.len - 1] ^= 1;
  refused(&E, w, &p, 2, "CRC32C");
  /* LS-096: base offset 0; record count = offset range, > 0 */
  tarn_buf_reset(&p);
  tu_kafka_v2_simple(&p, 1);
  tu_kafka_v2_batch(&p, 7, 0, 2, 2, 1);
  refused(&E, w, &p, 3, "batch 1: baseOffset is 7, not 0");
  tarn_buf_reset(&p);
  tu_kafka_v2_batch(&p, 0, 0, 2, 2, 2);
  refused(&E, w, &p, 2, "differs from lastOffsetDelta");
  tarn_buf_reset(&p);
  tu_kafka_v2_batch(&p, 0, 0, 0, 0, -1);
  refused(&E, w, &p, 1, "record count 0 is not positive");
  /* LS-097: a magic 0/1 batch holds a record */
  tarn_buf_reset(&p);
  tu_kafka_wrapper(&p, 1, TARN_KAFKA_GZIP, 0);
  refused(&E, w, &p, 1, "holds no record");
  /* LS-098: no control batch, no transactional batch */
  tarn_buf_reset(&p);
  tu_kafka_v2_batch(&p, 0, TARN_KAFKA_ATTR_CONTROL, 1, 1, 0);
  refused(&E, w, &p, 1, "control batch");
  tarn_buf_reset(&p);
  tu_kafka_v2_simple(&p, 1);
  tu_kafka_v2_batch(&p, 0, TARN_KAFKA_ATTR_TRANSACTIONAL, 1, 1, 0);
  refused(&E, w, &p, 2, "batch 1: a transactional batch");

  /* the writer goes on taking good entries after refusals */
  assert_int_equal(tarn_writer_append_sync(w, E.log, good.data, good.len, 4, &off, NULL), 0);
  assert_int_equal(off, 4);
  assert_int_equal(tarn_writer_close(w), 0);
  assert_int_equal(end_of(&E, E.log), 8);
  tarn_buf_free(&good);
  tarn_buf_free(&p);
  tu_cenv_close(&E);
}

/* A stream that is no Kafka topic's takes any bytes; a writer that learned
 * one log is not Kafka still checks another that is. */
static void other_streams_take_any_bytes(void **state) {
  (void)state;
  tu_cenv E;
  tu_cenv_open(&E, "kbind-plain", 0, 1, NULL);
  tarn_catalog *cat;
  assert_int_equal(tarn_catalog_open(E.m, NULL, &cat), 0);
  tarn_kafka_topic t;
  assert_int_equal(tarn_kafka_topic_create(cat, "k", 1, NULL, 0, &t), 0);
  tarn_writer *w = open_writer(&E);
  assert_int_equal(tarn_writer_append_sync(w, E.log, "hello", 5, 1, NULL, NULL), 0);
  assert_int_equal(tarn_writer_append(w, t.logs[0], "hello", 5, 1, NULL, NULL), TARN_ECORRUPT);
  /* a raw log no stream names */
  assert_int_equal(tarn_writer_append_sync(w, 4242, "hello", 5, 1, NULL, NULL), 0);
  assert_int_equal(tarn_writer_close(w), 0);
  tarn_kafka_topic_free(&t);
  tarn_catalog_close(cat);
  tu_cenv_close(&E);
}

/* One entry's batches and where each one's offset field lies. */
typedef struct built {
  tarn_buf p;
  size_t pos[8];
  int magic[8];
  uint32_t recs[8];
  size_t n;
  uint32_t total;
} built;

static void add_v2(built *b, int32_t n) {
  b->pos[b->n] = b->p.len, b->magic[b->n] = 2, b->recs[b->n++] = (uint32_t)n;
  tu_kafka_v2_simple(&b->p, n);
  b->total += (uint32_t)n;
}
static void add_v1(built *b) {
  b->pos[b->n] = b->p.len, b->magic[b->n] = 1, b->recs[b->n++] = 1;
  tu_kafka_legacy_msg(&b->p, 1, 0, 0, "m", 1);
  b->total += 1;
}
static void add_wrapper(built *b, int n) {
  b->pos[b->n] = b->p.len, b->magic[b->n] = 0, b->recs[b->n++] = (uint32_t)n;
  tu_kafka_wrapper(&b->p, 0, TARN_KAFKA_GZIP, n);
  b->total += (uint32_t)n;
}

/* Checks the offset fields of entry e (built as b) hold the offsets LS-099
 * assigns (tables §3.11: v2 base offset = first, v0/v1 offset = last), and
 * that nothing else changed. */
static void check_assigned(const tarn_entry *e, const built *b) {
  assert_int_equal(e->payload_len, b->p.len);
  assert_int_equal(e->record_count, b->total);
  uint64_t next = e->offset;
  tarn_buf want = TARN_BUF_INIT;
  tarn_buf_append(&want, b->p.data, b->p.len);
  for (size_t i = 0; i < b->n; i++) {
    uint64_t v = b->magic[i] == 2 ? next : next + b->recs[i] - 1;
    uint64_t got = tarn__ld_be64(e->payload + b->pos[i]);
    if (got != v)
      fail_msg("entry at %llu, batch %zu (magic %d): offset field %llu, want %llu",
               (unsigned long long)e->offset, i, b->magic[i], (unsigned long long)got,
               (unsigned long long)v);
    tarn__st_be64(want.data + b->pos[i], v);
    next += b->recs[i];
  }
  assert_memory_equal(e->payload, want.data, want.len); /* only those fields, CRCs intact */
  tarn_buf_free(&want);
}

static void read_all(tu_cenv *E, int mode, const built *bs, size_t n, int want_assigned) {
  tarn_reader_options o;
  tarn_reader_options_default(&o);
  o.kafka_offsets = mode;
  o.index_ttl_ms = 0;
  tarn_reader *r;
  assert_int_equal(tarn_reader_open(E->m, E->wal, E->compacted, &o, &r), 0);
  tarn_log_iter *it;
  assert_int_equal(tarn_log_iter_open(r, E->log, 0, &it), 0);
  for (size_t i = 0; i < n; i++) {
    tarn_entry e;
    assert_int_equal(tarn_log_iter_next(it, &e, 0), 0);
    if (want_assigned)
      check_assigned(&e, &bs[i]);
    else
      assert_memory_equal(e.payload, bs[i].p.data, bs[i].p.len); /* as stored */
  }
  tarn_entry e;
  assert_int_equal(tarn_log_iter_next(it, &e, 0), TARN_EEND);
  tarn_log_iter_close(it);
  tarn_reader_close(r);
}

/* LS-099 */
static void reads_assign_offsets_from_wal_and_parquet(void **state) {
  (void)state;
  tu_cenv E;
  tu_cenv_open(&E, "kbind-r", 0, 1, kafka_props);
  built bs[4];
  memset(bs, 0, sizeof bs);
  add_v2(&bs[0], 3);
  add_v2(&bs[0], 2);
  add_v1(&bs[1]);
  add_v2(&bs[1], 4);
  add_wrapper(&bs[1], 3);
  add_v1(&bs[1]);
  add_wrapper(&bs[2], 2);
  add_v2(&bs[3], 1);
  tarn_writer *w = open_writer(&E);
  uint64_t off, want = 0;
  for (size_t i = 0; i < 4; i++) {
    assert_int_equal(
        tarn_writer_append_sync(w, E.log, bs[i].p.data, bs[i].p.len, bs[i].total, &off, NULL), 0);
    assert_int_equal(off, want);
    want += bs[i].total;
  }
  assert_int_equal(tarn_writer_close(w), 0);

  read_all(&E, TARN_READER_KAFKA_TOPICS, bs, 4, 1); /* from the WAL object */
  read_all(&E, TARN_READER_KAFKA_ALL, bs, 4, 1);
  read_all(&E, TARN_READER_KAFKA_STORED, bs, 4, 0);

  tarn_compactor_options co;
  tarn_compactor_options_default(&co);
  tarn_compactor *c;
  assert_int_equal(tarn_compactor_open(E.m, E.wal, E.compacted, &co, &c), 0);
  tarn_compact_range r;
  assert_int_equal(tarn_compact_once(c, E.log, 1, &r, NULL), 0);
  assert_true(r.n_files >= 1);
  tarn_compact_range_free(&r);
  tarn_compactor_close(c);
  read_all(&E, TARN_READER_KAFKA_TOPICS, bs, 4, 1); /* from the compacted file's rows */
  read_all(&E, TARN_READER_KAFKA_STORED, bs, 4, 0); /* the rows hold the bytes as stored */
  for (size_t i = 0; i < 4; i++)
    tarn_buf_free(&bs[i].p);
  tu_cenv_close(&E);
}

/* Offsets are assigned only for Kafka topics' logs unless asked for every
 * log; a log whose entries are no batches then fails the read. */
static void plain_logs_are_left_alone(void **state) {
  (void)state;
  tu_cenv E;
  tu_cenv_open(&E, "kbind-p", 0, 1, NULL);
  built b;
  memset(&b, 0, sizeof b);
  add_v2(&b, 2);
  tarn_writer *w = open_writer(&E);
  assert_int_equal(tarn_writer_append_sync(w, E.log, "xx", 2, 1, NULL, NULL), 0);
  assert_int_equal(tarn_writer_append_sync(w, E.log, b.p.data, b.p.len, 2, NULL, NULL), 0);
  assert_int_equal(tarn_writer_close(w), 0);
  tarn_reader_options o;
  tarn_reader_options_default(&o);
  o.kafka_offsets = TARN_READER_KAFKA_TOPICS;
  tarn_reader *r;
  assert_int_equal(tarn_reader_open(E.m, E.wal, E.compacted, &o, &r), 0);
  tarn_log_iter *it;
  tarn_entry e;
  assert_int_equal(tarn_log_iter_open(r, E.log, 1, &it), 0);
  assert_int_equal(tarn_log_iter_next(it, &e, 0), 0);
  assert_memory_equal(e.payload, b.p.data, b.p.len); /* base offset stays 0 */
  tarn_log_iter_close(it);
  tarn_reader_close(r);
  o.kafka_offsets = TARN_READER_KAFKA_ALL;
  assert_int_equal(tarn_reader_open(E.m, E.wal, E.compacted, &o, &r), 0);
  assert_int_equal(tarn_log_iter_open(r, E.log, 0, &it), 0);
  assert_int_equal(tarn_log_iter_next(it, &e, 0), TARN_ECORRUPT);
  assert_int_equal(tarn_log_iter_next(it, &e, 0), 0);
  assert_int_equal(tarn__ld_be64(e.payload), 1);
  tarn_log_iter_close(it);
  tarn_reader_close(r);
  tarn_buf_free(&b.p);
  tu_cenv_close(&E);
}

typedef struct seen {
  int64_t offset[64];
  char value[64][8];
  size_t n;
} seen;

static int note_record(void *arg, const tarn_kafka_record *r) {
  seen *s = arg;
  assert_true(s->n < 64);
  s->offset[s->n] = r->offset;
  assert_true(r->value_len > 0 && r->value_len < 8);
  memcpy(s->value[s->n], r->value, (size_t)r->value_len);
  s->value[s->n][r->value_len] = 0;
  s->n++;
  return 0;
}

/* LS-099: the records of every kind of batch, compressed with each codec,
 * take consecutive offsets from the entry's; the display decoder inflates
 * gzip, snappy, lz4 and zstd. */
static void records_of_every_codec(void **state) {
  (void)state;
  tarn_buf p = TARN_BUF_INIT;
  static const int codecs[] = {TARN_KAFKA_NONE, TARN_KAFKA_GZIP, TARN_KAFKA_SNAPPY, TARN_KAFKA_LZ4,
                               TARN_KAFKA_ZSTD};
  for (size_t c = 0; c < 5; c++)
    tu_kafka_v2_batch(&p, 0, (uint16_t)codecs[c], 3, 3, 2);
  tu_kafka_wrapper(&p, 1, TARN_KAFKA_SNAPPY, 2);
  tu_kafka_wrapper(&p, 0, TARN_KAFKA_LZ4, 2);
  tu_kafka_legacy_msg(&p, 1, 0, 0, "m", 1);
  seen s = {.n = 0};
  assert_int_equal(tarn_kafka_records(p.data, p.len, 100, 0, note_record, &s), 0);
  assert_int_equal(s.n, 5 * 3 + 2 + 2 + 1);
  for (size_t i = 0; i < s.n; i++)
    assert_int_equal(s.offset[i], 100 + (int64_t)i);
  for (size_t i = 0; i < 15; i++) {
    char want[8];
    snprintf(want, sizeof want, "v%zu", i % 3);
    assert_string_equal(s.value[i], want);
  }
  assert_string_equal(s.value[15], "x");
  assert_string_equal(s.value[19], "m");
  /* a v2 batch whose records do not decode is an error naming it */
  tarn_buf bad = TARN_BUF_INIT;
  tu_kafka_v2_batch(&bad, 0, 0, 2, 3, 2); /* declares 3 records, holds 2 */
  s.n = 0;
  assert_int_equal(tarn_kafka_records(bad.data, bad.len, 0, 0, note_record, &s), TARN_ECORRUPT);
  assert_non_null(strstr(tarn_errmsg(), "batch 0: record 2"));
  tarn_buf_free(&bad);
  tarn_buf_free(&p);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(writer_checks_every_kafka_append),
      cmocka_unit_test(other_streams_take_any_bytes),
      cmocka_unit_test(reads_assign_offsets_from_wal_and_parquet),
      cmocka_unit_test(plain_logs_are_left_alone),
      cmocka_unit_test(records_of_every_codec),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
