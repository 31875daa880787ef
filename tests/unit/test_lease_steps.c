/* The order of a role's metadata calls around its write lease, from a trace
 * of every call libtarn makes (the primitives below are wrapped at link
 * time), and interleavings injected between two calls. Each test names the
 * rule it checks and fails when the steps are removed or reordered. */
/* ctest-wrap: tarn_meta_create tarn_meta_create_if tarn_meta_get tarn_meta_put tarn_meta_put_if tarn_meta_cas tarn_meta_cas_if tarn_meta_delete tarn_meta_delete_if tarn_meta_delete_range tarn_meta_delete_range_if tarn_meta_sequenced_put tarn_meta_sequenced_put_if */
#include "testutil.h"
#include "tu_compact.h"
#include "tu_index.h"
#include "tu_log.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tarn/compactor.h"
#include "tarn/key.h"
#include "tarn/lease.h"
#include "tarn/meta.h"
#include "tarn/trim.h"
#include "tarn/writer.h"
#include "tarn/testing.h"

/* ---- the trace ------------------------------------------------------------ */

enum { T_CREATE, T_GET, T_PUT, T_CAS, T_DELETE, T_DELETE_RANGE, T_SEQ_PUT };

typedef struct step {
  int op;
  tarn_meta *m;
  char part[32];
  char key[160];
  int rc;
} step;

#define MAX_STEPS 4096
static step trace[MAX_STEPS];
static size_t nsteps;
static int tracing;
static pthread_mutex_t trace_mu = PTHREAD_MUTEX_INITIALIZER;
/* Called after each traced call with its index (trace_mu not held). */
static void (*after_step)(size_t i);

static void record(int op, tarn_meta *m, const char *part, const char *key, int rc) {
  pthread_mutex_lock(&trace_mu);
  size_t i = nsteps;
  if (!tracing || i == MAX_STEPS) {
    pthread_mutex_unlock(&trace_mu);
    return;
  }
  trace[i] = (step){.op = op, .m = m, .rc = rc};
  snprintf(trace[i].part, sizeof trace[i].part, "%s", part ? part : "");
  snprintf(trace[i].key, sizeof trace[i].key, "%s", key ? key : "");
  nsteps++;
  void (*hook)(size_t) = after_step;
  pthread_mutex_unlock(&trace_mu);
  if (hook)
    hook(i);
}

static void trace_start(void (*hook)(size_t)) {
  pthread_mutex_lock(&trace_mu);
  nsteps = 0;
  tracing = 1;
  after_step = hook;
  pthread_mutex_unlock(&trace_mu);
}

static void trace_stop(void) {
  pthread_mutex_lock(&trace_mu);
  tracing = 0;
  after_step = NULL;
  pthread_mutex_unlock(&trace_mu);
}

static int is_lease(const step *s) { return strstr(s->key, "/stream-write-leases/") != NULL; }
static int is_write(const step *s) { return s->op != T_GET; }

static void dump(void) {
  static const char *const names[] = {"create", "get",          "put",    "cas",
                                      "delete", "delete_range", "seq_put"};
  for (size_t i = 0; i < nsteps; i++)
    print_message("  %3zu %-12s %s %s -> %d\n", i, names[trace[i].op], trace[i].part, trace[i].key,
                  trace[i].rc);
}

