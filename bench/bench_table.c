/* The list of benchmarks; each is defined in its own bench_<name>.c. */
#include "bench.h"

int bench_meta(void);

const tarn_bench bench_table[] = {
    {"meta", "metadata store: sequenced puts/s, 1 and 8 clients, sqlite: and etcd://", bench_meta},
    {NULL, NULL, NULL}};
