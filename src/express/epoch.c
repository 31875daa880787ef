/* Chains and epoch records (the Epochs design, "Epochs are per-star mint
 * counters"; issue 14 "Star, chain, epoch"). */
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <unistd.h>

#include "express/express_internal.h"
#include "util/clock.h"
#include "util/error.h"
#include "util/planted.h"

/* bounded so a live-lock under contention is reported, never spun on */
#define CAS_ATTEMPTS 64

int tarn__xchain_partition(char *out, size_t n, const char *star) {
  int rc = tarn__xstar_check(star);
  if (rc)
    return rc;
  int len = snprintf(out, n, "tarn-chain/%s", star);
  return len < 0 || (size_t)len >= n ? tarn__err(TARN_ERANGE, "chain partition does not fit") : 0;
}

static int class_check(const char *cls) {
  size_t n = cls ? strlen(cls) : 0;
  if (n == 0 || n > 32 || strchr(cls, '/'))
    return tarn__err(TARN_EINVAL, "storage class '%s': 1..32 bytes without '/'", cls ? cls : "");
  return 0;
}

int tarn__xchain_key(char *out, size_t n, const char *cls) {
  int rc = class_check(cls);
  if (rc)
    return rc;
  int len = snprintf(out, n, "/chain/%s", cls);
  return len < 0 || (size_t)len >= n ? tarn__err(TARN_ERANGE, "chain key does not fit") : 0;
}

int tarn__xepoch_key(char *out, size_t n, const char *cls, uint64_t epoch) {
  int rc = class_check(cls);
  if (rc)
    return rc;
  int len = snprintf(out, n, "/epochs/%s/%020" PRIu64, cls, epoch);
  return len < 0 || (size_t)len >= n ? tarn__err(TARN_ERANGE, "epoch key does not fit") : 0;
}

/* ---- the record ------------------------------------------------------------ */

static const char *state_name(int s) { return s == TARN__XEPOCH_FENCED ? "fenced" : "open"; }

int tarn__xepoch_encode(const tarn__xepoch *e, tarn_buf *out) {
  if (tarn__xstar_check(e->star) || class_check(e->cls) || e->epoch == 0 ||
      tarn__xbuckets_check(&e->buckets) || (e->state == TARN__XEPOCH_FENCED) != !!e->has_cut)
    return tarn__err(TARN_EINVAL, "express epoch record: invalid fields (fenced iff a cut)");
  json_t *o = json_pack("{s:s,s:s,s:I,s:s,s:o,s:I,s:I,s:I,s:I,s:I,s:I}", "star", e->star, "class",
                        e->cls, "epoch", (json_int_t)e->epoch, "state", state_name(e->state),
                        "buckets", tarn__xbuckets_json(&e->buckets), "w", (json_int_t)e->buckets.w,
                        "win", (json_int_t)e->buckets.win, "checkpoint", (json_int_t)e->checkpoint,
                        "trimmed", (json_int_t)e->trimmed, "rewritten", (json_int_t)e->rewritten,
                        "created_ms", (json_int_t)e->created_ms);
  if (o && e->has_cut)
    json_object_set_new(o, "cut", json_integer((json_int_t)e->cut));
  if (o && e->absorbing_to) {
    json_t *logs = json_array();
    for (size_t i = 0; logs && i < e->n_absorbing; i++) {
      const tarn__xintent *x = &e->absorbing[i];
      json_array_append_new(logs, json_pack("[I,I,I,I,I]", (json_int_t)x->log_id,
                                            (json_int_t)x->start, (json_int_t)x->cum0,
                                            (json_int_t)x->end, (json_int_t)x->cum1));
    }
    json_object_set_new(o, "absorbing",
                        json_pack("{s:I,s:o}", "to", (json_int_t)e->absorbing_to, "logs", logs));
  }
  if (o && e->n_absorbed) {
    json_t *rs = json_array();
    for (size_t i = 0; rs && i < e->n_absorbed; i++) {
      const tarn__xrange *x = &e->absorbed[i];
      json_array_append_new(rs, json_pack("[I,I,I,I,I,I,I]", (json_int_t)x->log_id,
                                          (json_int_t)x->start, (json_int_t)x->cum0,
                                          (json_int_t)x->end, (json_int_t)x->cum1,
                                          (json_int_t)x->slot_from, (json_int_t)x->slot_to));
    }
    json_object_set_new(o, "absorbed", rs);
  }
  char *text = o ? json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
  json_decref(o);
  if (!text)
    return tarn__err(TARN_ENOMEM, "out of memory");
  int rc = tarn_buf_append(out, text, strlen(text));
  free(text);
  return rc;
}