/* The real primitives and their wrappers (prototypes for -Wmissing-prototypes). */
#define PROTOS(P)                                                                                  \
  int P##tarn_meta_create(tarn_meta *, const char *, const char *, const void *, size_t, int,      \
                          tarn_meta_stat *);                                                       \
  int P##tarn_meta_create_if(tarn_meta *, const char *, const char *, const void *, size_t, int,   \
                             const tarn_meta_guard *, size_t, tarn_meta_stat *);                   \
  int P##tarn_meta_get(tarn_meta *, const char *, const char *, tarn_meta_rec *);                  \
  int P##tarn_meta_put(tarn_meta *, const char *, const char *, const void *, size_t,              \
                       tarn_meta_stat *);                                                          \
  int P##tarn_meta_put_if(tarn_meta *, const char *, const char *, const void *, size_t,           \
                          const tarn_meta_guard *, size_t, tarn_meta_stat *);                      \
  int P##tarn_meta_cas(tarn_meta *, const char *, const char *, const void *, size_t, int64_t,     \
                       tarn_meta_stat *);                                                          \
  int P##tarn_meta_cas_if(tarn_meta *, const char *, const char *, const void *, size_t, int64_t,  \
                          const tarn_meta_guard *, size_t, tarn_meta_stat *);                      \
  int P##tarn_meta_delete(tarn_meta *, const char *, const char *);                                \
  int P##tarn_meta_delete_if(tarn_meta *, const char *, const char *, int64_t,                     \
                             const tarn_meta_guard *, size_t);                                     \
  int P##tarn_meta_delete_range(tarn_meta *, const char *, const char *, const char *, size_t *);  \
  int P##tarn_meta_delete_range_if(tarn_meta *, const char *, const char *, const char *,          \
                                   const tarn_meta_guard *, size_t, size_t *);                     \
  int P##tarn_meta_sequenced_put(tarn_meta *, const char *, const char *, uint64_t, uint64_t,      \
                                 const void *, size_t, tarn_meta_rec *);                           \
  int P##tarn_meta_sequenced_put_if(tarn_meta *, const char *, const char *, uint64_t, uint64_t,   \
                                    const void *, size_t, const tarn_meta_guard *, size_t,         \
                                    tarn_meta_rec *);
PROTOS(__real_)
PROTOS(__wrap_)

int __wrap_tarn_meta_create(tarn_meta *m, const char *p, const char *k, const void *v, size_t n,
                            int f, tarn_meta_stat *st) {
  int rc = __real_tarn_meta_create(m, p, k, v, n, f, st);
  record(T_CREATE, m, p, k, rc);
  return rc;
}
int __wrap_tarn_meta_create_if(tarn_meta *m, const char *p, const char *k, const void *v, size_t n,
                               int f, const tarn_meta_guard *g, size_t ng, tarn_meta_stat *st) {
  int rc = __real_tarn_meta_create_if(m, p, k, v, n, f, g, ng, st);
  record(T_CREATE, m, p, k, rc);
  return rc;
}
int __wrap_tarn_meta_get(tarn_meta *m, const char *p, const char *k, tarn_meta_rec *out) {
  int rc = __real_tarn_meta_get(m, p, k, out);
  record(T_GET, m, p, k, rc);
  return rc;
}
int __wrap_tarn_meta_put(tarn_meta *m, const char *p, const char *k, const void *v, size_t n,
                         tarn_meta_stat *st) {
  int rc = __real_tarn_meta_put(m, p, k, v, n, st);
  record(T_PUT, m, p, k, rc);
  return rc;
}
int __wrap_tarn_meta_put_if(tarn_meta *m, const char *p, const char *k, const void *v, size_t n,
                            const tarn_meta_guard *g, size_t ng, tarn_meta_stat *st) {
  int rc = __real_tarn_meta_put_if(m, p, k, v, n, g, ng, st);
  record(T_PUT, m, p, k, rc);
  return rc;
}
int __wrap_tarn_meta_cas(tarn_meta *m, const char *p, const char *k, const void *v, size_t n,
                         int64_t ver, tarn_meta_stat *st) {
  int rc = __real_tarn_meta_cas(m, p, k, v, n, ver, st);
  record(T_CAS, m, p, k, rc);
  return rc;
}
int __wrap_tarn_meta_cas_if(tarn_meta *m, const char *p, const char *k, const void *v, size_t n,
                            int64_t ver, const tarn_meta_guard *g, size_t ng, tarn_meta_stat *st) {
  int rc = __real_tarn_meta_cas_if(m, p, k, v, n, ver, g, ng, st);
  record(T_CAS, m, p, k, rc);
  return rc;
}
int __wrap_tarn_meta_delete(tarn_meta *m, const char *p, const char *k) {
  int rc = __real_tarn_meta_delete(m, p, k);
  record(T_DELETE, m, p, k, rc);
  return rc;
}
int __wrap_tarn_meta_delete_if(tarn_meta *m, const char *p, const char *k, int64_t ver,
                               const tarn_meta_guard *g, size_t ng) {
  int rc = __real_tarn_meta_delete_if(m, p, k, ver, g, ng);
  record(T_DELETE, m, p, k, rc);
  return rc;
}
int __wrap_tarn_meta_delete_range(tarn_meta *m, const char *p, const char *a, const char *b,
                                  size_t *count) {
  int rc = __real_tarn_meta_delete_range(m, p, a, b, count);
  record(T_DELETE_RANGE, m, p, a, rc);
  return rc;
}
int __wrap_tarn_meta_delete_range_if(tarn_meta *m, const char *p, const char *a, const char *b,
                                     const tarn_meta_guard *g, size_t ng, size_t *count) {
  int rc = __real_tarn_meta_delete_range_if(m, p, a, b, g, ng, count);
  record(T_DELETE_RANGE, m, p, a, rc);
  return rc;
}
int __wrap_tarn_meta_sequenced_put(tarn_meta *m, const char *p, const char *prefix, uint64_t d1,
                                   uint64_t d2, const void *v, size_t n, tarn_meta_rec *out) {
  int rc = __real_tarn_meta_sequenced_put(m, p, prefix, d1, d2, v, n, out);
  record(T_SEQ_PUT, m, p, prefix, rc);
  return rc;
}
int __wrap_tarn_meta_sequenced_put_if(tarn_meta *m, const char *p, const char *prefix, uint64_t d1,
                                      uint64_t d2, const void *v, size_t n,
                                      const tarn_meta_guard *g, size_t ng, tarn_meta_rec *out) {
  int rc = __real_tarn_meta_sequenced_put_if(m, p, prefix, d1, d2, v, n, g, ng, out);
  record(T_SEQ_PUT, m, p, prefix, rc);
  return rc;
}

