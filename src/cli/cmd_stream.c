/* tarn stream — create, list, describe, drop and grow streams. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "tarn/catalog.h"
#include "tarn/deployment.h"
#include "tarn/error.h"
#include "tarn/express.h"
#include "tarn/retention.h"
#include "tarn/token.h"

#define EXIT_STATUS                                                                                \
  "\nExit status: 0 done; 1 the operation failed (the message says why); 2 bad\n"                  \
  "command line; 3 the metadata store could not be reached.\n"

/* The parsed command line shared by the sub-commands. */
typedef struct args {
  tarn_cli_deploy d;
  int json;
  const char *ident;   /* NS/NAME */
  uint64_t partitions; /* create */
  int have_count;
  uint64_t count;    /* add-partitions */
  uint64_t drain_ms; /* drop */
  tarn_stream_prop *props;
  size_t n_props;
  const char *token; /* fence */
} args;

/* --property KEY=VALUE, repeatable: each one adds a property. */
static int add_property(void *ctx, const char *v) {
  args *a = ctx;
  return tarn_cli_prop_add(&a->props, &a->n_props, v);
}

/* --class standard|express: the stream property naming the storage class. */
static int set_class(void *ctx, const char *v) {
  if (strcmp(v, TARN_STREAM_CLASS_STANDARD) && strcmp(v, TARN_STREAM_CLASS_EXPRESS))
    return -1;
  char kv[64];
  snprintf(kv, sizeof kv, "%s=%s", TARN_STREAM_CLASS_PROP, v);
  return add_property(ctx, kv);
}

/* --token-mode any|fenced: the stream property choosing the fencing-token
 * policy (tarn/token.h). */
static int set_token_mode(void *ctx, const char *v) {
  if (tarn_token_mode_check(v))
    return -1;
  char kv[64];
  snprintf(kv, sizeof kv, "%s=%s", TARN_STREAM_TOKEN_MODE_PROP, v);
  return add_property(ctx, kv);
}

/* --retention-ms MS, --retention-bytes N: the retention properties
 * (tarn/retention.h), checked as tarn serve's retention job reads them. */
static int set_retention(void *ctx, const char *prop, const char *v) {
  int64_t n;
  if (tarn_retention_parse(prop, v, &n))
    return -1;
  char kv[96];
  snprintf(kv, sizeof kv, "%s=%lld", prop, (long long)n);
  return add_property(ctx, kv);
}
static int set_retention_ms(void *ctx, const char *v) {
  return set_retention(ctx, TARN_PROP_RETENTION_MS, v);
}
static int set_retention_bytes(void *ctx, const char *v) {
  return set_retention(ctx, TARN_PROP_RETENTION_BYTES, v);
}

/* Parses argv of sub-command cmd, which takes the options of opts (the lines
 * of the table below that it names, e.g. "--partitions --property").
 * want_ident: one NS/NAME is required. Returns TARN_CLI_GO_ON, else the exit
 * status. */
static int parse(const char *cmd, int argc, char **argv, int want_ident, const char *opts,
                 void (*help)(void), args *a) {
  memset(a, 0, sizeof *a);
  a->partitions = 1;
  const tarn_cli_opt all[] = {
      TARN_CLI_OPT_UINT("--partitions", &a->partitions, 1, TARN_STREAM_PARTITIONS_MAX, NULL, NULL),
      TARN_CLI_OPT_CALL("--property", add_property, a, "KEY=VALUE"),
      TARN_CLI_OPT_CALL("--class", set_class, a, "standard or express"),
      TARN_CLI_OPT_CALL("--token-mode", set_token_mode, a, "any or fenced"),
      TARN_CLI_OPT_CALL("--retention-ms", set_retention_ms, a, "a number of ms >= -1"),
      TARN_CLI_OPT_CALL("--retention-bytes", set_retention_bytes, a, "a number of bytes >= -1"),
      TARN_CLI_OPT_STRING("--token", &a->token, "a token"),
      TARN_CLI_OPT_UINT("--count", &a->count, 1, TARN_STREAM_PARTITIONS_MAX, NULL, &a->have_count),
      TARN_CLI_OPT_UINT("--drain-timeout-ms", &a->drain_ms, 0, 86400000, "a number of ms", NULL)};
  tarn_cli_opt mine[sizeof all / sizeof all[0] + 1];
  tarn_cli_opts_pick(all, sizeof all / sizeof all[0], opts, mine);
  const tarn_cli_verb v = {cmd, help, mine, &a->d, &a->json, want_ident, NULL};
  int nargs, ex = tarn_cli_parse(&v, argc, argv, &nargs);
  if (ex != TARN_CLI_GO_ON)
    return ex;
  if (want_ident && !nargs)
    return tarn_cli_usage_error(cmd, "which stream? Give NAMESPACE/NAME (or NAME for "
                                     "namespace '" TARN_DEFAULT_NAMESPACE "')");
  a->ident = nargs ? argv[1] : NULL;
  return TARN_CLI_GO_ON;
}

