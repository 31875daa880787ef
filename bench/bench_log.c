/* End-to-end appends and catch-up reads on sqlite: + file:// (the embedded
 * deployment), against the disk: dd conv=fsync of the same bytes in 4 MiB
 * blocks, and cat of the same WAL files, measured in the same run. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bench.h"
#include "tarn/meta.h"
#include "tarn/objstore.h"
#include "tarn/reader.h"
#include "tarn/writer.h"

int bench_log(void);

static char dir[200];

/* Seconds for `cmd` run by the shell. */
static double shell_seconds(const char *cmd) {
  double t = bench_now();
  if (system(cmd) != 0)
    return -1;
  return bench_now() - t;
}

/* dd conv=fsync of bytes in 4 MiB blocks */
static double dd_seconds(size_t bytes) {
  char cmd[1200];
  size_t blocks = (bytes + (4u << 20) - 1) / (4u << 20);
  snprintf(cmd, sizeof cmd,
           "dd if=/dev/zero of=%s/dd.bin bs=4M count=%zu conv=fsync status=none && rm -f %s/dd.bin",
           dir, blocks, dir);
  return shell_seconds(cmd);
}

typedef struct prod {
  tarn_writer *w;
  uint64_t log;
  size_t size, n;
  const uint8_t *payload;
} prod;

static void count_cb(void *arg, int status, uint64_t off, int64_t ts) {
  (void)off, (void)ts;
  if (status)
    __atomic_add_fetch((int *)arg, 1, __ATOMIC_RELAXED);
}

static int failures;

static void *produce(void *p) {
  prod *a = p;
  for (size_t i = 0; i < a->n; i++)
    if (tarn_writer_append(a->w, a->log, a->payload, a->size, 1, count_cb, &failures))
      __atomic_add_fetch(&failures, 1, __ATOMIC_RELAXED);
  return NULL;
}

/* Each log gets a WAL root of its own, so that cat reads exactly its files. */
static int open_stores(uint64_t log, tarn_meta **m, tarn_objstore **wal) {
  char uri[512];
  snprintf(uri, sizeof uri, "sqlite:%s/meta.db", dir);
  if (tarn_meta_open(uri, m))
    return -1;
  snprintf(uri, sizeof uri, "%s/wal-%llu", dir, (unsigned long long)log);
  mkdir(uri, 0755);
  snprintf(uri, sizeof uri, "file://%s/wal-%llu", dir, (unsigned long long)log);
  return tarn_objstore_open(uri, wal);
}

/* Appends `bytes` of `size`-byte records from `threads` producers to log. */
static int append_run(uint64_t log, size_t size, int threads, size_t bytes) {
  tarn_meta *m;
  tarn_objstore *wal;
  if (open_stores(log, &m, &wal))
    return -1;
  tarn_writer *w;
  if (tarn_writer_open(m, wal, NULL, &w))
    return -1;
  uint8_t *payload = malloc(size);
  for (size_t i = 0; i < size; i++)
    payload[i] = (uint8_t)(i * 31 + 1);
  size_t per = bytes / size / (size_t)threads;
  prod ps[8];
  pthread_t t[8];
  failures = 0;
  double t0 = bench_now();
  for (int i = 0; i < threads; i++) {
    ps[i] = (prod){w, log, size, per, payload};
    pthread_create(&t[i], NULL, produce, &ps[i]);
  }
  for (int i = 0; i < threads; i++)
    pthread_join(t[i], NULL);
  tarn_writer_flush(w);
  double secs = bench_now() - t0;
  tarn_writer_close(w);
  size_t total = per * (size_t)threads * size;
  double dd = dd_seconds(total);
  char what[96];
  snprintf(what, sizeof what, "append %zu B records, %d producer%s", size, threads,
           threads > 1 ? "s" : "");
  bench_report(what, total, secs, "dd conv=fsync", dd);
  printf("%-44s %10.0f records/s%s\n", "", (double)(per * (size_t)threads) / secs,
         failures ? "   (SOME FAILED)" : "");
  free(payload);
  tarn_objstore_close(wal);
  tarn_meta_close(m);
  return failures ? -1 : 0;
}

/* ---- latency ---------------------------------------------------------------------- */

