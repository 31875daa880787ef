/* Retention of Kafka topics through the spec's trim (kafka/retention.h;
 * issue 37, "Retention and DeleteRecords"; docs/kafka.md "Retention"). */
#include "kafka/retention.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kafka/time_lookup.h"
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

/* cleanup.policy is a list: "delete", "compact" or "compact,delete". */
static int has_delete(const char *s) {
  while (s && *s) {
    while (*s == ' ' || *s == ',')
      s++;
    size_t n = strcspn(s, ",");
    size_t k = n;
    while (k && s[k - 1] == ' ')
      k--;
    if (k == 6 && strncmp(s, "delete", 6) == 0)
      return 1;
    s += n;
  }
  return 0;
}

void tarn__kretention_policy_of(const tarn_kafka_topic *t, tarn__kretention_policy *p) {
  p->ms = long_of(config_of(t, "retention.ms"));
  p->bytes = long_of(config_of(t, "retention.bytes"));
  p->del = has_delete(config_of(t, "cleanup.policy"));
  if (p->ms < -1)
    p->ms = -1;
  if (p->bytes < -1)
    p->bytes = -1;
}

/* The index records of a log that end above its marker B, in key order: the
 * end offset and cumulative size of each come from its key K(L, e, c); the
 * first one's own size from its value (the ones after it: the differences of
 * the cumulative sizes). */
typedef struct span {
  uint64_t end, cum;
} span;
typedef struct spans {
  span *v;
  size_t n, cap;
  uint64_t size0; /* bytes of v[0] */
} spans;

static uint64_t span_size(const spans *s, size_t i) {
  return i == 0 ? s->size0 : s->v[i].cum - s->v[i - 1].cum;
}

static int spans_add(spans *s, const char *key, uint64_t log_id) {
  tarn_key k;
  size_t len = strlen(key);
  if (!tarn_key_has_prefix(key, len, log_id) || tarn_key_parse(key, len, &k))
    return 0; /* not an index key of L */
  if (s->n == s->cap) {
    size_t cap = s->cap ? 2 * s->cap : 64;
    span *v = realloc(s->v, cap * sizeof *v);
    if (!v)
      return TARN_ENOMEM;
    s->v = v;
    s->cap = cap;
  }
  s->v[s->n++] = (span){k.end_offset, k.cumulative_size};
  return 0;
}

/* The size of the record under key (entry_size_bytes of its value). */
static int record_size(tarn_meta *m, const char *part, const char *key, uint64_t *size) {
  tarn_meta_rec r = {0};
  int rc = tarn_meta_get(m, part, key, &r);
  *size = 0;
  if (rc)
    return rc == TARN_ENOTFOUND ? 0 : rc; /* trimmed meanwhile */
  int v = tarn_index_value_detect_version(r.value, r.value_len);
  if (v == 3) {
    tarn_entry_index ei;
    if (!(rc = tarn_entry_index_decode(r.value, r.value_len, &ei))) {
      *size = ei.entry_size_bytes > 0 ? (uint64_t)ei.entry_size_bytes : 0;
      tarn_entry_index_free(&ei);
    }
  } else if (v == 1 || v == 2) {
    tarn_legacy_index_value lv;
    if (!(rc = tarn_legacy_index_value_parse(r.value, r.value_len, &lv))) {
      *size = lv.entry_size_bytes > 0 ? (uint64_t)lv.entry_size_bytes : 0;
      tarn_legacy_index_value_free(&lv);
    }
  } else {
    rc = v < 0 ? v : TARN_ECORRUPT;
  }
  tarn_meta_rec_free(&r);
  return rc;
}

/* Lists L's records above B (LS-054's Higher, page by page) into s. */
static int list_spans(tarn_meta *m, uint64_t log_id, const tarn_log_bounds *b, spans *s) {
  char part[TARN_KEY_PARTITION_LEN + 1], a[TARN_KEY_LEN + 1], z[TARN_KEY_LEN + 1];
  char first[TARN_KEY_LEN + 1] = "";
  int rc;
  if ((rc = tarn_key_partition(part, log_id)) ||
      (rc = b->has_marker ? tarn_key_format(a, log_id, b->trim, TARN_KEY_MAX)
                          : tarn_key_format(a, log_id, 0, 0)) ||
      (rc = tarn_key_format(z, log_id, TARN_KEY_MAX, TARN_KEY_MAX)))
    return rc;
  for (;;) {
    tarn_meta_recs page = {0};
    if ((rc = tarn_meta_list(m, part, a, z, TARN_META_AFTER, 1000, &page)))
      return rc;
    for (size_t i = 0; i < page.n && !rc; i++) {
      if (!first[0])
        snprintf(first, sizeof first, "%s", page.v[i].key);
      rc = spans_add(s, page.v[i].key, log_id);
    }
    int more = page.more && page.n;
    if (more)
      snprintf(a, sizeof a, "%s", page.v[page.n - 1].key);
    tarn_meta_recs_free(&page);
    if (rc || !more)
      break;
  }
  if (!rc && first[0])
    rc = record_size(m, part, first, &s->size0);
  return rc;
}

/* By size (Kafka's retention.bytes over segments, here over index records):
 * the oldest record goes while what remains still holds `keep` bytes. */
static uint64_t bytes_target(const spans *s, int64_t keep, uint64_t upto) {
  if (!s->n)
    return upto;
  uint64_t total = s->v[s->n - 1].cum - (s->v[0].cum - s->size0);
  for (size_t i = 0; i + 1 < s->n; i++) {
    uint64_t sz = span_size(s, i);
    if (total - sz < (uint64_t)keep)
      break;
    total -= sz;
    if (s->v[i].end > upto)
      upto = s->v[i].end;
  }
  return upto;
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
  if (p->bytes >= 0) {
    spans s = {0};
    rc = list_spans(n->meta, log_id, &b, &s);
    if (!rc)
      *upto = bytes_target(&s, p->bytes, *upto);
    free(s.v);
  }
  return rc;
}

int tarn__kretention_trim(tarn__knode *n, uint64_t log_id, uint64_t upto,
                          tarn__kretention_trimmed *out) {
  memset(out, 0, sizeof *out);
  tarn_log_bounds b;
  int rc = tarn_log_bounds_read(n->meta, log_id, &b);
  if (rc)
    return rc;
  out->before = out->stored = b.trim;
  if (upto == 0 || upto <= b.trim || !b.has_records)
    return 0;
  spans s = {0};
  if ((rc = list_spans(n->meta, log_id, &b, &s)))
    return rc;
  tarn_lease *l;
  if (!(rc = tarn_lease_acquire(n->meta, log_id, &l))) {
    /* LS-080: B' = min(upto, start of the last index record); B never goes
     * down (LS-079) */
    rc = tarn_soft_trim(n->meta, l, upto - 1, &out->stored);
    int rr = tarn_lease_release(l);
    if (!rc)
      rc = rr;
  }
  for (size_t i = 0; !rc && i < s.n && s.v[i].end <= out->stored; i++)
    out->bytes += span_size(&s, i);
  free(s.v);
  return rc;
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
