/* Allocation failures, in the style of SQLite's and curl's OOM tests: each
 * operation runs once clean to count its allocations N, then once for every
 * k = 1..N with the k-th allocation failing. It must then fail with
 * TARN_ENOMEM (or an error the case allows and names) or succeed with the
 * right result — never crash, never claim success with a wrong result — and
 * leave its state usable. LeakSanitizer (the ASan build) checks that every
 * failure path frees what it allocated. */
/* ctest-wrap-alloc */
#include "testutil.h"
#include "tu_alloc_fail.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tarn/buf.h"
#include "tarn/catalog.h"
#include "tarn/companion.h"
#include "tarn/compactor.h"
#include "tarn/entryindex.h"
#include "tarn/error.h"
#include "tarn/fileindex.h"
#include "tarn/fsck.h"
#include "tarn/kafka.h"
#include "tarn/lease.h"
#include "tarn/parquet.h"
#include "tarn/reader.h"
#include "tarn/reclaim.h"
#include "tarn/trim.h"
#include "tarn/wal.h"
#include "tarn/writer.h"
#include "tu_compact.h"
#include "tu_kafka.h"
#include "util/bytes.h"

/* One operation under test: 0 when it succeeded and its result was checked
 * (a wrong result fails the test inside), or the negative code it failed with. */
typedef int (*op_fn)(void *ctx);

/* Past this many allocations an operation is sampled: every stride-th k plus
 * the first and last MAX_K/4 (at most about MAX_K runs per mode), so the
 * whole test stays under a minute in the ASan build. */
#define MAX_K 400

/* Set by a case whose runs are slow (sqlite's fsyncs): the persistent mode is
 * skipped, to keep the test's run time down. */
static int one_shot_only;

/* Runs op clean (it must succeed), then with each allocation failing in turn,
 * first alone, then with every later one failing too (persistent).
 * setup (may be NULL) runs before each run, teardown (may be NULL) after it
 * with the run's code, both with allocations succeeding: teardown checks that
 * the state the run left is consistent. also_ok: another code a failure may
 * give (0 for none). Returns N. */
static uint64_t run_failing_with(const char *name, void (*setup)(void *), op_fn op,
                                 void (*teardown)(void *, int), void *ctx, int also_ok) {
  if (setup)
    setup(ctx);
  tu_alloc_fail_at(0);
  int rc = op(ctx);
  uint64_t n = tu_alloc_calls();
  if (rc != 0)
    fail_msg("%s: clean run failed: %d %s", name, rc, tarn_errmsg());
  if (teardown)
    teardown(ctx, rc);
  assert_true(n > 0);
  uint64_t stride = n > MAX_K ? (n + MAX_K - 1) / (MAX_K / 2) : 1;
  uint64_t failures = 0, runs = 0;
  for (int persist = 0; persist < (one_shot_only ? 1 : 2); persist++) {
    for (uint64_t k = 1; k <= n; k++) {
      if (stride > 1 && k > MAX_K / 4 && k + MAX_K / 4 <= n && k % stride)
        continue;
      /* Persistent runs of long operations: every other k (neighbours fail alike). */
      if (persist && n > 100 && k % 2 == 0 && k != n)
        continue;
      if (setup)
        setup(ctx);
      if (persist)
        tu_alloc_fail_from(k);
      else
        tu_alloc_fail_at(k);
      rc = op(ctx);
      int hit = tu_alloc_failed();
      tu_alloc_fail_at(0);
      runs++;
      if (rc != 0) {
        if (!hit)
          fail_msg("%s: failed with %d (%s) without an allocation failure", name, rc,
                   tarn_errmsg());
        if (rc != TARN_ENOMEM && (also_ok == 0 || rc != also_ok))
          fail_msg("%s: allocation %llu of %llu failing%s gave %d (%s)", name,
                   (unsigned long long)k, (unsigned long long)n, persist ? " (and all after)" : "",
                   rc, tarn_errmsg());
        failures++;
      }
      if (teardown)
        teardown(ctx, rc);
    }
  }
  printf("%s: %llu allocations, %llu runs, %llu failures reported\n", name, (unsigned long long)n,
         (unsigned long long)runs, (unsigned long long)failures);
  return n;
}

static uint64_t run_failing(const char *name, op_fn op, void *ctx, int also_ok) {
  return run_failing_with(name, NULL, op, NULL, ctx, also_ok);
}

/* ---- WAL objects ------------------------------------------------------- */

typedef struct wal_ctx {
  uint8_t payloads[6][40];
  uint64_t logs[6];
  tarn_buf ref; /* the object built clean */
} wal_ctx;

static void wal_ctx_init(wal_ctx *c) {
  memset(c, 0, sizeof *c);
  for (int i = 0; i < 6; i++) {
    memset(c->payloads[i], 'a' + i, sizeof c->payloads[i]);
    c->logs[i] = (uint64_t)(7 + i % 3);
  }
}

static int wal_build(wal_ctx *c, tarn_buf *out) {
  tarn_wal_builder b;
  tarn_wal_builder_init(&b);
  int rc = 0;
  for (int i = 0; i < 6 && !rc; i++)
    rc = tarn_wal_builder_add(&b, c->logs[i], c->payloads[i], (size_t)(10 + i), (uint32_t)(i + 1));
  if (!rc)
    rc = tarn_wal_builder_finish(&b, out);
  if (!rc) {
    assert_int_equal(b.section_count, 3);
    assert_int_equal(b.sections[0].log_id, 7);
    assert_int_equal(b.sections[0].record_total, 1 + 4);
    assert_int_equal(b.sections[0].bounds[1], 5);
  }
  tarn_wal_builder_free(&b);
  return rc;
}

static int op_wal_builder(void *ctx) {
  wal_ctx *c = ctx;
  tarn_buf out = TARN_BUF_INIT;
  int rc = wal_build(c, &out);
  if (!rc) {
    assert_int_equal(out.len, c->ref.len);
    assert_memory_equal(out.data, c->ref.data, out.len);
  }
  tarn_buf_free(&out);
  return rc;
}

