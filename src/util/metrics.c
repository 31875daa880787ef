/* The metrics registry: an append-only hash table of series, read without
 * locks, grown under a mutex; families kept in a list for rendering. */
#include "tarn/metrics.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tarn/error.h"
#include "util/clock.h"
#include "util/error.h"

#define NBUCKETS 256
#define MAX_PAIRS 8
#define KEY_MAX 1024

const double tarn_metrics_bucket_bounds[TARN_METRICS_BUCKETS] = {
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 5};

typedef struct family family;

typedef struct series {
  struct series *next_hash;          /* immutable once published */
  _Atomic(struct series *) next_fam; /* the family's series, creation order */
  family *fam;
  char *key; /* name \0 k \0 v \0 ... (keylen bytes) */
  size_t keylen;
  char *labels;          /* rendered: k="v",k="v" (escaped), or "" */
  _Atomic int64_t value; /* counter, gauge; histogram: count */
  _Atomic uint64_t buckets[TARN_METRICS_BUCKETS];
  _Atomic uint64_t sum_ns; /* histogram: sum of observations */
} series;

struct family {
  family *next;
  char *name, *help;
  int type;
  _Atomic(series *) first;
  series *last; /* under mu */
};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static _Atomic(series *) table[NBUCKETS];
static family *families; /* under mu */

/* tarn's own families: what the library and `tarn serve` report. */
static const struct {
  const char *name;
  int type;
  const char *help;
} builtin[] = {
    {"tarn_objstore_requests_total", TARN_METRIC_COUNTER,
     "Object storage operations by operation and backend."},
    {"tarn_objstore_errors_total", TARN_METRIC_COUNTER,
     "Object storage operations that failed, by operation, backend and error."},
    {"tarn_objstore_bytes_total", TARN_METRIC_COUNTER,
     "Bytes written (put) and read (get) through object storage."},
    {"tarn_meta_requests_total", TARN_METRIC_COUNTER,
     "Metadata store primitives by primitive and backend."},
    {"tarn_meta_errors_total", TARN_METRIC_COUNTER,
     "Metadata store primitives that failed, by primitive, backend and error "
     "(not found and exists are results, not errors)."},
    {"tarn_writer_appends_total", TARN_METRIC_COUNTER, "Entries queued by writers."},
    {"tarn_writer_append_bytes_total", TARN_METRIC_COUNTER, "Payload bytes queued by writers."},
    {"tarn_writer_objects_total", TARN_METRIC_COUNTER,
     "WAL objects writers tried to write, by result (written, failed)."},
    {"tarn_writer_object_bytes_total", TARN_METRIC_COUNTER, "Bytes of WAL objects written."},
    {"tarn_writer_entries_total", TARN_METRIC_COUNTER,
     "Entry outcomes: acknowledged, failed, unknown."},
    {"tarn_writer_stage_seconds", TARN_METRIC_HISTOGRAM,
     "Append latency by stage: batch_wait (append to seal), object_put, index_put."},
    {"tarn_writer_append_seconds", TARN_METRIC_HISTOGRAM, "Append latency from append to outcome."},
    {"tarn_reader_entries_total", TARN_METRIC_COUNTER, "Entries returned by readers."},
    {"tarn_reader_bytes_total", TARN_METRIC_COUNTER, "Payload bytes returned by readers."},
    {"tarn_reader_errors_total", TARN_METRIC_COUNTER, "Reads that failed, by error."},
    {"tarn_compaction_lag_ms", TARN_METRIC_GAUGE,
     "Age in ms of the oldest entry not yet compacted, over all logs (0: none)."},
    {"tarn_compaction_raw_records", TARN_METRIC_GAUGE,
     "RAW index records above the trim marker, over all logs."},
    {"tarn_compaction_raw_bytes", TARN_METRIC_GAUGE,
     "Payload bytes of RAW index records above the trim marker, over all logs."},
    {"tarn_compaction_tasks_run_total", TARN_METRIC_COUNTER,
     "Compaction tasks this process claimed and ran, by result."},
    {"tarn_compaction_tasks", TARN_METRIC_GAUGE, "Compaction tasks by state."},
    {"tarn_reclaimed_objects_total", TARN_METRIC_COUNTER,
     "Objects deleted by the reclaimer and the WAL collector, by root and reason."},
    {"tarn_reclaimed_bytes_total", TARN_METRIC_COUNTER,
     "Bytes of objects the reclaimer and the WAL collector deleted (sized by the listings "
     "that found them), by root and reason."},
    {"tarn_serve_job_runs_total", TARN_METRIC_COUNTER,
     "Scheduled job runs of tarn serve, by job and result."},
    {"tarn_serve_job_seconds", TARN_METRIC_HISTOGRAM, "Duration of scheduled job runs, by job."},
    {"tarn_serve_up", TARN_METRIC_GAUGE, "1 while tarn serve runs."},
    {"tarn_serve_stores_ok", TARN_METRIC_GAUGE,
     "1 when the last health check reached every store."},
};

