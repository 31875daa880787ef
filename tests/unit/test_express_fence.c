/* The express fence, settlement and the roll's split (issue 14; the Epochs
 * design "Fencing an epoch", "Publishing the cut", "The unratified tail";
 * ../shared/notes/epochs/epochs-model.md), against hand-built bucket states
 * on mem: buckets (wrapped in lat: where a bucket must go down):
 *   - the classes of one observation, the K-W+1 threshold, undecided cases;
 *   - committed slots advance, the first empty slot is poisoned to death in
 *     bucket order (the next bucket when a PUT fails);
 *   - repair copies the identical flight, re-observes and advances;
 *   - the walk starts at estimate - WIN (epochs-model §6 "start offset": the
 *     witness with one copy in each of two slots leaves no hole);
 *   - the checkpoint bounds the walk from below;
 *   - undecided (1 flight, 1 poison, a bucket down; nothing visible) blocks
 *     until the timeout and fails with its age, then resolves once up;
 *   - a stale read followed by 412s on poison PUTs (epochs-model §6 "no
 *     re-observe"): the slot stays committed;
 *   - two racing fencers publish one cut and kill one slot; a cut different
 *     from one published meanwhile fails loudly and overwrites nothing;
 *   - K = W = 1: one poison object in all;
 *   - settlement absorbs [checkpoint, cut), deletes flights in [cut, cut+WIN]
 *     only, leaves poison and everything below the cut;
 *   - the roll's split: below the cut acked, at or above republished, never both.
 * The planted bugs xfence-* / xsettle-* / xroll-* (src/util/planted.h) each
 * fail one of these (docs/simulation.md). */
#include "testutil.h"
#include "tu_express.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "express/fence.h"
#include "tarn/error.h"
#include "tarn/express_fence.h"
#include "tarn/meta.h"
#include "tarn/metrics.h"
#include "tarn/objstore.h"
#include "tarn/objstore_lat.h"
#include "tarn/testing.h"
#include "tarn/wal.h"

#define STAR "node-f"

typedef struct world {
  tarn_meta *m;
  tarn__xbuckets s; /* opened: the test's own handles on the buckets */
  tarn__xepoch e;
  char names[TARN__X_K_MAX][64];
} world;

static int seq;

/* K buckets mem:xf{seq}-{i}, each behind lat: (named lat-xf{seq}-{i}) so a
 * test can take one down; the epoch minted with them. */
static void world_open(world *w, size_t k, uint32_t wq, uint32_t win) {
  memset(w, 0, sizeof *w);
  seq++;
  char u[160];
  snprintf(u, sizeof u, "mem:xf-meta-%d", seq);
  assert_int_equal(tarn_meta_open(u, &w->m), 0);
  for (size_t i = 0; i < k; i++) {
    snprintf(w->names[i], sizeof w->names[i], "lat-xf%d-%zu", seq, i);
    snprintf(u, sizeof u, "lat:name=%s;mem:xf%d-%zu@zone-%c", w->names[i], seq, i, (char)('a' + i));
    assert_int_equal(tarn__xbuckets_add(&w->s, u), 0);
  }
  w->s.w = wq;
  w->s.win = win;
  assert_int_equal(tarn__xbuckets_check(&w->s), 0);
  assert_int_equal(tarn__xbuckets_open(&w->s), 0);
  assert_int_equal(tarn__xchain_mint(w->m, STAR, TARN__X_CLASS_EXPRESS, &w->s, &w->e), 0);
}

static void world_close(world *w) {
  tarn__xepoch_free(&w->e);
  tarn__xbuckets_free(&w->s);
  tarn_meta_close(w->m);
}

static void key_of(const world *w, uint64_t slot, char *key) {
  assert_int_equal(tarn__xslot_key(key, TARN__X_SLOT_KEY_MAX + 1, STAR, w->e.epoch, slot), 0);
}

