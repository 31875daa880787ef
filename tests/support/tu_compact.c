#include "testutil.h"
#include "tu_compact.h"
#include "tu_kafka.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tarn/catalog.h"
#include "tarn/compactor.h"
#include "tarn/kafka_topics.h"
#include "tarn/parquet.h"
#include "tarn/testing.h"
#include "tarn/reader.h"
#include "tarn/writer.h"
#include "util/clock.h"

void tu_cenv_open(tu_cenv *e, const char *tag, int on_disk, uint32_t n_partitions,
                  const char *const *props) {
  static int seq;
  memset(e, 0, sizeof *e);
  e->on_disk = on_disk;
  if (on_disk == TU_CENV_S3) {
    const char *s3 = getenv("TARN_TEST_S3_URI");
    assert_non_null(s3);
    const char *q = strchr(s3, '?');
    size_t bl = q ? (size_t)(q - s3) : strlen(s3);
    const char *sep = bl && s3[bl - 1] == '/' ? "" : "/";
    snprintf(e->name, sizeof e->name, "cp-%s-%ld-%d-%d", tag, (long)time(NULL), (int)getpid(),
             seq++);
    snprintf(e->meta_uri, sizeof e->meta_uri, "mem:%s", e->name);
    snprintf(e->wal_uri, sizeof e->wal_uri, "%.*s%s%s-wal%s", (int)bl, s3, sep, e->name,
             q ? q : "");
    snprintf(e->compacted_uri, sizeof e->compacted_uri, "%.*s%s%s-c%s", (int)bl, s3, sep, e->name,
             q ? q : "");
  } else if (on_disk) {
    char *d = tu_tmpdir(tag);
    snprintf(e->name, sizeof e->name, "%s", d);
    free(d);
    snprintf(e->meta_uri, sizeof e->meta_uri, "sqlite:%s/meta.db", e->name);
    snprintf(e->wal_uri, sizeof e->wal_uri, "file://%s/wal", e->name);
    snprintf(e->compacted_uri, sizeof e->compacted_uri, "file://%s/compacted", e->name);
    char p[400];
    snprintf(p, sizeof p, "%s/wal", e->name);
    mkdir(p, 0777);
    snprintf(p, sizeof p, "%s/compacted", e->name);
    mkdir(p, 0777);
  } else {
    snprintf(e->name, sizeof e->name, "cp-%s-%d-%d", tag, (int)getpid(), seq++);
    snprintf(e->meta_uri, sizeof e->meta_uri, "mem:%s", e->name);
    snprintf(e->wal_uri, sizeof e->wal_uri, "mem:%s-wal", e->name);
    snprintf(e->compacted_uri, sizeof e->compacted_uri, "mem:%s-c", e->name);
  }
  assert_int_equal(tarn_meta_open(e->meta_uri, &e->m), 0);
  assert_int_equal(tarn_objstore_open(e->wal_uri, &e->wal), 0);
  assert_int_equal(tarn_objstore_open(e->compacted_uri, &e->compacted), 0);
  tarn_catalog *cat;
  assert_int_equal(tarn_catalog_open(e->m, NULL, &cat), 0);
  assert_int_equal(tarn_catalog_init(cat, NULL), 0);
  tarn_stream_prop pv[8];
  size_t np = 0;
  for (size_t i = 0; props && props[i] && np < 8; i += 2, np++) {
    pv[np].key = (char *)props[i];
    pv[np].value = (char *)props[i + 1];
    e->kafka |= strcmp(props[i], TARN_KAFKA_PROP_TOPIC_NAME) == 0 ||
                (strcmp(props[i], TARN_PROP_COMPACTION_SERDE) == 0 && props[i + 1] &&
                 strcmp(props[i + 1], TARN_PARQUET_KAFKA_SERDE) == 0);
  }
  tarn_catalog_record r;
  assert_int_equal(tarn_catalog_create_stream(cat, "ns", "s1", n_partitions, pv, np, &r), 0);
  e->n_logs = r.n_logs < 4 ? r.n_logs : 4;
  for (size_t i = 0; i < e->n_logs; i++)
    e->logs[i] = r.logs[i];
  e->log = r.logs[0];
  tarn_catalog_record_free(&r);
  tarn_catalog_close(cat);
}

/* Deletes every object of s. */
static void empty_store(tarn_objstore *s) {
  int more;
  do {
    tarn_objstore_listing l;
    assert_int_equal(tarn_objstore_list(s, "", NULL, 1000, &l), 0);
    for (size_t i = 0; i < l.n; i++)
      assert_int_equal(tarn_objstore_delete(s, l.names[i]), 0);
    more = l.truncated;
    tarn_objstore_listing_free(&l);
  } while (more);
}

void tu_cenv_close(tu_cenv *e) {
  if (e->on_disk == TU_CENV_S3) {
    empty_store(e->wal);
    empty_store(e->compacted);
  }
  tarn_objstore_close(e->wal);
  tarn_objstore_close(e->compacted);
  tarn_meta_close(e->m);
  if (e->on_disk == TU_CENV_S3) {
    /* the objects are gone; the mem: metadata goes with the process */
  } else if (e->on_disk) {
    tu_rmtree(e->name);
  } else {
    char n[96];
    tarn_objstore_mem_drop(e->name);
    snprintf(n, sizeof n, "%s-wal", e->name);
    tarn_objstore_mem_drop(n);
    snprintf(n, sizeof n, "%s-c", e->name);
    tarn_objstore_mem_drop(n);
  }
}

