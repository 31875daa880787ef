/* The codec alone, the in-run baseline of the Parquet and compaction
 * benchmarks (issue 16): libzstd in-process on exactly a benchmark's payload
 * bytes. */
#ifndef TARN_BENCH_CODEC_H
#define TARN_BENCH_CODEC_H

#include <stddef.h>
#include <stdint.h>

/* Seconds libzstd takes to compress the n bytes at p at level, in pieces of
 * piece bytes (the writer's page) through one reused context, and to
 * decompress them again (best of passes passes each); checks the round trip.
 * 0, or -1 after printing why. */
int bench_zstd_seconds(const uint8_t *p, size_t n, size_t piece, int level, int passes,
                       double *comp_s, double *decomp_s);

#endif
