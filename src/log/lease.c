#include "tarn/lease.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log/ephemeral.h"
#include "tarn/key.h"
#include "util/error.h"
#include "util/planted.h"
#include "util/random.h"

struct tarn_lease {
  tarn_meta *meta;
  uint64_t log_id;
  char part[TARN_KEY_PARTITION_LEN + 1];
  char key[TARN_KEY_SLASH_MAX];
  char fence[TARN_KEY_SLASH_MAX];
  char token[37];
  int64_t version;  /* of the lease record: its release deletes only that */
  uint64_t session; /* tarn_meta_session_gen() when it was acquired */
  int in_flight;    /* a create had an unknown outcome: a copy may land later */
};

/* A random (version 4) UUID string: the token no other lease of L uses. */
static int new_token(char out[37]) {
  uint8_t b[16];
  int rc = tarn__random(b, sizeof b, "lease token");
  if (rc)
    return rc;
  b[6] = (uint8_t)((b[6] & 0x0f) | 0x40);
  b[8] = (uint8_t)((b[8] & 0x3f) | 0x80);
  snprintf(out, 37, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0],
           b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14],
           b[15]);
  return 0;
}

/* Deletes a lease record, retrying a failed Delete: a record left behind lives
 * as long as our session (this process keeps it alive) and holds up a
 * deletion's drain (LS-046, LS-047) until then. */
static int drop_record(tarn_meta *m, const char *part, const char *key, int64_t version) {
  int d = 0;
  for (int attempt = 0; attempt < 3; attempt++) {
    d = tarn_meta_delete_if(m, part, key, version, NULL, 0);
    if (d == 0 || d == TARN_ENOTFOUND || d == TARN_ESESSION || d == TARN_ECONFLICT)
      return 0;
  }
  return d;
}

int tarn_lease_acquire(tarn_meta *m, uint64_t log_id, tarn_lease **out) {
  *out = NULL;
  tarn_lease *l = calloc(1, sizeof *l);
  if (!l)
    return tarn__err(TARN_ENOMEM, "out of memory");
  l->meta = m;
  l->log_id = log_id;
  int rc;
  char *fence = l->fence;
  l->session = tarn_meta_session_gen(m);
  if ((rc = tarn_key_partition(l->part, log_id)) || (rc = tarn_key_fence(fence, log_id)) ||
      (rc = new_token(l->token)) || (rc = tarn_key_lease(l->key, log_id, l->token))) {
    free(l);
    return rc;
  }
  /* Issue 31 item 11 (confirmed): the create below touched the partition of
   * a log already fenced, drained and deleted — a record in a deleted log's
   * partition, and during a deletion's drain (LS-046) each refused attempt
   * was one more lease record for the catalog to wait out, so a client
   * retrying a deleted topic's produce could hold the drain up. A fence
   * already there refuses now, with nothing written; LS-040's create-then-
   * Get below still decides for a fence that comes later. */
  /* (the planted lease-ignores-fence ignores this read of the fence too) */
  if (!TARN__PLANTED(TARN__BUG_LEASE_CREATE_ON_FENCED) &&
      !TARN__PLANTED(TARN__BUG_LEASE_IGNORES_FENCE)) {
    tarn_meta_rec f0 = {0};
    rc = tarn_meta_get(m, l->part, fence, &f0);
    tarn_meta_rec_free(&f0);
    if (rc != TARN_ENOTFOUND) {
      free(l);
      if (rc == 0)
        return tarn__err(TARN_EFENCED, "log %llu is fenced (deleted): no new write leases",
                         (unsigned long long)log_id);
      return tarn__errctx(rc, "lease on log %llu: reading the fence", (unsigned long long)log_id);
    }
  }
  /* Orphans of this log's earlier leases through this handle: creates that
   * landed after their acquire gave up, each holding up a deletion's drain
   * (LS-046) while this process lives (log/ephemeral.h). */
  char prefix[TARN_KEY_SLASH_MAX];
  if (!tarn_key_lease_prefix(prefix, log_id))
    tarn__ephemeral_sweep(m, l->part, prefix);
  /* LS-040: first the ephemeral lease record, then the fence. A create of
   * unknown outcome is settled there too: an undecided one is remembered,
   * and the record dropped in case it landed. */
  if (TARN__PLANTED(TARN__BUG_LATE_LANDING_LEAKS)) {
    /* planted: the lease's create before issue 12 (drop on unknown) */
    tarn_meta_stat st;
    rc = tarn_meta_create(m, l->part, l->key, l->token, strlen(l->token), TARN_META_EPHEMERAL, &st);
    l->version = rc ? TARN_META_ANY_VERSION : st.version;
    l->in_flight = rc && rc != TARN_EEXIST && rc != TARN_ESESSION;
  } else {
    rc = tarn__ephemeral_create(m, l->part, l->key, l->token, &l->version, &l->in_flight);
  }
  if (rc) {
    if (l->in_flight) {
      char why[512];
      snprintf(why, sizeof why, "%s", tarn_errmsg());
      drop_record(m, l->part, l->key, TARN_META_ANY_VERSION);
      tarn__err(rc, "%s", why);
    }
    free(l);
    return tarn__errctx(rc, "lease on log %llu", (unsigned long long)log_id);
  }
  tarn_meta_rec f = {0};
  rc = tarn_meta_get(m, l->part, fence, &f);
  tarn_meta_rec_free(&f);
  if (rc == TARN_ENOTFOUND || (rc == 0 && TARN__PLANTED(TARN__BUG_LEASE_IGNORES_FENCE))) {
    *out = l;
    return 0;
  }
  /* LS-041: fenced, or the Get failed: give the record back, use nothing. */
  char why[512];
  snprintf(why, sizeof why, "%s", rc == 0 ? "" : tarn_errmsg());
  /* LS-041: the record MUST go. */
  int d = drop_record(m, l->part, l->key, l->version);
  tarn__ephemeral_released(m, l->part, l->key, l->token, l->in_flight, d);
  free(l);
  if (rc == 0)
    return tarn__err(TARN_EFENCED, "log %llu is fenced (deleted): no new write leases",
                     (unsigned long long)log_id);
  return tarn__err(rc, "lease on log %llu: reading the fence failed: %s",
                   (unsigned long long)log_id, why);
}

int tarn_lease_check(tarn_lease *l) {
  int rc = tarn_meta_session_ok(l->meta);
  if (!rc && tarn_meta_session_gen(l->meta) != l->session)
    rc = TARN_ESESSION; /* the handle renewed its session: this lease's record went with the old */
  if (rc)
    return tarn__err(TARN_ESESSION, "lease on log %llu: the metadata-store session ended",
                     (unsigned long long)l->log_id);
  return 0;
}

uint64_t tarn_lease_log(const tarn_lease *l) { return l->log_id; }
const char *tarn_lease_token(const tarn_lease *l) { return l->token; }

int tarn_lease_release(tarn_lease *l) {
  if (!l)
    return 0;
  int rc = drop_record(l->meta, l->part, l->key, l->version);
  tarn__ephemeral_released(l->meta, l->part, l->key, l->token, l->in_flight, rc);
  free(l);
  return rc;
}

size_t tarn_lease_guards(const tarn_lease *l, tarn_meta_guard g[TARN_LEASE_GUARDS]) {
  g[0] = (tarn_meta_guard){TARN_META_GUARD_EXISTS, l->key, l->version};
  g[1] = (tarn_meta_guard){TARN_META_GUARD_ABSENT, l->fence, 0};
  return TARN_LEASE_GUARDS;
}

void tarn_lease_forget(tarn_lease *l) { free(l); }
