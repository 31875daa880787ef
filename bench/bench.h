/* The benchmark driver's shared pieces. A benchmark measures its own work and a
 * baseline (memcpy of the same bytes, a disk write with fsync, DuckDB, ...) in
 * the same run, and reports both, because the machines are shared and noisy. */
#ifndef TARN_BENCH_H
#define TARN_BENCH_H

#include <stddef.h>
#include <stdint.h>

typedef struct tarn_bench {
  const char *name; /* "wal", "entryindex", ... : selectable on the command line */
  const char *summary;
  int (*run)(void); /* prints its lines through bench_report(); 0 on success */
} tarn_bench;

/* Monotonic time in seconds. */
double bench_now(void);
/* Seconds per byte of memcpy over n bytes (best of several passes), the usual baseline. */
double bench_memcpy_seconds(size_t n);
/* Prints one result line: what, throughput in MB/s (bytes/seconds), and the ratio
 * of this throughput to the baseline's (baseline_seconds for the same bytes). */
void bench_report(const char *what, size_t bytes, double seconds, const char *baseline,
                  double baseline_seconds);
/* Prints an operations-per-second line with a ratio to a baseline rate. */
void bench_report_ops(const char *what, double ops, double seconds, const char *baseline,
                      double baseline_ops_per_s);
/* --rounds N on the command line (0 when not given): how many alternating
 * pairs (this side, then the baseline) a benchmark that supports it runs. */
extern int bench_rounds;

/* Keeps the optimiser from deleting work whose result is unused. */
void bench_sink(const void *p, size_t n);

/* The DuckDB baseline (through node and tests/interop/bench_duckdb.mjs): the
 * seconds DuckDB takes to COPY total bytes of payloads (entries of entry
 * bytes) to a Parquet file with codec ("zstd", "uncompressed"), and to read
 * them back. -1 (after printing why) when node or the packages are missing. */
int bench_duckdb_copy(const uint8_t *payloads, size_t total, size_t entry, const char *codec,
                      double *write_s, double *read_s);

/* Each benchmark file defines one of these. */
extern const tarn_bench bench_table[];

#endif
