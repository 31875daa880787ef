/* tarn read: a log's entries from an offset, optionally following new ones. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/log_cmds.h"
#include "tarn/deployment.h"
#include "tarn/error.h"
#include "tarn/kafka.h"
#include "tarn/key.h"
#include "tarn/reader.h"

static const char usage[] =
    "usage: tarn read (NS/NAME [--partition P] | --log L) [OPTIONS]\n"
    "\n"
    "Prints a log's entries in offset order. Reading starts at the entry that\n"
    "holds --from (which can start before it), or at the trim offset when that\n"
    "is greater; entries below the trim offset are never printed.\n"
    "\n"
    "Options:\n"
    "  --from OFFSET        where to start: a number, 'start' (default) or 'end'\n"
    "  --count N            stop after N entries\n"
    "  --follow             at the end of the log, wait for new entries\n"
    "  --timeout-ms N       with --follow: give up after N ms without a new entry\n"
    "  --format F           raw: each payload and a newline (default);\n"
    "                       hex: OFFSET RECORD_COUNT TIMESTAMP_MS PAYLOAD_HEX;\n"
    "                       json: one object a line with offset, record_count,\n"
    "                       timestamp_ms, cumulative_size, payload (hex);\n"
    "                       kafka: the Kafka records of each entry, its batches\n"
    "                       given their offsets from the entry's (LS-099) and\n"
    "                       decompressed: OFFSET TIMESTAMP key=K value=V\n"
    "                       [headers k=v,...] a line (bytes outside printable\n"
    "                       ASCII as \\xNN, null as -)\n"
    "  --json               with --format kafka: one object a line, {offset,\n"
    "                       timestamp, key, value, headers: [{key, value}],\n"
    "                       entry_offset}; a key or value that is not UTF-8\n"
    "                       goes as key_hex / value_hex\n"
    "  --length-delimited   raw, each payload after its 4-byte BE length\n"
    "\n"
    "%s\n%s\n"
    "Exit status: 0 read to the end, to --count, or --follow timed out; 1 a read\n"
    "failed (e.g. a WAL object is missing or corrupt) or the record is PARQUET\n"
    "and not supported; 2 bad command line; 3 a store could not be reached.\n";

enum { FMT_RAW, FMT_HEX, FMT_JSON, FMT_KAFKA }; /* in the order of --format's choices */

static void put_escaped(const uint8_t *p, int64_t n) {
  if (n < 0) {
    putchar('-');
    return;
  }
  for (int64_t i = 0; i < n; i++) {
    if (p[i] >= 0x20 && p[i] < 0x7f && p[i] != '\\')
      putchar(p[i]);
    else
      printf("\\x%02x", p[i]);
  }
}

/* Sets key (a string, or null) or, when the bytes are not UTF-8, key_hex. */
static void json_bytes(json_t *o, const char *key, const uint8_t *p, int64_t n) {
  if (n < 0) {
    json_object_set_new(o, key, json_null());
    return;
  }
  json_t *s = json_stringn((const char *)p, (size_t)n);
  if (s) {
    json_object_set_new(o, key, s);
  } else {
    char k[32];
    snprintf(k, sizeof k, "%s_hex", key);
    json_object_set_new(o, k, tarn_cli_json_hex(p, (size_t)n));
  }
}

typedef struct kctx {
  int json;
  uint64_t entry_offset;
} kctx;

static int print_record(void *arg, const tarn_kafka_record *r) {
  const kctx *k = arg;
  if (k->json) {
    json_t *o = json_object(), *hs = json_array();
    json_object_set_new(o, "offset", json_integer(r->offset));
    json_object_set_new(o, "timestamp", json_integer(r->timestamp));
    json_bytes(o, "key", r->key, r->key_len);
    json_bytes(o, "value", r->value, r->value_len);
    for (size_t i = 0; i < r->n_headers; i++) {
      json_t *h = json_object();
      json_bytes(h, "key", r->headers[i].key, (int64_t)r->headers[i].key_len);
      json_bytes(h, "value", r->headers[i].value, r->headers[i].value_len);
      json_array_append_new(hs, h);
    }
    json_object_set_new(o, "headers", hs);
    json_object_set_new(o, "entry_offset", json_integer((json_int_t)k->entry_offset));
    char *s = json_dumps(o, JSON_COMPACT);
    if (s)
      puts(s);
    free(s);
    json_decref(o);
    return 0;
  }
  printf("%lld %lld key=", (long long)r->offset, (long long)r->timestamp);
  put_escaped(r->key, r->key_len);
  printf(" value=");
  put_escaped(r->value, r->value_len);
  for (size_t i = 0; i < r->n_headers; i++) {
    printf(i ? "," : " headers ");
    put_escaped(r->headers[i].key, (int64_t)r->headers[i].key_len);
    putchar('=');
    put_escaped(r->headers[i].value, r->headers[i].value_len);
  }
  putchar('\n');
  return 0;
}

static void help(void) { printf(usage, tarn_cli_log_target_help, tarn_cli_deploy_help); }

