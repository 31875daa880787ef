/* tarn append: records from stdin or files, appended as entries to one log,
 * each acknowledged on stdout as soon as it and every earlier record have
 * their outcome.
 *
 * Three threads of our own besides the writer's: this one reads the input and
 * appends; a printer prints outcomes in input order and forgets them; a
 * signal thread turns the first SIGINT/SIGTERM into "stop reading" and the
 * second into death by that signal. Records between reading and printing sit
 * in a ring of fixed size, so memory does not grow with the input. */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli/log_cmds.h"
#include "tarn/deployment.h"
#include "tarn/catalog.h"
#include "tarn/error.h"
#include "tarn/express.h"
#include "tarn/token.h"
#include "tarn/express_fence.h"
#include "tarn/kafka.h"
#include "tarn/kafka_topics.h"
#include "tarn/metrics.h"
#include "tarn/writer.h"

static const char usage[] =
    "usage: tarn append (NS/NAME [--partition P] | --log L) [OPTIONS] [FILE...]\n"
    "\n"
    "Appends records to a log. Each record becomes one entry of one record. By\n"
    "default the records are the lines of stdin (without their newline); with\n"
    "--length-delimited each record is a 4-byte big-endian length and that many\n"
    "bytes; with FILE arguments each file's whole content is one record.\n"
    "On a Kafka topic's log each such record must be Kafka record batches (the\n"
    "entry's record count is theirs); anything else is refused (docs/kafka.md).\n"
    "Records are batched into WAL objects and acknowledged once their index\n"
    "record committed. Outcomes are printed in input order, one line a record,\n"
    "as soon as a record's and every earlier record's outcome is known; stdout\n"
    "is flushed after each batch of them, so a pipe sees them at once. Endless\n"
    "input (tail -F) runs in bounded memory: printed outcomes are forgotten.\n"
    "\n"
    "Options:\n"
    "  --length-delimited   read stdin as 4-byte BE length-prefixed records\n"
    "  --batch-ms N         seal an object N ms after its first record (250)\n"
    "  --max-object-bytes N payload bytes per WAL object (4194304)\n"
    "  --max-in-flight-bytes N\n"
    "                       payload bytes read and not yet printed (67108864)\n"
    "  --max-in-flight-records N\n"
    "                       records read and not yet printed (262144)\n"
    "  --drain-timeout-ms N after SIGINT/SIGTERM, wait this long for the\n"
    "                       outstanding outcomes (30000)\n"
    "  --json               one object a line: {\"record\", \"offset\",\n"
    "                       \"timestamp_ms\"} or {\"record\", \"status\": \"failed\"|\n"
    "                       \"unknown\"}; at the end {\"log_id\", \"records\",\n"
    "                       \"appended\", \"failed\", \"unknown\"}\n"
    "  --quiet              print no outcomes on stdout\n"
    "  --latency-budget-ms N an express stream's acknowledgement budget (20): a slot\n"
    "                       gathers what it leaves after the slots' commit p99\n"
    "                       (0: a slot every 2 ms; docs/express.md \"Slot sizing\")\n"
    "  --star NAME          an express stream's writer identity (default: TARN_STAR,\n"
    "                       else the host name, or HOST.1, HOST.2, ... when a live\n"
    "                       process holds it); one live process per star: a star\n"
    "                       another holds fails (exit 1); ignored for standard streams\n"
    "  --token T            this producer's fencing token: compared by exact\n"
    "                       equality with the one tarn stream fence installed,\n"
    "                       at the start and every second; required when the\n"
    "                       stream's token mode is fenced (docs/express.md)\n"
    "\n"
    "%s\n%s\n"
    "Output: the offset of each record, or 'failed' or 'unknown', a line each.\n"
    "A record that failed or whose outcome is unknown is also reported on\n"
    "stderr with its input position, for resending it:\n"
    "  tarn: append: record R (line L): failed|unknown: MESSAGE\n"
    "(R counts from 0; '(byte B)' with --length-delimited, '(file F)' for files);\n"
    "the records after it that failed alike, with the same message, in one line:\n"
    "  tarn: append: records R1-R2 (lines L1-L2): failed|unknown, as record R\n"
    "Signals: the first SIGINT or SIGTERM stops reading; the records read are\n"
    "flushed and their outcomes printed, waiting up to --drain-timeout-ms (then\n"
    "those still outstanding are reported 'unknown'); a second signal ends the\n"
    "process at once, by that signal. A signal before the log is open (the stores\n"
    "may keep an open waiting: a lock, an unreachable server) ends the process at\n"
    "once, by that signal: nothing was read.\n"
    "Progress and rate go to stderr when it is a terminal.\n"
    "Exit status: 0 every record read was appended (to the end of the input, or\n"
    "up to a signal); 1 some record failed or its outcome is unknown (it may be\n"
    "readable: the format does not deduplicate), or bad input; 2 bad command\n"
    "line; 3 a store could not be reached; 4 the fencing token was refused (at\n"
    "the start, or later: another producer's token was installed, and the\n"
    "records read before are flushed and reported). Killed by a second signal: that\n"
    "signal (128+N in a shell).\n";

static void help(void) { printf(usage, tarn_cli_log_target_help, tarn_cli_deploy_help); }

/* ack.status besides 0 and TARN_E*: PENDING until the outcome; ABANDONED when
 * the drain deadline passed first; REFUSED when tarn_writer_append refused it
 * (reported then) */