static void args_free(args *a) { tarn_cli_props_free(a->props, a->n_props); }

static json_t *stream_json(const tarn_catalog_record *s) {
  json_t *o = json_object(), *logs = json_array(), *props = json_object();
  json_object_set_new(o, "namespace", json_string(s->ns));
  json_object_set_new(o, "name", json_string(s->name));
  json_object_set_new(o, "state",
                      json_string(s->state == TARN_STREAM_DROPPING ? "dropping" : "active"));
  json_object_set_new(o, "created_ms", json_integer(s->time_ms));
  for (size_t i = 0; i < s->n_logs; i++)
    json_array_append_new(logs, json_integer((json_int_t)s->logs[i]));
  json_object_set_new(o, "log_ids", logs);
  for (size_t i = 0; i < s->n_props; i++)
    json_object_set_new(props, s->props[i].key, json_string(s->props[i].value));
  json_object_set_new(o, "properties", props);
  return o;
}

static void print_logs(const tarn_catalog_record *s) {
  for (size_t i = 0; i < s->n_logs; i++)
    printf("%s%llu", i ? " " : "", (unsigned long long)s->logs[i]);
}

static void finish(args *a, tarn_deployment *dep, tarn_catalog *cat, char *ns, char *name) {
  tarn_cli_catalog_close(dep, cat);
  free(ns), free(name);
  args_free(a);
}

/* ---- create -------------------------------------------------------------- */

static void create_help(void) {
  printf("usage: tarn stream create NAMESPACE/NAME [--partitions N] [--property KEY=VALUE]...\n"
         "                          [--class standard|express] [--token-mode any|fenced]\n"
         "                          [--retention-ms MS] [--retention-bytes N]\n"
         "                          [DEPLOYMENT FLAGS] [--json]\n"
         "\n"
         "Creates a stream of N partitions (default 1), each a new log with a log ID no\n"
         "log has ever had. NAME alone means namespace '" TARN_DEFAULT_NAMESPACE
         "'. Namespace and name:\n"
         "1..%d bytes of printable UTF-8 without '/'. A name that was dropped cannot be\n"
         "created again.\n"
         "\n"
         "Options:\n"
         "  --partitions N         number of partitions (logs), 1..%d\n"
         "  --property KEY=VALUE   a stream property; repeat for more\n"
         "  --class express        the express storage class (property class=express):\n"
         "                         appends acknowledged at W copies in the deployment's\n"
         "                         express buckets (docs/express.md)\n"
         "  --token-mode MODE      fencing tokens (property token_mode): any (default:\n"
         "                         cooperative, a producer may give none) or fenced (every\n"
         "                         producer must give the token installed by tarn stream\n"
         "                         fence)\n"
         "  --retention-ms MS      keep entries for MS ms (property retention.ms; -1 or\n"
         "                         absent: forever): tarn serve's retention job trims\n"
         "                         each log once its entries are provably that old\n"
         "  --retention-bytes N    keep at most about N bytes per partition (property\n"
         "                         retention.bytes): whole entries go from the oldest\n"
         "                         while the rest still holds N bytes (docs/log.md\n"
         "                         \"Retention\")\n"
         "  --json                 print the stream as JSON\n"
         "\n%s" EXIT_STATUS,
         TARN_STREAM_NAME_MAX, TARN_STREAM_PARTITIONS_MAX, tarn_cli_deploy_help);
}

static int cmd_create(int argc, char **argv) {
  args a;
  int ex = parse("stream create", argc, argv, 1,
                 "--partitions --property --class --token-mode --retention-ms --retention-bytes",
                 create_help, &a);
  if (ex >= 0)
    return args_free(&a), ex;
  if (a.token) { /* picked by its prefix "--token-mode": fence's option, not create's */
    args_free(&a);
    return tarn_cli_usage_error("stream create", "--token is tarn stream fence's option");
  }
  tarn_deployment *dep;
  tarn_catalog *cat;
  char *ns, *name;
  if ((ex = tarn_cli_stream_open("stream create", &a.d, a.ident, &dep, &cat, &ns, &name)))
    return args_free(&a), ex;
  tarn_catalog_record s;
  tarn_catalog_record want = {.n_props = a.n_props, .props = a.props};
  /* an express stream needs the deployment's bucket set (tarn init) */
  int rc =
      tarn_stream_is_express(&want) ? tarn_express_check_deployment(tarn_deployment_meta(dep)) : 0;
  if (!rc)
    rc = tarn_catalog_create_stream(cat, ns, name, (uint32_t)a.partitions, a.props, a.n_props, &s);
  if (rc) {
    ex = tarn_cli_fail_rc(rc, "stream create");
  } else {
    if (a.json) {
      ex = tarn_cli_print_json(stream_json(&s));
    } else {
      printf("created stream %s/%s: %zu partition(s), log IDs ", ns, name, s.n_logs);
      print_logs(&s);
      printf("\n");
      ex = 0;
    }
    tarn_catalog_record_free(&s);
  }
  finish(&a, dep, cat, ns, name);
  return ex;
}

