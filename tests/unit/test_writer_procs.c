/* Writers in several processes (and threads) appending to one log, and
 * writers killed with SIGKILL at random moments, on both kinds of deployment:
 *   sqlite-file  sqlite: + file://, 8 processes of one writer each;
 *   etcd-s3      etcd:// + s3:// (radosgw), 4 processes x 4 threads, a writer
 *                per thread, the threads of a process sharing its two handles.
 * Without the servers' environment the etcd-s3 variant skips (fails in CI). */
#include "testutil.h"
#include "tu_deploy.h"
#include "tu_index.h"
#include "tu_log.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tarn/entryindex.h"
#include "tarn/key.h"
#include "tarn/lease.h"
#include "tarn/meta.h"
#include "tarn/objstore.h"
#include "tarn/reader.h"
#include "tarn/writer.h"

#include <sqlite3.h>

static tu_deploy D;
static const char *variant = "sqlite-file";

/* What a child reports through its pipe for every acknowledged entry
 * (16 bytes: one write() to a pipe is atomic, whichever thread makes it). */
typedef struct ackrec {
  uint32_t writer, seq;
  uint64_t offset;
} ackrec;

/* The payload of writer wr's entry sq: names both, of varying length. */
static int make_payload(char *buf, size_t cap, uint32_t wr, uint32_t sq) {
  return snprintf(buf, cap, "w%u-s%u-%.*s", wr, sq, (int)(sq % 23), "xxxxxxxxxxxxxxxxxxxxxxx");
}

typedef struct pending {
  ackrec rec;
  int fd;
} pending;

static void pending_ack(void *arg, int status, uint64_t offset, int64_t ts) {
  (void)ts;
  pending *p = arg;
  if (status != 0)
    return;
  p->rec.offset = offset;
  ssize_t n = write(p->fd, &p->rec, sizeof p->rec);
  (void)n;
}

typedef struct child_writer {
  tarn_meta *m;
  tarn_objstore *wal;
  uint64_t log;
  uint32_t writer, n, batch_ms;
  int fd, rc;
} child_writer;

/* One writer appending n entries (n == 0: until the process is killed). */
static void *child_writer_main(void *p) {
  child_writer *c = p;
  tarn_writer_options o;
  tarn_writer_options_default(&o);
  o.batch_ms = c->batch_ms;
  tarn_writer *w;
  if (tarn_writer_open(c->m, c->wal, &o, &w)) {
    c->rc = 11;
    return NULL;
  }
  uint32_t cap = c->n ? c->n : 100000;
  pending *ps = calloc(cap, sizeof *ps);
  for (uint32_t i = 0; i < cap; i++) {
    char buf[64];
    int len = make_payload(buf, sizeof buf, c->writer, i);
    ps[i].rec.writer = c->writer;
    ps[i].rec.seq = i;
    ps[i].fd = c->fd;
    if (tarn_writer_append(w, c->log, buf, (size_t)len, (i % 3) + 1, pending_ack, &ps[i])) {
      fprintf(stderr, "append: %s\n", tarn_errmsg());
      c->rc = 12;
      return NULL;
    }
    if (!c->n && i % 50 == 49)
      usleep(2000);
  }
  if (tarn_writer_close(w))
    c->rc = 13;
  free(ps);
  return NULL;
}

/* A child process: `threads` writers numbered from first_writer, on handles
 * the threads share. Exits 0 on success. */
static void child_main(uint64_t log, uint32_t first_writer, int threads, uint32_t n, int fd,
                       uint32_t batch_ms) {
  tarn_meta *m;
  tarn_objstore *wal;
  if (tarn_meta_open(D.meta_uri, &m) || tarn_objstore_open(D.wal_uri, &wal)) {
    fprintf(stderr, "open: %s\n", tarn_errmsg());
    _exit(10);
  }
  child_writer cw[8];
  pthread_t t[8];
  for (int i = 0; i < threads; i++) {
    cw[i] = (child_writer){.m = m,
                           .wal = wal,
                           .log = log,
                           .writer = first_writer + (uint32_t)i,
                           .n = n,
                           .batch_ms = batch_ms,
                           .fd = fd};
    if (pthread_create(&t[i], NULL, child_writer_main, &cw[i]))
      _exit(14);
  }
  int rc = 0;
  for (int i = 0; i < threads; i++) {
    pthread_join(t[i], NULL);
    if (cw[i].rc)
      rc = cw[i].rc;
  }
  tarn_objstore_close(wal);
  tarn_meta_close(m);
  _exit(rc ? 1 : 0); /* a TARN_E* code is no exit status */
}

