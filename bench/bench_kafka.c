/* The Kafka listener against the library and the CLI (issue 13 §4), on a fresh
 * embedded deployment (sqlite: + file:// in a temporary directory) and a
 * `tarn serve --kafka-listen` on it:
 *   - produce: librdkafka's rdkafka_performance sends 1 KiB messages with
 *     acks=all (-a -1) to a one-partition topic through the listener; the same
 *     batches (read back as stored) are appended by the writer directly to a
 *     second topic's log with the same batch window, timed until every entry
 *     is acknowledged (the goal's pair: the tool at linger.ms=5, librdkafka's
 *     default, not its own 1000 ms, which makes its last partial batch wait
 *     up to 1 s on the client; the writer not flushed, since no Kafka client
 *     can end the node's window); the tool's own linger against the writer
 *     with tarn_writer_flush() after the last append is an extra pair;
 *   - consume: rdkafka_performance -C from the beginning of the first topic
 *     through the listener, against `tarn read` of the same log as an operator
 *     runs it (the command, --format raw --length-delimited: the stored
 *     batches, the bytes Fetch carries, to a pipe drained and thrown away);
 *     the library reader in this process (the offsets Fetch gives,
 *     TARN_READER_KAFKA_TOPICS) is printed as an extra figure;
 *   - latency: produce p99 from rdkafka_performance -l (per-message
 *     delivery latency) at 1,000 msg/s, and the writer alone fed the same
 *     batches at the same pace.
 * Each side and its baseline alternate, A B A B ..., for --rounds pairs
 * (default 5), so a ratio compares runs made seconds apart on a shared
 * machine: each figure is the median of the pairs' ratios, with min and max.
 * Goals: produce >= 0.8x the direct writer's MB/s, consume >= 0.8x `tarn
 * read`'s, produce p99 <= batch window + 50 ms. MB/s count message values
 * (1 KiB each) on both sides, so a ratio is the ratio of the times.
 *
 * rdkafka_performance comes from librdkafka-dev's examples, built by CMake
 * into build/.../rdkafka/ (or TARN_RDKAFKA_PERFORMANCE); the tarn command is
 * the one next to tarn-bench's directory (or TARN_BENCH_TARN). Compaction is
 * off in the node, so that both sides measure the data path alone.
 * TARN_BENCH_KAFKA_MESSAGES sets the message count (default 100,000). */
#include <arpa/inet.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"
#include "tarn/buf.h"
#include "tarn/catalog.h"
#include "tarn/deployment.h"
#include "tarn/error.h"
#include "tarn/kafka_topics.h"
#include "tarn/reader.h"
#include "tarn/writer.h"

int bench_kafka(void);

#define MSG_SIZE 1024
#define BATCH_MS 250 /* the writer's default window, which the listener's topics take */

static char dir[256];

/* The directory holding tarn-bench, or "" */
static void exe_dir(char *out, size_t n) {
  char p[PATH_MAX];
  ssize_t len = readlink("/proc/self/exe", p, sizeof p - 1);
  out[0] = 0;
  if (len <= 0)
    return;
  p[len] = 0;
  char *s = strrchr(p, '/');
  if (s)
    *s = 0;
  snprintf(out, n, "%s", p);
}

static int find_tool(const char *env, const char *rel, char *out, size_t n) {
  const char *e = getenv(env);
  if (e && *e) {
    snprintf(out, n, "%s", e);
  } else {
    char d[PATH_MAX];
    exe_dir(d, sizeof d);
    int k = snprintf(out, n, "%s/%s", d, rel);
    if (k < 0 || (size_t)k >= n)
      return -1; /* a path too long for out is no path to the tool */
  }
  return access(out, X_OK);
}

static int free_port(void) {
  int s = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t l = sizeof a;
  int port = -1;
  if (s >= 0 && bind(s, (struct sockaddr *)&a, sizeof a) == 0 &&
      getsockname(s, (struct sockaddr *)&a, &l) == 0)
    port = ntohs(a.sin_port);
  if (s >= 0)
    close(s);
  return port;
}

static int connectable(int port) {
  int s = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET,
                          .sin_port = htons((uint16_t)port),
                          .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  int ok = s >= 0 && connect(s, (struct sockaddr *)&a, sizeof a) == 0;
  if (s >= 0)
    close(s);
  return ok;
}

