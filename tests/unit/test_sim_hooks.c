/* The hooks the simulator (tests/sim) relies on: the stepped writer, the
 * clock and random hooks, metadata faults that skip writes, writes held in
 * flight that land later, silent session expiry and read faults. */
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tarn/key.h"
#include "tarn/metrics.h"
#include "tarn/testing.h"
#include "tarn/reader.h"
#include "tarn/writer.h"
#include "util/clock.h"
#include "util/random.h"

typedef struct outcome {
  int calls, status;
  uint64_t offset;
  int64_t ts;
} outcome;

static void on_ack(void *arg, int status, uint64_t offset, int64_t ts) {
  outcome *o = arg;
  o->calls++;
  o->status = status;
  o->offset = offset;
  o->ts = ts;
}

static int64_t fake_now = 1767225600000;
static int64_t hook_now(void *arg) {
  (void)arg;
  return fake_now;
}
static void hook_sleep(void *arg, int64_t ms) {
  (void)arg;
  fake_now += ms;
}
static void hook_random(void *arg, void *p, size_t n) { memset(p, *(int *)arg, n); }

static void open_stores(const char *tag, tarn_meta **m, tarn_objstore **s) {
  char uri[96];
  snprintf(uri, sizeof uri, "mem:hooks-%s", tag);
  assert_int_equal(tarn_meta_open(uri, m), 0);
  assert_int_equal(tarn_objstore_open(uri, s), 0);
}

/* A2 only on an UPLOAD step, A3/A4 only on a PUT step (LS-037, LS-039); the
 * acknowledged entry reads back. */
static void stepped_writer(void **state) {
  (void)state;
  tarn_meta *m;
  tarn_objstore *s;
  open_stores("stepped", &m, &s);
  tarn_writer_options o;
  tarn_writer_options_default(&o);
  o.stepped = 1;
  o.batch_ms = 100;
  tarn_writer *w;
  assert_int_equal(tarn_writer_open(m, s, &o, &w), 0);
  outcome a = {0}, b = {0};
  assert_int_equal(tarn_writer_append(w, 7, "hello", 5, 2, on_ack, &a), 0);
  assert_int_equal(tarn_writer_append(w, 7, "world", 5, 1, on_ack, &b), 0);
  /* nothing sealed: no work */
  assert_int_equal(tarn_writer_step(w, TARN_WRITER_STEP_UPLOAD), 0);
  assert_int_equal(tarn_writer_step(w, TARN_WRITER_STEP_PUT), 0);
  assert_int_equal(tarn_writer_step(w, TARN_WRITER_STEP_SEAL), 1);
  assert_int_equal(tarn_writer_step(w, TARN_WRITER_STEP_PUT), 0); /* no object yet */
  assert_int_equal(tarn_objstore_mem_calls(s, TARN_MEM_OP_PUT), 0);
  assert_int_equal(tarn_writer_step(w, TARN_WRITER_STEP_UPLOAD), 1);
  assert_int_equal(tarn_objstore_mem_calls(s, TARN_MEM_OP_PUT), 1);
  assert_int_equal(a.calls, 0); /* not acknowledged before the put */
  assert_int_equal(tarn_writer_step(w, TARN_WRITER_STEP_PUT), 1);
  assert_int_equal(a.calls, 1);
  assert_int_equal(a.status, 0);
  assert_int_equal(a.offset, 0);
  assert_int_equal(b.offset, 2);
  assert_int_equal(tarn_writer_step(w, TARN_WRITER_STEP_PUT), 0);
  /* a threaded writer refuses steps */
  tarn_writer *t;
  assert_int_equal(tarn_writer_open(m, s, NULL, &t), 0);
  assert_int_equal(tarn_writer_step(t, TARN_WRITER_STEP_SEAL), TARN_EINVAL);
  assert_int_equal(tarn_writer_discard(t), TARN_EINVAL);
  assert_int_equal(tarn_writer_close(t), 0);

  tarn_reader *r;
  assert_int_equal(tarn_reader_open(m, s, NULL, NULL, &r), 0);
  tarn_log_iter *it;
  tarn_entry e;
  assert_int_equal(tarn_log_iter_open(r, 7, 2, &it), 0);
  assert_int_equal(tarn_log_iter_next(it, &e, 0), 0);
  assert_int_equal(e.offset, 2);
  assert_memory_equal(e.payload, "world", 5);
  assert_int_equal(e.timestamp_ms, b.ts);
  tarn_log_iter_close(it);
  tarn_reader_close(r);
  assert_int_equal(tarn_writer_close(w), 0);
  tarn_objstore_close(s);
  tarn_meta_close(m);
}

