/* Idempotent producers (src/kafka/producer.c) without the wire: producer IDs
 * from the store's counter, the sequence checks per (producer, partition),
 * retries of the last five batches answered with their original offsets,
 * wrapping sequences, batches in flight, and the state kept across a restart
 * and shared by two nodes. Against mem:, sqlite: and etcd:.
 * ctest-variants: mem sqlite etcd */
#include "testutil.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kafka/producer.h"
#include "tarn/buf.h"
#include "tarn/catalog.h"
#include "tarn/error.h"
#include "tarn/kafka_topics.h"
#include "tarn/meta.h"
#include "util/clock.h"
#include "util/error.h"
#include "tu_index.h"
#include "tu_log.h"

typedef struct fx {
  tarn_meta *m;
  char *uri;
  tarn__kprod *p;
} fx;

static fx open_fx(void **state) {
  fx f;
  f.m = tu_meta_open((const char *)*state, &f.uri);
  assert_int_equal(tarn__kprod_open(f.m, &f.p), 0);
  return f;
}

static void close_fx(fx *f) {
  tarn__kprod_close(f->p);
  tu_meta_done(f->m, f->uri);
}

static int64_t new_pid(tarn__kprod *p) {
  int64_t pid;
  int16_t epoch, err;
  assert_int_equal(tarn__kprod_init(p, NULL, &pid, &epoch, &err), 0);
  assert_int_equal(err, 0);
  assert_int_equal(epoch, 0);
  return pid;
}

/* Checks and, when the verdict is an append, records the batch at offset. */
static tarn__kprod_verdict produce(tarn__kprod *p, const char *key, int64_t pid, int16_t epoch,
                                   int32_t seq, int32_t n, int64_t offset) {
  tarn__kprod_verdict v;
  assert_int_equal(tarn__kprod_check(p, key, pid, epoch, seq, n, &v), 0);
  if (!v.error && !v.dup)
    assert_int_equal(tarn__kprod_record(p, key, pid, epoch, seq, n, offset), 0);
  return v;
}

static void producer_ids(void **state) {
  fx f = open_fx(state);
  int64_t a = new_pid(f.p), b = new_pid(f.p);
  assert_true(a >= 0);
  assert_int_equal(b, a + 1);
  /* another node on the same store never hands out the same ID */
  tarn__kprod *p2;
  assert_int_equal(tarn__kprod_open(f.m, &p2), 0);
  assert_int_equal(new_pid(p2), b + 1);
  tarn__kprod_close(p2);
  int64_t pid;
  int16_t epoch, err;
  assert_int_equal(tarn__kprod_init(f.p, "txn-1", &pid, &epoch, &err), 0);
  assert_int_equal(err, TARN__KP_TRANSACTIONAL_ID_AUTHORIZATION_FAILED);
  assert_int_equal(pid, -1);
  close_fx(&f);
}

/* Concurrent InitProducerId on two nodes: every ID once. */
typedef struct many {
  tarn__kprod *p;
  int64_t ids[20];
} many;

static void *init_many(void *arg) {
  many *m = arg;
  for (int i = 0; i < 20; i++) {
    int16_t epoch, err;
    if (tarn__kprod_init(m->p, NULL, &m->ids[i], &epoch, &err) || err)
      m->ids[i] = -1;
  }
  return NULL;
}

static void concurrent_ids_are_unique(void **state) {
  fx f = open_fx(state);
  tarn__kprod *p2;
  assert_int_equal(tarn__kprod_open(f.m, &p2), 0);
  many a = {f.p, {0}}, b = {p2, {0}};
  pthread_t t;
  pthread_create(&t, NULL, init_many, &a);
  init_many(&b);
  pthread_join(t, NULL);
  for (int i = 0; i < 20; i++) {
    assert_true(a.ids[i] >= 0 && b.ids[i] >= 0);
    for (int j = 0; j < 20; j++) {
      assert_true(a.ids[i] != b.ids[j]);
      if (i != j) {
        assert_true(a.ids[i] != a.ids[j]);
        assert_true(b.ids[i] != b.ids[j]);
      }
    }
  }
  tarn__kprod_close(p2);
  close_fx(&f);
}

