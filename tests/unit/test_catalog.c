/* The catalog: streams, log IDs, tombstones, layouts, log deletion, against
 * mem: and sqlite:. */
#include "testutil.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tarn/catalog.h"
#include "tarn/key.h"
#include "tarn/lease.h"
#include "tarn/testing.h"
#include "tu_log.h"

typedef tu_catalog_fx fx;

static fx open_fx(void **state, int drain_ms) {
  return tu_catalog_fx_open((const char *)*state, drain_ms);
}

static void close_fx(fx *f) { tu_catalog_fx_close(f); }

static int has_fence(tarn_meta *m, uint64_t log) {
  char part[32], k[TARN_KEY_SLASH_MAX];
  tarn_key_partition(part, log);
  tarn_key_fence(k, log);
  tarn_meta_rec r = {0};
  int rc = tarn_meta_get(m, part, k, &r);
  tarn_meta_rec_free(&r);
  return rc == 0;
}

/* Every key and version of the catalog partition, as one string. */
static char *snapshot(tarn_meta *m) {
  tarn_meta_recs r = {0};
  assert_int_equal(
      tarn_meta_scan(m, TARN_CATALOG_PARTITION, "", "\xff/\xff/\xff/\xff/\xff", 0, 0, &r), 0);
  size_t cap = 64 + r.n * 600, len = 0;
  char *s = malloc(cap);
  s[0] = 0;
  for (size_t i = 0; i < r.n; i++)
    len += (size_t)snprintf(s + len, cap - len, "%s@%lld;", r.v[i].key,
                            (long long)r.v[i].stat.version);
  tarn_meta_recs_free(&r);
  return s;
}

/* Checks every catalog key is a '/' key and no log's index prefix; returns
 * how many there are. */
static size_t check_catalog_keys(tarn_meta *m, const uint64_t *logs, size_t n) {
  tarn_meta_recs r = {0};
  assert_int_equal(
      tarn_meta_scan(m, TARN_CATALOG_PARTITION, "", "\xff/\xff/\xff/\xff/\xff", 0, 0, &r), 0);
  for (size_t i = 0; i < r.n; i++) {
    assert_int_equal(r.v[i].key[0], '/');
    for (size_t j = 0; j < n; j++)
      assert_false(tarn_key_has_prefix(r.v[i].key, strlen(r.v[i].key), logs[j]));
  }
  size_t k = r.n;
  tarn_meta_recs_free(&r);
  return k;
}

/* LS-004, LS-005 */
static void records_live_where_the_spec_says(void **state) {
  fx f = open_fx(state, 1000);
  tarn_catalog_record s;
  assert_int_equal(tarn_catalog_create_stream(f.c, "default", "orders", 3, NULL, 0, &s), 0);
  uint64_t l0 = s.logs[0];
  assert_int_equal(tu_publish(f.m, l0, 2, 10, NULL), 0);
  assert_int_equal(tarn_catalog_add_partitions(f.c, "default", "orders", 1, NULL), 0);
  /* LS-005: no catalog record under a "{log_id:020d}-" key; all are '/' keys. */
  assert_true(check_catalog_keys(f.m, s.logs, s.n_logs) >= 2 + 1 + 4 + 0);
  assert_int_equal(tarn_catalog_drop_stream(f.c, "default", "orders", NULL), 0);
  assert_int_equal(check_catalog_keys(f.m, s.logs, s.n_logs), 3);
  /* LS-004: the fence is in P(L), nowhere else. */
  char fence[TARN_KEY_SLASH_MAX];
  tarn_key_fence(fence, l0);
  tarn_meta_rec g = {0};
  assert_int_equal(tarn_meta_get(f.m, TARN_CATALOG_PARTITION, fence, &g), TARN_ENOTFOUND);
  assert_true(has_fence(f.m, l0));
  tarn_catalog_record_free(&s);
  close_fx(&f);
}