/* Reads the whole log; checks that offsets are disjoint and contiguous, the
 * cumulative sizes consistent, and every entry a whole entry some writer
 * appended, read once; fills seen[writer*stride + seq] with offset + 1.
 * Returns the number of entries read. */
static size_t read_log(uint64_t log, uint64_t *seen, uint32_t writers, uint32_t stride) {
  tarn_meta *m;
  tarn_objstore *wal;
  assert_int_equal(tarn_meta_open(D.meta_uri, &m), 0);
  assert_int_equal(tarn_objstore_open(D.wal_uri, &wal), 0);
  tarn_reader *r;
  assert_int_equal(tarn_reader_open(m, wal, NULL, NULL, &r), 0);
  tarn_log_iter *it;
  assert_int_equal(tarn_log_iter_open(r, log, 0, &it), 0);
  tarn_entry e;
  size_t n = 0;
  uint64_t next = 0, cum = 0;
  int rc;
  while ((rc = tarn_log_iter_next(it, &e, 0)) == 0) {
    assert_int_equal(e.offset, next); /* LS-036: offsets disjoint and contiguous */
    assert_int_equal(e.cumulative_size, cum + e.payload_len);
    next = e.offset + e.record_count;
    cum = e.cumulative_size;
    unsigned wr, sq;
    char got[128], want[64];
    snprintf(got, sizeof got, "%.*s", (int)e.payload_len, (const char *)e.payload);
    assert_int_equal(sscanf(got, "w%u-s%u-", &wr, &sq), 2);
    assert_true(wr < writers && sq < stride);
    /* a whole entry, byte for byte, with its record count */
    int wl = make_payload(want, sizeof want, wr, sq);
    assert_int_equal(e.payload_len, (size_t)wl);
    assert_memory_equal(e.payload, want, (size_t)wl);
    assert_int_equal(e.record_count, (sq % 3) + 1);
    uint64_t *slot = &seen[(size_t)wr * stride + sq];
    assert_int_equal(*slot, 0); /* exactly once */
    *slot = e.offset + 1;
    n++;
  }
  if (rc != TARN_EEND)
    fail_msg("read: %s", tarn_errmsg());
  tarn_log_iter_close(it);
  /* each key's cumulative size minus its entry_size_bytes is the previous key's */
  tarn_meta_recs recs = tu_index_records(m, log);
  uint64_t prev = 0, prev_end = 0;
  for (size_t i = 0; i < recs.n; i++) {
    tarn_key k;
    tarn_entry_index ei;
    assert_int_equal(tarn_key_parse(recs.v[i].key, TARN_KEY_LEN, &k), 0);
    assert_int_equal(tarn_entry_index_decode(recs.v[i].value, recs.v[i].value_len, &ei), 0);
    assert_int_equal(k.cumulative_size - (uint64_t)ei.entry_size_bytes, prev);
    assert_int_equal(k.end_offset - (uint64_t)ei.message_count, prev_end);
    /* LS-037, LS-007: the object a record names exists, relative to the one
     * WAL root every process of the deployment uses */
    uint64_t size;
    assert_int_equal(tarn_objstore_head(wal, ei.location, &size), 0);
    assert_true(size >= (uint64_t)ei.file_size);
    prev = k.cumulative_size;
    prev_end = k.end_offset;
    tarn_entry_index_free(&ei);
  }
  assert_int_equal(prev, cum);
  assert_int_equal(prev_end, next);
  tarn_meta_recs_free(&recs);
  tarn_reader_close(r);
  tarn_objstore_close(wal);
  tarn_meta_close(m);
  return n;
}

