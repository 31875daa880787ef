/* Reclamation: compacted files of trimmed records, unreferenced WAL objects,
 * orphan compacted files (spec "Deleting compacted objects", "Reclaiming WAL
 * objects"; LS-082 … LS-086; docs/compaction.md). */
#define _POSIX_C_SOURCE 200809L
#include "tarn/reclaim.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log/index_scan.h"
#include "log/compactor_intent.h"
#include "log/reclaim_wait.h"
#include "log/reclaim_mark.h"
#include "log/root_mark.h"
#include "tarn/catalog.h"
#include "tarn/deployment.h"
#include "tarn/fileindex.h"
#include "tarn/key.h"
#include "tarn/lease.h"
#include "tarn/tasks.h"
#include "tarn/timing.h"
#include "tarn/trim.h"
#include "tarn/wal.h"
#include "util/clock.h"
#include "util/error.h"
#include "util/planted.h"
#include "util/random.h"

#define LIST_PAGE 1000

void tarn_reclaim_options_default(tarn_reclaim_options *o) {
  memset(o, 0, sizeof *o);
  o->wal_grace_ms = 600000;
  o->orphan_grace_ms = 3600000;
  o->intent_grace_ms = 600000;
  o->trimmed_files = o->wal = o->orphans = 1;
}

/* ---- a sorted set of strings, each with a size ---------------------------- */

typedef struct sent {
  char *s;
  uint64_t size; /* of the object named s, where the set holds objects */
} sent;

typedef struct strset {
  sent *v;
  size_t n, cap;
  int sorted;
} strset;

static int set_add_sized(strset *s, const char *x, uint64_t size) {
  if (s->n == s->cap) {
    size_t nc = s->cap ? s->cap * 2 : 256;
    sent *nv = realloc(s->v, nc * sizeof *nv);
    if (!nv)
      return tarn__err(TARN_ENOMEM, "out of memory");
    s->v = nv;
    s->cap = nc;
  }
  if (!(s->v[s->n].s = strdup(x)))
    return tarn__err(TARN_ENOMEM, "out of memory");
  s->v[s->n++].size = size;
  s->sorted = 0;
  return 0;
}

static int set_add(strset *s, const char *x) { return set_add_sized(s, x, 0); }

static int cmpent(const void *a, const void *b) {
  return strcmp(((const sent *)a)->s, ((const sent *)b)->s);
}

static void set_sort(strset *s) {
  if (!s->sorted) {
    if (s->n)
      qsort(s->v, s->n, sizeof *s->v, cmpent);
    s->sorted = 1;
  }
}

static sent *set_find(strset *s, const char *x) {
  set_sort(s);
  sent key = {(char *)x, 0};
  return s->n ? bsearch(&key, s->v, s->n, sizeof *s->v, cmpent) : NULL;
}

static int set_has(strset *s, const char *x) { return set_find(s, x) != NULL; }

static void set_free(strset *s) {
  for (size_t i = 0; i < s->n; i++)
    free(s->v[i].s);
  free(s->v);
  memset(s, 0, sizeof *s);
}

/* The last segment of a name: compacted file names are unique by their
 * random part, so a file is known by its base name whatever its directory. */
static const char *base_of(const char *name) {
  const char *sl = strrchr(name, '/');
  return sl ? sl + 1 : name;
}

/* "x.parquet" for "x.parquet" and "x.index"; NULL for other names. */
static int parquet_name(const char *base, char *out, size_t n) {
  size_t l = strlen(base);
  if (l > 8 && strcmp(base + l - 8, ".parquet") == 0) {
    snprintf(out, n, "%s", base);
    return 1;
  }
  if (l > 6 && strcmp(base + l - 6, ".index") == 0) {
    snprintf(out, n, "%.*s.parquet", (int)(l - 6), base);
    return 1;
  }
  return 0;
}

/* ---- what the index names ------------------------------------------------ */

typedef struct refs {
  strset wal;     /* RAW locations */
  strset files;   /* base names of compacted files named by records or open tasks */
  strset intents; /* tags "{L}-{id}" of live compaction intents */
  uint64_t records;
} refs;

static void refs_free(refs *r) {
  set_free(&r->wal);
  set_free(&r->files);
  set_free(&r->intents);
}

/* Whether a compacted file (its Parquet base name) is named by a record or
 * an open task, or belongs to a live intent. */
static int file_named(refs *r, const char *pq) {
  char tag[64];
  return set_has(&r->files, pq) ||
         (tarn__intent_tag_of_file(pq, tag, sizeof tag) && set_has(&r->intents, tag));
}

static int add_file_index(strset *files, const char *b64) {
  tarn_file_index fi;
  int rc = tarn_file_index_decode_base64(b64, strlen(b64), &fi);
  if (rc)
    return rc;
  for (size_t i = 0; !rc && i < fi.n; i++)
    rc = set_add(files, base_of(fi.files[i].name));
  tarn_file_index_free(&fi);
  return rc;
}

static int refs_cb(void *ctx, const tarn__ixrec *x) {
  refs *r = ctx;
  r->records++;
  if (x->version == 3) {
    if (x->ei.location && x->file_type == TARN_FILE_RAW)
      return set_add(&r->wal, x->ei.location);
    if (x->ei.file_index)
      return add_file_index(&r->files, x->ei.file_index);
    return 0;
  }
  return x->lv.location
             ? set_add(x->file_type == TARN_FILE_RAW ? &r->wal : &r->files, x->lv.location)
             : 0;
}

/* The logs to scan: 1 .. the catalog's counter - 1, and the extra ones.
 * *known = 0 without a catalog counter. */
static int log_range(tarn_meta *m, const tarn_reclaim_options *o, uint64_t *next, int *known) {
  tarn_meta_rec r = {0};
  *next = 1;
  int rc = tarn_meta_get(m, TARN_CATALOG_PARTITION, "/catalog/log-id-counter", &r);
  if (rc == TARN_ENOTFOUND) {
    *known = 0;
    return 0;
  }
  if (rc)
    return rc;
  tarn_catalog_record cr;
  rc = tarn_catalog_record_decode(r.value, r.value_len, &cr);
  tarn_meta_rec_free(&r);
  if (rc)
    return tarn__errctx(rc, "the catalog's log-ID counter");
  *next = cr.next_log_id;
  tarn_catalog_record_free(&cr);
  *known = 1;
  return 0;
}