static void sequence_checks(void **state) {
  fx f = open_fx(state);
  int64_t pid = new_pid(f.p);
  tarn__kprod_verdict v = produce(f.p, "100", pid, 0, 0, 10, 100);
  assert_int_equal(v.error, 0);
  assert_false(v.dup);
  v = produce(f.p, "100", pid, 0, 10, 5, 110);
  assert_int_equal(v.error, 0);
  /* a retry: success with the original base offset, nothing appended */
  v = produce(f.p, "100", pid, 0, 0, 10, 999);
  assert_int_equal(v.error, 0);
  assert_true(v.dup);
  assert_int_equal(v.base_offset, 100);
  v = produce(f.p, "100", pid, 0, 10, 5, 999);
  assert_true(v.dup);
  assert_int_equal(v.base_offset, 110);
  /* a gap, a sequence from the past that is no batch, a wrong epoch */
  assert_int_equal(produce(f.p, "100", pid, 0, 16, 1, 0).error, TARN__KP_OUT_OF_ORDER_SEQUENCE);
  assert_int_equal(produce(f.p, "100", pid, 0, 3, 2, 0).error, TARN__KP_OUT_OF_ORDER_SEQUENCE);
  assert_int_equal(produce(f.p, "100", pid, 1, 15, 1, 0).error, TARN__KP_INVALID_PRODUCER_EPOCH);
  /* an ID never handed out; a known one starting past 0 on a new partition */
  assert_int_equal(produce(f.p, "100", pid + 1000, 0, 0, 1, 0).error, TARN__KP_UNKNOWN_PRODUCER_ID);
  assert_int_equal(produce(f.p, "101", pid, 0, 7, 1, 0).error, TARN__KP_UNKNOWN_PRODUCER_ID);
  assert_int_equal(produce(f.p, "101", pid, 0, 0, 1, 0).error, 0);
  v = produce(f.p, "100", pid, 0, 15, 1, 115);
  assert_int_equal(v.error, 0);
  assert_false(v.dup);
  /* batches without idempotence are not checked */
  assert_int_equal(produce(f.p, "100", -1, -1, -1, 3, 0).error, 0);
  close_fx(&f);
}

/* Only the last five batches are answered as retries. */
static void last_five_batches(void **state) {
  fx f = open_fx(state);
  int64_t pid = new_pid(f.p);
  for (int i = 0; i < 7; i++)
    assert_int_equal(produce(f.p, "7", pid, 0, i * 2, 2, 1000 + i * 2).error, 0);
  for (int i = 0; i < 2; i++)
    assert_int_equal(produce(f.p, "7", pid, 0, i * 2, 2, 0).error, TARN__KP_OUT_OF_ORDER_SEQUENCE);
  for (int i = 2; i < 7; i++) {
    tarn__kprod_verdict v = produce(f.p, "7", pid, 0, i * 2, 2, 0);
    assert_true(v.dup);
    assert_int_equal(v.base_offset, 1000 + i * 2);
  }
  close_fx(&f);
}

/* Sequences wrap from 2^31-1 to 0. */
static void sequences_wrap(void **state) {
  fx f = open_fx(state);
  assert_int_equal(tarn__kprod_seq_add(INT32_MAX, 1), 0);
  assert_int_equal(tarn__kprod_seq_add(INT32_MAX - 1, 3), 1);
  int64_t pid = new_pid(f.p);
  assert_int_equal(produce(f.p, "7", pid, 0, 0, INT32_MAX, 0).error, 0);  /* 0 .. 2^31-2 */
  assert_int_equal(produce(f.p, "7", pid, 0, INT32_MAX, 3, 10).error, 0); /* 2^31-1, 0, 1 */
  assert_int_equal(produce(f.p, "7", pid, 0, 0, 1, 20).error, TARN__KP_OUT_OF_ORDER_SEQUENCE);
  assert_int_equal(produce(f.p, "7", pid, 0, 2, 1, 20).error, 0);
  tarn__kprod_verdict v = produce(f.p, "7", pid, 0, INT32_MAX, 3, 0);
  assert_true(v.dup);
  assert_int_equal(v.base_offset, 10);
  close_fx(&f);
}

/* Pipelined batches: each is checked against the one before it in flight;
 * a retry of one still in flight is told to retry; an abandoned one is
 * sent again. */
static void batches_in_flight(void **state) {
  fx f = open_fx(state);
  int64_t pid = new_pid(f.p);
  tarn__kprod_verdict v;
  assert_int_equal(tarn__kprod_check(f.p, "7", pid, 0, 0, 4, &v), 0);
  assert_int_equal(v.error, 0);
  assert_int_equal(tarn__kprod_check(f.p, "7", pid, 0, 4, 4, &v), 0);
  assert_int_equal(v.error, 0);
  assert_int_equal(tarn__kprod_check(f.p, "7", pid, 0, 0, 4, &v), 0);
  assert_int_equal(v.error, TARN__KP_NOT_ENOUGH_REPLICAS);
  assert_int_equal(tarn__kprod_record(f.p, "7", pid, 0, 0, 4, 50), 0);
  /* the second append failed: its sequence is expected again */
  tarn__kprod_abandon(f.p, "7", pid, 4, 0);
  assert_int_equal(tarn__kprod_check(f.p, "7", pid, 0, 8, 4, &v), 0);
  assert_int_equal(v.error, TARN__KP_OUT_OF_ORDER_SEQUENCE);
  assert_int_equal(produce(f.p, "7", pid, 0, 4, 4, 54).error, 0);
  v = produce(f.p, "7", pid, 0, 0, 4, 0);
  assert_int_equal(v.base_offset, 50);
  close_fx(&f);
}

