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

int bench_rounds;

int main(int argc, char **argv) {
  if (argc > 1 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
    printf("usage: tarn-bench [--rounds N] [NAME...]\n\n"
           "--rounds N: alternating pairs (a side, then its baseline) for the benchmarks\n"
           "that take it (kafka); each ratio is the median of the pairs'.\n\nBenchmarks:\n");
    for (const tarn_bench *b = bench_table; b->name; b++)
      printf("  %-14s %s\n", b->name, b->summary);
    return 0;
  }
  /* --rounds N is taken out of argv, so the rest are names */
  int names = 0;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--rounds") == 0) {
      char *end;
      long n = i + 1 < argc ? strtol(argv[i + 1], &end, 10) : 0;
      if (i + 1 >= argc || *end || n < 1 || n > 1000) {
        fprintf(stderr, "tarn-bench: --rounds needs a number from 1 to 1000\n");
        return 2;
      }
      bench_rounds = (int)n;
      i++;
    } else {
      argv[++names] = argv[i];
    }
  }
  argc = names + 1;
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

static const char *interop_dir(char *buf, size_t n) {
  const char *env = getenv("TARN_INTEROP_DIR");
  if (env)
    return env;
  /* bench/bench.c -> tests/interop */
  snprintf(buf, n, "%s", __FILE__);
  char *slash = strrchr(buf, '/');
  if (!slash)
    return NULL;
  snprintf(slash, n - (size_t)(slash - buf), "/../tests/interop");
  char probe[4200];
  snprintf(probe, sizeof probe, "%s/node_modules/@duckdb/node-api/package.json", buf);
  FILE *f = fopen(probe, "r");
  if (!f)
    return NULL;
  fclose(f);
  return buf;
}

int bench_duckdb_copy(const uint8_t *payloads, size_t total, size_t entry, const char *codec,
                      double *write_s, double *read_s) {
  char dir[4096], cmd[9000], raw[] = "/tmp/tarn-bench-pq-XXXXXX";
  const char *interop = interop_dir(dir, sizeof dir);
  if (!interop || system("node --version >/dev/null 2>&1") != 0) {
    printf("%-44s (skipped: no node or tests/interop/node_modules)\n", "duckdb baseline");
    return -1;
  }
  int fd = mkstemp(raw);
  FILE *f = fd >= 0 ? fdopen(fd, "wb") : NULL;
  if (!f || fwrite(payloads, 1, total, f) != total) {
    if (f)
      fclose(f);
    return -1;
  }
  fclose(f);
  snprintf(cmd, sizeof cmd, "cd '%s' && node bench_duckdb.mjs '%s' %zu %s '%s.parquet'", interop,
           raw, entry, codec, raw);
  FILE *pipe = popen(cmd, "r");
  char line[512] = "";
  if (pipe) {
    if (!fgets(line, sizeof line, pipe))
      line[0] = 0;
    pclose(pipe);
  }
  remove(raw);
  const char *pw = strstr(line, "\"write_seconds\":"), *pr = strstr(line, "\"read_seconds\":");
  if (!pw || !pr)
    return -1;
  *write_s = atof(pw + 16);
  *read_s = atof(pr + 15);
  return 0;
}