static int first_seen(tarn_meta *m, char kind, const char *name, int64_t now, int dry, int restamp,
                      int *conflict, int64_t *at);
static int forget_seen(tarn_meta *m, char kind, const char *name);

/* LS-084: the files of compactions in progress. An intent lives while the
 * lock it was written under exists, and for intent_grace_ms after this
 * reclaimer first saw that lock gone — no compaction installs without its
 * lock, and a write it issued before losing it has landed by then
 * (docs/compaction.md, "Intents"). A dead intent is removed (not in a dry
 * run): its compaction can never install, so its files are orphans. */
static int intent_refs(tarn_meta *m, const tarn_reclaim_options *o, int64_t now, strset *tags) {
  tarn__intent *v = NULL;
  size_t n = 0;
  int rc = tarn__intents_list(m, &v, &n);
  for (size_t i = 0; i < n && !rc; i++) {
    int held = 0;
    int64_t at = now;
    if ((rc = tarn__intent_lock_held(m, &v[i], &held)))
      break;
    if (held)
      rc = o->dry_run ? 0 : forget_seen(m, 'i', v[i].key);
    else
      rc = first_seen(m, 'i', v[i].key, now, o->dry_run, 0, NULL, &at);
    if (rc)
      break;
    if (held || now - at < o->intent_grace_ms + tarn_meta_clock_tick_ms(m)) {
      char tag[64];
      tarn__intent_tag(v[i].log_id, v[i].id, tag, sizeof tag);
      rc = set_add(tags, tag);
    } else if (!o->dry_run) {
      rc = tarn__intent_drop(m, v[i].log_id, v[i].id);
      if (!rc)
        rc = forget_seen(m, 'i', v[i].key);
    }
  }
  tarn__intents_free(v, n);
  return rc;
}

static int collect_refs(tarn_meta *m, const tarn_reclaim_options *o, uint64_t next, int64_t now,
                        refs *r, tarn_reclaim_stats *st) {
  /* LS-084: files a compaction in progress or an open task can still install
   * are never orphans. Read before the index: a compaction installs (and a
   * task leaves PREPARED) only after its record names the files, so each
   * file is found in one place or the other. */
  int rc =
      TARN__PLANTED(TARN__BUG_RECLAIM_IGNORES_INTENTS) ? 0 : intent_refs(m, o, now, &r->intents);
  tarn_task *t = NULL;
  size_t n = 0;
  if (!rc)
    rc = tarn_tasks_list(m, &t, &n);
  for (size_t i = 0; i < n && !rc; i++)
    if (t[i].state == TARN_TASK_INIT || t[i].state == TARN_TASK_PREPARED)
      for (size_t j = 0; j < t[i].range.n_files && !rc; j++)
        rc = set_add(&r->files, base_of(t[i].range.files[j].name));
  tarn_tasks_free(t, n);
  for (uint64_t l = 1; l < next && !rc; l++, st->logs_scanned++)
    rc = o->stop && o->stop(o->stop_ctx) ? tarn__err(TARN_ECLOSED, "reclaim: stopped")
                                         : tarn__index_scan(m, l, NULL, NULL, refs_cb, r);
  for (size_t i = 0; i < o->n_extra_logs && !rc; i++, st->logs_scanned++)
    rc = tarn__index_scan(m, o->extra_logs[i], NULL, NULL, refs_cb, r);
  st->index_records += r->records;
  return rc;
}

/* The logs with a section in WAL object name of size bytes (from its head;
 * none when the bytes are no WAL object). A RAW record naming an object is a
 * record of a log with a section in it, so scanning these logs finds every
 * record that can name the object, also of logs the catalog does not know
 * (LS-085). The size is the listing's: objects are written once, so no HEAD. */
static int object_logs(tarn_objstore *wal, const char *name, uint64_t size, uint64_t **logs,
                       size_t *n) {
  *logs = NULL;
  *n = 0;
  uint64_t head_len;
  tarn_buf h = TARN_BUF_INIT;
  int rc = tarn_objstore_get_range(wal, name, 0, TARN_WAL_PROBE_LEN, &h);
  if (!rc &&
      (tarn_wal_head_length(h.data, h.len, size, &head_len) || head_len > ((uint64_t)64 << 20))) {
    tarn_buf_free(&h);
    return 0;
  }
  if (!rc && head_len != h.len)
    rc = tarn_objstore_get_range(wal, name, 0, head_len, &h);
  tarn_wal w;
  if (!rc && tarn_wal_decode_index(h.data, h.len, size, &w) == 0) {
    if (w.section_count && !(*logs = calloc(w.section_count, sizeof **logs)))
      rc = tarn__err(TARN_ENOMEM, "out of memory");
    for (size_t i = 0; !rc && i < w.section_count; i++)
      (*logs)[(*n)++] = w.sections[i].log_id;
    tarn_wal_free(&w);
  }
  tarn_buf_free(&h);
  return rc == TARN_ENOTFOUND ? 0 : rc;
}

/* Adds to r the records of the logs named in the candidates' heads that the
 * catalog range and extra_logs do not cover. */
static int refs_from_heads(tarn_meta *m, tarn_objstore *wal, const tarn_reclaim_options *o,
                           uint64_t next, const strset *cands, refs *r, tarn_reclaim_stats *st) {
  uint64_t *seen = NULL;
  size_t nseen = 0;
  int rc = 0;
  for (size_t i = 0; i < cands->n && !rc; i++) {
    uint64_t *logs;
    size_t n;
    if ((rc = object_logs(wal, cands->v[i].s, cands->v[i].size, &logs, &n)))
      break;
    for (size_t j = 0; j < n && !rc; j++) {
      uint64_t l = logs[j];
      int known = l >= 1 && l < next;
      for (size_t k = 0; !known && k < o->n_extra_logs; k++)
        known = o->extra_logs[k] == l;
      for (size_t k = 0; !known && k < nseen; k++)
        known = seen[k] == l;
      if (known)
        continue;
      uint64_t *ns = realloc(seen, (nseen + 1) * sizeof *ns);
      if (!ns) {
        rc = tarn__err(TARN_ENOMEM, "out of memory");
        break;
      }
      seen = ns;
      seen[nseen++] = l;
      st->logs_scanned++;
      rc = tarn__index_scan(m, l, NULL, NULL, refs_cb, r);
    }
    free(logs);
  }
  free(seen);
  return rc;
}