/* tarn serve with the Kafka listener on port; its output goes to DIR/serve.log. */
static pid_t start_node(const char *tarn, int port) {
  char kl[64], log[400];
  snprintf(kl, sizeof kl, "127.0.0.1:%d", port);
  snprintf(log, sizeof log, "%s/serve.log", dir);
  pid_t pid = fork();
  if (pid == 0) {
    int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) {
      dup2(fd, 1);
      dup2(fd, 2);
    }
    execl(tarn, tarn, "serve", "--listen", "127.0.0.1:0", "--kafka-listen", kl, "--no-compact",
          (char *)NULL);
    _exit(127);
  }
  for (int i = 0; pid > 0 && i < 200; i++) {
    if (connectable(port))
      return pid;
    int st;
    if (waitpid(pid, &st, WNOHANG) == pid)
      break;
    usleep(50000);
  }
  fprintf(stderr, "bench kafka: tarn serve did not listen on %d (see %s)\n", port, log);
  if (pid > 0)
    kill(pid, SIGKILL), waitpid(pid, NULL, 0);
  return -1;
}

static void stop_node(pid_t pid) {
  if (pid <= 0)
    return;
  kill(pid, SIGTERM);
  waitpid(pid, NULL, 0);
}

/* Runs cmd and finds in its output the summary line with `key`; the numbers
 * of that line go to v (up to nv). */
static int run_summary(const char *cmd, const char *key, double *v, int nv) {
  FILE *p = popen(cmd, "r");
  if (!p)
    return -1;
  char line[2048], found[2048] = "";
  while (fgets(line, sizeof line, p))
    if (strstr(line, key))
      snprintf(found, sizeof found, "%s", line);
  int st = pclose(p);
  if (!found[0] || st != 0) {
    fprintf(stderr, "bench kafka: `%s` gave no \"%s\" line (exit %d)\n", cmd, key, st);
    return -1;
  }
  int k = 0;
  for (char *s = found; *s && k < nv;) {
    if ((*s >= '0' && *s <= '9') || (*s == '-' && s[1] >= '0' && s[1] <= '9')) {
      v[k++] = strtod(s, &s);
    } else {
      s++;
    }
  }
  return k == nv ? 0 : -1;
}

static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* p50 and p99 of the per-message latencies (µs, one a line) rdkafka_performance -A wrote. */
static int latency_file(const char *path, double *p50, double *p99, size_t *n) {
  FILE *f = fopen(path, "r");
  if (!f)
    return -1;
  size_t cap = 4096, k = 0;
  double *v = malloc(cap * sizeof *v);
  double x;
  while (v && fscanf(f, "%lf", &x) == 1) {
    if (k == cap) {
      double *nv = realloc(v, (cap *= 2) * sizeof *v);
      if (!nv)
        break;
      v = nv;
    }
    v[k++] = x;
  }
  fclose(f);
  if (!v || k == 0) {
    free(v);
    return -1;
  }
  qsort(v, k, sizeof *v, cmp_d);
  *p50 = v[k / 2] / 1e3;
  *p99 = v[k * 99 / 100] / 1e3;
  *n = k;
  free(v);
  return 0;
}

typedef struct acks {
  int done, failed;
} acks;

static void ack_cb(void *arg, int status, uint64_t off, int64_t ts) {
  (void)off, (void)ts;
  acks *a = arg;
  if (status)
    __atomic_add_fetch(&a->failed, 1, __ATOMIC_RELAXED);
  __atomic_add_fetch(&a->done, 1, __ATOMIC_RELEASE);
}

/* The entries of log from offset `from` to its end as stored (the batches
 * the listener appended). */
static int stored_entries(tarn_reader *r, uint64_t log, uint64_t from, tarn_buf *data,
                          size_t **lens, uint32_t **counts, size_t *n) {
  tarn_log_iter *it;
  int rc = tarn_log_iter_open(r, log, from, &it);
  if (rc)
    return rc;
  size_t cap = 0;
  tarn_entry e;
  *n = 0;
  while ((rc = tarn_log_iter_next(it, &e, 0)) == 0) {
    if (*n == cap) {
      cap = cap ? cap * 2 : 1024;
      size_t *nl = realloc(*lens, cap * sizeof **lens);
      uint32_t *nc = nl ? realloc(*counts, cap * sizeof **counts) : NULL;
      if (nl)
        *lens = nl;
      if (!nc) {
        rc = TARN_ENOMEM;
        break;
      }
      *counts = nc;
    }
    if ((rc = tarn_buf_append(data, e.payload, e.payload_len)))
      break;
    (*lens)[*n] = e.payload_len;
    (*counts)[(*n)++] = e.record_count;
  }
  tarn_log_iter_close(it);
  return rc == TARN_EEND ? 0 : rc;
}

