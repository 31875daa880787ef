/* The catalog: streams, their logs, tombstones (spec "Catalog semantics";
 * LS-087 ... LS-094). Records and keys: tarn/catalog.h, docs/catalog.md. */
#include "tarn/catalog.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tarn/buf.h"
#include "tarn/key.h"
#include "log/catalog_meta.h"
#include "util/clock.h"
#include "util/error.h"
#include "util/planted.h"

#define PART TARN_CATALOG_PARTITION
#define KEY_DEPLOYMENT "/catalog/deployment"
#define KEY_COUNTER "/catalog/log-id-counter"
#define FIRST_LOG_ID 1
/* Conditional writes that lose to another catalog re-read and try again;
 * each loss means another writer made progress. */
#define MAX_RETRIES 100
#define KEY_MAX (2 * TARN_STREAM_NAME_MAX + 64)
/* Writes of unknown outcome retried from a read-back before giving up. */
#define UNKNOWN_RETRIES 3

struct tarn_catalog {
  tarn_meta *meta;
  tarn_catalog_options opt;
};

tarn_meta *tarn__catalog_meta(tarn_catalog *c) { return c->meta; }

static void stream_key(char out[KEY_MAX], const char *ns, const char *name) {
  snprintf(out, KEY_MAX, "/catalog/streams/%s/%s", ns, name);
}
static void tombstone_key(char out[KEY_MAX], const char *ns, const char *name) {
  snprintf(out, KEY_MAX, "/catalog/tombstones/%s/%s", ns, name);
}
static void log_key(char out[KEY_MAX], uint64_t log_id) {
  snprintf(out, KEY_MAX, "/catalog/logs/%llu", (unsigned long long)log_id);
}

int tarn_catalog_open(tarn_meta *m, const tarn_catalog_options *opt, tarn_catalog **out) {
  *out = NULL;
  tarn_catalog *c = calloc(1, sizeof *c);
  if (!c)
    return tarn__err(TARN_ENOMEM, "out of memory");
  c->meta = m;
  if (opt)
    c->opt = *opt;
  *out = c;
  return 0;
}

void tarn_catalog_close(tarn_catalog *c) { free(c); }

void tarn_catalog_records_free(tarn_catalog_record *v, size_t n) {
  for (size_t i = 0; v && i < n; i++)
    tarn_catalog_record_free(&v[i]);
  free(v);
}

/* Get and decode; *version (may be NULL) gets the record's version. */
static int get_rec(tarn_catalog *c, const char *key, int kind, tarn_catalog_record *out,
                   int64_t *version) {
  tarn_meta_rec r = {0};
  int rc = tarn_meta_get(c->meta, PART, key, &r);
  if (rc) {
    tarn_meta_rec_free(&r);
    return rc;
  }
  rc = tarn_catalog_record_decode(r.value, r.value_len, out);
  if (!rc && out->kind != kind) {
    tarn_catalog_record_free(out);
    rc = tarn__corrupt("catalog record", 0, "%s holds a record of another kind", key);
  } else if (rc) {
    rc = tarn__errctx(rc, "%s", key);
  }
  if (version)
    *version = r.stat.version;
  tarn_meta_rec_free(&r);
  return rc;
}

/* Encodes r and writes it: mode 'c' CreateIfAbsent (with the n conditions
 * g), 's' CompareAndSet on version, 'p' Put. */
static int put_rec_if(tarn_catalog *c, const char *key, const tarn_catalog_record *r, int mode,
                      int64_t version, const tarn_meta_guard *g, size_t n) {
  tarn_buf b = TARN_BUF_INIT;
  int rc = tarn_catalog_record_encode(r, &b);
  if (!rc) {
    if (mode == 'c')
      rc = tarn_meta_create_if(c->meta, PART, key, b.data, b.len, TARN_META_PERSISTENT, g, n, NULL);
    else if (mode == 's')
      rc = tarn_meta_cas(c->meta, PART, key, b.data, b.len, version, NULL);
    else
      rc = tarn_meta_put(c->meta, PART, key, b.data, b.len, NULL);
  }
  tarn_buf_free(&b);
  return rc;
}

static int put_rec(tarn_catalog *c, const char *key, const tarn_catalog_record *r, int mode,
                   int64_t version) {
  return put_rec_if(c, key, r, mode, version, NULL, 0);
}

