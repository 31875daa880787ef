/* LS-001: a legacy (v1/v2) log takes no version 3 appends, nor does an
 * empty log of a deployment recorded as legacy (format_version.h). */
#include "log/format_version.h"

#include <inttypes.h>
#include <string.h>

#include "log/index_scan.h"
#include "tarn/catalog.h"
#include "tarn/deployment.h"
#include "tarn/key.h"
#include "tarn/entryindex.h"
#include "util/error.h"
#include "util/planted.h"

#define VKEY TARN_DEPLOYMENT_ID_PARTITION TARN__FORMAT_VERSION_KEY

int tarn__deployment_version_get(tarn_meta *m, int *ver) {
  *ver = 0;
  tarn_meta_rec r = {0};
  int rc = tarn_meta_get(m, TARN_DEPLOYMENT_ID_PARTITION, TARN__FORMAT_VERSION_KEY, &r);
  if (rc == TARN_ENOTFOUND)
    rc = 0;
  else if (rc)
    rc = tarn__errctx(rc, "reading the deployment's format version (%s)", VKEY);
  else if (r.value_len != 1 || r.value[0] < '1' || r.value[0] > '3')
    rc = tarn__corrupt("deployment format version " VKEY, 0,
                       "%zu bytes, not one digit 1-3 (the format version)", r.value_len);
  else
    *ver = r.value[0] - '0';
  tarn_meta_rec_free(&r);
  return rc;
}

/* Records ver unless a version is recorded; *ver gets the store's. */
static int version_record(tarn_meta *m, int *ver) {
  char v = (char)('0' + *ver);
  int rc = tarn_meta_create(m, TARN_DEPLOYMENT_ID_PARTITION, TARN__FORMAT_VERSION_KEY, &v, 1,
                            TARN_META_PERSISTENT, NULL);
  if (rc == 0)
    return 0;
  if (rc != TARN_EEXIST && rc != TARN_EUNKNOWN)
    return tarn__errctx(rc, "recording the deployment's format version (%s)", VKEY);
  /* another process was first, or ours landed: the store's is the one */
  int got;
  if ((rc = tarn__deployment_version_get(m, &got)) == 0 && !got)
    rc = tarn__err(TARN_EUNKNOWN, "recording the deployment's format version: outcome unknown");
  if (!rc)
    *ver = got;
  return rc;
}

/* The format version of log_id's last index record: 1, 2, 3, or 0 when it
 * has none. */
static int log_version(tarn_meta *m, uint64_t log_id, int *ver) {
  tarn_meta_rec r;
  *ver = 0;
  int rc = tarn__index_last(m, log_id, &r);
  if (rc == TARN_ENOTFOUND)
    return 0;
  if (rc)
    return tarn__errctx(rc, "log %" PRIu64 ": reading its last index record", log_id);
  int v = tarn_index_value_detect_version(r.value, r.value_len);
  *ver = v == 1 || v == 2 ? v : 3;
  tarn_meta_rec_free(&r);
  return 0;
}

int tarn__deployment_version_settle(tarn_meta *m, int *out) {
  int ver, rc = tarn__deployment_version_get(m, &ver);
  if (rc || ver) {
    if (out)
      *out = ver;
    return rc;
  }
  tarn_catalog *c;
  tarn_catalog_record *v = NULL;
  size_t n = 0;
  if ((rc = tarn_catalog_open(m, NULL, &c)) != 0)
    return tarn__errctx(rc, "the deployment's format version");
  rc = tarn_catalog_list_streams(c, &v, &n);
  if (rc == TARN_ENOTFOUND) /* no catalog yet: a new deployment */
    rc = 0;
  ver = 3;
  for (size_t i = 0; !rc && i < n; i++)
    for (size_t j = 0; !rc && j < v[i].n_logs; j++) {
      int lv;
      if ((rc = log_version(m, v[i].logs[j], &lv)) == 0 && lv && lv < 3 && (ver == 3 || lv > ver))
        ver = lv;
    }
  tarn_catalog_records_free(v, n);
  tarn_catalog_close(c);
  if (!rc)
    rc = version_record(m, &ver);
  if (!rc && out)
    *out = ver;
  return rc ? tarn__errctx(rc, "settling the deployment's format version") : 0;
}

int tarn__log_check_writable_version(tarn_meta *m, uint64_t log_id) {
  if (TARN__PLANTED(TARN__BUG_LEGACY_LOG_APPENDABLE))
    return 0;
  tarn_meta_rec r;
  int rc = tarn__index_last(m, log_id, &r);
  if (rc == TARN_ENOTFOUND) {
    /* an empty log: its deployment's recorded version decides */
    int dv;
    if ((rc = tarn__deployment_version_get(m, &dv)) != 0)
      return rc;
    if ((dv == 1 || dv == 2) && !TARN__PLANTED(TARN__BUG_LEGACY_EMPTY_LOG_APPENDABLE))
      return tarn__err(TARN_EVERSION,
                       "log %" PRIu64 " has no records, and its deployment is a legacy format "
                       "version %d deployment (recorded at %s): tarn writes format version 3 "
                       "only, and one deployment holds one format version (LS-001); appending "
                       "refused",
                       log_id, dv, VKEY);
    return 0;
  }
  if (rc)
    return tarn__errctx(rc, "log %" PRIu64 ": reading its last index record for its format version",
                        log_id);
  int ver = tarn_index_value_detect_version(r.value, r.value_len);
  if (ver == 1 || ver == 2) {
    /* the deployment is a legacy one: recorded, so that its empty logs are
     * refused too (best effort: the refusal below stands either way) */
    int rv = ver;
    version_record(m, &rv);
    rc = tarn__err(TARN_EVERSION,
                   "log %" PRIu64 " is a legacy format version %d log (its last index record, "
                   "%s, holds a v%d value): tarn writes format version 3 only, and one "
                   "deployment holds one format version (LS-001); appending refused, the "
                   "log stays readable",
                   log_id, ver, r.key, ver);
  }
  tarn_meta_rec_free(&r);
  return rc;
}
