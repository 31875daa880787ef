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
  TARN_EXIT_FAULT = 1,   /* the input is bad, or the operation failed */
  TARN_EXIT_USAGE = 2,   /* the command line is wrong */
  TARN_EXIT_UNAVAIL = 3  /* a store could not be reached */
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

/* True when argv holds the flag exactly (e.g. "--json"). */
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

/* If argv[*i] is a deployment flag ("--meta URI" or "--meta=URI"), stores it,
 * advances *i past its value and returns 1; returns 0 if it is not one; returns
 * TARN_EXIT_USAGE (after printing the error for verb cmd) if its value is
 * missing. */
int tarn_cli_deploy_flag(tarn_cli_deploy *d, const char *cmd, int argc, char **argv, int *i);

/* Resolves the flags with the environment and opens the deployment (create:
 * make local directories first, as `tarn init` does). On failure prints
 * "tarn: <what failed>; <what to do>" and returns TARN_EXIT_UNAVAIL when a
 * store cannot be reached, else TARN_EXIT_FAULT. */
int tarn_cli_deploy_open(const tarn_cli_deploy *d, int create, struct tarn_deployment **out);

/* The exit status for a libtarn error code: TARN_EXIT_UNAVAIL for
 * TARN_EUNAVAIL, TARN_EXIT_FAULT otherwise (0 for 0). */
int tarn_cli_exit_for(int rc);

/* Top-level verbs. */
int tarn_cmd_inspect(int argc, char **argv);

#endif
