/* Deleting a log: fence, drain the write leases, remove the index records
 * (spec "Fences and log deletion"; LS-044 ... LS-047, LS-092). */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "log/ephemeral.h"
#include "log/retention_trim.h"
#include "tarn/catalog.h"
#include "tarn/key.h"
#include "util/clock.h"
#include "util/error.h"
#include "util/planted.h"

static int64_t mono_ms(void) { return tarn__mono_ms(); }

static void sleep_ms(int ms) { tarn__sleep_ms(ms); }

/* The number of lease records of L (all of them when want_all, else 0 or 1). */
static int count_leases(tarn_meta *m, const char *part, uint64_t log_id, int want_all, size_t *n) {
  char a[TARN_KEY_SLASH_MAX], b[TARN_KEY_SLASH_MAX + 1];
  int rc = tarn_key_lease_prefix(a, log_id);
  if (rc)
    return rc;
  /* Tokens are UTF-8 and hold no '/', so no token byte reaches 0xff. */
  snprintf(b, sizeof b, "%s\xff", a);
  tarn_meta_recs r = {0};
  rc = tarn_meta_list(m, part, a, b, 0, want_all ? 0 : 1, &r);
  *n = r.n;
  tarn_meta_recs_free(&r);
  return rc;
}

int tarn_log_delete(tarn_meta *m, uint64_t log_id, const tarn_catalog_options *opt,
                    size_t *removed) {
  if (removed)
    *removed = 0;
  int timeout = opt && opt->drain_timeout_ms > 0 ? opt->drain_timeout_ms : TARN_DRAIN_TIMEOUT_MS;
  int poll = opt && opt->drain_poll_ms > 0 ? opt->drain_poll_ms : TARN_DRAIN_POLL_MS;
  char part[TARN_KEY_PARTITION_LEN + 1], fence[TARN_KEY_SLASH_MAX];
  char lo[TARN_KEY_LEN + 1], hi[TARN_KEY_LEN + 1];
  int rc;
  if ((rc = tarn_key_partition(part, log_id)) || (rc = tarn_key_fence(fence, log_id)) ||
      (rc = tarn_key_format(lo, log_id, 0, 0)) ||
      (rc = tarn_key_format(hi, log_id, TARN_KEY_MAX, TARN_KEY_MAX)))
    return rc;

  /* LS-044: CreateIfAbsent; a fence already there (an earlier or concurrent
   * deletion) is success. The value is Ursa's one byte 0x01; only existence
   * matters. LS-045: never written again, never deleted. */
  static const uint8_t one = 0x01;
  rc = tarn_meta_create(m, part, fence, &one, 1, TARN_META_PERSISTENT, NULL);
  if (rc == TARN_EUNKNOWN) {
    /* The create may have landed: the fence's existence settles it. */
    tarn_meta_rec f = {0};
    rc = tarn_meta_get(m, part, fence, &f);
    tarn_meta_rec_free(&f);
    if (rc == TARN_ENOTFOUND)
      rc = tarn_meta_create(m, part, fence, &one, 1, TARN_META_PERSISTENT, NULL);
  }
  if (rc && rc != TARN_EEXIST)
    return tarn__errctx(rc, "deleting log %llu: installing the write fence",
                        (unsigned long long)log_id);
  /* LS-092: a fence already there may be an earlier deletion that failed
   * after fencing; its drain and DeleteRange are redone, never assumed */
  if (rc == TARN_EEXIST && TARN__PLANTED(TARN__BUG_DELETE_TRUSTS_FENCE))
    return 0;

  /* LS-046: list the lease records until none remains. */
  int64_t deadline = mono_ms() + timeout;
  char lp[TARN_KEY_SLASH_MAX];
  if ((rc = tarn_key_lease_prefix(lp, log_id)))
    return rc;
  for (;;) {
    /* Our own orphans first (this handle's lease creates that landed after
     * their acquire gave up: log/ephemeral.h): no writer holds them and
     * nothing else ends them while this process lives. */
    tarn__ephemeral_sweep(m, part, lp);
    size_t n;
    if ((rc = count_leases(m, part, log_id, 0, &n)))
      return tarn__errctx(rc, "deleting log %llu: listing write leases",
                          (unsigned long long)log_id);
    if (n == 0 || TARN__PLANTED(TARN__BUG_DELETE_NO_DRAIN))
      break;
    int64_t left = deadline - mono_ms();
    if (left <= 0) {
      /* LS-047: leave the records, the objects and the fence as they are. */
      if (count_leases(m, part, log_id, 1, &n))
        n = 1;
      return tarn__err(TARN_EBUSY,
                       "deleting log %llu: %zu write lease(s) still held after %d ms; the log "
                       "is fenced (no new leases) and its records are unchanged; retry the "
                       "deletion once the writers have stopped",
                       (unsigned long long)log_id, n, timeout);
    }
    sleep_ms(left < poll ? (int)left : poll);
  }

  /* LS-046: only now remove every index record of L. Idempotent (LS-092):
   * an empty range is no error. */
  rc = tarn_meta_delete_range(m, part, lo, hi, removed);
  if (!rc) /* tarn's own records of L that the fence stops: retention's time marks */
    rc = tarn__retention_forget(m, log_id);
  if (rc)
    return tarn__errctx(rc,
                        "deleting log %llu: removing its index records (the log stays "
                        "fenced; retry the deletion)",
                        (unsigned long long)log_id);
  return 0;
}