/* ---- first-seen records -------------------------------------------------- */

static char *seen_key(char kind, const char *name) {
  size_t n = strlen(name);
  char *k = malloc(2 * n + 3);
  if (!k)
    return NULL;
  k[0] = kind;
  k[1] = '-';
  for (size_t i = 0; i < n; i++)
    snprintf(k + 2 + 2 * i, 3, "%02x", (unsigned char)name[i]);
  k[2 + 2 * n] = 0;
  return k;
}

/* A first-seen record's value: "{ms}" — unconfirmed: written by a create
 * whose landing time nobody knows (the form every stamp had before) — or
 * "{ms} confirmed". Total: 0 and *ok = 1 for those two forms, with *ms and
 * *confirmed set; *ok = 0 for any other bytes (a damaged record is taken for
 * a fresh unconfirmed stamp: it restarts the grace, never shortens it). */
#define SEEN_CONFIRMED " confirmed"
static void seen_decode(const uint8_t *v, size_t len, int64_t *ms, int *confirmed, int *ok) {
  size_t i = 0, cl = sizeof SEEN_CONFIRMED - 1;
  int64_t t = 0;
  *ok = *confirmed = 0;
  *ms = 0;
  if (len > cl && memcmp(v + len - cl, SEEN_CONFIRMED, cl) == 0) {
    *confirmed = 1;
    len -= cl;
  }
  if (len == 0 || len > 18) /* 18 digits: no overflow, far beyond any clock */
    return;
  for (; i < len; i++) {
    if (v[i] < '0' || v[i] > '9')
      return;
    t = t * 10 + (v[i] - '0');
  }
  *ms = t;
  *ok = 1;
}

/* When name was first seen unreferenced, on the store's clock, for the grace
 * (LS-086) — counted from the stamp's CONFIRMATION, never from its creation.
 * A never-seen name gets an unconfirmed stamp (create-only; unless dry) and
 * *at = now. A pass that reads an unconfirmed stamp while it sees the name
 * unreferenced confirms it: compare-and-set on the version it read, to
 * "{now} confirmed"; *at = now. Only a confirmed stamp's time is returned.
 *
 * Why (issue 12): a create of unknown outcome can land long after its caller
 * gave up — after a later pass saw the name referenced and forgot the stamp.
 * Its value is then an old time that says nothing: the object was named in
 * between, and trusting it would count the grace from before the record that
 * named it was retired. A confirmation is made only by a pass whose own
 * scan of the index (taken before now) found no record naming the object,
 * so its time is after any retirement of such a record; and it can land
 * only on the record state it read — versions change on every write and are
 * never reused, so a confirmation held in flight fails once a forget
 * deleted that stamp, whatever was created since. A forget deletes
 * confirmed stamps too — but a forget can fail, or its pass crash between
 * seeing the name named and forgetting: the stamp then survives a pass that
 * saw the name named. Pass marks (below) make that safe: with restamp set
 * (a dead mark of the kind) a confirmed stamp is confirmed again at now,
 * like an unconfirmed one. The cost: one pass interval more before a
 * deletion; a longer grace is always allowed.
 *
 * A confirmed stamp above now is one from before the store's clock stepped
 * back: it is confirmed again at now, which only lengthens the wait. */
static int first_seen(tarn_meta *m, char kind, const char *name, int64_t now, int dry, int restamp,
                      int *conflict, int64_t *at) {
  char *k = seen_key(kind, name);
  if (!k)
    return tarn__err(TARN_ENOMEM, "out of memory");
  tarn_meta_rec r = {0};
  int rc = tarn_meta_get(m, TARN_RECLAIM_PARTITION, k, &r);
  *at = now;
  char v[48];
  if (rc == TARN_ENOTFOUND) {
    rc = 0;
    int n = snprintf(v, sizeof v, "%" PRId64, now);
    if (!dry) {
      rc = tarn_meta_create(m, TARN_RECLAIM_PARTITION, k, v, (size_t)n, TARN_META_PERSISTENT, NULL);
      if (rc == TARN_EEXIST) /* another reclaimer was first; confirmed by a later pass */
        rc = 0;
    }
  } else if (!rc) {
    int64_t was;
    int confirmed, ok;
    seen_decode(r.value, r.value_len, &was, &confirmed, &ok);
    if (TARN__PLANTED(TARN__BUG_RECLAIM_TRUSTS_LATE_STAMP))
      confirmed = ok; /* reverts issue 12's fix: the creation's time counts */
    if (ok && confirmed && was <= now && !restamp) {
      *at = was;
    } else if (!dry) { /* confirm it, or LS-086: a step back of the clock restarts the grace */
      int n = snprintf(v, sizeof v, "%" PRId64 SEEN_CONFIRMED, now);
      rc = tarn_meta_cas(m, TARN_RECLAIM_PARTITION, k, v, (size_t)n, r.stat.version, NULL);
      /* another reclaimer confirmed it, or saw the name named and forgot it:
       * at = now is no earlier than either */
      if (rc == TARN_ECONFLICT && conflict)
        *conflict = 1; /* a restamp another pass overtook: it absorbs no mark */
      if (rc == TARN_ECONFLICT || rc == TARN_ENOTFOUND)
        rc = 0;
    }
  }
  tarn_meta_rec_free(&r);
  free(k);
  return rc;
}

static int forget_seen(tarn_meta *m, char kind, const char *name) {
  char *k = seen_key(kind, name);
  if (!k)
    return tarn__err(TARN_ENOMEM, "out of memory");
  int rc = tarn_meta_delete(m, TARN_RECLAIM_PARTITION, k);
  free(k);
  return rc == TARN_ENOTFOUND ? 0 : rc;
}