static void check_wal(const wal_ctx *c, const tarn_wal *w, int payloads) {
  assert_int_equal(w->section_count, 3);
  assert_int_equal(w->entry_total, 6);
  for (int i = 0; i < 6; i++) {
    const tarn_wal_section *s = tarn_wal_find(w, c->logs[i]);
    assert_non_null(s);
    const tarn_wal_entry *e = &s->entries[i / 3];
    assert_int_equal(e->payload_size, 10 + i);
    assert_int_equal(e->record_count, i + 1);
    if (payloads)
      assert_memory_equal(e->payload, c->payloads[i], 10 + i);
  }
}

static int op_wal_decode(void *ctx) {
  wal_ctx *c = ctx;
  tarn_wal w;
  int rc = tarn_wal_decode(c->ref.data, c->ref.len, &w);
  if (rc) {
    assert_int_equal(w.section_count, 0); /* left empty, needs no free */
    return rc;
  }
  check_wal(c, &w, 1);
  tarn_wal_free(&w);
  uint64_t head;
  assert_int_equal(tarn_wal_head_length(c->ref.data, c->ref.len, c->ref.len, &head), 0);
  rc = tarn_wal_decode_index(c->ref.data, (size_t)head, c->ref.len, &w);
  if (rc)
    return rc;
  check_wal(c, &w, 0);
  tarn_wal_free(&w);
  return 0;
}

/* The legacy layout of Appendix C (test_wal.c's 80-byte vector). */
#define LEGACY80                                                                                   \
  "00000000 00000040 00000000 00000007 00000000 00000000 00000000 00000000 00000000 00000005"      \
  " 00000000 00000007 00000000 00000001 00000000 00000005 00000000 00000003 01020304 05060708"

static int op_wal_legacy(void *ctx) {
  const tarn_buf *obj = ctx;
  tarn_wal w;
  int rc = tarn_wal_decode(obj->data, obj->len, &w);
  if (rc)
    return rc;
  assert_int_equal(w.version, TARN_WAL_LEGACY);
  const tarn_wal_section *sec = tarn_wal_find(&w, 7);
  assert_non_null(sec);
  assert_int_equal(sec->entry_count, 2);
  assert_memory_equal(sec->entries[1].payload, "\x06\x07\x08", 3);
  tarn_wal_free(&w);
  return 0;
}

static void wal_objects(void **state) {
  (void)state;
  wal_ctx c;
  wal_ctx_init(&c);
  assert_int_equal(wal_build(&c, &c.ref), 0);
  run_failing("wal builder", op_wal_builder, &c, 0);
  run_failing("wal decode", op_wal_decode, &c, 0);
  tarn_buf_free(&c.ref);
  tarn_buf legacy = TARN_BUF_INIT;
  size_t n;
  uint8_t *p = tu_hex(LEGACY80, &n);
  assert_int_equal(tarn_buf_append(&legacy, p, n), 0);
  free(p);
  run_failing("wal decode (legacy)", op_wal_legacy, &legacy, 0);
  tarn_buf_free(&legacy);
}

/* ---- EntryIndex and the file index (the spec's examples, tables §4) ---- */

static const uint32_t A23[] = {2, 3};
static const tarn_file_index_entry files[] = {{2, "7-0.parquet"}, {6, "7-3.parquet"}};

typedef struct ei_ctx {
  tarn_buf raw, parquet, fi_bin, fi_b64;
} ei_ctx;

static int ei_build(ei_ctx *c) {
  tarn_raw_record r = {"7-00000001.wal", 1, 3, 8, 8, A23, 2};
  tarn_parquet_record q = {NULL, 0, 7, 0, 28, 28, files, 2};
  unsigned warn;
  int rc = tarn_entry_index_build_raw(&r, &c->raw);
  if (!rc)
    rc = tarn_entry_index_build_parquet(&q, &c->parquet, &warn);
  if (!rc)
    rc = tarn_file_index_encode(files, 2, &c->fi_bin);
  if (!rc)
    rc = tarn_file_index_build_base64(files, 2, 0, 7, &c->fi_b64);
  return rc;
}

static void ei_ctx_free(ei_ctx *c) {
  tarn_buf_free(&c->raw);
  tarn_buf_free(&c->parquet);
  tarn_buf_free(&c->fi_bin);
  tarn_buf_free(&c->fi_b64);
}

static void assert_buf_equal(const tarn_buf *a, const tarn_buf *b) {
  assert_int_equal(a->len, b->len);
  assert_memory_equal(a->data, b->data, a->len);
}

static int op_ei_build(void *ctx) {
  ei_ctx *ref = ctx, c;
  memset(&c, 0, sizeof c);
  int rc = ei_build(&c);
  if (!rc) {
    assert_buf_equal(&c.raw, &ref->raw);
    assert_buf_equal(&c.parquet, &ref->parquet);
    assert_buf_equal(&c.fi_bin, &ref->fi_bin);
    assert_buf_equal(&c.fi_b64, &ref->fi_b64);
  }
  ei_ctx_free(&c);
  return rc;
}

static void check_fi(const tarn_file_index *fi) {
  assert_int_equal(fi->n, 2);
  for (size_t i = 0; i < 2; i++) {
    assert_int_equal(fi->files[i].last_offset, files[i].last_offset);
    assert_string_equal(fi->files[i].name, files[i].name);
  }
}