/* A restarted node answers retries with the original offsets and expects the
 * next sequence; a second node that appended meanwhile merges its batch into
 * the record instead of overwriting the other's. */
static void state_survives_restart(void **state) {
  fx f = open_fx(state);
  int64_t pid = new_pid(f.p);
  assert_int_equal(produce(f.p, "3", pid, 0, 0, 5, 500).error, 0);
  assert_int_equal(produce(f.p, "3", pid, 0, 5, 5, 505).error, 0);
  tarn__kprod_close(f.p);
  tarn_meta_close(f.m);
  assert_int_equal(tarn_meta_open(f.uri, &f.m), 0);
  assert_int_equal(tarn__kprod_open(f.m, &f.p), 0);
  tarn__kprod_verdict v = produce(f.p, "3", pid, 0, 5, 5, 0);
  assert_true(v.dup);
  assert_int_equal(v.base_offset, 505);
  assert_int_equal(produce(f.p, "3", pid, 0, 9, 1, 0).error, TARN__KP_OUT_OF_ORDER_SEQUENCE);
  /* node 2 has read the state; node 1 then appends 10..14 */
  tarn__kprod *p2;
  assert_int_equal(tarn__kprod_open(f.m, &p2), 0);
  v = produce(p2, "3", pid, 0, 0, 5, 0);
  assert_int_equal(v.base_offset, 500);
  assert_int_equal(produce(f.p, "3", pid, 0, 10, 5, 510).error, 0);
  /* node 2 takes 15..19 (the client moved to it) without having seen 10..14 */
  assert_int_equal(tarn__kprod_record(p2, "3", pid, 0, 15, 5, 515), 0);
  tarn__kprod_close(p2);
  tarn__kprod *p3;
  assert_int_equal(tarn__kprod_open(f.m, &p3), 0);
  v = produce(p3, "3", pid, 0, 10, 5, 0);
  assert_true(v.dup);
  assert_int_equal(v.base_offset, 510);
  v = produce(p3, "3", pid, 0, 15, 5, 0);
  assert_true(v.dup);
  assert_int_equal(v.base_offset, 515);
  tarn__kprod_close(p3);
  close_fx(&f);
}

/* Issue 31 item 3: a producer's batches go to node A, then B, then A. A's
 * copy of the state is stale, but the store decides: a retry at A of the
 * batch B stored is answered with B's offset (not stored twice), and the
 * next batch at A is appended (not refused OUT_OF_ORDER_SEQUENCE). */
static void moves_between_nodes(void **state) {
  fx f = open_fx(state);
  tarn__kprod *b;
  assert_int_equal(tarn__kprod_open(f.m, &b), 0);
  int64_t pid = new_pid(f.p);
  assert_int_equal(produce(f.p, "9", pid, 0, 0, 2, 0).error, 0); /* A: 0..1 at 0 */
  assert_int_equal(produce(b, "9", pid, 0, 2, 2, 2).error, 0);   /* B: 2..3 at 2 */
  tarn__kprod_verdict v = produce(f.p, "9", pid, 0, 2, 2, 999);  /* A: the retry of 2..3 */
  assert_int_equal(v.error, 0);
  assert_true(v.dup);
  assert_int_equal(v.base_offset, 2);
  assert_int_equal(produce(f.p, "9", pid, 0, 4, 1, 4).error, 0); /* A: the next one */
  v = produce(b, "9", pid, 0, 4, 1, 999);                        /* B: a retry of A's */
  assert_true(v.dup);
  assert_int_equal(v.base_offset, 4);
  /* two nodes checking the same batch: one claim wins, the other is told
   * to retry while it is in flight, then answered as a duplicate */
  assert_int_equal(tarn__kprod_check(f.p, "9", pid, 0, 5, 1, &v), 0);
  assert_int_equal(v.error, 0);
  assert_false(v.dup);
  assert_int_equal(tarn__kprod_check(b, "9", pid, 0, 5, 1, &v), 0);
  assert_int_equal(v.error, TARN__KP_NOT_ENOUGH_REPLICAS);
  assert_int_equal(tarn__kprod_record(f.p, "9", pid, 0, 5, 1, 5), 0);
  assert_int_equal(tarn__kprod_check(b, "9", pid, 0, 5, 1, &v), 0);
  assert_true(v.dup);
  assert_int_equal(v.base_offset, 5);
  tarn__kprod_close(b);
  close_fx(&f);
}

typedef struct finder {
  int calls;
  int found; /* 1: the batch is in the log at offset 77 */
  int fail;  /* the lookup fails (the store cannot be read) */
} finder;

