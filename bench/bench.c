/* tarn-bench: runs the benchmarks named on the command line (all by default). */
#include "bench.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

double bench_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static volatile uint64_t sink;

void bench_sink(const void *p, size_t n) {
  const uint8_t *b = p;
  if (n)
    sink += b[0] + b[n - 1];
}

double bench_memcpy_seconds(size_t n) {
  uint8_t *a = malloc(n), *b = malloc(n);
  if (!a || !b) {
    free(a), free(b);
    return 0;
  }
  memset(a, 0x5a, n);
  memset(b, 0, n);
  double best = 1e9;
  for (int i = 0; i < 5; i++) {
    double t = bench_now();
    memcpy(b, a, n);
    bench_sink(b, n);
    t = bench_now() - t;
    if (t < best)
      best = t;
  }
  free(a), free(b);
  return best;
}

void bench_report(const char *what, size_t bytes, double seconds, const char *baseline,
                  double baseline_seconds) {
  double mbs = (double)bytes / seconds / 1e6;
  double base = (double)bytes / baseline_seconds / 1e6;
  printf("%-44s %10.1f MB/s   %-14s %10.1f MB/s   ratio %.3f\n", what, mbs, baseline, base,
         mbs / base);
  fflush(stdout);
}

void bench_report_ops(const char *what, double ops, double seconds, const char *baseline,
                      double baseline_ops_per_s) {
  double r = ops / seconds;
  printf("%-44s %10.0f ops/s   %-14s %10.0f ops/s   ratio %.3f\n", what, r, baseline,
         baseline_ops_per_s, r / baseline_ops_per_s);
  fflush(stdout);
}

int main(int argc, char **argv) {
  if (argc > 1 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
    printf("usage: tarn-bench [NAME...]\n\nBenchmarks:\n");
    for (const tarn_bench *b = bench_table; b->name; b++)
      printf("  %-14s %s\n", b->name, b->summary);
    return 0;
  }
  int rc = 0;
  for (const tarn_bench *b = bench_table; b->name; b++) {
    int want = argc < 2;
    for (int i = 1; i < argc; i++)
      if (strcmp(argv[i], b->name) == 0)
        want = 1;
    if (!want)
      continue;
    printf("== %s: %s\n", b->name, b->summary);
    if (b->run() != 0) {
      fprintf(stderr, "tarn-bench: %s failed\n", b->name);
      rc = 1;
    }
  }
  return rc;
}
