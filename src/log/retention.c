/* Retention of plain streams (tarn/retention.h; issue 37; docs/log.md
 * "Retention"), and the size rule and trim the Kafka job shares
 * (log/retention_trim.h). */
#include "tarn/retention.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log/retention_trim.h"
#include "tarn/catalog.h"
#include "tarn/entryindex.h"
#include "tarn/kafka_topics.h"
#include "tarn/key.h"
#include "tarn/lease.h"
#include "tarn/trimmark.h"
#include "util/clock.h"
#include "util/error.h"
#include "util/planted.h"

/* ---- the size rule -------------------------------------------------------- */

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
      return tarn__err(TARN_ENOMEM, "out of memory");
    s->v = v;
    s->cap = cap;
  }
  s->v[s->n++] = (span){k.end_offset, k.cumulative_size};
  return 0;
}

/* The entry_size_bytes of an index record's value. */
static int value_size(const tarn_meta_rec *r, uint64_t *size) {
  int rc;
  *size = 0;
  int v = tarn_index_value_detect_version(r->value, r->value_len);
  if (v == 3) {
    tarn_entry_index ei;
    if (!(rc = tarn_entry_index_decode(r->value, r->value_len, &ei))) {
      *size = ei.entry_size_bytes > 0 ? (uint64_t)ei.entry_size_bytes : 0;
      tarn_entry_index_free(&ei);
    }
  } else if (v == 1 || v == 2) {
    tarn_legacy_index_value lv;
    if (!(rc = tarn_legacy_index_value_parse(r->value, r->value_len, &lv))) {
      *size = lv.entry_size_bytes > 0 ? (uint64_t)lv.entry_size_bytes : 0;
      tarn_legacy_index_value_free(&lv);
    }
  } else {
    rc = v < 0 ? v : TARN_ECORRUPT;
  }
  return rc;
}

/* The size of the record under key (entry_size_bytes of its value). */
static int record_size(tarn_meta *m, const char *part, const char *key, uint64_t *size) {
  tarn_meta_rec r = {0};
  int rc = tarn_meta_get(m, part, key, &r);
  *size = 0;
  if (rc)
    return rc == TARN_ENOTFOUND ? 0 : rc; /* trimmed meanwhile */
  rc = value_size(&r, size);
  tarn_meta_rec_free(&r);
  return rc;
}

/* One ordered lookup of L's index records (higher or floor) around key: the
 * record's key fields, and its own size when size is not NULL; *found 0 when
 * the neighbour is not a record of L (the prefix check of R2). */
static int index_neighbour(tarn_meta *m, const char *part, uint64_t log_id, const char *key,
                           int higher, tarn_key *k, uint64_t *size, int *found) {
  tarn_meta_rec r = {0};
  int rc = higher ? tarn_meta_higher(m, part, key, &r) : tarn_meta_floor(m, part, key, &r);
  *found = 0;
  if (rc == TARN_ENOTFOUND)
    return 0;
  if (!rc && tarn_key_has_prefix(r.key, strlen(r.key), log_id) &&
      !(rc = tarn_key_parse(r.key, strlen(r.key), k))) {
    *found = 1;
    if (size)
      rc = value_size(&r, size);
  }
  tarn_meta_rec_free(&r);
  return rc;
}

