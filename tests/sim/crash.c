/* tarn-crash: the process side of the crash tests (tests/sim/crash_test.sh).
 *
 *   tarn-crash write --meta URI --wal URI --log L --tag T [--batch-ms N] [--count N]
 *       appends entries to log L until killed (or N entries), printing
 *       "ACK T I OFFSET" and flushing as soon as entry I is acknowledged;
 *   tarn-crash setup --meta URI --wal URI --tag T
 *       creates catalog stream crash/T of one partition and prints its log ID;
 *   tarn-crash compact --meta URI --wal URI --compacted URI --log L
 *       compacts log L (C1-C5, tarn_compact_once with force) until killed;
 *   tarn-crash verify --meta URI --wal URI [--compacted URI] --log L FILE...
 *       reads every acknowledged entry of the ACK files back and checks that
 *       it is at its offset with its bytes.
 *
 * The payload of entry I of tag T is a function of (T, I), so the verifier
 * needs nothing but the ACK lines. */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tarn/catalog.h"
#include "tarn/compactor.h"
#include "tarn/meta.h"
#include "tarn/objstore.h"
#include "tarn/reader.h"
#include "tarn/writer.h"

static size_t payload_of(const char *tag, uint64_t i, char *out, size_t cap) {
  int n = snprintf(out, cap, "%s:%" PRIu64 ":", tag, i);
  size_t len = (size_t)n + 16 + (size_t)(i * 31 % 300);
  if (len > cap)
    len = cap;
  for (size_t k = (size_t)n; k < len; k++)
    out[k] = (char)('a' + (i * 7 + k) % 26);
  return len;
}

static pthread_mutex_t out_mu = PTHREAD_MUTEX_INITIALIZER;
static const char *g_tag;

static void on_ack(void *arg, int status, uint64_t offset, int64_t ts) {
  (void)ts;
  if (status != 0)
    return;
  pthread_mutex_lock(&out_mu);
  printf("ACK %s %" PRIu64 " %" PRIu64 "\n", g_tag, (uint64_t)(uintptr_t)arg, offset);
  fflush(stdout);
  pthread_mutex_unlock(&out_mu);
}

static int die(const char *what) {
  fprintf(stderr, "tarn-crash: %s: %s\n", what, tarn_errmsg());
  return 1;
}

static int do_write(tarn_meta *m, tarn_objstore *wal, uint64_t log, const char *tag,
                    uint32_t batch_ms, uint64_t count) {
  tarn_writer_options o;
  tarn_writer_options_default(&o);
  o.batch_ms = batch_ms;
  o.max_bytes_in_flight = 1 << 20;
  tarn_writer *w;
  if (tarn_writer_open(m, wal, &o, &w))
    return die("writer");
  g_tag = tag;
  char buf[512];
  for (uint64_t i = 0; !count || i < count; i++) {
    size_t len = payload_of(tag, i, buf, sizeof buf);
    if (tarn_writer_append(w, log, buf, len, 1, on_ack, (void *)(uintptr_t)i)) {
      die("append");
      break;
    }
    struct timespec gap = {0, 2000000}; /* ~500 entries/s: a checkable number per round */
    nanosleep(&gap, NULL);
  }
  return tarn_writer_close(w) ? die("close") : 0;
}

static int do_setup(tarn_meta *m, const char *tag) {
  tarn_catalog *cat;
  tarn_catalog_record rec;
  if (tarn_catalog_open(m, NULL, &cat))
    return die("catalog");
  int rc = tarn_catalog_init(cat, NULL);
  if (!rc)
    rc = tarn_catalog_create_stream(cat, "crash", tag, 1, NULL, 0, &rec);
  tarn_catalog_close(cat);
  if (rc)
    return die("creating the stream");
  printf("%" PRIu64 "\n", rec.logs[0]);
  tarn_catalog_record_free(&rec);
  return 0;
}

static int do_compact(tarn_meta *m, tarn_objstore *wal, tarn_objstore *cmp, uint64_t log) {
  tarn_compactor_options o;
  tarn_compactor_options_default(&o);
  o.max_range_bytes = 4096;
  tarn_compactor *c;
  if (tarn_compactor_open(m, wal, cmp, &o, &c))
    return die("compactor");
  for (;;) { /* until killed */
    int did = 0;
    tarn_compact_once(c, log, 1, NULL, &did);
    struct timespec gap = {0, 5000000};
    nanosleep(&gap, NULL);
  }
}

typedef struct ack {
  char tag[128];
  uint64_t i, off;
} ack;

static int by_offset(const void *a, const void *b) {
  uint64_t x = ((const ack *)a)->off, y = ((const ack *)b)->off;
  return x < y ? -1 : x > y;
}

/* One sequential pass over the log from the lowest acknowledged offset, not
 * one lookup per acknowledgement: on S3 an iterator per entry costs an index
 * read and a GET each (31 s for 600 entries). An acknowledged offset the pass
 * steps over, or reaches with other bytes, is lost. Two acknowledgements of
 * one offset are compared with the same entry: at most one can match. */
