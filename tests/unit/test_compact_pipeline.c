/* C2's two-stage pipeline (issue 16): with compress_threads = 1 the Parquet
 * writer's helper thread compresses page N while the compaction's thread
 * reads WAL objects, fills page N+1 and hands page N-1 to the upload
 * (docs/compaction.md "Where the time goes"). The same range compacted with
 * the pipeline on and off gives byte-equal Parquet files and companions
 * under the same names; an error in either stage (a WAL read or the upload
 * on the compaction's thread, the compression on the helper's) fails C2
 * cleanly: the error returned, the intent removed, the thread joined, only
 * whole earlier files left (orphans), and the next C2 writes the same bytes. Labelled "threads"
 * (TSan).
 *
 * ctest-wrap: tarn__pq_compress_ctx */
#include "testutil.h"
#include "tu_compact.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format/parquet_internal.h"
#include "tarn/meta.h"
#include "tarn/compactor.h"
#include "tarn/error.h"
#include "tarn/parquet.h"
#include "tarn/testing.h"
#include "tarn/writer.h"
#include "util/random.h"

/* ---- the compression stage's fault ------------------------------------------ */

int __real_tarn__pq_compress_ctx(tarn__pq_codec_ctx *cx, int codec, int level, const uint8_t *src,
                                 size_t n, tarn_buf *out);
int __wrap_tarn__pq_compress_ctx(tarn__pq_codec_ctx *cx, int codec, int level, const uint8_t *src,
                                 size_t n, tarn_buf *out);

static pthread_t main_thread;
static int fail_compress_at; /* the nth page compressed from now fails; 0: none */
static int compressed, compressed_off_main;

int __wrap_tarn__pq_compress_ctx(tarn__pq_codec_ctx *cx, int codec, int level, const uint8_t *src,
                                 size_t n, tarn_buf *out) {
  /* The counters are only read by the main thread after C2 returns, which
   * joins the helper (the writer's close): no race, and TSan sees the join. */
  compressed++;
  if (!pthread_equal(pthread_self(), main_thread))
    compressed_off_main++;
  if (fail_compress_at && compressed == fail_compress_at)
    return TARN_EIO;
  return __real_tarn__pq_compress_ctx(cx, codec, level, src, n, out);
}

/* ---- deterministic names ------------------------------------------------------ */

/* The intent's ID and each file's random part come from tarn__random: the
 * same bytes for both passes make the same names (and so the same
 * rowMetadata in each footer). */
static uint64_t rnd_state;
static void rnd_hook(void *arg, void *p, size_t n) {
  (void)arg;
  uint8_t *b = p;
  for (size_t i = 0; i < n; i++) {
    rnd_state ^= rnd_state << 13, rnd_state ^= rnd_state >> 7, rnd_state ^= rnd_state << 17;
    b[i] = (uint8_t)rnd_state;
  }
}

/* ---- the deployment ------------------------------------------------------------ */

enum { ENTRIES = 480, PER_OBJECT = 60 };

/* ~6 MiB of entries up to 24 KiB, half random and half repeated bytes (so
 * compressible), in 8 WAL objects: several 1 MiB pages per file. */
static void append(tu_cenv *e) {
  tarn_writer_options o;
  tarn_writer_options_default(&o);
  o.batch_ms = 1000;
  tarn_writer *w;
  assert_int_equal(tarn_writer_open(e->m, e->wal, &o, &w), 0);
  static uint8_t buf[24576];
  uint64_t s = 0x9e3779b97f4a7c15ull;
  for (size_t i = 0; i < ENTRIES; i++) {
    size_t n = (size_t)(i * 7919 % sizeof buf);
    for (size_t k = 0; k < n; k++) {
      s ^= s << 13, s ^= s >> 7, s ^= s << 17;
      buf[k] = k % 64 < 32 ? (uint8_t)s : (uint8_t)i;
    }
    assert_int_equal(tarn_writer_append(w, e->log, buf, n, 1, NULL, NULL), 0);
    if ((i + 1) % PER_OBJECT == 0)
      assert_int_equal(tarn_writer_flush(w), 0);
  }
  assert_int_equal(tarn_writer_close(w), 0);
}

/* Files of 2.5 MiB (three), compressed by threads threads. */
static tarn_compactor *with_threads(tu_cenv *e, int threads) {
  tarn_compactor_options o;
  tu_compactor_options(&o, (uint64_t)5 << 19, 0);
  o.compress_threads = threads;
  return tu_compactor(e, NULL, &o);
}

typedef struct files {
  size_t n;
  char *name[16];
  tarn_buf pq[16], idx[16];
} files;