/* The one possible flight of a slot (a v3 WAL object naming the slot). */
static void flight_bytes(uint64_t slot, tarn_buf *out) { tu_xflight(slot, 7, 1, out); }

static void put_flight(world *w, uint64_t slot, size_t b) {
  char key[TARN__X_SLOT_KEY_MAX + 1];
  key_of(w, slot, key);
  tarn_buf f;
  flight_bytes(slot, &f);
  assert_int_equal(tarn_objstore_put(w->s.b[b].store, key, f.data, f.len), 0);
  tarn_buf_free(&f);
}

static void put_poison(world *w, uint64_t slot, size_t b) {
  char key[TARN__X_SLOT_KEY_MAX + 1];
  key_of(w, slot, key);
  tarn_buf p;
  tarn_buf_init(&p);
  assert_int_equal(tarn__xpoison(&p, STAR, w->e.epoch, slot), 0);
  assert_int_equal(tarn_objstore_put(w->s.b[b].store, key, p.data, p.len), 0);
  tarn_buf_free(&p);
}

/* What bucket b holds at slot, as the test sees it (all buckets up). */
static int cell(world *w, uint64_t slot, size_t b) {
  char key[TARN__X_SLOT_KEY_MAX + 1];
  key_of(w, slot, key);
  tarn_buf got;
  tarn_buf_init(&got);
  int st = tarn__xslot_observe(w->s.b[b].store, key, STAR, w->e.epoch, slot, &got);
  if (st == TARN__XOBS_FLIGHT) {
    tarn_buf f;
    flight_bytes(slot, &f); /* repair copied the identical bytes */
    assert_int_equal(f.len, got.len);
    assert_memory_equal(f.data, got.data, f.len);
    tarn_buf_free(&f);
  }
  tarn_buf_free(&got);
  return st;
}

static uint32_t count(world *w, uint64_t slot, int what) {
  uint32_t n = 0;
  for (size_t b = 0; b < w->s.k; b++)
    n += cell(w, slot, b) == what;
  return n;
}

static void down(world *w, size_t b, int is_down) {
  assert_int_equal(tarn_objstore_lat_control(w->names[b], is_down ? "outage=down" : "outage=none"),
                   0);
}

/* The fence's safety outcome (epochs-model claims 3, 4): every slot below the
 * cut committed, the cut dead, nothing dead below it. */
static void assert_cut_sound(world *w, uint64_t cut) {
  for (uint64_t s = w->e.checkpoint; s < cut; s++) {
    if (count(w, s, TARN__XOBS_FLIGHT) < w->s.w)
      fail_msg("slot %llu below the cut %llu holds %u flights, fewer than W=%u: a hole",
               (unsigned long long)s, (unsigned long long)cut, count(w, s, TARN__XOBS_FLIGHT),
               w->s.w);
  }
  assert_true(count(w, cut, TARN__XOBS_POISON) >= w->s.k - w->s.w + 1);
}

static tarn_xfence_opts quick = {.timeout_ms = 0, .retry_ms = 5};

