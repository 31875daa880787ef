/* Retention of Kafka topics through the spec's trim (kafka/retention.h;
 * issue 37, "Retention and DeleteRecords"; docs/kafka.md "Retention"). */
#include "kafka/retention.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kafka/time_lookup.h"
#include "log/retention_trim.h"
#include "tarn/entryindex.h"
#include "tarn/error.h"
#include "tarn/kafka_topics.h"
#include "tarn/kafka_node.h"
#include "tarn/key.h"
#include "tarn/lease.h"
#include "tarn/metrics.h"
#include "tarn/trim.h"

/* A topic config's value: the topic's own, else the table's default. */
static const char *config_of(const tarn_kafka_topic *t, const char *name) {
  for (size_t i = 0; i < t->n_configs; i++)
    if (strcmp(t->configs[i].key, name) == 0)
      return t->configs[i].value;
  const tarn_kafka_config_def *d = tarn_kafka_config_find(name);
  return d ? d->default_value : NULL;
}

/* A LONG config (checked at creation and alteration); one that does not
 * parse disables its bound rather than trimming on a guess. */
static int64_t long_of(const char *s) {
  if (!s || !*s)
    return -1;
  char *e;
  errno = 0;
  long long v = strtoll(s, &e, 10);
  return errno || *e ? -1 : (int64_t)v;
}

void tarn__kretention_policy_of(const tarn_kafka_topic *t, tarn__kretention_policy *p) {
  p->ms = long_of(config_of(t, "retention.ms"));
  p->bytes = long_of(config_of(t, "retention.bytes"));
  p->del = tarn_kafka_cleanup_policy_has(config_of(t, "cleanup.policy"), "delete");
  if (p->ms < -1)
    p->ms = -1;
  if (p->bytes < -1)
    p->bytes = -1;
}

int tarn__kretention_target(tarn__knode *n, uint64_t log_id, const tarn__kretention_policy *p,
                            int64_t now_ms, uint64_t *upto) {
  tarn_log_bounds b;
  int rc = tarn_log_bounds_read(n->meta, log_id, &b);
  if (rc)
    return rc;
  *upto = b.first;
  if (!p->del || !b.has_records || b.first >= b.end)
    return 0;
  if (p->ms >= 0 && now_ms - p->ms > 0) {
    /* by time: everything before the first entry that has a batch at or
     * after the cutoff is older than it (the batches' max timestamps, as
     * Kafka's segments' largest timestamps); an entry the search cannot
     * prove old stays */
    uint64_t late;
    rc = tarn__kafka_entry_for_time(n->reader, log_id, b.first, b.end, now_ms - p->ms, &late);
    if (rc == TARN_EEND || rc == TARN_ENOTFOUND)
      rc = 0, late = b.first; /* trimmed or deleted meanwhile: the next pass sees it */
    if (rc)
      return rc;
    if (late > *upto)
      *upto = late;
  }
  if (p->bytes >= 0)
    rc = tarn__retention_bytes_target(n->meta, log_id, &b, p->bytes, upto);
  return rc;
}

int tarn__kretention_trim(tarn__knode *n, uint64_t log_id, uint64_t upto,
                          tarn__kretention_trimmed *out) {
  return tarn__retention_trim(n->meta, log_id, upto, out);
}

/* One partition of a pass. */
static int pass_partition(tarn__knode *n, const tarn_kafka_topic *t, uint32_t p,
                          const tarn__kretention_policy *pol, int64_t now_ms) {
  uint64_t log_id, upto;
  tarn__kretention_trimmed tr;
  int rc = tarn_kafka_topic_log(t, p, &log_id);
  if (!rc)
    rc = tarn__kretention_target(n, log_id, pol, now_ms, &upto);
  if (!rc)
    rc = tarn__kretention_trim(n, log_id, upto, &tr);
  if (rc == TARN_EFENCED || rc == TARN_ENOTFOUND)
    return 0; /* the topic is being deleted */
  if (rc) {
    char part[16];
    snprintf(part, sizeof part, "%u", (unsigned)p);
    tarn__klog(n, TARN_KAFKA_LOG_WARN, "kafka retention failed", "topic", t->name, "partition",
               part, "error", tarn_errname(rc), "message", tarn_errmsg(), NULL);
    tarn_metrics_inc("tarn_kafka_retention_errors_total", 1, NULL);
    return rc;
  }
  if (tr.stored > tr.before) {
    tarn_metrics_inc("tarn_kafka_retention_trims_total", 1, "cause", "retention", NULL);
    tarn_metrics_inc("tarn_kafka_retention_bytes_total", tr.bytes, "cause", "retention", NULL);
  }
  return 0;
}

int tarn__kretention_pass(tarn__knode *n, int64_t now_ms) {
  tarn_kafka_topic *v;
  size_t nt;
  int rc = tarn_kafka_topic_list(n->catalog, &v, &nt);
  if (rc)
    return rc;
  int first = 0;
  for (size_t i = 0; i < nt; i++) {
    tarn__kretention_policy pol;
    tarn__kretention_policy_of(&v[i], &pol);
    if (!pol.del || (pol.ms < 0 && pol.bytes < 0))
      continue;
    for (uint32_t p = 0; p < v[i].partitions; p++) {
      /* the partition's leader trims it (every node would be safe: the
       * marker only goes up, by compare-and-set; one is enough) */
      if (tarn__kexpress_leads(n, &v[i], p) != 1)
        continue;
      int prc = pass_partition(n, &v[i], p, &pol, now_ms);
      if (prc && !first)
        first = prc;
    }
  }
  tarn_kafka_topics_free(v, nt);
  tarn_metrics_inc("tarn_kafka_retention_passes_total", 1, NULL);
  return first;
}