/* SEAL_DUE waits for the batch window on the hooked clock; flush and close do
 * the remaining work on the caller's thread; discard delivers nothing and
 * leaves the lease record to the session. */
static void stepped_clock_flush_discard(void **state) {
  (void)state;
  tarn__clock_hooks h = {hook_now, NULL, hook_sleep, NULL};
  tarn__clock_set(&h);
  tarn_meta *m;
  tarn_objstore *s;
  open_stores("clock", &m, &s);
  tarn_writer_options o;
  tarn_writer_options_default(&o);
  o.stepped = 1;
  o.batch_ms = 100;
  tarn_writer *w;
  assert_int_equal(tarn_writer_open(m, s, &o, &w), 0);
  outcome a = {0};
  assert_int_equal(tarn_writer_append(w, 9, "x", 1, 1, on_ack, &a), 0);
  fake_now += 99;
  assert_int_equal(tarn_writer_step(w, TARN_WRITER_STEP_SEAL_DUE), 0);
  fake_now += 1;
  assert_int_equal(tarn_writer_step(w, TARN_WRITER_STEP_SEAL_DUE), 1);
  assert_int_equal(tarn_writer_flush(w), 0);
  assert_int_equal(a.calls, 1);
  assert_int_equal(a.ts, fake_now); /* the record's creation time, from the hook */
  outcome c = {0};
  assert_int_equal(tarn_writer_append(w, 9, "y", 1, 1, on_ack, &c), 0);
  assert_int_equal(tarn_writer_discard(w), 0);
  assert_int_equal(c.calls, 0);
  char part[32], lp[TARN_KEY_SLASH_MAX], lz[TARN_KEY_SLASH_MAX + 1];
  tarn_key_partition(part, 9);
  tarn_key_lease_prefix(lp, 9);
  snprintf(lz, sizeof lz, "%s\xff", lp);
  tarn_meta_recs l = {0};
  assert_int_equal(tarn_meta_list(m, part, lp, lz, 0, 0, &l), 0);
  assert_int_equal(l.n, 1);
  tarn_meta_recs_free(&l);
  tarn__clock_set(NULL);
  tarn_objstore_close(s);
  tarn_meta_close(m);
}

static void random_hook(void **state) {
  (void)state;
  int byte = 0xab;
  uint8_t b[5];
  tarn__random_set_hook(hook_random, &byte);
  assert_int_equal(tarn__random(b, sizeof b, "test"), 0);
  for (size_t i = 0; i < sizeof b; i++)
    assert_int_equal(b[i], 0xab);
  tarn__random_set_hook(NULL, NULL);
  int same = 1;
  uint8_t c[16];
  assert_int_equal(tarn__random(c, sizeof c, "test"), 0);
  for (size_t i = 0; i < sizeof c; i++)
    same &= c[i] == 0xab;
  assert_false(same);
}