static size_t drain_pipe(int fd, ackrec **out) {
  size_t cap = 1024, n = 0;
  ackrec *v = malloc(cap * sizeof *v);
  for (;;) {
    if (n == cap)
      v = realloc(v, (cap *= 2) * sizeof *v);
    ssize_t got = read(fd, &v[n], sizeof *v);
    if (got == 0)
      break;
    if (got < 0 && errno == EINTR)
      continue;
    assert_int_equal(got, sizeof *v);
    n++;
  }
  *out = v;
  return n;
}

static void begin(const char *tag) {
  if (tu_deploy_setup(&D, variant, tag)) {
    print_message("[%s] TARN_TEST_ETCD / TARN_TEST_S3_URI not set: skipped\n", variant);
    skip();
  }
  print_message("[%s] meta %s, wal %s\n", variant, D.meta_uri, D.wal_uri);
}

/* A reader tailing the log while the writers append. */
typedef struct tailer {
  uint64_t log;
  size_t want, got;
  uint64_t end;
  int rc, order_ok;
} tailer;

static void *tail_main(void *p) {
  tailer *t = p;
  tarn_meta *m;
  tarn_objstore *wal;
  tarn_reader *r;
  tarn_log_iter *it;
  if (tarn_meta_open(D.meta_uri, &m) || tarn_objstore_open(D.wal_uri, &wal)) {
    t->rc = -1;
    return NULL;
  }
  t->order_ok = 1;
  if ((t->rc = tarn_reader_open(m, wal, NULL, NULL, &r)) == 0) {
    if ((t->rc = tarn_log_iter_open(r, t->log, 0, &it)) == 0) {
      tarn_entry e;
      while (t->got < t->want && (t->rc = tarn_log_iter_next(it, &e, 20000)) == 0) {
        if (e.offset != t->end)
          t->order_ok = 0;
        t->end = e.offset + e.record_count;
        t->got++;
      }
      tarn_log_iter_close(it);
    }
    tarn_reader_close(r);
  }
  tarn_objstore_close(wal);
  tarn_meta_close(m);
  return NULL;
}

/* Concurrent writers on one log: every acknowledged entry is readable exactly
 * once at its acknowledged offset, offsets are disjoint and contiguous, and
 * cumulative sizes add up (LS-036, LS-039). sqlite-file: 8 processes;
 * etcd-s3: 4 processes x 4 threads. A reader tailing the log meanwhile
 * (waiting on the store's change notification) sees every entry, in order. */
static void concurrent_writers(void **state) {
  (void)state;
  begin("wprocs");
  const int procs = D.remote ? 4 : 8, threads = D.remote ? 4 : 1;
  const uint32_t per = D.remote ? 120 : 400, writers = (uint32_t)(procs * threads);
  const uint64_t log = D.log_base + 1;
  int fds[2];
  assert_int_equal(pipe(fds), 0);
  pid_t pids[8];
  for (int i = 0; i < procs; i++) {
    pids[i] = fork();
    assert_true(pids[i] >= 0);
    if (pids[i] == 0) {
      close(fds[0]);
      child_main(log, (uint32_t)(i * threads), threads, per, fds[1], 10);
    }
  }
  close(fds[1]);
  /* started after the forks: a child must not inherit a thread's locks */
  tailer tl = {.log = log, .want = (size_t)writers * per};
  pthread_t tt;
  assert_int_equal(pthread_create(&tt, NULL, tail_main, &tl), 0);
  ackrec *acks;
  size_t nacks = drain_pipe(fds[0], &acks);
  close(fds[0]);
  pthread_join(tt, NULL);
  if (tl.rc)
    fail_msg("tailing reader: %d after %zu entries: %s", tl.rc, tl.got, tarn_errmsg());
  assert_int_equal(tl.got, tl.want);
  assert_true(tl.order_ok);
  for (int i = 0; i < procs; i++) {
    int st;
    waitpid(pids[i], &st, 0);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 0);
  }
  assert_int_equal(nacks, writers * per); /* no faults: every entry acknowledged */
  uint64_t *seen = calloc((size_t)writers * per, sizeof *seen);
  size_t n = read_log(log, seen, writers, per);
  assert_int_equal(n, writers * per);
  uint64_t end = 0;
  for (size_t i = 0; i < (size_t)writers * per; i++)
    if (seen[i])
      end += (i % per) % 3 + 1;
  assert_int_equal(tl.end, end); /* the tail ended where the log ends */
  for (size_t i = 0; i < nacks; i++)
    assert_int_equal(seen[(size_t)acks[i].writer * per + acks[i].seq], acks[i].offset + 1);
  free(seen);
  free(acks);
  tu_deploy_done(&D);
}