static int find_stub(void *arg, void *ctx, const char *key, int64_t pid, int32_t first_seq,
                     int64_t from, int64_t *offset) {
  (void)ctx, (void)key, (void)pid, (void)first_seq, (void)from;
  finder *fd = arg;
  fd->calls++;
  if (fd->fail)
    return tarn__err(TARN_EUNAVAIL, "the log cannot be read");
  *offset = 77;
  return fd->found;
}

/* Issue 31: a claim revoked for settling stays in the record until its
 * batch has been looked for. Here the lookup fails first (the log cannot be
 * read); the client's retry must not be appended then, and the next check
 * looks again and finds the batch. Before, the revocation dropped the claim
 * and the next check appended the retry: a batch stored before the
 * revocation was stored twice. */
static void revoked_claim_outlives_failed_find(void **state) {
  fx f = open_fx(state);
  finder fd = {0, 1, 1};
  tarn__kprod_set_finder(f.p, find_stub, &fd);
  int64_t pid = new_pid(f.p);
  assert_int_equal(produce(f.p, "13", pid, 0, 0, 1, 70).error, 0);
  tarn__kprod_verdict v;
  assert_int_equal(tarn__kprod_check(f.p, "13", pid, 0, 1, 1, &v), 0);
  assert_int_equal(v.error, 0);
  tarn__kprod_abandon(f.p, "13", pid, 1, 1); /* outcome unknown (it was stored at 77) */
  assert_int_equal(tarn__kprod_check(f.p, "13", pid, 0, 1, 1, &v), TARN_EUNAVAIL);
  assert_int_equal(fd.calls, 1);
  /* a second node, with the same lookup failing, appends nothing either */
  tarn__kprod *b;
  assert_int_equal(tarn__kprod_open(f.m, &b), 0);
  tarn__kprod_set_finder(b, find_stub, &fd);
  assert_int_equal(tarn__kprod_check(b, "13", pid, 0, 1, 1, &v), TARN_EUNAVAIL);
  assert_int_equal(fd.calls, 2);
  fd.fail = 0;
  v = produce(b, "13", pid, 0, 1, 1, 999);
  assert_int_equal(fd.calls, 3);
  assert_int_equal(v.error, 0);
  assert_true(v.dup);
  assert_int_equal(v.base_offset, 77);
  v = produce(f.p, "13", pid, 0, 2, 1, 78); /* and the producer goes on */
  assert_int_equal(v.error, 0);
  assert_false(v.dup);
  tarn__kprod_close(b);
  close_fx(&f);
}

/* A claim whose append's outcome is unknown is settled before anything
 * else: revoked (the record's version moves, so its guarded put cannot land
 * any more), then looked for in the log; found, its retry is a duplicate;
 * not found, the retry is appended. */
static void unknown_outcome_is_settled(void **state) {
  fx f = open_fx(state);
  finder fd = {0, 1, 0};
  tarn__kprod_set_finder(f.p, find_stub, &fd);
  int64_t pid = new_pid(f.p);
  assert_int_equal(produce(f.p, "11", pid, 0, 0, 1, 70).error, 0);
  tarn__kprod_verdict v;
  assert_int_equal(tarn__kprod_check(f.p, "11", pid, 0, 1, 1, &v), 0);
  assert_int_equal(v.error, 0);
  tarn__append_guard g;
  assert_int_equal(tarn__kprod_guard(f.p, "11", pid, &g), 0);
  assert_non_null(g.domain);
  tarn_meta_guard mg;
  assert_int_equal(g.hold(g.domain, &mg), 0);
  int64_t claimed = mg.version;
  g.release(g.domain);
  tarn__kprod_abandon(f.p, "11", pid, 1, 1); /* the put's outcome is unknown */
  v = produce(f.p, "11", pid, 0, 1, 1, 999);
  assert_int_equal(fd.calls, 1);
  assert_true(v.dup);
  assert_int_equal(v.base_offset, 77);
  assert_int_equal(g.hold(g.domain, &mg), 0);
  assert_true(mg.version != claimed); /* revoked: a late put under the claim fails */
  g.release(g.domain);
  /* not found in the log: the retry is appended */
  fd.found = 0;
  assert_int_equal(tarn__kprod_check(f.p, "11", pid, 0, 2, 1, &v), 0);
  tarn__kprod_abandon(f.p, "11", pid, 2, 1);
  v = produce(f.p, "11", pid, 0, 2, 1, 80);
  assert_int_equal(fd.calls, 2);
  assert_int_equal(v.error, 0);
  assert_false(v.dup);
  v = produce(f.p, "11", pid, 0, 2, 1, 999);
  assert_true(v.dup);
  assert_int_equal(v.base_offset, 80);
  close_fx(&f);
}