static int op_ei_decode(void *ctx) {
  ei_ctx *c = ctx;
  tarn_entry_index ei;
  int rc = tarn_entry_index_decode(c->raw.data, c->raw.len, &ei);
  if (rc)
    return rc;
  assert_string_equal(ei.location, "7-00000001.wal");
  assert_int_equal(ei.message_count, 3);
  assert_int_equal(ei.n_boundaries, 2);
  assert_int_equal(ei.boundaries[0], 2);
  assert_int_equal(ei.boundaries[1], 3);
  tarn_entry_index_free(&ei);
  if ((rc = tarn_entry_index_decode(c->parquet.data, c->parquet.len, &ei)))
    return rc;
  assert_int_equal(ei.file_type, TARN_FILE_PARQUET);
  assert_string_equal(ei.location, "7-0.parquet");
  assert_non_null(ei.file_index);
  assert_string_equal(ei.file_index, (const char *)c->fi_b64.data);
  tarn_entry_index_free(&ei);
  return 0;
}

static int op_fi_decode(void *ctx) {
  ei_ctx *c = ctx;
  tarn_file_index fi;
  int rc = tarn_file_index_decode(c->fi_bin.data, c->fi_bin.len, &fi);
  if (rc)
    return rc;
  check_fi(&fi);
  tarn_file_index_free(&fi);
  if ((rc = tarn_file_index_decode_base64((const char *)c->fi_b64.data, c->fi_b64.len, &fi)))
    return rc;
  check_fi(&fi);
  tarn_file_index_free(&fi);
  return 0;
}

/* A legacy v2 index value (Appendix C), parsed and written back. */
#define LEGACY_PQ "00000000000000000007-00000000000000000028-a-b-c.parquet-12-PARQUET"

static int op_legacy_value(void *ctx) {
  (void)ctx;
  tarn_legacy_index_value v;
  int rc = tarn_legacy_index_value_parse((const uint8_t *)LEGACY_PQ, strlen(LEGACY_PQ), &v);
  if (rc)
    return rc;
  assert_string_equal(v.location, "a-b-c.parquet");
  assert_int_equal(v.entry_id, 12);
  tarn_buf b = TARN_BUF_INIT;
  rc = tarn_legacy_index_value_encode(&v, &b);
  if (!rc) {
    assert_int_equal(b.len, strlen(LEGACY_PQ));
    assert_memory_equal(b.data, LEGACY_PQ, b.len);
  }
  tarn_buf_free(&b);
  tarn_legacy_index_value_free(&v);
  return rc;
}

static void entry_index_and_file_index(void **state) {
  (void)state;
  ei_ctx c;
  memset(&c, 0, sizeof c);
  assert_int_equal(ei_build(&c), 0);
  assert_int_equal(tarn_buf_putc(&c.fi_b64, 0), 0); /* a C string for the comparison */
  c.fi_b64.len--;
  run_failing("entry index + file index builders", op_ei_build, &c, 0);
  run_failing("entry index decode", op_ei_decode, &c, 0);
  run_failing("file index decode", op_fi_decode, &c, 0);
  run_failing("legacy index value", op_legacy_value, NULL, 0);
  ei_ctx_free(&c);
}

/* ---- companion files ----------------------------------------------------- */

#define COMP_ROWS 40

static tarn_entry_header comp_row(int i) {
  tarn_entry_header h = {(int64_t)i * 3, 3, 1700000000000 + i, 10 + i, (int64_t)i * 100};
  return h;
}

static int comp_write(tarn_buf *out) {
  tarn_companion_writer *w;
  int rc = tarn_companion_writer_open(&w, out, 16, 0);
  if (rc)
    return rc;
  for (int i = 0; i < COMP_ROWS && !rc; i++) {
    tarn_entry_header h = comp_row(i);
    rc = tarn_companion_writer_add(w, &h);
  }
  if (rc) {
    tarn_companion_writer_abort(w);
    return rc;
  }
  return tarn_companion_writer_close(w);
}

static int op_comp_write(void *ctx) {
  tarn_buf out = TARN_BUF_INIT;
  int rc = comp_write(&out);
  if (!rc)
    assert_buf_equal(&out, ctx);
  tarn_buf_free(&out);
  return rc;
}

static int op_comp_decode(void *ctx) {
  const tarn_buf *gz = ctx;
  tarn_companion c;
  int rc = tarn_companion_decode(&c, gz->data, gz->len, 0);
  if (rc)
    return rc;
  assert_int_equal(c.nrows, COMP_ROWS);
  assert_int_equal(c.nblocks, 3);
  for (int i = 0; i < COMP_ROWS; i++) {
    tarn_entry_header h = comp_row(i);
    const tarn_entry_header *g = &c.rows[i];
    assert_int_equal(g->offset, h.offset);
    assert_int_equal(g->record_count, h.record_count);
    assert_int_equal(g->timestamp_ms, h.timestamp_ms);
    assert_int_equal(g->entry_size, h.entry_size);
    assert_int_equal(g->cumulative_size, h.cumulative_size);
  }
  size_t row;
  assert_int_equal(tarn_companion_floor(&c, 31, &row), 0);
  assert_int_equal(row, 10);
  tarn_companion_free(&c);
  return 0;
}

static void companion_files(void **state) {
  (void)state;
  tarn_buf gz = TARN_BUF_INIT;
  assert_int_equal(comp_write(&gz), 0);
  run_failing("companion writer", op_comp_write, &gz, 0);
  run_failing("companion decode", op_comp_decode, &gz, 0);
  tarn_buf_free(&gz);
}

/* ---- Parquet files --------------------------------------------------------- */

#define PQ_ROWS 300

static size_t pq_payload(int i, uint8_t *out) {
  size_t n = (size_t)(i % 37) + 5;
  for (size_t j = 0; j < n; j++)
    out[j] = (uint8_t)(i * 7 + (int)j * (i % 5 + 1));
  return n;
}

static int pq_sink(void *ctx, const void *p, size_t n) { return tarn_buf_append(ctx, p, n); }