/* ---- deployment ---------------------------------------------------------- */

int tarn_catalog_init(tarn_catalog *c, int *created) {
  if (created)
    *created = 0;
  tarn_catalog_record r = {.kind = TARN_CATREC_DEPLOYMENT, .time_ms = tarn__now_ms()};
  int rc = put_rec(c, KEY_DEPLOYMENT, &r, 'c', 0);
  if (rc == TARN_EUNKNOWN)
    rc = tarn_catalog_check(c);
  else if (rc == 0 && created)
    *created = 1;
  if (rc == TARN_EEXIST)
    rc = 0;
  return rc ? tarn__errctx(rc, "writing the deployment record") : 0;
}

int tarn_catalog_check(tarn_catalog *c) {
  tarn_catalog_record r;
  int rc = get_rec(c, KEY_DEPLOYMENT, TARN_CATREC_DEPLOYMENT, &r, NULL);
  if (rc == TARN_ENOTFOUND)
    return tarn__err(rc, "the metadata store holds no tarn deployment; create one with "
                         "'tarn init'");
  if (!rc)
    tarn_catalog_record_free(&r);
  return rc;
}

/* ---- log IDs (LS-087) ---------------------------------------------------- */

/* 1 when P(L) holds a record of any kind: index record, trim marker, fence,
 * lease or one we do not know. "" is the least key of every partition. */
static int partition_occupied(tarn_catalog *c, uint64_t log_id) {
  if (TARN__PLANTED(TARN__BUG_CATALOG_ALLOC_UNCHECKED))
    return 0;
  char part[TARN_KEY_PARTITION_LEN + 1];
  tarn_key_partition(part, log_id);
  tarn_meta_rec r = {0};
  int rc = tarn_meta_ceiling(c->meta, part, "", &r);
  tarn_meta_rec_free(&r);
  if (rc == TARN_ENOTFOUND)
    return 0;
  return rc ? tarn__errctx(rc, "looking into the partition of log %llu", (unsigned long long)log_id)
            : 1;
}

/* Takes n IDs from the counter; they may be occupied. */
static int take_ids(tarn_catalog *c, uint32_t n, uint64_t *first) {
  for (int attempt = 0; attempt < MAX_RETRIES; attempt++) {
    tarn_catalog_record r;
    int64_t ver;
    int rc = get_rec(c, KEY_COUNTER, TARN_CATREC_COUNTER, &r, &ver);
    int absent = rc == TARN_ENOTFOUND;
    if (rc && !absent)
      return tarn__errctx(rc, "allocating log IDs");
    uint64_t next = absent ? FIRST_LOG_ID : r.next_log_id;
    if (!absent)
      tarn_catalog_record_free(&r);
    if (next > TARN_KEY_MAX - n)
      return tarn__err(TARN_ERANGE, "allocating log IDs: the log-ID space is exhausted");
    tarn_catalog_record nr = {.kind = TARN_CATREC_COUNTER, .next_log_id = next + n};
    /* The counter only moves up, by conditional writes, so no ID is handed
     * out twice, even after its log is deleted. A write whose outcome is
     * unknown is retried from a fresh read: at worst IDs are skipped. */
    rc = absent ? put_rec(c, KEY_COUNTER, &nr, 'c', 0) : put_rec(c, KEY_COUNTER, &nr, 's', ver);
    if (rc == 0) {
      *first = next;
      return 0;
    }
    if (rc != TARN_EEXIST && rc != TARN_ECONFLICT && rc != TARN_EUNKNOWN)
      return tarn__errctx(rc, "allocating log IDs");
  }
  return tarn__err(TARN_ECONFLICT, "allocating log IDs: lost %d races for the counter; retry",
                   MAX_RETRIES);
}

int tarn_catalog_alloc_logs(tarn_catalog *c, uint32_t n, uint64_t *first) {
  if (n == 0)
    return tarn__err(TARN_EINVAL, "allocating 0 log IDs");
  /* LS-087: an ID whose partition holds a record had a log already — one
   * another catalog, an earlier deployment or a raw writer used — so it is
   * skipped for good (the counter is past it) and we take fresh ones. Each
   * round moves the counter up and the occupied partitions are finitely
   * many, so this ends. */
  for (;;) {
    int rc = take_ids(c, n, first), busy = 0;
    for (uint32_t i = 0; !rc && !busy && i < n; i++)
      if ((rc = partition_occupied(c, *first + i)) == 1)
        busy = 1, rc = 0;
    if (rc || !busy)
      return rc;
  }
}

