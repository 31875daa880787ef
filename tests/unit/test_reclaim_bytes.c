/* Reclamation counts bytes: the byte counts of tarn_reclaim_stats equal the
 * sizes of the objects a pass actually deleted (or, in a dry run, of those it
 * reports), per kind, on mem:, file:// and s3:// (TARN_TEST_S3_URI); and no
 * HEAD request is issued to size a deletion (tarn_objstore_requests_total,
 * op="head"). */
#include "testutil.h"
#include "tu_compact.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tarn/compactor.h"
#include "tarn/lease.h"
#include "tarn/metrics.h"
#include "tarn/objstore.h"
#include "tarn/reclaim.h"
#include "tarn/trim.h"

static int64_t now_ms;

/* ---- every object of a store, with its size ------------------------------ */

typedef struct objs {
  char **names;
  uint64_t *sizes;
  size_t n;
} objs;

static void list_all(tarn_objstore *s, objs *o) {
  memset(o, 0, sizeof *o);
  char *after = NULL;
  for (;;) {
    tarn_objstore_listing l;
    assert_int_equal(tarn_objstore_list(s, "", after, 1000, &l), 0);
    o->names = realloc(o->names, (o->n + l.n) * sizeof *o->names);
    o->sizes = realloc(o->sizes, (o->n + l.n) * sizeof *o->sizes);
    assert_true(o->names && o->sizes);
    for (size_t i = 0; i < l.n; i++) {
      o->names[o->n] = strdup(l.names[i]);
      o->sizes[o->n++] = l.sizes[i];
    }
    free(after);
    after = l.truncated && l.n ? strdup(l.names[l.n - 1]) : NULL;
    tarn_objstore_listing_free(&l);
    if (!after)
      break;
  }
}

static void objs_free(objs *o) {
  for (size_t i = 0; i < o->n; i++)
    free(o->names[i]);
  free(o->names);
  free(o->sizes);
  memset(o, 0, sizeof *o);
}

/* The size of name in o; -1 when absent. */
static int64_t size_in(const objs *o, const char *name) {
  for (size_t i = 0; i < o->n; i++)
    if (strcmp(o->names[i], name) == 0)
      return (int64_t)o->sizes[i];
  return -1;
}

/* The objects of before that are gone from the store now: count and bytes. */
static void gone(tarn_objstore *s, const objs *before, uint64_t *n, uint64_t *bytes) {
  objs now;
  list_all(s, &now);
  *n = *bytes = 0;
  for (size_t i = 0; i < before->n; i++)
    if (size_in(&now, before->names[i]) < 0) {
      (*n)++;
      *bytes += before->sizes[i];
    }
  objs_free(&now);
}

static int64_t heads(tarn_objstore *s) {
  return tarn_metrics_value("tarn_objstore_requests_total", "op", "head", "backend",
                            tarn_objstore_scheme(s), NULL);
}

/* ---- what a pass reports -------------------------------------------------- */

typedef struct rep {
  const objs *before; /* each reported size is checked against it */
  uint64_t n, bytes;  /* over the reports of kind */
  const char *kind;
} rep;

static void on_report(void *ctx, const char *kind, const char *name, uint64_t bytes) {
  rep *r = ctx;
  if (strcmp(kind, r->kind) != 0)
    return;
  int64_t want = size_in(r->before, name);
  if (want < 0)
    want = 0; /* absent: deleting it frees nothing */
  assert_int_equal(bytes, (uint64_t)want);
  r->n++;
  r->bytes += bytes;
}

static void opts(tarn_reclaim_options *o, rep *r, const char *kind, const objs *before) {
  tarn_reclaim_options_default(o);
  o->wal_grace_ms = 10000;
  o->orphan_grace_ms = 20000;
  /* the C2-only compactions here hold no lock and never return: their
   * intents expire at once (test_compact_intent.c covers the grace) */
  o->intent_grace_ms = 0;
  o->report = on_report;
  o->report_ctx = r;
  memset(r, 0, sizeof *r);
  r->kind = kind;
  r->before = before;
}

static int mode_of(void **state) {
  int mode = *(int *)*state;
  if (mode == TU_CENV_S3 && !tu_env_required("TARN_TEST_S3_URI"))
    skip();
  return mode;
}

