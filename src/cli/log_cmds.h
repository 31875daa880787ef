/* The log verbs (append, read) and what they share: naming the log to act on. */
#ifndef TARN_CLI_LOG_CMDS_H
#define TARN_CLI_LOG_CMDS_H

#include <stdint.h>

#include "cli/cli.h"

struct tarn_deployment;

/* The log a verb acts on: NS/NAME (or NAME in the default namespace) with
 * --partition P (default 0), or --log L. */
typedef struct tarn_cli_log_target {
  const char *stream;    /* "NS/NAME" or NULL */
  const char *partition; /* --partition's value or NULL */
  const char *log;       /* --log's value or NULL */
} tarn_cli_log_target;

/* The help lines of the target's flags. */
extern const char tarn_cli_log_target_help[];

/* The target's flags, as lines of a verb's option table. */
#define TARN_CLI_LOG_TARGET_OPTS(t)                                                                \
  TARN_CLI_OPT_STRING("--partition", &(t)->partition, NULL),                                       \
      TARN_CLI_OPT_STRING("--log", &(t)->log, NULL)

/* Resolves the target to a log ID (through the catalog for NS/NAME). Returns
 * a TARN_EXIT_* status, with the message printed. */
int tarn_cli_log_target_resolve(const tarn_cli_log_target *t, const char *cmd,
                                struct tarn_deployment *d, uint64_t *log_id);

int tarn_cmd_append(int argc, char **argv);
int tarn_cmd_read(int argc, char **argv);
int tarn_cmd_compact(int argc, char **argv);
int tarn_cmd_gc(int argc, char **argv);
int tarn_cmd_tasks(int argc, char **argv);

#endif
