/* tarn-sim --catalog: catalog worlds (issue 12; docs/simulation.md "Catalog worlds").
 *
 * The real catalog code (src/log/catalog.c) on three nodes, each with its own
 * metadata session, creating, dropping and growing streams of a small pool of
 * identities, with properties, racing two stepped writers (which resolve a
 * stream's layout at one step and append to it steps later), a trimmer, a
 * reclaimer and a raw writer (another deployment's, appending to log IDs the
 * catalog has not handed out yet), over mem: stores on a simulated clock.
 * Faults: catalog writes that fail, commit with an unknown outcome or are held
 * in flight and land later; writer crashes (the session expires) and
 * restarts; failed object writes. After every step the checker tests:
 *
 *   CatLogIdsUnique          no log ID is named by two streams (any two
 *                            incarnations, ever) nor by a stream after a raw
 *                            writer used its partition (LS-087)
 *   CatDroppedStaysDropped   a create of a dropped identity never succeeds, and
 *                            a stream whose drop returned never reappears (LS-089)
 *   CatNoAckAfterDrop        no append to a log of a stream whose drop returned
 *                            is acknowledged later (LS-046, LS-092)
 *   CatDroppedLogEmpty       a log of a stream whose drop returned has no index
 *                            record (LS-092)
 *   CatReclaimOnlyUnreachable  every index record of a catalog log names a WAL
 *                            object that exists: a reclaimer deletes a dropped
 *                            stream's objects only once no record names them
 *
 * Same seed, same run. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sim_watchdog.h"
#include "tarn/catalog.h"
#include "tarn/entryindex.h"
#include "tarn/key.h"
#include "tarn/lease.h"
#include "tarn/meta.h"
#include "tarn/objstore.h"
#include "tarn/testing.h"
#include "tarn/reclaim.h"
#include "tarn/timing.h"
#include "tarn/trim.h"
#include "tarn/writer.h"
#include "util/clock.h"
#include "util/planted.h"
#include "util/random.h"

#define CS_EPOCH_MS INT64_C(1767225600000)
#define CS_NODES 3
#define CS_WRITERS 2
#define CS_NAMES 10
#define CS_MAXLOG 8192
#define CS_GRACE_MS 61000

#define CS_PROPS(X)                                                                                \
  X(CatLogIdsUnique)                                                                               \
  X(CatDroppedStaysDropped)                                                                        \
  X(CatNoAckAfterDrop) X(CatDroppedLogEmpty) X(CatReclaimOnlyUnreachable) X(CatStepError)
#define CS_ENUM(n) C_##n,
enum { CS_PROPS(CS_ENUM) C_COUNT };
#define CS_NAME(n) #n,
static const char *const cs_prop_names[] = {CS_PROPS(CS_NAME) NULL};

typedef struct cs_ent {
  uint64_t log;
  int writer, status; /* status: 1 pending, 0 acked, <0 failed */
  int raw;            /* the raw writer's */
} cs_ent;

typedef struct cs {
  uint64_t seed, rng, lib_rng, hash;
  int steps, step, bug, verbose, failed;
  int no_held; /* --without held: no catalog write lands late (debugging: tells a
                * late landing from the rest) */
  char failure[768];
  int64_t now;
  char meta_uri[96], wal_uri[96];
  unsigned p_fault, p_crash;
  tarn_meta *nm[CS_NODES];
  tarn_catalog *cat[CS_NODES];
  int held[CS_NODES]; /* a write of this node is held in flight */
  tarn_meta *wm[CS_WRITERS];
  tarn_objstore *wwal[CS_WRITERS];
  tarn_writer *w[CS_WRITERS];
  uint64_t target[CS_WRITERS]; /* the log it resolved (0: none) */
  tarn_meta *cm, *rm, *tm;     /* checker, reclaimer, trimmer */
  tarn_objstore *cwal;
  int drop_done[CS_NAMES];
  int owner[CS_MAXLOG];          /* name + 1 of the stream that named it */
  uint64_t owner_gen[CS_MAXLOG]; /* ... and that stream's first log */
  unsigned char raw[CS_MAXLOG], dead[CS_MAXLOG];
  uint64_t max_id;
  cs_ent *ents;
  size_t nents, capents;
  uint64_t checks[C_COUNT];
  uint64_t creates, drops, adds, acked, appends_failed, raw_appends, reclaimed, trims, crashes,
      landed;
} cs;