static void observation_classes(void **state) {
  (void)state;
  tarn__xobs o;
  tarn__xobs_init(&o);
  o.k = 3;
  struct {
    uint32_t f, p, e, u;
    int want;
  } t[] = {
      {2, 0, 1, 0, TARN__XSLOT_COMMITTED},
      {2, 1, 0, 0, TARN__XSLOT_COMMITTED},
      {3, 0, 0, 0, TARN__XSLOT_COMMITTED},
      {1, 0, 2, 0, TARN__XSLOT_REPAIR},
      /* one poison is K-W: not yet the blocking set (epochs-model §6 "threshold") */
      {1, 1, 1, 0, TARN__XSLOT_REPAIR},
      {0, 1, 2, 0, TARN__XSLOT_POISON},
      {0, 0, 3, 0, TARN__XSLOT_POISON},
      {0, 2, 1, 0, TARN__XSLOT_DEAD},
      {1, 2, 0, 0, TARN__XSLOT_DEAD},
      {0, 0, 1, 2, TARN__XSLOT_POISON},
      /* the design's own example, and "nothing visible at all" (§6 "guess", §7.3) */
      {1, 1, 0, 1, TARN__XSLOT_UNDECIDED},
      {0, 0, 0, 3, TARN__XSLOT_UNDECIDED},
      {1, 0, 0, 2, TARN__XSLOT_UNDECIDED},
      {0, 1, 0, 2, TARN__XSLOT_UNDECIDED},
  };
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
    o.flight = t[i].f, o.poison = t[i].p, o.empty = t[i].e, o.unknown = t[i].u;
    int c = tarn__xobs_classify(&o, 2);
    if (c != t[i].want)
      fail_msg("K=3 W=2, %u flight %u poison %u empty %u unreachable: %s, want %s", t[i].f, t[i].p,
               t[i].e, t[i].u, tarn__xslot_class_name(c), tarn__xslot_class_name(t[i].want));
  }
  /* K = W = 1: one poison kills */
  o.k = 1;
  o.flight = 0, o.poison = 1, o.empty = 0, o.unknown = 0;
  assert_int_equal(tarn__xobs_classify(&o, 1), TARN__XSLOT_DEAD);
  o.poison = 0, o.empty = 1;
  assert_int_equal(tarn__xobs_classify(&o, 1), TARN__XSLOT_POISON);
  tarn__xobs_free(&o);
}

static void committed_advance_then_poison_in_order(void **state) {
  (void)state;
  world w;
  world_open(&w, 3, 2, 2);
  for (uint64_t s = 0; s < 3; s++)
    put_flight(&w, s, s % 3), put_flight(&w, s, (s + 1) % 3);
  tarn_xfence_report r;
  assert_int_equal(tarn_express_fence(w.m, STAR, w.e.epoch, &quick, &r), 0);
  assert_int_equal(r.estimate, 3);
  assert_int_equal(r.start, 1); /* estimate - WIN */
  assert_int_equal(r.cut, 3);
  assert_int_equal(r.published, 1);
  assert_int_equal(r.repair_puts, 0); /* committed slots are left as they are */
  /* poison in the bucket set's fixed order: buckets 0 and 1, not 2 */
  assert_int_equal(cell(&w, 3, 0), TARN__XOBS_POISON);
  assert_int_equal(cell(&w, 3, 1), TARN__XOBS_POISON);
  assert_int_equal(cell(&w, 3, 2), TARN__XOBS_EMPTY);
  assert_int_equal(r.poison_puts, 2);
  assert_cut_sound(&w, 3);
  /* published on the record, state fenced; a later fence is a read */
  tarn__xepoch e;
  assert_int_equal(tarn__xepoch_load(w.m, STAR, TARN__X_CLASS_EXPRESS, w.e.epoch, &e), 0);
  assert_int_equal(e.state, TARN__XEPOCH_FENCED);
  assert_int_equal(e.cut, 3);
  tarn__xepoch_free(&e);
  assert_int_equal(tarn_express_fence(w.m, STAR, w.e.epoch, &quick, &r), 0);
  assert_int_equal(r.cut, 3);
  assert_int_equal(r.published, 0);
  assert_int_equal(r.observations, 0);
  /* the writer's roll hook gives the same cut */
  uint64_t cut = 0;
  assert_int_equal(tarn_express_fence_cut(NULL, w.m, STAR, w.e.epoch, &cut), 0);
  assert_int_equal(cut, 3);
  world_close(&w);
}

