/* Sequenced puts per second, 1 and 8 concurrent clients (each its own
 * handle), on sqlite: always and on etcd:// when TARN_TEST_ETCD is set.
 * Baselines in the same run: for sqlite:, raw SQLite INSERT transactions
 * (WAL, synchronous=FULL) on the same disk; for etcd://, raw /v3/kv/put
 * requests through libcurl to the same server.
 * Goals (issue 36, item 4) on sqlite: 1 client >= 0.9x the raw INSERT, 8
 * clients >= 0.7x. An fsync on a shared disk varies several-fold from one
 * second to the next, so the sqlite sides run in ROUNDS alternating rounds
 * (raw, 1 client, 8 clients) and each goal is checked on the median of the
 * rounds' ratios (--rounds N: N rounds). */
#include <curl/curl.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"
#include "tarn/meta.h"

int bench_meta(void);

typedef struct worker {
  const char *uri;
  const char *part;
  int n;
  int rc;
} worker;

static void *seq_worker(void *p) {
  worker *w = p;
  tarn_meta *m;
  w->rc = tarn_meta_open(w->uri, &m);
  if (w->rc)
    return NULL;
  for (int i = 0; i < w->n && !w->rc; i++) {
    tarn_meta_rec r;
    w->rc =
        tarn_meta_sequenced_put(m, w->part, "00000000000000000007", 1, 100, "0123456789", 10, &r);
    tarn_meta_rec_free(&r);
  }
  tarn_meta_close(m);
  return NULL;
}

/* Seconds for clients * n sequenced puts. */
static double run_seq(const char *uri, const char *part, int clients, int n) {
  pthread_t th[8];
  worker w[8];
  double t0 = bench_now();
  for (int i = 0; i < clients; i++) {
    w[i] = (worker){uri, part, n, 0};
    pthread_create(&th[i], NULL, seq_worker, &w[i]);
  }
  for (int i = 0; i < clients; i++)
    pthread_join(th[i], NULL);
  double t = bench_now() - t0;
  for (int i = 0; i < clients; i++)
    if (w[i].rc) {
      fprintf(stderr, "bench meta %s: %s\n", uri, tarn_errmsg());
      return -1;
    }
  return t;
}

static double raw_sqlite(const char *path, int n) {
  sqlite3 *db;
  if (sqlite3_open(path, &db) != SQLITE_OK)
    return -1;
  sqlite3_exec(db,
               "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL;"
               "CREATE TABLE t(k BLOB PRIMARY KEY, v BLOB) WITHOUT ROWID",
               NULL, NULL, NULL);
  sqlite3_stmt *st;
  sqlite3_prepare_v2(db, "INSERT INTO t VALUES(?1, ?2)", -1, &st, NULL);
  double t0 = bench_now();
  for (int i = 0; i < n; i++) {
    char k[32];
    snprintf(k, sizeof k, "%020d", i);
    sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL);
    sqlite3_bind_blob(st, 1, k, 20, SQLITE_STATIC);
    sqlite3_bind_blob(st, 2, "0123456789", 10, SQLITE_STATIC);
    sqlite3_step(st);
    sqlite3_reset(st);
    sqlite3_exec(db, "COMMIT", NULL, NULL, NULL);
  }
  double t = bench_now() - t0;
  sqlite3_finalize(st);
  sqlite3_close(db);
  return t;
}

static size_t discard(char *p, size_t sz, size_t n, void *arg) {
  (void)p, (void)arg;
  return sz * n;
}

static double raw_etcd(const char *ep, int n) {
  CURL *c = curl_easy_init();
  if (!c)
    return -1;
  char url[256];
  snprintf(url, sizeof url, "http://%s/v3/kv/put", ep);
  curl_easy_setopt(c, CURLOPT_URL, url);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, discard);
  curl_easy_setopt(c, CURLOPT_POSTFIELDS, "{\"key\":\"YmVuY2g=\",\"value\":\"MDEyMzQ1Njc4OQ==\"}");
  double t0 = bench_now();
  for (int i = 0; i < n; i++)
    if (curl_easy_perform(c) != CURLE_OK) {
      curl_easy_cleanup(c);
      return -1;
    }
  double t = bench_now() - t0;
  curl_easy_cleanup(c);
  return t;
}