static int name_ok(const char *n) {
  if (!n || !*n)
    return 0;
  for (const char *p = n; *p; p++) {
    int c = (unsigned char)*p;
    int alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':';
    if (!alpha && !(p != n && c >= '0' && c <= '9'))
      return 0;
  }
  return 1;
}

/* Under mu. */
static family *family_find(const char *name) {
  for (family *f = families; f; f = f->next)
    if (strcmp(f->name, name) == 0)
      return f;
  return NULL;
}

/* Under mu: the family, created with the built-in or the given type. */
static family *family_get(const char *name, int type, const char *help) {
  family *f = family_find(name);
  if (f)
    return f;
  if (!help)
    for (size_t i = 0; i < sizeof builtin / sizeof builtin[0]; i++)
      if (strcmp(builtin[i].name, name) == 0) {
        type = builtin[i].type;
        help = builtin[i].help;
      }
  if (!(f = calloc(1, sizeof *f)))
    return NULL;
  f->name = strdup(name);
  f->help = strdup(help ? help : "");
  if (!f->name || !f->help) {
    free(f->name);
    free(f->help);
    free(f);
    return NULL;
  }
  f->type = type;
  f->next = families;
  families = f;
  return f;
}

int tarn_metrics_describe(const char *name, int type, const char *help) {
  if (!name_ok(name) || type < TARN_METRIC_COUNTER || type > TARN_METRIC_HISTOGRAM)
    return tarn__err(TARN_EINVAL, "metric %s: bad name or type", name ? name : "(null)");
  pthread_mutex_lock(&mu);
  family *f = family_get(name, type, help ? help : "");
  int rc = !f                ? tarn__err(TARN_ENOMEM, "out of memory")
           : f->type != type ? tarn__err(TARN_EINVAL, "metric %s: described twice", name)
                             : 0;
  pthread_mutex_unlock(&mu);
  return rc;
}

static uint64_t fnv(const char *p, size_t n) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; i++)
    h = (h ^ (unsigned char)p[i]) * 1099511628211ull;
  return h;
}

static int put_escaped(tarn_buf *b, const char *s) {
  int rc = 0;
  for (; *s && !rc; s++) {
    if (*s == '\\')
      rc = tarn_buf_append(b, "\\\\", 2);
    else if (*s == '"')
      rc = tarn_buf_append(b, "\\\"", 2);
    else if (*s == '\n')
      rc = tarn_buf_append(b, "\\n", 2);
    else
      rc = tarn_buf_putc(b, (uint8_t)*s);
  }
  return rc;
}