enum { PENDING = 1, ABANDONED = 2, REFUSED = 3 };

/* One record between reading and printing. */
typedef struct ack {
  int32_t status; /* PENDING, ABANDONED, REFUSED, 0 or TARN_E* */
  uint32_t len;
  uint64_t pos; /* the input position: stdin's byte offset, or the FILE's index */
  uint64_t offset;
  int64_t ts;
} ack;

typedef struct producer {
  uint64_t budget_ms; /* an express stream's latency budget (--latency-budget-ms) */
  pthread_mutex_t mu;
  pthread_cond_t cv_out;  /* the printer: the head record's outcome, or the end */
  pthread_cond_t cv_room; /* the reader: room in the ring; the drain: all printed; a stop */
  ack *ring;
  uint64_t mask;       /* ring size - 1 (a power of two) */
  uint64_t head, tail; /* records [head, tail) are read and not yet printed */
  size_t bytes, max_bytes;
  int closed; /* no record will follow tail */
  int stop;   /* a signal (or stdout failed): read no more */
  int stop_sig;
  int abandoned; /* the drain deadline passed */
  int finished;  /* the signal thread may go */
  int opening;   /* the log is not open yet: a signal ends the process */
  int kafka;     /* the log is a Kafka topic's: a record is record batches */
  int wake[2];   /* the signal thread (or the printer) wakes the reader's poll */
  sigset_t sigs; /* the signals that stop it */
  /* the printer's */
  uint64_t ok, failed, unknown;
  uint64_t refused; /* of failed: a store unreachable or refusing tarn (exit 3) */
  int json, quiet, lendelim;
  char *const *files; /* FILE arguments, named in reports */
  int out_failed;     /* writing stdout failed */
  struct {            /* the printer's run of records failed alike, reported once */
    uint64_t first, last, pos_first, pos_last;
    const char *what;
    char why[512];
  } run;
  int in_run;
  /* the log's writer (issue 32 item 1): a standard one, or an express one
   * for an express stream's log (docs/express.md) */
  tarn_appender *a;
  /* the fencing token (tarn/token.h): checked at open and again every
   * TOKEN_RECHECK_S while reading, so a superseded holder stops */
  const char *token;
  tarn_meta *meta;
  tarn_catalog_record stream; /* the log's stream (ns NULL: a log of no stream) */
  int token_refused;
} producer;

#define TOKEN_RECHECK_S 1.0
/* The exit status of a refused fencing token (documented in --help). */
#define EXIT_TOKEN 4

static void p_seal(producer *p) { tarn_appender_seal(p->a); }

/* 1 when log_id belongs to an express stream, 0 when not (or unknown). */
static int log_is_express(tarn_deployment *d, uint64_t log_id) {
  tarn_catalog *c;
  if (tarn_catalog_open(tarn_deployment_meta(d), NULL, &c))
    return 0;
  tarn_catalog_record l = {0}, s = {0};
  int yes = !tarn_catalog_log_stream(c, log_id, &l) &&
            !tarn_catalog_open_stream(c, l.ns, l.name, &s) && tarn_stream_is_express(&s);
  tarn_catalog_record_free(&l);
  tarn_catalog_record_free(&s);
  tarn_catalog_close(c);
  return yes;
}

/* The stream record of log_id's stream into *out (out->ns NULL when the log
 * belongs to no stream). */
static int stream_of_log(tarn_deployment *d, uint64_t log_id, tarn_catalog_record *out) {
  memset(out, 0, sizeof *out);
  tarn_catalog *c;
  int rc = tarn_catalog_open(tarn_deployment_meta(d), NULL, &c);
  if (rc)
    return rc;
  tarn_catalog_record l = {0};
  rc = tarn_catalog_log_stream(c, log_id, &l);
  if (!rc)
    rc = tarn_catalog_open_stream(c, l.ns, l.name, out);
  if (rc) {
    tarn_catalog_record_free(out);
    memset(out, 0, sizeof *out);
  }
  tarn_catalog_record_free(&l);
  tarn_catalog_close(c);
  return rc == TARN_ENOTFOUND ? 0 : rc;
}

/* The writer hands a callback one pointer; the ring slot is it, and the one
 * producer of the process is found here. */
static producer *the_producer;

static void on_outcome(void *arg, int status, uint64_t offset, int64_t ts) {
  ack *a = arg;
  producer *p = the_producer;
  pthread_mutex_lock(&p->mu);
  if (a->status == PENDING) { /* an ABANDONED record was reported already */
    a->offset = offset;
    a->ts = ts;
    a->status = status;
    if (a == &p->ring[p->head & p->mask])
      pthread_cond_signal(&p->cv_out);
  }
  pthread_mutex_unlock(&p->mu);
}

/* The library's one clock (tarn_metrics_now: monotonic seconds). */
static double now_s(void) { return tarn_metrics_now(); }

/* ---- the printer ---------------------------------------------------------- */

static void report(producer *p, uint64_t rec, const ack *a, const char *why) {
  const char *what = a->status == TARN_EUNKNOWN || a->status == ABANDONED ? "unknown" : "failed";
  if (p->files)
    fprintf(stderr, "tarn: append: record %llu (file %s): %s: %s\n", (unsigned long long)rec,
            p->files[a->pos], what, why);
  else if (p->lendelim)
    fprintf(stderr, "tarn: append: record %llu (byte %llu): %s: %s\n", (unsigned long long)rec,
            (unsigned long long)a->pos, what, why);
  else /* every line is one record */
    fprintf(stderr, "tarn: append: record %llu (line %llu): %s: %s\n", (unsigned long long)rec,
            (unsigned long long)rec + 1, what, why);
}