static int get_u64(json_t *o, const char *k, uint64_t *v) {
  json_t *x = json_object_get(o, k);
  if (!json_is_integer(x) || json_integer_value(x) < 0)
    return -1;
  *v = (uint64_t)json_integer_value(x);
  return 0;
}

static char *get_str(json_t *o, const char *k) {
  json_t *x = json_object_get(o, k);
  return json_is_string(x) ? strdup(json_string_value(x)) : NULL;
}

/* An array of exactly n non-negative integers into f. */
static int get_tuple(json_t *v, uint64_t *f, size_t n) {
  if (!json_is_array(v) || json_array_size(v) != n)
    return -1;
  for (size_t k = 0; k < n; k++) {
    json_t *x = json_array_get(v, k);
    if (!json_is_integer(x) || json_integer_value(x) < 0)
      return -1;
    f[k] = (uint64_t)json_integer_value(x);
  }
  return 0;
}

static int decode_intent(json_t *ab, tarn__xepoch *out) {
  json_t *logs = json_object_get(ab, "logs");
  if (!json_is_object(ab) || json_object_size(ab) != 2 || get_u64(ab, "to", &out->absorbing_to) ||
      out->absorbing_to == 0 || !json_is_array(logs) || json_array_size(logs) == 0)
    return -1;
  out->absorbing = calloc(json_array_size(logs), sizeof *out->absorbing);
  if (!out->absorbing)
    return -1;
  size_t i;
  json_t *v;
  json_array_foreach(logs, i, v) {
    uint64_t f[5];
    if (get_tuple(v, f, 5) || f[3] < f[1] || f[4] < f[2])
      return -1;
    out->absorbing[i] = (tarn__xintent){f[0], f[1], f[2], f[3], f[4]};
    out->n_absorbing++;
  }
  return 0;
}

/* "absorbed": [[log, start, cum0, end, cum1, slot_from, slot_to], ...] */
static int decode_absorbed(json_t *rs, tarn__xepoch *out) {
  if (!json_is_array(rs) || json_array_size(rs) == 0)
    return -1;
  out->absorbed = calloc(json_array_size(rs), sizeof *out->absorbed);
  if (!out->absorbed)
    return -1;
  size_t i;
  json_t *v;
  json_array_foreach(rs, i, v) {
    uint64_t f[7];
    if (get_tuple(v, f, 7) || f[3] <= f[1] || f[4] < f[2] || f[6] <= f[5])
      return -1;
    out->absorbed[i] = (tarn__xrange){f[0], f[1], f[2], f[3], f[4], f[5], f[6]};
    out->n_absorbed++;
  }
  return 0;
}