/* Issue 31 item 4: an express topic's append has no index put to carry the
 * claim's guard, so right before it the producer's record is compared with
 * the version this node last wrote. Node A claims a batch; 11 s later node B
 * takes the client's retry of it, finds A's claim stale, revokes it, does not
 * find the batch in the log and claims it itself. A's express append, coming
 * only now, is refused (before: appended too — the batch stored twice). */
static int64_t skew_ms;
static int64_t ts_ms(clockid_t id) {
  struct timespec ts;
  clock_gettime(id, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}
static int64_t skewed_now(void *arg) {
  (void)arg;
  return ts_ms(CLOCK_REALTIME) + skew_ms;
}
static int64_t skewed_mono(void *arg) {
  (void)arg;
  return ts_ms(CLOCK_MONOTONIC) + skew_ms;
}
static void real_sleep(void *arg, int64_t ms) {
  (void)arg;
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000};
  nanosleep(&ts, NULL);
}

static void express_claim_checked(void **state) {
  fx f = open_fx(state);
  tarn__kprod *b;
  assert_int_equal(tarn__kprod_open(f.m, &b), 0);
  finder fd = {0, 0, 0};
  tarn__kprod_set_finder(f.p, find_stub, &fd);
  tarn__kprod_set_finder(b, find_stub, &fd);
  int64_t pid = new_pid(f.p);
  assert_int_equal(produce(f.p, "12", pid, 0, 0, 1, 70).error, 0);
  tarn__kprod_verdict v;
  assert_int_equal(tarn__kprod_check(f.p, "12", pid, 0, 1, 1, &v), 0); /* A claims seq 1 */
  assert_int_equal(v.error, 0);
  assert_false(v.dup);
  assert_int_equal(tarn__kprod_claim_current(f.p, "12", pid), 0);
  skew_ms = 11000;
  tarn__clock_hooks h = {skewed_now, skewed_mono, real_sleep, NULL};
  tarn__clock_set(&h);
  assert_int_equal(tarn__kprod_check(b, "12", pid, 0, 1, 1, &v), 0); /* B: the retry */
  assert_int_equal(fd.calls, 1);
  assert_int_equal(v.error, 0);
  assert_false(v.dup);
  assert_int_equal(tarn__kprod_claim_current(f.p, "12", pid), TARN_EGUARD);
  assert_non_null(strstr(tarn_errmsg(), "another node revoked the claim"));
  assert_int_equal(tarn__kprod_claim_current(b, "12", pid), 0); /* B's stands */
  tarn__clock_set(NULL);
  tarn__kprod_close(b);
  close_fx(&f);
}

/* Issue 31: a node withdraws only its own claim. Node A claims sequence 1;
 * 11 s later node B takes the client's retry, revokes A's stale claim, does
 * not find the batch and claims it itself. A's append then fails (its claim
 * compare refuses it) and A withdraws its claim: B's must stay, so that a
 * third retry, at node C, is told to wait for B's append. Before, A's
 * withdrawal dropped B's claim (the same sequence) and C appended the batch
 * a second time. */
static void others_claim_kept(void **state) {
  fx f = open_fx(state);
  tarn__kprod *b, *c;
  assert_int_equal(tarn__kprod_open(f.m, &b), 0);
  assert_int_equal(tarn__kprod_open(f.m, &c), 0);
  finder fd = {0, 0, 0};
  tarn__kprod_set_finder(f.p, find_stub, &fd);
  tarn__kprod_set_finder(b, find_stub, &fd);
  tarn__kprod_set_finder(c, find_stub, &fd);
  int64_t pid = new_pid(f.p);
  assert_int_equal(produce(f.p, "14", pid, 0, 0, 1, 70).error, 0);
  tarn__kprod_verdict v;
  assert_int_equal(tarn__kprod_check(f.p, "14", pid, 0, 1, 1, &v), 0); /* A claims seq 1 */
  assert_int_equal(v.error, 0);
  skew_ms = 11000;
  tarn__clock_hooks h = {skewed_now, skewed_mono, real_sleep, NULL};
  tarn__clock_set(&h);
  assert_int_equal(tarn__kprod_check(b, "14", pid, 0, 1, 1, &v), 0); /* B: the retry */
  assert_int_equal(fd.calls, 1);
  assert_int_equal(v.error, 0);
  assert_int_equal(tarn__kprod_claim_current(f.p, "14", pid), TARN_EGUARD);
  tarn__kprod_abandon(f.p, "14", pid, 1, 0); /* A's append refused: not stored */
  assert_int_equal(tarn__kprod_check(c, "14", pid, 0, 1, 1, &v), 0); /* C: a third retry */
  assert_int_equal(v.error, TARN__KP_NOT_ENOUGH_REPLICAS);
  assert_false(v.dup);
  assert_int_equal(tarn__kprod_record(b, "14", pid, 0, 1, 1, 71), 0);
  assert_int_equal(tarn__kprod_check(c, "14", pid, 0, 1, 1, &v), 0);
  assert_true(v.dup);
  assert_int_equal(v.base_offset, 71);
  tarn__clock_set(NULL);
  tarn__kprod_close(c);
  tarn__kprod_close(b);
  close_fx(&f);
}

