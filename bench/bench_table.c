/* The list of benchmarks; each is defined in its own bench_<name>.c. */
#include "bench.h"

int bench_wal(void);

const tarn_bench bench_table[] = {
    {"wal", "WAL object encode and zero-copy decode, 4 MiB of 1 KiB entries, 4 logs", bench_wal},
    {NULL, NULL, NULL}};