/* ---- streams ------------------------------------------------------------- */

static int write_log_recs(tarn_catalog *c, const char *ns, const char *name, uint64_t first,
                          uint32_t n, uint32_t first_partition, int mode) {
  for (uint32_t i = 0; i < n; i++) {
    char key[KEY_MAX];
    log_key(key, first + i);
    tarn_catalog_record r = {.kind = TARN_CATREC_LOG,
                             .log_id = first + i,
                             .ns = (char *)ns,
                             .name = (char *)name,
                             .partition = first_partition + i};
    int rc = put_rec(c, key, &r, mode, 0);
    if (rc)
      return tarn__errctx(rc, "registering log %llu", (unsigned long long)(first + i));
  }
  return 0;
}

static void drop_log_recs(tarn_catalog *c, uint64_t first, uint32_t n) {
  for (uint32_t i = 0; i < n; i++) {
    char key[KEY_MAX];
    log_key(key, first + i);
    tarn_meta_delete(c->meta, PART, key);
  }
}

int tarn_catalog_is_dropped(tarn_catalog *c, const char *ns, const char *name) {
  char key[KEY_MAX];
  int rc = tarn_stream_ident_check(ns, name);
  if (rc)
    return rc;
  tombstone_key(key, ns, name);
  tarn_meta_rec r = {0};
  rc = tarn_meta_get(c->meta, PART, key, &r);
  tarn_meta_rec_free(&r);
  return rc == 0 ? 1 : rc == TARN_ENOTFOUND ? 0 : rc;
}

static int dropped_error(const char *ns, const char *name) {
  return tarn__err(TARN_EEXIST,
                   "stream %s/%s was dropped; a dropped identity cannot be created again "
                   "(choose another name)",
                   ns, name);
}

/* Creates the stream record r, whose first log is first. LS-089: the create
 * holds only while the identity has no tombstone, judged in the same atomic
 * step (the tombstone is in the catalog's partition, as a guard needs): a
 * create held in flight that lands after a drop wrote its tombstone fails,
 * so no late landing brings a dropped stream back. A drop writes the
 * tombstone before it looks for the stream, so a create that landed before
 * the tombstone is found and dropped. On an unknown outcome we read back;
 * finding no stream we create again: a create still in flight then fails on
 * the record that one makes, or on the tombstone of a drop after it.
 * *maybe says whether a create of ours may have landed or may land yet;
 * TARN_EGUARD: the identity is tombstoned. */
static int create_stream_rec(tarn_catalog *c, const char *ns, const char *name,
                             const tarn_catalog_record *r, uint64_t first, int *maybe) {
  char skey[KEY_MAX], tkey[KEY_MAX];
  stream_key(skey, ns, name);
  tombstone_key(tkey, ns, name);
  const tarn_meta_guard g = {.kind = TARN_META_GUARD_ABSENT, .key = tkey};
  size_t ng = TARN__PLANTED(TARN__BUG_CATALOG_CREATE_UNGUARDED) ||
                      TARN__PLANTED(TARN__BUG_CATALOG_CREATE_IGNORES_TOMBSTONE)
                  ? 0
                  : 1;
  for (int attempt = 0; attempt < UNKNOWN_RETRIES; attempt++) {
    int rc = put_rec_if(c, skey, r, 'c', 0, &g, ng);
    if (rc == TARN_EUNKNOWN)
      *maybe = 1;
    else if (rc != TARN_EEXIST || !*maybe)
      /* Failing now says nothing of an earlier create still in flight. */
      return rc && rc != TARN_EGUARD && *maybe ? TARN_EUNKNOWN : rc;
    /* Did one of ours land? Ours is the stream whose first log is ours. */
    tarn_catalog_record now;
    rc = get_rec(c, skey, TARN_CATREC_STREAM, &now, NULL);
    if (rc == 0) {
      int ours = now.logs[0] == first;
      tarn_catalog_record_free(&now);
      if (ours)
        return 0;
      /* Another's stream holds the key until a drop, which tombstones the
       * identity first: none of ours can land any more. */
      *maybe = 0;
      return TARN_EEXIST;
    }
    if (rc != TARN_ENOTFOUND)
      return TARN_EUNKNOWN;
  }
  return TARN_EUNKNOWN;
}