int tarn__xepoch_decode(const uint8_t *p, size_t n, tarn__xepoch *out) {
  memset(out, 0, sizeof *out);
  json_t *o = json_loadb((const char *)p, n, JSON_REJECT_DUPLICATES, NULL);
  const char *why = "not a JSON object";
  if (!json_is_object(o))
    goto bad;
  why = "a member is missing or of the wrong type";
  out->star = get_str(o, "star");
  out->cls = get_str(o, "class");
  json_t *st = json_object_get(o, "state");
  uint64_t created = 0;
  if (!out->star || !out->cls || !json_is_string(st) || get_u64(o, "epoch", &out->epoch) ||
      get_u64(o, "checkpoint", &out->checkpoint) || get_u64(o, "trimmed", &out->trimmed) ||
      get_u64(o, "rewritten", &out->rewritten) || get_u64(o, "created_ms", &created))
    goto bad;
  out->created_ms = (int64_t)created;
  if (!strcmp(json_string_value(st), "open"))
    out->state = TARN__XEPOCH_OPEN;
  else if (!strcmp(json_string_value(st), "fenced"))
    out->state = TARN__XEPOCH_FENCED;
  else
    goto bad;
  out->has_cut = json_object_get(o, "cut") != NULL;
  if (out->has_cut && get_u64(o, "cut", &out->cut))
    goto bad;
  why = "the state is fenced without a cut, or open with one";
  if ((out->state == TARN__XEPOCH_FENCED) != out->has_cut)
    goto bad;
  why = "the star, class or epoch is invalid";
  if (tarn__xstar_check(out->star) || class_check(out->cls) || out->epoch == 0)
    goto bad;
  json_t *ab = json_object_get(o, "absorbing");
  why = "the absorb intent is malformed";
  if (ab && decode_intent(ab, out))
    goto bad;
  json_t *rs = json_object_get(o, "absorbed");
  why = "the absorbed ranges are malformed";
  if (rs && decode_absorbed(rs, out))
    goto bad;
  why = "unknown members";
  if (json_object_size(o) != 11u + (size_t)out->has_cut + (ab != NULL) + (rs != NULL))
    goto bad;
  why = "the bucket set is invalid";
  if (tarn__xbuckets_from_json(json_object_get(o, "buckets"), json_object_get(o, "w"),
                               json_object_get(o, "win"), &out->buckets))
    goto bad;
  json_decref(o);
  return 0;
bad:
  json_decref(o);
  tarn__xepoch_free(out);
  return tarn__err(TARN_ECORRUPT, "express epoch record: %s", why);
}

void tarn__xepoch_free(tarn__xepoch *e) {
  free(e->absorbing);
  free(e->absorbed);
  free(e->star);
  free(e->cls);
  tarn__xbuckets_free(&e->buckets);
  memset(e, 0, sizeof *e);
}

/* ---- the chain ------------------------------------------------------------- */

static int parse_head(const tarn_meta_rec *r, uint64_t *head) {
  char text[24];
  if (r->value_len == 0 || r->value_len >= sizeof text)
    return tarn__err(TARN_ECORRUPT, "chain counter %s: not a decimal number", r->key);
  memcpy(text, r->value, r->value_len);
  text[r->value_len] = 0;
  char *end;
  unsigned long long v = strtoull(text, &end, 10);
  if (*end || text[0] < '0' || text[0] > '9')
    return tarn__err(TARN_ECORRUPT, "chain counter %s: '%s' is not a decimal number", r->key, text);
  *head = v;
  return 0;
}

int tarn__xchain_head(tarn_meta *m, const char *star, const char *cls, uint64_t *head) {
  char part[TARN__X_PART_MAX], key[TARN__X_KEY_MAX];
  int rc = tarn__xchain_partition(part, sizeof part, star);
  if (!rc)
    rc = tarn__xchain_key(key, sizeof key, cls);
  if (rc)
    return rc;
  tarn_meta_rec r = {0};
  rc = tarn_meta_get(m, part, key, &r);
  *head = 0;
  if (rc == TARN_ENOTFOUND)
    return 0;
  if (!rc)
    rc = parse_head(&r, head);
  tarn_meta_rec_free(&r);
  return rc;
}

/* The CAS increment: the returned number is this caller's alone. Under the
 * guards g (the star lease, issue 30 item 1): in the same atomic step. */