/* LS-087 */
static void log_ids_are_never_reused(void **state) {
  fx f = open_fx(state, 1000);
  uint64_t seen[64];
  size_t n = 0;
  for (int round = 0; round < 4; round++) {
    char name[16];
    snprintf(name, sizeof name, "s%d", round);
    tarn_catalog_record s;
    assert_int_equal(tarn_catalog_create_stream(f.c, "ns", name, 2, NULL, 0, &s), 0);
    for (size_t i = 0; i < s.n_logs; i++) {
      for (size_t j = 0; j < n; j++)
        assert_true(seen[j] != s.logs[i]);
      seen[n++] = s.logs[i];
    }
    tarn_catalog_record_free(&s);
    /* Deleting the stream's logs does not free their IDs. */
    assert_int_equal(tarn_catalog_drop_stream(f.c, "ns", name, NULL), 0);
  }
  close_fx(&f);
}

typedef struct alloc_arg {
  tarn_catalog *c;
  uint64_t got[40];
} alloc_arg;

static void *alloc_thread(void *p) {
  alloc_arg *a = p;
  for (int i = 0; i < 20; i++)
    if (tarn_catalog_alloc_logs(a->c, 2, &a->got[2 * i]))
      a->got[2 * i] = 0;
    else
      a->got[2 * i + 1] = a->got[2 * i] + 1;
  return NULL;
}

/* LS-087: catalogs racing for the counter never get the same ID. */
static void concurrent_allocation_is_unique(void **state) {
  fx f = open_fx(state, 1000);
  alloc_arg a[3];
  pthread_t t[3];
  for (int i = 0; i < 3; i++) {
    a[i].c = f.c;
    pthread_create(&t[i], NULL, alloc_thread, &a[i]);
  }
  for (int i = 0; i < 3; i++)
    pthread_join(t[i], NULL);
  for (int i = 0; i < 120; i++) {
    uint64_t x = a[i / 40].got[i % 40];
    assert_true(x != 0);
    for (int j = 0; j < i; j++)
      assert_true(a[j / 40].got[j % 40] != x);
  }
  close_fx(&f);
}

/* LS-088 */
static void opening_changes_nothing(void **state) {
  fx f = open_fx(state, 1000);
  tarn_stream_prop p[] = {{"k", "v"}};
  assert_int_equal(tarn_catalog_create_stream(f.c, "ns", "a", 2, p, 1, NULL), 0);
  char *before = snapshot(f.m);
  tarn_catalog_record s, l;
  for (int i = 0; i < 3; i++) {
    assert_int_equal(tarn_catalog_open_stream(f.c, "ns", "a", &s), 0);
    assert_int_equal(tarn_catalog_log_stream(f.c, s.logs[1], &l), 0);
    assert_string_equal(l.name, "a");
    assert_int_equal(l.partition, 1);
    tarn_catalog_record_free(&l);
    tarn_catalog_record_free(&s);
  }
  assert_int_equal(tarn_catalog_open_stream(f.c, "ns", "missing", &s), TARN_ENOTFOUND);
  assert_non_null(strstr(tarn_errmsg(), "tarn stream list"));
  tarn_catalog_record *all;
  size_t n;
  assert_int_equal(tarn_catalog_list_streams(f.c, &all, &n), 0);
  assert_int_equal(n, 1);
  assert_string_equal(all[0].props[0].value, "v");
  tarn_catalog_records_free(all, n);
  char *after = snapshot(f.m);
  assert_string_equal(before, after);
  free(before), free(after);
  close_fx(&f);
}

static void create_validates(void **state) {
  fx f = open_fx(state, 1000);
  /* LS-093, LS-094 */
  assert_int_equal(tarn_catalog_create_stream(f.c, "a/b", "x", 1, NULL, 0, NULL), TARN_EINVAL);
  assert_int_equal(tarn_catalog_create_stream(f.c, "a", "x/y", 1, NULL, 0, NULL), TARN_EINVAL);
  assert_int_equal(tarn_catalog_create_stream(f.c, "a", "x", 0, NULL, 0, NULL), TARN_EINVAL);
  tarn_stream_prop dup[] = {{"k", "1"}, {"k", "2"}};
  assert_int_equal(tarn_catalog_create_stream(f.c, "a", "x", 1, dup, 2, NULL), TARN_EINVAL);
  assert_int_equal(tarn_catalog_create_stream(f.c, "a", "x", 1, NULL, 0, NULL), 0);
  assert_int_equal(tarn_catalog_create_stream(f.c, "a", "x", 1, NULL, 0, NULL), TARN_EEXIST);
  assert_non_null(strstr(tarn_errmsg(), "already exists"));
  tarn_catalog_record *all;
  size_t n;
  assert_int_equal(tarn_catalog_list_streams(f.c, &all, &n), 0);
  assert_int_equal(n, 1); /* the refused creates left nothing behind */
  tarn_catalog_records_free(all, n);
  close_fx(&f);
}