/* Seconds for the writer to append the entries to log until every one is
 * acknowledged. flush: tarn_writer_flush() after the last append, which seals
 * the open object at once; without it the last object waits out the batch
 * window, as it does behind the listener (a Kafka client has no way to tell
 * the node that no more data is coming, so acks=all waits for the window's
 * end or a full object). */
static double direct_write(tarn_deployment *d, uint64_t log, const tarn_buf *data,
                           const size_t *lens, const uint32_t *counts, size_t n, int flush) {
  tarn_writer_options o;
  tarn_writer_options_default(&o);
  o.batch_ms = BATCH_MS;
  tarn_writer *w;
  if (tarn_writer_open(tarn_deployment_meta(d), tarn_deployment_wal(d), &o, &w))
    return -1;
  acks a = {0, 0};
  size_t at = 0, queued = 0;
  double t0 = bench_now();
  for (size_t i = 0; i < n; i++) {
    if (tarn_writer_append(w, log, data->data + at, lens[i], counts[i], ack_cb, &a))
      a.failed++;
    else
      queued++;
    at += lens[i];
  }
  if (flush)
    tarn_writer_flush(w);
  while ((size_t)__atomic_load_n(&a.done, __ATOMIC_ACQUIRE) < queued)
    usleep(200); /* the acknowledgements come from the writer's threads */
  double s = bench_now() - t0;
  tarn_writer_close(w);
  if (a.failed) {
    fprintf(stderr, "bench kafka: %d direct appends failed\n", a.failed);
    return -1;
  }
  return s;
}

typedef struct lat_slot {
  double t0, *out;
} lat_slot;

static void lat_cb(void *arg, int status, uint64_t off, int64_t ts) {
  (void)off, (void)ts;
  lat_slot *l = arg;
  *l->out = status ? 1e9 : bench_now() - l->t0;
}

/* The writer's latency for the same entries at the same pace: entry i is
 * appended at i * gap seconds; p50/p99 in ms. */
static int direct_latency(tarn_deployment *d, uint64_t log, const tarn_buf *data,
                          const size_t *lens, const uint32_t *counts, size_t n, double gap,
                          double *p50, double *p99) {
  tarn_writer_options o;
  tarn_writer_options_default(&o);
  o.batch_ms = BATCH_MS;
  tarn_writer *w;
  if (n == 0 || tarn_writer_open(tarn_deployment_meta(d), tarn_deployment_wal(d), &o, &w))
    return -1;
  lat_slot *ls = calloc(n, sizeof *ls);
  double *out = calloc(n, sizeof *out);
  int rc = ls && out ? 0 : -1;
  size_t at = 0;
  double start = bench_now();
  for (size_t i = 0; rc == 0 && i < n; i++) {
    double due = start + gap * (double)i, now = bench_now();
    if (due > now)
      usleep((useconds_t)((due - now) * 1e6));
    ls[i] = (lat_slot){bench_now(), &out[i]};
    if (tarn_writer_append(w, log, data->data + at, lens[i], counts[i], lat_cb, &ls[i]))
      rc = -1;
    at += lens[i];
  }
  tarn_writer_close(w);
  if (rc == 0) {
    qsort(out, n, sizeof *out, cmp_d);
    *p50 = out[n / 2] * 1e3;
    *p99 = out[n * 99 / 100] * 1e3;
  }
  free(ls);
  free(out);
  return rc;
}

/* Seconds for the library reader in this process to read the first n
 * entries of log, with the offsets the listener's Fetch assigns; *records
 * gets their record count. */