/* The printer's reports: the first record of a run that failed alike (a
 * store refusing a batch, a window, the whole input) is reported at once,
 * the rest of the run in one line when it ends (issue 33: 5,001 lines for
 * 5,000 records refused by S3). */
static void flush_run(producer *p) {
  if (!p->in_run)
    return;
  p->in_run = 0;
  uint64_t a = p->run.first + 1, b = p->run.last;
  if (b < a)
    return;
  if (a == b) { /* one record more: reported as one */
    fprintf(stderr, "tarn: append: record %llu: %s, as record %llu\n", (unsigned long long)a,
            p->run.what, (unsigned long long)a - 1);
    return;
  }
  if (p->files)
    fprintf(stderr, "tarn: append: records %llu-%llu (files %s .. %s): %s, as record %llu\n",
            (unsigned long long)a, (unsigned long long)b, p->files[p->run.pos_first],
            p->files[p->run.pos_last], p->run.what, (unsigned long long)a - 1);
  else if (p->lendelim)
    fprintf(stderr, "tarn: append: records %llu-%llu (bytes %llu ..): %s, as record %llu\n",
            (unsigned long long)a, (unsigned long long)b, (unsigned long long)p->run.pos_first,
            p->run.what, (unsigned long long)a - 1);
  else
    fprintf(stderr, "tarn: append: records %llu-%llu (lines %llu-%llu): %s, as record %llu\n",
            (unsigned long long)a, (unsigned long long)b, (unsigned long long)a + 1,
            (unsigned long long)b + 1, p->run.what, (unsigned long long)a - 1);
}

static void report_run(producer *p, uint64_t rec, const ack *a, const char *why) {
  const char *what = a->status == TARN_EUNKNOWN || a->status == ABANDONED ? "unknown" : "failed";
  if (p->in_run && rec == p->run.last + 1 && p->run.what == what && !strcmp(p->run.why, why)) {
    if (p->run.last == p->run.first)
      p->run.pos_first = a->pos; /* the run's second record: where the line starts */
    p->run.last = rec, p->run.pos_last = a->pos;
    return;
  }
  flush_run(p);
  report(p, rec, a, why);
  p->in_run = 1;
  p->run.first = p->run.last = rec;
  p->run.pos_first = p->run.pos_last = a->pos;
  p->run.what = what;
  snprintf(p->run.why, sizeof p->run.why, "%s", why);
}

/* Prints records [a, b), whose outcomes are known and stay put: nobody
 * writes a slot between its outcome and the head passing it. */
static void print_outcomes(producer *p, uint64_t a, uint64_t b) {
  char why[512];
  int have_why = 0;
  for (uint64_t i = a; i < b; i++) {
    const ack *s = &p->ring[i & p->mask];
    if (s->status == 0) {
      flush_run(p);
      p->ok++;
      if (p->json)
        printf("{\"record\":%llu,\"offset\":%llu,\"timestamp_ms\":%lld}\n", (unsigned long long)i,
               (unsigned long long)s->offset, (long long)s->ts);
      else if (!p->quiet)
        printf("%llu\n", (unsigned long long)s->offset);
      continue;
    }
    int unknown = s->status == TARN_EUNKNOWN || s->status == ABANDONED;
    if (unknown)
      p->unknown++;
    else
      p->failed++;
    if (s->status == TARN_EAUTH || s->status == TARN_EUNAVAIL)
      p->refused++;
    if (p->json)
      printf("{\"record\":%llu,\"status\":\"%s\"}\n", (unsigned long long)i,
             unknown ? "unknown" : "failed");
    else if (!p->quiet)
      printf("%s\n", unknown ? "unknown" : "failed");
    if (s->status == REFUSED) { /* reported when it was refused */
      flush_run(p);
      continue;
    }
    if (s->status == ABANDONED) {
      report_run(p, i, s, "no outcome within --drain-timeout-ms (it may be readable)");
      continue;
    }
    if (!have_why) { /* one batch's records share the reason */
      tarn_appender_last_error(p->a, why, sizeof why);
      have_why = 1;
    }
    report_run(p, i, s, why);
  }
  if ((!p->quiet || p->json) && fflush(stdout) != 0 && !p->out_failed) {
    p->out_failed = 1;
    fprintf(stderr, "tarn: append: writing stdout: %s; reading no more\n", strerror(errno));
  }
}

static void *printer_main(void *arg) {
  producer *p = arg;
  pthread_mutex_lock(&p->mu);
  for (;;) {
    while (!(p->head < p->tail && p->ring[p->head & p->mask].status != PENDING) &&
           !(p->closed && p->head == p->tail))
      pthread_cond_wait(&p->cv_out, &p->mu);
    if (p->head == p->tail) {
      pthread_mutex_unlock(&p->mu);
      flush_run(p);
      pthread_mutex_lock(&p->mu);
      break; /* closed, all printed */
    }
    uint64_t a = p->head, b = a;
    size_t bytes = 0;
    while (b < p->tail && p->ring[b & p->mask].status != PENDING)
      bytes += p->ring[b++ & p->mask].len;
    pthread_mutex_unlock(&p->mu);
    print_outcomes(p, a, b);
    pthread_mutex_lock(&p->mu);
    p->head = b;
    p->bytes -= bytes;
    if (p->out_failed && !p->stop) {
      p->stop = 1;
      ssize_t wr = write(p->wake[1], "", 1);
      (void)wr;
    }
    pthread_cond_broadcast(&p->cv_room);
  }
  pthread_mutex_unlock(&p->mu);
  return NULL;
}

