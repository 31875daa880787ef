/* Shared pieces of the tarn command: exit codes, option helpers, output. */
#ifndef TARN_CLI_H
#define TARN_CLI_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

/* Exit codes, documented in `tarn --help` and docs/cli.md. */
enum {
  TARN_EXIT_OK = 0,
  TARN_EXIT_FAULT = 1,  /* the input is bad, or the operation failed */
  TARN_EXIT_USAGE = 2,  /* the command line is wrong */
  TARN_EXIT_UNAVAIL = 3 /* a store could not be reached or refused tarn */
};

/* A sub-command: name, one-line summary, entry point. */
typedef struct tarn_cli_cmd {
  const char *name;
  const char *summary;
  int (*run)(int argc, char **argv);
} tarn_cli_cmd;

/* Prints "tarn: <what>: <tarn_errmsg()>" to stderr, returns TARN_EXIT_FAULT. */
int tarn_cli_fail(const char *what);
/* Prints "tarn: <message>" and a hint to run --help; returns TARN_EXIT_USAGE. */
/* A Kafka SASL mechanism word ("plain", "scram-sha-256") ORed into
 * *(int *)ctx; TARN_EINVAL for another (a TARN_CLI_OPT_CALL option). */
int tarn_cli_sasl_mechanism_option(void *ctx, const char *v);
int tarn_cli_usage_error(const char *cmd, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Reads a whole file ("-" is stdin). The caller frees *out. Sets tarn_errmsg. */
int tarn_cli_read_file(const char *path, uint8_t **out, size_t *len);
/* Parses hex, ignoring spaces, tabs, newlines and a leading 0x. Caller frees. */
int tarn_cli_parse_hex(const char *s, uint8_t **out, size_t *len);
/* Writes bytes as lower-case hex, grouped in 4-byte words when grouped != 0. */
void tarn_cli_print_hex(FILE *f, const uint8_t *p, size_t n, int grouped);
/* Returns a new JSON string of lower-case hex; NULL on allocation failure. */
json_t *tarn_cli_json_hex(const uint8_t *p, size_t n);
/* Prints a JSON value (indented) and a newline to stdout, and releases it. */
int tarn_cli_print_json(json_t *v);

/* Parses a non-negative decimal int64 (an offset, a count); -1 if s is not one. */
int tarn_cli_parse_i64(const char *s, int64_t *v);

/* True when argv holds the flag exactly (e.g. "--json"). Verbs parse their
 * command line with tarn_cli_parse instead. */
int tarn_cli_has_flag(int argc, char **argv, const char *flag);

/* Looks a sub-command up by name and runs it; prints the list on --help. */
int tarn_cli_dispatch(const char *prog, const tarn_cli_cmd *cmds, int argc, char **argv,
                      const char *intro);

/* ---- deployment flags (src/cli/cli_deploy.c), shared by every verb that
 * opens the stores ------------------------------------------------------- */

/* Forward declaration (tarn/deployment.h). */
struct tarn_deployment;

/* --home DIR, --meta URI, --wal URI, --compacted URI; unset ones fall back to
 * TARN_META / TARN_WAL / TARN_COMPACTED, then TARN_HOME (or .tarn). */
typedef struct tarn_cli_deploy {
  const char *home, *meta, *wal, *compacted;
} tarn_cli_deploy;

/* The help lines of those flags and variables, for a verb's --help. */
extern const char tarn_cli_deploy_help[];

/* Resolves the flags with the environment and opens the deployment (create:
 * make local directories first, as `tarn init` does). On failure prints
 * "tarn: <what failed>; <what to do>" and returns TARN_EXIT_UNAVAIL when a
 * store cannot be reached, else TARN_EXIT_FAULT. */
int tarn_cli_deploy_open(const tarn_cli_deploy *d, int create, struct tarn_deployment **out);

/* LS-085, LS-086: the start-up check of every verb that writes, compacts or
 * reclaims (docs/compaction.md "Grace arithmetic"): the deployment's timing
 * record (tarn/timing.h) with *wal_grace_ms put in when grace_set, else
 * *wal_grace_ms (may be NULL) gets the record's. A refused combination prints
 * "tarn: VERB: refused: ..." and gives TARN_EXIT_FAULT. */
int tarn_cli_timing_check(struct tarn_deployment *dep, const char *verb, int grace_set,
                          int64_t *wal_grace_ms);

/* The exit status for a libtarn error code: TARN_EXIT_UNAVAIL for
 * TARN_EUNAVAIL and TARN_EAUTH (a store refused tarn's credentials),
 * TARN_EXIT_FAULT otherwise (0 for 0). */
int tarn_cli_exit_for(int rc);

/* ---- catalog helpers (src/cli/cli_catalog.c) ---------------------------- */

struct tarn_catalog;
struct tarn_catalog_record;

/* Opens the deployment and its catalog, and checks `tarn init` was run. On
 * failure prints why and returns the exit status (see tarn_cli_deploy_open). */
int tarn_cli_catalog_open(const tarn_cli_deploy *d, struct tarn_deployment **dep,
                          struct tarn_catalog **cat);
void tarn_cli_catalog_close(struct tarn_deployment *dep, struct tarn_catalog *cat);
/* Splits ident, NS/NAME or NAME (a usage error of verb cmd if it is neither;
 * NULL: no stream, *ns = *name = NULL), then opens as tarn_cli_catalog_open.
 * Returns TARN_EXIT_OK with *ns and *name to free, else the exit status with
 * nothing left to free. */
int tarn_cli_stream_open(const char *cmd, const tarn_cli_deploy *d, const char *ident,
                         struct tarn_deployment **dep, struct tarn_catalog **cat, char **ns,
                         char **name);

/* Adds the KEY=VALUE of kv to the array *v of *n properties (--property,
 * --config): 0, or -1 when kv is not KEY=VALUE. Free with tarn_cli_props_free. */
struct tarn_stream_prop;
int tarn_cli_prop_add(struct tarn_stream_prop **v, size_t *n, const char *kv);
void tarn_cli_props_free(struct tarn_stream_prop *v, size_t n);

/* Prints "tarn: <what>: <tarn_errmsg()>" and returns tarn_cli_exit_for(rc). */
int tarn_cli_fail_rc(int rc, const char *what);

/* Parses a decimal number in 0..max (no sign, no junk): 0, or -1. */
int tarn_cli_parse_u64(const char *s, uint64_t max, uint64_t *out);

/* The per-partition state of a stream: partition, log_id, first_offset,
 * end_offset, trim_marker (JSON array), read from the metadata store. */
int tarn_cli_partitions_json(struct tarn_deployment *dep, const struct tarn_catalog_record *s,
                             json_t **out);
/* The same as a table on stdout. */
void tarn_cli_partitions_print(json_t *parts);

/* ---- option parsing (src/cli/cli_options.c) ---------------------------- */

/* What an option takes and how its value is stored in *out. */
typedef enum tarn_cli_opt_kind {
  TARN_CLI_FLAG,   /* no value; *(int *)out = set */
  TARN_CLI_STRING, /* *(const char **)out = the value */
  TARN_CLI_UINT,   /* a decimal number in min..max, into an integer of size bytes (4 or 8;
                    * max must fit its type); *seen = 1 when seen is set */
  TARN_CLI_CHOICE, /* *(int *)out = the index of the value among choices ("raw|hex|json") */
  TARN_CLI_CALL    /* call(out, value): 0 taken, non-zero not a valid value (repeatable
                    * options that accumulate, values that need their own check) */
} tarn_cli_opt_kind;

/* One line of a verb's option table; the table ends with {0}. */
typedef struct tarn_cli_opt {
  const char *name; /* "--through" */
  tarn_cli_opt_kind kind;
  void *out;
  const char *what; /* the value, for "--through needs <what>[, not 'x']";
                     * NULL: "a value", or "a number from MIN to MAX" */
  size_t size;
  uint64_t min, max;
  int *seen;
  int set;
  const char *choices;
  int (*call)(void *out, const char *value);
} tarn_cli_opt;

/* The checks on out's type catch a table entry pointing at the wrong variable. */
#define TARN_CLI_OPT_FLAG(n, p, v)                                                                 \
  { .name = (n), .kind = TARN_CLI_FLAG, .out = (1 ? (p) : (int *)0), .set = (v) }
#define TARN_CLI_OPT_STRING(n, p, w)                                                               \
  { .name = (n), .kind = TARN_CLI_STRING, .out = (1 ? (p) : (const char **)0), .what = (w) }
#define TARN_CLI_OPT_UINT(n, p, lo, hi, w, s)                                                      \
  {                                                                                                \
    .name = (n), .kind = TARN_CLI_UINT, .out = (p), .size = sizeof *(p), .min = (lo), .max = (hi), \
    .what = (w), .seen = (s)                                                                       \
  }
#define TARN_CLI_OPT_CHOICE(n, p, c, w)                                                            \
  { .name = (n), .kind = TARN_CLI_CHOICE, .out = (1 ? (p) : (int *)0), .choices = (c), .what = (w) }
#define TARN_CLI_OPT_CALL(n, f, ctx, w)                                                            \
  { .name = (n), .kind = TARN_CLI_CALL, .out = (ctx), .call = (f), .what = (w) }

/* A verb's command line. */
typedef struct tarn_cli_verb {
  const char *name;         /* as in messages and "Run 'tarn NAME --help'": "stream create" */
  void (*help)(void);       /* prints the verb's --help to stdout */
  const tarn_cli_opt *opts; /* the verb's own options, or NULL */
  tarn_cli_deploy *deploy;  /* set: takes the deployment flags (--home ...), stored here */
  int *json;                /* set: takes --json, which sets *json = 1 */
  int max_args;             /* positional arguments it takes; -1: any number */
  const char *usage;        /* the --help text, printed as it is, when help is NULL */
} tarn_cli_verb;

#define TARN_CLI_GO_ON (-1)

/* Parses argv[1..argc) left to right: --help or -h prints the help and returns
 * TARN_EXIT_OK; an unknown option, a missing or bad value, or one positional
 * argument too many prints the usage error and returns TARN_EXIT_USAGE.
 * Otherwise returns TARN_CLI_GO_ON with the positional arguments moved, in
 * order, to argv[1..*nargs]. A value option takes "--opt V" or "--opt=V"; an
 * option given twice keeps the last value (TARN_CLI_CALL ones see each). */
int tarn_cli_parse(const tarn_cli_verb *v, int argc, char **argv, int *nargs);

/* Copies the lines of all[0..n) whose names appear in names ("--a --b") to
 * out (room for n + 1), ended by {0}: sub-commands sharing one table. */
size_t tarn_cli_opts_pick(const tarn_cli_opt *all, size_t n, const char *names, tarn_cli_opt *out);

/* Top-level verbs. */
int tarn_cmd_inspect(int argc, char **argv);
int tarn_cmd_init(int argc, char **argv);
int tarn_cmd_stream(int argc, char **argv);
int tarn_cmd_topic(int argc, char **argv);
int tarn_cmd_kafka(int argc, char **argv);
int tarn_cmd_trim(int argc, char **argv);
int tarn_cmd_offsets(int argc, char **argv);
int tarn_cmd_fsck(int argc, char **argv);
int tarn_cmd_serve(int argc, char **argv);
int tarn_cmd_express(int argc, char **argv); /* cmd_express.c */
int tarn_cmd_probe(int argc, char **argv);   /* cmd_probe.c */
/* Prints a probe's report (text, or JSON when json) and returns the exit
 * status: TARN_EXIT_FAULT when a safety property fails (cmd_probe.c). */
struct tarn_probe_report;
int tarn_cli_probe_print(const char *uri, const char *kind, const struct tarn_probe_report *rep,
                         int json);

#endif
