/* LS-001: a legacy (v1/v2) log takes no version 3 appends (format_version.h). */
#include "log/format_version.h"

#include <inttypes.h>
#include <string.h>

#include "log/index_scan.h"
#include "tarn/key.h"
#include "tarn/entryindex.h"
#include "util/error.h"
#include "util/planted.h"

int tarn__log_check_writable_version(tarn_meta *m, uint64_t log_id) {
  if (TARN__PLANTED(TARN__BUG_LEGACY_LOG_APPENDABLE))
    return 0;
  tarn_meta_rec r;
  int rc = tarn__index_last(m, log_id, &r);
  if (rc == TARN_ENOTFOUND)
    return 0;
  if (rc)
    return tarn__errctx(rc, "log %" PRIu64 ": reading its last index record for its format version",
                        log_id);
  int ver = tarn_index_value_detect_version(r.value, r.value_len);
  if (ver == 1 || ver == 2)
    rc = tarn__err(TARN_EVERSION,
                   "log %" PRIu64 " is a legacy format version %d log (its last index record, "
                   "%s, holds a v%d value): tarn writes format version 3 only, and one "
                   "deployment holds one format version (LS-001); appending refused, the "
                   "log stays readable",
                   log_id, ver, r.key, ver);
  tarn_meta_rec_free(&r);
  return rc;
}