/* ---- LS-040: the lease record, then the fence -------------------------------- */

static tarn_meta *fencer;
static uint64_t fence_log;

/* Right after the lease record's create, a deletion fences the log. */
static void fence_after_lease_create(size_t i) {
  if (trace[i].op != T_CREATE || !is_lease(&trace[i]) || trace[i].rc != 0)
    return;
  char part[32], fence[TARN_KEY_SLASH_MAX];
  tarn_key_partition(part, fence_log);
  tarn_key_fence(fence, fence_log);
  assert_int_equal(__real_tarn_meta_create(fencer, part, fence, "\x01", 1, 0, NULL), 0);
}

/* LS-040: the lease record is created before the fence is read, so a fence
 * installed in between (a deletion that then lists the leases) is seen: the
 * acquisition fails and keeps no record. Read first, the fence would be
 * missed and the lease used on a fenced log. */
static void lease_record_before_fence_read(void **state) {
  (void)state;
  tarn_meta *m;
  assert_int_equal(tarn_meta_open("mem:steps1", &m), 0);
  assert_int_equal(tarn_meta_open("mem:steps1", &fencer), 0);
  fence_log = 41;
  trace_start(fence_after_lease_create);
  tarn_lease *l = NULL;
  int rc = tarn_lease_acquire(m, fence_log, &l);
  trace_stop();
  if (rc != TARN_EFENCED) {
    dump();
    fail_msg("a fence installed after the lease record's create was not seen (rc %d)", rc);
  }
  assert_null(l);
  assert_int_equal(tu_lease_count(m, fence_log), 0);
  /* and the order itself: create of the record, then Get of the fence */
  size_t create = SIZE_MAX, get = SIZE_MAX;
  for (size_t i = 0; i < nsteps; i++) {
    if (trace[i].op == T_CREATE && is_lease(&trace[i]) && create == SIZE_MAX)
      create = i;
    /* the Get after the create (issue 31 item 11 added one before it) */
    if (trace[i].op == T_GET && strstr(trace[i].key, "/stream-write-fences/") &&
        create != SIZE_MAX && get == SIZE_MAX)
      get = i;
  }
  assert_true(create != SIZE_MAX && get != SIZE_MAX && create < get);
  tarn_meta_close(fencer);
  tarn_meta_close(m);
}

/* ---- LS-043: the writer releases its lease after its puts ------------------- */

static int acks, ack_status;
static void on_ack(void *arg, int status, uint64_t off, int64_t ts) {
  (void)arg, (void)off, (void)ts;
  pthread_mutex_lock(&trace_mu);
  acks++;
  if (status)
    ack_status = status;
  pthread_mutex_unlock(&trace_mu);
}