/* The fault strikes the write after `skip` writes. */
static void fault_after(void **state) {
  (void)state;
  tarn_meta *m;
  tarn_objstore *s;
  open_stores("fault", &m, &s);
  assert_int_equal(tarn_meta_inject_fault_after(m, TARN_META_FAULT_FAIL, 2, 1), 0);
  assert_int_equal(tarn_meta_put(m, "p", "a", "1", 1, NULL), 0);
  assert_int_equal(tarn_meta_put(m, "p", "b", "1", 1, NULL), 0);
  assert_int_equal(tarn_meta_put(m, "p", "c", "1", 1, NULL), TARN_EUNAVAIL);
  assert_int_equal(tarn_meta_put(m, "p", "d", "1", 1, NULL), 0);
  tarn_meta_rec r = {0};
  assert_int_equal(tarn_meta_get(m, "p", "c", &r), TARN_ENOTFOUND);
  assert_int_equal(tarn_meta_inject_fault_after(m, TARN_META_FAULT_COMMIT_UNKNOWN, 1, 1), 0);
  assert_int_equal(tarn_meta_put(m, "p", "e", "1", 1, NULL), 0);
  assert_int_equal(tarn_meta_put(m, "p", "f", "1", 1, NULL), TARN_EUNKNOWN);
  assert_int_equal(tarn_meta_get(m, "p", "f", &r), 0);
  tarn_meta_rec_free(&r);
  tarn_objstore_close(s);
  tarn_meta_close(m);
}

/* A held write reports TARN_EUNKNOWN, has no effect until it lands, and is
 * judged when it lands: a create-only write loses to a record made
 * meanwhile; an ephemeral one of a session ended by then fails. */
static void delayed_commit(void **state) {
  (void)state;
  tarn__clock_hooks ch = {hook_now, NULL, hook_sleep, NULL};
  tarn__clock_set(&ch);
  tarn_meta *m, *m2;
  tarn_objstore *s;
  open_stores("delay", &m, &s);
  assert_int_equal(tarn_meta_open("mem:hooks-delay", &m2), 0);
  tarn_meta_rec r = {0};
  assert_int_equal(tarn_meta_inject_fault(m, TARN_META_FAULT_LAND, 0), TARN_ENOTFOUND);
  assert_int_equal(tarn_meta_inject_fault(m, TARN_META_FAULT_DELAY_COMMIT, 3), 0);
  assert_int_equal(tarn_meta_put(m, "p", "a", "1", 1, NULL), TARN_EUNKNOWN);
  assert_int_equal(tarn_meta_create(m, "p", "b", "1", 1, 0, NULL), TARN_EUNKNOWN);
  assert_int_equal(tarn_meta_create(m, "p", "e", "1", 1, TARN_META_EPHEMERAL, NULL), TARN_EUNKNOWN);
  assert_int_equal(tarn_meta_put(m, "p", "c", "1", 1, NULL), 0); /* only 3 held */
  assert_int_equal(tarn_meta_get(m2, "p", "a", &r), TARN_ENOTFOUND);
  assert_int_equal(tarn_meta_create(m2, "p", "b", "2", 1, 0, NULL), 0);
  /* the session ends in the store, the handle is not told */
  assert_int_equal(tarn_meta_inject_fault(m, TARN_META_FAULT_EXPIRE_SILENT, 0), 0);
  assert_int_equal(tarn_meta_session_ok(m), 0);
  assert_int_equal(tarn_meta_inject_fault(m, TARN_META_FAULT_LAND, 0), 0);
  assert_int_equal(tarn_meta_get(m2, "p", "a", &r), 0);
  tarn_meta_rec_free(&r);
  assert_int_equal(tarn_meta_get(m2, "p", "b", &r), 0);
  assert_memory_equal(r.value, "2", 1);
  tarn_meta_rec_free(&r);
  assert_int_equal(tarn_meta_get(m2, "p", "e", &r), TARN_ENOTFOUND);
  /* a silently expired session's persistent writes still succeed, its
   * ephemeral ones fail */
  assert_int_equal(tarn_meta_put(m, "p", "z", "1", 1, NULL), 0);
  assert_int_equal(tarn_meta_create(m, "p", "y", "1", 1, TARN_META_EPHEMERAL, NULL), TARN_ESESSION);
  assert_int_equal(tarn_meta_inject_fault(m, TARN_META_FAULT_EXPIRE_SESSION, 0), 0);
  assert_int_not_equal(tarn_meta_session_ok(m), 0);
  /* a write held longer than LAND's limit never lands */
  assert_int_equal(tarn_meta_inject_fault(m2, TARN_META_FAULT_DELAY_COMMIT, 1), 0);
  assert_int_equal(tarn_meta_put(m2, "p", "late", "1", 1, NULL), TARN_EUNKNOWN);
  fake_now += 2000;
  assert_int_equal(tarn_meta_inject_fault(m2, TARN_META_FAULT_LAND, 1000), 0);
  assert_int_equal(tarn_meta_get(m2, "p", "late", &r), TARN_ENOTFOUND);
  tarn__clock_set(NULL);
  tarn_meta_close(m2);
  tarn_objstore_close(s);
  tarn_meta_close(m);
}