/* Builds the series key from the name and the label pairs; 0 on overflow. */
static size_t make_key(char *key, const char *name, va_list ap) {
  size_t n = strlen(name) + 1;
  if (n > KEY_MAX)
    return 0;
  memcpy(key, name, n);
  for (int i = 0; i < 2 * MAX_PAIRS; i++) {
    const char *s = va_arg(ap, const char *);
    if (!s)
      return n;
    size_t l = strlen(s) + 1;
    if (n + l > KEY_MAX)
      return 0;
    memcpy(key + n, s, l);
    n += l;
  }
  return 0;
}

static char *render_labels(const char *key, size_t keylen) {
  tarn_buf b = TARN_BUF_INIT;
  const char *p = key + strlen(key) + 1, *end = key + keylen;
  int rc = 0, first = 1;
  while (p < end && !rc) {
    const char *k = p, *v = p + strlen(p) + 1;
    if (v >= end) /* an odd count: a key without a value */
      v = "";
    if (!first)
      rc = tarn_buf_putc(&b, ',');
    first = 0;
    if (!rc && !(rc = tarn_buf_append(&b, k, strlen(k))) && !(rc = tarn_buf_append(&b, "=\"", 2)) &&
        !(rc = put_escaped(&b, v)))
      rc = tarn_buf_putc(&b, '"');
    p = v < end ? v + strlen(v) + 1 : end;
  }
  if (!rc)
    rc = tarn_buf_putc(&b, 0);
  if (rc) {
    tarn_buf_free(&b);
    return NULL;
  }
  return (char *)b.data;
}

/* The series for (name, labels in ap), created on first use; NULL when its
 * family has another type or memory ran out (the update is then dropped). */
static series *lookup(int type, const char *name, va_list ap) {
  char key[KEY_MAX];
  size_t keylen = make_key(key, name, ap);
  if (!keylen)
    return NULL;
  uint64_t h = fnv(key, keylen);
  _Atomic(series *) *slot = &table[h % NBUCKETS];
  for (series *s = atomic_load_explicit(slot, memory_order_acquire); s; s = s->next_hash)
    if (s->keylen == keylen && memcmp(s->key, key, keylen) == 0)
      return s->fam->type == type ? s : NULL;
  /* a bad name never gets a series, so checking it here, once, suffices */
  if (!name_ok(name))
    return NULL;
  pthread_mutex_lock(&mu);
  series *s = NULL;
  for (s = atomic_load_explicit(slot, memory_order_acquire); s; s = s->next_hash)
    if (s->keylen == keylen && memcmp(s->key, key, keylen) == 0)
      break;
  if (!s) {
    family *f = family_get(name, type, NULL);
    if (f && (s = calloc(1, sizeof *s)) != NULL) {
      s->fam = f;
      s->keylen = keylen;
      s->key = malloc(keylen);
      s->labels = render_labels(key, keylen);
      if (!s->key || !s->labels) {
        free(s->key);
        free(s->labels);
        free(s);
        s = NULL;
      } else {
        memcpy(s->key, key, keylen);
        s->next_hash = atomic_load_explicit(slot, memory_order_relaxed);
        atomic_store_explicit(slot, s, memory_order_release);
        if (f->last)
          atomic_store_explicit(&f->last->next_fam, s, memory_order_release);
        else
          atomic_store_explicit(&f->first, s, memory_order_release);
        f->last = s;
      }
    }
  }
  pthread_mutex_unlock(&mu);
  return s && s->fam->type == type ? s : NULL;
}

void tarn_metrics_inc(const char *name, uint64_t v, ...) {
  va_list ap;
  va_start(ap, v);
  series *s = lookup(TARN_METRIC_COUNTER, name, ap);
  va_end(ap);
  if (s)
    atomic_fetch_add_explicit(&s->value, (int64_t)v, memory_order_relaxed);
}

void tarn_metrics_set(const char *name, int64_t v, ...) {
  va_list ap;
  va_start(ap, v);
  series *s = lookup(TARN_METRIC_GAUGE, name, ap);
  va_end(ap);
  if (s)
    atomic_store_explicit(&s->value, v, memory_order_relaxed);
}