/* LS-043: entries still in the writer's open batch when it closes are
 * published first, and only then is the lease record deleted. */
static void writer_releases_after_its_puts(void **state) {
  (void)state;
  tarn_meta *m;
  tarn_objstore *wal;
  assert_int_equal(tarn_meta_open("mem:steps2", &m), 0);
  assert_int_equal(tarn_objstore_open("mem:steps2", &wal), 0);
  tarn_writer_options o;
  tarn_writer_options_default(&o);
  o.batch_ms = 60000; /* nothing is sealed before close */
  tarn_writer *w;
  assert_int_equal(tarn_writer_open(m, wal, &o, &w), 0);
  trace_start(NULL);
  for (int i = 0; i < 3; i++)
    assert_int_equal(tarn_writer_append(w, 43, "x", 1, 1, on_ack, NULL), 0);
  assert_int_equal(tarn_writer_close(w), 0);
  trace_stop();
  assert_int_equal(acks, 3);
  assert_int_equal(ack_status, 0);
  size_t last_put = SIZE_MAX, release = SIZE_MAX;
  for (size_t i = 0; i < nsteps; i++) {
    if (trace[i].op == T_SEQ_PUT && strcmp(trace[i].part, "43") == 0)
      last_put = i;
    if (trace[i].op == T_DELETE && is_lease(&trace[i]))
      release = i;
  }
  if (last_put == SIZE_MAX || release == SIZE_MAX || release < last_put) {
    dump();
    fail_msg("the lease was released before the index put under it completed");
  }
  assert_int_equal(tu_lease_count(m, 43), 0);
  tarn_objstore_close(wal);
  tarn_meta_close(m);
}

/* ---- the compactor: LS-073, LS-043, LS-049 ---------------------------------- */

static tu_cenv E;
static tarn_compact_range R;
static char c3_key[TARN_KEY_LEN + 1], idx_part[32];

static tarn_compactor *prepared(const char *tag) {
  tu_cenv_open(&E, tag, 0, 1, NULL);
  tu_append(&E, E.log, 0, 20, 5);
  tarn_compactor *c;
  assert_int_equal(tarn_compactor_open(E.m, E.wal, E.compacted, NULL, &c), 0);
  assert_int_equal(tarn_compact_plan(c, E.log, 1, &R), 0);
  assert_int_equal(tarn_compact_write(c, &R), 0);
  tarn_key_format(c3_key, R.log_id, R.e, R.c_e);
  tarn_key_partition(idx_part, R.log_id);
  return c;
}

/* A traced install that must succeed: its outcome. */
static int traced_install(tarn_compactor *c, void (*hook)(size_t)) {
  trace_start(hook);
  int out = -1;
  int rc = tarn_compact_install(c, &R, &out);
  trace_stop();
  if (rc)
    fail_msg("install: %s", tarn_errmsg());
  return out;
}

static int is_c3(const step *s) {
  return (s->op == T_CAS || s->op == T_PUT) && strcmp(s->key, c3_key) == 0;
}
static int is_c4(const step *s) {
  return s->op == T_DELETE_RANGE && strcmp(s->part, idx_part) == 0;
}

/* LS-073, LS-043: every attempt at C3 runs under a lease record created
 * before it and not deleted until that attempt's C4 has completed (or the
 * attempt failed). The first attempt's C3 fails here (an injected store
 * failure), so the install takes a second attempt, with a lease of its own. */