int tarn_catalog_create_stream(tarn_catalog *c, const char *ns, const char *name,
                               uint32_t n_partitions, const tarn_stream_prop *props, size_t n_props,
                               tarn_catalog_record *out) {
  int rc = tarn_stream_ident_check(ns, name);
  if (rc)
    return rc;
  if (n_partitions < 1 || n_partitions > TARN_STREAM_PARTITIONS_MAX)
    return tarn__err(TARN_EINVAL, "a stream has 1..%d partitions, not %u",
                     TARN_STREAM_PARTITIONS_MAX, n_partitions);
  char skey[KEY_MAX];
  stream_key(skey, ns, name);
  /* LS-089 */
  if (!TARN__PLANTED(TARN__BUG_CATALOG_CREATE_IGNORES_TOMBSTONE) &&
      (rc = tarn_catalog_is_dropped(c, ns, name)) != 0)
    return rc == 1 ? dropped_error(ns, name) : rc;
  tarn_meta_rec ex = {0};
  rc = tarn_meta_get(c->meta, PART, skey, &ex);
  tarn_meta_rec_free(&ex);
  if (rc == 0)
    return tarn__err(TARN_EEXIST, "stream %s/%s already exists", ns, name);
  if (rc != TARN_ENOTFOUND)
    return rc;

  tarn_catalog_record r = {.kind = TARN_CATREC_STREAM,
                           .ns = (char *)ns,
                           .name = (char *)name,
                           .state = TARN_STREAM_ACTIVE,
                           .time_ms = tarn__now_ms(),
                           .props = (tarn_stream_prop *)props,
                           .n_props = n_props};
  uint64_t first;
  tarn_buf probe = TARN_BUF_INIT;
  r.n_logs = 1, r.logs = &(uint64_t){0};
  rc = tarn_catalog_record_encode(&r, &probe); /* refuse bad properties before allocating */
  tarn_buf_free(&probe);
  if (rc || (rc = tarn_catalog_alloc_logs(c, n_partitions, &first)))
    return rc;
  uint64_t *logs = calloc(n_partitions, sizeof *logs);
  if (!logs)
    return tarn__err(TARN_ENOMEM, "out of memory");
  for (uint32_t i = 0; i < n_partitions; i++)
    logs[i] = first + i;
  r.logs = logs, r.n_logs = n_partitions;
  /* The logs exist (registered) before the stream that names them. */
  int maybe = 0; /* a create of ours may have landed, or may land later */
  rc = write_log_recs(c, ns, name, first, n_partitions, 0, 'c');
  if (!rc)
    rc = create_stream_rec(c, ns, name, &r, first, &maybe);
  if (rc == TARN_EGUARD)
    rc = dropped_error(ns, name);
  else if (rc == TARN_EEXIST)
    rc = tarn__err(TARN_EEXIST, "stream %s/%s already exists", ns, name);
  else if (rc == TARN_EUNKNOWN)
    rc = tarn__err(TARN_EUNKNOWN,
                   "creating stream %s/%s: the outcome is unknown; "
                   "check with 'tarn stream describe'",
                   ns, name);
  if (rc) {
    /* Our logs go unless a stream may name them: an unknown outcome, or a
     * create that landed before a drop's tombstone (that drop deletes them).
     * Log records a stream never names are harmless: a log belongs to a
     * stream only while the stream's layout lists it. */
    if (!maybe)
      drop_log_recs(c, first, n_partitions);
    free(logs);
    return rc;
  }
  /* A drop may have written the tombstone after our first check and looked
   * for the stream before we created it: the store's order makes one of us
   * see the other, so we look again and undo if so (LS-089). */
  if (!TARN__PLANTED(TARN__BUG_CATALOG_CREATE_IGNORES_TOMBSTONE) &&
      (rc = tarn_catalog_is_dropped(c, ns, name)) != 0) {
    free(logs);
    if (rc == 1) {
      tarn_catalog_drop_stream(c, ns, name, NULL);
      return dropped_error(ns, name);
    }
    return rc;
  }
  if (out) {
    r.logs = NULL;
    rc = tarn_catalog_open_stream(c, ns, name, out);
  }
  free(logs);
  return rc;
}

