/* A log's bounds, soft trim and hard trim (spec "Trim marker", "Soft trim",
 * "Hard trim", "Reading"; LS-054, LS-079, LS-080, LS-081). */
#include "tarn/trim.h"

#include <stdio.h>
#include <string.h>

#include "tarn/entryindex.h"
#include "tarn/key.h"
#include "tarn/trimmark.h"
#include "util/error.h"
#include "util/planted.h"

/* Concurrent trims each lose only when another one advanced the marker. */
#define SOFT_TRIM_RETRIES 64

int tarn_index_record_span(const tarn_meta_rec *r, uint64_t log_id, uint64_t *start,
                           uint64_t *end) {
  size_t klen = strlen(r->key);
  if (!tarn_key_has_prefix(r->key, klen, log_id))
    return TARN_ENOTFOUND;
  tarn_key k;
  int rc = tarn_key_parse(r->key, klen, &k);
  if (rc)
    return rc;
  int64_t count;
  int v = tarn_index_value_detect_version(r->value, r->value_len);
  if (v == 3) {
    tarn_entry_index ei;
    if ((rc = tarn_entry_index_decode(r->value, r->value_len, &ei)))
      return tarn__errctx(rc, "index record %s", r->key);
    count = ei.message_count;
    tarn_entry_index_free(&ei);
  } else if (v == 1 || v == 2) {
    tarn_legacy_index_value lv;
    if ((rc = tarn_legacy_index_value_parse(r->value, r->value_len, &lv)))
      return tarn__errctx(rc, "index record %s", r->key);
    count = lv.message_count;
    tarn_legacy_index_value_free(&lv);
  } else {
    return tarn__errctx(v < 0 ? v : TARN_ECORRUPT, "index record %s", r->key);
  }
  if (count < 0 || (uint64_t)count > k.end_offset)
    return tarn__err(TARN_ECORRUPT, "index record %s: message_count %lld exceeds its end offset",
                     r->key, (long long)count);
  *end = k.end_offset;
  *start = k.end_offset - (uint64_t)count;
  return 0;
}

int tarn_trim_marker_read(tarn_meta *m, uint64_t log_id, uint64_t *b, int64_t *version) {
  char part[TARN_KEY_PARTITION_LEN + 1], key[TARN_KEY_SLASH_MAX];
  int rc;
  if ((rc = tarn_key_partition(part, log_id)) || (rc = tarn_key_trim_marker(key, log_id)))
    return rc;
  tarn_meta_rec r = {0};
  rc = tarn_meta_get(m, part, key, &r);
  if (rc == TARN_ENOTFOUND) {
    *b = 0;
    if (version)
      *version = -1;
    return 0;
  }
  if (!rc) {
    rc = tarn_trimmark_parse(r.value, r.value_len, b);
    if (rc)
      rc = tarn__errctx(rc, "log %llu", (unsigned long long)log_id);
    else if (version)
      *version = r.stat.version;
  }
  tarn_meta_rec_free(&r);
  return rc;
}

/* The last index record of L: Floor(P(L), K(L,MAX,MAX)) with the prefix
 * check. *found = 0 when the log has none. */
static int last_record(tarn_meta *m, const char *part, uint64_t log_id, int *found, uint64_t *start,
                       uint64_t *end, char key_out[TARN_KEY_LEN + 1]) {
  char k[TARN_KEY_LEN + 1];
  int rc = tarn_key_format(k, log_id, TARN_KEY_MAX, TARN_KEY_MAX);
  if (rc)
    return rc;
  tarn_meta_rec r = {0};
  *found = 0;
  rc = tarn_meta_floor(m, part, k, &r);
  if (rc == 0) {
    rc = tarn_index_record_span(&r, log_id, start, end);
    if (rc == 0) {
      *found = 1;
      if (key_out)
        snprintf(key_out, TARN_KEY_LEN + 1, "%s", r.key);
    }
  }
  tarn_meta_rec_free(&r);
  return rc == TARN_ENOTFOUND ? 0 : rc;
}

int tarn_log_bounds_read(tarn_meta *m, uint64_t log_id, tarn_log_bounds *out) {
  memset(out, 0, sizeof *out);
  char part[TARN_KEY_PARTITION_LEN + 1], k[TARN_KEY_LEN + 1];
  int64_t ver;
  int rc;
  if ((rc = tarn_key_partition(part, log_id)) ||
      (rc = tarn_trim_marker_read(m, log_id, &out->trim, &ver)))
    return rc;
  out->has_marker = ver >= 0;
  /* LS-054: the first record above B, or above K(L,0,0) without a marker. */
  rc = out->has_marker ? tarn_key_format(k, log_id, out->trim, TARN_KEY_MAX)
                       : tarn_key_format(k, log_id, 0, 0);
  if (rc)
    return rc;
  tarn_meta_rec r = {0};
  uint64_t s, e;
  out->first = out->trim;
  rc = tarn_meta_higher(m, part, k, &r);
  if (rc == 0)
    rc = tarn_index_record_span(&r, log_id, &s, &e);
  tarn_meta_rec_free(&r);
  if (rc == 0 && s > out->first)
    out->first = s;
  if (rc && rc != TARN_ENOTFOUND)
    return rc;
  int found;
  if ((rc = last_record(m, part, log_id, &found, &out->last_start, &out->end, NULL)))
    return rc;
  out->has_records = found;
  return 0;
}