/* ---- pass marks (LS-086) ------------------------------------------------ *
 *
 * Why: a pass that sees a name named must forget its stamp, else a later
 * pass, seeing the name unreferenced once the record is retired, counts the
 * grace from the stamp's confirmation — before the retirement (LS-086's
 * grace shortened under a reader that resolved the record). The forget can
 * fail, and the pass can crash before it; neither leaves a trace, so the
 * trace is written AHEAD: before its scan of the index, a pass creates
 *   "l-{id}"       ephemeral: the pass is alive (gone when its session ends);
 *   "p-{k}-{id}"   persistent, one per kind k it sweeps ('w' WAL, 'c' orphan
 *                  compacted files): its forgets of kind k may be missing.
 * It deletes its p- records when no forget of a named name failed (a pass
 * that aborts otherwise saw nothing it failed to act on), then its l-.
 * (Express absorb waits for the l- marks after a late index record,
 * tarn__reclaim_wait_passes below: an l- must stand from before its pass's
 * scan of the index until the pass deletes nothing more.)
 * Another pass of kind k, at its start (before its own scan):
 *   - a p-k- mark with its l- (alive): that pass may yet see a name named
 *     and fail — this pass deletes nothing of kind k (blocked);
 *   - a p-k- mark without its l- (dead: failed or crashed, so its scan came
 *     before this pass's): this pass re-confirms every kind-k stamp it meets
 *     at its now (restamp; after its own scan found no record naming the
 *     object, so after the retirement) and forgets the named ones; if all
 *     of that succeeded, no restamp was overtaken, it deletes the mark (its
 *     version) — absorbed. It deletes no kind-k object from an old stamp.
 * Right before deleting, the marks are listed again: one that appeared since
 * blocks too (its scan may have come after this pass's). Only ever a longer
 * grace: a mark blocks or restarts, never shortens. Several reclaimers:
 * each sees the others' marks; a crash leaves a dead mark. Residual: a pass
 * whose session ended without it knowing looks dead while it runs; and an
 * l- whose delete failed blocks kind k until that session ends. */

enum { MK_W, MK_C, MK_KINDS };
static const char mk_kind[MK_KINDS] = {'w', 'c'};

/* A dead mark and the names it puts at risk (issue 31 item 7). */
typedef struct dmark {
  char *key;
  int64_t version;
  int all;       /* a mark without a range (written before ranges, or damaged) */
  int none;      /* "none": nothing at risk (cleared, or died before its sweep) */
  char *lo, *hi; /* names in (lo, hi] at risk ("" as lo: from the first) */
} dmark;

typedef struct marks {
  int on;                /* the marks were written (not dry, some kind swept) */
  int kinds[MK_KINDS];   /* the kinds this pass sweeps */
  int blocked[MK_KINDS]; /* a live or new mark of the kind: delete nothing */
  int conflict[MK_KINDS];
  int forget_failed;
  char id[33];
  dmark *dead[MK_KINDS]; /* the dead marks of each kind */
  size_t ndead[MK_KINDS];
  int (*stop)(void *ctx); /* the caller's stop flag (issue 31 item 7) */
  void *stop_ctx;
} marks;

/* The value of a mark: "none", or "r\n{lo}\n{hi}" (names in (lo, hi] at risk).
 * Any other bytes (a mark of a build before ranges: "") put every name at
 * risk: only ever a longer grace. */
#define MK_NONE "none"
static int dmark_parse(dmark *d, const uint8_t *v, size_t len) {
  d->all = d->none = 0;
  d->lo = d->hi = NULL;
  if (len == sizeof MK_NONE - 1 && memcmp(v, MK_NONE, len) == 0) {
    d->none = 1;
    return 0;
  }
  const uint8_t *nl = len > 2 && v[0] == 'r' && v[1] == '\n' ? memchr(v + 2, '\n', len - 2) : NULL;
  if (!nl || memchr(nl + 1, '\n', (size_t)(v + len - nl - 1))) {
    d->all = 1;
    return 0;
  }
  d->lo = strndup((const char *)v + 2, (size_t)(nl - v - 2));
  d->hi = strndup((const char *)nl + 1, (size_t)(v + len - nl - 1));
  if (!d->lo || !d->hi || strlen(d->lo) != (size_t)(nl - v - 2) ||
      strlen(d->hi) != (size_t)(v + len - nl - 1)) {
    free(d->lo), free(d->hi);
    d->lo = d->hi = NULL;
    d->all = 1; /* a NUL in a name: no range we can compare */
  }
  return 0;
}

int tarn__reclaim_mark_parse(const uint8_t *v, size_t len, int *all, int *none, char **lo,
                             char **hi) {
  dmark d;
  memset(&d, 0, sizeof d);
  int rc = dmark_parse(&d, v, len);
  *all = d.all, *none = d.none, *lo = d.lo, *hi = d.hi;
  return rc;
}

static void dmarks_free(marks *mk) {
  for (int k = 0; k < MK_KINDS; k++) {
    for (size_t i = 0; i < mk->ndead[k]; i++) {
      free(mk->dead[k][i].key);
      free(mk->dead[k][i].lo);
      free(mk->dead[k][i].hi);
    }
    free(mk->dead[k]);
    mk->dead[k] = NULL;
    mk->ndead[k] = 0;
  }
}

static dmark *dmark_find(marks *mk, int k, const char *key) {
  for (size_t i = 0; i < mk->ndead[k]; i++)
    if (strcmp(mk->dead[k][i].key, key) == 0)
      return &mk->dead[k][i];
  return NULL;
}

/* Whether a dead mark of kind k may have seen name named without forgetting
 * its stamp: then this pass re-confirms the stamp at its now (restamp). */
static int at_risk(const marks *mk, int k, const char *name) {
  for (size_t i = 0; i < mk->ndead[k]; i++) {
    const dmark *d = &mk->dead[k][i];
    if (d->all || (!d->none && strcmp(name, d->lo) > 0 && strcmp(name, d->hi) <= 0))
      return 1;
  }
  return 0;
}

static int stopping(const marks *mk) { return mk->stop && mk->stop(mk->stop_ctx); }

static void mark_key(char *out, size_t n, int k, const char *id) {
  snprintf(out, n, "p-%c-%s", mk_kind[k], id);
}

/* Lists the p-k- marks other than this pass's: a dead one (no l-) is added
 * to dead at the start (start = 1); any other not in dead blocks. */