static int pq_write(int codec, tarn_buf *out) {
  tarn_parquet_writer_opts o = {
      TARN_PARQUET_KAFKA_RECORD, TARN_PARQUET_KAFKA_SERDE, "x.index", codec, 0, 4096, 1024, 0};
  tarn_parquet_writer *w;
  int rc = tarn_parquet_writer_open(&w, &o, pq_sink, out);
  if (rc)
    return rc;
  uint8_t buf[64];
  for (int i = 0; i < PQ_ROWS && !rc; i++)
    rc = i % 50 == 7 ? tarn_parquet_writer_add_null(w)
                     : tarn_parquet_writer_add(w, buf, pq_payload(i, buf));
  uint64_t size;
  if (!rc)
    rc = tarn_parquet_writer_finish(w, &size);
  if (!rc)
    assert_int_equal(size, out->len);
  tarn_parquet_writer_close(w);
  return rc;
}

typedef struct pq_ctx {
  int codec;
  tarn_buf ref;
} pq_ctx;

static int op_pq_write(void *ctx) {
  pq_ctx *c = ctx;
  tarn_buf out = TARN_BUF_INIT;
  int rc = pq_write(c->codec, &out);
  if (!rc)
    assert_buf_equal(&out, &c->ref);
  tarn_buf_free(&out);
  return rc;
}

static int pq_read_at(void *ctx, uint64_t off, void *buf, size_t n) {
  const tarn_buf *b = ctx;
  if (off > b->len || n > b->len - off)
    return TARN_EIO;
  memcpy(buf, b->data + off, n);
  return 0;
}

/* Opens the file, reads every row from 0, then from a seek into the middle. */
static int op_pq_read(void *ctx) {
  pq_ctx *c = ctx;
  tarn_parquet_reader *r;
  static const char *const serde[] = {TARN_PARQUET_KAFKA_SERDE};
  tarn_parquet_reader_opts o = {serde, 1, 0, 0};
  int rc = tarn_parquet_open(&r, pq_read_at, &c->ref, c->ref.len, &o);
  if (rc)
    return rc;
  assert_int_equal(tarn_parquet_get_meta(r)->num_rows, PQ_ROWS);
  assert_string_equal(tarn_parquet_kv_get(r, "rowMetadata"), "x.index");
  uint8_t want[64];
  for (int pass = 0; pass < 2 && !rc; pass++) {
    int i = pass ? PQ_ROWS / 2 + 3 : 0;
    if (pass && (rc = tarn_parquet_seek(r, (uint64_t)i)))
      break;
    for (; i < PQ_ROWS; i++) {
      const uint8_t *p;
      size_t n;
      int is_null;
      if ((rc = tarn_parquet_next(r, &p, &n, &is_null)))
        break;
      assert_int_equal(is_null, i % 50 == 7);
      if (!is_null) {
        size_t wn = pq_payload(i, want);
        assert_int_equal(n, wn);
        assert_memory_equal(p, want, n);
      }
    }
    if (!rc) {
      const uint8_t *p;
      size_t n;
      int is_null;
      assert_int_equal(tarn_parquet_next(r, &p, &n, &is_null), TARN_EEND);
    }
  }
  tarn_parquet_close(r);
  return rc;
}

static void parquet_files(void **state) {
  (void)state;
  static const int codecs[] = {TARN_PARQUET_UNCOMPRESSED, TARN_PARQUET_SNAPPY, TARN_PARQUET_GZIP,
                               TARN_PARQUET_ZSTD, TARN_PARQUET_LZ4_RAW};
  for (size_t i = 0; i < sizeof codecs / sizeof codecs[0]; i++) {
    pq_ctx c = {codecs[i], TARN_BUF_INIT};
    assert_int_equal(pq_write(c.codec, &c.ref), 0);
    char name[64];
    snprintf(name, sizeof name, "parquet writer (%s)", tarn_parquet_codec_name(c.codec));
    run_failing(name, op_pq_write, &c, 0);
    snprintf(name, sizeof name, "parquet read (%s)", tarn_parquet_codec_name(c.codec));
    run_failing(name, op_pq_read, &c, 0);
    tarn_buf_free(&c.ref);
  }
}

/* ---- Kafka entry payloads ----------------------------------------------- */

typedef struct kafka_ctx {
  tarn_buf payload, rewritten;
  uint64_t records;
} kafka_ctx;

/* The check (inflating every compressed v0/v1 wrapper to count its inner
 * messages), then the offset rewrite on a copy. */
static int op_kafka(void *ctx) {
  kafka_ctx *c = ctx;
  uint64_t records = 0;
  int rc = tarn_kafka_check(c->payload.data, c->payload.len, (int64_t)c->records, &records);
  if (rc)
    return rc;
  assert_int_equal(records, c->records);
  uint8_t *copy = malloc(c->payload.len);
  if (!copy)
    return TARN_ENOMEM; /* the test's own allocation is counted too */
  memcpy(copy, c->payload.data, c->payload.len);
  rc = tarn_kafka_rewrite_offsets(copy, c->payload.len, 1000, (int64_t)c->records);
  if (rc == 0) {
    assert_memory_equal(copy, c->rewritten.data, c->payload.len);
    assert_int_equal(tarn__ld_be64(copy), 1000); /* the v2 batch's baseOffset */
  } else {
    assert_memory_equal(copy, c->payload.data, c->payload.len); /* nothing written */
  }
  free(copy);
  return rc;
}

static void kafka_payloads(void **state) {
  (void)state;
  kafka_ctx c = {TARN_BUF_INIT, TARN_BUF_INIT, 0};
  tu_kafka_v2_simple(&c.payload, 3);
  tu_kafka_wrapper(&c.payload, 1, TARN_KAFKA_GZIP, 200);
  tu_kafka_wrapper(&c.payload, 0, TARN_KAFKA_GZIP, 2);
  tu_kafka_wrapper(&c.payload, 1, TARN_KAFKA_SNAPPY, 300);
  tu_kafka_wrapper(&c.payload, 1, TARN_KAFKA_LZ4, 5);
  for (int i = 0; i < 9; i++)
    tu_kafka_legacy_msg(&c.payload, 1, 0, 0, "a", 1);
  c.records = 3 + 200 + 2 + 300 + 5 + 9;
  assert_int_equal(tarn_buf_append(&c.rewritten, c.payload.data, c.payload.len), 0);
  assert_int_equal(
      tarn_kafka_rewrite_offsets(c.rewritten.data, c.rewritten.len, 1000, (int64_t)c.records), 0);
  run_failing("kafka check + offset rewrite", op_kafka, &c, 0);
  tarn_buf_free(&c.payload);
  tarn_buf_free(&c.rewritten);
}