static int do_verify(tarn_meta *m, tarn_objstore *wal, tarn_objstore *cmp, uint64_t log,
                     char **files, int n) {
  ack *v = NULL;
  size_t nv = 0, cap = 0;
  for (int f = 0; f < n; f++) {
    FILE *fp = fopen(files[f], "r");
    if (!fp) {
      fprintf(stderr, "tarn-crash: cannot open %s\n", files[f]);
      return 1;
    }
    ack a;
    while (fscanf(fp, "ACK %127s %" SCNu64 " %" SCNu64 "\n", a.tag, &a.i, &a.off) == 3) {
      if (nv == cap) {
        cap = cap ? 2 * cap : 1024;
        ack *g = realloc(v, cap * sizeof *v);
        if (!g) {
          fprintf(stderr, "tarn-crash: out of memory\n");
          return 1;
        }
        v = g;
      }
      v[nv++] = a;
    }
    fclose(fp);
  }
  qsort(v, nv, sizeof *v, by_offset);
  tarn_reader *r;
  if (tarn_reader_open(m, wal, cmp, NULL, &r))
    return die("reader");
  uint64_t bad = 0;
  tarn_log_iter *it = NULL;
  tarn_entry e = {0};
  int rc = nv ? tarn_log_iter_open(r, log, v[0].off, &it) : 0;
  int have = 0; /* e holds the entry the pass stands on */
  for (size_t k = 0; k < nv; k++) {
    while (!rc && (!have || e.offset < v[k].off)) {
      rc = tarn_log_iter_next(it, &e, 0);
      have = !rc;
    }
    char want[512];
    size_t len = payload_of(v[k].tag, v[k].i, want, sizeof want);
    if (rc || e.offset != v[k].off || e.payload_len != len || memcmp(e.payload, want, len)) {
      fprintf(stderr,
              "tarn-crash: LOST: %s entry %" PRIu64 " acknowledged at offset %" PRIu64
              " of log %" PRIu64 ": %s\n",
              v[k].tag, v[k].i, v[k].off, log,
              rc                     ? tarn_errmsg()
              : e.offset != v[k].off ? "the offset is not in the log"
                                     : "another entry is there");
      bad++;
    }
  }
  tarn_log_iter_close(it);
  tarn_reader_close(r);
  free(v);
  printf("tarn-crash: %zu acknowledged entries checked, %" PRIu64 " lost\n", nv, bad);
  return bad || !nv;
}

int main(int argc, char **argv) {
  const char *meta = NULL, *walu = NULL, *cmpu = NULL, *tag = "t";
  uint64_t log = 0, count = 0;
  uint32_t batch_ms = 20;
  int first_file = argc;
  if (argc < 2) {
    fprintf(stderr, "usage: tarn-crash write|verify --meta URI --wal URI --log L ...\n");
    return 2;
  }
  for (int i = 2; i < argc; i++) {
    if (!strcmp(argv[i], "--meta") && i + 1 < argc)
      meta = argv[++i];
    else if (!strcmp(argv[i], "--wal") && i + 1 < argc)
      walu = argv[++i];
    else if (!strcmp(argv[i], "--compacted") && i + 1 < argc)
      cmpu = argv[++i];
    else if (!strcmp(argv[i], "--log") && i + 1 < argc)
      log = strtoull(argv[++i], NULL, 10);
    else if (!strcmp(argv[i], "--tag") && i + 1 < argc)
      tag = argv[++i];
    else if (!strcmp(argv[i], "--batch-ms") && i + 1 < argc)
      batch_ms = (uint32_t)strtoul(argv[++i], NULL, 10);
    else if (!strcmp(argv[i], "--count") && i + 1 < argc)
      count = strtoull(argv[++i], NULL, 10);
    else {
      first_file = i;
      break;
    }
  }
  int setup = !strcmp(argv[1], "setup");
  if (!meta || !walu || (!log && !setup)) {
    fprintf(stderr, "tarn-crash: --meta, --wal and --log are required\n");
    return 2;
  }
  tarn_meta *m;
  tarn_objstore *wal, *cmp = NULL;
  if (tarn_meta_open(meta, &m))
    return die(meta);
  if (tarn_objstore_open(walu, &wal))
    return die(walu);
  if (cmpu && tarn_objstore_open(cmpu, &cmp))
    return die(cmpu);
  int rc;
  if (!strcmp(argv[1], "write"))
    rc = do_write(m, wal, log, tag, batch_ms, count);
  else if (setup)
    rc = do_setup(m, tag);
  else if (!strcmp(argv[1], "compact") && cmp)
    rc = do_compact(m, wal, cmp, log);
  else if (!strcmp(argv[1], "verify"))
    rc = do_verify(m, wal, cmp, log, argv + first_file, argc - first_file);
  else
    rc = 2;
  tarn_objstore_close(cmp);
  tarn_objstore_close(wal);
  tarn_meta_close(m);
  return rc;
}