/* Unreferenced WAL objects, of compacted records and of any name: the dry run
 * reports the bytes the pass then deletes, sized by the listing. */
static void wal_bytes(void **state) {
  int mode = mode_of(state);
  tu_cenv E;
  tu_cenv_open(&E, "rbw", mode, 1, NULL);
  tu_append(&E, E.log, 0, 20, 5);
  tarn_compactor *c;
  assert_int_equal(tarn_compactor_open(E.m, E.wal, E.compacted, NULL, &c), 0);
  assert_int_equal(tarn_compact_once(c, E.log, 1, NULL, NULL), 0);
  tarn_compactor_close(c);
  static char odd[1234];
  assert_int_equal(tarn_objstore_put(E.wal, "odd/x.bin", odd, sizeof odd), 0);
  objs before;
  list_all(E.wal, &before);
  assert_true(before.n >= 5);
  tarn_reclaim_options o;
  rep r;
  opts(&o, &r, "wal", &before);
  o.trimmed_files = o.orphans = 0;
  tarn_reclaim_stats st;
  now_ms = 1000;
  assert_int_equal(tu_reclaim_pass_at(now_ms, E.m, E.wal, E.compacted, &o, &st), 0);
  assert_int_equal(st.wal_deleted, 0); /* first seen only */
  assert_int_equal(st.wal_deleted_bytes, 0);
  now_ms += 1000; /* the next pass confirms the stamps: the grace counts from it */
  assert_int_equal(tu_reclaim_pass_at(now_ms, E.m, E.wal, E.compacted, &o, &st), 0);
  assert_int_equal(st.wal_deleted, 0);
  now_ms += 10000;
  int64_t h0 = heads(E.wal);
  o.dry_run = 1;
  tarn_reclaim_stats dry;
  assert_int_equal(tu_reclaim_pass_at(now_ms, E.m, E.wal, E.compacted, &o, &dry), 0);
  uint64_t n, bytes;
  gone(E.wal, &before, &n, &bytes);
  assert_int_equal(n, 0);
  assert_int_equal(dry.wal_deleted, before.n);
  assert_int_equal(dry.wal_deleted, r.n);
  assert_int_equal(dry.wal_deleted_bytes, r.bytes);
  uint64_t all = 0;
  for (size_t i = 0; i < before.n; i++)
    all += before.sizes[i];
  assert_int_equal(dry.wal_deleted_bytes, all);
  o.dry_run = 0;
  r.n = r.bytes = 0;
  assert_int_equal(tu_reclaim_pass_at(now_ms, E.m, E.wal, E.compacted, &o, &st), 0);
  gone(E.wal, &before, &n, &bytes);
  assert_int_equal(st.wal_deleted, n);
  assert_int_equal(st.wal_deleted_bytes, bytes);
  assert_int_equal(st.wal_deleted_bytes, dry.wal_deleted_bytes);
  assert_int_equal(r.bytes, bytes);
  assert_int_equal(st.compacted_deleted_bytes + st.trimmed_files_deleted_bytes, 0);
  assert_int_equal(heads(E.wal), h0); /* sized without a HEAD */
  objs_free(&before);
  tu_cenv_close(&E);
}

static void soft_trim_past(tu_cenv *E, uint64_t e) {
  tarn_lease *l;
  assert_int_equal(tarn_lease_acquire(E->m, E->log, &l), 0);
  uint64_t b;
  assert_int_equal(tarn_soft_trim(E->m, l, e + 2, &b), 0);
  assert_int_equal(tarn_lease_release(l), 0);
}

/* Files of trimmed records and their companions: sized by a listing, an
 * object already gone counts nothing, and no HEAD is issued. */