/* ---- a log on mem: stores: writer, reader, compaction, trim --------------- */

#define LOG_N 6    /* entries one failing writer run appends */
#define LOG_MORE 2 /* entries appended cleanly after it */

typedef struct ack {
  int done, status;
  uint64_t offset;
} ack;

typedef struct log_ctx {
  tu_cenv e;
  int stepped, on_disk;
  ack acks[LOG_N];
  int append_rc[LOG_N];
  tu_snap before; /* the log as read before the failing run */
} log_ctx;

static size_t log_payload(uint64_t j, uint8_t *out) { return tu_payload(77, j, out, 256); }

static void on_ack(void *arg, int status, uint64_t offset, int64_t ts) {
  (void)ts;
  ack *a = arg;
  a->status = status;
  a->offset = offset;
  __atomic_store_n(&a->done, 1, __ATOMIC_RELEASE);
}

static void log_setup(void *ctx) {
  log_ctx *c = ctx;
  tu_cenv_open(&c->e, "oom", c->on_disk, 1, NULL);
  memset(c->acks, 0, sizeof c->acks);
}

/* Opens a writer, appends LOG_N entries (some in separate objects; with
 * threads, every third with append_sync), closes. */
static int op_writer(void *ctx) {
  log_ctx *c = ctx;
  tarn_writer_options o;
  tarn_writer_options_default(&o);
  o.stepped = c->stepped;
  o.batch_ms = c->stepped ? 1000 : 5; /* append_sync waits a batch window */
  o.object_retries = 0;
  tarn_writer *w;
  int rc = tarn_writer_open(c->e.m, c->e.wal, &o, &w), first = rc;
  if (rc) {
    for (int i = 0; i < LOG_N; i++)
      c->append_rc[i] = rc;
    return rc;
  }
  uint8_t buf[256];
  for (int i = 0; i < LOG_N; i++) {
    size_t n = log_payload((uint64_t)i, buf);
    if (!c->stepped && i % 3 == 2) {
      /* append_sync: its result is the entry's outcome */
      uint64_t off = 0;
      rc = tarn_writer_append_sync(w, c->e.log, buf, n, (uint32_t)(1 + i % 3), &off, NULL);
      c->append_rc[i] = 0;
      c->acks[i] = (ack){1, rc, off};
      if (rc && !first)
        first = rc;
      continue;
    }
    rc = c->append_rc[i] =
        tarn_writer_append(w, c->e.log, buf, n, (uint32_t)(1 + i % 3), on_ack, &c->acks[i]);
    if (rc && !first)
      first = rc;
    if (i % 2 && (rc = tarn_writer_flush(w)) && !first)
      first = rc;
  }
  if ((rc = tarn_writer_close(w)) && !first)
    first = rc;
  for (int i = 0; i < LOG_N; i++) {
    if (c->append_rc[i])
      continue;
    /* close delivered every outcome of a queued entry */
    assert_true(__atomic_load_n(&c->acks[i].done, __ATOMIC_ACQUIRE));
    if (c->acks[i].status && !first)
      first = c->acks[i].status;
  }
  return first;
}

/* After a writer run: the log takes LOG_MORE more entries, and reading it
 * gives every acknowledged entry at its offset, entries whose outcome is
 * unknown perhaps, failed ones never, and the new ones after them. */
static void log_check(void *ctx, int run_rc) {
  (void)run_rc;
  log_ctx *c = ctx;
  tarn_writer_options o;
  tarn_writer_options_default(&o);
  o.batch_ms = 1; /* append_sync waits a batch window */
  tarn_writer *w;
  assert_int_equal(tarn_writer_open(c->e.m, c->e.wal, &o, &w), 0);
  uint8_t buf[256];
  uint64_t more_off[LOG_MORE];
  for (int i = 0; i < LOG_MORE; i++) {
    size_t n = log_payload((uint64_t)(LOG_N + i), buf);
    int rc = tarn_writer_append_sync(w, c->e.log, buf, n, 1, &more_off[i], NULL);
    if (rc)
      fail_msg("append after the failed run: %d %s", rc, tarn_errmsg());
  }
  assert_int_equal(tarn_writer_close(w), 0);
  tu_snap s;
  tu_snapshot(&c->e, c->e.log, &s);
  size_t at = 0;
  uint64_t next = 0;
  for (int i = 0; i < LOG_N + LOG_MORE; i++) {
    int acked = i < LOG_N ? !c->append_rc[i] && c->acks[i].status == 0 : 1;
    int maybe = i < LOG_N && !c->append_rc[i] && c->acks[i].status == TARN_EUNKNOWN;
    size_t n = log_payload((uint64_t)i, buf);
    int here = at < s.n && s.v[at].len == n && !memcmp(s.v[at].payload, buf, n);
    if (acked && !here)
      fail_msg("entry %d (acknowledged at %llu) is not read back", i,
               (unsigned long long)(i < LOG_N ? c->acks[i].offset : more_off[i - LOG_N]));
    if (!acked && !maybe && here && n)
      fail_msg("failed entry %d (append %d, outcome %d) is readable", i, c->append_rc[i],
               c->acks[i].status);
    if (here) {
      assert_int_equal(s.v[at].offset, next);
      if (acked)
        assert_int_equal(s.v[at].offset, i < LOG_N ? c->acks[i].offset : more_off[i - LOG_N]);
      next += s.v[at].count;
      at++;
    }
  }
  assert_int_equal(at, s.n);
  tu_snap_free(&s);
  tu_cenv_close(&c->e);
}