void tarn_metrics_add(const char *name, int64_t d, ...) {
  va_list ap;
  va_start(ap, d);
  series *s = lookup(TARN_METRIC_GAUGE, name, ap);
  va_end(ap);
  if (s)
    atomic_fetch_add_explicit(&s->value, d, memory_order_relaxed);
}

void tarn_metrics_observe(const char *name, double seconds, ...) {
  va_list ap;
  va_start(ap, seconds);
  series *s = lookup(TARN_METRIC_HISTOGRAM, name, ap);
  va_end(ap);
  if (!s)
    return;
  tarn_metrics_hist h = {{0}, 0, 0};
  tarn_metrics_hist_add(&h, seconds);
  size_t i = 0;
  while (h.buckets[i] == 0)
    i++;
  /* Buckets are stored non-cumulative; rendering adds them up. */
  if (i < TARN_METRICS_BUCKETS)
    atomic_fetch_add_explicit(&s->buckets[i], 1, memory_order_relaxed);
  atomic_fetch_add_explicit(&s->sum_ns, h.sum_ns, memory_order_relaxed);
  atomic_fetch_add_explicit(&s->value, 1, memory_order_relaxed);
}

void tarn_metrics_hist_add(tarn_metrics_hist *h, double seconds) {
  if (!(seconds >= 0))
    seconds = 0;
  size_t i = 0;
  while (i < TARN_METRICS_BUCKETS && seconds > tarn_metrics_bucket_bounds[i])
    i++;
  h->buckets[i]++;
  h->count++;
  h->sum_ns += (uint64_t)(seconds * 1e9);
}

void tarn_metrics_observe_hist(const char *name, const tarn_metrics_hist *h, ...) {
  if (!h->count)
    return;
  va_list ap;
  va_start(ap, h);
  series *s = lookup(TARN_METRIC_HISTOGRAM, name, ap);
  va_end(ap);
  if (!s)
    return;
  for (size_t i = 0; i < TARN_METRICS_BUCKETS; i++)
    if (h->buckets[i])
      atomic_fetch_add_explicit(&s->buckets[i], h->buckets[i], memory_order_relaxed);
  atomic_fetch_add_explicit(&s->sum_ns, h->sum_ns, memory_order_relaxed);
  atomic_fetch_add_explicit(&s->value, (int64_t)h->count, memory_order_relaxed);
}

int64_t tarn_metrics_value(const char *name, ...) {
  char key[KEY_MAX];
  va_list ap;
  va_start(ap, name);
  size_t keylen = make_key(key, name, ap);
  va_end(ap);
  if (!keylen)
    return 0;
  uint64_t h = fnv(key, keylen);
  for (series *s = atomic_load_explicit(&table[h % NBUCKETS], memory_order_acquire); s;
       s = s->next_hash)
    if (s->keylen == keylen && memcmp(s->key, key, keylen) == 0)
      return atomic_load_explicit(&s->value, memory_order_relaxed);
  return 0;
}

static int put_help(tarn_buf *b, const char *help) {
  int rc = 0;
  for (; *help && !rc; help++) /* HELP escapes backslash and newline only */
    rc = *help == '\\'   ? tarn_buf_append(b, "\\\\", 2)
         : *help == '\n' ? tarn_buf_append(b, "\\n", 2)
                         : tarn_buf_putc(b, (uint8_t)*help);
  return rc;
}