static void trimmed_bytes(void **state) {
  int mode = mode_of(state);
  tu_cenv E;
  tu_cenv_open(&E, "rbt", mode, 1, NULL);
  tu_append(&E, E.log, 0, 40, 5);
  tarn_compactor_options co;
  tarn_compactor_options_default(&co);
  co.max_file_bytes = 1500; /* several files */
  tarn_compactor *c;
  assert_int_equal(tarn_compactor_open(E.m, E.wal, E.compacted, &co, &c), 0);
  tarn_compact_range cr;
  assert_int_equal(tarn_compact_once(c, E.log, 1, &cr, NULL), 0);
  tarn_compactor_close(c);
  assert_true(cr.n_files >= 2);
  tu_append(&E, E.log, 40, 10, 5);
  soft_trim_past(&E, cr.e);
  objs before;
  list_all(E.compacted, &before);
  assert_int_equal(before.n, 2 * cr.n_files);
  tarn_reclaim_options o;
  rep r;
  opts(&o, &r, "trimmed", &before);
  o.wal = o.orphans = 0;
  o.dry_run = 1;
  now_ms = 1;
  int64_t h0 = heads(E.compacted);
  tarn_reclaim_stats dry, st;
  assert_int_equal(tu_reclaim_pass_at(now_ms, E.m, E.wal, E.compacted, &o, &dry), 0);
  uint64_t n, bytes, all = 0;
  gone(E.compacted, &before, &n, &bytes);
  assert_int_equal(n, 0);
  for (size_t i = 0; i < before.n; i++)
    all += before.sizes[i];
  assert_int_equal(dry.trimmed_files_deleted, before.n);
  assert_int_equal(dry.trimmed_files_deleted_bytes, all);
  assert_int_equal(r.bytes, all);
  assert_int_equal(dry.records_hard_trimmed, 0);
  /* a companion gone already (a pass that failed half-way): it frees nothing */
  char comp[600];
  snprintf(comp, sizeof comp, "ns/s1/%.*s.index", (int)(strlen(cr.files[1].name) - 8),
           cr.files[1].name);
  int64_t comp_size = size_in(&before, comp);
  assert_true(comp_size > 0);
  assert_int_equal(tarn_objstore_delete(E.compacted, comp), 0);
  objs_free(&before);
  list_all(E.compacted, &before);
  o.dry_run = 0;
  r.n = r.bytes = 0;
  assert_int_equal(tu_reclaim_pass_at(now_ms, E.m, E.wal, E.compacted, &o, &st), 0);
  gone(E.compacted, &before, &n, &bytes);
  assert_int_equal(n, 2 * cr.n_files - 1);
  assert_int_equal(st.trimmed_files_deleted_bytes, bytes);
  assert_int_equal(st.trimmed_files_deleted_bytes, all - (uint64_t)comp_size);
  assert_int_equal(r.bytes, bytes);
  assert_int_equal(st.records_hard_trimmed, 1);
  assert_int_equal(heads(E.compacted), h0);
  objs_free(&before);
  tarn_compact_range_free(&cr);
  tu_cenv_close(&E);
}

/* Orphan compacted files (a compaction that failed before installing). */
static void orphan_bytes(void **state) {
  int mode = mode_of(state);
  tu_cenv E;
  tu_cenv_open(&E, "rbo", mode, 1, NULL);
  tu_append(&E, E.log, 0, 10, 5);
  tarn_compactor *c;
  assert_int_equal(tarn_compactor_open(E.m, E.wal, E.compacted, NULL, &c), 0);
  tarn_compact_range cr;
  assert_int_equal(tarn_compact_plan(c, E.log, 1, &cr), 0);
  assert_int_equal(tarn_compact_write(c, &cr), 0);
  tarn_compactor_close(c);
  objs before;
  list_all(E.compacted, &before);
  assert_int_equal(before.n, 2 * cr.n_files);
  tarn_reclaim_options o;
  rep r;
  opts(&o, &r, "compacted", &before);
  o.wal = 0;
  tarn_reclaim_stats dry, st;
  now_ms = 100;
  assert_int_equal(tu_reclaim_pass_at(now_ms, E.m, E.wal, E.compacted, &o, &st), 0);
  assert_int_equal(st.compacted_deleted_bytes, 0);
  now_ms += 1000; /* confirms the stamps */
  assert_int_equal(tu_reclaim_pass_at(now_ms, E.m, E.wal, E.compacted, &o, &st), 0);
  assert_int_equal(st.compacted_deleted_bytes, 0);
  now_ms += 20000;
  int64_t h0 = heads(E.compacted);
  o.dry_run = 1;
  assert_int_equal(tu_reclaim_pass_at(now_ms, E.m, E.wal, E.compacted, &o, &dry), 0);
  uint64_t all = 0, n, bytes;
  for (size_t i = 0; i < before.n; i++)
    all += before.sizes[i];
  assert_int_equal(dry.compacted_deleted, before.n);
  assert_int_equal(dry.compacted_deleted_bytes, all);
  o.dry_run = 0;
  r.n = r.bytes = 0;
  assert_int_equal(tu_reclaim_pass_at(now_ms, E.m, E.wal, E.compacted, &o, &st), 0);
  gone(E.compacted, &before, &n, &bytes);
  assert_int_equal(n, before.n);
  assert_int_equal(st.compacted_deleted, n);
  assert_int_equal(st.compacted_deleted_bytes, bytes);
  assert_int_equal(st.compacted_deleted_bytes, all);
  assert_int_equal(r.bytes, bytes);
  assert_int_equal(heads(E.compacted), h0);
  objs_free(&before);
  tarn_compact_range_free(&cr);
  tu_cenv_close(&E);
}