/* Read faults fail the next reads, not writes. */
static void read_fault(void **state) {
  (void)state;
  tarn_meta *m;
  tarn_objstore *s;
  open_stores("readfault", &m, &s);
  assert_int_equal(tarn_meta_put(m, "p", "a", "1", 1, NULL), 0);
  assert_int_equal(tarn_meta_inject_fault(m, TARN_META_FAULT_READ_FAIL, 2), 0);
  tarn_meta_rec r = {0};
  tarn_meta_recs rs = {0};
  assert_int_equal(tarn_meta_put(m, "p", "b", "1", 1, NULL), 0);
  assert_int_equal(tarn_meta_get(m, "p", "a", &r), TARN_EUNAVAIL);
  assert_int_equal(tarn_meta_list(m, "p", "a", "z", 0, 0, &rs), TARN_EUNAVAIL);
  tarn_meta_recs_free(&rs);
  assert_int_equal(tarn_meta_get(m, "p", "a", &r), 0);
  tarn_meta_rec_free(&r);
  tarn_objstore_close(s);
  tarn_meta_close(m);
}

/* One clock (issue 18): latency metrics read the hooked monotonic clock, so a
 * simulated run times its stages in simulated time; a condition-variable
 * deadline stays on the system clock (a blocked thread waits real time). */
static void metrics_follow_clock_hook(void **state) {
  (void)state;
  tarn__clock_hooks h = {hook_now, hook_now, hook_sleep, NULL};
  tarn__clock_set(&h);
  int64_t t0 = fake_now;
  assert_true(tarn_metrics_now() == (double)t0 / 1e3);
  tarn__sleep_ms(1500);
  assert_true(tarn_metrics_now() - (double)t0 / 1e3 == 1.5);
  struct timespec real, dl;
  clock_gettime(CLOCK_MONOTONIC, &real);
  tarn__cond_deadline(&dl, CLOCK_MONOTONIC, 250);
  int64_t ahead_ms =
      (int64_t)(dl.tv_sec - real.tv_sec) * 1000 + (dl.tv_nsec - real.tv_nsec) / 1000000;
  assert_true(ahead_ms >= 250 && ahead_ms < 250 + 60000);
  assert_true(dl.tv_nsec >= 0 && dl.tv_nsec < 1000000000L);
  tarn__clock_set(NULL);
  /* Without a hook: the system's monotonic clock, at full resolution. */
  double a = tarn_metrics_now();
  clock_gettime(CLOCK_MONOTONIC, &real);
  assert_true((double)real.tv_sec + (double)real.tv_nsec / 1e9 - a >= 0);
  assert_true((double)real.tv_sec + (double)real.tv_nsec / 1e9 - a < 60);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(stepped_writer),
      cmocka_unit_test(stepped_clock_flush_discard),
      cmocka_unit_test(random_hook),
      cmocka_unit_test(fault_after),
      cmocka_unit_test(delayed_commit),
      cmocka_unit_test(read_fault),
      cmocka_unit_test(metrics_follow_clock_hook),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