static void install_holds_lease_from_c3_to_c4(void **state) {
  (void)state;
  tarn_compactor *c = prepared("steps73");
  /* writes of an attempt: the lease record, C3, ...: the 2nd write fails */
  assert_int_equal(tarn_meta_inject_fault_after(E.m, TARN_META_FAULT_FAIL, 1, 1), 0);
  assert_int_equal(traced_install(c, NULL), TARN_INSTALL_DONE);
  size_t c3s = 0, c4s = 0;
  for (size_t i = 0; i < nsteps; i++) {
    if (!is_c3(&trace[i]))
      continue;
    c3s++;
    /* the lease this C3 runs under: the last lease create before it */
    size_t lc = SIZE_MAX;
    for (size_t j = 0; j < i; j++)
      if (trace[j].op == T_CREATE && is_lease(&trace[j]) && trace[j].rc == 0)
        lc = j;
    if (lc == SIZE_MAX) {
      dump();
      fail_msg("C3 at step %zu without a lease", i);
    }
    size_t rel = SIZE_MAX;
    for (size_t j = lc + 1; j < nsteps && rel == SIZE_MAX; j++)
      if (trace[j].op == T_DELETE && strcmp(trace[j].key, trace[lc].key) == 0)
        rel = j;
    if (rel < i) {
      dump();
      fail_msg("C3 at step %zu after its lease was released", i);
    }
    /* this attempt's C4, if it got there, completes before the release */
    for (size_t j = i + 1; j < nsteps; j++) {
      if (trace[j].op == T_CREATE && is_lease(&trace[j]))
        break; /* the next attempt */
      if (is_c4(&trace[j])) {
        c4s++;
        if (rel == SIZE_MAX || rel < j) {
          dump();
          fail_msg("C4 at step %zu not under the lease of C3 at step %zu", j, i);
        }
      }
    }
  }
  assert_int_equal(c3s, 2); /* the failed one and the retry */
  assert_int_equal(c4s, 1);
  assert_int_equal(tu_lease_count(E.m, E.log), 0);
  tarn_compact_range_free(&R);
  tarn_compactor_close(c);
  tu_cenv_close(&E);
}

static tarn_meta *expiring;

/* The session behind the compactor's lease ends right after C3. */
static void expire_after_c3(size_t i) {
  if (is_c3(&trace[i]) && trace[i].rc == 0)
    assert_int_equal(tarn_meta_inject_fault(expiring, TARN_META_FAULT_EXPIRE_SESSION, 0), 0);
}

/* LS-049: once the compactor learns that its lease's session ended (here
 * right after C3), it stops: no C4, no C5, no further write but the release
 * of the (already gone) lease record. */
static void install_stops_when_the_session_ends(void **state) {
  (void)state;
  tarn_compactor *c0 = prepared("steps49");
  /* a second handle on the deployment's store, whose session will end */
  tarn_compactor_close(c0);
  assert_int_equal(tarn_meta_open(E.meta_uri, &expiring), 0);
  tarn_compactor *c;
  assert_int_equal(tarn_compactor_open(expiring, E.wal, E.compacted, NULL, &c), 0);
  size_t before = tu_count_index(E.m, E.log);
  trace_start(expire_after_c3);
  int out = -1;
  int rc = tarn_compact_install(c, &R, &out);
  trace_stop();
  assert_int_not_equal(rc, 0);
  size_t c3 = SIZE_MAX;
  for (size_t i = 0; i < nsteps; i++) {
    if (is_c3(&trace[i]) && c3 == SIZE_MAX)
      c3 = i;
    else if (c3 != SIZE_MAX && is_write(&trace[i]) && !is_lease(&trace[i])) {
      dump();
      fail_msg("step %zu wrote after the session ended", i);
    }
  }
  assert_true(c3 != SIZE_MAX);
  /* C3 replaced one record; C4 removed none */
  assert_int_equal(tu_count_index(E.m, E.log), before);
  /* LS-049: a hard trim under a lease whose session ended changes nothing */
  tarn_meta *h;
  assert_int_equal(tarn_meta_open(E.meta_uri, &h), 0);
  tarn_lease *l;
  assert_int_equal(tarn_lease_acquire(h, E.log, &l), 0);
  uint64_t stored;
  assert_int_equal(tarn_soft_trim(h, l, 10, &stored), 0);
  assert_int_equal(tarn_meta_inject_fault(h, TARN_META_FAULT_EXPIRE_SESSION, 0), 0);
  trace_start(NULL);
  assert_int_equal(tarn_hard_trim(h, l, stored, NULL), TARN_ESESSION);
  trace_stop();
  for (size_t i = 0; i < nsteps; i++)
    if (is_write(&trace[i])) {
      dump();
      fail_msg("the hard trim wrote after its session ended");
    }
  tarn_lease_forget(l);
  tarn_meta_close(h);
  tarn_compact_range_free(&R);
  tarn_compactor_close(c);
  tarn_meta_close(expiring);
  tu_cenv_close(&E);
}

