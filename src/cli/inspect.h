/* The structures `tarn inspect` decodes; one function per structure. */
#ifndef TARN_CLI_INSPECT_H
#define TARN_CLI_INSPECT_H

#include "cli/cli.h"

int tarn_inspect_wal(int argc, char **argv);
int tarn_inspect_key(int argc, char **argv);
int tarn_inspect_companion(int argc, char **argv);
int tarn_inspect_kafka(int argc, char **argv);

#endif