static void writer_stepped(void **state) {
  (void)state;
  log_ctx c;
  memset(&c, 0, sizeof c);
  c.stepped = 1;
  run_failing_with("writer (stepped) + later appends + read", log_setup, op_writer, log_check, &c,
                   0);
}

/* The same on sqlite metadata and a file:// WAL root. */
static void writer_stepped_on_disk(void **state) {
  (void)state;
  log_ctx c;
  memset(&c, 0, sizeof c);
  c.stepped = 1;
  c.on_disk = 1;
  one_shot_only = 1;
  run_failing_with("writer (stepped, sqlite + file://) + later appends + read", log_setup,
                   op_writer, log_check, &c, 0);
  one_shot_only = 0;
}

/* The threaded writer: failures in its threads reach entries as outcomes. */
static void writer_threaded(void **state) {
  (void)state;
  log_ctx c;
  memset(&c, 0, sizeof c);
  run_failing_with("writer (threads) + later appends + read", log_setup, op_writer, log_check, &c,
                   0);
}

/* A log of 12 entries in 4 objects, its first 9 compacted into Parquet, then 4 more. */
static void log_fill(tu_cenv *e, int compact) {
  tu_cenv_open(e, "oomr", 0, 1, NULL);
  tu_append(e, e->log, 0, 9, 3);
  if (compact) {
    tarn_compactor *c;
    assert_int_equal(tarn_compactor_open(e->m, e->wal, e->compacted, NULL, &c), 0);
    int did = 0;
    assert_int_equal(tarn_compact_once(c, e->log, 1, NULL, &did), 0);
    assert_int_equal(did, 1);
    tarn_compactor_close(c);
  }
  tu_append(e, e->log, 9, 4, 2);
}

typedef struct read_ctx {
  tu_cenv e;
  tu_snap ref;
} read_ctx;

/* A reader with its caches reads the log from 0 (through the Parquet file and
 * the WAL), then from an offset inside, each entry equal to the reference. */
static int op_read(void *ctx) {
  read_ctx *c = ctx;
  tarn_reader *r;
  int rc = tarn_reader_open(c->e.m, c->e.wal, c->e.compacted, NULL, &r);
  if (rc)
    return rc;
  for (size_t from = 0; from < c->ref.n && !rc; from += c->ref.n / 2 + 1) {
    tarn_log_iter *it;
    if ((rc = tarn_log_iter_open(r, c->e.log, c->ref.v[from].offset, &it)))
      break;
    size_t i = from;
    for (;; i++) {
      tarn_entry en;
      if ((rc = tarn_log_iter_next(it, &en, 0)))
        break;
      assert_true(i < c->ref.n);
      const tu_snap_ent *x = &c->ref.v[i];
      assert_int_equal(en.offset, x->offset);
      assert_int_equal(en.record_count, x->count);
      assert_int_equal(en.cumulative_size, x->cumulative);
      assert_int_equal(en.payload_len, x->len);
      assert_memory_equal(en.payload, x->payload, x->len);
    }
    tarn_log_iter_close(it);
    if (rc == TARN_EEND) {
      assert_int_equal(i, c->ref.n);
      rc = 0;
    }
  }
  tarn_reader_close(r);
  return rc;
}

static void reader(void **state) {
  (void)state;
  read_ctx c;
  log_fill(&c.e, 1);
  tu_snapshot(&c.e, c.e.log, &c.ref);
  assert_int_equal(c.ref.n, 13);
  run_failing("reader (parquet + wal)", op_read, &c, 0);
  tu_snap_free(&c.ref);
  tu_cenv_close(&c.e);
}

/* Compaction of the log's RAW records: a failure leaves the log reading the
 * same, and a later compaction succeeds and keeps it so. */
static void compact_setup(void *ctx) {
  read_ctx *c = ctx;
  log_fill(&c->e, 0);
  tu_snapshot(&c->e, c->e.log, &c->ref);
}

static int op_compact(void *ctx) {
  read_ctx *c = ctx;
  tarn_compactor *cp;
  int rc = tarn_compactor_open(c->e.m, c->e.wal, c->e.compacted, NULL, &cp);
  if (rc)
    return rc;
  tarn_compact_range done;
  int did = 0;
  rc = tarn_compact_once(cp, c->e.log, 1, &done, &did);
  if (rc == 0) {
    assert_int_equal(did, 1);
    assert_int_equal(done.s, 0);
    assert_int_equal(done.e, c->ref.v[c->ref.n - 1].offset + c->ref.v[c->ref.n - 1].count);
    tarn_compact_range_free(&done);
  }
  tarn_compactor_close(cp);
  return rc;
}

static void assert_log_reads(read_ctx *c) {
  tu_snap s;
  tu_snapshot(&c->e, c->e.log, &s);
  assert_int_equal(s.n, c->ref.n);
  tu_snap_assert_same(&c->ref, &s);
  tu_snap_free(&s);
}

static int lock_left; /* runs that left the compaction lock to the session */

static void compact_check(void *ctx, int run_rc) {
  read_ctx *c = ctx;
  assert_log_reads(c);
  tarn_compactor *cp;
  assert_int_equal(tarn_compactor_open(c->e.m, c->e.wal, c->e.compacted, NULL, &cp), 0);
  int rc = tarn_compact_once(cp, c->e.log, 1, NULL, NULL);
  if (rc == TARN_EEXIST && run_rc) {
    /* Releasing the lock needs a Get (the record is deleted only if still
     * ours), which cannot succeed while every allocation fails (the
     * persistent mode): the ephemeral record then stays until the session
     * ends. A new session compacts. */
    tarn_compactor_close(cp);
    assert_int_equal(tarn_meta_close(c->e.m), 0);
    assert_int_equal(tarn_meta_open(c->e.meta_uri, &c->e.m), 0);
    assert_int_equal(tarn_compactor_open(c->e.m, c->e.wal, c->e.compacted, NULL, &cp), 0);
    rc = tarn_compact_once(cp, c->e.log, 1, NULL, NULL);
    lock_left++;
  }
  if (rc && rc != TARN_ENOTFOUND)
    fail_msg("compaction after the failed one: %d %s", rc, tarn_errmsg());
  tarn_compactor_close(cp);
  assert_log_reads(c);
  tu_snap_free(&c->ref);
  tu_cenv_close(&c->e);
}

