/* Ephemeral create-only records whose creates may land late (ephemeral.h). */
#include "log/ephemeral.h"

#include <stdio.h>
#include <string.h>

#include "store/meta_abandoned.h"
#include "util/error.h"
#include "util/planted.h"

/* Creates attempted before an undecided acquisition gives up. */
#define CREATE_ATTEMPTS 4
/* try_create: create again (not an error code: those are negative). */
#define AGAIN 1

static int leaks(void) { return TARN__PLANTED(TARN__BUG_LATE_LANDING_LEAKS); }

/* One create, settled by reading back: 0 (ours), TARN_EEXIST (another's),
 * AGAIN (no record, or an orphan of ours deleted) or the create's error
 * (undecided). *last gets the create's answer. */
static int try_create(tarn_meta *m, const char *part, const char *key, const char *val,
                      int64_t *version, int *in_flight, int *last) {
  size_t len = strlen(val);
  tarn_meta_stat st;
  int rc = tarn_meta_create(m, part, key, val, len, TARN_META_EPHEMERAL, &st);
  if (!rc) {
    *version = st.version;
    return 0;
  }
  *last = rc;
  if (rc == TARN_ESESSION) /* nothing of an ended session lands */
    return rc;
  if (rc != TARN_EEXIST)
    *in_flight = 1;
  /* the create's error is what happened (issue 31 item 10: "disk full", not
   * the read-back's "no key") */
  char why[512];
  snprintf(why, sizeof why, "%s", tarn_errmsg());
  /* The value (a token) settles whose record is there. */
  tarn_meta_rec r = {0};
  int g = tarn_meta_get(m, part, key, &r);
  int out = rc;
  if (g == 0 && r.value_len == len && memcmp(r.value, val, len) == 0) {
    *version = r.stat.version;
    out = 0;
  } else if (g == 0 && !leaks() && tarn__meta_abandoned(m, part, key, r.value, r.value_len)) {
    /* An orphan of ours: no one holds it. By version, so that a newer
     * holder's record stays. */
    int d = tarn_meta_delete_if(m, part, key, r.stat.version, NULL, 0);
    out = d == 0 || d == TARN_ENOTFOUND || d == TARN_ECONFLICT ? AGAIN : rc;
  } else if (g == 0) {
    out = TARN_EEXIST;
  } else if (g == TARN_ENOTFOUND) {
    /* Empty: failed, or still in flight. Once more with the same value. */
    out = leaks() && rc != TARN_EEXIST ? rc : AGAIN;
  }
  tarn_meta_rec_free(&r);
  if (out == rc || out == AGAIN)
    tarn__err(rc, "%s", why);
  return out;
}

int tarn__ephemeral_create(tarn_meta *m, const char *part, const char *key, const char *val,
                           int64_t *version, int *in_flight) {
  int rc = 0, last = TARN_EUNKNOWN;
  *in_flight = 0;
  for (int attempt = 0; attempt < CREATE_ATTEMPTS; attempt++) {
    rc = try_create(m, part, key, val, version, in_flight, &last);
    if (rc != AGAIN)
      break;
    rc = last; /* still undecided if this was the last attempt */
  }
  /* Refused or undecided after an unknown outcome: a copy may land later,
   * an orphan of ours. */
  if (rc && *in_flight && !leaks())
    tarn__meta_abandon(m, part, key, val, strlen(val));
  return rc;
}

void tarn__ephemeral_released(tarn_meta *m, const char *part, const char *key, const char *val,
                              int in_flight, int failed) {
  if ((in_flight || failed) && !leaks())
    tarn__meta_abandon(m, part, key, val, strlen(val));
}

int tarn__ephemeral_sweep(tarn_meta *m, const char *part, const char *prefix) {
  tarn_meta_recs ab;
  int rc = tarn__meta_abandoned_list(m, part, prefix, &ab);
  for (size_t i = 0; i < ab.n && !rc; i++) {
    tarn_meta_rec r = {0};
    int g = tarn_meta_get(m, part, ab.v[i].key, &r);
    if (g == 0 && r.value_len == ab.v[i].value_len &&
        memcmp(r.value, ab.v[i].value, r.value_len) == 0) {
      int d = tarn_meta_delete_if(m, part, ab.v[i].key, r.stat.version, NULL, 0);
      if (d && d != TARN_ENOTFOUND && d != TARN_ECONFLICT)
        rc = d;
    } else if (g && g != TARN_ENOTFOUND) {
      rc = g;
    }
    tarn_meta_rec_free(&r);
  }
  tarn_meta_recs_free(&ab);
  return rc;
}