static double direct_read(tarn_deployment *d, uint64_t log, size_t n, uint64_t *records) {
  tarn_reader_options o;
  tarn_reader_options_default(&o);
  o.kafka_offsets = TARN_READER_KAFKA_TOPICS;
  tarn_reader *r;
  if (tarn_reader_open(tarn_deployment_meta(d), tarn_deployment_wal(d),
                       tarn_deployment_compacted(d), &o, &r))
    return -1;
  tarn_log_iter *it;
  double s = -1;
  *records = 0;
  double t0 = bench_now();
  if (tarn_log_iter_open(r, log, 0, &it) == 0) {
    tarn_entry e;
    int rc = 0;
    for (size_t i = 0; i < n && (rc = tarn_log_iter_next(it, &e, 0)) == 0; i++) {
      bench_sink(e.payload, e.payload_len < 8 ? e.payload_len : 8);
      *records += e.record_count;
    }
    if (rc == 0)
      s = bench_now() - t0;
    tarn_log_iter_close(it);
  }
  tarn_reader_close(r);
  return s;
}

/* Seconds for `tarn read --log L --count n --format raw --length-delimited`
 * as an operator runs it (the process's start and its deployment's opening
 * included), its output to a pipe drained here and thrown away; the bytes
 * must be the entries' payloads, each after its 4-byte length. */
static double cli_read(const char *tarn, uint64_t log, size_t n, size_t payload_bytes) {
  char cmd[PATH_MAX + 200];
  snprintf(cmd, sizeof cmd, "'%s' read --log %llu --count %zu --format raw --length-delimited",
           tarn, (unsigned long long)log, n);
  static char buf[1 << 20];
  size_t got = 0, k;
  double t0 = bench_now();
  FILE *p = popen(cmd, "r");
  if (!p)
    return -1;
  while ((k = fread(buf, 1, sizeof buf, p)) > 0)
    got += k;
  int st = pclose(p);
  double s = bench_now() - t0;
  if (st != 0 || got != payload_bytes + 4 * n) {
    fprintf(stderr, "bench kafka: `%s` gave %zu bytes, not %zu (exit %d)\n", cmd, got,
            payload_bytes + 4 * n, st);
    return -1;
  }
  return s;
}

/* WAL objects in the deployment's WAL root (file://HOME/wal). */
static long wal_objects(const char *home) {
  char cmd[600];
  snprintf(cmd, sizeof cmd, "find '%s/wal' -name '*.wal' | wc -l", home);
  FILE *p = popen(cmd, "r");
  long n = -1;
  if (p && fscanf(p, "%ld", &n) != 1)
    n = -1;
  if (p)
    pclose(p);
  return n;
}

static const char *verdict(int ok) { return ok ? "goal met" : "GOAL NOT MET"; }

static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_d);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* The median of the pairs' ratios (sorts r), with min and max. */
static void ratio_line(const char *what, const char *against, double *r, int n) {
  double med = median(r, n);
  printf("%-44s ratio to %s: median %.3f  min %.3f  max %.3f  (%d pairs)\n", what, against, med,
         r[0], r[n - 1], n);
}

/* One pair's line: this side's MB/s, the baseline's, and their ratio. */
static void pair_line(const char *what, int i, size_t bytes, double s, const char *base,
                      double bs) {
  printf("  %-14s round %d: %8.1f MB/s   %-22s %8.1f MB/s   ratio %.3f\n", what, i + 1,
         (double)bytes / s / 1e6, base, (double)bytes / bs / 1e6, bs / s);
}

#define LAT_MSGS 4000 /* per latency round: 4 s at 1,000 msg/s */

typedef struct series {
  double *a, *b, *c, *d; /* per round: this side, its baseline, extra figures */
} series;

static int series_alloc(series *s, int n) {
  s->a = calloc((size_t)n, sizeof(double));
  s->b = calloc((size_t)n, sizeof(double));
  s->c = calloc((size_t)n, sizeof(double));
  s->d = calloc((size_t)n, sizeof(double));
  return s->a && s->b && s->c && s->d ? 0 : -1;
}

static void series_free(series *s) { free(s->a), free(s->b), free(s->c), free(s->d); }

/* The summary: each side's median MB/s, the medians of the pairs' ratios
 * with min and max, and the goals. */