/* Issue 37 "Failover": node A claims a batch and dies (its beats stop: out
 * of the live list). Node B, told by the liveness callback that A's nonce is
 * no live node's, settles A's claim at once — revoked, looked for, the retry
 * appended — not after the 10 s patience a live owner gets; while A counts
 * as alive, B still answers NOT_ENOUGH_REPLICAS (A's append may be in
 * flight). */
static uint64_t dead_owner;
static int owner_alive(void *arg, uint64_t owner) {
  (void)arg;
  return owner != dead_owner;
}

static void dead_owners_claim_settled_at_once(void **state) {
  fx f = open_fx(state);
  tarn__kprod *b;
  assert_int_equal(tarn__kprod_open(f.m, &b), 0);
  finder fd = {0, 0, 0};
  tarn__kprod_set_finder(f.p, find_stub, &fd);
  tarn__kprod_set_finder(b, find_stub, &fd);
  tarn__kprod_set_liveness(b, owner_alive, NULL);
  int64_t pid = new_pid(f.p);
  assert_int_equal(produce(f.p, "15", pid, 0, 0, 1, 70).error, 0);
  tarn__kprod_verdict v;
  assert_int_equal(tarn__kprod_check(f.p, "15", pid, 0, 1, 1, &v), 0); /* A claims seq 1 */
  assert_int_equal(v.error, 0);
  dead_owner = 0; /* A alive: its append may be in flight */
  assert_int_equal(tarn__kprod_check(b, "15", pid, 0, 1, 1, &v), 0);
  assert_int_equal(v.error, TARN__KP_NOT_ENOUGH_REPLICAS);
  assert_int_equal(fd.calls, 0);
  dead_owner = tarn__kprod_nonce(f.p); /* A is dead: settled now, 0 s after its claim */
  assert_int_equal(tarn__kprod_check(b, "15", pid, 0, 1, 1, &v), 0);
  assert_int_equal(fd.calls, 1); /* looked for: not stored */
  assert_int_equal(v.error, 0);
  assert_false(v.dup);
  assert_int_equal(tarn__kprod_claim_current(f.p, "15", pid),
                   TARN_EGUARD); /* A's put cannot land */
  assert_int_equal(tarn__kprod_record(b, "15", pid, 0, 1, 1, 71), 0);
  tarn__kprod_close(b);
  close_fx(&f);
}

/* The state record's decoder is total (issue 31: every decoder has a fuzz
 * target, fuzz/fuzz_kafka_producer_state.c, whose seeds these are): a good
 * value round-trips; a bad one is an error naming the structure, the byte
 * and the fault — truncated, trailing bytes, counts or an epoch out of
 * range, a negative sequence or offset. */
static void put32(uint8_t *p, uint32_t v) {
  p[0] = (uint8_t)(v >> 24), p[1] = (uint8_t)(v >> 16), p[2] = (uint8_t)(v >> 8), p[3] = (uint8_t)v;
}

static void expect_bad(const uint8_t *v, size_t n, const char *what) {
  assert_int_equal(tarn__kprod_state_decode(v, n, NULL), TARN_ECORRUPT);
  if (!strstr(tarn_errmsg(), what))
    fail_msg("\"%s\" not in: %s", what, tarn_errmsg());
}

