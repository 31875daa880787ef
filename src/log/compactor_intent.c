/* Compaction intents: written before C2's first file, removed after C3–C4 or
 * when the compaction is given up; the reclaimer honours them (LS-084;
 * docs/compaction.md, "Intents"). */
#define _POSIX_C_SOURCE 200809L
#include "log/compactor_intent.h"

#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tarn/compactor.h"
#include "util/error.h"
#include "util/random.h"

static void intent_key(char *out, size_t n, uint64_t log_id, const char *id) {
  /* one slash level: the store orders keys by their number of slashes first */
  snprintf(out, n, "/intents/%020" PRIu64 "-%s", log_id, id);
}

/* The per-log compaction lock's record (tarn_compact_lock_acquire). */
static void lock_key(char *out, size_t n, uint64_t log_id) {
  snprintf(out, n, "/locks/%020" PRIu64, log_id);
}

/* The value of log_id's lock record now (*v = "" without one; free it). */
static int lock_now(tarn_meta *m, uint64_t log_id, char **v) {
  char lk[64];
  lock_key(lk, sizeof lk, log_id);
  tarn_meta_rec lr = {0};
  int rc = tarn_meta_get(m, TARN_COMPACTION_PARTITION, lk, &lr);
  if (rc && rc != TARN_ENOTFOUND)
    return tarn__errctx(rc, "compaction intent of log %" PRIu64 ": its lock", log_id);
  *v = rc ? strdup("") : strndup((const char *)lr.value, lr.value_len);
  tarn_meta_rec_free(&lr);
  return *v ? 0 : tarn__err(TARN_ENOMEM, "out of memory");
}

/* Writes intent id of log_id under the lock as it is now: the caller holds
 * it (LS-074), so its value (owner and random token) tells the reclaimer
 * when this holder has lost it. CreateIfAbsent when version < 0, else
 * CompareAndSet on version. */
static int intent_write(tarn_meta *m, uint64_t log_id, const char *id, int64_t now_ms,
                        int64_t version) {
  char *lock = NULL;
  int rc = lock_now(m, log_id, &lock);
  if (rc)
    return rc;
  json_t *o = json_pack("{s:I,s:s,s:s,s:I}", "log", (json_int_t)log_id, "id", id, "lock", lock,
                        "created_ms", (json_int_t)now_ms);
  free(lock);
  char *v = o ? json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
  json_decref(o);
  if (!v)
    return tarn__err(TARN_ENOMEM, "compaction intent: cannot encode");
  char k[96];
  intent_key(k, sizeof k, log_id, id);
  rc = version < 0 ? tarn_meta_create(m, TARN_COMPACTION_PARTITION, k, v, strlen(v),
                                      TARN_META_PERSISTENT, NULL)
                   : tarn_meta_cas(m, TARN_COMPACTION_PARTITION, k, v, strlen(v), version, NULL);
  if (rc == TARN_EUNKNOWN) {
    /* a lost reply: the record may be there, or not; C2 must not start
     * unannounced, so read it back (a random ID is only ours) */
    tarn_meta_rec r = {0};
    rc = tarn_meta_get(m, TARN_COMPACTION_PARTITION, k, &r);
    if (rc == TARN_ENOTFOUND)
      rc = tarn__err(TARN_EUNKNOWN, "compaction intent %s: not written", k);
    else if (!rc && (r.value_len != strlen(v) || memcmp(r.value, v, r.value_len) != 0))
      rc = tarn__err(TARN_ECONFLICT, "compaction intent %s: changed meanwhile", k);
    tarn_meta_rec_free(&r);
  }
  free(v);
  return rc ? tarn__errctx(rc, "compaction intent %s", k) : 0;
}

int tarn__intent_open(tarn_meta *m, uint64_t log_id, int64_t now_ms,
                      char id[TARN__INTENT_ID_LEN + 1]) {
  id[0] = 0;
  uint8_t b[TARN__INTENT_ID_LEN / 2];
  int rc = tarn__random(b, sizeof b, "compaction intent");
  if (rc)
    return rc;
  char nid[TARN__INTENT_ID_LEN + 1];
  for (size_t i = 0; i < sizeof b; i++)
    snprintf(nid + 2 * i, 3, "%02x", b[i]);
  if ((rc = intent_write(m, log_id, nid, now_ms, -1)))
    return rc;
  memcpy(id, nid, sizeof nid);
  return 0;
}

static int intent_decode(const tarn_meta_rec *r, tarn__intent *in);

int tarn__intent_refresh(tarn_meta *m, uint64_t log_id, const char *id, int64_t now_ms) {
  if (!id || !id[0])
    return 0;
  char k[96];
  intent_key(k, sizeof k, log_id, id);
  int rc = 0;
  for (int attempt = 0; attempt < 3; attempt++) {
    tarn_meta_rec r = {0};
    tarn__intent in;
    char *lock = NULL;
    int64_t version = -1;
    int same = 0;
    rc = tarn_meta_get(m, TARN_COMPACTION_PARTITION, k, &r);
    if (rc == TARN_ENOTFOUND) {
      rc = 0; /* reaped: announced again */
    } else if (!rc && !(rc = intent_decode(&r, &in))) {
      version = r.stat.version;
      if (!(rc = lock_now(m, log_id, &lock)))
        same = strcmp(lock, in.lock) == 0;
      free(in.key);
      free(in.lock);
      free(lock);
    }
    tarn_meta_rec_free(&r);
    if (rc || same)
      return rc;
    rc = intent_write(m, log_id, id, now_ms, version);
    if (rc != TARN_EEXIST && rc != TARN_ECONFLICT && rc != TARN_ENOTFOUND)
      return rc;
  }
  return rc;
}