static void report(const series *pr, const series *co, const series *la, int rounds, size_t bytes) {
  double rp[rounds], rpf[rounds], rc_[rounds], rl[rounds], t[rounds];
  for (int i = 0; i < rounds; i++) {
    rp[i] = pr->b[i] / pr->a[i];
    rpf[i] = pr->d[i] / pr->c[i];
    rc_[i] = co->b[i] / co->a[i];
    rl[i] = co->c[i] / co->a[i];
  }
  /* the medians of each side's times, for the MB/s lines; the ratios are
   * the pairs' own */
  memcpy(t, pr->a, sizeof t);
  double ma = median(t, rounds);
  memcpy(t, pr->b, sizeof t);
  bench_report("kafka produce 1 KiB acks=all linger.ms=5", bytes, ma, "direct writer",
               median(t, rounds));
  ratio_line("", "the direct writer", rp, rounds);
  printf("%-44s goal >= 0.8 (median): %s\n", "", verdict(median(rp, rounds) >= 0.8));
  memcpy(t, pr->c, sizeof t);
  ma = median(t, rounds);
  memcpy(t, pr->d, sizeof t);
  bench_report("  extra: the tool's linger.ms=1000", bytes, ma, "direct + flush",
               median(t, rounds));
  ratio_line("", "the direct writer + flush", rpf, rounds);
  memcpy(t, co->a, sizeof t);
  ma = median(t, rounds);
  memcpy(t, co->b, sizeof t);
  bench_report("kafka consume from beginning (rdkafka_perf)", bytes, ma, "tarn read",
               median(t, rounds));
  ratio_line("", "tarn read", rc_, rounds);
  printf("%-44s goal >= 0.8 (median): %s\n", "", verdict(median(rc_, rounds) >= 0.8));
  memcpy(t, co->c, sizeof t);
  bench_report("  extra: vs the library reader, in-process", bytes, ma, "library reader",
               median(t, rounds));
  ratio_line("", "the library reader", rl, rounds);
  memcpy(t, la->a, sizeof t);
  double p99 = median(t, rounds);
  printf("%-44s p99 median %6.1f ms  min %6.1f  max %6.1f   goal p99 <= %d ms: %s"
         " (%d msgs a round at 1000/s)\n",
         "kafka produce latency, acks=all", p99, t[0], t[rounds - 1], BATCH_MS + 50,
         verdict(p99 <= BATCH_MS + 50), LAT_MSGS);
  memcpy(t, la->b, sizeof t);
  double dp99 = median(t, rounds);
  printf("%-44s p99 median %6.1f ms  min %6.1f  max %6.1f   (the same batches at the same pace)\n",
         "direct writer latency", dp99, t[0], t[rounds - 1]);
}

/* One run's state, shared by its three phases. */
typedef struct bk {
  const char *tarn, *perf, *home;
  long msgs;
  int rounds, port;
  size_t bytes, payload;
  tarn_deployment *d;
  tarn_reader *r;
  tarn_kafka_topic via, direct, latv, latd;
  tarn_buf data;
  size_t *lens, n, nl;
  uint32_t *counts;
  series pr, co, la;
  long objs_listener, objs_direct;
} bk;

/* produce, alternating listener and direct writer, two pairs a round:
 *   - the tool with its own linger.ms=1000 through the listener, then the
 *     writer handed the first round's batches (as stored) and told to
 *     flush after the last (the earlier method, kept as an extra figure:
 *     the tool's last, partial batch waits out its 1 s linger, and flush
 *     seals the writer's last object at once, which no Kafka client can
 *     ask the node for);
 *   - the tool with linger.ms=5 (librdkafka's default) through the
 *     listener, then the same batches by the writer waiting for its
 *     acknowledgements under the same window, as acks=all does (the goal's
 *     figure).
 * The listener's topic grows by 2 msgs a round; the consume rounds read
 * its first msgs. */
static int run_produce(bk *b) {
  char cmd[2 * PATH_MAX + 1024];
  for (int i = 0; i < b->rounds; i++) {
    double pv[8];
    static const char *linger[2] = {"", " -X linger.ms=5"};
    for (int k = 0; k < 2; k++) {
      snprintf(cmd, sizeof cmd,
               "'%s' -P -t bench-listener -p 0 -b 127.0.0.1:%d -s %d -c %ld -a -1%s 2>&1", b->perf,
               b->port, MSG_SIZE, b->msgs, linger[k]);
      /* "% N messages produced (B bytes), D delivered (offset O, F failed) in T ms: R msgs/s and
       * M MB/s" */
      long objs0 = wal_objects(b->home);
      if (run_summary(cmd, "messages produced", pv, 8) || pv[2] != (double)b->msgs || pv[4] != 0)
        return -1;
      double *side = k ? &b->pr.a[i] : &b->pr.c[i], *base = k ? &b->pr.b[i] : &b->pr.d[i];
      *side = pv[5] / 1e3;
      if (i == 0 && k == 0) {
        b->objs_listener = wal_objects(b->home) - objs0;
        if (stored_entries(b->r, b->via.logs[0], 0, &b->data, &b->lens, &b->counts, &b->n))
          return -1;
        b->payload = b->data.len;
      }
      objs0 = wal_objects(b->home);
      if ((*base = direct_write(b->d, b->direct.logs[0], &b->data, b->lens, b->counts, b->n, !k)) <=
          0)
        return -1;
      if (i == 0 && k == 1)
        b->objs_direct = wal_objects(b->home) - objs0;
      pair_line(k ? "produce l=5" : "produce l=1000", i, b->bytes, *side,
                k ? "direct writer" : "direct + flush", *base);
    }
  }
  return 0;
}