/* ---- list ---------------------------------------------------------------- */

static void list_help(void) {
  printf("usage: tarn stream list [DEPLOYMENT FLAGS] [--json]\n"
         "\n"
         "Lists the streams of the deployment: namespace, name, partitions, state\n"
         "(active, or dropping while a drop waits for writers). Dropped streams are not\n"
         "listed.\n"
         "\n"
         "Options:\n"
         "  --json   a JSON array of {namespace, name, state, created_ms, log_ids,\n"
         "           properties}\n"
         "\n%s" EXIT_STATUS,
         tarn_cli_deploy_help);
}

static int cmd_list(int argc, char **argv) {
  args a;
  int ex = parse("stream list", argc, argv, 0, "", list_help, &a);
  if (ex >= 0)
    return args_free(&a), ex;
  tarn_deployment *dep;
  tarn_catalog *cat;
  char *ns, *name;
  if ((ex = tarn_cli_stream_open("stream list", &a.d, a.ident, &dep, &cat, &ns, &name)))
    return args_free(&a), ex;
  tarn_catalog_record *v;
  size_t n;
  int rc = tarn_catalog_list_streams(cat, &v, &n);
  if (rc) {
    ex = tarn_cli_fail_rc(rc, "stream list");
  } else {
    if (a.json) {
      json_t *arr = json_array();
      for (size_t i = 0; i < n; i++)
        json_array_append_new(arr, stream_json(&v[i]));
      ex = tarn_cli_print_json(arr);
    } else {
      printf("%-20s %-40s %-10s %s\n", "NAMESPACE", "NAME", "PARTITIONS", "STATE");
      for (size_t i = 0; i < n; i++)
        printf("%-20s %-40s %-10zu %s\n", v[i].ns, v[i].name, v[i].n_logs,
               v[i].state == TARN_STREAM_DROPPING ? "dropping" : "active");
    }
    tarn_catalog_records_free(v, n);
  }
  finish(&a, dep, cat, ns, name);
  return ex;
}

/* ---- describe ------------------------------------------------------------ */

static void describe_help(void) {
  printf("usage: tarn stream describe NAMESPACE/NAME [DEPLOYMENT FLAGS] [--json]\n"
         "\n"
         "Shows a stream: state, properties, and per partition its log ID, first offset\n"
         "(the first readable one), end offset (where the next append starts) and trim\n"
         "marker. Reads only.\n"
         "\n"
         "Options:\n"
         "  --json   {namespace, name, state, created_ms, log_ids, properties,\n"
         "           partitions: [{partition, log_id, first_offset, end_offset,\n"
         "           trim_marker}]}\n"
         "\n%s" EXIT_STATUS,
         tarn_cli_deploy_help);
}

static int cmd_describe(int argc, char **argv) {
  args a;
  int ex = parse("stream describe", argc, argv, 1, "", describe_help, &a);
  if (ex >= 0)
    return args_free(&a), ex;
  tarn_deployment *dep;
  tarn_catalog *cat;
  char *ns, *name;
  if ((ex = tarn_cli_stream_open("stream describe", &a.d, a.ident, &dep, &cat, &ns, &name)))
    return args_free(&a), ex;
  tarn_catalog_record s;
  json_t *parts = NULL;
  int rc = tarn_catalog_open_stream(cat, ns, name, &s);
  if (!rc) {
    rc = tarn_cli_partitions_json(dep, &s, &parts);
    if (rc) {
      tarn_catalog_record_free(&s);
    }
  }
  if (rc) {
    ex = tarn_cli_fail_rc(rc, "stream describe");
  } else {
    if (a.json) {
      json_t *o = stream_json(&s);
      json_object_set_new(o, "partitions", parts);
      ex = tarn_cli_print_json(o);
    } else {
      printf("stream      %s/%s\nstate       %s\ncreated_ms  %lld\nproperties ", s.ns, s.name,
             s.state == TARN_STREAM_DROPPING ? "dropping" : "active", (long long)s.time_ms);
      if (!s.n_props)
        printf(" (none)");
      for (size_t i = 0; i < s.n_props; i++)
        printf("%s%s=%s", i ? "\n            " : " ", s.props[i].key, s.props[i].value);
      printf("\npartitions  %zu\n\n", s.n_logs);
      tarn_cli_partitions_print(parts);
      json_decref(parts);
    }
    tarn_catalog_record_free(&s);
  }
  finish(&a, dep, cat, ns, name);
  return ex;
}