static void repair_then_walk_start_is_estimate_minus_win(void **state) {
  (void)state;
  /* epochs-model §6, "start at E-(WIN-1)": one copy of slots 0 and 1 in
   * bucket 0, WIN = 2. The estimate is 2; a walk from 1 would leave slot 0
   * with one copy below the cut. */
  world w;
  world_open(&w, 3, 2, 2);
  put_flight(&w, 0, 0);
  put_flight(&w, 1, 0);
  tarn_xfence_report r;
  assert_int_equal(tarn_express_fence(w.m, STAR, w.e.epoch, &quick, &r), 0);
  assert_int_equal(r.estimate, 2);
  assert_int_equal(r.start, 0);
  assert_int_equal(r.cut, 2);
  assert_int_equal(r.repair_puts, 4);
  for (uint64_t s = 0; s < 2; s++)
    assert_int_equal(count(&w, s, TARN__XOBS_FLIGHT), 3);
  assert_cut_sound(&w, 2);
  world_close(&w);
}

static void checkpoint_bounds_the_walk(void **state) {
  (void)state;
  world w;
  world_open(&w, 3, 2, 4);
  /* slots below 5 are absorbed and their flights reclaimed (absent) */
  assert_int_equal(tarn__xepoch_advance(w.m, &w.e, TARN__XCUR_CHECKPOINT, 5), 0);
  put_flight(&w, 5, 0), put_flight(&w, 5, 1);
  put_flight(&w, 6, 2);
  tarn_xfence_report r;
  assert_int_equal(tarn_express_fence(w.m, STAR, w.e.epoch, &quick, &r), 0);
  assert_int_equal(r.estimate, 7);
  assert_int_equal(r.start, 5); /* max(checkpoint, 7 - 4) */
  assert_int_equal(r.cut, 7);
  for (uint64_t s = 0; s < 5; s++)
    assert_int_equal(count(&w, s, TARN__XOBS_EMPTY), 3); /* nothing poisoned below */
  assert_cut_sound(&w, 7);
  world_close(&w);
}

static void undecided_blocks_until_timeout(void **state) {
  (void)state;
  /* the design's example: one flight, one poison, the third zone down */
  world w;
  world_open(&w, 3, 2, 2);
  put_flight(&w, 0, 0);
  put_poison(&w, 0, 1);
  down(&w, 2, 1);
  tarn_xfence_opts o = {.timeout_ms = 120, .retry_ms = 10};
  tarn_xfence_report r;
  assert_int_equal(tarn_express_fence(w.m, STAR, w.e.epoch, &o, &r), TARN_ETIMEDOUT);
  assert_non_null(strstr(tarn_errmsg(), "undecided"));
  assert_int_equal(r.undecided_slot, 0);
  /* blocked until the deadline (120 ms from the call; the probe came first) */
  assert_true(r.undecided_ms >= 90);
  assert_true(tarn_metrics_value("tarn_express_fence_undecided_age_ms", "star", STAR, NULL) >= 90);
  assert_true(r.observations >= 3); /* it re-observed while blocking */
  tarn__xepoch e;
  assert_int_equal(tarn__xepoch_load(w.m, STAR, TARN__X_CLASS_EXPRESS, w.e.epoch, &e), 0);
  assert_int_equal(e.state, TARN__XEPOCH_OPEN); /* nothing published */
  tarn__xepoch_free(&e);
  /* it never guessed: the zone that was down holds nothing new */
  char u[64], key[TARN__X_SLOT_KEY_MAX + 1];
  tarn_objstore *raw;
  snprintf(u, sizeof u, "mem:xf%d-2", seq);
  assert_int_equal(tarn_objstore_open(u, &raw), 0);
  key_of(&w, 0, key);
  assert_int_equal(tarn_objstore_head(raw, key, NULL), TARN_ENOTFOUND);
  tarn_objstore_close(raw);
  /* nothing visible at all: undecided too, never "empty, poison it" */
  down(&w, 0, 1);
  down(&w, 1, 1);
  assert_int_equal(tarn_express_fence(w.m, STAR, w.e.epoch, &quick, &r), TARN_ETIMEDOUT);
  /* the zone returns: repair completes slot 0, slot 1 is the cut */
  for (size_t b = 0; b < 3; b++)
    down(&w, b, 0);
  assert_int_equal(tarn_express_fence(w.m, STAR, w.e.epoch, &quick, &r), 0);
  assert_int_equal(r.cut, 1);
  assert_int_equal(cell(&w, 0, 2), TARN__XOBS_FLIGHT);
  assert_int_equal(tarn_metrics_value("tarn_express_fence_undecided_age_ms", "star", STAR, NULL),
                   0);
  assert_cut_sound(&w, 1);
  world_close(&w);
}