static int open_stream_v(tarn_catalog *c, const char *ns, const char *name,
                         tarn_catalog_record *out, int64_t *version) {
  int rc = tarn_stream_ident_check(ns, name);
  if (rc)
    return rc;
  char key[KEY_MAX];
  stream_key(key, ns, name);
  rc = get_rec(c, key, TARN_CATREC_STREAM, out, version);
  if (rc == TARN_ENOTFOUND)
    return tarn__err(rc, "stream %s/%s not found; list streams with 'tarn stream list'", ns, name);
  return rc;
}

int tarn_catalog_open_stream(tarn_catalog *c, const char *ns, const char *name,
                             tarn_catalog_record *out) {
  return open_stream_v(c, ns, name, out, NULL); /* LS-088: a Get, nothing else */
}

int tarn_catalog_partition_log(tarn_catalog *c, const char *ns, const char *name,
                               uint32_t partition, uint64_t *log_id) {
  tarn_catalog_record rec;
  memset(&rec, 0, sizeof rec);
  int rc = tarn_catalog_open_stream(c, ns, name, &rec);
  /* LS-087: a dropping stream's logs are being deleted; no writer or reader
   * may be handed one */
  if (!rc && rec.state == TARN_STREAM_DROPPING)
    rc = tarn__err(TARN_ENOTFOUND, "stream %s/%s is being dropped", ns, name);
  else if (!rc && partition >= rec.n_logs)
    rc = tarn__err(TARN_ERANGE, "stream %s/%s has %zu partitions; there is no partition %lu", ns,
                   name, rec.n_logs, (unsigned long)partition);
  else if (!rc)
    *log_id = rec.logs[partition];
  tarn_catalog_record_free(&rec);
  return rc;
}

/* The stream records with keys in [a, b). */
static int list_streams_range(tarn_catalog *c, const char *a, const char *b,
                              tarn_catalog_record **out, size_t *n) {
  *out = NULL, *n = 0;
  tarn_meta_recs rs = {0};
  int rc = tarn_meta_scan(c->meta, PART, a, b, 0, 0, &rs);
  if (rc)
    return tarn__errctx(rc, "listing streams");
  tarn_catalog_record *v = rs.n ? calloc(rs.n, sizeof *v) : NULL;
  if (rs.n && !v) {
    tarn_meta_recs_free(&rs);
    return tarn__err(TARN_ENOMEM, "out of memory");
  }
  size_t k = 0;
  for (size_t i = 0; i < rs.n && !rc; i++) {
    rc = tarn_catalog_record_decode(rs.v[i].value, rs.v[i].value_len, &v[k]);
    if (rc)
      rc = tarn__errctx(rc, "%s", rs.v[i].key);
    else if (v[k].kind != TARN_CATREC_STREAM)
      tarn_catalog_record_free(&v[k]);
    else
      k++;
  }
  tarn_meta_recs_free(&rs);
  if (rc) {
    tarn_catalog_records_free(v, k);
    return rc;
  }
  *out = v, *n = k;
  return 0;
}

int tarn_catalog_list_streams(tarn_catalog *c, tarn_catalog_record **out, size_t *n) {
  /* Stream keys have four '/': in the store's slash-aware order they all lie
   * between these bounds (no UTF-8 segment reaches byte 0xff). */
  return list_streams_range(c, "/catalog/streams//", "/catalog/streams/\xff/", out, n);
}

int tarn_catalog_list_streams_prefix(tarn_catalog *c, const char *ns, const char *prefix,
                                     tarn_catalog_record **out, size_t *n) {
  *out = NULL, *n = 0;
  int rc = tarn_stream_part_check("namespace", ns);
  if (rc)
    return rc;
  if (strchr(prefix, '/') || strlen(prefix) > TARN_STREAM_NAME_MAX)
    return tarn__err(TARN_EINVAL, "stream name prefix \"%s\" holds '/' or is too long", prefix);
  /* Keys of one namespace have the same segments but the last, which
   * compares bytewise: the names starting with prefix lie in [a, b). */
  char a[KEY_MAX], b[KEY_MAX + 1];
  stream_key(a, ns, prefix);
  size_t al = strlen(a);
  memcpy(b, a, al);
  b[al] = (char)0xff, b[al + 1] = 0;
  return list_streams_range(c, a, b, out, n);
}