static int increment(tarn_meta *m, const char *part, const char *key, const tarn_meta_guard *g,
                     size_t ng, uint64_t *minted) {
  for (int attempt = 0; attempt < CAS_ATTEMPTS; attempt++) {
    tarn_meta_rec r = {0};
    int rc = tarn_meta_get(m, part, key, &r);
    uint64_t head = 0;
    if (rc == TARN_ENOTFOUND) {
      rc = tarn_meta_create_if(m, part, key, "1", 1, TARN_META_PERSISTENT, g, ng, NULL);
      if (rc == TARN_EEXIST)
        continue;
      if (!rc)
        *minted = 1;
      return rc ? tarn__errctx(rc, "minting an epoch (%s %s)", part, key) : 0;
    }
    if (!rc)
      rc = parse_head(&r, &head);
    int64_t ver = r.stat.version;
    tarn_meta_rec_free(&r);
    if (rc)
      return tarn__errctx(rc, "minting an epoch (%s %s)", part, key);
    if (head >= (uint64_t)INT64_MAX)
      return tarn__err(TARN_ERANGE, "chain %s %s: the counter is exhausted", part, key);
    char text[24];
    int len = snprintf(text, sizeof text, "%" PRIu64, head + 1);
    rc = tarn_meta_cas_if(m, part, key, text, (size_t)len, ver, g, ng, NULL);
    if (rc == TARN_ECONFLICT)
      continue;
    if (!rc)
      *minted = head + 1;
    /* an unknown outcome burns the number either way: never reuse it */
    return rc ? tarn__errctx(rc, "minting an epoch (%s %s)", part, key) : 0;
  }
  return tarn__err(TARN_ECONFLICT, "minting an epoch (%s %s): %d conflicting attempts", part, key,
                   CAS_ATTEMPTS);
}

/* ---- the star lease (issue 30 items 1 and 2) ---------------------------------
 *
 * One ephemeral, create-only record per star in the star's chain partition,
 * bound to the session of the process's metadata handle and naming the
 * holder. Only its holder may mint an epoch of the star: every mint is
 * guarded by the record's existence at the version the holder created
 * (tarn__xchain_mint_led), in the same atomic step as the counter's CAS. A
 * process whose session ended (paused past it, cut off) finds the record
 * gone, or another process's record at another version, and its mint fails:
 * it never acknowledges in a new epoch. Both backends count an expired
 * session's records as absent at once (sqlite: reads hide them and every
 * write transaction sweeps them first, and a late heartbeat never revives an
 * expired session; etcd: the server deletes the lease's keys at expiry, and a
 * keepalive of an expired lease is refused). The key lies under takeover.c's
 * liveness prefix, so the takeover reads it as the star's liveness record. */

int tarn__xstar_lease_read(tarn_meta *m, const char *star, char *holder, size_t n,
                           int64_t *version) {
  char part[TARN__X_PART_MAX];
  int rc = tarn__xchain_partition(part, sizeof part, star);
  if (rc)
    return rc;
  tarn_meta_rec r = {0};
  rc = tarn_meta_get(m, part, TARN__X_STAR_LEASE_KEY, &r);
  if (!rc) {
    if (holder)
      snprintf(holder, n, "%.*s", (int)r.value_len, (const char *)r.value);
    if (version)
      *version = r.stat.version;
  }
  tarn_meta_rec_free(&r);
  return rc;
}