/* LS-089, LS-090 */
static void dropped_identities_stay_dropped(void **state) {
  fx f = open_fx(state, 1000);
  tarn_catalog_record s;
  assert_int_equal(tarn_catalog_create_stream(f.c, "ns", "live", 2, NULL, 0, &s), 0);
  int existed;
  assert_int_equal(tarn_catalog_drop_stream(f.c, "ns", "live", &existed), 0);
  assert_int_equal(existed, 1);
  assert_int_equal(tarn_catalog_is_dropped(f.c, "ns", "live"), 1);
  assert_true(has_fence(f.m, s.logs[0]) && has_fence(f.m, s.logs[1]));
  tarn_meta_rec tr = {0};
  assert_int_equal(tarn_meta_get(f.m, TARN_CATALOG_PARTITION, "/catalog/tombstones/ns/live", &tr),
                   0);
  tarn_catalog_record tomb;
  assert_int_equal(tarn_catalog_record_decode(tr.value, tr.value_len, &tomb), 0);
  assert_int_equal(tomb.kind, TARN_CATREC_TOMBSTONE);
  assert_int_equal(tomb.n_logs, 2);
  assert_int_equal(tomb.logs[1], s.logs[1]);
  tarn_catalog_record_free(&tomb);
  tarn_meta_rec_free(&tr);
  tarn_catalog_record o;
  assert_int_equal(tarn_catalog_open_stream(f.c, "ns", "live", &o), TARN_ENOTFOUND);
  assert_int_equal(tarn_catalog_log_stream(f.c, s.logs[0], &o), TARN_ENOTFOUND);
  assert_int_equal(tarn_catalog_create_stream(f.c, "ns", "live", 1, NULL, 0, NULL), TARN_EEXIST);
  assert_non_null(strstr(tarn_errmsg(), "dropped"));
  /* LS-090: a tombstone even when no stream has the identity. */
  assert_int_equal(tarn_catalog_is_dropped(f.c, "ns", "never"), 0);
  assert_int_equal(tarn_catalog_drop_stream(f.c, "ns", "never", &existed), 0);
  assert_int_equal(existed, 0);
  assert_int_equal(tarn_catalog_is_dropped(f.c, "ns", "never"), 1);
  assert_int_equal(tarn_catalog_create_stream(f.c, "ns", "never", 1, NULL, 0, NULL), TARN_EEXIST);
  /* Durable: a new handle on the same store sees it. */
  tarn_meta *m2;
  assert_int_equal(tarn_meta_open(f.uri, &m2), 0);
  tarn_catalog *c2;
  tarn_catalog_open(m2, NULL, &c2);
  assert_int_equal(tarn_catalog_is_dropped(c2, "ns", "never"), 1);
  assert_int_equal(tarn_catalog_drop_stream(c2, "ns", "live", NULL), 0); /* again: fine */
  tarn_catalog_close(c2);
  tarn_meta_close(m2);
  tarn_catalog_record_free(&s);
  close_fx(&f);
}

typedef struct grow_arg {
  tarn_catalog *c;
  int rc;
} grow_arg;

static void *grow_thread(void *p) {
  grow_arg *a = p;
  for (int i = 0; i < 5 && !a->rc; i++)
    a->rc = tarn_catalog_add_partitions(a->c, "ns", "grow", 2, NULL);
  return NULL;
}