static void compaction(void **state) {
  (void)state;
  read_ctx c;
  run_failing_with("compaction + read", compact_setup, op_compact, compact_check, &c, 0);
  printf("compaction: %d failed runs left the log's lock to the session's end\n", lock_left);
}

/* Soft trim, then hard trim, under a lease: a failure leaves the marker
 * either as it was or as trimmed, and the log reads from its first offset. */
static int op_trim(void *ctx) {
  read_ctx *c = ctx;
  tarn_lease *l;
  int rc = tarn_lease_acquire(c->e.m, c->e.log, &l);
  if (rc)
    return rc;
  uint64_t through = c->ref.v[5].offset, stored = 0;
  size_t removed;
  rc = tarn_soft_trim(c->e.m, l, through, &stored);
  if (rc == 0) {
    assert_int_equal(stored, through + 1);
    rc = tarn_hard_trim(c->e.m, l, stored, &removed);
  }
  int r2 = tarn_lease_release(l);
  return rc ? rc : r2;
}

static void trim_check(void *ctx, int run_rc) {
  read_ctx *c = ctx;
  uint64_t b;
  assert_int_equal(tarn_trim_marker_read(c->e.m, c->e.log, &b, NULL), 0);
  uint64_t want = c->ref.v[5].offset + 1;
  if (run_rc == 0)
    assert_int_equal(b, want);
  assert_true(b == 0 || b == want);
  /* every entry above the marker still reads */
  tu_snap s;
  tu_snapshot(&c->e, c->e.log, &s);
  tu_snap_assert_same(&c->ref, &s);
  size_t above = 0;
  for (size_t i = 0; i < c->ref.n; i++)
    above += c->ref.v[i].offset + c->ref.v[i].count > b;
  assert_int_equal(s.n, above);
  tu_snap_free(&s);
  assert_int_equal(op_trim(c), 0);
  tu_snap_free(&c->ref);
  tu_cenv_close(&c->e);
}

static void trim(void **state) {
  (void)state;
  read_ctx c;
  run_failing_with("soft + hard trim", compact_setup, op_trim, trim_check, &c, 0);
}

/* The JSON of a compaction range (task records) and of a catalog stream
 * record: decoded and written again, equal to the bytes given. */
typedef struct json_ctx {
  tarn_buf range, stream;
} json_ctx;

static int op_json_records(void *ctx) {
  json_ctx *c = ctx;
  tarn_compact_range r;
  tarn_buf b = TARN_BUF_INIT;
  int rc = tarn_compact_range_decode(c->range.data, c->range.len, &r);
  if (rc)
    return rc;
  rc = tarn_compact_range_encode(&r, &b);
  if (!rc)
    assert_buf_equal(&b, &c->range);
  tarn_compact_range_free(&r);
  tarn_buf_reset(&b);
  tarn_catalog_record cr;
  if (!rc && !(rc = tarn_catalog_record_decode(c->stream.data, c->stream.len, &cr))) {
    rc = tarn_catalog_record_encode(&cr, &b);
    if (!rc)
      assert_buf_equal(&b, &c->stream);
    tarn_catalog_record_free(&cr);
  }
  tarn_buf_free(&b);
  return rc;
}

static void json_records(void **state) {
  (void)state;
  json_ctx c = {TARN_BUF_INIT, TARN_BUF_INIT};
  tu_cenv e;
  log_fill(&e, 0);
  tarn_compactor *cp;
  assert_int_equal(tarn_compactor_open(e.m, e.wal, e.compacted, NULL, &cp), 0);
  tarn_compact_range done;
  int did = 0;
  assert_int_equal(tarn_compact_once(cp, e.log, 1, &done, &did), 0);
  assert_int_equal(did, 1);
  assert_int_equal(tarn_compact_range_encode(&done, &c.range), 0);
  tarn_compact_range_free(&done);
  tarn_compactor_close(cp);
  tarn_catalog *cat;
  assert_int_equal(tarn_catalog_open(e.m, NULL, &cat), 0);
  tarn_catalog_record r;
  assert_int_equal(tarn_catalog_open_stream(cat, "ns", "s1", &r), 0);
  assert_int_equal(tarn_catalog_record_encode(&r, &c.stream), 0);
  tarn_catalog_record_free(&r);
  tarn_catalog_close(cat);
  tu_cenv_close(&e);
  run_failing("compaction range + catalog record JSON", op_json_records, &c, 0);
  tarn_buf_free(&c.range);
  tarn_buf_free(&c.stream);
}

/* Reclamation (two passes, no grace period) after the compaction left the
 * first WAL objects unreferenced: a failure never deletes what a record names. */
static void reclaim_setup(void *ctx) {
  read_ctx *c = ctx;
  log_fill(&c->e, 1);
  tu_snapshot(&c->e, c->e.log, &c->ref);
}

static int op_reclaim(void *ctx) {
  read_ctx *c = ctx;
  tarn_reclaim_options o;
  tarn_reclaim_options_default(&o);
  o.wal_grace_ms = 0;
  o.orphan_grace_ms = 0;
  int rc = 0;
  for (int pass = 0; pass < 2 && !rc; pass++)
    rc = tarn_reclaim_pass(c->e.m, c->e.wal, c->e.compacted, &o, NULL);
  return rc;
}