/* consume from the beginning: through the listener, then `tarn read` of the
 * same log (the same n entries), then the library reader in this process */
static int run_consume(bk *b) {
  char cmd[2 * PATH_MAX + 1024];
  series *co = &b->co;
  for (int i = 0; i < b->rounds; i++) {
    double cv[5];
    snprintf(cmd, sizeof cmd,
             "'%s' -C -t bench-listener -p 0 -b 127.0.0.1:%d -o beginning -c %ld -e 2>&1", b->perf,
             b->port, b->msgs);
    /* "% N messages (B bytes) consumed in T ms: R msgs/s (M MB/s)" */
    if (run_summary(cmd, "consumed in", cv, 5))
      return -1;
    if (cv[0] != (double)b->msgs) {
      fprintf(stderr, "bench kafka: `%s` consumed %.0f messages, not %ld\n", cmd, cv[0], b->msgs);
      return -1;
    }
    co->a[i] = cv[2] / 1e3;
    if ((co->b[i] = cli_read(b->tarn, b->via.logs[0], b->n, b->payload)) <= 0)
      return -1;
    uint64_t records = 0;
    if ((co->c[i] = direct_read(b->d, b->via.logs[0], b->n, &records)) <= 0 ||
        records != (uint64_t)b->msgs) {
      fprintf(stderr, "bench kafka: the library reader read %llu records, not %ld\n",
              (unsigned long long)records, b->msgs);
      return -1;
    }
    pair_line("consume", i, b->bytes, co->a[i], "tarn read", co->b[i]);
    printf("  %-14s round %d: %8.1f MB/s   (extra: the library reader in-process, ratio %.3f)\n",
           "", i + 1, (double)b->bytes / co->c[i] / 1e6, co->c[i] / co->a[i]);
  }
  return 0;
}

/* latency at a steady rate (a saturating producer measures its own queue):
 * the listener, then the writer alone fed that round's batches at its pace */
static int run_latency(bk *b) {
  char cmd[2 * PATH_MAX + 1024], lat[400];
  snprintf(lat, sizeof lat, "%s/latency.txt", dir);
  size_t nlat = 0;
  for (int i = 0; i < b->rounds; i++) {
    snprintf(cmd, sizeof cmd,
             "'%s' -P -t bench-latency -p 0 -b 127.0.0.1:%d -s %d -c %d -r 1000 -a -1 -X "
             "linger.ms=5 -l -A '%s' 2>&1",
             b->perf, b->port, MSG_SIZE, LAT_MSGS, lat);
    double lv[8], p50, dp50;
    if (run_summary(cmd, "messages produced", lv, 8) || latency_file(lat, &p50, &b->la.a[i], &nlat))
      return -1;
    tarn_buf_reset(&b->data);
    if (stored_entries(b->r, b->latv.logs[0], (uint64_t)i * LAT_MSGS, &b->data, &b->lens,
                       &b->counts, &b->nl) ||
        direct_latency(b->d, b->latd.logs[0], &b->data, b->lens, b->counts, b->nl,
                       lv[5] / 1e3 / (double)(b->nl ? b->nl : 1), &dp50, &b->la.b[i]))
      return -1;
    printf("  %-14s round %d: p50 %6.1f ms  p99 %6.1f ms   direct writer p50 %6.1f ms  p99 %6.1f ms"
           " (%zu batches)\n",
           "latency", i + 1, p50, b->la.a[i], dp50, b->la.b[i], b->nl);
  }
  return 0;
}