static int check_lease(tarn_lease *lease, uint64_t *log_id) {
  if (!lease)
    return tarn__err(TARN_EINVAL, "trimming needs a write lease on the log");
  *log_id = tarn_lease_log(lease);
  return tarn_lease_check(lease); /* LS-042: the lease must still be good */
}

int tarn_soft_trim(tarn_meta *m, tarn_lease *lease, uint64_t through, uint64_t *stored) {
  uint64_t log_id = 0;
  int rc = check_lease(lease, &log_id);
  if (rc)
    return rc;
  char part[TARN_KEY_PARTITION_LEN + 1], key[TARN_KEY_SLASH_MAX];
  if ((rc = tarn_key_partition(part, log_id)) || (rc = tarn_key_trim_marker(key, log_id)))
    return rc;
  for (int attempt = 0; attempt < SOFT_TRIM_RETRIES; attempt++) {
    uint64_t b, start, end;
    int64_t ver;
    int found;
    if ((rc = tarn_trim_marker_read(m, log_id, &b, &ver)) ||
        (rc = last_record(m, part, log_id, &found, &start, &end, NULL)))
      return rc;
    /* LS-080: B' = min(o + 1, start of the last record); no record: no change. */
    uint64_t nb = through >= TARN_KEY_MAX ? TARN_KEY_MAX : through + 1;
    if (nb > start)
      nb = start;
    if (!found || (nb <= b && !TARN__PLANTED(TARN__BUG_SOFT_TRIM_LOWERS))) {
      *stored = b; /* LS-079: B never decreases; report what is stored */
      return 0;
    }
    if ((rc = tarn_lease_check(lease)))
      return rc;
    char v[TARN_TRIMMARK_MAX_LEN + 1];
    size_t n = tarn_trimmark_format(v, nb);
    /* Under the lease's guards (docs/log.md, "Guarded changes"). */
    tarn_meta_guard g[TARN_LEASE_GUARDS];
    size_t ng = tarn_lease_guards(lease, g);
    rc = ver < 0 ? tarn_meta_create_if(m, part, key, v, n, TARN_META_PERSISTENT, g, ng, NULL)
                 : tarn_meta_cas_if(m, part, key, v, n, ver, g, ng, NULL);
    if (rc == 0 || TARN__PLANTED(TARN__BUG_SOFT_TRIM_UNSTORED)) {
      *stored = nb;
      return 0;
    }
    /* Lost a race (or the outcome is unknown): read what is stored and go
     * again; never report a value the store may not hold (Ursa's fault). */
    if (rc != TARN_EEXIST && rc != TARN_ECONFLICT && rc != TARN_ENOTFOUND && rc != TARN_EUNKNOWN)
      return tarn__errctx(rc, "soft trim of log %llu", (unsigned long long)log_id);
  }
  return tarn__err(TARN_ECONFLICT,
                   "soft trim of log %llu: the marker kept changing (%d attempts); retry",
                   (unsigned long long)log_id, SOFT_TRIM_RETRIES);
}

int tarn_hard_trim(tarn_meta *m, tarn_lease *lease, uint64_t x, size_t *removed) {
  if (removed)
    *removed = 0;
  uint64_t log_id = 0;
  int rc = check_lease(lease, &log_id);
  if (rc)
    return rc;
  char part[TARN_KEY_PARTITION_LEN + 1], lo[TARN_KEY_LEN + 1], hi[TARN_KEY_LEN + 1],
      last[TARN_KEY_LEN + 1];
  uint64_t b, start, end;
  int found;
  if ((rc = tarn_key_partition(part, log_id)) || (rc = tarn_trim_marker_read(m, log_id, &b, NULL)))
    return rc;
  if (x > b && !TARN__PLANTED(TARN__BUG_HARD_TRIM_ABOVE_B)) /* LS-081 */
    return tarn__err(TARN_EINVAL,
                     "hard trim of log %llu to %llu: above the trim marker %llu; soft-trim first",
                     (unsigned long long)log_id, (unsigned long long)x, (unsigned long long)b);
  if ((rc = last_record(m, part, log_id, &found, &start, &end, last)))
    return rc;
  if (!found)
    return 0;
  if ((rc = tarn_key_format(lo, log_id, 0, 0)) ||
      (rc = tarn_key_format(hi, log_id, x + TARN__PLANTED(TARN__BUG_HARD_TRIM_PAST_X),
                            TARN_KEY_MAX)))
    return rc;
  /* LS-081: never the last record, whose key the next sequenced put extends:
   * the range stops below it. Both bounds are index keys of L, whose order is
   * bytewise. */
  if (strcmp(hi, last) > 0)
    memcpy(hi, last, sizeof hi);
  if ((rc = tarn_lease_check(lease)))
    return rc;
  tarn_meta_guard g[TARN_LEASE_GUARDS];
  size_t ng = tarn_lease_guards(lease, g);
  rc = tarn_meta_delete_range_if(m, part, lo, hi, g, ng, removed);
  return rc ? tarn__errctx(rc, "hard trim of log %llu", (unsigned long long)log_id) : 0;
}