static void stale_read_and_412_poison_is_reobserved(void **state) {
  (void)state;
  /* Slot 0 is committed (buckets 0, 1), but the fencer's first reads of both
   * come back "absent" (stale). Its poison PUTs get 412 in buckets 0 and 1
   * and land in 2. Only re-observing shows the slot committed (epochs-model
   * §6 "no re-observe", §7.5). */
  world w;
  world_open(&w, 3, 2, 1);
  put_flight(&w, 0, 0);
  put_flight(&w, 0, 1);
  tarn_objstore *raw[2];
  char u[64];
  for (int b = 0; b < 2; b++) {
    snprintf(u, sizeof u, "mem:xf%d-%d", seq, b);
    assert_int_equal(tarn_objstore_open(u, &raw[b]), 0);
    assert_int_equal(tarn_objstore_mem_fault(raw[b], TARN_MEM_OP_GET, 1, 1, TARN_MEM_FAULT_BEFORE,
                                             TARN_ENOTFOUND),
                     0);
  }
  tarn_xfence_report r;
  assert_int_equal(tarn_express_fence(w.m, STAR, w.e.epoch, &quick, &r), 0);
  assert_int_equal(r.cut, 1);
  assert_int_equal(count(&w, 0, TARN__XOBS_FLIGHT), 2); /* still committed: never cut */
  assert_int_equal(cell(&w, 0, 2), TARN__XOBS_POISON);  /* K-W poison is harmless */
  assert_cut_sound(&w, 1);
  for (int b = 0; b < 2; b++)
    tarn_objstore_close(raw[b]);
  world_close(&w);
}

static void poison_moves_on_when_a_bucket_rejects_puts(void **state) {
  (void)state;
  world w;
  world_open(&w, 3, 2, 2);
  assert_int_equal(tarn_objstore_lat_control(w.names[0], "outage=noput"), 0);
  tarn_xfence_report r;
  assert_int_equal(tarn_express_fence(w.m, STAR, w.e.epoch, &quick, &r), 0);
  assert_int_equal(r.cut, 0);
  assert_int_equal(cell(&w, 0, 0), TARN__XOBS_EMPTY);
  assert_int_equal(cell(&w, 0, 1), TARN__XOBS_POISON);
  assert_int_equal(cell(&w, 0, 2), TARN__XOBS_POISON);
  world_close(&w);
}

typedef struct racer {
  world *w;
  int rc;
  tarn_xfence_report r;
  char msg[256];
} racer;

static void *race(void *arg) {
  racer *x = arg;
  tarn_xfence_opts o = {.timeout_ms = 2000, .retry_ms = 2};
  x->rc = tarn_express_fence(x->w->m, STAR, x->w->e.epoch, &o, &x->r);
  snprintf(x->msg, sizeof x->msg, "%s", x->rc ? tarn_errmsg() : "");
  return NULL;
}

static uint64_t dead_slots(world *w, uint64_t upto) {
  uint64_t n = 0;
  for (uint64_t s = 0; s <= upto; s++)
    n += count(w, s, TARN__XOBS_POISON) >= w->s.k - w->s.w + 1;
  return n;
}

