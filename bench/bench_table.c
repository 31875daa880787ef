/* The list of benchmarks; each is defined in its own bench_<name>.c. */
#include "bench.h"

int bench_parquet(void);

const tarn_bench bench_table[] = {
    {"parquet", "compacted-file Parquet writer and reader, 256 MiB of payloads", bench_parquet},
    {NULL, NULL, NULL}};