/* LS-091 */
static void adding_partitions_publishes_whole_layouts(void **state) {
  fx f = open_fx(state, 1000);
  tarn_catalog_record s;
  assert_int_equal(tarn_catalog_create_stream(f.c, "ns", "grow", 1, NULL, 0, NULL), 0);
  grow_arg a[3] = {{f.c, 0}, {f.c, 0}, {f.c, 0}};
  pthread_t t[3];
  for (int i = 0; i < 3; i++)
    pthread_create(&t[i], NULL, grow_thread, &a[i]);
  /* Every layout a reader sees names only logs that exist (are registered
   * with their partition), and grows by whole steps of 2. */
  for (int k = 0; k < 50; k++) {
    assert_int_equal(tarn_catalog_open_stream(f.c, "ns", "grow", &s), 0);
    assert_int_equal((s.n_logs - 1) % 2, 0);
    for (size_t i = 0; i < s.n_logs; i++) {
      tarn_catalog_record l;
      assert_int_equal(tarn_catalog_log_stream(f.c, s.logs[i], &l), 0);
      assert_int_equal(l.partition, i);
      tarn_catalog_record_free(&l);
    }
    tarn_catalog_record_free(&s);
  }
  for (int i = 0; i < 3; i++) {
    pthread_join(t[i], NULL);
    assert_int_equal(a[i].rc, 0);
  }
  assert_int_equal(tarn_catalog_open_stream(f.c, "ns", "grow", &s), 0);
  assert_int_equal(s.n_logs, 1 + 3 * 5 * 2);
  for (size_t i = 0; i < s.n_logs; i++) {
    tarn_catalog_record l;
    assert_int_equal(tarn_catalog_log_stream(f.c, s.logs[i], &l), 0);
    assert_int_equal(l.partition, i);
    tarn_catalog_record_free(&l);
  }
  tarn_catalog_record_free(&s);
  assert_int_equal(tarn_catalog_add_partitions(f.c, "ns", "nope", 1, NULL), TARN_ENOTFOUND);
  assert_int_equal(tarn_catalog_add_partitions(f.c, "ns", "grow", 0, NULL), TARN_EINVAL);
  close_fx(&f);
}

/* LS-044, LS-045, LS-092 */
static void deleting_a_log_is_idempotent(void **state) {
  fx f = open_fx(state, 1000);
  uint64_t L = 42;
  for (int i = 0; i < 3; i++)
    assert_int_equal(tu_publish(f.m, L, 2, 10, NULL), 0);
  assert_int_equal(tu_publish(f.m, L + 1, 2, 10, NULL), 0); /* a neighbour */
  size_t removed;
  assert_int_equal(tarn_log_delete(f.m, L, NULL, &removed), 0);
  assert_int_equal(removed, 3);
  assert_int_equal(tu_count_index(f.m, L), 0);
  assert_int_equal(tu_count_index(f.m, L + 1), 1);
  char part[32], fence[TARN_KEY_SLASH_MAX];
  tarn_key_partition(part, L);
  tarn_key_fence(fence, L);
  tarn_meta_rec r1 = {0}, r2 = {0};
  assert_int_equal(tarn_meta_get(f.m, part, fence, &r1), 0);
  /* Again, and on a log that never existed: success, fence untouched. */
  assert_int_equal(tarn_log_delete(f.m, L, NULL, &removed), 0);
  assert_int_equal(removed, 0);
  assert_int_equal(tarn_meta_get(f.m, part, fence, &r2), 0);
  assert_int_equal(r1.stat.version, r2.stat.version);
  assert_int_equal(tarn_log_delete(f.m, 999, NULL, NULL), 0);
  /* LS-044: a fence someone else installed counts as success, and stays as it was. */
  tarn_meta_rec_free(&r1);
  tarn_key_partition(part, 77);
  tarn_key_fence(fence, 77);
  assert_int_equal(tarn_meta_create(f.m, part, fence, "x", 1, TARN_META_PERSISTENT, NULL), 0);
  assert_int_equal(tarn_log_delete(f.m, 77, NULL, NULL), 0);
  assert_int_equal(tarn_meta_get(f.m, part, fence, &r1), 0);
  assert_int_equal(r1.value_len, 1);
  assert_int_equal(r1.value[0], 'x');
  tarn_meta_rec_free(&r1);
  tarn_meta_rec_free(&r2);
  close_fx(&f);
}

