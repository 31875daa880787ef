/* End-to-end appends and catch-up reads on sqlite: + file:// (the embedded
 * deployment), against the disk: dd conv=fsync of the same bytes in 4 MiB
 * blocks, and cat of the same WAL files, measured in the same run.
 *
 * With TARN_TEST_ETCD and TARN_TEST_S3_URI set, the same on etcd:// + s3://,
 * against tarn's own object store doing the raw S3 work: PUTs of the same
 * bytes in as many objects as the writer wrote (2 in parallel, as the writer's
 * upload threads), and GETs of the same WAL objects. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "tarn/buf.h"
#include "tarn/error.h"
#include "tarn/meta.h"
#include "tarn/objstore.h"
#include "tarn/reader.h"
#include "tarn/writer.h"

int bench_log(void);

static char dir[200];

/* The deployment under test: the embedded one, or etcd + S3. */
static struct {
  int remote;
  char meta[512];
  char wal[512]; /* the prefix of each log's WAL root */
} D;

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
  char uri[700];
  if (tarn_meta_open(D.meta, m)) {
    fprintf(stderr, "bench log: %s\n", tarn_errmsg());
    return -1;
  }
  if (!D.remote) {
    snprintf(uri, sizeof uri, "%s/wal-%llu", dir, (unsigned long long)log);
    mkdir(uri, 0755);
  }
  snprintf(uri, sizeof uri, "%s/wal-%llu", D.wal, (unsigned long long)log);
  if (tarn_objstore_open(uri, wal)) {
    fprintf(stderr, "bench log: %s\n", tarn_errmsg());
    tarn_meta_close(*m);
    return -1;
  }
  return 0;
}

/* ---- raw S3 baselines --------------------------------------------------------------- */

typedef struct s3put {
  tarn_objstore *s;
  const uint8_t *data;
  size_t size, first, n;
  int failed;
} s3put;

static void *s3_put_thread(void *p) {
  s3put *a = p;
  for (size_t i = a->first; i < a->first + a->n; i++) {
    char name[96];
    snprintf(name, sizeof name, "raw/%zu", i);
    if (tarn_objstore_put(a->s, name, a->data, a->size))
      a->failed = 1;
  }
  return NULL;
}

/* Seconds for PUTs of `bytes` in `objects` objects, 2 at a time, into a root
 * of its own next to the log's. */
static double s3_put_seconds(uint64_t log, size_t bytes, uint64_t objects) {
  char uri[700];
  snprintf(uri, sizeof uri, "%s/raw-%llu", D.wal, (unsigned long long)log);
  tarn_objstore *s;
  if (tarn_objstore_open(uri, &s))
    return -1;
  if (objects == 0)
    objects = 1;
  size_t size = bytes / objects;
  uint8_t *data = malloc(size + 1);
  memset(data, 7, size + 1);
  s3put a[2] = {{s, data, size, 0, objects / 2, 0},
                {s, data, size, objects / 2, objects - objects / 2, 0}};
  pthread_t t[2];
  double t0 = bench_now();
  for (int i = 0; i < 2; i++)
    pthread_create(&t[i], NULL, s3_put_thread, &a[i]);
  for (int i = 0; i < 2; i++)
    pthread_join(t[i], NULL);
  double secs = bench_now() - t0;
  free(data);
  tarn_objstore_close(s);
  return a[0].failed || a[1].failed ? -1 : secs;
}

