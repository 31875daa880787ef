/* The last-writer record and the clean-release mark of an express log
 * (issue 15; the Epochs design, "The last-writer record", "Clean release
 * versus abandonment"; docs/express.md "Leadership").
 *
 * Both live in the log's own partition under `/` keys, beside its index and
 * leases, so they go wherever the log goes:
 *   /express/writer  "{star} {epoch}"        who leads (or last led) the log
 *   /express/mark    "{star} {epoch} {end}"  that tenure ended cleanly, every
 *                                            offset below end indexed
 * The writer record names the epoch the tenure opened in; the gate judges it
 * ahead of the newest index record, which lags a writer change by one absorb
 * pass. A consumed mark is CAS-replaced by "consumed": single use. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "express/express_internal.h"
#include "tarn/key.h"
#include "util/error.h"

#define CONSUMED "consumed"

static int rec_put(tarn_meta *m, uint64_t log_id, const char *key, const char *val,
                   const tarn_meta_guard *g, size_t ng) {
  char part[TARN_KEY_PARTITION_LEN + 1];
  int rc = tarn_key_partition(part, log_id);
  if (!rc)
    rc = tarn_meta_put_if(m, part, key, val, strlen(val), g, ng, NULL);
  return rc ? tarn__errctx(rc, "writing %s of express log %" PRIu64, key, log_id) : 0;
}

/* The record's text, NUL-terminated, into buf; *version its version. */
static int rec_get(tarn_meta *m, uint64_t log_id, const char *key, char *buf, size_t n,
                   int64_t *version) {
  char part[TARN_KEY_PARTITION_LEN + 1];
  int rc = tarn_key_partition(part, log_id);
  if (rc)
    return rc;
  tarn_meta_rec r = {0};
  rc = tarn_meta_get(m, part, key, &r);
  if (rc == TARN_ENOTFOUND)
    return tarn__err(TARN_ENOTFOUND, "express log %" PRIu64 " has no %s", log_id, key);
  if (rc)
    return tarn__errctx(rc, "reading %s of express log %" PRIu64, key, log_id);
  snprintf(buf, n, "%.*s", (int)r.value_len, (const char *)r.value);
  if (version)
    *version = r.stat.version;
  tarn_meta_rec_free(&r);
  return 0;
}

/* "{star} {epoch}[ {end}]": star checked, the numbers decimal. */
static int parse(const char *s, char *star, uint64_t *epoch, uint64_t *end) {
  const char *sp = strchr(s, ' ');
  if (!sp || sp - s > TARN__X_STAR_MAX)
    return TARN_ECORRUPT;
  memcpy(star, s, (size_t)(sp - s));
  star[sp - s] = 0;
  char *e;
  *epoch = strtoull(sp + 1, &e, 10);
  if (e == sp + 1)
    return TARN_ECORRUPT;
  if (end) {
    if (*e != ' ')
      return TARN_ECORRUPT;
    const char *p = e + 1;
    *end = strtoull(p, &e, 10);
    if (e == p)
      return TARN_ECORRUPT;
  }
  if (*e || tarn__xstar_check(star))
    return TARN_ECORRUPT;
  return 0;
}

int tarn__xwriter_rec_put(tarn_meta *m, uint64_t log_id, const char *star, uint64_t epoch,
                          const tarn_meta_guard *g, size_t ng) {
  char v[TARN__X_STAR_MAX + 32];
  snprintf(v, sizeof v, "%s %" PRIu64, star, epoch);
  return rec_put(m, log_id, TARN__X_WRITER_KEY, v, g, ng);
}

int tarn__xwriter_rec_get(tarn_meta *m, uint64_t log_id, char star[TARN__X_STAR_MAX + 1],
                          uint64_t *epoch, int64_t *version) {
  char v[TARN__X_STAR_MAX + 64];
  int rc = rec_get(m, log_id, TARN__X_WRITER_KEY, v, sizeof v, version);
  if (!rc && parse(v, star, epoch, NULL))
    rc = tarn__err(TARN_ECORRUPT, "express log %" PRIu64 ": writer record \"%s\"", log_id, v);
  return rc;
}

int tarn__xmark_put(tarn_meta *m, uint64_t log_id, const char *star, uint64_t epoch, uint64_t end,
                    const tarn_meta_guard *g, size_t ng) {
  char v[TARN__X_STAR_MAX + 64];
  snprintf(v, sizeof v, "%s %" PRIu64 " %" PRIu64, star, epoch, end);
  return rec_put(m, log_id, TARN__X_MARK_KEY, v, g, ng);
}

int tarn__xmark_get(tarn_meta *m, uint64_t log_id, char star[TARN__X_STAR_MAX + 1], uint64_t *epoch,
                    uint64_t *end, int64_t *version) {
  char v[TARN__X_STAR_MAX + 64];
  int rc = rec_get(m, log_id, TARN__X_MARK_KEY, v, sizeof v, version);
  if (!rc && !strcmp(v, CONSUMED))
    rc = tarn__err(TARN_ENOTFOUND, "express log %" PRIu64 ": its mark was consumed", log_id);
  else if (!rc && parse(v, star, epoch, end))
    rc = tarn__err(TARN_ECORRUPT, "express log %" PRIu64 ": mark \"%s\"", log_id, v);
  return rc;
}

int tarn__xmark_consume(tarn_meta *m, uint64_t log_id, int64_t version) {
  char part[TARN_KEY_PARTITION_LEN + 1];
  int rc = tarn_key_partition(part, log_id);
  if (!rc)
    rc = tarn_meta_cas(m, part, TARN__X_MARK_KEY, CONSUMED, strlen(CONSUMED), version, NULL);
  return rc ? tarn__errctx(rc, "consuming the mark of express log %" PRIu64, log_id) : 0;
}
