/* The deployment's timing record and the grace rule (include/tarn/timing.h). */
#include "tarn/timing.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "util/error.h"

static const char *const names[] = {"wal_grace_ms", "max_publish_delay_ms", "max_put_ms",
                                    "skew_allowance_ms"};

static int64_t *field(tarn_timing *t, int i) {
  int64_t *f[] = {&t->wal_grace_ms, &t->max_publish_delay_ms, &t->max_put_ms,
                  &t->skew_allowance_ms};
  return f[i];
}

void tarn_timing_default(tarn_timing *t) {
  t->wal_grace_ms = 600000;
  t->max_publish_delay_ms = 300000;
  t->max_put_ms = 60000;
  t->skew_allowance_ms = 60000;
}

int tarn_timing_check(const tarn_timing *t, const char *who) {
  tarn_timing c = *t;
  for (int i = 0; i < 4; i++)
    if (*field(&c, i) <= 0 || *field(&c, i) > (INT64_MAX >> 3))
      return tarn__err(TARN_EINVAL, "%s: %s must be a positive number of ms, not %lld", who,
                       names[i], (long long)*field(&c, i));
  int64_t need = t->max_publish_delay_ms + t->max_put_ms + t->skew_allowance_ms;
  /* LS-085, LS-086: a grace no longer than this lets an object go before a
   * stalled writer's record of it lands */
  if (t->wal_grace_ms <= need)
    return tarn__err(TARN_EINVAL,
                     "%s: WAL grace %lld ms must exceed the writers' publish limit %lld ms + "
                     "longest index put %lld ms + clock skew allowance %lld ms = %lld ms "
                     "(docs/compaction.md, \"Grace arithmetic\")",
                     who, (long long)t->wal_grace_ms, (long long)t->max_publish_delay_ms,
                     (long long)t->max_put_ms, (long long)t->skew_allowance_ms, (long long)need);
  return 0;
}

int tarn_timing_load(tarn_meta *m, tarn_timing *t, int *recorded) {
  tarn_timing_default(t);
  if (recorded)
    *recorded = 0;
  tarn_meta_rec r = {0};
  int rc = tarn_meta_get(m, TARN_TIMING_PARTITION, TARN_TIMING_KEY, &r);
  if (rc == TARN_ENOTFOUND)
    return 0;
  if (rc)
    return tarn__errctx(rc, "reading the deployment's timing record");
  json_t *o = json_loadb((const char *)r.value, r.value_len, JSON_REJECT_DUPLICATES, NULL);
  tarn_meta_rec_free(&r);
  for (int i = 0; o && json_is_object(o) && i < 4; i++) {
    json_t *v = json_object_get(o, names[i]);
    if (!json_is_integer(v)) {
      rc = TARN_ECORRUPT;
      break;
    }
    *field(t, i) = json_integer_value(v);
  }
  if (!o || !json_is_object(o))
    rc = TARN_ECORRUPT;
  json_decref(o);
  if (rc)
    return tarn__err(TARN_ECORRUPT,
                     "the deployment's timing record %s%s is not an object of "
                     "four integers",
                     TARN_TIMING_PARTITION, TARN_TIMING_KEY);
  if (recorded)
    *recorded = 1;
  return 0;
}

int tarn_timing_record(tarn_meta *m, const tarn_timing *t, int *created) {
  if (created)
    *created = 0;
  int rc = tarn_timing_check(t, "deployment timing");
  if (rc)
    return rc;
  json_t *o = json_object();
  tarn_timing c = *t;
  for (int i = 0; o && i < 4; i++)
    json_object_set_new(o, names[i], json_integer(*field(&c, i)));
  char *text = o ? json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
  json_decref(o);
  if (!text)
    return tarn__err(TARN_ENOMEM, "out of memory");
  rc = tarn_meta_create(m, TARN_TIMING_PARTITION, TARN_TIMING_KEY, text, strlen(text),
                        TARN_META_PERSISTENT, NULL);
  free(text);
  if (rc == TARN_EEXIST)
    return 0; /* the deployment's, and it stays */
  if (!rc && created)
    *created = 1;
  return rc ? tarn__errctx(rc, "writing the deployment's timing record") : 0;
}

int tarn_timing_check_process(tarn_meta *m, const tarn_timing *mine, const char *who,
                              tarn_timing *out) {
  tarn_timing t;
  int rc = tarn_timing_load(m, &t, NULL);
  if (rc)
    return rc;
  tarn_timing c = *mine;
  for (int i = 0; i < 4; i++)
    if (*field(&c, i) >= 0)
      *field(&t, i) = *field(&c, i);
  if (out)
    *out = t;
  return tarn_timing_check(&t, who);
}