/* Seconds for GETs of every object of a WAL root, one after the other. */
static double s3_get_seconds(tarn_objstore *wal) {
  tarn_objstore_listing l = {0};
  double t0 = bench_now();
  if (tarn_objstore_list(wal, "", NULL, 100000, &l))
    return -1;
  double secs = 0;
  for (size_t i = 0; i < l.n; i++) {
    tarn_buf b = TARN_BUF_INIT;
    if (tarn_objstore_get(wal, l.names[i], &b)) {
      secs = -1;
      tarn_buf_free(&b);
      break;
    }
    bench_sink(b.data, b.len < 8 ? b.len : 8);
    tarn_buf_free(&b);
  }
  if (secs == 0)
    secs = bench_now() - t0;
  tarn_objstore_listing_free(&l);
  return secs;
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
  tarn_writer_stats st;
  tarn_writer_stats_get(w, &st);
  tarn_writer_close(w);
  size_t total = per * (size_t)threads * size;
  double base = D.remote ? s3_put_seconds(log, total, st.objects_written) : dd_seconds(total);
  char what[96];
  snprintf(what, sizeof what, "%sappend %zu B records, %d producer%s", D.remote ? "etcd+s3 " : "",
           size, threads, threads > 1 ? "s" : "");
  bench_report(what, total, secs, D.remote ? "S3 PUTs, same objects" : "dd conv=fsync", base);
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
  printf("%-44s p50 %7.1f ms   p99 %7.1f ms   batch window %u ms\n",
         D.remote ? "etcd+s3 append latency, 1 KiB" : "append latency, 1 KiB", out[N / 2] * 1e3,
         out[N * 99 / 100] * 1e3, batch_ms);
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
  if (!D.remote)
    shell_seconds(cmd); /* warm the page cache for both */
  double best = 1e9;
  size_t bytes = 0;
  for (int rep = 0; rep < 3; rep++) {
    tarn_log_iter *it;
    tarn_log_iter_open(r, log, 0, &it);
    tarn_entry e;
    bytes = 0;
    double t0 = bench_now();
    while (tarn_log_iter_next(it, &e, 0) == 0) {
      bench_sink(e.payload, e.payload_len < 8 ? e.payload_len : 8);
      bytes += e.payload_len;
    }
    double s = bench_now() - t0;
    best = s < best ? s : best;
    tarn_log_iter_close(it);
  }
  double cat = 1e9;
  for (int rep = 0; rep < 3; rep++) {
    double s = D.remote ? s3_get_seconds(wal) : shell_seconds(cmd);
    cat = s < cat ? s : cat;
  }
  bench_report(D.remote ? "etcd+s3 catch-up read, 64 KiB entries" : "catch-up read, 64 KiB entries",
               bytes, best, D.remote ? "S3 GETs, WAL objects" : "cat WAL files", cat);
  tarn_reader_close(r);
  tarn_objstore_close(wal);
  tarn_meta_close(m);
  return bytes == expect ? 0 : -1;
}

/* Deletes every object under the run's S3 prefix (the test server keeps
 * its objects in memory). */
static void s3_cleanup(void) {
  tarn_objstore *s;
  if (tarn_objstore_open(D.wal, &s))
    return;
  tarn_objstore_listing l = {0};
  while (tarn_objstore_list(s, "", NULL, 1000, &l) == 0 && l.n > 0) {
    for (size_t i = 0; i < l.n; i++)
      tarn_objstore_delete(s, l.names[i]);
    tarn_objstore_listing_free(&l);
  }
  tarn_objstore_listing_free(&l);
  tarn_objstore_close(s);
}

/* The same runs, smaller, on etcd + S3; log IDs and the S3 prefix per run,
 * since the servers keep what earlier runs wrote. */
static int remote_runs(const char *etcd, const char *s3) {
  D.remote = 1;
  uint64_t run = (uint64_t)time(NULL) % 100000000u * 1000u + (uint64_t)getpid() % 1000u;
  snprintf(D.meta, sizeof D.meta, "etcd://%s?prefix=tarn-bench/log-%llu", etcd,
           (unsigned long long)run);
  snprintf(D.wal, sizeof D.wal, "%s/bench-log-%llu", s3, (unsigned long long)run);
  uint64_t log = 3000000000000ull + run * 100u;
  int rc = 0;
  rc |= append_run(log + 1, 1024, 1, 4u << 20);
  rc |= append_run(log + 2, 1024, 8, 4u << 20);
  rc |= append_run(log + 3, 65536, 8, 16u << 20);
  rc |= read_run(log + 3, (16u << 20) / 65536 / 8 * 8 * 65536);
  rc |= latency_run(log + 4, 50);
  s3_cleanup();
  return rc;
}

int bench_log(void) {
  const char *tmp = getenv("TMPDIR");
  snprintf(dir, sizeof dir, "%s/tarn-bench-log-XXXXXX", tmp ? tmp : "/tmp");
  if (!mkdtemp(dir))
    return 1;
  D.remote = 0;
  snprintf(D.meta, sizeof D.meta, "sqlite:%s/meta.db", dir);
  snprintf(D.wal, sizeof D.wal, "file://%s", dir);
  int rc = 0;
  const size_t sizes[3] = {100, 1024, 65536};
  /* enough records that the lease, the first object and the final flush
   * do not decide the figure */
  const size_t bytes[3] = {64u << 20, 64u << 20, 64u << 20};
  uint64_t log = 1;
  for (int s = 0; s < 3; s++)
    for (int th = 1; th <= 8; th += 7)
      rc |= append_run(log++, sizes[s], th, bytes[s]);
  /* log 6 holds the 64 KiB records of 8 producers: 64 MiB, all in WAL files */
  rc |= read_run(6, (64u << 20) / 65536 / 8 * 8 * 65536);
  rc |= latency_run(100, 50);
  rc |= latency_run(101, 250);
  const char *etcd = getenv("TARN_TEST_ETCD"), *s3 = getenv("TARN_TEST_S3_URI");
  if (etcd && *etcd && s3 && *s3)
    rc |= remote_runs(etcd, s3);
  char cmd[512];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  if (system(cmd) != 0)
    rc = 1;
  return rc ? 1 : 0;
}