typedef struct lat {
  double t0;
  double *out;
} lat;

static void lat_cb(void *arg, int status, uint64_t off, int64_t ts) {
  (void)status, (void)off, (void)ts;
  lat *l = arg;
  *l->out = bench_now() - l->t0;
}

static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static int latency_run(uint64_t log, uint32_t batch_ms) {
  tarn_meta *m;
  tarn_objstore *wal;
  if (open_stores(log, &m, &wal))
    return -1;
  tarn_writer_options o;
  tarn_writer_options_default(&o);
  o.batch_ms = batch_ms;
  tarn_writer *w;
  if (tarn_writer_open(m, wal, &o, &w))
    return -1;
  enum { N = 400 };
  static lat ls[N];
  static double out[N];
  uint8_t p[1024] = {1};
  /* 1 KiB records spread over ~4 batch windows */
  useconds_t gap = (useconds_t)(batch_ms * 4000u / N);
  for (int i = 0; i < N; i++) {
    ls[i].out = &out[i];
    ls[i].t0 = bench_now();
    tarn_writer_append(w, log, p, sizeof p, 1, lat_cb, &ls[i]);
    usleep(gap);
  }
  tarn_writer_close(w);
  qsort(out, N, sizeof *out, cmp_d);
  printf("%-44s p50 %7.1f ms   p99 %7.1f ms   batch window %u ms\n", "append latency, 1 KiB",
         out[N / 2] * 1e3, out[N * 99 / 100] * 1e3, batch_ms);
  tarn_objstore_close(wal);
  tarn_meta_close(m);
  return 0;
}

/* ---- catch-up read ------------------------------------------------------------------ */

static int read_run(uint64_t log, size_t expect) {
  tarn_meta *m;
  tarn_objstore *wal;
  if (open_stores(log, &m, &wal))
    return -1;
  tarn_reader *r;
  if (tarn_reader_open(m, wal, NULL, NULL, &r))
    return -1;
  char cmd[1200];
  snprintf(cmd, sizeof cmd, "find %s/wal-%llu -name '*.wal' -exec cat {} + > /dev/null", dir,
           (unsigned long long)log);
  shell_seconds(cmd); /* warm the page cache for both */
  double best = 1e9;
  size_t bytes = 0;
  for (int rep = 0; rep < 3; rep++) {
    tarn_log_iter *it;
    tarn_reader_iter(r, log, 0, &it);
    tarn_entry e;
    bytes = 0;
    double t0 = bench_now();
    while (tarn_reader_next(it, &e, 0) == 0) {
      bench_sink(e.payload, e.payload_len < 8 ? e.payload_len : 8);
      bytes += e.payload_len;
    }
    double s = bench_now() - t0;
    best = s < best ? s : best;
    tarn_reader_iter_free(it);
  }
  double cat = 1e9;
  for (int rep = 0; rep < 3; rep++) {
    double s = shell_seconds(cmd);
    cat = s < cat ? s : cat;
  }
  bench_report("catch-up read, 64 KiB entries", bytes, best, "cat WAL files", cat);
  tarn_reader_close(r);
  tarn_objstore_close(wal);
  tarn_meta_close(m);
  return bytes == expect ? 0 : -1;
}

int bench_log(void) {
  const char *tmp = getenv("TMPDIR");
  snprintf(dir, sizeof dir, "%s/tarn-bench-log-XXXXXX", tmp ? tmp : "/tmp");
  if (!mkdtemp(dir))
    return 1;
  int rc = 0;
  const size_t sizes[3] = {100, 1024, 65536};
  const size_t bytes[3] = {8u << 20, 32u << 20, 64u << 20};
  uint64_t log = 1;
  for (int s = 0; s < 3; s++)
    for (int th = 1; th <= 8; th += 7)
      rc |= append_run(log++, sizes[s], th, bytes[s]);
  /* log 6 holds the 64 KiB records of 8 producers: 64 MiB, all in WAL files */
  rc |= read_run(6, (64u << 20) / 65536 / 8 * 8 * 65536);
  rc |= latency_run(100, 50);
  rc |= latency_run(101, 250);
  char cmd[512];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  if (system(cmd) != 0)
    rc = 1;
  return rc ? 1 : 0;
}