int tarn__xstar_lease_acquire(tarn_meta *m, const char *star, int64_t wait_ms, int64_t *version) {
  char part[TARN__X_PART_MAX], host[128] = "?", val[256];
  int rc = tarn__xchain_partition(part, sizeof part, star);
  if (rc)
    return rc;
  if (gethostname(host, sizeof host) != 0)
    snprintf(host, sizeof host, "?");
  host[sizeof host - 1] = 0;
  int64_t now = 0;
  if (tarn_meta_clock(m, &now))
    tarn_errclear();
  if (tarn__clock_hooked()) /* the simulator's worlds replay: no pid in them */
    snprintf(val, sizeof val, "host=sim since_ms=%lld", (long long)now);
  else
    snprintf(val, sizeof val, "host=%s pid=%ld since_ms=%lld", host, (long)getpid(),
             (long long)now);
  int64_t deadline = tarn__mono_ms() + (wait_ms > 0 ? wait_ms : 0);
  for (;;) {
    tarn_meta_stat st = {0};
    rc = tarn_meta_create(m, part, TARN__X_STAR_LEASE_KEY, val, strlen(val), TARN_META_EPHEMERAL,
                          &st);
    if (!rc) {
      *version = st.version;
      return 0;
    }
    if (rc == TARN_EEXIST && TARN__PLANTED(TARN__BUG_XSTAR_TWO_LIVE)) {
      tarn_errclear();
      *version = 0; /* the bug: a second live process admitted, its mints unguarded */
      return 0;
    }
    if (rc != TARN_EEXIST)
      return tarn__errctx(rc, "taking the star lease of %s", star);
    char who[256] = "";
    int64_t token = 0;
    int r2 = tarn__xstar_lease_read(m, star, who, sizeof who, NULL);
    if (r2 == TARN_ENOTFOUND) {
      tarn_errclear();
      continue; /* it went between the two calls */
    }
    if (r2)
      return tarn__errctx(r2, "reading the star lease of %s", star);
    int64_t left = deadline - tarn__mono_ms();
    if (left <= 0)
      return tarn__err(TARN_EBUSY,
                       "star %s is held by a live process (%s): at most one process "
                       "writes as a star; choose another star, or wait until that "
                       "process ends (its session times out %lld ms after it dies)",
                       star, who, (long long)tarn_meta_session_timeout_ms(m));
    /* a deletion (the holder closed, or its session expired) ends the wait
     * early on etcd; the poll bounds it elsewhere */
    if (tarn_meta_change_token(m, &token) == 0)
      tarn_meta_wait_for_change(m, part, TARN__X_STAR_LEASE_KEY, TARN__X_STAR_LEASE_KEY "~", token,
                                (int)(left < 200 ? left : 200));
    tarn_errclear();
  }
}

int tarn__xstar_lease_release(tarn_meta *m, const char *star, int64_t version) {
  char part[TARN__X_PART_MAX];
  int rc = tarn__xchain_partition(part, sizeof part, star);
  if (!rc)
    rc = tarn_meta_delete_if(m, part, TARN__X_STAR_LEASE_KEY, version, NULL, 0);
  if (rc == TARN_ENOTFOUND || rc == TARN_ECONFLICT) {
    tarn_errclear(); /* gone with the session, or another's now: not ours to delete */
    rc = 0;
  }
  return rc ? tarn__errctx(rc, "releasing the star lease of %s", star) : 0;
}

int tarn__xchain_mint(tarn_meta *m, const char *star, const char *cls, const tarn__xbuckets *s,
                      tarn__xepoch *out) {
  return tarn__xchain_mint_led(m, star, cls, s, 0, out);
}