/* ---- signals -------------------------------------------------------------- */

/* SIGTERM and SIGINT, unless SIGINT came ignored (a shell's background job,
 * nohup): that stays ignored, as is the custom. */
static void stop_signals(sigset_t *s) {
  sigemptyset(s);
  sigaddset(s, SIGTERM);
  struct sigaction sa;
  if (sigaction(SIGINT, NULL, &sa) == 0 && sa.sa_handler != SIG_IGN)
    sigaddset(s, SIGINT);
}

static void *signal_main(void *arg) {
  producer *p = arg;
  sigset_t set = p->sigs;
  int sig;
  if (sigwait(&set, &sig) != 0)
    return NULL;
  pthread_mutex_lock(&p->mu);
  int finished = p->finished, opening = p->opening;
  if (!finished && !opening) {
    p->stop = 1;
    p->stop_sig = sig;
    pthread_cond_broadcast(&p->cv_room);
  }
  pthread_mutex_unlock(&p->mu);
  if (finished)
    return NULL;
  if (opening) {
    /* Before the log is open nothing is read, so nothing can be pending: the
     * first signal ends the process at once, as without a handler. An open
     * waits on the stores without a bound (a sqlite lock held by a stopped
     * process, an unreachable etcd), and a `timeout 60 tarn append` hung
     * there forever: the signal stayed blocked until the open returned. A
     * store operation cut short is a crash, which every role survives. */
    fprintf(stderr, "tarn: append: stopped by %s before the log was open (nothing read)\n",
            sig == SIGINT ? "SIGINT" : "SIGTERM");
    goto die;
  }
  ssize_t wr = write(p->wake[1], "", 1);
  (void)wr; /* a full pipe wakes poll just the same */
  if (sigwait(&set, &sig) != 0)
    return NULL;
  pthread_mutex_lock(&p->mu);
  finished = p->finished;
  pthread_mutex_unlock(&p->mu);
  if (finished)
    return NULL;
  /* the second signal: die of it, as without a handler */
die:
  signal(sig, SIG_DFL);
  pthread_sigmask(SIG_UNBLOCK, &set, NULL);
  raise(sig);
  _exit(128 + sig);
}

/* ---- reading -------------------------------------------------------------- */

enum { STOPPED = 1 }; /* next_record: a signal, not an error */

typedef struct input {
  int fd, wake;
  uint8_t *buf;
  size_t cap, beg, end, scan; /* scan: where the search for '\n' goes on */
  uint64_t pos;               /* the input offset of buf[beg] */
  int eof;
} input;

/* Reads more into in->buf: 0 (or in->eof), STOPPED, or TARN_EIO/TARN_ENOMEM. */
static int fill(input *in) {
  if (in->end == in->cap) {
    if (in->beg > 0) {
      memmove(in->buf, in->buf + in->beg, in->end - in->beg);
      in->end -= in->beg;
      in->scan -= in->beg;
      in->beg = 0;
    } else {
      size_t c = in->cap ? in->cap * 2 : 1u << 18;
      uint8_t *nb = realloc(in->buf, c);
      if (!nb)
        return TARN_ENOMEM;
      in->buf = nb;
      in->cap = c;
    }
  }
  struct pollfd f[2] = {{.fd = in->fd, .events = POLLIN}, {.fd = in->wake, .events = POLLIN}};
  for (;;) {
    if (poll(f, 2, -1) < 0) {
      if (errno == EINTR)
        continue;
      return TARN_EIO;
    }
    if (f[1].revents)
      return STOPPED;
    ssize_t n = read(in->fd, in->buf + in->end, in->cap - in->end);
    if (n < 0 && (errno == EINTR || errno == EAGAIN))
      continue;
    if (n < 0)
      return TARN_EIO;
    if (n == 0)
      in->eof = 1;
    in->end += (size_t)n;
    return 0;
  }
}

/* The next record of stdin: 1 with *p, *len, *pos; 0 at the end; STOPPED; or
 * a negative TARN_E* with the message printed (bad input). */