/* A trimmed file whose names are far apart in the listing (other objects
 * sort between the companion and the file): the bounded listing stops after
 * a page and the one name it did not reach is sized by a HEAD. */
static void trimmed_bytes_listing_bound(void **state) {
  int mode = mode_of(state);
  tu_cenv E;
  tu_cenv_open(&E, "rbb", mode, 1, NULL);
  tu_append(&E, E.log, 0, 10, 5);
  tarn_compactor *c;
  assert_int_equal(tarn_compactor_open(E.m, E.wal, E.compacted, NULL, &c), 0);
  tarn_compact_range cr;
  assert_int_equal(tarn_compact_once(c, E.log, 1, &cr, NULL), 0);
  tarn_compactor_close(c);
  assert_int_equal(cr.n_files, 1);
  tu_append(&E, E.log, 10, 5, 5);
  soft_trim_past(&E, cr.e);
  /* "x.index" < "x.j0000" < ... < "x.j1499" < "x.parquet" */
  const char *f = cr.files[0].name;
  for (int i = 0; i < 1500; i++) {
    char p[600];
    snprintf(p, sizeof p, "ns/s1/%.*s.j%04d", (int)(strlen(f) - 8), f, i);
    assert_int_equal(tarn_objstore_put(E.compacted, p, "z", 1), 0);
  }
  objs before;
  list_all(E.compacted, &before);
  char pq[600], comp[600];
  snprintf(pq, sizeof pq, "ns/s1/%s", f);
  snprintf(comp, sizeof comp, "ns/s1/%.*s.index", (int)(strlen(f) - 8), f);
  uint64_t want = (uint64_t)(size_in(&before, pq) + size_in(&before, comp));
  tarn_reclaim_options o;
  rep r;
  opts(&o, &r, "trimmed", &before);
  o.wal = o.orphans = 0;
  now_ms = 1;
  int64_t h0 = heads(E.compacted);
  tarn_reclaim_stats st;
  assert_int_equal(tu_reclaim_pass_at(now_ms, E.m, E.wal, E.compacted, &o, &st), 0);
  uint64_t n, bytes;
  gone(E.compacted, &before, &n, &bytes);
  assert_int_equal(n, 2);
  assert_int_equal(st.trimmed_files_deleted_bytes, want);
  assert_int_equal(st.trimmed_files_deleted_bytes, bytes);
  assert_int_equal(heads(E.compacted) - h0, 1);
  objs_free(&before);
  tarn_compact_range_free(&cr);
  tu_cenv_close(&E);
}

static int modes[3] = {0, 1, TU_CENV_S3};

#define PER_BACKEND(fn)                                                                            \
  {"mem: " #fn, fn, NULL, NULL, &modes[0]}, {"file:// " #fn, fn, NULL, NULL, &modes[1]}, {         \
    "s3:// " #fn, fn, NULL, NULL, &modes[2]                                                        \
  }

int main(void) {
  const struct CMUnitTest tests[] = {
      PER_BACKEND(wal_bytes),
      PER_BACKEND(trimmed_bytes),
      PER_BACKEND(orphan_bytes),
      {"mem: trimmed_bytes_listing_bound", trimmed_bytes_listing_bound, NULL, NULL, &modes[0]},
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