/* Writers killed with SIGKILL at random moments (24 runs): every
 * acknowledged entry is still readable at its offset (LS-039); whatever else
 * is readable is whole entries of published sections, each once, in a
 * contiguous log whose every record names an existing object (LS-037). */
static void killed_writers(void **state) {
  (void)state;
  begin("wcrash");
  enum { RUNS = 24, STRIDE = 100000 };
  const int threads = D.remote ? 2 : 1;
  const uint64_t log = D.log_base + 2;
  uint64_t seed = (uint64_t)time(NULL);
  print_message("[%s] seed %llu\n", variant, (unsigned long long)seed);
  ackrec *all = NULL;
  size_t nall = 0;
  for (uint32_t run = 0; run < RUNS; run++) {
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
      close(fds[0]);
      child_main(log, run * (uint32_t)threads, threads, 0, fds[1], 1 + run % 7);
    }
    close(fds[1]);
    /* etcd-s3 needs longer before its first acknowledgement */
    useconds_t base = D.remote ? 150000 : 20000, spread = D.remote ? 600000 : 180000;
    usleep(base + (useconds_t)(tu_rand(&seed) % spread));
    kill(pid, SIGKILL);
    ackrec *acks;
    size_t n = drain_pipe(fds[0], &acks);
    close(fds[0]);
    int st;
    waitpid(pid, &st, 0);
    all = realloc(all, (nall + n + 1) * sizeof *all);
    memcpy(all + nall, acks, n * sizeof *acks);
    nall += n;
    free(acks);
  }
  uint32_t writers = RUNS * (uint32_t)threads;
  uint64_t *seen = calloc((size_t)writers * STRIDE, sizeof *seen);
  size_t n = read_log(log, seen, writers, STRIDE);
  print_message("[%s] %d killed writers: %zu entries acknowledged, %zu readable\n", variant, RUNS,
                nall, n);
  assert_true(nall > 0);
  assert_true(n >= nall);
  for (size_t i = 0; i < nall; i++)
    assert_int_equal(seen[(size_t)all[i].writer * STRIDE + all[i].seq], all[i].offset + 1);
  free(seen);
  free(all);
  tu_deploy_done(&D);
}

/* LS-048: a writer process stopped (SIGSTOP) for longer than its
 * session timeout loses its session; resumed, it learns so and stops: an
 * append then fails with TARN_ESESSION (TARN_ESESSION, or the put's refusal,
 * for entries in flight), and it publishes no index record once it knows.
 * Meanwhile another client's lease on the log is refused nothing: the dead
 * session's lease record is gone (sqlite: purged by the next write). */
/* Stops the child, but not inside a write transaction of a sqlite: store:
 * stopped there, it would hold the database's write lock, and the test's
 * own writes would wait for a process that waits for the test. A stop that
 * lands in one is undone and tried again a moment later. */
static void stop_outside_write(pid_t pid) {
  const char *path = strncmp(D.meta_uri, "sqlite:", 7) == 0 ? D.meta_uri + 7 : NULL;
  char file[sizeof D.meta_uri] = "";
  if (path) { /* the file name, without the URI's options */
    size_t n = strcspn(path, "?");
    n = n < sizeof file - 1 ? n : sizeof file - 1;
    memcpy(file, path, n);
    file[n] = 0;
  }
  for (int attempt = 0;; attempt++) {
    int st;
    kill(pid, SIGSTOP);
    assert_int_equal(waitpid(pid, &st, WUNTRACED), pid);
    assert_true(WIFSTOPPED(st));
    if (!path)
      return;
    sqlite3 *db;
    int free_lock = 0;
    if (sqlite3_open_v2(file, &db, SQLITE_OPEN_READWRITE, NULL) == SQLITE_OK) {
      sqlite3_busy_timeout(db, 0);
      free_lock = sqlite3_exec(db, "BEGIN IMMEDIATE; ROLLBACK;", NULL, NULL, NULL) == SQLITE_OK;
    }
    sqlite3_close(db);
    if (free_lock)
      return;
    assert_true(attempt < 200);
    kill(pid, SIGCONT);
    usleep(5000);
  }
}

