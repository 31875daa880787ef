/* The list of benchmarks; each is defined in its own bench_<name>.c. */
#include "bench.h"

int bench_objstore(void);

const tarn_bench bench_table[] = {
    {"objstore", "create-only 4 MiB PUTs (file://, s3://) vs dd conv=fsync", bench_objstore},
    {NULL, NULL, NULL}};