static int run(const char *tarn, const char *perf, long msgs, int rounds) {
  char home[400], cmd[2 * PATH_MAX + 1024];
  snprintf(home, sizeof home, "%s/home", dir);
  setenv("TARN_HOME", home, 1);
  snprintf(cmd, sizeof cmd, "'%s' init > /dev/null", tarn);
  if (system(cmd) != 0)
    return -1;
  tarn_deployment_config c = {.home = home};
  tarn_deployment_strings ss;
  tarn_catalog *cat = NULL;
  bk b = {.tarn = tarn, .perf = perf, .home = home, .msgs = msgs, .rounds = rounds};
  b.data = (tarn_buf)TARN_BUF_INIT;
  b.bytes = (size_t)msgs * MSG_SIZE;
  b.objs_listener = b.objs_direct = -1;
  pid_t node = -1;
  int rc = -1;
  if (tarn_deployment_config_resolve(&c, &ss))
    return -1;
  if (series_alloc(&b.pr, rounds) || series_alloc(&b.co, rounds) || series_alloc(&b.la, rounds))
    goto out;
  if (tarn_deployment_open(&c, 0, &b.d) ||
      tarn_catalog_open(tarn_deployment_meta(b.d), NULL, &cat) ||
      tarn_kafka_topic_create(cat, "bench-listener", 1, NULL, 0, &b.via) ||
      tarn_kafka_topic_create(cat, "bench-direct", 1, NULL, 0, &b.direct) ||
      tarn_kafka_topic_create(cat, "bench-latency", 1, NULL, 0, &b.latv) ||
      tarn_kafka_topic_create(cat, "bench-latency-direct", 1, NULL, 0, &b.latd) ||
      tarn_reader_open(tarn_deployment_meta(b.d), tarn_deployment_wal(b.d),
                       tarn_deployment_compacted(b.d), NULL, &b.r)) {
    fprintf(stderr, "bench kafka: %s\n", tarn_errmsg());
    goto out;
  }
  b.port = free_port();
  if (b.port <= 0 || (node = start_node(tarn, b.port)) < 0)
    goto out;
  if (run_produce(&b) || run_consume(&b) || run_latency(&b))
    goto out;
  stop_node(node);
  node = -1;

  printf("%-44s %zu entries (produce batches) of %.1f KiB average, batch window %d ms;\n"
         "%-44s WAL objects a round: %ld through the listener, %ld by the direct writer\n",
         "", b.n, (double)b.bytes / (double)(b.n ? b.n : 1) / 1024, BATCH_MS, "", b.objs_listener,
         b.objs_direct);
  report(&b.pr, &b.co, &b.la, rounds, b.bytes);
  fflush(stdout);
  rc = 0;
out:
  stop_node(node);
  tarn_reader_close(b.r);
  tarn_buf_free(&b.data);
  free(b.lens);
  free(b.counts);
  series_free(&b.pr);
  series_free(&b.co);
  series_free(&b.la);
  tarn_kafka_topic_free(&b.via);
  tarn_kafka_topic_free(&b.direct);
  tarn_kafka_topic_free(&b.latv);
  tarn_kafka_topic_free(&b.latd);
  tarn_catalog_close(cat);
  tarn_deployment_close(b.d);
  tarn_deployment_config_free(&ss);
  return rc;
}

int bench_kafka(void) {
  char tarn[PATH_MAX], perf[PATH_MAX];
  if (find_tool("TARN_BENCH_TARN", "../tarn", tarn, sizeof tarn)) {
    printf("%-44s (skipped: no tarn command at %s)\n", "kafka", tarn);
    return 0;
  }
  if (find_tool("TARN_RDKAFKA_PERFORMANCE", "../rdkafka/rdkafka_performance", perf, sizeof perf)) {
    printf("%-44s (skipped: no rdkafka_performance at %s)\n", "kafka", perf);
    return 0;
  }
  const char *m = getenv("TARN_BENCH_KAFKA_MESSAGES");
  long msgs = m && atol(m) > 0 ? atol(m) : 100000;
  const char *tmp = getenv("TMPDIR");
  snprintf(dir, sizeof dir, "%s/tarn-bench-kafka-XXXXXX", tmp ? tmp : "/tmp");
  if (!mkdtemp(dir))
    return 1;
  int rc = run(tarn, perf, msgs, bench_rounds > 0 ? bench_rounds : 5);
  char cmd[400];
  if (rc)
    fprintf(stderr, "bench kafka: the run's files are kept in %s\n", dir);
  else if (snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir) > 0 && system(cmd) != 0)
    rc = -1;
  return rc ? 1 : 0;
}
