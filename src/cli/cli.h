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

/* Top-level verbs. */
int tarn_cmd_inspect(int argc, char **argv);

#endif