static void files_free(files *f) {
  for (size_t i = 0; i < f->n; i++) {
    free(f->name[i]);
    tarn_buf_free(&f->pq[i]);
    tarn_buf_free(&f->idx[i]);
  }
  memset(f, 0, sizeof *f);
}

static void companion_path(char *out, size_t n, const char *dir, const char *name) {
  snprintf(out, n, "%s%s", dir, name);
  char *dot = strrchr(out, '.');
  assert_non_null(dot);
  strcpy(dot, ".index");
}

/* What a failed C2 left in the compacted root: only whole files of the
 * compaction (LS-084: orphans for the reclaimer, never a partial upload),
 * each byte-equal to the file of that name from a pass that did not fail.
 * Deletes them, as the reclaimer would. */
static void orphans_are_whole(tu_cenv *e, const files *ref) {
  tarn_objstore_listing l = {0};
  assert_int_equal(tarn_objstore_list(e->compacted, "", NULL, 1000, &l), 0);
  assert_true(l.n < 2 * ref->n);
  for (size_t i = 0; i < l.n; i++) {
    tarn_buf got = TARN_BUF_INIT;
    assert_int_equal(tarn_objstore_get(e->compacted, l.names[i], &got), 0);
    int found = 0;
    for (size_t j = 0; j < ref->n; j++) {
      const char *base = strrchr(l.names[i], '/');
      base = base ? base + 1 : l.names[i];
      size_t bl = strlen(base), rl = strlen(ref->name[j]) - strlen(".parquet");
      if (strncmp(base, ref->name[j], rl) != 0)
        continue;
      const tarn_buf *want = strcmp(base + rl, ".parquet") == 0 ? &ref->pq[j] : &ref->idx[j];
      assert_true(bl > rl);
      assert_int_equal(got.len, want->len);
      assert_memory_equal(got.data, want->data, want->len);
      found = 1;
    }
    assert_true(found);
    tarn_buf_free(&got);
    assert_int_equal(tarn_objstore_delete(e->compacted, l.names[i]), 0);
  }
  tarn_objstore_listing_free(&l);
}

/* C1 + C2 of the whole log from the same random bytes; reads every file and
 * companion back, then deletes them and the intent, so that the next pass
 * writes the same names afresh (C2 leaves the records RAW). Returns C2's code. */
static int pass(tu_cenv *e, int threads, files *out) {
  tarn_compactor *c = with_threads(e, threads);
  rnd_state = 88172645463325252ull;
  compressed = compressed_off_main = 0;
  tarn_compact_range r;
  assert_int_equal(tarn_compact_plan(c, e->log, 1, &r), 0);
  int rc = tarn_compact_write(c, &r);
  memset(out, 0, sizeof *out);
  for (size_t i = 0; rc == 0 && i < r.n_files; i++) {
    assert_true(i < 16);
    char p[1400];
    snprintf(p, sizeof p, "%s%s", r.dir, r.files[i].name);
    out->name[i] = strdup(r.files[i].name);
    assert_int_equal(tarn_objstore_get(e->compacted, p, &out->pq[i]), 0);
    assert_int_equal(tarn_objstore_delete(e->compacted, p), 0);
    companion_path(p, sizeof p, r.dir, r.files[i].name);
    assert_int_equal(tarn_objstore_get(e->compacted, p, &out->idx[i]), 0);
    assert_int_equal(tarn_objstore_delete(e->compacted, p), 0);
    out->n++;
  }
  if (rc == 0) {
    char k[96];
    snprintf(k, sizeof k, "/intents/%020llu-%s", (unsigned long long)e->log, r.intent);
    assert_int_equal(tarn_meta_delete(e->m, TARN_COMPACTION_PARTITION, k), 0);
  }
  tarn_compact_range_free(&r);
  tarn_compactor_close(c);
  return rc;
}

/* No intent left behind (a failed C2 removes its own, LS-084). */
static void assert_no_intent(tu_cenv *e) {
  tarn_meta_recs rs = {0};
  assert_int_equal(
      tarn_meta_scan(e->m, TARN_COMPACTION_PARTITION, "/intents/", "/intents/~", 0, 0, &rs), 0);
  assert_int_equal(rs.n, 0);
  tarn_meta_recs_free(&rs);
}

static void setup(tu_cenv *e, const char *tag) {
  main_thread = pthread_self();
  tu_cenv_open(e, tag, 0, 1, NULL);
  append(e);
  tarn__random_set_hook(rnd_hook, NULL);
}

static void teardown(tu_cenv *e) {
  tarn__random_set_hook(NULL, NULL);
  tu_cenv_close(e);
}

