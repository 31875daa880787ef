/* The structures `tarn inspect` decodes; one function per structure. */
#ifndef TARN_CLI_INSPECT_H
#define TARN_CLI_INSPECT_H

#include "cli/cli.h"

int tarn_inspect_parquet(int argc, char **argv);

#endif