int tarn__xchain_mint_led(tarn_meta *m, const char *star, const char *cls, const tarn__xbuckets *s,
                          int64_t lease_version, tarn__xepoch *out) {
  memset(out, 0, sizeof *out);
  /* the leadership guard: the star lease at the version its holder created */
  tarn_meta_guard g[1] = {{TARN_META_GUARD_EXISTS, TARN__X_STAR_LEASE_KEY, lease_version}};
  size_t ng = lease_version > 0 && !TARN__PLANTED(TARN__BUG_XROLL_NO_LEAD_CHECK) ? 1 : 0;
  char part[TARN__X_PART_MAX], ckey[TARN__X_KEY_MAX], ekey[TARN__X_KEY_MAX];
  int rc = tarn__xchain_partition(part, sizeof part, star);
  if (!rc)
    rc = tarn__xchain_key(ckey, sizeof ckey, cls);
  if (!rc)
    rc = tarn__xbuckets_check(s);
  if (rc)
    return rc;
  uint64_t epoch = 0;
  rc = increment(m, part, ckey, g, ng, &epoch);
  if (rc == TARN_EGUARD)
    return tarn__err(TARN_ESESSION,
                     "star %s: this process no longer holds the star lease (its "
                     "session ended, or another process of the star took over): it "
                     "mints no epoch and acknowledges nothing more",
                     star);
  if (rc)
    return rc;
  tarn__xepoch e = {0};
  e.star = strdup(star);
  e.cls = strdup(cls);
  e.epoch = epoch;
  e.state = TARN__XEPOCH_OPEN;
  rc = e.star && e.cls ? tarn__xbuckets_copy(s, &e.buckets)
                       : tarn__err(TARN_ENOMEM, "out of memory");
  tarn_buf b;
  tarn_buf_init(&b);
  if (!rc)
    rc = tarn_meta_clock(m, &e.created_ms);
  if (!rc)
    rc = tarn__xepoch_encode(&e, &b);
  if (!rc)
    rc = tarn__xepoch_key(ekey, sizeof ekey, cls, epoch);
  tarn_meta_stat st = {0};
  if (!rc)
    rc = tarn_meta_create_if(m, part, ekey, b.data, b.len, TARN_META_PERSISTENT, g, ng, &st);
  tarn_buf_free(&b);
  if (rc) {
    /* the number is burned: no record, and no slot may be written under it */
    tarn__xepoch_free(&e);
    return tarn__errctx(rc,
                        "creating the record of epoch %" PRIu64 " of %s (the number is "
                        "burned)",
                        epoch, part);
  }
  e.version = st.version;
  *out = e;
  return 0;
}

int tarn__xepoch_load(tarn_meta *m, const char *star, const char *cls, uint64_t epoch,
                      tarn__xepoch *out) {
  memset(out, 0, sizeof *out);
  char part[TARN__X_PART_MAX], key[TARN__X_KEY_MAX];
  int rc = tarn__xchain_partition(part, sizeof part, star);
  if (!rc)
    rc = tarn__xepoch_key(key, sizeof key, cls, epoch);
  if (rc)
    return rc;
  tarn_meta_rec r = {0};
  rc = tarn_meta_get(m, part, key, &r);
  if (rc == TARN_ENOTFOUND) {
    tarn_meta_rec_free(&r);
    return tarn__err(TARN_ENOTFOUND,
                     "no record of epoch %" PRIu64 " in %s (never minted, or "
                     "burned)",
                     epoch, part);
  }
  if (!rc)
    rc = tarn__xepoch_decode(r.value, r.value_len, out);
  if (!rc && (strcmp(out->star, star) || strcmp(out->cls, cls) || out->epoch != epoch)) {
    tarn__xepoch_free(out);
    rc = tarn__err(TARN_ECORRUPT, "%s %s names another epoch", part, key);
  }
  if (!rc)
    out->version = r.stat.version;
  tarn_meta_rec_free(&r);
  return rc;
}

/* One CAS of the record with fn applied; on conflict re-read and re-apply.
 * fn returns 0 to write, 1 for "nothing to change", or an error. */