static cs *g_cs;

static uint64_t cs_rand(cs *s) {
  uint64_t z = (s->rng += 0x9e3779b97f4a7c15u);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
  return z ^ (z >> 31);
}
static uint64_t below(cs *s, uint64_t n) { return n ? cs_rand(s) % n : 0; }
static int chance(cs *s, unsigned per_mille) { return below(s, 1000) < per_mille; }

static int64_t h_now(void *a) { return ((cs *)a)->now; }
static int64_t h_mono(void *a) { return ((cs *)a)->now - CS_EPOCH_MS + 1000000; }
static void h_sleep(void *a, int64_t ms) {
  if (ms > 0)
    ((cs *)a)->now += ms;
}
static void h_random(void *a, void *p, size_t n) {
  cs *s = a;
  uint8_t *b = p;
  for (size_t i = 0; i < n; i += 8) {
    uint64_t z = (s->lib_rng += 0x9e3779b97f4a7c15u);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    z ^= z >> 31;
    for (size_t k = 0; k < 8 && i + k < n; k++)
      b[i + k] = (uint8_t)(z >> (8 * k));
  }
}

static void trace(cs *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void trace(cs *s, const char *fmt, ...) {
  char line[512];
  int n = snprintf(line, sizeof line, "[%d +%" PRId64 "ms] ", s->step, s->now - CS_EPOCH_MS);
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line + n, sizeof line - (size_t)n, fmt, ap);
  va_end(ap);
  for (const char *p = line; *p; p++)
    s->hash = (s->hash ^ (uint8_t)*p) * 0x100000001b3u;
  if (s->verbose)
    printf("%s\n", line);
}