static void run_race(size_t k, uint32_t wq, uint32_t win, int rounds) {
  for (int round = 0; round < rounds; round++) {
    world w;
    world_open(&w, k, wq, win);
    /* a committed prefix and a ragged pipelined tail */
    uint64_t committed = (uint64_t)(round % 3);
    for (uint64_t s = 0; s < committed; s++)
      for (size_t b = 0; b < wq; b++)
        put_flight(&w, s, (s + b) % k);
    for (uint64_t s = committed; s < committed + win && k > 1; s++)
      if ((s + (uint64_t)round) % 2 == 0)
        put_flight(&w, s, (size_t)(s + (uint64_t)round) % k);
    char lat[96];
    for (size_t b = 0; b < k; b++) {
      snprintf(lat, sizeof lat, "median=300us,p99=3ms,seed=%d", round * 10 + (int)b + 1);
      assert_int_equal(tarn_objstore_lat_control(w.names[b], lat), 0);
    }
    racer x[3] = {{.w = &w}, {.w = &w}, {.w = &w}};
    pthread_t t[3];
    for (int i = 0; i < 3; i++)
      assert_int_equal(pthread_create(&t[i], NULL, race, &x[i]), 0);
    for (int i = 0; i < 3; i++)
      pthread_join(t[i], NULL);
    for (int i = 0; i < 3; i++)
      if (x[i].rc)
        fail_msg("round %d fencer %d: %s: %s", round, i, tarn_errname(x[i].rc), x[i].msg);
    assert_int_equal(x[0].r.cut, x[1].r.cut);
    assert_int_equal(x[1].r.cut, x[2].r.cut);
    tarn__xepoch e;
    assert_int_equal(tarn__xepoch_load(w.m, STAR, TARN__X_CLASS_EXPRESS, w.e.epoch, &e), 0);
    assert_int_equal(e.cut, x[0].r.cut);
    tarn__xepoch_free(&e);
    for (size_t b = 0; b < k; b++)
      assert_int_equal(tarn_objstore_lat_control(w.names[b], "median=0"), 0);
    assert_cut_sound(&w, x[0].r.cut);
    assert_int_equal(dead_slots(&w, x[0].r.cut + win + 1), 1);
    world_close(&w);
  }
}

static void racing_fencers_publish_one_cut(void **state) {
  (void)state;
  run_race(3, 2, 2, 6);
}

typedef struct wrong {
  world *w;
  int rc;
} wrong;

/* Publishes cut 99 while the fencer walks (a fencer with a bug elsewhere). */
static void *publish_wrong(void *arg) {
  wrong *x = arg;
  struct timespec ts = {0, 40 * 1000000};
  nanosleep(&ts, NULL);
  tarn__xepoch e;
  x->rc = tarn__xepoch_load(x->w->m, STAR, TARN__X_CLASS_EXPRESS, x->w->e.epoch, &e);
  if (x->rc == 0)
    x->rc = tarn__xepoch_publish_cut(x->w->m, &e, 99);
  tarn__xepoch_free(&e);
  return NULL;
}

static void disagreeing_cut_fails_loudly(void **state) {
  (void)state;
  world w;
  world_open(&w, 3, 2, 2);
  put_flight(&w, 0, 0), put_flight(&w, 0, 1);
  for (size_t b = 0; b < 3; b++) /* every call 20 ms: the walk outlasts the other's publish */
    assert_int_equal(tarn_objstore_lat_control(w.names[b], "median=20ms,p99=0"), 0);
  wrong x = {.w = &w};
  pthread_t t;
  assert_int_equal(pthread_create(&t, NULL, publish_wrong, &x), 0);
  tarn_xfence_report r;
  int rc = tarn_express_fence(w.m, STAR, w.e.epoch, &quick, &r);
  pthread_join(t, NULL);
  assert_int_equal(x.rc, 0);
  assert_int_equal(rc, TARN_ECORRUPT);
  assert_non_null(strstr(tarn_errmsg(), "computed cut 1"));
  tarn__xepoch e;
  assert_int_equal(tarn__xepoch_load(w.m, STAR, TARN__X_CLASS_EXPRESS, w.e.epoch, &e), 0);
  assert_int_equal(e.cut, 99); /* nothing overwritten */
  tarn__xepoch_free(&e);
  world_close(&w);
}