/* count partitions added; or, total > 0, as many as make total, the layout
 * unchanged by another meanwhile (Kafka's CreatePartitions: issue 37) */
static int add_partitions(tarn_catalog *c, const char *ns, const char *name, uint32_t count,
                          uint32_t total, tarn_catalog_record *out) {
  tarn_catalog_record s;
  int64_t ver;
  int rc = open_stream_v(c, ns, name, &s, &ver);
  if (rc)
    return rc;
  count = !total ? count : total > s.n_logs ? total - (uint32_t)s.n_logs : 0;
  if (count < 1 || s.n_logs + count > TARN_STREAM_PARTITIONS_MAX) {
    size_t have = s.n_logs;
    tarn_catalog_record_free(&s);
    return tarn__err(TARN_EINVAL, "stream %s/%s has %zu partitions; it can grow by 1..%zu", ns,
                     name, have, (size_t)TARN_STREAM_PARTITIONS_MAX - have);
  }
  uint64_t first = 0;
  uint32_t registered_at = (uint32_t)s.n_logs;
  int have_logs = 0, maybe = 0; /* maybe: a layout change of ours may land yet */
  for (int attempt = 0;; attempt++) {
    if (s.state == TARN_STREAM_DROPPING) {
      rc = tarn__err(TARN_ENOTFOUND, "stream %s/%s is being dropped", ns, name);
      break;
    }
    if (attempt == MAX_RETRIES) {
      rc = tarn__err(TARN_ECONFLICT, "stream %s/%s: lost %d races to change its layout; retry", ns,
                     name, MAX_RETRIES);
      break;
    }
    if (s.n_logs + count > TARN_STREAM_PARTITIONS_MAX) {
      rc = tarn__err(TARN_EINVAL, "stream %s/%s would exceed %d partitions", ns, name,
                     TARN_STREAM_PARTITIONS_MAX);
      break;
    }
    /* LS-091: the new logs exist before the layout that names them. */
    if (!have_logs) {
      if ((rc = tarn_catalog_alloc_logs(c, count, &first)) ||
          (rc = write_log_recs(c, ns, name, first, count, (uint32_t)s.n_logs, 'c')))
        break;
      have_logs = 1, registered_at = (uint32_t)s.n_logs;
    } else if (registered_at != s.n_logs && total) {
      /* Another catalog grew the stream: adding to it would pass the total */
      rc = tarn__err(TARN_EINVAL, "stream %s/%s now has %zu partitions (grown meanwhile)", ns, name,
                     s.n_logs);
      break;
    } else if (registered_at != s.n_logs) {
      /* Another catalog grew the stream: our logs move up. */
      if ((rc = write_log_recs(c, ns, name, first, count, (uint32_t)s.n_logs, 'p')))
        break;
      registered_at = (uint32_t)s.n_logs;
    }
    uint64_t *nl = realloc(s.logs, (s.n_logs + count) * sizeof *nl);
    if (!nl) {
      rc = tarn__err(TARN_ENOMEM, "out of memory");
      break;
    }
    s.logs = nl;
    size_t old = s.n_logs;
    for (uint32_t i = 0; i < count; i++)
      s.logs[s.n_logs++] = first + i;
    char key[KEY_MAX];
    stream_key(key, ns, name);
    /* LS-091: one CompareAndSet publishes the whole new layout. */
    rc = put_rec(c, key, &s, 's', ver);
    s.n_logs = old;
    if (rc != TARN_ECONFLICT && rc != TARN_EUNKNOWN)
      break;
    maybe |= rc == TARN_EUNKNOWN;
    tarn_catalog_record_free(&s);
    int r2 = open_stream_v(c, ns, name, &s, &ver);
    if (r2) {
      rc = r2;
      memset(&s, 0, sizeof s);
      break;
    }
    if (rc == TARN_EUNKNOWN) {
      int landed = 0;
      for (size_t i = 0; i < s.n_logs; i++)
        landed |= s.logs[i] == first;
      if (landed) {
        rc = 0;
        break;
      }
    }
  }
  tarn_catalog_record_free(&s);
  if (rc) {
    /* A CompareAndSet of ours held in flight lands if the stream's version
     * is still the one it names: its layout must find our logs registered,
     * and the caller must not read our failure as "not grown". Unless we
     * saw the version move past it (a drop, or a layout too large). */
    if (maybe && (rc == TARN_ENOTFOUND || rc == TARN_EINVAL))
      maybe = 0;
    if (have_logs && !maybe)
      drop_log_recs(c, first, count);
    if (maybe)
      rc = tarn__err(TARN_EUNKNOWN,
                     "adding partitions to stream %s/%s: the outcome is "
                     "unknown; check with 'tarn stream describe'",
                     ns, name);
    return rc;
  }
  return out ? tarn_catalog_open_stream(c, ns, name, out) : 0;
}

