/* The list of benchmarks; each is defined in its own bench_<name>.c. */
#include "bench.h"

const tarn_bench bench_table[] = {
    {NULL, NULL, NULL}};
