/* tarn append: records from stdin or files, appended as entries to one log. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli/log_cmds.h"
#include "tarn/deployment.h"
#include "tarn/error.h"
#include "tarn/writer.h"

static const char usage[] =
    "usage: tarn append (NS/NAME [--partition P] | --log L) [OPTIONS] [FILE...]\n"
    "\n"
    "Appends records to a log. Each record becomes one entry of one record. By\n"
    "default the records are the lines of stdin (without their newline); with\n"
    "--length-delimited each record is a 4-byte big-endian length and that many\n"
    "bytes; with FILE arguments each file's whole content is one record.\n"
    "Records are batched into WAL objects and acknowledged once their index\n"
    "record committed; the offset of every record is printed, in input order.\n"
    "\n"
    "Options:\n"
    "  --length-delimited   read stdin as 4-byte BE length-prefixed records\n"
    "  --batch-ms N         seal an object N ms after its first record (250)\n"
    "  --max-object-bytes N payload bytes per WAL object (4194304)\n"
    "  --json               print {\"log_id\", \"appended\", \"failed\", \"unknown\",\n"
    "                       \"offsets\"} instead of one offset per line\n"
    "  --quiet              print no offsets\n"
    "\n"
    "%s\n%s\n"
    "Progress and rate go to stderr when it is a terminal.\n"
    "Exit status: 0 every record appended; 1 some record failed or its outcome is\n"
    "unknown (it may be readable: the format does not deduplicate), or bad input;\n"
    "2 bad command line; 3 a store could not be reached.\n";

static void help(void) { printf(usage, tarn_cli_log_target_help, tarn_cli_deploy_help); }

typedef struct slot {
  int status; /* 1 pending, 0 ok, < 0 error */
  uint64_t offset;
} slot;

typedef struct state {
  size_t ok, failed, unknown, bytes;
} state;

static void on_ack(void *arg, int status, uint64_t offset, int64_t ts) {
  (void)ts;
  slot *s = arg;
  s->offset = offset;
  s->status = status;
}

typedef struct appender {
  tarn_writer *w;
  uint64_t log_id;
  state *st;
  double t0, last_progress;
  int progress;
  int rc;
} appender;

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Slots are stable: allocated in chunks that never move. */
#define CHUNK 65536
typedef struct slots {
  slot **chunks;
  size_t n, nchunks;
} slots;

static slot *slot_new(slots *s) {
  if (s->n % CHUNK == 0) {
    slot **c = realloc(s->chunks, (s->nchunks + 1) * sizeof *c);
    if (!c)
      return NULL;
    s->chunks = c;
    if (!(c[s->nchunks] = calloc(CHUNK, sizeof **c)))
      return NULL;
    s->nchunks++;
  }
  slot *r = &s->chunks[s->n / CHUNK][s->n % CHUNK];
  r->status = 1;
  s->n++;
  return r;
}

static slot *slot_at(const slots *s, size_t i) { return &s->chunks[i / CHUNK][i % CHUNK]; }

static int append_one(appender *a, slots *sl, const uint8_t *p, size_t len) {
  slot *s = slot_new(sl);
  if (!s) {
    fprintf(stderr, "tarn: append: out of memory\n");
    return TARN_EXIT_FAULT;
  }
  int rc = tarn_writer_append(a->w, a->log_id, p, len, 1, on_ack, s);
  if (rc) {
    s->status = rc;
    fprintf(stderr, "tarn: append: record %zu: %s\n", sl->n - 1, tarn_errmsg());
    return tarn_cli_exit_for(rc);
  }
  a->st->bytes += len;
  if (a->progress) {
    double t = now_s();
    if (t - a->last_progress >= 0.5) {
      a->last_progress = t;
      double el = t - a->t0;
      fprintf(stderr, "\r%zu records, %.1f MB, %.0f records/s, %.1f MB/s   ", sl->n,
              a->st->bytes / 1e6, el > 0 ? sl->n / el : 0, el > 0 ? a->st->bytes / 1e6 / el : 0);
    }
  }
  return 0;
}