static int printf_buf(tarn_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int printf_buf(tarn_buf *b, const char *fmt, ...) {
  char tmp[2048];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
  va_end(ap);
  if (n < 0 || (size_t)n >= sizeof tmp)
    return tarn__err(TARN_ERANGE, "metrics line too long");
  return tarn_buf_append(b, tmp, (size_t)n);
}

static int cmp_family(const void *a, const void *b) {
  return strcmp((*(family *const *)a)->name, (*(family *const *)b)->name);
}

static int render_histogram(tarn_buf *out, const family *f, series *s) {
  const char *sep = *s->labels ? "," : "";
  uint64_t cum = 0;
  int rc = 0;
  for (size_t i = 0; i < TARN_METRICS_BUCKETS && !rc; i++) {
    cum += atomic_load_explicit(&s->buckets[i], memory_order_relaxed);
    rc = printf_buf(out, "%s_bucket{%s%sle=\"%g\"} %llu\n", f->name, s->labels, sep,
                    tarn_metrics_bucket_bounds[i], (unsigned long long)cum);
  }
  /* The count is read last, so +Inf is never below a finite bucket. */
  int64_t count = atomic_load_explicit(&s->value, memory_order_relaxed);
  if ((uint64_t)count < cum)
    count = (int64_t)cum;
  double sum = (double)atomic_load_explicit(&s->sum_ns, memory_order_relaxed) / 1e9;
  if (!rc)
    rc = printf_buf(out, "%s_bucket{%s%sle=\"+Inf\"} %lld\n", f->name, s->labels, sep,
                    (long long)count);
  const char *l = *s->labels ? "{" : "", *r = *s->labels ? "}" : "";
  if (!rc)
    rc = printf_buf(out, "%s_sum%s%s%s %.9g\n", f->name, l, s->labels, r, sum);
  if (!rc)
    rc = printf_buf(out, "%s_count%s%s%s %lld\n", f->name, l, s->labels, r, (long long)count);
  return rc;
}

int tarn_metrics_render(tarn_buf *out) {
  pthread_mutex_lock(&mu);
  size_t n = 0;
  for (family *f = families; f; f = f->next)
    n++;
  family **v = calloc(n ? n : 1, sizeof *v);
  if (!v) {
    pthread_mutex_unlock(&mu);
    return tarn__err(TARN_ENOMEM, "out of memory");
  }
  n = 0;
  for (family *f = families; f; f = f->next)
    v[n++] = f;
  pthread_mutex_unlock(&mu);
  /* Families and series are never freed while the process runs (only by
   * tarn_metrics_reset, which must not race), so they are read unlocked. */
  qsort(v, n, sizeof *v, cmp_family);
  static const char *const tname[] = {"", "counter", "gauge", "histogram"};
  int rc = 0;
  for (size_t i = 0; i < n && !rc; i++) {
    family *f = v[i];
    series *s = atomic_load_explicit(&f->first, memory_order_acquire);
    if (!s)
      continue;
    if (!(rc = printf_buf(out, "# HELP %s ", f->name)) && !(rc = put_help(out, f->help)))
      rc = printf_buf(out, "\n# TYPE %s %s\n", f->name, tname[f->type]);
    for (; s && !rc; s = atomic_load_explicit(&s->next_fam, memory_order_acquire)) {
      if (f->type == TARN_METRIC_HISTOGRAM) {
        rc = render_histogram(out, f, s);
        continue;
      }
      long long val = (long long)atomic_load_explicit(&s->value, memory_order_relaxed);
      rc = *s->labels ? printf_buf(out, "%s{%s} %lld\n", f->name, s->labels, val)
                      : printf_buf(out, "%s %lld\n", f->name, val);
    }
  }
  free(v);
  return rc;
}

/* The one clock (src/util/clock.h), so the simulator's hook times these too. */
double tarn_metrics_now(void) { return tarn__mono_s(); }

void tarn_metrics_reset(void) {
  pthread_mutex_lock(&mu);
  for (size_t i = 0; i < NBUCKETS; i++) {
    series *s = atomic_load(&table[i]);
    atomic_store(&table[i], NULL);
    while (s) {
      series *nx = s->next_hash;
      free(s->key);
      free(s->labels);
      free(s);
      s = nx;
    }
  }
  while (families) {
    family *f = families;
    families = f->next;
    free(f->name);
    free(f->help);
    free(f);
  }
  pthread_mutex_unlock(&mu);
}