static void stopped_writer_loses_session(void **state) {
  (void)state;
  begin("wsess");
  const uint64_t log = D.log_base + 3;
  int fds[2];
  assert_int_equal(pipe(fds), 0);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    close(fds[0]);
    alarm(40); /* a writer that never learns dies here, and the test fails */
    char uri[700];
    tarn_meta *m;
    tarn_objstore *wal;
    tu_deploy_meta_opt(&D, "session_timeout_ms=1000", uri, sizeof uri);
    if (tarn_meta_open(uri, &m) || tarn_objstore_open(D.wal_uri, &wal))
      _exit(10);
    tarn_writer_options o;
    tarn_writer_options_default(&o);
    o.batch_ms = 2;
    tarn_writer *w;
    if (tarn_writer_open(m, wal, &o, &w))
      _exit(11);
    /* reports each outcome; ends after the first append refused for the session */
    for (uint32_t i = 0; i < 100000; i++) {
      char buf[64];
      int len = make_payload(buf, sizeof buf, 0, i);
      uint64_t off = 0;
      int rc = tarn_writer_append_sync(w, log, buf, (size_t)len, (i % 3) + 1, &off, NULL);
      ackrec a = {(uint32_t)-rc, i, off};
      if (write(fds[1], &a, sizeof a) != sizeof a)
        _exit(14);
      if (rc == TARN_ESESSION)
        break;
      usleep(10000);
    }
    tarn_writer_close(w);
    tarn_objstore_close(wal);
    tarn_meta_close(m);
    _exit(0);
  }
  close(fds[1]);
  ackrec a;
  for (int i = 0; i < 5; i++)
    assert_int_equal(read(fds[0], &a, sizeof a), sizeof a);
  stop_outside_write(pid);
  /* out of its session: the lease record goes (sqlite: at this write) */
  tarn_meta *m;
  assert_int_equal(tarn_meta_open(D.meta_uri, &m), 0);
  usleep(D.remote ? 3500000 : 1500000);
  tarn_lease *l;
  assert_int_equal(tarn_lease_acquire(m, log, &l), 0);
  assert_int_equal(tarn_lease_release(l), 0);
  assert_int_equal(tu_lease_count(m, log), 0);
  size_t before = tu_count_index(m, log);
  kill(pid, SIGCONT);
  ackrec *acks;
  size_t n = drain_pipe(fds[0], &acks);
  close(fds[0]);
  int st;
  waitpid(pid, &st, 0);
  assert_true(WIFEXITED(st));
  assert_int_equal(WEXITSTATUS(st), 0);
  assert_true(n >= 1);
  /* it learned: the last append was refused for the session */
  assert_int_equal(acks[n - 1].writer, (uint32_t)-TARN_ESESSION);
  size_t ok = 0;
  for (size_t i = 0; i < n; i++)
    ok += acks[i].writer == 0;
  size_t after = tu_count_index(m, log);
  print_message("[%s] after resuming: %zu appends acknowledged, %zu refused; records %zu -> %zu\n",
                variant, ok, n - ok, before, after);
  /* every record published after the stop was an acknowledged append's */
  assert_true(after - before <= ok);
  free(acks);
  tarn_meta_close(m);
  tu_deploy_done(&D);
}

/* ctest-variants: sqlite-file etcd-s3 */
int main(int argc, char **argv) {
  if (argc > 1)
    variant = argv[1];
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(concurrent_writers),
      cmocka_unit_test(killed_writers),
      cmocka_unit_test(stopped_writer_loses_session),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