size_t tu_payload(uint64_t seed, uint64_t j, uint8_t *out, size_t cap) {
  uint64_t st = seed * 1000003u + j + 1;
  size_t n = 1 + (size_t)(tu_rand(&st) % 300);
  if (j % 17 == 5)
    n = 0; /* an empty payload now and then */
  if (n > cap)
    n = cap;
  for (size_t i = 0; i < n; i++)
    out[i] = (uint8_t)tu_rand(&st);
  return n;
}

void tu_append(tu_cenv *e, uint64_t log, uint64_t first, size_t n, size_t per_object) {
  tarn_writer_options o;
  tarn_writer_options_default(&o);
  o.batch_ms = 1000;
  tarn_writer *w;
  assert_int_equal(tarn_writer_open(e->m, e->wal, &o, &w), 0);
  uint8_t buf[512];
  for (size_t i = 0; i < n; i++) {
    uint64_t j = first + i;
    size_t len = tu_payload(log, j, buf, sizeof buf);
    uint32_t records = (uint32_t)(1 + j % 3);
    tarn_buf kb = TARN_BUF_INIT;
    if (e->kafka) { /* the writer takes only record batches on a Kafka stream (LS-095) */
      tu_kafka_v2_batch(&kb, 0, 0, (int32_t)records, (int32_t)records, (int32_t)records - 1);
      assert_true(kb.len <= sizeof buf);
      memcpy(buf, kb.data, kb.len);
      len = kb.len;
      tarn_buf_free(&kb);
    }
    assert_int_equal(tarn_writer_append(w, log, buf, len, records, NULL, NULL), 0);
    if ((i + 1) % per_object == 0 || i + 1 == n) {
      assert_int_equal(tarn_writer_flush(w), 0);
      struct timespec ts = {0, 2000000};
      nanosleep(&ts, NULL);
    }
  }
  tarn_writer_stats st;
  tarn_writer_stats_get(w, &st);
  assert_int_equal(st.entries_failed + st.entries_unknown, 0);
  assert_int_equal(tarn_writer_close(w), 0);
}

static int64_t frozen_ms;
static int64_t frozen_now(void *arg) {
  (void)arg;
  return frozen_ms;
}

int tu_reclaim_pass_at(int64_t now_ms, tarn_meta *m, tarn_objstore *wal, tarn_objstore *compacted,
                       const tarn_reclaim_options *o, tarn_reclaim_stats *st) {
  frozen_ms = now_ms;
  tarn__clock_hooks h = {.now_ms = frozen_now};
  tarn__clock_set(&h);
  int rc = tarn_reclaim_pass(m, wal, compacted, o, st);
  tarn__clock_set(NULL);
  return rc;
}

void tu_snapshot(tu_cenv *e, uint64_t log, tu_snap *out) {
  memset(out, 0, sizeof *out);
  tarn_reader_options ro;
  tarn_reader_options_default(&ro);
  ro.index_ttl_ms = 0;
  ro.head_cache_bytes = 0;
  tarn_reader *r;
  assert_int_equal(tarn_reader_open(e->m, e->wal, e->compacted, &ro, &r), 0);
  tarn_log_iter *it;
  assert_int_equal(tarn_log_iter_open(r, log, 0, &it), 0);
  size_t cap = 0;
  for (;;) {
    tarn_entry en;
    int rc = tarn_log_iter_next(it, &en, 0);
    if (rc == TARN_EEND)
      break;
    if (rc)
      fail_msg("reading log %llu: %s", (unsigned long long)log, tarn_errmsg());
    if (out->n == cap) {
      cap = cap ? cap * 2 : 64;
      out->v = realloc(out->v, cap * sizeof *out->v);
    }
    tu_snap_ent *s = &out->v[out->n++];
    s->offset = en.offset;
    s->count = en.record_count;
    s->ts = en.timestamp_ms;
    s->cumulative = en.cumulative_size;
    s->len = en.payload_len;
    s->payload = malloc(en.payload_len + 1);
    memcpy(s->payload, en.payload, en.payload_len);
  }
  tarn_log_iter_close(it);
  tarn_reader_close(r);
}

void tu_snap_free(tu_snap *s) {
  for (size_t i = 0; i < s->n; i++)
    free(s->v[i].payload);
  free(s->v);
  memset(s, 0, sizeof *s);
}

void tu_snap_assert_same(const tu_snap *a, const tu_snap *b) {
  size_t i = 0;
  for (size_t j = 0; j < b->n; j++) {
    while (i < a->n && a->v[i].offset < b->v[j].offset)
      i++;
    assert_true(i < a->n);
    const tu_snap_ent *x = &a->v[i], *y = &b->v[j];
    assert_int_equal(x->offset, y->offset);
    assert_int_equal(x->count, y->count);
    assert_int_equal(x->ts, y->ts);
    assert_int_equal(x->cumulative, y->cumulative);
    assert_int_equal(x->len, y->len);
    assert_memory_equal(x->payload, y->payload, x->len);
  }
}

void tu_compactor_options(tarn_compactor_options *o, uint64_t file_bytes, uint64_t range_bytes) {
  tarn_compactor_options_default(o);
  if (file_bytes)
    o->max_file_bytes = file_bytes;
  if (range_bytes)
    o->max_range_bytes = range_bytes;
}

tarn_compactor *tu_compactor(tu_cenv *e, tarn_meta *m, const tarn_compactor_options *o) {
  tarn_compactor *c = NULL;
  assert_int_equal(tarn_compactor_open(m ? m : e->m, e->wal, e->compacted, o, &c), 0);
  return c;
}

tarn_compactor *tu_compactor_sized(tu_cenv *e, tarn_meta *m, uint64_t file_bytes,
                                   uint64_t range_bytes) {
  tarn_compactor_options o;
  tu_compactor_options(&o, file_bytes, range_bytes);
  return tu_compactor(e, m, &o);
}