static void fail(cs *s, int prop, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void fail(cs *s, int prop, const char *fmt, ...) {
  if (s->failed)
    return;
  s->failed = 1;
  int n = snprintf(s->failure, sizeof s->failure, "%s: ", cs_prop_names[prop]);
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(s->failure + n, sizeof s->failure - (size_t)n, fmt, ap);
  va_end(ap);
  trace(s, "VIOLATION %s", s->failure);
}

static int name_of(const char *ns, const char *name) {
  if (strcmp(ns, "cat") || strncmp(name, "s", 1))
    return -1;
  int k = atoi(name + 1);
  return k >= 0 && k < CS_NAMES ? k : -1;
}

/* ---- writers ----------------------------------------------------------------------- */

static void append_cb(void *arg, int status, uint64_t offset, int64_t ts) {
  cs *s = g_cs;
  size_t id = (size_t)(uintptr_t)arg;
  cs_ent *e = &s->ents[id];
  (void)ts;
  e->status = status;
  trace(s, "  entry %zu (log %" PRIu64 ") -> %d at %" PRIu64, id, e->log, status, offset);
  if (status == 0) {
    s->acked++;
    /* its partition now holds a record: the catalog must skip this ID (an
     * ID handed out before that is a race LS-087 cannot prevent) */
    if (e->raw && e->log < CS_MAXLOG && !s->owner[e->log])
      s->raw[e->log] = 1;
    s->checks[C_CatNoAckAfterDrop]++;
    if (e->log < CS_MAXLOG && s->dead[e->log])
      fail(s, C_CatNoAckAfterDrop,
           "entry %zu acknowledged in log %" PRIu64 " after the drop of its stream returned", id,
           e->log);
  } else {
    s->appends_failed++;
  }
}

static void writer_open(cs *s, int i) {
  tarn_writer_options o;
  tarn_writer_options_default(&o);
  o.stepped = 1;
  o.batch_ms = (uint32_t)(20 + below(s, 200));
  o.max_logs_per_object = 1 + below(s, 3);
  o.max_bytes_in_flight = 8192;
  o.object_retries = (int)below(s, 2);
  o.max_publish_delay_ms = 30000;
  o.max_put_ms = 10000;
  if (tarn_meta_open(s->meta_uri, &s->wm[i]) || tarn_objstore_open(s->wal_uri, &s->wwal[i]) ||
      tarn_writer_open(s->wm[i], s->wwal[i], &o, &s->w[i])) {
    fprintf(stderr, "tarn-sim --catalog: writer: %s\n", tarn_errmsg());
    abort();
  }
  s->target[i] = 0;
  trace(s, "w%d open", i);
}

static void writer_end(cs *s, int i, int crash) {
  int rc = 0;
  if (crash) {
    tarn_writer_discard(s->w[i]);
    tarn_meta_inject_fault(s->wm[i], TARN_META_FAULT_EXPIRE_SESSION, 0);
    for (size_t k = 0; k < s->nents; k++)
      if (s->ents[k].writer == i && s->ents[k].status == 1)
        s->ents[k].status = TARN_EUNKNOWN;
    s->crashes++;
  } else {
    rc = tarn_writer_close(s->w[i]);
  }
  tarn_meta_close(s->wm[i]);
  tarn_objstore_close(s->wwal[i]);
  trace(s, "w%d %s -> %d", i, crash ? "CRASH (its session expires)" : "close", rc);
  writer_open(s, i);
}

static void append(cs *s, int i, uint64_t log, int raw) {
  if (s->nents == s->capents) {
    s->capents = s->capents ? 2 * s->capents : 1024;
    s->ents = realloc(s->ents, s->capents * sizeof *s->ents);
    if (!s->ents)
      abort();
  }
  size_t id = s->nents++;
  s->ents[id] = (cs_ent){.log = log, .writer = i, .status = 1, .raw = raw};
  uint8_t p[48];
  size_t len = 8 + below(s, 40);
  for (size_t k = 0; k < len; k++)
    p[k] = (uint8_t)(id * 31 + k);
  int rc = tarn_writer_append(s->w[i], log, p, len, 1, append_cb, (void *)(uintptr_t)id);
  trace(s, "w%d append entry %zu to log %" PRIu64 " -> %d", i, id, log, rc);
  if (rc) {
    s->ents[id].status = rc;
    s->target[i] = 0;
  }
}

/* Resolves a stream's layout now, appends to it later (a drop may come between). */
static void act_writer(cs *s, int i) {
  if (chance(s, 30)) {
    writer_end(s, i, chance(s, s->p_crash * 10));
    return;
  }
  uint64_t k = below(s, 10);
  if (k < 3) {
    if (!s->target[i] || chance(s, 300)) {
      char name[16];
      snprintf(name, sizeof name, "s%d", (int)below(s, CS_NAMES));
      tarn_catalog *c;
      tarn_catalog_record r;
      if (tarn_catalog_open(s->wm[i], NULL, &c))
        abort();
      int rc = tarn_catalog_open_stream(c, "cat", name, &r);
      tarn_catalog_close(c);
      if (rc == 0) {
        if (r.state == TARN_STREAM_ACTIVE)
          s->target[i] = r.logs[below(s, r.n_logs)];
        tarn_catalog_record_free(&r);
      }
      trace(s, "w%d resolves cat/%s -> %d, target log %" PRIu64, i, name, rc, s->target[i]);
      return;
    }
    if (chance(s, 100))
      tarn_objstore_mem_fault(s->wwal[i], TARN_MEM_OP_PUT, 1, 1, TARN_MEM_FAULT_BEFORE, TARN_EIO);
    append(s, i, s->target[i], 0);
  } else if (k < 4 && chance(s, 200)) {
    /* the raw writer: a log ID past every one seen, not the catalog's (LS-087) */
    uint64_t log = s->max_id + 1 + below(s, 3);
    if (log < CS_MAXLOG) {
      s->raw_appends++;
      trace(s, "w%d is a raw writer for log %" PRIu64, i, log);
      append(s, i, log, 1);
    }
  } else {
    int unit = (int)below(s, 4);
    if (unit == TARN_WRITER_STEP_SEAL_DUE)
      unit = TARN_WRITER_STEP_SEAL;
    int rc = tarn_writer_step(s->w[i], unit);
    if (rc < 0)
      trace(s, "w%d step %d -> %d", i, unit, rc);
  }
}

/* ---- catalog nodes ------------------------------------------------------------------ */

static int tombstoned(cs *s, const char *name) {
  tarn_catalog *c;
  if (tarn_catalog_open(s->cm, NULL, &c))
    abort();
  int rc = tarn_catalog_is_dropped(c, "cat", name);
  tarn_catalog_close(c);
  return rc == 1;
}

static void act_node(cs *s, int i) {
  tarn_meta *m = s->nm[i];
  if (s->held[i] && chance(s, 300)) {
    int rc = tarn_meta_inject_fault(m, TARN_META_FAULT_LAND, 0);
    trace(s, "c%d's held writes land -> %d", i, rc);
    s->held[i] = 0;
    s->landed++;
    return;
  }
  int kind = 0;
  if (chance(s, s->p_fault)) {
    uint64_t f = below(s, 10);
    kind = f < 4                               ? TARN_META_FAULT_FAIL
           : f < 8 || s->held[i] || s->no_held ? TARN_META_FAULT_COMMIT_UNKNOWN
                                               : TARN_META_FAULT_DELAY_COMMIT;
    int skip = (int)below(s, 6);
    tarn_meta_inject_fault_after(m, kind, skip, 1);
    trace(s, "  fault: c%d's write %d %s", i, skip + 1,
          kind == TARN_META_FAULT_FAIL             ? "fails"
          : kind == TARN_META_FAULT_COMMIT_UNKNOWN ? "commits, reports unknown"
                                                   : "is held");
  }
  int n = (int)below(s, CS_NAMES);
  char name[16];
  snprintf(name, sizeof name, "s%d", n);
  uint64_t op = below(s, 10);
  int rc;
  if (op < 5) {
    int before = tombstoned(s, name);
    uint32_t parts = 1 + (uint32_t)below(s, 3);
    tarn_stream_prop prop = {.key = "retention.ms", .value = "3600000"};
    rc = tarn_catalog_create_stream(s->cat[i], "cat", name, parts, &prop, below(s, 2), NULL);
    trace(s, "c%d create cat/%s (%u partitions) -> %d", i, name, parts, rc);
    s->checks[C_CatDroppedStaysDropped]++;
    if (rc == 0) {
      s->creates++;
      if (before || s->drop_done[n])
        fail(s, C_CatDroppedStaysDropped, "cat/%s was created although it had been dropped", name);
    }
  } else if (op < 7) {
    rc = tarn_catalog_add_partitions(s->cat[i], "cat", name, 1, NULL);
    trace(s, "c%d add a partition to cat/%s -> %d", i, name, rc);
    s->adds += rc == 0;
  } else {
    int existed = 0;
    rc = tarn_catalog_drop_stream(s->cat[i], "cat", name, &existed);
    trace(s, "c%d drop cat/%s -> %d (existed %d)", i, name, rc, existed);
    if (rc == 0) {
      s->drops++;
      s->drop_done[n] = 1;
      for (uint64_t l = 1; l <= s->max_id && l < CS_MAXLOG; l++)
        if (s->owner[l] == n + 1)
          s->dead[l] = 1;
    }
  }
  /* a held write stays held (and a fault not yet struck armed) until it lands */
  if (kind == TARN_META_FAULT_DELAY_COMMIT)
    s->held[i] = 1;
  else
    tarn_meta_inject_fault(m, TARN_META_FAULT_NONE, 0);
}

/* ---- trimmer and reclaimer ----------------------------------------------------------- */

static void act_trim(cs *s) {
  uint64_t log = 1 + below(s, s->max_id ? s->max_id : 1);
  tarn_lease *l;
  int rc = tarn_lease_acquire(s->tm, log, &l);
  if (rc) {
    trace(s, "trimmer: lease on log %" PRIu64 " -> %d", log, rc);
    return;
  }
  uint64_t stored = 0;
  rc = tarn_soft_trim(s->tm, l, below(s, 20), &stored);
  trace(s, "trimmer: soft trim of log %" PRIu64 " -> %d (B = %" PRIu64 ")", log, rc, stored);
  s->trims += rc == 0;
  tarn_lease_release(l);
}

static void check_reclaim(cs *s);

static void act_reclaim(cs *s) {
  tarn_reclaim_options o;
  tarn_reclaim_options_default(&o);
  o.wal_grace_ms = CS_GRACE_MS;
  o.orphans = 0;
  tarn_reclaim_stats st = {0};
  int rc = tarn_reclaim_pass(s->rm, s->cwal, s->cwal, &o, &st);
  trace(s, "reclaimer pass -> %d (%" PRIu64 " WAL objects deleted)", rc, st.wal_deleted);
  s->reclaimed += st.wal_deleted;
  check_reclaim(s);
}

/* ---- the checker --------------------------------------------------------------------- */

/* Every step: the layouts of all streams against every layout seen before. */
static void check_layouts(cs *s) {
  tarn_catalog *c;
  tarn_catalog_record *v;
  size_t n;
  if (tarn_catalog_open(s->cm, NULL, &c))
    abort();
  int rc = tarn_catalog_list_streams(c, &v, &n);
  tarn_catalog_close(c);
  if (rc) {
    fail(s, C_CatStepError, "listing streams: %s", tarn_errmsg());
    return;
  }
  for (size_t k = 0; k < n && !s->failed; k++) {
    int nm = name_of(v[k].ns, v[k].name);
    if (nm < 0)
      continue;
    s->checks[C_CatDroppedStaysDropped]++;
    if (s->drop_done[nm])
      fail(s, C_CatDroppedStaysDropped, "cat/%s is listed (state %d) after its drop returned",
           v[k].name, (int)v[k].state);
    for (size_t p = 0; p < v[k].n_logs && !s->failed; p++) {
      uint64_t l = v[k].logs[p];
      s->checks[C_CatLogIdsUnique]++;
      if (l >= CS_MAXLOG)
        continue;
      if (l > s->max_id)
        s->max_id = l;
      if (s->raw[l])
        fail(s, C_CatLogIdsUnique,
             "cat/%s partition %zu is log %" PRIu64 ", whose partition a raw writer had used",
             v[k].name, p, l);
      else if (!s->owner[l])
        s->owner[l] = nm + 1, s->owner_gen[l] = v[k].logs[0];
      else if (s->owner[l] != nm + 1 || s->owner_gen[l] != v[k].logs[0])
        fail(s, C_CatLogIdsUnique,
             "log %" PRIu64 " is named by cat/%s (first log %" PRIu64
             ") and was by cat/s%d (first log %" PRIu64 ")",
             l, v[k].name, v[k].logs[0], s->owner[l] - 1, s->owner_gen[l]);
    }
  }
  tarn_catalog_records_free(v, n);
}

/* The index records of every catalog log: none in a dropped stream's logs,
 * and every other names an existing WAL object. */
static void check_reclaim(cs *s) {
  for (uint64_t l = 1; l <= s->max_id && l < CS_MAXLOG && !s->failed; l++) {
    if (!s->owner[l])
      continue;
    char part[TARN_KEY_PARTITION_LEN + 1], a[TARN_KEY_LEN + 1], z[TARN_KEY_LEN + 1];
    tarn_key_partition(part, l);
    tarn_key_format(a, l, 0, 0);
    tarn_key_format(z, l, TARN_KEY_MAX, TARN_KEY_MAX);
    tarn_meta_recs rs = {0};
    if (tarn_meta_scan(s->cm, part, a, z, 0, 0, &rs)) {
      fail(s, C_CatStepError, "scanning log %" PRIu64 ": %s", l, tarn_errmsg());
      return;
    }
    s->checks[C_CatDroppedLogEmpty]++;
    if (s->dead[l] && rs.n)
      fail(s, C_CatDroppedLogEmpty,
           "log %" PRIu64 " of dropped cat/s%d still has %zu index "
           "records",
           l, s->owner[l] - 1, rs.n);
    for (size_t k = 0; k < rs.n && !s->failed; k++) {
      tarn_entry_index ei;
      if (tarn_entry_index_decode(rs.v[k].value, rs.v[k].value_len, &ei))
        continue;
      uint64_t size;
      s->checks[C_CatReclaimOnlyUnreachable]++;
      if (ei.location && tarn_objstore_head(s->cwal, ei.location, &size) != 0)
        fail(s, C_CatReclaimOnlyUnreachable,
             "log %" PRIu64 " (cat/s%d) has index record %s "
             "naming WAL object %s, which was deleted",
             l, s->owner[l] - 1, rs.v[k].key, ei.location);
      tarn_entry_index_free(&ei);
    }
    tarn_meta_recs_free(&rs);
  }
}

/* ---- the run --------------------------------------------------------------------------- */

static int cs_run(cs *s) {
  static unsigned run_no;
  g_cs = s;
  s->rng = s->seed * 0x9e3779b97f4a7c15u + 7;
  s->lib_rng = s->seed ^ 0x2545f4914f6cdd1du;
  s->hash = 0xcbf29ce484222325u;
  s->now = CS_EPOCH_MS;
  s->p_fault = (unsigned)below(s, 200);
  s->p_crash = (unsigned)below(s, 30);
#ifdef TARN_PLANTED_BUGS
  tarn__planted_bug = s->bug;
#endif
  run_no++;
  snprintf(s->meta_uri, sizeof s->meta_uri, "mem:cs-%u-%" PRIu64 "?session_timeout_ms=600000",
           run_no, s->seed);
  snprintf(s->wal_uri, sizeof s->wal_uri, "mem:cs-wal-%u-%" PRIu64, run_no, s->seed);
  tarn__clock_hooks h = {h_now, h_mono, h_sleep, s};
  tarn__clock_set(&h);
  tarn__clock_set_store(h_now, s);
  tarn__random_set_hook(h_random, s);
  if (tarn_meta_open(s->meta_uri, &s->cm) || tarn_meta_open(s->meta_uri, &s->rm) ||
      tarn_meta_open(s->meta_uri, &s->tm) || tarn_objstore_open(s->wal_uri, &s->cwal))
    return -1;
  tarn_catalog *c0;
  tarn_timing tm = {.wal_grace_ms = CS_GRACE_MS,
                    .max_publish_delay_ms = 30000,
                    .max_put_ms = 10000,
                    .skew_allowance_ms = 10000};
  if (tarn_catalog_open(s->cm, NULL, &c0) || tarn_catalog_init(c0, NULL) ||
      tarn_timing_record(s->cm, &tm, NULL)) {
    fprintf(stderr, "tarn-sim --catalog: %s\n", tarn_errmsg());
    return -1;
  }
  tarn_catalog_close(c0);
  tarn_catalog_options co = {.drain_timeout_ms = 1000, .drain_poll_ms = 200};
  for (int i = 0; i < CS_NODES; i++)
    if (tarn_meta_open(s->meta_uri, &s->nm[i]) || tarn_catalog_open(s->nm[i], &co, &s->cat[i]))
      return -1;
  for (int i = 0; i < CS_WRITERS; i++)
    writer_open(s, i);
  trace(s, "seed %" PRIu64 " bug %s: catalog faults %u/1000, writer crashes %u/1000", s->seed,
        tarn__planted_names[s->bug], s->p_fault, s->p_crash * 10);
  for (s->step = 1; s->step <= s->steps && !s->failed; s->step++) {
    sim_watchdog_pet(s->step);
    s->now += 1 + (int64_t)below(s, 400);
    uint64_t k = below(s, 100);
    if (k < 35)
      act_node(s, (int)below(s, CS_NODES));
    else if (k < 85)
      act_writer(s, (int)below(s, CS_WRITERS));
    else if (k < 92)
      act_trim(s);
    else
      act_reclaim(s);
    if (!s->failed)
      check_layouts(s);
    if (!s->failed && s->step % 32 == 0)
      check_reclaim(s);
  }
  /* settle: the writers close, held writes land, two reclaimer passes a grace apart */
  if (!s->failed) {
    s->step = s->steps + 1;
    sim_watchdog_pet(s->step);
    for (int i = 0; i < CS_WRITERS && !s->failed; i++) {
      int rc = tarn_writer_close(s->w[i]);
      trace(s, "w%d close -> %d", i, rc);
      s->w[i] = NULL;
    }
    for (int i = 0; i < CS_NODES; i++)
      tarn_meta_inject_fault(s->nm[i], TARN_META_FAULT_LAND, 0);
    for (int r = 0; r < 2 && !s->failed; r++) {
      s->now += CS_GRACE_MS + 1000;
      act_reclaim(s);
    }
    if (!s->failed)
      check_layouts(s);
  }
  trace(s, "end: %s", s->failed ? "FAILED" : "ok");
  return s->failed;
}

static void cs_free(cs *s) {
  for (int i = 0; i < CS_WRITERS; i++) {
    if (s->w[i])
      tarn_writer_discard(s->w[i]);
    tarn_meta_close(s->wm[i]);
    tarn_objstore_close(s->wwal[i]);
  }
  for (int i = 0; i < CS_NODES; i++) {
    tarn_catalog_close(s->cat[i]);
    tarn_meta_close(s->nm[i]);
  }
  tarn_meta_close(s->cm);
  tarn_meta_close(s->rm);
  tarn_meta_close(s->tm);
  tarn_objstore_close(s->cwal);
  free(s->ents);
}

int sim_catalog_main(int argc, char **argv);
int sim_catalog_main(int argc, char **argv) {
  uint64_t a = 0, b = 0;
  int steps = 2000, verbose = 0, bug = 0, expect_fail = 0, determinism = 0, no_held = 0;
  for (int i = 1; i < argc; i++) {
    const char *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(argv[i], "--seed") && v)
      a = b = strtoull(argv[++i], NULL, 10);
    else if (!strcmp(argv[i], "--seeds") && v) {
      char *end;
      a = strtoull(argv[++i], &end, 10);
      b = strncmp(end, "..", 2) ? a : strtoull(end + 2, NULL, 10);
    } else if (!strcmp(argv[i], "--steps") && v)
      steps = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--trace"))
      verbose = 1;
    else if (!strcmp(argv[i], "--without") && v && !strcmp(v, "held"))
      no_held = 1, i++;
    else if (!strcmp(argv[i], "--expect-fail"))
      expect_fail = 1;
    else if (!strcmp(argv[i], "--check-determinism"))
      determinism = 1;
    else if (!strcmp(argv[i], "--bug") && v) {
      for (bug = 0; tarn__planted_names[bug] && strcmp(tarn__planted_names[bug], v); bug++) {
      }
      if (!tarn__planted_names[bug]) {
        fprintf(stderr, "tarn-sim --catalog: unknown bug %s\n", v);
        return 2;
      }
#ifndef TARN_PLANTED_BUGS
      if (bug) {
        fprintf(stderr, "tarn-sim: planted bugs need tarn-sim-planted\n");
        return 2;
      }
#endif
      i++;
    } else {
      fprintf(stderr, "usage: tarn-sim --catalog (--seed N | --seeds A..B) [--steps N] "
                      "[--trace] [--bug NAME] [--expect-fail] [--check-determinism]\n");
      return 2;
    }
  }
  if (!a || b < a || steps < 1) {
    fprintf(stderr, "tarn-sim --catalog: give --seed N or --seeds A..B (from 1)\n");
    return 2;
  }
  static char extra[96];
  snprintf(extra, sizeof extra, "%s%s%s", bug ? " --bug " : "", bug ? tarn__planted_names[bug] : "",
           no_held ? " --without held" : "");
  sim_watchdog_start(bug ? "tarn-sim-planted --catalog" : "tarn-sim --catalog", extra, 30000,
                     expect_fail);
  clock_t t0 = clock();
  long total = 0;
  uint64_t checks[C_COUNT] = {0}, creates = 0, drops = 0, adds = 0, acked = 0, failed = 0, raw = 0,
           reclaimed = 0, trims = 0, crashes = 0, landed = 0;
  for (uint64_t seed = a; seed <= b; seed++) {
    cs s = {
        .seed = seed, .steps = steps, .bug = bug, .verbose = verbose && a == b, .no_held = no_held};
    sim_watchdog_run(seed, NULL, NULL);
    int f = cs_run(&s);
    if (f < 0) {
      cs_free(&s);
      return 1;
    }
    if (determinism && !f) {
      cs t = {.seed = seed, .steps = steps, .bug = bug, .no_held = no_held};
      cs_run(&t);
      int same = t.hash == s.hash;
      cs_free(&t);
      if (!same) {
        printf("tarn-sim --catalog: seed %" PRIu64 " is not deterministic\n", seed);
        cs_free(&s);
        return 1;
      }
    }
    total += s.step > s.steps ? s.steps : s.step;
    for (int p = 0; p < C_COUNT; p++)
      checks[p] += s.checks[p];
    creates += s.creates, drops += s.drops, adds += s.adds, acked += s.acked;
    failed += s.appends_failed, raw += s.raw_appends, reclaimed += s.reclaimed;
    trims += s.trims, crashes += s.crashes, landed += s.landed;
    if (f) {
      printf("tarn-sim --catalog: seed %" PRIu64 " FAILED at step %d: %s\n", seed, s.step,
             s.failure);
      printf("replay: tarn-sim%s --catalog --seed %" PRIu64 " --steps %d%s%s%s --trace\n",
             bug ? "-planted" : "", seed, s.step > s.steps ? s.steps : s.step, bug ? " --bug " : "",
             bug ? tarn__planted_names[bug] : "", no_held ? " --without held" : "");
      cs_free(&s);
      return expect_fail ? 0 : 1;
    }
    if (a == b)
      printf("tarn-sim --catalog: seed %" PRIu64 " ok, %d steps, trace hash %016" PRIx64 "\n", seed,
             steps, s.hash);
    cs_free(&s);
  }
  printf("tarn-sim --catalog: seeds %" PRIu64 "..%" PRIu64 ": %ld steps, no violation (%.1f s)\n",
         a, b, total, (double)(clock() - t0) / CLOCKS_PER_SEC);
  printf("tarn-sim --catalog: exercised: %" PRIu64 " streams created, %" PRIu64 " dropped, %" PRIu64
         " partitions added; %" PRIu64 " appends acknowledged, %" PRIu64 " failed, %" PRIu64
         " raw-writer appends; %" PRIu64 " soft trims; %" PRIu64 " WAL objects reclaimed; %" PRIu64
         " writer crashes; %" PRIu64 " held catalog writes landed\n",
         creates, drops, adds, acked, failed, raw, trims, reclaimed, crashes, landed);
  printf("tarn-sim --catalog: properties checked:");
  for (int p = 0; p < C_COUNT; p++)
    printf(" %s=%" PRIu64, cs_prop_names[p], checks[p]);
  printf("\n");
  if (expect_fail) {
    printf("tarn-sim --catalog: expected a failure within the budget, found none\n");
    return 1;
  }
  return 0;
}