int tarn__log_live_bytes(tarn_meta *m, uint64_t log_id, uint64_t *bytes) {
  char part[TARN_KEY_PARTITION_LEN + 1], a[TARN_KEY_LEN + 1], z[TARN_KEY_LEN + 1];
  uint64_t b, size0 = 0;
  int64_t ver;
  tarn_key first, last;
  int f1 = 0, f2 = 0, rc;
  *bytes = 0;
  /* LS-054: the first record above B (above K(L,0,0) without a marker), and
   * the last record: Floor(P(L), K(L,MAX,MAX)) */
  if ((rc = tarn_key_partition(part, log_id)) ||
      (rc = tarn_trim_marker_read(m, log_id, &b, &ver)) ||
      (rc = ver >= 0 ? tarn_key_format(a, log_id, b, TARN_KEY_MAX)
                     : tarn_key_format(a, log_id, 0, 0)) ||
      (rc = tarn_key_format(z, log_id, TARN_KEY_MAX, TARN_KEY_MAX)) ||
      (rc = index_neighbour(m, part, log_id, a, 1, &first, &size0, &f1)) ||
      (rc = index_neighbour(m, part, log_id, z, 0, &last, NULL, &f2)))
    return rc;
  /* the cumulative sizes count from offset 0: what lies below the first live
   * record is its cumulative size less its own */
  if (f1 && f2 && last.cumulative_size + size0 >= first.cumulative_size)
    *bytes = last.cumulative_size - (first.cumulative_size - size0);
  return 0;
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

int tarn__retention_bytes_target(tarn_meta *m, uint64_t log_id, const tarn_log_bounds *b,
                                 int64_t keep, uint64_t *upto) {
  spans s = {0};
  int rc = list_spans(m, log_id, b, &s);
  if (!rc && s.n) {
    uint64_t total = s.v[s.n - 1].cum - (s.v[0].cum - s.size0);
    for (size_t i = 0; i + 1 < s.n; i++) {
      uint64_t sz = span_size(&s, i);
      if (total - sz < (uint64_t)keep)
        break;
      total -= sz;
      if (s.v[i].end > *upto)
        *upto = s.v[i].end;
    }
  }
  free(s.v);
  return rc;
}

int tarn__retention_trim(tarn_meta *m, uint64_t log_id, uint64_t upto,
                         tarn__retention_trimmed *out) {
  memset(out, 0, sizeof *out);
  tarn_log_bounds b;
  int rc = tarn_log_bounds_read(m, log_id, &b);
  if (rc)
    return rc;
  out->before = out->stored = b.trim;
  if (upto == 0 || upto <= b.trim || !b.has_records)
    return 0;
  spans s = {0};
  if ((rc = list_spans(m, log_id, &b, &s)))
    return rc;
  tarn_lease *l;
  if (!(rc = tarn_lease_acquire(m, log_id, &l))) {
    /* LS-080: B' = min(upto, start of the last index record); B never goes
     * down (LS-079) */
    rc = tarn_soft_trim(m, l, upto - 1, &out->stored);
    int rr = tarn_lease_release(l);
    if (!rc)
      rc = rr;
  }
  for (size_t i = 0; !rc && i < s.n && s.v[i].end <= out->stored; i++)
    out->bytes += span_size(&s, i);
  free(s.v);
  return rc;
}

/* ---- plain streams ------------------------------------------------------- */

int tarn_retention_parse(const char *prop, const char *value, int64_t *out) {
  char *e;
  errno = 0;
  long long v = value && *value && *value != ' ' ? strtoll(value, &e, 10) : 0;
  if (!value || !*value || *value == ' ' || errno || *e || v < -1)
    return tarn__err(TARN_EINVAL, "stream property %s=%s: not a whole number of %s >= -1", prop,
                     value ? value : "", strcmp(prop, TARN_PROP_RETENTION_MS) ? "bytes" : "ms");
  *out = v;
  return 0;
}

#define MARKS_DIR "/tarn-retention-times/"
#define MARKS_MAX 64 /* marks younger than retention.ms kept per log */

typedef struct mark {
  int64_t t;
  uint64_t end;
  char key[TARN_KEY_SLASH_MAX];
} mark;

static int marks_prefix(char out[TARN_KEY_SLASH_MAX], uint64_t log_id) {
  snprintf(out, TARN_KEY_SLASH_MAX, MARKS_DIR "%llu/", (unsigned long long)log_id);
  return 0;
}

/* A mark's record: key {prefix}{t:020d}, value E as the trim marker writes
 * its offsets (ASCII decimal). One that does not parse is ignored (it can
 * only make the log kept longer) and removed by the thinning. */
static int mark_parse(const tarn_meta_rec *r, size_t plen, mark *out) {
  const char *d = r->key + plen;
  if (strlen(d) != 20 || strspn(d, "0123456789") != 20)
    return TARN_ECORRUPT;
  unsigned long long t = strtoull(d, NULL, 10);
  if (t > INT64_MAX || tarn_trimmark_parse(r->value, r->value_len, &out->end))
    return TARN_ECORRUPT;
  out->t = (int64_t)t;
  snprintf(out->key, sizeof out->key, "%s", r->key);
  return 0;
}

int tarn__retention_forget(tarn_meta *m, uint64_t log_id) {
  char part[TARN_KEY_PARTITION_LEN + 1], a[TARN_KEY_SLASH_MAX], z[TARN_KEY_SLASH_MAX + 1];
  int rc = tarn_key_partition(part, log_id);
  if (rc)
    return rc;
  marks_prefix(a, log_id);
  snprintf(z, sizeof z, "%s\xff", a); /* the key order is slash-aware: docs/meta.md */
  return tarn_meta_delete_range(m, part, a, z, NULL);
}

static int marks_read(tarn_meta *m, const char *part, uint64_t log_id, mark **v, size_t *n,
                      size_t *bad) {
  char a[TARN_KEY_SLASH_MAX], z[TARN_KEY_SLASH_MAX + 1];
  marks_prefix(a, log_id);
  snprintf(z, sizeof z, "%s\xff", a); /* the key order is slash-aware: docs/meta.md */
  size_t plen = strlen(a);
  tarn_meta_recs r = {0};
  /* bounded: at most MARKS_MAX + 2 are ever written before thinning */
  int rc = tarn_meta_scan(m, part, a, z, 0, 4 * MARKS_MAX, &r);
  *v = NULL, *n = 0, *bad = 0;
  if (rc)
    return rc;
  if (r.n && !(*v = calloc(r.n, sizeof **v)))
    rc = tarn__err(TARN_ENOMEM, "out of memory");
  for (size_t i = 0; !rc && i < r.n; i++) {
    if (mark_parse(&r.v[i], plen, &(*v)[*n]) == 0)
      (*n)++;
    else if (++*bad, 1)
      tarn_meta_delete(m, part, r.v[i].key); /* idempotent; a failure is retried */
  }
  tarn_meta_recs_free(&r);
  return rc;
}

/* The time rule: the first offset to keep by retention.ms (marks in key =
 * time order), and the marks no longer needed. */
static uint64_t time_target(const mark *v, size_t n, int64_t cutoff, uint64_t upto) {
  for (size_t i = 0; i < n; i++) {
    if (v[i].t > cutoff && !TARN__PLANTED(TARN__BUG_RETENTION_TRIMS_YOUNG))
      break; /* too young: the entries below its E may be younger than ms */
    if (v[i].end > upto)
      upto = v[i].end;
  }
  return upto;
}

/* Records (now, E) after E was read: every offset below E was written
 * before now. Spaced by ms / MARKS_MAX so that at most MARKS_MAX lie in the
 * window; the old ones go (the newest old one has done its work once the
 * log is trimmed to its E; it stays until then). */
static int marks_update(tarn_meta *m, const char *part, uint64_t log_id, mark *v, size_t n,
                        int64_t ms, uint64_t end, int64_t cutoff) {
  int64_t now = tarn__now_ms(); /* after the bounds were read */
  int64_t spacing = ms / MARKS_MAX;
  int rc = 0;
  if (end && (!n || (v[n - 1].end < end && now - v[n - 1].t >= spacing))) {
    char key[TARN_KEY_SLASH_MAX], val[24];
    marks_prefix(key, log_id);
    snprintf(key + strlen(key), sizeof key - strlen(key), "%020lld", (long long)now);
    int len = snprintf(val, sizeof val, "%llu", (unsigned long long)end);
    /* guarded on the log's fence (LS-044): no mark lands after the
     * deletion's DeleteRange of them (tarn_log_delete) */
    char fence[TARN_KEY_SLASH_MAX];
    if ((rc = tarn_key_fence(fence, log_id)))
      return rc;
    tarn_meta_guard g = {TARN_META_GUARD_ABSENT, fence, 0};
    rc = tarn_meta_create_if(m, part, key, val, (size_t)len, TARN_META_PERSISTENT, &g, 1, NULL);
    if (rc == TARN_EGUARD)
      return tarn__err(TARN_EFENCED, "log %llu is being deleted", (unsigned long long)log_id);
    if (rc == TARN_EEXIST) /* another node, this very ms */
      rc = 0;
  }
  size_t old = 0;
  while (old < n && v[old].t <= cutoff)
    old++;
  for (size_t i = 0; !rc && old && i + 1 < old; i++) {
    rc = tarn_meta_delete(m, part, v[i].key);
    if (rc == TARN_ENOTFOUND)
      rc = 0;
  }
  return rc;
}

static int pass_log(tarn_meta *m, uint64_t log_id, int64_t ms, int64_t bytes,
                    tarn_retention_stats *st) {
  char part[TARN_KEY_PARTITION_LEN + 1];
  tarn_log_bounds b;
  int rc;
  if ((rc = tarn_key_partition(part, log_id)) || (rc = tarn_log_bounds_read(m, log_id, &b)))
    return rc;
  uint64_t upto = b.first;
  if (ms >= 0) {
    mark *v;
    size_t n, bad;
    int64_t cutoff = tarn__now_ms() - ms;
    if ((rc = marks_read(m, part, log_id, &v, &n, &bad)))
      return rc;
    upto = time_target(v, n, cutoff, upto);
    rc = marks_update(m, part, log_id, v, n, ms, b.end, cutoff);
    free(v);
    if (rc)
      return rc;
  }
  if (bytes >= 0 && b.has_records &&
      (rc = tarn__retention_bytes_target(m, log_id, &b, bytes, &upto)))
    return rc;
  tarn__retention_trimmed tr;
  if ((rc = tarn__retention_trim(m, log_id, upto, &tr)))
    return rc;
  if (tr.stored > tr.before)
    st->trims++, st->bytes += tr.bytes;
  return 0;
}

/* The stream's policy: 0 and *ms, *bytes (-1: none); 1 when it has none or
 * is a Kafka topic (its own job); TARN_EINVAL for a value that does not
 * parse (the stream is left alone, and the pass says why). */
static int policy_of(const tarn_catalog_record *s, int64_t *ms, int64_t *bytes) {
  *ms = *bytes = -1;
  if (tarn_kafka_stream_is_kafka(s))
    return 1;
  int any = 0, rc = 0;
  for (size_t i = 0; i < s->n_props && !rc; i++) {
    if (strcmp(s->props[i].key, TARN_PROP_RETENTION_MS) == 0)
      rc = tarn_retention_parse(TARN_PROP_RETENTION_MS, s->props[i].value, ms), any = 1;
    else if (strcmp(s->props[i].key, TARN_PROP_RETENTION_BYTES) == 0)
      rc = tarn_retention_parse(TARN_PROP_RETENTION_BYTES, s->props[i].value, bytes), any = 1;
  }
  if (rc)
    return tarn__errctx(rc, "stream %s/%s", s->ns, s->name);
  return any && (*ms >= 0 || *bytes >= 0) ? 0 : 1;
}

int tarn_retention_pass(tarn_deployment *d, tarn_retention_stats *st) {
  memset(st, 0, sizeof *st);
  tarn_meta *m = tarn_deployment_meta(d);
  tarn_catalog *cat;
  tarn_catalog_record *v = NULL;
  size_t nv = 0;
  int rc = tarn_catalog_open(m, NULL, &cat);
  if (rc)
    return rc;
  rc = tarn_catalog_list_streams(cat, &v, &nv);
  tarn_catalog_close(cat);
  if (rc)
    return rc;
  int first = 0;
  char why[512] = ""; /* the first failure's message: later calls set theirs */
  for (size_t i = 0; i < nv; i++) {
    int64_t ms, bytes;
    int prc = policy_of(&v[i], &ms, &bytes);
    if (prc == 1)
      continue;
    st->streams++;
    for (size_t p = 0; !prc && p < v[i].n_logs; p++) {
      st->logs++;
      int lrc = pass_log(m, v[i].logs[p], ms, bytes, st);
      if (lrc == TARN_EFENCED || lrc == TARN_ENOTFOUND)
        continue; /* the stream is being deleted */
      if (lrc) {
        st->errors++;
        lrc = tarn__errctx(lrc, "stream %s/%s partition %zu", v[i].ns, v[i].name, p);
        if (!first)
          first = lrc, snprintf(why, sizeof why, "%s", tarn_errmsg());
      }
    }
    if (prc < 0) {
      st->errors++;
      if (!first)
        first = prc, snprintf(why, sizeof why, "%s", tarn_errmsg());
    }
  }
  tarn_catalog_records_free(v, nv);
  return first ? tarn__err(first, "%s", why) : 0;
}