/* ---- drop ---------------------------------------------------------------- */

static void drop_help(void) {
  printf("usage: tarn stream drop NAMESPACE/NAME [--drain-timeout-ms MS] [DEPLOYMENT FLAGS]\n"
         "                        [--json]\n"
         "\n"
         "Drops a stream: records a permanent tombstone for its name (the name can never\n"
         "be created again; this happens even if no such stream exists), then deletes\n"
         "each log: fences it (no new writers), waits for the writers holding leases to\n"
         "finish, and removes its index records. Objects are left to reclamation.\n"
         "If writers still hold leases when the wait ends, the logs stay fenced and\n"
         "unchanged, the stream stays 'dropping', and the command fails (exit 1): run it\n"
         "again once the writers have stopped.\n"
         "\n"
         "Options:\n"
         "  --drain-timeout-ms MS   how long to wait for leases (default %d)\n"
         "  --json                  print {namespace, name, existed}\n"
         "\n%s" EXIT_STATUS,
         TARN_DRAIN_TIMEOUT_MS, tarn_cli_deploy_help);
}

static int cmd_drop(int argc, char **argv) {
  args a;
  int ex = parse("stream drop", argc, argv, 1, "--drain-timeout-ms", drop_help, &a);
  if (ex >= 0)
    return args_free(&a), ex;
  tarn_deployment *dep;
  char *ns, *name;
  tarn_catalog *cat0;
  if ((ex = tarn_cli_stream_open("stream drop", &a.d, a.ident, &dep, &cat0, &ns, &name)))
    return args_free(&a), ex;
  /* The drain timeout is an option of the catalog handle. */
  tarn_catalog_close(cat0);
  tarn_catalog_options o = {.drain_timeout_ms = (int)a.drain_ms};
  tarn_catalog *cat;
  int existed = 0;
  int rc = tarn_catalog_open(tarn_deployment_meta(dep), &o, &cat);
  if (!rc)
    rc = tarn_catalog_drop_stream(cat, ns, name, &existed);
  if (rc) {
    ex = tarn_cli_fail_rc(rc, "stream drop");
  } else if (a.json) {
    json_t *j = json_object();
    json_object_set_new(j, "namespace", json_string(ns));
    json_object_set_new(j, "name", json_string(name));
    json_object_set_new(j, "existed", json_boolean(existed));
    ex = tarn_cli_print_json(j);
  } else {
    if (existed)
      printf("dropped stream %s/%s; its logs are fenced and their index records removed\n", ns,
             name);
    else
      printf("no stream %s/%s exists; its name is now tombstoned and cannot be created\n", ns,
             name);
    ex = 0;
  }
  finish(&a, dep, cat, ns, name);
  return ex;
}

/* ---- add-partitions ------------------------------------------------------ */

static void add_help(void) {
  printf("usage: tarn stream add-partitions NAMESPACE/NAME --count N [DEPLOYMENT FLAGS]\n"
         "                                  [--json]\n"
         "\n"
         "Adds N partitions to a stream: creates their logs first, then publishes the\n"
         "whole new layout at once. Existing partitions keep their logs and positions.\n"
         "\n"
         "Options:\n"
         "  --count N   partitions to add (required)\n"
         "  --json      print the stream as JSON\n"
         "\n%s" EXIT_STATUS,
         tarn_cli_deploy_help);
}

static int cmd_add(int argc, char **argv) {
  args a;
  int ex = parse("stream add-partitions", argc, argv, 1, "--count", add_help, &a);
  if (ex >= 0)
    return args_free(&a), ex;
  if (!a.have_count) {
    args_free(&a);
    return tarn_cli_usage_error("stream add-partitions", "--count N is required");
  }
  tarn_deployment *dep;
  tarn_catalog *cat;
  char *ns, *name;
  if ((ex = tarn_cli_stream_open("stream add-partitions", &a.d, a.ident, &dep, &cat, &ns, &name)))
    return args_free(&a), ex;
  tarn_catalog_record s;
  int rc = tarn_catalog_add_partitions(cat, ns, name, (uint32_t)a.count, &s);
  if (rc) {
    ex = tarn_cli_fail_rc(rc, "stream add-partitions");
  } else {
    if (a.json) {
      ex = tarn_cli_print_json(stream_json(&s));
    } else {
      printf("stream %s/%s now has %zu partitions, log IDs ", ns, name, s.n_logs);
      print_logs(&s);
      printf("\n");
      ex = 0;
    }
    tarn_catalog_record_free(&s);
  }
  finish(&a, dep, cat, ns, name);
  return ex;
}