typedef struct src {
  const uint8_t *p;
  size_t n;
} src;

static int mem_read(void *ctx, uint64_t off, void *buf, size_t n) {
  src *s = ctx;
  if (off > s->n || n > s->n - off)
    return TARN_EIO;
  memcpy(buf, s->p + off, n);
  return 0;
}

static void on_off_same_bytes(void **state) {
  (void)state;
  tu_cenv E;
  setup(&E, "pipe-same");
  files off, on;
  assert_int_equal(pass(&E, 0, &off), 0);
  assert_int_equal(compressed_off_main, 0); /* without the pipeline: all on one thread */
  int pages = compressed;
  assert_int_equal(pass(&E, 1, &on), 0);
  assert_true(pages >= 6); /* several pages per file: the pipeline had work in flight */
  assert_int_equal(compressed, pages);
  assert_int_equal(compressed_off_main, pages); /* with it: every page on the helper */
  assert_true(off.n >= 3);
  assert_int_equal(on.n, off.n);
  for (size_t i = 0; i < off.n; i++) {
    assert_string_equal(on.name[i], off.name[i]);
    assert_int_equal(on.pq[i].len, off.pq[i].len);
    assert_memory_equal(on.pq[i].data, off.pq[i].data, off.pq[i].len);
    assert_int_equal(on.idx[i].len, off.idx[i].len);
    assert_memory_equal(on.idx[i].data, off.idx[i].data, off.idx[i].len);
  }
  /* And the files read back: one row per entry. */
  size_t rows = 0;
  for (size_t i = 0; i < on.n; i++) {
    src sr = {on.pq[i].data, on.pq[i].len};
    tarn_parquet_reader *r;
    assert_int_equal(tarn_parquet_open(&r, mem_read, &sr, sr.n, NULL), 0);
    const uint8_t *p;
    size_t n;
    int is_null, rc;
    while ((rc = tarn_parquet_next(r, &p, &n, &is_null)) == 0)
      rows++;
    assert_int_equal(rc, TARN_EEND);
    tarn_parquet_close(r);
  }
  assert_int_equal(rows, ENTRIES);
  files_free(&off), files_free(&on);
  teardown(&E);
}

/* A failed C2 leaves nothing committed, no intent, and a clean writer: the
 * next pass (no fault) gives the files of a pass that never failed. */
static void after_failure(tu_cenv *e, int rc, const files *ref) {
  assert_true(rc < 0);
  orphans_are_whole(e, ref);
  assert_no_intent(e);
  files again;
  assert_int_equal(pass(e, 1, &again), 0);
  assert_int_equal(again.n, ref->n);
  for (size_t i = 0; i < ref->n; i++)
    assert_memory_equal(again.pq[i].data, ref->pq[i].data, ref->pq[i].len);
  files_free(&again);
}

static void error_in_each_stage(void **state) {
  (void)state;
  tu_cenv E;
  setup(&E, "pipe-err");
  files ref, f;
  assert_int_equal(pass(&E, 1, &ref), 0);
  int pages = compressed;

  /* Stage 2, the helper's: the 1st, a middle and the last page's compression. */
  int at[] = {1, pages / 2, pages};
  for (size_t k = 0; k < 3; k++) {
    fail_compress_at = at[k];
    int rc = pass(&E, 1, &f);
    fail_compress_at = 0;
    assert_int_equal(rc, TARN_EIO);
    assert_int_equal(compressed_off_main, compressed); /* it struck on the helper */
    after_failure(&E, rc, &ref);
  }

  /* Stage 1, the compaction's thread: a WAL object's read (the 1st, the 5th)
   * while a page may be in flight, and the first file's upload commit. */
  for (uint64_t nth = 1; nth <= 5; nth += 4) {
    assert_int_equal(
        tarn_objstore_mem_fault(E.wal, TARN_MEM_OP_GET, nth, 1, TARN_MEM_FAULT_BEFORE, TARN_EIO),
        0);
    int rc = pass(&E, 1, &f);
    tarn_objstore_mem_reset_faults(E.wal);
    after_failure(&E, rc, &ref);
  }
  assert_int_equal(
      tarn_objstore_mem_fault(E.compacted, TARN_MEM_OP_PUT, 1, 1, TARN_MEM_FAULT_BEFORE, TARN_EIO),
      0);
  int rc = pass(&E, 1, &f);
  tarn_objstore_mem_reset_faults(E.compacted);
  after_failure(&E, rc, &ref);
  files_free(&ref);
  teardown(&E);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(on_off_same_bytes),
      cmocka_unit_test(error_in_each_stage),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