static void report(const char *backend, int clients, int n, double t, const char *base,
                   double base_rate) {
  char what[96];
  snprintf(what, sizeof what, "meta %s sequenced put, %d client%s", backend, clients,
           clients > 1 ? "s" : "");
  if (t > 0)
    bench_report_ops(what, (double)clients * n, t, base, base_rate);
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return v[n / 2];
}

static void remove_db(const char *db) {
  char p[300];
  unlink(db);
  snprintf(p, sizeof p, "%s-wal", db), unlink(p);
  snprintf(p, sizeof p, "%s-shm", db), unlink(p);
}

/* The sqlite sides, alternating; returns 0 or 1. */
static int bench_sqlite(const char *dir) {
  enum { N = 200, MAX_ROUNDS = 15 };
  int rounds = bench_rounds > 0 ? (bench_rounds < MAX_ROUNDS ? bench_rounds : MAX_ROUNDS) : 5;
  double r1[MAX_ROUNDS], r8[MAX_ROUNDS], tb[MAX_ROUNDS], t1[MAX_ROUNDS], t8[MAX_ROUNDS];
  char uri[320], raw[256], db[256];
  snprintf(raw, sizeof raw, "%s/raw.db", dir);
  snprintf(db, sizeof db, "%s/meta.db", dir);
  snprintf(uri, sizeof uri, "sqlite:%s", db);
  for (int k = 0; k < rounds; k++) {
    tb[k] = raw_sqlite(raw, N);
    t1[k] = run_seq(uri, "1", 1, N);
    t8[k] = run_seq(uri, "8", 8, N / 4);
    remove_db(raw), remove_db(db);
    if (tb[k] <= 0 || t1[k] < 0 || t8[k] < 0)
      return 1;
    r1[k] = tb[k] / t1[k], r8[k] = tb[k] / t8[k]; /* both N puts */
  }
  double mb = median(tb, rounds);
  report("sqlite", 1, N, median(t1, rounds), "sqlite INSERT", N / mb);
  report("sqlite", 8, N / 4, median(t8, rounds), "sqlite INSERT", N / mb);
  double m1 = median(r1, rounds), m8 = median(r8, rounds);
  printf("goal: sqlite sequenced put, 1 client >= 0.9x INSERT: median of %d rounds %.3f  %s\n",
         rounds, m1, m1 >= 0.9 ? "goal met" : "GOAL NOT MET");
  printf("goal: sqlite sequenced put, 8 clients >= 0.7x INSERT: median of %d rounds %.3f  %s\n",
         rounds, m8, m8 >= 0.7 ? "goal met" : "GOAL NOT MET");
  return 0;
}

int bench_meta(void) {
  char dir[] = "/tmp/tarn-bench-meta-XXXXXX";
  if (!mkdtemp(dir))
    return 1;
  char uri[256];
  enum { N = 200 };
  int rc = bench_sqlite(dir);
  rmdir(dir);

  const char *ep = getenv("TARN_TEST_ETCD");
  if (ep && *ep) {
    char part[32];
    snprintf(part, sizeof part, "b%d", (int)getpid());
    snprintf(uri, sizeof uri, "etcd://%s", ep);
    double eb = raw_etcd(ep, N);
    double e1 = run_seq(uri, part, 1, N);
    snprintf(part, sizeof part, "c%d", (int)getpid());
    double e8 = run_seq(uri, part, 8, N / 4);
    if (eb <= 0 || e1 < 0 || e8 < 0)
      rc = 1;
    report("etcd", 1, N, e1, "etcd raw put", N / eb);
    report("etcd", 8, N / 4, e8, "etcd raw put", N / eb);
  } else {
    printf("meta etcd: TARN_TEST_ETCD not set, skipped\n");
  }
  return rc;
}