static int marks_scan(tarn_meta *m, marks *mk, int k, int start) {
  char a[8], b[8], own[48];
  snprintf(a, sizeof a, "p-%c-", mk_kind[k]);
  snprintf(b, sizeof b, "p-%c.", mk_kind[k]);
  mark_key(own, sizeof own, k, mk->id);
  tarn_meta_recs rs = {0};
  int rc = tarn_meta_scan(m, TARN_RECLAIM_PARTITION, a, b, 0, 0, &rs);
  for (size_t i = 0; i < rs.n && !rc; i++) {
    const char *key = rs.v[i].key;
    if (strcmp(key, own) == 0 || dmark_find(mk, k, key))
      continue;
    if (!start) {
      mk->blocked[k] = 1;
      continue;
    }
    char l[48];
    snprintf(l, sizeof l, "l-%s", key + 4);
    tarn_meta_rec r = {0};
    rc = tarn_meta_get(m, TARN_RECLAIM_PARTITION, l, &r);
    tarn_meta_rec_free(&r);
    if (!rc) {
      mk->blocked[k] = 1;
    } else if (rc == TARN_ENOTFOUND) {
      dmark *nv = realloc(mk->dead[k], (mk->ndead[k] + 1) * sizeof *nv);
      rc = nv ? 0 : tarn__err(TARN_ENOMEM, "out of memory");
      if (!rc) {
        mk->dead[k] = nv;
        dmark *d = &nv[mk->ndead[k]];
        memset(d, 0, sizeof *d);
        d->version = rs.v[i].stat.version;
        if (!(d->key = strdup(key)))
          rc = tarn__err(TARN_ENOMEM, "out of memory");
        else
          mk->ndead[k]++, rc = dmark_parse(d, rs.v[i].value, rs.v[i].value_len);
      }
    }
  }
  tarn_meta_recs_free(&rs);
  return rc;
}

static int marks_begin(tarn_meta *m, marks *mk) {
  if (TARN__PLANTED(TARN__BUG_RECLAIM_UNMARKED_PASS))
    return 0; /* reverts the fix: no trace of a failed forget */
  uint8_t r[16];
  int rc = tarn__random(r, sizeof r, "a reclaim pass's id");
  for (size_t i = 0; !rc && i < sizeof r; i++)
    snprintf(mk->id + 2 * i, 3, "%02x", r[i]);
  if (rc)
    return rc;
  char key[48];
  snprintf(key, sizeof key, "l-%s", mk->id);
  rc = tarn_meta_create(m, TARN_RECLAIM_PARTITION, key, "", 0, TARN_META_EPHEMERAL, NULL);
  /* the pass stops here, before its scan: without its marks it deletes
   * nothing (an ephemeral record needs a live session: TARN_ESESSION when the
   * handle's ended; `tarn serve` renews it in its health job) */
  if (rc)
    return tarn__errctx(rc,
                        "reclaim: writing the pass's live mark %s/%s (LS-086: no pass "
                        "deletes without its marks)",
                        TARN_RECLAIM_PARTITION, key);
  mk->on = 1;
  for (int k = 0; k < MK_KINDS && !rc; k++)
    if (mk->kinds[k]) {
      mark_key(key, sizeof key, k, mk->id);
      /* "none": nothing at risk until its sweep lists a page (issue 31 item 7) */
      rc = tarn_meta_create(m, TARN_RECLAIM_PARTITION, key, MK_NONE, sizeof MK_NONE - 1,
                            TARN_META_PERSISTENT, NULL);
      if (rc)
        rc = tarn__errctx(rc,
                          "reclaim: writing the pass mark %s/%s (LS-086: no pass deletes "
                          "without its marks)",
                          TARN_RECLAIM_PARTITION, key);
    }
  for (int k = 0; k < MK_KINDS && !rc; k++)
    if (mk->kinds[k] && (rc = marks_scan(m, mk, k, 1)))
      rc = tarn__errctx(rc, "reclaim: reading the other passes' marks");
  return rc;
}

/* Right before deleting: a mark that appeared since the start blocks. */
static int marks_recheck(tarn_meta *m, marks *mk) {
  int rc = 0;
  for (int k = 0; mk->on && k < MK_KINDS && !rc; k++)
    if (mk->kinds[k])
      rc = marks_scan(m, mk, k, 0);
  return rc;
}

/* The end of a pass that returns rc: absorbs the dead marks (rc == 0), then
 * removes this pass's own marks unless a forget failed. */
static int marks_end(tarn_meta *m, marks *mk, int rc) {
  char key[48];
  for (int k = 0; mk->on && k < MK_KINDS; k++) {
    for (size_t i = 0; !rc && !mk->conflict[k] && i < mk->ndead[k]; i++) {
      int drc = tarn_meta_delete_if(m, TARN_RECLAIM_PARTITION, mk->dead[k][i].key,
                                    mk->dead[k][i].version, NULL, 0);
      if (drc != TARN_ENOTFOUND && drc != TARN_ECONFLICT)
        rc = drc;
    }
    if (mk->kinds[k] && !mk->forget_failed) {
      mark_key(key, sizeof key, k, mk->id);
      int drc = tarn_meta_delete(m, TARN_RECLAIM_PARTITION, key);
      if (!rc && drc != TARN_ENOTFOUND)
        rc = drc;
    }
  }
  if (mk->on) {
    snprintf(key, sizeof key, "l-%s", mk->id);
    int drc = tarn_meta_delete(m, TARN_RECLAIM_PARTITION, key);
    if (!rc && drc != TARN_ENOTFOUND)
      rc = drc;
  }
  dmarks_free(mk);
  return rc;
}

int tarn__reclaim_wait_passes(tarn_meta *m, int64_t wait_ms) {
  tarn_meta_recs live = {0};
  int rc = tarn_meta_list(m, TARN_RECLAIM_PARTITION, "l-", "l.", 0, 0, &live);
  int64_t until = tarn__mono_ms() + wait_ms;
  for (size_t i = 0; !rc && i < live.n;) {
    tarn_meta_rec r = {0};
    rc = tarn_meta_get(m, TARN_RECLAIM_PARTITION, live.v[i].key, &r);
    tarn_meta_rec_free(&r);
    if (rc == TARN_ENOTFOUND) { /* that pass ended (or its session did) */
      tarn_errclear();
      rc = 0;
      i++;
    } else if (!rc && tarn__mono_ms() > until) {
      rc = tarn__err(TARN_ETIMEDOUT, "reclaim: the pass %s/%s is still under way after %lld ms",
                     TARN_RECLAIM_PARTITION, live.v[i].key, (long long)wait_ms);
    } else if (!rc) {
      tarn__sleep_ms(50);
    }
  }
  tarn_meta_recs_free(&live);
  return rc;
}

static void report(const tarn_reclaim_options *o, const char *kind, const char *name,
                   uint64_t bytes) {
  if (o->report)
    o->report(o->report_ctx, kind, name, bytes);
}

/* ---- step 1: files of records at or below B ------------------------------ */

typedef struct trim_ctx {
  strset files; /* full names in the compacted root */
  const char *dir;
  uint64_t below; /* records ending at or below B */
} trim_ctx;

