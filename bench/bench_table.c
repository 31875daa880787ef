/* The list of benchmarks; each is defined in its own bench_<name>.c. */
#include "bench.h"

int bench_entryindex(void);

const tarn_bench bench_table[] = {
    {"entryindex", "EntryIndex values and entry offsets: encode/decode", bench_entryindex},
    {NULL, NULL, NULL}};