static int next_record(input *in, int lendelim, uint64_t rec, const uint8_t **p, size_t *len,
                       uint64_t *pos) {
  for (;;) {
    size_t have = in->end - in->beg;
    if (lendelim && have >= 4) {
      const uint8_t *h = in->buf + in->beg;
      size_t n = (size_t)h[0] << 24 | (size_t)h[1] << 16 | (size_t)h[2] << 8 | h[3];
      if (n > INT32_MAX) {
        fprintf(stderr,
                "tarn: append: stdin: record %llu (byte %llu): length %zu exceeds "
                "2^31-1\n",
                (unsigned long long)rec, (unsigned long long)in->pos, n);
        return TARN_ERANGE;
      }
      if (have >= 4 + n) {
        *p = h + 4, *len = n, *pos = in->pos;
        in->beg += 4 + n, in->pos += 4 + n;
        in->scan = in->beg;
        return 1;
      }
    } else if (!lendelim) {
      uint8_t *nl = in->end > in->scan ? memchr(in->buf + in->scan, '\n', in->end - in->scan)
                                       : NULL; /* buf is NULL before the first read */
      if (nl || (in->eof && have)) {
        size_t n = nl ? (size_t)(nl - (in->buf + in->beg)) : have;
        *p = in->buf + in->beg, *len = n, *pos = in->pos;
        size_t used = n + (nl != NULL);
        in->beg += used, in->pos += used;
        in->scan = in->beg;
        return 1;
      }
      in->scan = in->end;
      if (have > INT32_MAX) {
        fprintf(stderr,
                "tarn: append: stdin: record %llu (line %llu): longer than 2^31-1 "
                "bytes\n",
                (unsigned long long)rec, (unsigned long long)rec + 1);
        return TARN_ERANGE;
      }
    }
    if (in->eof) {
      if (!have)
        return 0;
      if (have < 4)
        fprintf(stderr, "tarn: append: stdin: record %llu: byte %zu: truncated length prefix\n",
                (unsigned long long)rec, have);
      else
        fprintf(stderr, "tarn: append: stdin: record %llu: truncated (%zu bytes announced)\n",
                (unsigned long long)rec,
                (size_t)in->buf[in->beg] << 24 | (size_t)in->buf[in->beg + 1] << 16 |
                    (size_t)in->buf[in->beg + 2] << 8 | in->buf[in->beg + 3]);
      return TARN_ECORRUPT;
    }
    int rc = fill(in);
    if (rc == TARN_EIO)
      fprintf(stderr, "tarn: append: reading stdin: %s\n", strerror(errno));
    else if (rc == TARN_ENOMEM)
      fprintf(stderr, "tarn: append: out of memory\n");
    if (rc)
      return rc;
  }
}

/* ---- the express writer's star ---------------------------------------------- */

/* Opens the express writer as the star given (--star, else TARN_STAR): one
 * live process per star, so a star held by another live process fails the
 * command, naming the holder. Without either, the star is derived (issue 30
 * item 2): the host name, else {host}.1, {host}.2, ..., the first that no
 * live process holds. Unrelated `tarn append` processes on one host never
 * share a star, and a restart reuses the lowest free one. */
static int open_express(struct tarn_deployment *d, const char *star, tarn_xwriter_options *xo,
                        tarn_xwriter **out) {
  char base[160], name[200];
  const char *env = getenv("TARN_STAR");
  tarn_express_default_star(base, sizeof base);
  if (star || (env && *env)) {
    xo->star = star ? star : base;
    return tarn_xwriter_open(tarn_deployment_meta(d), tarn_deployment_wal(d), xo, out);
  }
  int rc = 0;
  for (int i = 0; i < 64; i++) {
    if (i)
      snprintf(name, sizeof name, "%.120s.%d", base, i);
    else
      snprintf(name, sizeof name, "%s", base);
    xo->star = name;
    rc = tarn_xwriter_open(tarn_deployment_meta(d), tarn_deployment_wal(d), xo, out);
    if (rc != TARN_EBUSY)
      return rc;
  }
  char why[512];
  snprintf(why, sizeof why, "%s", tarn_errmsg());
  return tarn_set_errmsg(rc, "no free star among %s, %s.1 ... %s.63 (give --star): %s", base, base,
                         base, why);
}

/* ---- appending ------------------------------------------------------------ */

/* Appends one record once the ring has room for it: 0, STOPPED, or the
 * writer's error (reported, the record counted failed). */
static int push(producer *p, uint64_t log_id, const uint8_t *d, size_t len, uint64_t pos) {
  pthread_mutex_lock(&p->mu);
  /* bounded memory: a record waits for the printer to forget earlier ones;
   * one record alone always fits, as in the writer */
  if (!p->stop &&
      (p->tail - p->head > p->mask || (p->bytes > 0 && p->bytes + len > p->max_bytes))) {
    /* the outcomes waited for may sit in the open batch: seal it, then wait
     * until half the room is back — resuming at the first free slot would
     * seal a batch of a few records each time */
    pthread_mutex_unlock(&p->mu);
    p_seal(p);
    pthread_mutex_lock(&p->mu);
    while (!p->stop && p->head != p->tail &&
           (p->tail - p->head > p->mask / 2 || p->bytes + len > p->max_bytes / 2 + 1))
      pthread_cond_wait(&p->cv_room, &p->mu);
  }
  int stop = p->stop;
  if (!stop)
    p->bytes += len;
  uint64_t rec = p->tail;
  pthread_mutex_unlock(&p->mu);
  if (stop)
    return STOPPED;
  ack *a = &p->ring[rec & p->mask]; /* free: only this thread moves the tail */
  a->status = PENDING;
  a->len = (uint32_t)len;
  a->pos = pos;
  /* A Kafka topic's entry holds as many records as its batches do (LS-095);
   * bytes that are no batches go with 1, for the writer to refuse them with
   * its account of the fault. */
  uint64_t records = 1;
  if (p->kafka && (tarn_kafka_check(d, len, -1, &records) || records > INT32_MAX))
    records = 1;
  int rc = tarn_appender_append(p->a, log_id, d, len, (uint32_t)records, on_outcome, a);
  /* The express open gate refuses (TARN_EBUSY, retryable) while another
   * star's process may still lead the log: a crashed one's lease stands
   * until its session times out. Retried for up to two timeouts and a few
   * seconds; a live leader is then reported, not waited on for ever. (The
   * standard writer, blocking, never returns TARN_EBUSY here.) */
  int64_t gate_wait = 2 * tarn_meta_session_timeout_ms(p->meta) + 5000;
  for (int64_t waited = 0; rc == TARN_EBUSY && waited < gate_wait; waited += 100) {
    pthread_mutex_lock(&p->mu);
    int stopped = p->stop;
    pthread_mutex_unlock(&p->mu);
    if (stopped)
      break;
    usleep(100 * 1000);
    rc = tarn_appender_append(p->a, log_id, d, len, (uint32_t)records, on_outcome, a);
  }
  if (rc) {
    report(p, rec, &(ack){.status = rc, .pos = pos}, tarn_errmsg());
    a->status = REFUSED;
  }
  pthread_mutex_lock(&p->mu);
  p->tail++;
  if (a->status != PENDING && rec == p->head)
    pthread_cond_signal(&p->cv_out);
  pthread_mutex_unlock(&p->mu);
  return rc;
}