static int trim_cb(void *ctx, const tarn__ixrec *x) {
  trim_ctx *t = ctx;
  t->below++;
  if (x->version != 3 || !x->ei.file_index || !t->dir)
    return 0;
  tarn_file_index fi;
  int rc = tarn_file_index_decode_base64(x->ei.file_index, strlen(x->ei.file_index), &fi);
  if (rc)
    return rc;
  for (size_t i = 0; i < fi.n && !rc; i++) {
    char p[2400];
    snprintf(p, sizeof p, "%s%s", t->dir, fi.files[i].name);
    rc = set_add(&t->files, p);
  }
  tarn_file_index_free(&fi);
  return rc;
}

/* Sets the size of each object of s (sorted here); 0 for an absent one.
 * Where sizes come from: a PARQUET record has none for its files (its
 * file_size is the range's payload bytes, tables-and-vectors.md §3), nor has
 * the catalog, so a listing of the smallest range of names that holds them
 * all gives up to LIST_PAGE sizes a request (tarn names a log's files
 * "{dir}{log}-{first}-{random}": the range holds about that log's files, and a
 * file's companion sorts next to it). Pages are fetched only while they are
 * fewer than half the names still unsized (rounded up); a name no page reached
 * gets a HEAD, then the only cheaper source left. A name the listing passed is
 * absent. */
static int size_objects(tarn_objstore *st, strset *s) {
  set_sort(s);
  if (!s->n)
    return 0;
  const char *lo = s->v[0].s, *hi = s->v[s->n - 1].s;
  size_t pl = 0;
  while (lo[pl] && lo[pl] == hi[pl])
    pl++;
  char *prefix = strndup(lo, pl);
  char *after = strndup(lo, strlen(lo) - 1); /* sorts just before lo */
  size_t i = 0, pages = 0;
  int rc = prefix && after ? 0 : tarn__err(TARN_ENOMEM, "out of memory");
  while (!rc && i < s->n && pages < (s->n - i + 1) / 2) {
    tarn_objstore_listing l;
    if ((rc = tarn_objstore_list(st, prefix, after, LIST_PAGE, &l)))
      break;
    pages++;
    for (size_t j = 0; j < l.n && i < s->n; j++) {
      int c = -1;
      while (i < s->n && (c = strcmp(s->v[i].s, l.names[j])) < 0)
        s->v[i++].size = 0;
      while (i < s->n && c == 0) { /* a name twice in s: both sized */
        s->v[i++].size = l.sizes[j];
        c = i < s->n ? strcmp(s->v[i].s, l.names[j]) : 1;
      }
    }
    int more = l.truncated && l.n > 0 && i < s->n;
    if (!l.truncated)
      for (; i < s->n; i++)
        s->v[i].size = 0;
    free(after);
    after = more ? strdup(l.names[l.n - 1]) : NULL;
    if (more && !after)
      rc = tarn__err(TARN_ENOMEM, "out of memory");
    tarn_objstore_listing_free(&l);
    if (!more)
      break;
  }
  for (; !rc && i < s->n; i++)
    if ((rc = tarn_objstore_head(st, s->v[i].s, &s->v[i].size)) == TARN_ENOTFOUND) {
      s->v[i].size = 0;
      rc = 0;
    }
  free(prefix);
  free(after);
  return rc;
}

/* "x.index" for "x.parquet". */
static void companion_of(const char *p, char *out, size_t n) {
  snprintf(out, n, "%.*s.index", (int)(strlen(p) - 8), p);
}

static int reclaim_trimmed(tarn_meta *m, tarn_objstore *compacted, const tarn_reclaim_options *o,
                           uint64_t log_id, tarn_reclaim_stats *st) {
  uint64_t b;
  int rc = tarn_trim_marker_read(m, log_id, &b, NULL);
  if (rc || b == 0)
    return rc;
  char dir[2 * TARN_STREAM_NAME_MAX + 8] = "";
  tarn_catalog *cat;
  tarn_catalog_record lr;
  memset(&lr, 0, sizeof lr);
  if ((rc = tarn_catalog_open(m, NULL, &cat)))
    return rc;
  int have_dir = tarn_catalog_log_stream(cat, log_id, &lr) == 0;
  if (have_dir)
    snprintf(dir, sizeof dir, "%s/%s/", lr.ns, lr.name);
  tarn_catalog_record_free(&lr);
  tarn_catalog_close(cat);
  trim_ctx t = {.dir = have_dir ? dir : NULL};
  char hi[TARN_KEY_LEN + 1];
  /* LS-082: records ending at or below B (a record ending at B + 1 holds B,
   * still readable) */
  tarn_key_format(hi, log_id, b + (TARN__PLANTED(TARN__BUG_RECLAIM_TRIM_BOUND_PLUS_ONE) ? 1 : 0),
                  TARN_KEY_MAX);
  rc = tarn__index_scan(m, log_id, NULL, hi, trim_cb, &t);
  strset objs = {0}; /* the files and their companions, with sizes */
  char comp[2400];
  for (size_t i = 0; i < t.files.n && !rc; i++) {
    companion_of(t.files.v[i].s, comp, sizeof comp);
    if (!(rc = set_add(&objs, t.files.v[i].s)))
      rc = set_add(&objs, comp);
  }
  if (!rc)
    rc = size_objects(compacted, &objs);
  /* LS-082, LS-083: the files first, then the records that name them */
  for (size_t i = 0; i < t.files.n && !rc; i++) {
    companion_of(t.files.v[i].s, comp, sizeof comp);
    const char *pair[2] = {t.files.v[i].s, comp};
    for (int k = 0; k < 2 && !rc; k++) {
      uint64_t size = set_find(&objs, pair[k])->size;
      report(o, "trimmed", pair[k], size);
      if (!o->dry_run)
        rc = tarn_objstore_delete(compacted, pair[k]);
      if (!rc) {
        st->trimmed_files_deleted++;
        st->trimmed_files_deleted_bytes += size;
      }
    }
  }
  set_free(&objs);
  if (!rc && t.below > 0) {
    char what[64];
    snprintf(what, sizeof what, "log %" PRIu64 " to %" PRIu64, log_id, b);
    if (o->dry_run) {
      report(o, "hard-trim", what, 0);
    } else {
      tarn_lease *l;
      rc = tarn_lease_acquire(m, log_id, &l);
      if (rc == TARN_EFENCED) {
        rc = 0; /* a deleted log: its deletion removes the records */
      } else if (!rc) {
        size_t removed = 0;
        rc = tarn_hard_trim(m, l, b, &removed);
        int rrc = tarn_lease_release(l);
        if (!rc)
          rc = rrc;
        st->records_hard_trimmed += removed;
        if (removed)
          report(o, "hard-trim", what, 0);
      }
    }
  }
  set_free(&t.files);
  return rc;
}