static int print_entry(const tarn_entry *e, int fmt, int lendelim, int json) {
  if (fmt == FMT_KAFKA) {
    kctx k = {json, e->offset};
    return tarn_kafka_records(e->payload, e->payload_len, (int64_t)e->offset, 0, print_record, &k);
  }
  if (fmt == FMT_RAW) {
    if (lendelim) {
      uint8_t h[4] = {(uint8_t)(e->payload_len >> 24), (uint8_t)(e->payload_len >> 16),
                      (uint8_t)(e->payload_len >> 8), (uint8_t)e->payload_len};
      fwrite(h, 1, 4, stdout);
      fwrite(e->payload, 1, e->payload_len, stdout);
    } else {
      fwrite(e->payload, 1, e->payload_len, stdout);
      putchar('\n');
    }
  } else if (fmt == FMT_HEX) {
    printf("%llu %u %lld ", (unsigned long long)e->offset, e->record_count,
           (long long)e->timestamp_ms);
    tarn_cli_print_hex(stdout, e->payload, e->payload_len, 0);
    putchar('\n');
  } else {
    json_t *j = json_pack(
        "{s:I, s:i, s:I, s:I, s:o}", "offset", (json_int_t)e->offset, "record_count",
        (int)e->record_count, "timestamp_ms", (json_int_t)e->timestamp_ms, "cumulative_size",
        (json_int_t)e->cumulative_size, "payload", tarn_cli_json_hex(e->payload, e->payload_len));
    char *s = json_dumps(j, JSON_COMPACT);
    if (s)
      puts(s);
    free(s);
    json_decref(j);
  }
  return 0;
}

int tarn_cmd_read(int argc, char **argv) {
  tarn_cli_deploy dep = {0};
  tarn_cli_log_target tgt = {0};
  const char *from = "start";
  uint64_t count = 0, timeout = 0;
  int have_count = 0, follow = 0, have_timeout = 0, fmt = FMT_RAW, lendelim = 0, nargs, json = 0;
  const tarn_cli_opt opts[] = {
      TARN_CLI_LOG_TARGET_OPTS(&tgt),
      TARN_CLI_OPT_FLAG("--follow", &follow, 1),
      TARN_CLI_OPT_FLAG("--length-delimited", &lendelim, 1),
      TARN_CLI_OPT_STRING("--from", &from, "an offset, 'start' or 'end'"),
      TARN_CLI_OPT_UINT("--count", &count, 0, UINT64_MAX, "a number", &have_count),
      TARN_CLI_OPT_UINT("--timeout-ms", &timeout, 0, INT32_MAX, "a number of ms", &have_timeout),
      TARN_CLI_OPT_CHOICE("--format", &fmt, "raw|hex|json|kafka", "raw, hex, json or kafka"),
      TARN_CLI_OPT_FLAG("--json", &json, 1),
      {0}};
  const tarn_cli_verb v = {"read", help, opts, &dep, NULL, 1, NULL};
  int r = tarn_cli_parse(&v, argc, argv, &nargs);
  if (r != TARN_CLI_GO_ON)
    return r;
  tgt.stream = nargs ? argv[1] : NULL;
  if (lendelim && fmt != FMT_RAW)
    return tarn_cli_usage_error("read", "--length-delimited goes with --format raw");
  if (json && fmt != FMT_KAFKA)
    return tarn_cli_usage_error("read", "--json goes with --format kafka (else use --format json)");
  if (have_timeout && !follow)
    return tarn_cli_usage_error("read", "--timeout-ms goes with --follow");
  uint64_t start = 0;
  int from_end = strcmp(from, "end") == 0;
  if (!from_end && strcmp(from, "start") != 0 && tarn_cli_parse_u64(from, TARN_KEY_MAX, &start))
    return tarn_cli_usage_error("read", "--from needs an offset, 'start' or 'end', not '%s'", from);
  tarn_deployment *d;
  if ((r = tarn_cli_deploy_open(&dep, 0, &d)))
    return r;
  uint64_t log_id;
  if ((r = tarn_cli_log_target_resolve(&tgt, "read", d, &log_id))) {
    tarn_deployment_close(d);
    return r;
  }
  tarn_reader *rd;
  /* --format kafka: the stored bytes, checked as the writer checks them;
   * tarn_kafka_records assigns the batches their offsets (LS-099) */
  int rc = tarn_reader_open(tarn_deployment_meta(d), tarn_deployment_wal(d),
                            tarn_deployment_compacted(d), NULL, &rd);
  if (!rc && from_end)
    rc = tarn_reader_end_offset(rd, log_id, &start, NULL);
  tarn_log_iter *it = NULL;
  if (!rc)
    rc = tarn_log_iter_open(rd, log_id, start, &it);
  int status = rc ? tarn_cli_fail("read") : TARN_EXIT_OK;
  if (follow)
    signal(SIGPIPE, SIG_DFL);
  for (uint64_t n = 0; !status && (!have_count || n < count); n++) {
    tarn_entry e;
    rc = tarn_log_iter_next(it, &e, follow ? (have_timeout ? (int)timeout : -1) : 0);
    if (rc == TARN_EEND || rc == TARN_ETIMEDOUT)
      break;
    if (rc) {
      fflush(stdout);
      fprintf(stderr, "tarn: read: log %llu at offset %llu: %s\n", (unsigned long long)log_id,
              (unsigned long long)tarn_log_iter_position(it), tarn_errmsg());
      status = tarn_cli_exit_for(rc);
      break;
    }
    if ((rc = print_entry(&e, fmt, lendelim, json))) {
      fflush(stdout);
      fprintf(stderr, "tarn: read: log %llu, entry at %llu: %s\n", (unsigned long long)log_id,
              (unsigned long long)e.offset, tarn_errmsg());
      status = tarn_cli_exit_for(rc);
      break;
    }
    if (follow)
      fflush(stdout);
  }
  fflush(stdout);
  tarn_log_iter_close(it);
  tarn_reader_close(rd);
  tarn_deployment_close(d);
  return status;
}