/* After the last record: waits until every outcome is printed — with no
 * limit, unless a signal came: then for drain_ms, after which the records
 * still outstanding are ABANDONED. Returns 1 when some were. */
static int drain(producer *p, uint64_t drain_ms) {
  pthread_mutex_lock(&p->mu);
  p->closed = 1;
  pthread_cond_signal(&p->cv_out);
  struct timespec dl;
  int have_dl = 0;
  while (p->head != p->tail && !p->abandoned) {
    if (p->stop_sig && !have_dl) {
      /* A condition-variable deadline on cv_room's clock (CLOCK_MONOTONIC, set
       * where it is made): the kernel's wait, not a role's time, and the CLI
       * includes no internal header for tarn__cond_deadline. */
      clock_gettime(CLOCK_MONOTONIC, &dl);
      dl.tv_sec += (time_t)(drain_ms / 1000);
      dl.tv_nsec += (long)(drain_ms % 1000) * 1000000L;
      if (dl.tv_nsec >= 1000000000L)
        dl.tv_sec++, dl.tv_nsec -= 1000000000L;
      have_dl = 1;
    }
    if (!have_dl) {
      pthread_cond_wait(&p->cv_room, &p->mu);
      continue;
    }
    if (pthread_cond_timedwait(&p->cv_room, &p->mu, &dl) == ETIMEDOUT && p->head != p->tail) {
      for (uint64_t i = p->head; i < p->tail; i++)
        if (p->ring[i & p->mask].status == PENDING)
          p->ring[i & p->mask].status = ABANDONED;
      p->abandoned = 1;
      pthread_cond_signal(&p->cv_out);
    }
  }
  int r = p->abandoned;
  pthread_mutex_unlock(&p->mu);
  return r;
}

/* Reads the records and appends them until the end, a signal or an error:
 * TARN_EXIT_OK or the exit status of what ended it. */
static int read_and_append(producer *p, uint64_t log_id, char **files, size_t nfiles) {
  int progress = isatty(2);
  double t0 = now_s(), last = t0;
  size_t nbytes = 0;
  uint64_t n = 0;
  int status = TARN_EXIT_OK, rc = 0;
  input in = {.fd = 0, .wake = p->wake[0]};
  double token_at = t0;
  for (;; n++) {
    if (p->stream.ns && now_s() - token_at >= TOKEN_RECHECK_S) {
      /* a stale token holder is superseded: it reads no more input */
      token_at = now_s();
      int trc = tarn_stream_token_check(p->meta, &p->stream, p->token);
      if (trc == TARN_EFENCED) {
        fprintf(stderr, "tarn: append: superseded: %s\n", tarn_errmsg());
        p->token_refused = 1;
        status = EXIT_TOKEN;
        break;
      }
    }
    const uint8_t *d = NULL;
    uint8_t *buf = NULL;
    size_t len = 0;
    uint64_t pos = n;
    if (nfiles) {
      if (n == nfiles)
        break;
      pthread_mutex_lock(&p->mu);
      int stop = p->stop;
      pthread_mutex_unlock(&p->mu);
      if (stop)
        break;
      if (tarn_cli_read_file(files[n], &buf, &len)) {
        status = tarn_cli_fail("append");
        break;
      }
      d = buf;
    } else if ((rc = next_record(&in, p->lendelim, n, &d, &len, &pos)) != 1) {
      if (rc < 0)
        status = TARN_EXIT_FAULT;
      break;
    }
    rc = push(p, log_id, d, len, pos);
    free(buf);
    if (rc == STOPPED)
      break;
    if (rc) {
      status = tarn_cli_exit_for(rc);
      break;
    }
    nbytes += len;
    if (progress) {
      double t = now_s();
      if (t - last >= 0.5) {
        last = t;
        double el = t - t0;
        fprintf(stderr, "\r%llu records, %.1f MB, %.0f records/s, %.1f MB/s   ",
                (unsigned long long)n + 1, nbytes / 1e6, el > 0 ? (double)(n + 1) / el : 0,
                el > 0 ? nbytes / 1e6 / el : 0);
      }
    }
  }
  free(in.buf);
  if (progress)
    fprintf(stderr, "\r%llu records, %.1f MB in %.2f s%30s\n", (unsigned long long)n, nbytes / 1e6,
            now_s() - t0, "");
  return status;
}