/* ---- fence --------------------------------------------------------------- */

static void fence_help(void) {
  printf("usage: tarn stream fence NAMESPACE/NAME --token T [DEPLOYMENT FLAGS] [--json]\n"
         "\n"
         "Installs producer token T as the stream's fencing token (a compare-and-set on\n"
         "the record %s /token/NS/NAME; the last install wins). From then on an open of\n"
         "one of the stream's logs for writing (tarn append --token, a tarn serve node)\n"
         "compares the token it was given with T by exact equality: a holder of the\n"
         "previous token is refused (tarn append: exit 4) and superseded. Whether a\n"
         "producer without a token may write is the stream's token mode (tarn stream\n"
         "create --token-mode any|fenced). The token is policy; what locks a stale\n"
         "express writer out of the storage is its epoch's fence (docs/express.md).\n"
         "\n"
         "Options:\n"
         "  --token T   the token: 1..%d bytes\n"
         "  --json      {\"namespace\",\"name\",\"token\",\"previous\",\"mode\"}\n"
         "\n%s" EXIT_STATUS,
         TARN_TOKEN_PARTITION, TARN_TOKEN_MAX, tarn_cli_deploy_help);
}

static int cmd_fence(int argc, char **argv) {
  args a;
  int ex = parse("stream fence", argc, argv, 1, "--token", fence_help, &a);
  if (ex >= 0)
    return args_free(&a), ex;
  if (!a.token || !*a.token || strlen(a.token) > TARN_TOKEN_MAX) {
    args_free(&a);
    return tarn_cli_usage_error("stream fence", "--token T (1..256 bytes) is required");
  }
  tarn_deployment *dep;
  tarn_catalog *cat;
  char *ns, *name;
  if ((ex = tarn_cli_stream_open("stream fence", &a.d, a.ident, &dep, &cat, &ns, &name)))
    return args_free(&a), ex;
  tarn_catalog_record s;
  char *prev = NULL;
  int rc = tarn_catalog_open_stream(cat, ns, name, &s);
  if (!rc) {
    rc = tarn_stream_token_install(tarn_deployment_meta(dep), ns, name, a.token, &prev);
    const char *mode = tarn_stream_token_mode(&s) == TARN_TOKEN_FENCED ? TARN_TOKEN_MODE_FENCED
                                                                       : TARN_TOKEN_MODE_ANY;
    if (rc) {
      ex = tarn_cli_fail_rc(rc, "stream fence");
    } else if (a.json) {
      json_t *o = json_pack("{s:s,s:s,s:s,s:s?,s:s}", "namespace", ns, "name", name, "token",
                            a.token, "previous", prev, "mode", mode);
      ex = tarn_cli_print_json(o);
    } else {
      printf("stream %s/%s: token installed (mode %s)%s%s\n", ns, name, mode,
             prev ? "; superseded token " : "", prev ? prev : "");
      ex = 0;
    }
    tarn_catalog_record_free(&s);
  } else {
    ex = tarn_cli_fail_rc(rc, "stream fence");
  }
  free(prev);
  finish(&a, dep, cat, ns, name);
  return ex;
}

static const tarn_cli_cmd subs[] = {
    {"create", "create a stream of N partitions", cmd_create},
    {"list", "list the streams", cmd_list},
    {"describe", "show a stream's layout, properties and offsets", cmd_describe},
    {"drop", "drop a stream: tombstone its name, delete its logs", cmd_drop},
    {"add-partitions", "add partitions (logs) to a stream", cmd_add},
    {"fence", "install a producer's fencing token", cmd_fence},
    {NULL, NULL, NULL}};

static const char intro[] =
    "usage: tarn stream COMMAND [ARGS]\n"
    "\n"
    "Manages the streams of a deployment. A stream, named NAMESPACE/NAME (NAME alone\n"
    "means namespace '" TARN_DEFAULT_NAMESPACE
    "'), has one or more partitions, each a log.\n" EXIT_STATUS;

int tarn_cmd_stream(int argc, char **argv) {
  return tarn_cli_dispatch("tarn stream", subs, argc, argv, intro);
}