int tarn_catalog_add_partitions(tarn_catalog *c, const char *ns, const char *name, uint32_t count,
                                tarn_catalog_record *out) {
  return add_partitions(c, ns, name, count, 0, out);
}

int tarn_catalog_grow_partitions(tarn_catalog *c, const char *ns, const char *name, uint32_t total,
                                 tarn_catalog_record *out) {
  return add_partitions(c, ns, name, 0, total ? total : 1, out);
}

int tarn_catalog_edit_props(tarn_catalog *c, const char *ns, const char *name,
                            tarn_catalog_props_edit edit, void *arg, tarn_catalog_record *out) {
  if (out)
    memset(out, 0, sizeof *out);
  char key[KEY_MAX];
  stream_key(key, ns, name);
  int rc = TARN_ECONFLICT;
  for (int attempt = 0; attempt < MAX_RETRIES && (rc == TARN_ECONFLICT || rc == TARN_EUNKNOWN);
       attempt++) {
    tarn_catalog_record s;
    int64_t ver;
    if ((rc = open_stream_v(c, ns, name, &s, &ver)))
      return rc;
    if (s.state == TARN_STREAM_DROPPING)
      rc = tarn__err(TARN_ENOTFOUND, "stream %s/%s is being dropped", ns, name);
    else if (!(rc = edit(arg, &s)))
      /* the edit lands only on the version it was made from: a change
       * between the read and here is never overwritten */
      rc = put_rec(c, key, &s, TARN__PLANTED(TARN__BUG_PROPS_BLIND_PUT) ? 'p' : 's', ver);
    /* an unknown outcome is retried as a conflict: the edit is idempotent,
     * and a CompareAndSet of the old version can no longer land once the
     * version moved */
    if (!rc && out)
      *out = s;
    else
      tarn_catalog_record_free(&s);
  }
  if (rc == TARN_ECONFLICT || rc == TARN_EUNKNOWN)
    return tarn__err(rc, "stream %s/%s: lost %d races to change its properties; retry", ns, name,
                     MAX_RETRIES);
  return rc;
}