/* LS-047 */
static void held_leases_leave_everything_in_place(void **state) {
  fx f = open_fx(state, 1000);
  tarn_lease *l;
  assert_int_equal(tarn_lease_acquire(f.m, 5, &l), 0);
  assert_int_equal(tu_publish(f.m, 5, 3, 10, NULL), 0);
  tarn_catalog_options o = {.drain_timeout_ms = 150, .drain_poll_ms = 10};
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  assert_int_equal(tarn_log_delete(f.m, 5, &o, NULL), TARN_EBUSY);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  assert_true((t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000 >= 140);
  assert_non_null(strstr(tarn_errmsg(), "1 write lease(s) still held"));
  assert_int_equal(tu_count_index(f.m, 5), 1); /* records unchanged */
  assert_true(has_fence(f.m, 5));              /* fence in place */
  tarn_lease *l2;
  assert_int_equal(tarn_lease_acquire(f.m, 5, &l2), TARN_EFENCED);
  /* The holder finishes; a retry completes. */
  assert_int_equal(tarn_lease_release(l), 0);
  assert_int_equal(tarn_log_delete(f.m, 5, &o, NULL), 0);
  assert_int_equal(tu_count_index(f.m, 5), 0);
  close_fx(&f);
}

/* LS-047 through a stream drop: a log whose drain times out keeps its
 * records and the drop fails (it is not done), so the stream is not gone;
 * once the holder has finished, the drop run again completes. */
static void drop_with_held_lease_stops(void **state) {
  fx f = open_fx(state, 150);
  tarn_catalog_record s;
  assert_int_equal(tarn_catalog_create_stream(f.c, "ns", "held", 2, NULL, 0, &s), 0);
  uint64_t busy = s.logs[1];
  tarn_lease *l;
  assert_int_equal(tarn_lease_acquire(f.m, busy, &l), 0);
  assert_int_equal(tu_publish(f.m, busy, 3, 10, NULL), 0);
  assert_int_equal(tu_publish(f.m, s.logs[0], 2, 10, NULL), 0);
  int existed = 0;
  assert_int_equal(tarn_catalog_drop_stream(f.c, "ns", "held", &existed), TARN_EBUSY);
  assert_int_equal(existed, 1);
  assert_int_equal(tu_count_index(f.m, busy), 1); /* records unchanged */
  assert_true(has_fence(f.m, busy));
  tarn_catalog_record st;
  assert_int_equal(tarn_catalog_open_stream(f.c, "ns", "held", &st), 0); /* not gone yet */
  assert_int_equal(st.state, TARN_STREAM_DROPPING);
  tarn_catalog_record_free(&st);
  assert_int_equal(tarn_lease_release(l), 0);
  assert_int_equal(tarn_catalog_drop_stream(f.c, "ns", "held", NULL), 0);
  assert_int_equal(tu_count_index(f.m, busy), 0);
  assert_int_equal(tu_count_index(f.m, s.logs[0]), 0);
  assert_int_equal(tarn_catalog_open_stream(f.c, "ns", "held", &st), TARN_ENOTFOUND);
  tarn_catalog_record_free(&s);
  close_fx(&f);
}

typedef struct writer_arg {
  const char *uri;
  uint64_t log;
  int fenced;    /* ended with TARN_EFENCED */
  int published; /* index records published */
  int other;     /* unexpected error */
} writer_arg;

/* A writer: leases, publishes a few records under each, releases; until fenced. */
static void *writer_thread(void *p) {
  writer_arg *a = p;
  tarn_meta *m;
  if (tarn_meta_open(a->uri, &m)) {
    a->other = 1;
    return NULL;
  }
  for (;;) {
    tarn_lease *l;
    int rc = tarn_lease_acquire(m, a->log, &l);
    if (rc == TARN_EFENCED) {
      a->fenced = 1;
      break;
    }
    if (rc) {
      a->other = rc;
      break;
    }
    for (int i = 0; i < 3; i++) {
      if (tu_publish(m, a->log, 1, 8, NULL)) {
        a->other = 1;
        break;
      }
      a->published++;
    }
    struct timespec ts = {0, 2000000};
    nanosleep(&ts, NULL);
    tarn_lease_release(l);
  }
  tarn_meta_close(m);
  return NULL;
}

/* LS-046: deleting while writers hold leases and publish: the deletion
 * waits for the leases, then removes everything; no writer gets a new lease. */
static void delete_while_writing(void **state) {
  fx f = open_fx(state, 1000);
  uint64_t L = 11;
  writer_arg a[3];
  pthread_t t[3];
  for (int i = 0; i < 3; i++) {
    a[i] = (writer_arg){.uri = f.uri, .log = L};
    pthread_create(&t[i], NULL, writer_thread, &a[i]);
  }
  while (tu_count_index(f.m, L) < 10) {
    struct timespec ts = {0, 1000000};
    nanosleep(&ts, NULL);
  }
  tarn_catalog_options o = {.drain_timeout_ms = 10000, .drain_poll_ms = 1};
  assert_int_equal(tarn_log_delete(f.m, L, &o, NULL), 0);
  /* From here no lease can exist, so nothing more gets published. */
  assert_int_equal(tu_count_index(f.m, L), 0);
  for (int i = 0; i < 3; i++) {
    pthread_join(t[i], NULL);
    assert_int_equal(a[i].other, 0);
    assert_int_equal(a[i].fenced, 1);
  }
  assert_int_equal(tu_count_index(f.m, L), 0);
  assert_true(has_fence(f.m, L));
  tarn_lease *l;
  assert_int_equal(tarn_lease_acquire(f.m, L, &l), TARN_EFENCED);
  close_fx(&f);
}

typedef struct race_arg {
  tarn_catalog *c;
  char name[16];
  int rc;
} race_arg;

static void *create_thread(void *p) {
  race_arg *a = p;
  a->rc = tarn_catalog_create_stream(a->c, "race", a->name, 1, NULL, 0, NULL);
  return NULL;
}

static void *drop_thread(void *p) {
  race_arg *a = p;
  a->rc = tarn_catalog_drop_stream(a->c, "race", a->name, NULL);
  return NULL;
}

/* LS-089: a create racing a drop of the same identity never leaves a live
 * stream behind a tombstone. */
static void create_racing_drop(void **state) {
  fx f = open_fx(state, 1000);
  tarn_meta *m2;
  assert_int_equal(tarn_meta_open(f.uri, &m2), 0);
  tarn_catalog *c2;
  tarn_catalog_open(m2, NULL, &c2);
  for (int i = 0; i < 20; i++) {
    race_arg cr = {.c = f.c}, dr = {.c = c2};
    snprintf(cr.name, sizeof cr.name, "s%d", i);
    memcpy(dr.name, cr.name, sizeof dr.name);
    pthread_t a, b;
    pthread_create(&a, NULL, create_thread, &cr);
    pthread_create(&b, NULL, drop_thread, &dr);
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    assert_int_equal(dr.rc, 0);
    assert_true(cr.rc == 0 || cr.rc == TARN_EEXIST);
    assert_int_equal(tarn_catalog_is_dropped(f.c, "race", cr.name), 1);
    tarn_catalog_record s;
    assert_int_equal(tarn_catalog_open_stream(f.c, "race", cr.name, &s), TARN_ENOTFOUND);
  }
  tarn_catalog_close(c2);
  tarn_meta_close(m2);
  close_fx(&f);
}

/* A catalog, initialised, on a mem: store of its own (for its faults). */
static tarn_catalog *mem_catalog(const char *uri, tarn_meta **m) {
  assert_int_equal(tarn_meta_open(uri, m), 0);
  tarn_catalog *c;
  assert_int_equal(tarn_catalog_open(*m, NULL, &c), 0);
  assert_int_equal(tarn_catalog_init(c, NULL), 0);
  return c;
}

static size_t n_streams(tarn_catalog *c) {
  tarn_catalog_record *all;
  size_t n;
  assert_int_equal(tarn_catalog_list_streams(c, &all, &n), 0);
  tarn_catalog_records_free(all, n);
  return n;
}

/* Store faults: a failed write leaves no half-made stream; a write whose
 * outcome is unknown at worst skips log IDs (LS-087). */
static void store_faults(void **state) {
  tarn_meta *m;
  tarn_catalog *c = mem_catalog("mem:catalog-faults", &m);
  uint64_t a, b, d;
  assert_int_equal(tarn_catalog_alloc_logs(c, 2, &a), 0);
  assert_int_equal(tarn_meta_inject_fault(m, TARN_META_FAULT_COMMIT_UNKNOWN, 1), 0);
  assert_int_equal(tarn_catalog_alloc_logs(c, 2, &b), 0);
  assert_true(b >= a + 2);
  assert_int_equal(tarn_catalog_alloc_logs(c, 1, &d), 0);
  assert_true(d >= b + 2);
  /* A failed write: an error, and no half-made stream. */
  assert_int_equal(tarn_meta_inject_fault(m, TARN_META_FAULT_FAIL, 1), 0);
  assert_int_equal(tarn_catalog_create_stream(c, "ns", "f", 2, NULL, 0, NULL), TARN_EUNAVAIL);
  assert_int_equal(n_streams(c), 0);
  /* An unknown outcome of the allocation: retried, the stream is created. */
  tarn_catalog_record s;
  assert_int_equal(tarn_meta_inject_fault(m, TARN_META_FAULT_COMMIT_UNKNOWN, 1), 0);
  assert_int_equal(tarn_catalog_create_stream(c, "ns", "f", 1, NULL, 0, &s), 0);
  assert_true(s.logs[0] > d);
  tarn_catalog_record_free(&s);
  tarn_catalog_close(c);
  tarn_meta_close(m);
}

/* LS-089: a stream-record create held in flight (reported unknown) lands
 * after the create retried, succeeded, and the stream's drop returned: the
 * tombstone guard makes it fail, so the stream stays dropped (issue 12,
 * tarn-sim --catalog --seed 123 --steps 186). */
static void late_create_after_drop_stays_dropped(void **state) {
  (void)state;
  tarn_meta *m;
  tarn_catalog *c = mem_catalog("mem:catalog-late-create", &m);
  /* The create's writes: the counter, one log record, then the stream
   * record, which is held. */
  assert_int_equal(tarn_meta_inject_fault_after(m, TARN_META_FAULT_DELAY_COMMIT, 2, 1), 0);
  tarn_catalog_record s;
  assert_int_equal(tarn_catalog_create_stream(c, "ns", "late", 1, NULL, 0, &s), 0);
  int existed = 0;
  assert_int_equal(tarn_catalog_drop_stream(c, "ns", "late", &existed), 0);
  assert_int_equal(existed, 1);
  /* The held create lands now (it was held: LAND finds it). */
  assert_int_equal(tarn_meta_inject_fault(m, TARN_META_FAULT_LAND, 0), 0);
  tarn_catalog_record o;
  assert_int_equal(tarn_catalog_open_stream(c, "ns", "late", &o), TARN_ENOTFOUND);
  assert_int_equal(n_streams(c), 0);
  assert_int_equal(tarn_catalog_log_stream(c, s.logs[0], &o), TARN_ENOTFOUND);
  assert_int_equal(tarn_catalog_is_dropped(c, "ns", "late"), 1);
  tarn_catalog_record_free(&s);
  tarn_catalog_close(c);
  tarn_meta_close(m);
}

/* A create whose stream record is held in flight and whose retry fails:
 * the create may still land, so it reports an unknown outcome and keeps its
 * log records; when the held create lands, the stream it publishes has its
 * logs registered (a log belongs to it). */
static void held_create_keeps_its_logs(void **state) {
  (void)state;
  tarn_meta *m;
  tarn_catalog *c = mem_catalog("mem:catalog-held-logs", &m);
  /* Writes 1, 2, 3: the counter, two log records; 4 (the stream record) is
   * held; 5 (the retry) fails. */
  assert_int_equal(tarn_meta_inject_fault_after(m, TARN_META_FAULT_DELAY_COMMIT, 3, 1), 0);
  assert_int_equal(tarn_meta_inject_fault_after(m, TARN_META_FAULT_FAIL, 3, 1), 0);
  assert_int_equal(tarn_catalog_create_stream(c, "ns", "held", 2, NULL, 0, NULL), TARN_EUNKNOWN);
  assert_int_equal(tarn_meta_inject_fault(m, TARN_META_FAULT_LAND, 0), 0);
  tarn_catalog_record s, l;
  assert_int_equal(tarn_catalog_open_stream(c, "ns", "held", &s), 0);
  assert_int_equal(s.n_logs, 2);
  for (size_t i = 0; i < s.n_logs; i++) {
    assert_int_equal(tarn_catalog_log_stream(c, s.logs[i], &l), 0);
    assert_string_equal(l.name, "held");
    tarn_catalog_record_free(&l);
  }
  tarn_catalog_record_free(&s);
  tarn_catalog_close(c);
  tarn_meta_close(m);
}

/* LS-091: a layout CompareAndSet held in flight whose retry fails may land
 * later: add_partitions says the outcome is unknown and keeps the new log's
 * record, so the layout that lands names a registered log. */
static void held_layout_change_keeps_its_logs(void **state) {
  (void)state;
  tarn_meta *m;
  tarn_catalog *c = mem_catalog("mem:catalog-held-layout", &m);
  assert_int_equal(tarn_catalog_create_stream(c, "ns", "grow", 1, NULL, 0, NULL), 0);
  /* Writes 1, 2: the counter, the log record; 3 (the layout) is held; 4
   * (its retry) fails. */
  assert_int_equal(tarn_meta_inject_fault_after(m, TARN_META_FAULT_DELAY_COMMIT, 2, 1), 0);
  assert_int_equal(tarn_meta_inject_fault_after(m, TARN_META_FAULT_FAIL, 2, 1), 0);
  assert_int_equal(tarn_catalog_add_partitions(c, "ns", "grow", 1, NULL), TARN_EUNKNOWN);
  assert_int_equal(tarn_meta_inject_fault(m, TARN_META_FAULT_LAND, 0), 0);
  tarn_catalog_record s, l;
  assert_int_equal(tarn_catalog_open_stream(c, "ns", "grow", &s), 0);
  assert_int_equal(s.n_logs, 2);
  assert_int_equal(tarn_catalog_log_stream(c, s.logs[1], &l), 0);
  assert_int_equal(l.partition, 1);
  tarn_catalog_record_free(&l);
  tarn_catalog_record_free(&s);
  tarn_catalog_close(c);
  tarn_meta_close(m);
}

#define BOTH(fn)                                                                                   \
  cmocka_unit_test_prestate(fn, (void *)"mem"), cmocka_unit_test_prestate(fn, (void *)"sqlite"),   \
      cmocka_unit_test_prestate(fn, (void *)"etcd")

int main(void) {
  const struct CMUnitTest tests[] = {
      BOTH(records_live_where_the_spec_says),
      BOTH(log_ids_are_never_reused),
      BOTH(concurrent_allocation_is_unique),
      BOTH(opening_changes_nothing),
      BOTH(create_validates),
      BOTH(dropped_identities_stay_dropped),
      BOTH(adding_partitions_publishes_whole_layouts),
      BOTH(deleting_a_log_is_idempotent),
      BOTH(held_leases_leave_everything_in_place),
      BOTH(drop_with_held_lease_stops),
      BOTH(delete_while_writing),
      BOTH(create_racing_drop),
      cmocka_unit_test(store_faults),
      cmocka_unit_test(late_create_after_drop_stays_dropped),
      cmocka_unit_test(held_create_keeps_its_logs),
      cmocka_unit_test(held_layout_change_keeps_its_logs),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