/* ---- steps 2 and 3 ------------------------------------------------------- */

typedef struct cand {
  strset wal, compacted;
} cand;

/* Before a page's names are looked at (issue 31 item 7): this pass's mark of
 * kind k says that only names in (lo, hi] may be seen named and not yet
 * forgotten. Its own mark: a plain put (a pass that took this one for dead
 * and cleared it only loses the clearing). A failure stops the pass before
 * the page: the mark's old value still covers all it saw. */
static int mark_range(tarn_meta *m, marks *mk, int k, const char *lo, const char *hi) {
  char key[48];
  mark_key(key, sizeof key, k, mk->id);
  size_t nlo = strlen(lo), nhi = strlen(hi);
  char *v = malloc(nlo + nhi + 3);
  if (!v)
    return tarn__err(TARN_ENOMEM, "out of memory");
  v[0] = 'r', v[1] = '\n';
  memcpy(v + 2, lo, nlo);
  v[2 + nlo] = '\n';
  memcpy(v + 3 + nlo, hi, nhi);
  int rc = tarn_meta_put(m, TARN_RECLAIM_PARTITION, key, v, nlo + nhi + 3, NULL);
  free(v);
  return rc ? tarn__errctx(rc, "reclaim: updating the pass mark %s/%s", TARN_RECLAIM_PARTITION, key)
            : 0;
}

/* After this pass handled every name up to upto (NULL: the whole listing)
 * with no restamp overtaken, the dead marks whose range lies there put
 * nothing at risk any more: each is set to "none" (compare-and-set on the
 * version read), so a later pass restamps nothing for it even if this one
 * dies before absorbing it — a crash loop of passes makes progress. */
static int clear_dead(tarn_meta *m, marks *mk, int k, const char *upto) {
  for (size_t i = 0; i < mk->ndead[k] && !mk->conflict[k]; i++) {
    dmark *d = &mk->dead[k][i];
    if (d->none || (upto && (d->all || strcmp(d->hi, upto) > 0)))
      continue;
    tarn_meta_stat st;
    int rc = tarn_meta_cas(m, TARN_RECLAIM_PARTITION, d->key, MK_NONE, sizeof MK_NONE - 1,
                           d->version, &st);
    if (!rc)
      d->none = 1, d->all = 0, d->version = st.version;
    else if (rc != TARN_ECONFLICT && rc != TARN_ENOTFOUND)
      return rc;
  }
  return 0;
}

/* Lists a root and sorts each name: named (forget its first-seen record),
 * unreferenced (record first seen), or a candidate (old enough). Ages are on
 * the store's clock, read after each page of the listing: no node's clock
 * can shorten them, and a page's objects all existed before that reading. */
static int sweep_list(tarn_meta *m, tarn_objstore *s, char kind, const refs *rf_, int64_t grace,
                      const tarn_reclaim_options *o, marks *mk, strset *cands, uint64_t *listed,
                      uint64_t *unref) {
  int k = kind == 'w' ? MK_W : MK_C;
  refs *rf = (refs *)rf_;
  char *after = NULL;
  int rc = 0;
  for (;;) {
    tarn_objstore_listing l;
    if (stopping(mk)) { /* issue 31 item 7: shutdown does not wait for a pass */
      rc = tarn__err(TARN_ECLOSED, "reclaim: stopped");
      break;
    }
    if ((rc = tarn_objstore_list(s, "", after, LIST_PAGE, &l)))
      break;
    if (mk->on && l.n && (rc = mark_range(m, mk, k, after ? after : "", l.names[l.n - 1]))) {
      tarn_objstore_listing_free(&l);
      break;
    }
    int64_t now = 0;
    if ((rc = tarn_meta_clock(m, &now)))
      rc = tarn__errctx(rc, "reading the metadata store's clock");
    if (TARN__PLANTED(TARN__BUG_RECLAIM_LOCAL_CLOCK))
      now = tarn__now_ms();
    for (size_t i = 0; i < l.n && !rc; i++) {
      const char *name = l.names[i];
      int named;
      if (kind == 'w') {
        if (strcmp(name, TARN_ROOT_MARKER) == 0)
          continue; /* the root's deployment marker (issue 31 item 5): never reclaimed */
        named = set_has(&rf->wal, name);
      } else {
        char pq[1100];
        if (!parquet_name(base_of(name), pq, sizeof pq))
          continue; /* not a compacted file or companion */
        named = file_named(rf, pq);
      }
      (*listed)++;
      if (named) {
        if (!o->dry_run && (rc = forget_seen(m, kind, name)))
          mk->forget_failed = 1; /* its mark stays: the next passes restamp */
        continue;
      }
      (*unref)++;
      int64_t at = now;
      rc = first_seen(m, kind, name, now, o->dry_run, at_risk(mk, k, name), &mk->conflict[k], &at);
      /* LS-086; the tick: on a clock of whole seconds a difference of
       * grace may be up to a second less of real time */
      if (!rc && (now - at >= grace + tarn_meta_clock_tick_ms(m) ||
                  (kind == 'w' && TARN__PLANTED(TARN__BUG_RECLAIM_NO_GRACE))))
        rc = set_add_sized(cands, name, l.sizes[i]);
    }
    free(after);
    after = NULL;
    int more = l.truncated && l.n > 0;
    if (!rc && mk->on)
      rc = clear_dead(m, mk, k, more ? l.names[l.n - 1] : NULL);
    if (more && !rc && !(after = strdup(l.names[l.n - 1])))
      rc = tarn__err(TARN_ENOMEM, "out of memory");
    tarn_objstore_listing_free(&l);
    if (rc || !more)
      break;
  }
  free(after);
  if (!rc && mk->on) { /* every name handled: nothing at risk */
    char key[48];
    mark_key(key, sizeof key, k, mk->id);
    rc = tarn_meta_put(m, TARN_RECLAIM_PARTITION, key, MK_NONE, sizeof MK_NONE - 1, NULL);
  }
  return rc;
}