static int update(tarn_meta *m, tarn__xepoch *e, int (*fn)(tarn__xepoch *, const void *),
                  const void *arg) {
  char part[TARN__X_PART_MAX], key[TARN__X_KEY_MAX];
  int rc = tarn__xchain_partition(part, sizeof part, e->star);
  if (!rc)
    rc = tarn__xepoch_key(key, sizeof key, e->cls, e->epoch);
  if (rc)
    return rc;
  for (int attempt = 0; attempt < CAS_ATTEMPTS; attempt++) {
    rc = fn(e, arg);
    if (rc == 1)
      return 0;
    if (rc)
      return rc;
    tarn_buf b;
    tarn_buf_init(&b);
    rc = tarn__xepoch_encode(e, &b);
    tarn_meta_stat st = {0};
    if (!rc)
      rc = tarn_meta_cas(m, part, key, b.data, b.len, e->version, &st);
    tarn_buf_free(&b);
    if (!rc) {
      e->version = st.version;
      return 0;
    }
    if (rc != TARN_ECONFLICT && rc != TARN_EUNKNOWN)
      return tarn__errctx(rc, "updating epoch record %s %s", part, key);
    /* re-read: an unknown outcome is judged by what the record now says */
    char *star = strdup(e->star), *cls = strdup(e->cls);
    uint64_t epoch = e->epoch;
    tarn__xepoch fresh;
    rc = star && cls ? tarn__xepoch_load(m, star, cls, epoch, &fresh) : TARN_ENOMEM;
    free(star);
    free(cls);
    if (rc)
      return rc;
    tarn__xepoch_free(e);
    *e = fresh;
  }
  return tarn__err(TARN_ECONFLICT, "updating epoch record %s %s: %d conflicting attempts", part,
                   key, CAS_ATTEMPTS);
}

typedef struct {
  int cursor;
  uint64_t value;
} advance_arg;

static int apply_advance(tarn__xepoch *e, const void *p) {
  const advance_arg *a = p;
  uint64_t *c = a->cursor == TARN__XCUR_CHECKPOINT ? &e->checkpoint
                : a->cursor == TARN__XCUR_TRIMMED  ? &e->trimmed
                                                   : &e->rewritten;
  if (*c >= a->value)
    return 1;
  *c = a->value;
  return 0;
}

int tarn__xepoch_advance(tarn_meta *m, tarn__xepoch *e, int cursor, uint64_t value) {
  if (cursor < TARN__XCUR_CHECKPOINT || cursor > TARN__XCUR_REWRITTEN)
    return tarn__err(TARN_EINVAL, "unknown epoch cursor %d", cursor);
  advance_arg a = {cursor, value};
  return update(m, e, apply_advance, &a);
}

static int apply_cut(tarn__xepoch *e, const void *p) {
  uint64_t cut = *(const uint64_t *)p;
  if (e->has_cut) {
    if (e->cut == cut)
      return 1;
    return tarn__err(TARN_ECORRUPT,
                     "BUG: epoch %" PRIu64 " of star %s already has cut %" PRIu64
                     ", and a fence computed %" PRIu64 " (a disagreeing cut is a "
                     "programming error; nothing overwritten)",
                     e->epoch, e->star, e->cut, cut);
  }
  /* issue 30 item 6: every slot below the checkpoint is absorbed, so was
   * acknowledged; a cut below it (a walk from a stale checkpoint that saw
   * reclaimed slots empty) would declare acknowledged slots dead */
  if (cut < e->checkpoint)
    return tarn__err(TARN_ECORRUPT,
                     "BUG: epoch %" PRIu64 " of star %s: a fence computed cut %" PRIu64
                     ", below the checkpoint %" PRIu64
                     " (absorbed, acknowledged slots); nothing published",
                     e->epoch, e->star, cut, e->checkpoint);
  e->has_cut = 1;
  e->cut = cut;
  e->state = TARN__XEPOCH_FENCED;
  return 0;
}

int tarn__xepoch_publish_cut(tarn_meta *m, tarn__xepoch *e, uint64_t cut) {
  return update(m, e, apply_cut, &cut);
}

typedef struct intent_arg {
  uint64_t to;
  const tarn__xintent *v;
  size_t n;
} intent_arg;