/* The producer, its ring of max_records (rounded up to a power of two) and
 * its locks; NULL when out of memory. */
static producer *producer_new(uint64_t max_records, size_t max_bytes) {
  /* on the heap, and the ring too: after an abandoned drain the process ends
   * with the writer's threads still holding slots */
  producer *p = calloc(1, sizeof *p);
  size_t cap = 1;
  while (cap < max_records)
    cap *= 2;
  if (!p || !(p->ring = calloc(cap, sizeof *p->ring)) || pipe(p->wake) != 0) {
    if (p)
      free(p->ring);
    free(p);
    return NULL;
  }
  p->mask = cap - 1;
  p->max_bytes = max_bytes;
  p->opening = 1;
  pthread_mutex_init(&p->mu, NULL);
  pthread_cond_init(&p->cv_out, NULL);
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_cond_init(&p->cv_room, &ca);
  pthread_condattr_destroy(&ca);
  return p;
}

static void producer_free(producer *p) {
  close(p->wake[0]);
  close(p->wake[1]);
  pthread_cond_destroy(&p->cv_room);
  pthread_cond_destroy(&p->cv_out);
  pthread_mutex_destroy(&p->mu);
  free(p->ring);
  tarn_catalog_record_free(&p->stream);
  free(p);
}

/* --token against the log's stream (tarn/token.h): 0, or the refusal. */
static int check_token(producer *p, tarn_deployment *d, uint64_t log_id, const char *token) {
  p->token = token;
  p->meta = tarn_deployment_meta(d);
  int rc = stream_of_log(d, log_id, &p->stream);
  if (!rc && p->stream.ns)
    rc = tarn_stream_token_check(p->meta, &p->stream, token);
  else if (!rc && token)
    rc = tarn_set_errmsg(TARN_EINVAL, "--token: log %llu belongs to no stream",
                         (unsigned long long)log_id);
  return rc;
}

/* The log's writer as its stream's class asks (issue 32 item 1: from here
 * on only its appender is used): an express stream's log gets the express
 * writer as the star (open_express), any other log the standard writer. */
static int open_appender(producer *p, tarn_deployment *d, uint64_t log_id, const char *star,
                         const tarn_writer_options *o) {
  int rc;
  if (log_is_express(d, log_id)) {
    tarn_xwriter_options xo;
    tarn_xwriter_options_default(&xo);
    xo.max_bytes_in_flight = o->max_bytes_in_flight;
    xo.latency_budget_ms = (uint32_t)p->budget_ms;
    xo.fence = tarn_express_fence_cut; /* a roll fences its own epoch (30 s deadline) */
    tarn_xwriter *xw = NULL;
    rc = open_express(d, star, &xo, &xw);
    p->a = tarn_xwriter_appender(xw);
  } else {
    tarn_writer *w = NULL;
    rc = tarn_writer_open(tarn_deployment_meta(d), tarn_deployment_wal(d), o, &w);
    p->a = tarn_writer_appender(w);
  }
  return rc;
}

/* Opens the writer, then reads and appends (with the printer running):
 * the command's status. *have_printer: the printer started. */
static int open_and_append(producer *p, tarn_deployment *d, uint64_t log_id, const char *star,
                           const char *token, const tarn_writer_options *o, char **files,
                           size_t nfiles, pthread_t *printer, int *have_printer) {
  p->kafka = tarn_kafka_log_is_topic(tarn_deployment_meta(d), log_id) > 0;
  int token_rc = check_token(p, d, log_id, token);
  if (token_rc) {
    fprintf(stderr, "tarn: append: refused: %s\n", tarn_errmsg());
    return token_rc == TARN_EFENCED ? EXIT_TOKEN : tarn_cli_exit_for(token_rc);
  }
  if (open_appender(p, d, log_id, star, o))
    return tarn_cli_fail("append");
  pthread_mutex_lock(&p->mu);
  p->opening = 0; /* from here a signal stops reading and drains */
  pthread_mutex_unlock(&p->mu);
  *have_printer = pthread_create(printer, NULL, printer_main, p) == 0;
  if (*have_printer)
    return read_and_append(p, log_id, files, nfiles);
  fprintf(stderr, "tarn: append: cannot start a thread\n");
  return TARN_EXIT_FAULT;
}

/* After the drain: the counts on stderr (and stdout with --json), and the
 * status they make. */
static int summarize(producer *p, uint64_t log_id, int json, int status) {
  uint64_t nrec = p->tail;
  if (p->stop_sig)
    fprintf(stderr, "tarn: append: stopped by %s after %llu records\n",
            p->stop_sig == SIGINT ? "SIGINT" : "SIGTERM", (unsigned long long)nrec);
  if (p->failed || p->unknown) {
    fprintf(stderr, "tarn: append: %llu of %llu records failed, %llu of unknown outcome\n",
            (unsigned long long)p->failed, (unsigned long long)nrec,
            (unsigned long long)p->unknown);
    if (!status || status == EXIT_TOKEN)
      status = p->refused == p->failed && !p->unknown ? TARN_EXIT_UNAVAIL : TARN_EXIT_FAULT;
  }
  if (p->out_failed && !status)
    status = TARN_EXIT_FAULT;
  if (json && !p->out_failed)
    printf("{\"log_id\":%llu,\"records\":%llu,\"appended\":%llu,\"failed\":%llu,"
           "\"unknown\":%llu}\n",
           (unsigned long long)log_id, (unsigned long long)nrec, (unsigned long long)p->ok,
           (unsigned long long)p->failed, (unsigned long long)p->unknown);
  fflush(stdout);
  return status;
}