/* Step 3: each candidate of kind 'w' (WAL objects in store) or 'c'
 * (compacted files) that no record names at the second look (r2) deleted
 * and forgotten. Sizes are the listing's: objects are written once, so no
 * HEAD. */
static int delete_unnamed(tarn_meta *m, tarn_objstore *store, char kind,
                          const tarn_reclaim_options *o, marks *mk, const strset *cands, refs *r2,
                          uint64_t *deleted, uint64_t *deleted_bytes) {
  int rc = 0;
  const int *blocked = &mk->blocked[kind == 'w' ? MK_W : MK_C];
  for (size_t i = 0; !rc && !*blocked && i < cands->n; i++) {
    const char *name = cands->v[i].s;
    if (stopping(mk)) {
      rc = tarn__err(TARN_ECLOSED, "reclaim: stopped");
      break;
    }
    char pq[1100];
    if (kind == 'c')
      parquet_name(base_of(name), pq, sizeof pq);
    if (kind == 'w' ? set_has(&r2->wal, name) : file_named(r2, pq))
      continue;
    report(o, kind == 'w' ? "wal" : "compacted", name, cands->v[i].size);
    if (!o->dry_run && !(rc = tarn_objstore_delete(store, name)))
      rc = forget_seen(m, kind, name);
    if (!rc) {
      (*deleted)++;
      *deleted_bytes += cands->v[i].size;
    }
  }
  return rc;
}

int tarn_reclaim_pass(tarn_meta *m, tarn_objstore *wal, tarn_objstore *compacted,
                      const tarn_reclaim_options *o, tarn_reclaim_stats *stats) {
  tarn_reclaim_options d;
  if (!o) {
    tarn_reclaim_options_default(&d);
    o = &d;
  }
  tarn_reclaim_stats st;
  memset(&st, 0, sizeof st);
  uint64_t next = 0; /* set when known (gcc -Os cannot see it: the matrix build) */
  int known = 0;
  /* Issue 31 item 5: only the deployment a root belongs to deletes from it */
  int rc =
      tarn__roots_check(m, o->wal ? wal : NULL, o->trimmed_files || o->orphans ? compacted : NULL);
  /* Issue 31 item 11: the library refuses the WAL grace the processes
   * refuse (LS-085, LS-086: it must exceed the writers' limits in the
   * deployment's timing record); without a record, the caller's rule */
  if (!rc && o->wal && wal) {
    tarn_timing t;
    int recorded = 0;
    rc = tarn_timing_load(m, &t, &recorded);
    if (!rc && recorded) {
      tarn_timing mine = {o->wal_grace_ms, -1, -1, -1};
      rc = tarn_timing_check_process(m, &mine, "reclaim", NULL);
    }
  }
  if (!rc)
    rc = log_range(m, o, &next, &known);
  for (uint64_t l = 1; !rc && o->trimmed_files && compacted && l < next; l++)
    rc = o->stop && o->stop(o->stop_ctx) ? tarn__err(TARN_ECLOSED, "reclaim: stopped")
                                         : reclaim_trimmed(m, compacted, o, l, &st);
  for (size_t i = 0; !rc && o->trimmed_files && compacted && i < o->n_extra_logs; i++)
    rc = reclaim_trimmed(m, compacted, o, o->extra_logs[i], &st);
  refs r1 = {0}, r2 = {0};
  cand c = {0};
  /* intents' ages too are on the store's clock (docs/compaction.md) */
  int64_t now = 0;
  if (!rc && (rc = tarn_meta_clock(m, &now)))
    rc = tarn__errctx(rc, "reading the metadata store's clock");
  /* LS-086: the pass's marks before its scan of the index (above, "pass
   * marks"): a forget it fails to make leaves its mark behind */
  marks mk;
  memset(&mk, 0, sizeof mk);
  mk.kinds[MK_W] = o->wal && wal;
  mk.kinds[MK_C] = known && o->orphans && compacted;
  mk.stop = o->stop;
  mk.stop_ctx = o->stop_ctx;
  if (!rc && !o->dry_run && (mk.kinds[MK_W] || mk.kinds[MK_C]))
    rc = marks_begin(m, &mk);
  if (!rc && (o->wal || o->orphans))
    rc = collect_refs(m, o, next, now, &r1, &st);
  if (!rc && o->wal && wal)
    rc = sweep_list(m, wal, 'w', &r1, o->wal_grace_ms, o, &mk, &c.wal, &st.wal_listed,
                    &st.wal_unreferenced);
  /* Orphan compacted files need the catalog: without it no log's records
   * (or directory) are known for certain. */
  if (!rc && known && o->orphans && compacted)
    rc = sweep_list(m, compacted, 'c', &r1, o->orphan_grace_ms, o, &mk, &c.compacted,
                    &st.compacted_listed, &st.compacted_orphans);
  /* LS-085: right before deleting, look again: a candidate named now stays */
  if (!rc && (c.wal.n || c.compacted.n))
    rc = collect_refs(m, o, next, now, &r2, &st);
  if (!rc && c.wal.n)
    rc = refs_from_heads(m, wal, o, next, &c.wal, &r2, &st);
  if (!rc && (c.wal.n || c.compacted.n))
    rc = marks_recheck(m, &mk);
  if (!rc)
    rc = delete_unnamed(m, wal, 'w', o, &mk, &c.wal, &r2, &st.wal_deleted, &st.wal_deleted_bytes);
  if (!rc)
    rc = delete_unnamed(m, compacted, 'c', o, &mk, &c.compacted, &r2, &st.compacted_deleted,
                        &st.compacted_deleted_bytes);
  /* Issue 31 item 9: temporary files of killed puts (file://), after the
   * grace of their root: a live put links or abandons its file sooner */
  if (!rc && !o->dry_run && o->wal && wal)
    rc = tarn_objstore_sweep_temp(wal, o->wal_grace_ms, &st.temp_files_removed);
  if (!rc && !o->dry_run && (o->orphans || o->trimmed_files) && compacted)
    rc = tarn_objstore_sweep_temp(compacted, o->orphan_grace_ms, &st.temp_files_removed);
  rc = marks_end(m, &mk, rc);
  refs_free(&r1);
  refs_free(&r2);
  set_free(&c.wal);
  set_free(&c.compacted);
  if (stats)
    *stats = st;
  return rc;
}
