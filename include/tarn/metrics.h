/* tarn — process-wide metrics: counters, gauges and latency histograms with
 * labels, rendered in the Prometheus text exposition format (version 0.0.4).
 *
 * A series is named by its family name and its label pairs, given as
 * NULL-terminated variadic (key, value) strings:
 *
 *   tarn_metrics_inc("tarn_objstore_requests_total", 1, "op", "put", "backend", "s3", NULL);
 *
 * The first use of a series allocates it (under a mutex); every later update
 * finds it without a lock (an append-only hash table) and changes it with one
 * relaxed C11 atomic operation, so instrumenting a hot path is cheap. Series
 * are never freed while the process runs (tarn_metrics_reset is for tests).
 *
 * A family's TYPE and HELP come from tarn_metrics_describe, or from the
 * built-in table of tarn's own families (docs/serve.md lists them); a family
 * used before it is described is a counter, gauge or histogram by the first
 * function applied to it, with an empty HELP. Updating a family with a
 * function of another type is ignored.
 *
 * At most 8 label pairs per series; keys and values are copied; values are
 * escaped on output (backslash, double quote, newline). */
#ifndef TARN_METRICS_H
#define TARN_METRICS_H

#include <stddef.h>
#include <stdint.h>

#include "tarn/buf.h"

#ifdef __cplusplus
extern "C" {
#endif

enum { TARN_METRIC_COUNTER = 1, TARN_METRIC_GAUGE = 2, TARN_METRIC_HISTOGRAM = 3 };

/* The upper bounds (seconds) of the latency histograms' buckets, +Inf aside. */
#define TARN_METRICS_BUCKETS 12
extern const double tarn_metrics_bucket_bounds[TARN_METRICS_BUCKETS];

/* Sets a family's type and help text (the first description wins). name must
 * match [a-zA-Z_:][a-zA-Z0-9_:]*; TARN_EINVAL otherwise or on a type that
 * differs from the family's. */
int tarn_metrics_describe(const char *name, int type, const char *help);

/* Counter: adds v. Label pairs follow v, then NULL. */
void tarn_metrics_inc(const char *name, uint64_t v, ...);
/* Gauge: sets to v, or adds d (which may be negative). */
void tarn_metrics_set(const char *name, int64_t v, ...);
void tarn_metrics_add(const char *name, int64_t d, ...);
/* Histogram: records one observation of `seconds`. */
void tarn_metrics_observe(const char *name, double seconds, ...);

/* Many observations of one series at once: collect them in a local
 * tarn_metrics_hist (zeroed), then record them with one lookup. For hot
 * paths that would otherwise observe once per item. */
typedef struct tarn_metrics_hist {
  uint64_t buckets[TARN_METRICS_BUCKETS + 1]; /* the last: above every bound (+Inf) */
  uint64_t count;
  uint64_t sum_ns;
} tarn_metrics_hist;
void tarn_metrics_hist_add(tarn_metrics_hist *h, double seconds);
void tarn_metrics_observe_hist(const char *name, const tarn_metrics_hist *h, ...);

/* The current value of a counter or gauge series (histograms: the count of
 * observations); 0 when the series does not exist. For tests and /healthz. */
int64_t tarn_metrics_value(const char *name, ...);

/* Appends the text exposition of every family (sorted by name; series in
 * the order they were created) to out. */
int tarn_metrics_render(tarn_buf *out);

/* Seconds from the library's monotonic clock (the one clock every role reads,
 * src/util/clock.h; the simulator's hook when installed), for latency
 * observations. */
double tarn_metrics_now(void);

/* Forgets every series and description. Not thread-safe: tests only. */
void tarn_metrics_reset(void);

#ifdef __cplusplus
}
#endif
#endif