static void k1_w1_one_poison_slot(void **state) {
  (void)state;
  world w;
  world_open(&w, 1, 1, 1);
  put_flight(&w, 0, 0);
  put_flight(&w, 1, 0);
  tarn_xfence_report r;
  assert_int_equal(tarn_express_fence(w.m, STAR, w.e.epoch, &quick, &r), 0);
  assert_int_equal(r.cut, 2);
  tarn_objstore_listing l;
  assert_int_equal(tarn_objstore_list(w.s.b[0].store, "", NULL, 100, &l), 0);
  uint32_t poison = 0;
  for (size_t i = 0; i < l.n; i++) {
    tarn_buf got;
    tarn_buf_init(&got);
    assert_int_equal(tarn_objstore_get(w.s.b[0].store, l.names[i], &got), 0);
    poison += tarn__xpoison_is(got.data, got.len);
    tarn_buf_free(&got);
  }
  tarn_objstore_listing_free(&l);
  assert_int_equal(poison, 1);
  world_close(&w);
  /* and racing at K = W = 1 */
  run_race(1, 1, 1, 3);
}

typedef struct absorbed {
  uint64_t slots[16];
  size_t n;
} absorbed;

static int absorb_rec(void *arg, tarn_meta *m, tarn__xepoch *e, uint64_t slot,
                      const uint8_t *flight, size_t n) {
  (void)m, (void)e;
  absorbed *a = arg;
  tarn_buf f;
  flight_bytes(slot, &f);
  assert_int_equal(f.len, n);
  assert_memory_equal(f.data, flight, n);
  tarn_buf_free(&f);
  a->slots[a->n++] = slot;
  return 0;
}

static void settle_deletes_only_stragglers(void **state) {
  (void)state;
  world w;
  world_open(&w, 3, 2, 2);
  assert_int_equal(tarn__xepoch_advance(w.m, &w.e, TARN__XCUR_CHECKPOINT, 1), 0);
  for (uint64_t s = 1; s < 4; s++)
    put_flight(&w, s, 0), put_flight(&w, s, 1);
  /* the cut will be 4: a partial flight there (it survives under its poison
   * elsewhere), a complete straggler at 5 = cut + 1 (a poison in bucket 2),
   * one copy at 6 = cut + WIN, and one at 7, beyond the span. */
  put_flight(&w, 4, 2);
  tarn_xfence_report r;
  /* slot 4's flight is hidden while fencing, so the fence kills slot 4 */
  down(&w, 2, 1);
  tarn_xfence_opts o = quick;
  assert_int_equal(tarn_express_fence(w.m, STAR, w.e.epoch, &o, &r), 0);
  down(&w, 2, 0);
  assert_int_equal(r.cut, 4);
  put_flight(&w, 5, 0), put_flight(&w, 5, 1), put_poison(&w, 5, 2);
  put_flight(&w, 6, 2);
  put_flight(&w, 7, 1);
  tarn__xepoch e;
  assert_int_equal(tarn__xepoch_load(w.m, STAR, TARN__X_CLASS_EXPRESS, w.e.epoch, &e), 0);
  absorbed a = {0};
  tarn_xsettle_report sr;
  assert_int_equal(tarn__xsettle(w.m, &e, &w.s, absorb_rec, &a, &quick, &sr), 0);
  /* absorbed [checkpoint, cut) once each, in order; checkpoint now the cut */
  assert_int_equal(a.n, 3);
  for (size_t i = 0; i < a.n; i++)
    assert_int_equal(a.slots[i], 1 + i);
  assert_int_equal(sr.absorbed, 3);
  assert_int_equal(e.checkpoint, 4);
  /* below the cut: untouched */
  for (uint64_t s = 1; s < 4; s++)
    assert_int_equal(count(&w, s, TARN__XOBS_FLIGHT), 2);
  /* [cut, cut + WIN]: flights gone, poison standing */
  assert_int_equal(count(&w, 4, TARN__XOBS_FLIGHT), 0);
  assert_int_equal(count(&w, 4, TARN__XOBS_POISON), 2);
  assert_int_equal(count(&w, 5, TARN__XOBS_FLIGHT), 0);
  assert_int_equal(cell(&w, 5, 2), TARN__XOBS_POISON);
  assert_int_equal(count(&w, 6, TARN__XOBS_FLIGHT), 0);
  assert_int_equal(cell(&w, 7, 1), TARN__XOBS_FLIGHT); /* past the span: not settlement's */
  assert_int_equal(sr.deleted, 4);
  assert_int_equal(sr.poison_kept, 3);
  /* a second settlement has nothing left to do and absorbs nothing twice */
  a.n = 0;
  assert_int_equal(tarn__xsettle(w.m, &e, &w.s, absorb_rec, &a, &quick, &sr), 0);
  assert_int_equal(a.n, 0);
  assert_int_equal(sr.deleted, 0);
  tarn__xepoch_free(&e);
  /* an epoch that is not fenced is refused */
  tarn__xepoch open;
  assert_int_equal(tarn__xchain_mint(w.m, STAR, TARN__X_CLASS_EXPRESS, &w.s, &open), 0);
  assert_int_equal(tarn__xsettle(w.m, &open, &w.s, NULL, NULL, &quick, &sr), TARN_EINVAL);
  tarn__xepoch_free(&open);
  world_close(&w);
}