int tarn_catalog_drop_stream(tarn_catalog *c, const char *ns, const char *name, int *existed) {
  if (existed)
    *existed = 0;
  int rc = tarn_stream_ident_check(ns, name);
  if (rc)
    return rc;
  /* LS-090: the tombstone first, whether or not a stream lives, and before
   * looking for the stream: a create that checked for the tombstone before
   * this write finds it when it looks again after creating its stream, or we
   * find its stream below. An existing tombstone (an earlier or concurrent
   * drop) is kept. */
  char tkey[KEY_MAX], skey[KEY_MAX];
  tombstone_key(tkey, ns, name);
  stream_key(skey, ns, name);
  tarn_catalog_record t = {.kind = TARN_CATREC_TOMBSTONE,
                           .ns = (char *)ns,
                           .name = (char *)name,
                           .time_ms = tarn__now_ms()};
  rc = put_rec(c, tkey, &t, 'c', 0);
  if (rc == TARN_EUNKNOWN)
    rc = tarn_catalog_is_dropped(c, ns, name) == 1 ? 0 : TARN_EUNKNOWN;
  if (rc && rc != TARN_EEXIST)
    return tarn__errctx(rc, "dropping stream %s/%s: recording its tombstone", ns, name);

  tarn_catalog_record s;
  int64_t ver;
  rc = open_stream_v(c, ns, name, &s, &ver);
  if (rc == TARN_ENOTFOUND)
    return 0;
  if (rc)
    return rc;
  if (existed)
    *existed = 1;
  /* For reclamation, the tombstone lists the logs; best effort, as the
   * logs are also fenced and their IDs never reused. */
  tarn_catalog_record old;
  int64_t tver;
  if (get_rec(c, tkey, TARN_CATREC_TOMBSTONE, &old, &tver) == 0) {
    if (old.n_logs == 0) {
      old.logs = s.logs, old.n_logs = s.n_logs;
      put_rec(c, tkey, &old, 's', tver);
      old.logs = NULL, old.n_logs = 0;
    }
    tarn_catalog_record_free(&old);
  }

  /* Mark it DROPPING, so no layout change races the deletion of its logs. */
  for (int attempt = 0; s.state != TARN_STREAM_DROPPING; attempt++) {
    s.state = TARN_STREAM_DROPPING;
    rc = put_rec(c, skey, &s, 's', ver);
    if (rc == 0)
      break;
    tarn_catalog_record_free(&s);
    if (rc == TARN_ENOTFOUND)
      return 0; /* a concurrent drop finished it */
    if (rc != TARN_ECONFLICT && rc != TARN_EUNKNOWN)
      return tarn__errctx(rc, "dropping stream %s/%s", ns, name);
    if (attempt == MAX_RETRIES)
      return tarn__err(TARN_ECONFLICT, "dropping stream %s/%s: lost too many races; retry", ns,
                       name);
    rc = open_stream_v(c, ns, name, &s, &ver);
    if (rc == TARN_ENOTFOUND)
      return 0; /* a concurrent drop finished it */
    if (rc)
      return rc;
  }
  for (size_t i = 0; i + TARN__PLANTED(TARN__BUG_CATALOG_DROP_SKIPS_LAST_LOG) < s.n_logs; i++) {
    /* a log whose deletion failed (LS-047: a drain that timed out, a failed
     * DeleteRange) keeps its records: the drop stops and is run again */
    if ((rc = tarn_log_delete(c->meta, s.logs[i], &c->opt, NULL)) &&
        !TARN__PLANTED(TARN__BUG_CATALOG_DROP_IGNORES_LOG_DELETE)) {
      tarn_catalog_record_free(&s);
      return tarn__errctx(rc, "dropping stream %s/%s (run the drop again to resume)", ns, name);
    }
  }
  for (size_t i = 0; i < s.n_logs; i++) {
    char key[KEY_MAX];
    log_key(key, s.logs[i]);
    rc = tarn_meta_delete(c->meta, PART, key);
    if (rc && rc != TARN_ENOTFOUND) {
      tarn_catalog_record_free(&s);
      return tarn__errctx(rc, "dropping stream %s/%s", ns, name);
    }
  }
  tarn_catalog_record_free(&s);
  rc = tarn_meta_delete(c->meta, PART, skey);
  if (rc && rc != TARN_ENOTFOUND)
    return tarn__errctx(rc, "dropping stream %s/%s", ns, name);
  return 0;
}

int tarn_catalog_log_stream(tarn_catalog *c, uint64_t log_id, tarn_catalog_record *out) {
  char key[KEY_MAX];
  log_key(key, log_id);
  int rc = get_rec(c, key, TARN_CATREC_LOG, out, NULL);
  if (rc == TARN_ENOTFOUND)
    return tarn__err(rc, "log %llu belongs to no stream of this catalog",
                     (unsigned long long)log_id);
  if (rc)
    return rc;
  /* A registration whose layout change never got published names no stream. */
  tarn_catalog_record s;
  rc = tarn_catalog_open_stream(c, out->ns, out->name, &s);
  if (!rc) {
    int listed = out->partition < s.n_logs && s.logs[out->partition] == log_id;
    tarn_catalog_record_free(&s);
    if (!listed)
      rc = tarn__err(TARN_ENOTFOUND, "log %llu belongs to no stream of this catalog",
                     (unsigned long long)log_id);
  }
  if (rc)
    tarn_catalog_record_free(out);
  return rc;
}