int tarn_cmd_append(int argc, char **argv) {
  tarn_cli_deploy dep = {0};
  tarn_cli_log_target tgt = {0};
  int json = 0, quiet = 0, lendelim = 0, nargs;
  tarn_writer_options o;
  tarn_writer_options_default(&o);
  const tarn_cli_opt opts[] = {
      TARN_CLI_LOG_TARGET_OPTS(&tgt),
      TARN_CLI_OPT_FLAG("--quiet", &quiet, 1),
      TARN_CLI_OPT_FLAG("--length-delimited", &lendelim, 1),
      TARN_CLI_OPT_UINT("--batch-ms", &o.batch_ms, 0, 3600000, "a number of ms (0 .. 3600000)",
                        NULL),
      TARN_CLI_OPT_UINT("--max-object-bytes", &o.max_object_bytes, 1, 1u << 30,
                        "a number of bytes (1 .. 2^30)", NULL),
      {0}};
  const tarn_cli_verb v = {"append", help, opts, &dep, &json, -1, NULL};
  int r = tarn_cli_parse(&v, argc, argv, &nargs);
  if (r != TARN_CLI_GO_ON)
    return r;
  /* NS/NAME, then the files; with --log, every positional argument is a file */
  char **files = argv + 1;
  size_t nfiles = (size_t)nargs;
  if (!tgt.log && nfiles)
    tgt.stream = *files++, nfiles--;
  if (lendelim && nfiles)
    return tarn_cli_usage_error("append", "--length-delimited reads stdin; FILE arguments are "
                                          "whole records");
  tarn_deployment *d;
  if ((r = tarn_cli_deploy_open(&dep, 0, &d)))
    return r;
  uint64_t log_id;
  if ((r = tarn_cli_log_target_resolve(&tgt, "append", d, &log_id))) {
    tarn_deployment_close(d);
    return r;
  }
  state st;
  memset(&st, 0, sizeof st);
  appender ap = {.log_id = log_id, .st = &st, .t0 = now_s(), .progress = isatty(2)};
  int rc = tarn_writer_open(tarn_deployment_meta(d), tarn_deployment_wal(d), &o, &ap.w);
  if (rc) {
    tarn_deployment_close(d);
    return tarn_cli_fail("append");
  }
  slots sl = {0};
  int status = TARN_EXIT_OK;
  if (nfiles) {
    for (size_t k = 0; k < nfiles && !status; k++) {
      uint8_t *buf;
      size_t len;
      if (tarn_cli_read_file(files[k], &buf, &len)) {
        status = tarn_cli_fail("append");
        break;
      }
      status = append_one(&ap, &sl, buf, len);
      free(buf);
    }
  } else if (lendelim) {
    uint8_t hdr[4];
    uint8_t *buf = NULL;
    size_t cap = 0;
    for (;;) {
      size_t got = fread(hdr, 1, 4, stdin);
      if (got == 0)
        break;
      if (got < 4) {
        fprintf(stderr, "tarn: append: stdin: record %zu: byte %zu: truncated length prefix\n",
                sl.n, got);
        status = TARN_EXIT_FAULT;
        break;
      }
      size_t len = (size_t)hdr[0] << 24 | (size_t)hdr[1] << 16 | (size_t)hdr[2] << 8 | hdr[3];
      if (len > INT32_MAX) {
        fprintf(stderr, "tarn: append: stdin: record %zu: length %zu exceeds 2^31-1\n", sl.n,
                len);
        status = TARN_EXIT_FAULT;
        break;
      }
      if (len > cap) {
        uint8_t *nb = realloc(buf, len);
        if (!nb) {
          status = TARN_EXIT_FAULT;
          break;
        }
        buf = nb;
        cap = len;
      }
      if (fread(buf, 1, len, stdin) != len) {
        fprintf(stderr, "tarn: append: stdin: record %zu: truncated (%zu bytes announced)\n",
                sl.n, len);
        status = TARN_EXIT_FAULT;
        break;
      }
      if ((status = append_one(&ap, &sl, buf, len)))
        break;
    }
    free(buf);
  } else {
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    while ((n = getline(&line, &cap, stdin)) >= 0) {
      size_t len = (size_t)n;
      if (len && line[len - 1] == '\n')
        len--;
      if ((status = append_one(&ap, &sl, (uint8_t *)line, len)))
        break;
    }
    free(line);
  }
  tarn_writer_flush(ap.w);
  char lasterr[512];
  tarn_writer_last_error(ap.w, lasterr, sizeof lasterr);
  rc = tarn_writer_close(ap.w);
  if (ap.progress)
    fprintf(stderr, "\r%zu records, %.1f MB in %.2f s%30s\n", sl.n, st.bytes / 1e6,
            now_s() - ap.t0, "");
  for (size_t i = 0; i < sl.n; i++) {
    int s = slot_at(&sl, i)->status;
    if (s == 0)
      st.ok++;
    else if (s == TARN_EUNKNOWN)
      st.unknown++;
    else if (s < 0)
      st.failed++;
  }
  if (st.failed || st.unknown) {
    fprintf(stderr, "tarn: append: %zu of %zu records failed, %zu of unknown outcome: %s\n",
            st.failed, sl.n, st.unknown, lasterr);
    if (!status)
      status = TARN_EXIT_FAULT;
  }
  if (rc && !status)
    status = tarn_cli_fail("append: releasing the write lease");
  if (json) {
    json_t *offs = json_array();
    for (size_t i = 0; i < sl.n; i++) {
      const slot *s = slot_at(&sl, i);
      json_array_append_new(offs, s->status == 0 ? json_integer((json_int_t)s->offset)
                                                 : json_null());
    }
    json_t *j = json_pack("{s:I, s:I, s:I, s:I, s:o}", "log_id", (json_int_t)log_id, "appended",
                          (json_int_t)st.ok, "failed", (json_int_t)st.failed, "unknown",
                          (json_int_t)st.unknown, "offsets", offs);
    tarn_cli_print_json(j);
  } else if (!quiet) {
    for (size_t i = 0; i < sl.n; i++) {
      const slot *s = slot_at(&sl, i);
      if (s->status == 0)
        printf("%llu\n", (unsigned long long)s->offset);
      else
        printf("%s\n", s->status == TARN_EUNKNOWN ? "unknown" : "failed");
    }
  }
  for (size_t k = 0; k < sl.nchunks; k++)
    free(sl.chunks[k]);
  free(sl.chunks);
  tarn_deployment_close(d);
  return status;
}