static void state_decoder_total(void **state) {
  (void)state;
  /* format 3: epoch 0, one batch [0, 4] at offset 7, one claim [5, 5],
   * written at 1234 ms */
  uint8_t v[3 + 4 + 4 + 16 + 4 + 24 + 8] = {'K', 'P', 3};
  put32(v + 7, 1), put32(v + 15, 4), put32(v + 23, 7);
  put32(v + 27, 1), put32(v + 31, 5), put32(v + 35, 5);
  put32(v + 59, 1234);
  tarn_buf again = TARN_BUF_INIT;
  assert_int_equal(tarn__kprod_state_decode(v, sizeof v, &again), 0);
  assert_int_equal(again.len, sizeof v);
  assert_memory_equal(again.data, v, sizeof v);
  tarn_buf_free(&again);
  for (size_t n = 0; n < sizeof v; n++) /* every truncation */
    assert_int_equal(tarn__kprod_state_decode(v, n, NULL), TARN_ECORRUPT);
  expect_bad(v, 0, "kafka producer state: byte 0: header needs 3 bytes");
  uint8_t w[sizeof v + 1];
  memcpy(w, v, sizeof v), w[sizeof v] = 0;
  expect_bad(w, sizeof w, "kafka producer state: byte 63: 1 bytes after the last write time");
  memcpy(w, v, sizeof v), w[55] = 0x80;
  expect_bad(w, sizeof v, "byte 55: write time");
  /* format 2 (no write time): read, written again as format 3 */
  memcpy(w, v, sizeof v), w[2] = 2;
  assert_int_equal(tarn__kprod_state_decode(w, 55, &again), 0);
  assert_int_equal(again.len, 0);
  memcpy(w, v, sizeof v), put32(w + 3, 40000);
  expect_bad(w, sizeof v, "byte 3: epoch 40000");
  memcpy(w, v, sizeof v), put32(w + 7, 6);
  expect_bad(w, sizeof v, "byte 7: 6 batches, at most 5");
  memcpy(w, v, sizeof v), put32(w + 27, 9);
  expect_bad(w, sizeof v, "byte 27: 9 claims, at most 8");
  memcpy(w, v, sizeof v), put32(w + 15, 0x80000000u);
  expect_bad(w, sizeof v, "byte 11: batch 0: sequences [0, -2147483648]");
  memcpy(w, v, sizeof v), w[19] = 0x80;
  expect_bad(w, sizeof v, "byte 11: batch 0:");
  memcpy(w, v, sizeof v), w[1] = 'X';
  expect_bad(w, sizeof v, "byte 0: not a producer state record");
  memcpy(w, v, sizeof v), w[2] = 4;
  assert_int_equal(tarn__kprod_state_decode(w, sizeof v, NULL), TARN_EVERSION);
  assert_non_null(strstr(tarn_errmsg(), "kafka producer state: byte 2: format 4"));
  /* format 1: no claim count; read, never written again as format 1 */
  uint8_t v1[3 + 4 + 4] = {'K', 'P', 1};
  assert_int_equal(tarn__kprod_state_decode(v1, sizeof v1, &again), 0);
  assert_int_equal(again.len, 0);
  tarn_buf_free(&again);
}

/* ---- issue 37 "Lifecycle" ------------------------------------------------ */

/* The producer-state records of log log_id. */
static size_t state_records(tarn_meta *m, uint64_t log_id) {
  char a[64];
  snprintf(a, sizeof a, "/kafka-producer-state/%llu/", (unsigned long long)log_id);
  return tu_prefix_count(m, log_id, a);
}

/* producer.id.expiration.ms on a fake clock: a record whose last write is
 * older than the expiration goes, a fresh one stays, a write between the
 * sweep's read and its delete wins (the delete is on the version read), a
 * record of format 2 (no time) is stamped, not removed; the producer whose
 * state went starts afresh at sequence 0 and is told UNKNOWN_PRODUCER_ID
 * past it (its node's cache notwithstanding). */
static void expiry_sweep(void **state) {
  fx f = open_fx(state);
  tarn__clock_hooks h = {skewed_now, skewed_mono, real_sleep, NULL};
  skew_ms = 0;
  tarn__clock_set(&h);
  int64_t old = new_pid(f.p), fresh = new_pid(f.p), racer = new_pid(f.p);
  assert_int_equal(produce(f.p, "31", old, 0, 0, 2, 0).error, 0);
  assert_int_equal(produce(f.p, "31", racer, 0, 0, 1, 2).error, 0);
  skew_ms = 60000; /* a minute later */
  assert_int_equal(produce(f.p, "31", fresh, 0, 0, 1, 3).error, 0);
  /* a format 2 record (before issue 37): no write time */
  uint8_t v2[3 + 4 + 4 + 4] = {'K', 'P', 2};
  assert_int_equal(tarn_meta_create(f.m, "31", "/kafka-producer-state/31/00000000000000000099", v2,
                                    sizeof v2, TARN_META_PERSISTENT, NULL),
                   0);
  assert_int_equal(state_records(f.m, 31), 4);

  /* the sweep reads racer's record; racer writes; then the sweep judges */
  char rk[64];
  snprintf(rk, sizeof rk, "/kafka-producer-state/31/%020lld", (long long)racer);
  tarn_meta_rec r = {0};
  assert_int_equal(tarn_meta_get(f.m, "31", rk, &r), 0);
  assert_int_equal(produce(f.p, "31", racer, 0, 1, 1, 4).error, 0);
  size_t removed = 0;
  assert_int_equal(tarn__kprod_expire_rec(f.p, 31, &r, 30000, &removed), 0);
  tarn_meta_rec_free(&r);
  assert_int_equal(removed, 0);
  assert_int_equal(state_records(f.m, 31), 4); /* the write won */

  assert_int_equal(tarn__kprod_expire(f.p, 31, 30000, &removed), 0);
  assert_int_equal(removed, 1); /* old's: a minute since its write */
  assert_int_equal(state_records(f.m, 31), 3);
  tarn_meta_rec o = {0};
  char ok[64];
  snprintf(ok, sizeof ok, "/kafka-producer-state/31/%020lld", (long long)old);
  assert_int_equal(tarn_meta_get(f.m, "31", ok, &o), TARN_ENOTFOUND);
  tarn_meta_rec_free(&o);
  /* the format 2 record was stamped now (format 3), not removed */
  assert_int_equal(tarn_meta_get(f.m, "31", "/kafka-producer-state/31/00000000000000000099", &o),
                   0);
  assert_int_equal(o.value[2], 3);
  tarn_meta_rec_free(&o);

  /* old's state is gone (this node's cache still holds it): past sequence 0
   * it is unknown, at 0 it starts afresh */
  tarn__kprod_verdict v;
  assert_int_equal(tarn__kprod_check(f.p, "31", old, 0, 2, 1, &v), 0);
  assert_int_equal(v.error, TARN__KP_UNKNOWN_PRODUCER_ID);
  assert_int_equal(produce(f.p, "31", old, 0, 0, 1, 5).error, 0);

  /* a minute on, everything not written since goes */
  skew_ms = 120000;
  assert_int_equal(tarn__kprod_expire(f.p, 31, 30000, &removed), 0);
  assert_int_equal(removed, 4);
  assert_int_equal(state_records(f.m, 31), 0);
  tarn__clock_set(NULL);
  skew_ms = 0;
  close_fx(&f);
}

