/* Several writer processes on one sqlite: + file:// deployment, and writers
 * killed with SIGKILL at random moments. */
#include "testutil.h"
#include "tu_index.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tarn/entryindex.h"
#include "tarn/key.h"
#include "tarn/meta.h"
#include "tarn/objstore.h"
#include "tarn/reader.h"
#include "tarn/writer.h"

#define LOG 5

/* What a child reports through its pipe for every acknowledged entry. */
typedef struct ackrec {
  uint32_t writer, seq;
  uint64_t offset;
} ackrec;

static char meta_uri[600], wal_uri[600], wal_dir[600];

/* A fresh directory for a sqlite: + file:// deployment; sets the URIs. */
static char *deployment_dir(const char *tag) {
  char *dir = tu_tmpdir(tag);
  snprintf(meta_uri, sizeof meta_uri, "sqlite:%s/meta.db", dir);
  snprintf(wal_uri, sizeof wal_uri, "file://%s/wal", dir);
  snprintf(wal_dir, sizeof wal_dir, "%s/wal", dir);
  mkdir(wal_dir, 0755);
  return dir;
}

/* A child's entry: its payload names writer and sequence number. */
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

/* Appends n entries (n == 0: until killed); exits 0 on success. */
static void child_main(uint32_t writer, uint32_t n, int fd, uint32_t batch_ms) {
  tarn_meta *m;
  tarn_objstore *wal;
  if (tarn_meta_open(meta_uri, &m) || tarn_objstore_open(wal_uri, &wal))
    _exit(10);
  tarn_writer_options o;
  tarn_writer_options_default(&o);
  o.batch_ms = batch_ms;
  tarn_writer *w;
  if (tarn_writer_open(m, wal, &o, &w))
    _exit(11);
  uint32_t cap = n ? n : 200000;
  pending *ps = calloc(cap, sizeof *ps);
  for (uint32_t i = 0; i < cap; i++) {
    char buf[64];
    int len = snprintf(buf, sizeof buf, "w%u-s%u-%.*s", writer, i, (int)(i % 23), "xxxxxxxxxxxxxxxxxxxxxxx");
    ps[i].rec.writer = writer;
    ps[i].rec.seq = i;
    ps[i].fd = fd;
    if (tarn_writer_append(w, LOG, buf, (size_t)len, (i % 3) + 1, pending_ack, &ps[i])) {
      fprintf(stderr, "append: %s\n", tarn_errmsg());
      _exit(12);
    }
    if (!n && i % 50 == 49)
      usleep(2000);
  }
  if (tarn_writer_close(w))
    _exit(13);
  tarn_objstore_close(wal);
  tarn_meta_close(m);
  _exit(0);
}

/* Reads the whole log; checks contiguity and cumulative sizes; fills seen[]
 * (writer*stride + seq) with the offset + 1 of each entry. Returns entries read. */