/* ---- #11 part 5: C3 on the Get's version; releases of one version ----------- */

static int replaced;

/* Between C3's Get and its write, someone rewrites the record. */
static void rewrite_after_c3_get(size_t i) {
  if (replaced || trace[i].op != T_GET || strcmp(trace[i].key, c3_key) != 0 || trace[i].rc)
    return;
  replaced = 1;
  tarn_meta_rec r;
  assert_int_equal(__real_tarn_meta_get(E.m, idx_part, c3_key, &r), 0);
  assert_int_equal(__real_tarn_meta_put(E.m, idx_part, c3_key, r.value, r.value_len, NULL), 0);
  tarn_meta_rec_free(&r);
}

/* C3 is a CompareAndSet on the version its Get returned: a record written
 * in between is not overwritten blindly; the attempt loses and the next one
 * reads again (here the record is unchanged in substance, so it installs). */
static void c3_is_a_cas_on_the_get_version(void **state) {
  (void)state;
  tarn_compactor *c = prepared("steps70");
  replaced = 0;
  int out = traced_install(c, rewrite_after_c3_get);
  assert_int_equal(replaced, 1);
  size_t c3s = 0;
  int lost = 0;
  for (size_t i = 0; i < nsteps; i++)
    if (is_c3(&trace[i])) {
      c3s++;
      lost |= trace[i].rc == TARN_ECONFLICT;
    }
  if (c3s != 2 || !lost) {
    dump();
    fail_msg("C3 overwrote a record written after its Get");
  }
  assert_int_equal(out, TARN_INSTALL_DONE);
  tarn_compact_range_free(&R);
  tarn_compactor_close(c);
  tu_cenv_close(&E);
}

static tarn_meta *lock_a, *lock_b;
static tarn_compact_lock *held_b;

/* A's lock record goes (its session expired) and B takes the lock. */
static void lock_changes_hands(void) {
  char key[64];
  snprintf(key, sizeof key, "/locks/%020d", 5);
  __real_tarn_meta_delete(lock_b, TARN_COMPACTION_PARTITION, key);
  assert_int_equal(tarn_compact_lock_acquire(lock_b, 5, "b", &held_b), 0);
}

static void hands_over_after_a_get(size_t i) {
  if (!held_b && trace[i].m == lock_a && trace[i].op == T_GET && strstr(trace[i].key, "/locks/"))
    lock_changes_hands();
}

/* Releasing a compaction lock deletes only the version its acquisition
 * created, in one step: a newer holder's record (created after ours went,
 * or in a gap between a Get and a Delete) survives the older release. */
static void lock_release_spares_a_newer_holder(void **state) {
  (void)state;
  assert_int_equal(tarn_meta_open("mem:steps5", &lock_a), 0);
  assert_int_equal(tarn_meta_open("mem:steps5", &lock_b), 0);
  for (int gap = 0; gap < 2; gap++) {
    tarn_compact_lock *a;
    held_b = NULL;
    assert_int_equal(tarn_compact_lock_acquire(lock_a, 5, "a", &a), 0);
    if (!gap)
      lock_changes_hands();
    trace_start(gap ? hands_over_after_a_get : NULL);
    assert_int_equal(tarn_compact_lock_release(a), 0);
    trace_stop();
    if (held_b) {
      tarn_compact_lock *c = NULL;
      if (tarn_compact_lock_acquire(lock_a, 5, "c", &c) != TARN_EEXIST)
        fail_msg("an older holder's release deleted the newer holder's lock (gap %d)", gap);
      assert_int_equal(tarn_compact_lock_release(held_b), 0);
    }
  }
  tarn_meta_close(lock_b);
  tarn_meta_close(lock_a);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(lease_record_before_fence_read),
      cmocka_unit_test(writer_releases_after_its_puts),
      cmocka_unit_test(install_holds_lease_from_c3_to_c4),
      cmocka_unit_test(install_stops_when_the_session_ends),
      cmocka_unit_test(c3_is_a_cas_on_the_get_version),
      cmocka_unit_test(lock_release_spares_a_newer_holder),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