/* The end of the run: the drain (with the printer, when it started), the
 * counts, and the writer closed — or, after an abandoned drain, the process
 * ended at once. The command's status. */
static int finish(producer *p, uint64_t log_id, int json, int status, pthread_t *printer,
                  uint64_t drain_ms) {
  int abandoned = 0;
  if (printer) {
    p_seal(p); /* the last records need not wait out the window */
    abandoned = drain(p, drain_ms);
    pthread_join(*printer, NULL);
  }
  status = summarize(p, log_id, json, status);
  if (abandoned) {
    /* the writer still waits on the stores: end without waiting for it; its
     * lease records go with the session */
    fflush(stderr);
    _exit(status);
  }
  /* closing releases the write leases; an express writer first absorbs its
   * acknowledged entries into the index, so `tarn read` finds them */
  const char *closing = p->a && !strcmp(tarn_appender_kind(p->a), "express")
                            ? "append: absorbing the express slots"
                            : "append: releasing the write lease";
  if (p->a && tarn_appender_close(p->a) && !status)
    status = tarn_cli_fail(closing);
  return status;
}

int tarn_cmd_append(int argc, char **argv) {
  tarn_cli_deploy dep = {0};
  tarn_cli_log_target tgt = {0};
  int json = 0, quiet = 0, lendelim = 0, nargs;
  uint64_t max_records = 1u << 18, drain_ms = 30000, budget_ms = 20;
  tarn_writer_options o;
  tarn_writer_options_default(&o);
  const char *star = NULL, *token = NULL;
  const tarn_cli_opt opts[] = {TARN_CLI_OPT_STRING("--star", &star, "a star name"),
                               TARN_CLI_OPT_STRING("--token", &token, "a token"),
                               TARN_CLI_LOG_TARGET_OPTS(&tgt),
                               TARN_CLI_OPT_FLAG("--quiet", &quiet, 1),
                               TARN_CLI_OPT_FLAG("--length-delimited", &lendelim, 1),
                               TARN_CLI_OPT_UINT("--batch-ms", &o.batch_ms, 0, 3600000,
                                                 "a number of ms (0 .. 3600000)", NULL),
                               TARN_CLI_OPT_UINT("--max-object-bytes", &o.max_object_bytes, 1,
                                                 1u << 30, "a number of bytes (1 .. 2^30)", NULL),
                               TARN_CLI_OPT_UINT("--max-in-flight-bytes", &o.max_bytes_in_flight, 1,
                                                 (uint64_t)1 << 40, "a number of bytes (1 .. 2^40)",
                                                 NULL),
                               TARN_CLI_OPT_UINT("--max-in-flight-records", &max_records, 1,
                                                 1u << 26, "a number of records (1 .. 2^26)", NULL),
                               TARN_CLI_OPT_UINT("--drain-timeout-ms", &drain_ms, 0, 86400000,
                                                 "a number of ms (0 .. 86400000)", NULL),
                               TARN_CLI_OPT_UINT("--latency-budget-ms", &budget_ms, 0, 60000,
                                                 "a number of ms (0 .. 60000)", NULL),
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
  /* before any thread starts (the stores', the writer's), so that only the
   * signal thread takes these; they stay blocked until the process ends */
  sigset_t sigs;
  stop_signals(&sigs);
  pthread_sigmask(SIG_BLOCK, &sigs, NULL);
  producer *p = producer_new(max_records, o.max_bytes_in_flight);
  if (!p) {
    fprintf(stderr, "tarn: append: out of memory\n");
    return TARN_EXIT_FAULT;
  }
  p->json = json;
  p->quiet = quiet;
  p->lendelim = lendelim;
  p->budget_ms = budget_ms;
  p->files = nfiles ? files : NULL;
  p->sigs = sigs;
  the_producer = p;
  pthread_t printer, sigthread;
  int status = TARN_EXIT_OK, have_printer = 0;
  /* the signal thread from the start: a signal while the stores are opened
   * ends the process (signal_main) */
  int have_sig = pthread_create(&sigthread, NULL, signal_main, p) == 0;
  tarn_deployment *d = NULL;
  uint64_t log_id = 0;
  if (!have_sig) {
    fprintf(stderr, "tarn: append: cannot start a thread\n");
    status = TARN_EXIT_FAULT;
    goto out;
  }
  if ((status = tarn_cli_deploy_open(&dep, 0, &d)))
    goto out;
  if ((status = tarn_cli_log_target_resolve(&tgt, "append", d, &log_id)))
    goto out;
  status = open_and_append(p, d, log_id, star, token, &o, files, nfiles, &printer, &have_printer);
  status = finish(p, log_id, json, status, have_printer ? &printer : NULL, drain_ms);
out:
  if (d)
    tarn_deployment_close(d);
  if (have_sig) { /* a signal until here stopped nothing, a second one kills */
    pthread_mutex_lock(&p->mu);
    p->finished = 1;
    pthread_mutex_unlock(&p->mu);
    pthread_kill(sigthread, SIGTERM);
    pthread_join(sigthread, NULL);
  }
  producer_free(p);
  the_producer = NULL;
  return status;
}