static int apply_begin(tarn__xepoch *e, const void *p) {
  const intent_arg *a = p;
  if (e->checkpoint >= a->to)
    return 1;
  if (e->absorbing_to) {
    if (e->absorbing_to == a->to && e->n_absorbing == a->n &&
        !memcmp(e->absorbing, a->v, a->n * sizeof *a->v))
      return 1; /* a resume of the same intent */
    return tarn__err(TARN_ECORRUPT,
                     "express epoch %" PRIu64 " of star %s: an absorb of slots "
                     "up to %" PRIu64 " is pending; refusing another up to %" PRIu64,
                     e->epoch, e->star, e->absorbing_to, a->to);
  }
  tarn__xintent *c = malloc(a->n * sizeof *c);
  if (!c)
    return tarn__err(TARN_ENOMEM, "out of memory");
  memcpy(c, a->v, a->n * sizeof *c);
  e->absorbing = c;
  e->n_absorbing = a->n;
  e->absorbing_to = a->to;
  return 0;
}

int tarn__xepoch_begin_absorb(tarn_meta *m, tarn__xepoch *e, uint64_t to, const tarn__xintent *v,
                              size_t n) {
  if (to == 0 || n == 0)
    return tarn__err(TARN_EINVAL, "an absorb intent needs slots and logs");
  if (e->checkpoint >= to)
    return 1;
  intent_arg a = {to, v, n};
  int rc = update(m, e, apply_begin, &a);
  if (rc == 0 && e->checkpoint >= to)
    return 1;
  return rc;
}

/* The intent's sections become absorbed ranges: each extends its log's last
 * range when it starts where that one ends, else it is a range of its own
 * (so the record grows with the logs, not with the runs). */
static int record_absorbed(tarn__xepoch *e, uint64_t to) {
  size_t room = e->n_absorbed + e->n_absorbing;
  tarn__xrange *v = room ? realloc(e->absorbed, room * sizeof *v) : e->absorbed;
  if (room && !v)
    return tarn__err(TARN_ENOMEM, "out of memory");
  e->absorbed = v;
  for (size_t i = 0; i < e->n_absorbing; i++) {
    const tarn__xintent *x = &e->absorbing[i];
    size_t j = e->n_absorbed;
    while (j > 0 && v[j - 1].log_id != x->log_id)
      j--;
    if (j > 0 && v[j - 1].end == x->start && v[j - 1].cum1 == x->cum0) {
      v[j - 1].end = x->end;
      v[j - 1].cum1 = x->cum1;
      v[j - 1].slot_to = to;
    } else {
      v[e->n_absorbed++] =
          (tarn__xrange){x->log_id, x->start, x->cum0, x->end, x->cum1, e->checkpoint, to};
    }
  }
  return 0;
}

static int apply_end(tarn__xepoch *e, const void *p) {
  uint64_t to = *(const uint64_t *)p;
  if (e->checkpoint >= to && !e->absorbing_to)
    return 1;
  /* an intent that is not this absorb's is another settler's, pending: this
   * one was resolved and ended by someone else already; clearing it would
   * leave the other's puts without an intent to resume (issue 30 item 6) */
  if (e->absorbing_to && e->absorbing_to != to) {
    if (e->checkpoint >= to)
      return 1;
    return tarn__err(TARN_ECORRUPT,
                     "express epoch %" PRIu64 " of star %s: ending an absorb up to %" PRIu64
                     " with the checkpoint at %" PRIu64 " and another's, up to %" PRIu64
                     ", pending",
                     e->epoch, e->star, to, e->checkpoint, e->absorbing_to);
  }
  if (e->absorbing_to == to && e->checkpoint < to) {
    int rc = record_absorbed(e, to);
    if (rc)
      return rc;
  }
  if (e->checkpoint < to)
    e->checkpoint = to;
  free(e->absorbing);
  e->absorbing = NULL;
  e->n_absorbing = 0;
  e->absorbing_to = 0;
  return 0;
}

int tarn__xepoch_end_absorb(tarn_meta *m, tarn__xepoch *e, uint64_t to) {
  return update(m, e, apply_end, &to);
}