static size_t count_objects(tarn_objstore *s) {
  tarn_objstore_listing l;
  assert_int_equal(tarn_objstore_list(s, "", NULL, 1000, &l), 0);
  size_t n = l.n;
  tarn_objstore_listing_free(&l);
  return n;
}

static void reclaim_check(void *ctx, int run_rc) {
  (void)run_rc;
  read_ctx *c = ctx;
  assert_log_reads(c);
  assert_int_equal(op_reclaim(c), 0);
  assert_log_reads(c);
  /* 9 entries by 3 compacted away, 4 by 2 left: 2 objects, 1 file + companion */
  assert_int_equal(count_objects(c->e.wal), 2);
  assert_int_equal(count_objects(c->e.compacted), 2);
  tu_snap_free(&c->ref);
  tu_cenv_close(&c->e);
}

static void reclaim(void **state) {
  (void)state;
  read_ctx c;
  run_failing_with("reclaim passes + read", reclaim_setup, op_reclaim, reclaim_check, &c, 0);
}

/* fsck over a log of RAW and PARQUET records: a failure is an error, never a
 * fault reported in a sound deployment. */
static void on_fault(void *arg, const tarn_fsck_fault *f) {
  (void)arg;
  fail_msg("fsck reported a fault: %s: %s", f->kind, f->message);
}

static int op_fsck(void *ctx) {
  read_ctx *c = ctx;
  tarn_fsck_report rep;
  tarn_fsck_options o = {0};
  o.on_fault = on_fault; /* also the faults of a run that then fails */
  int rc = tarn_fsck_run(c->e.m, c->e.wal, c->e.compacted, &o, &rep);
  if (rc) {
    assert_int_equal(rep.n_faults, 0); /* nothing to free */
    return rc;
  }
  if (rep.n_faults)
    fail_msg("fsck reported %zu faults, the first %s: %s", rep.n_faults, rep.faults[0].kind,
             rep.faults[0].message);
  assert_int_equal(rep.logs, 1);
  assert_int_equal(rep.entries_read, c->ref.n);
  tarn_fsck_report_free(&rep);
  return 0;
}

static void fsck(void **state) {
  (void)state;
  read_ctx c;
  reclaim_setup(&c);
  run_failing("fsck", op_fsck, &c, 0);
  tu_snap_free(&c.ref);
  tu_cenv_close(&c.e);
}

/* The catalog: a stream is created and grown; after a failure it is absent
 * or whole (every log maps back to it), and the same calls then succeed. */
static void catalog_setup(void *ctx) { tu_cenv_open(ctx, "oomc", 0, 1, NULL); }

static int op_catalog(void *ctx) {
  tu_cenv *e = ctx;
  tarn_catalog *cat;
  int rc = tarn_catalog_open(e->m, NULL, &cat);
  if (rc)
    return rc;
  tarn_catalog_record r;
  tarn_stream_prop prop = {"retention.ms", "1000"};
  rc = tarn_catalog_create_stream(cat, "ns", "s2", 3, &prop, 1, NULL);
  if (!rc)
    rc = tarn_catalog_add_partitions(cat, "ns", "s2", 2, NULL);
  if (!rc && !(rc = tarn_catalog_open_stream(cat, "ns", "s2", &r))) {
    assert_int_equal(r.n_logs, 5);
    tarn_catalog_record_free(&r);
  }
  tarn_catalog_record *v;
  size_t n;
  if (!rc && !(rc = tarn_catalog_list_streams(cat, &v, &n))) {
    assert_int_equal(n, 2);
    tarn_catalog_records_free(v, n);
  }
  tarn_catalog_close(cat);
  return rc;
}

static void catalog_check(void *ctx, int run_rc) {
  (void)run_rc;
  tu_cenv *e = ctx;
  tarn_catalog *cat;
  assert_int_equal(tarn_catalog_open(e->m, NULL, &cat), 0);
  tarn_catalog_record r;
  int rc = tarn_catalog_open_stream(cat, "ns", "s2", &r);
  if (rc == TARN_ENOTFOUND) {
    assert_int_equal(tarn_catalog_create_stream(cat, "ns", "s2", 3, NULL, 0, &r), 0);
  } else {
    assert_int_equal(rc, 0);
  }
  assert_true(r.n_logs == 3 || r.n_logs == 5);
  for (size_t i = 0; i < r.n_logs; i++) {
    tarn_catalog_record l;
    assert_int_equal(tarn_catalog_log_stream(cat, r.logs[i], &l), 0);
    assert_string_equal(l.name, "s2");
    tarn_catalog_record_free(&l);
  }
  if (r.n_logs == 3)
    assert_int_equal(tarn_catalog_add_partitions(cat, "ns", "s2", 2, NULL), 0);
  tarn_catalog_record_free(&r);
  assert_int_equal(tarn_catalog_open_stream(cat, "ns", "s2", &r), 0);
  assert_int_equal(r.n_logs, 5);
  tarn_catalog_record_free(&r);
  tarn_catalog_close(cat);
  tu_cenv_close(e);
}

static void catalog(void **state) {
  (void)state;
  tu_cenv e;
  run_failing_with("catalog create + add partitions", catalog_setup, op_catalog, catalog_check, &e,
                   0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(wal_objects),
      cmocka_unit_test(entry_index_and_file_index),
      cmocka_unit_test(companion_files),
      cmocka_unit_test(parquet_files),
      cmocka_unit_test(kafka_payloads),
      cmocka_unit_test(writer_stepped),
      cmocka_unit_test(writer_stepped_on_disk),
      cmocka_unit_test(writer_threaded),
      cmocka_unit_test(reader),
      cmocka_unit_test(compaction),
      cmocka_unit_test(trim),
      cmocka_unit_test(reclaim),
      cmocka_unit_test(catalog),
      cmocka_unit_test(json_records),
      cmocka_unit_test(fsck),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