/* Deleting a topic removes its logs' producer state, and a produce racing
 * the deletion (its node still routes to the log) cannot create a record
 * once the log is fenced. */
static void state_goes_with_topic(void **state) {
  fx f = open_fx(state);
  tarn_catalog *c;
  assert_int_equal(tarn_catalog_open(f.m, NULL, &c), 0);
  tarn_kafka_topic t;
  assert_int_equal(tarn_kafka_topic_create(c, "orders", 2, NULL, 0, &t), 0);
  char k0[24], k1[24];
  snprintf(k0, sizeof k0, "%llu", (unsigned long long)t.logs[0]);
  snprintf(k1, sizeof k1, "%llu", (unsigned long long)t.logs[1]);
  int64_t a = new_pid(f.p), b = new_pid(f.p);
  assert_int_equal(produce(f.p, k0, a, 0, 0, 1, 0).error, 0);
  assert_int_equal(produce(f.p, k1, a, 0, 0, 1, 0).error, 0);
  assert_int_equal(produce(f.p, k1, b, 0, 0, 1, 1).error, 0);
  assert_int_equal(state_records(f.m, t.logs[0]) + state_records(f.m, t.logs[1]), 3);
  assert_int_equal(tarn_kafka_topic_delete(c, "orders"), 0);
  assert_int_equal(state_records(f.m, t.logs[0]) + state_records(f.m, t.logs[1]), 0);
  /* a producer new to the deleted log: its claim is refused, nothing stays */
  int64_t late = new_pid(f.p);
  tarn__kprod_verdict v;
  assert_int_equal(tarn__kprod_check(f.p, k0, late, 0, 0, 1, &v), TARN_EGUARD);
  assert_int_equal(state_records(f.m, t.logs[0]), 0);
  /* and one whose record went with the topic */
  assert_true(tarn__kprod_check(f.p, k1, b, 0, 1, 1, &v) != 0 || v.error != 0);
  assert_int_equal(state_records(f.m, t.logs[1]), 0);
  tarn_kafka_topic_free(&t);
  tarn_catalog_close(c);
  close_fx(&f);
}

int main(int argc, char **argv) {
  const char *v = argc > 1 ? argv[1] : "mem";
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_prestate(producer_ids, (void *)v),
      cmocka_unit_test_prestate(concurrent_ids_are_unique, (void *)v),
      cmocka_unit_test_prestate(sequence_checks, (void *)v),
      cmocka_unit_test_prestate(last_five_batches, (void *)v),
      cmocka_unit_test_prestate(sequences_wrap, (void *)v),
      cmocka_unit_test_prestate(batches_in_flight, (void *)v),
      cmocka_unit_test_prestate(state_survives_restart, (void *)v),
      cmocka_unit_test_prestate(moves_between_nodes, (void *)v),
      cmocka_unit_test_prestate(unknown_outcome_is_settled, (void *)v),
      cmocka_unit_test_prestate(express_claim_checked, (void *)v),
      cmocka_unit_test_prestate(revoked_claim_outlives_failed_find, (void *)v),
      cmocka_unit_test_prestate(others_claim_kept, (void *)v),
      cmocka_unit_test_prestate(dead_owners_claim_settled_at_once, (void *)v),
      cmocka_unit_test_prestate(state_decoder_total, (void *)v),
      cmocka_unit_test_prestate(expiry_sweep, (void *)v),
      cmocka_unit_test_prestate(state_goes_with_topic, (void *)v),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