int tarn__intent_drop(tarn_meta *m, uint64_t log_id, const char *id) {
  if (!id || !id[0])
    return 0;
  char k[96];
  intent_key(k, sizeof k, log_id, id);
  int rc = tarn_meta_delete(m, TARN_COMPACTION_PARTITION, k);
  return rc == TARN_ENOTFOUND ? 0 : rc;
}

static int is_id(const char *s) {
  if (strlen(s) != TARN__INTENT_ID_LEN)
    return 0;
  for (const char *p = s; *p; p++)
    if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f')))
      return 0;
  return 1;
}

static int intent_decode(const tarn_meta_rec *r, tarn__intent *in) {
  memset(in, 0, sizeof *in);
  json_error_t je;
  json_t *o = json_loadb((const char *)r->value, r->value_len, JSON_REJECT_DUPLICATES, &je);
  json_t *lg = json_object_get(o, "log"), *id = json_object_get(o, "id"),
         *lk = json_object_get(o, "lock"), *cm = json_object_get(o, "created_ms");
  int rc = 0;
  if (!json_is_integer(lg) || json_integer_value(lg) < 0 || !json_is_string(id) ||
      !is_id(json_string_value(id)) || !json_is_string(lk) || !json_is_integer(cm))
    rc = tarn__err(TARN_ECORRUPT, "compaction intent %s: not an intent", r->key);
  if (!rc) {
    in->log_id = (uint64_t)json_integer_value(lg);
    snprintf(in->id, sizeof in->id, "%s", json_string_value(id));
    in->created_ms = json_integer_value(cm);
    in->key = strdup(r->key);
    in->lock = strdup(json_string_value(lk));
    if (!in->key || !in->lock)
      rc = tarn__err(TARN_ENOMEM, "out of memory");
  }
  json_decref(o);
  if (rc) {
    free(in->key);
    free(in->lock);
    memset(in, 0, sizeof *in);
  }
  return rc;
}

int tarn__intents_list(tarn_meta *m, tarn__intent **v, size_t *n) {
  *v = NULL;
  *n = 0;
  tarn_meta_recs rs = {0};
  int rc = tarn_meta_scan(m, TARN_COMPACTION_PARTITION, "/intents/", "/intents/~", 0, 0, &rs);
  if (rc)
    return rc;
  tarn__intent *out = rs.n ? calloc(rs.n, sizeof *out) : NULL;
  if (rs.n && !out)
    rc = tarn__err(TARN_ENOMEM, "out of memory");
  size_t k = 0;
  /* An intent that does not decode fails the pass: the files it protects
   * are not known, so none may be taken for orphans. */
  for (size_t i = 0; i < rs.n && !rc; i++)
    if (!(rc = intent_decode(&rs.v[i], &out[k])))
      k++;
  tarn_meta_recs_free(&rs);
  if (rc) {
    tarn__intents_free(out, k);
    return rc;
  }
  *v = out;
  *n = k;
  return 0;
}

void tarn__intents_free(tarn__intent *v, size_t n) {
  for (size_t i = 0; i < n; i++) {
    free(v[i].key);
    free(v[i].lock);
  }
  free(v);
}

int tarn__intent_lock_held(tarn_meta *m, const tarn__intent *in, int *held) {
  *held = 0;
  char lk[64];
  lock_key(lk, sizeof lk, in->log_id);
  tarn_meta_rec r = {0};
  int rc = tarn_meta_get(m, TARN_COMPACTION_PARTITION, lk, &r);
  if (rc == TARN_ENOTFOUND)
    return 0;
  if (!rc)
    *held = in->lock[0] && r.value_len == strlen(in->lock) &&
            memcmp(r.value, in->lock, r.value_len) == 0;
  tarn_meta_rec_free(&r);
  return rc;
}

void tarn__intent_tag(uint64_t log_id, const char *id, char *out, size_t n) {
  snprintf(out, n, "%" PRIu64 "-%.*s", log_id, TARN__INTENT_ID_LEN, id);
}

int tarn__intent_tag_of_file(const char *base, char *out, size_t n) {
  const char *dash1 = strchr(base, '-'), *dash2 = strrchr(base, '-');
  size_t l = strlen(base);
  if (!dash1 || dash1 == dash2 || l < 8 || strcmp(base + l - 8, ".parquet") != 0 ||
      (size_t)(base + l - 8 - (dash2 + 1)) != 2 * TARN__INTENT_ID_LEN)
    return 0;
  snprintf(out, n, "%.*s-%.*s", (int)(dash1 - base), base, TARN__INTENT_ID_LEN, dash2 + 1);
  return 1;
}