static void roll_split_never_both(void **state) {
  (void)state;
  uint64_t slot[] = {3, 0, 5, 1, 4, 2, 5, 2};
  size_t n = sizeof slot / sizeof slot[0];
  size_t acked[8], rep[8], na, nr;
  assert_int_equal(tarn__xroll_split(3, slot, n, acked, &na, rep, &nr), 0);
  assert_int_equal(na + nr, n);
  int seen[8] = {0};
  for (size_t i = 0; i < na; i++) {
    assert_true(slot[acked[i]] < 3);
    seen[acked[i]]++;
  }
  for (size_t i = 0; i < nr; i++) {
    assert_true(slot[rep[i]] >= 3);
    if (i)
      assert_true(slot[rep[i - 1]] <= slot[rep[i]]); /* in their old order */
    seen[rep[i]]++;
  }
  for (size_t i = 0; i < n; i++)
    assert_int_equal(seen[i], 1); /* every payload exactly once */
  /* cut 0: everything republished; a cut past all: everything acked */
  assert_int_equal(tarn__xroll_split(0, slot, n, acked, &na, rep, &nr), 0);
  assert_int_equal(nr, n);
  assert_int_equal(tarn__xroll_split(9, slot, n, acked, &na, rep, &nr), 0);
  assert_int_equal(na, n);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(observation_classes),
      cmocka_unit_test(committed_advance_then_poison_in_order),
      cmocka_unit_test(repair_then_walk_start_is_estimate_minus_win),
      cmocka_unit_test(checkpoint_bounds_the_walk),
      cmocka_unit_test(undecided_blocks_until_timeout),
      cmocka_unit_test(stale_read_and_412_poison_is_reobserved),
      cmocka_unit_test(poison_moves_on_when_a_bucket_rejects_puts),
      cmocka_unit_test(racing_fencers_publish_one_cut),
      cmocka_unit_test(disagreeing_cut_fails_loudly),
      cmocka_unit_test(k1_w1_one_poison_slot),
      cmocka_unit_test(settle_deletes_only_stragglers),
      cmocka_unit_test(roll_split_never_both),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