static size_t read_log(uint64_t *seen, uint32_t writers, uint32_t stride) {
  tarn_meta *m;
  tarn_objstore *wal;
  assert_int_equal(tarn_meta_open(meta_uri, &m), 0);
  assert_int_equal(tarn_objstore_open(wal_uri, &wal), 0);
  tarn_reader *r;
  assert_int_equal(tarn_reader_open(m, wal, NULL, NULL, &r), 0);
  tarn_log_iter *it;
  assert_int_equal(tarn_reader_iter(r, LOG, 0, &it), 0);
  tarn_entry e;
  size_t n = 0;
  uint64_t next = 0, cum = 0;
  int rc;
  while ((rc = tarn_reader_next(it, &e, 0)) == 0) {
    assert_int_equal(e.offset, next); /* offsets disjoint and contiguous */
    assert_int_equal(e.cumulative_size, cum + e.payload_len);
    next = e.offset + e.record_count;
    cum = e.cumulative_size;
    unsigned wr, sq;
    char tail[64];
    char buf[128];
    snprintf(buf, sizeof buf, "%.*s", (int)e.payload_len, (const char *)e.payload);
    assert_int_equal(sscanf(buf, "w%u-s%u-%63s", &wr, &sq, tail) >= 2, 1);
    assert_true(wr < writers && sq < stride);
    assert_int_equal(e.record_count, (sq % 3) + 1);
    uint64_t *slot = &seen[(size_t)wr * stride + sq];
    assert_int_equal(*slot, 0); /* exactly once */
    *slot = e.offset + 1;
    n++;
  }
  assert_int_equal(rc, TARN_EEND);
  tarn_reader_iter_free(it);
  /* each key's cumulative size minus its entry_size_bytes is the previous key's */
  tarn_meta_recs recs = tu_index_records(m, LOG);
  uint64_t prev = 0, prev_end = 0;
  for (size_t i = 0; i < recs.n; i++) {
    tarn_key k;
    tarn_entry_index ei;
    assert_int_equal(tarn_key_parse(recs.v[i].key, TARN_KEY_LEN, &k), 0);
    assert_int_equal(tarn_entry_index_decode(recs.v[i].value, recs.v[i].value_len, &ei), 0);
    assert_int_equal(k.cumulative_size - (uint64_t)ei.entry_size_bytes, prev);
    assert_int_equal(k.end_offset - (uint64_t)ei.message_count, prev_end);
    /* LS-007: a location names the object relative to the one WAL root every
     * process of the deployment uses */
    char path[1400];
    struct stat sb;
    snprintf(path, sizeof path, "%s/%s", wal_dir, ei.location);
    assert_int_equal(stat(path, &sb), 0);
    prev = k.cumulative_size;
    prev_end = k.end_offset;
    tarn_entry_index_free(&ei);
  }
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

/* 8 processes append to one log: every acknowledged entry is readable exactly
 * once at its acknowledged offset (LS-036, LS-039). */
static void eight_processes(void **state) {
  (void)state;
  char *dir = deployment_dir("wprocs");
  enum { W = 8, PER = 400 };
  int fds[2];
  assert_int_equal(pipe(fds), 0);
  pid_t pids[W];
  for (uint32_t i = 0; i < W; i++) {
    pids[i] = fork();
    assert_true(pids[i] >= 0);
    if (pids[i] == 0) {
      close(fds[0]);
      child_main(i, PER, fds[1], 10);
    }
  }
  close(fds[1]);
  ackrec *acks;
  size_t nacks = drain_pipe(fds[0], &acks);
  close(fds[0]);
  for (int i = 0; i < W; i++) {
    int st;
    waitpid(pids[i], &st, 0);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 0);
  }
  assert_int_equal(nacks, W * PER); /* no faults: every entry acknowledged */
  uint64_t *seen = calloc(W * PER, sizeof *seen);
  size_t n = read_log(seen, W, PER);
  assert_int_equal(n, W * PER);
  for (size_t i = 0; i < nacks; i++)
    assert_int_equal(seen[(size_t)acks[i].writer * PER + acks[i].seq], acks[i].offset + 1);
  free(seen);
  free(acks);
  tu_rmtree(dir);
  free(dir);
}

/* Writers killed with SIGKILL at random moments: every acknowledged entry is
 * still readable; whatever else is readable is whole entries, each once. */
static void killed_writers(void **state) {
  (void)state;
  char *dir = deployment_dir("wcrash");
  enum { RUNS = 24, STRIDE = 200000 };
  uint64_t seed = (uint64_t)time(NULL);
  ackrec *all = NULL;
  size_t nall = 0;
  for (uint32_t run = 0; run < RUNS; run++) {
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
      close(fds[0]);
      child_main(run, 0, fds[1], 1 + run % 7);
    }
    close(fds[1]);
    usleep((useconds_t)(20000 + tu_rand(&seed) % 180000));
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
  uint64_t *seen = calloc((size_t)RUNS * STRIDE, sizeof *seen);
  size_t n = read_log(seen, RUNS, STRIDE);
  print_message("%d killed writers: %zu entries acknowledged, %zu readable\n", RUNS, nall, n);
  assert_true(nall > 0);
  assert_true(n >= nall);
  for (size_t i = 0; i < nall; i++)
    assert_int_equal(seen[(size_t)all[i].writer * STRIDE + all[i].seq], all[i].offset + 1);
  free(seen);
  free(all);
  tu_rmtree(dir);
  free(dir);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(eight_processes),
      cmocka_unit_test(killed_writers),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
