/* Which star writes an express log (issue 14 "Star"): recorded by the writer
 * when it first appends to the log, so an operator can fence and settle by
 * the stream's name (`tarn express fence|settle NS/NAME`) rather than having
 * to know the writer's identity. The star leads the log alone while it does
 * (issue 14), so one name per log is the whole truth; the newest writer's
 * name replaces an older one. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "express/express_internal.h"
#include "util/error.h"

static void logstar_key(char *key, size_t n, uint64_t log_id) {
  snprintf(key, n, "/%020" PRIu64, log_id);
}

int tarn__xlog_star_set(tarn_meta *m, uint64_t log_id, const char *star) {
  char key[32], have[TARN__X_STAR_MAX + 1];
  logstar_key(key, sizeof key, log_id);
  int rc = tarn__xlog_star_get(m, log_id, have, sizeof have);
  if (rc == 0 && !strcmp(have, star))
    return 0; /* the usual case: a restart of the same star writes nothing */
  if (rc && rc != TARN_ENOTFOUND)
    return rc;
  tarn_errclear();
  rc = tarn_meta_put(m, TARN__X_LOGSTAR_PARTITION, key, star, strlen(star), NULL);
  return rc ? tarn__errctx(rc, "recording star %s as the writer of express log %" PRIu64, star,
                           log_id)
            : 0;
}

int tarn__xlog_star_get(tarn_meta *m, uint64_t log_id, char *star, size_t n) {
  char key[32];
  logstar_key(key, sizeof key, log_id);
  tarn_meta_rec r = {0};
  int rc = tarn_meta_get(m, TARN__X_LOGSTAR_PARTITION, key, &r);
  if (rc == TARN_ENOTFOUND)
    return tarn__err(TARN_ENOTFOUND, "no express writer has written log %" PRIu64, log_id);
  if (rc)
    return tarn__errctx(rc, "reading the star of express log %" PRIu64, log_id);
  snprintf(star, n, "%.*s", (int)r.value_len, (const char *)r.value);
  tarn_meta_rec_free(&r);
  return tarn__xstar_check(star);
}
