/* zstd alone on a benchmark's payload bytes: what "at the speed of the codec"
 * is measured against (docs/parquet.md "Where the time goes"). One context
 * reused for every piece, as tarn's writer and reader keep theirs, so the
 * baseline is the codec and not its set-up. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <zstd.h>

#include "bench.h"
#include "bench_codec.h"

int bench_zstd_seconds(const uint8_t *p, size_t n, size_t piece, int level, int passes,
                       double *comp_s, double *decomp_s) {
  size_t pieces = (n + piece - 1) / piece, bound = ZSTD_compressBound(piece);
  uint8_t *comp = malloc(pieces * bound), *back = malloc(piece);
  size_t *clen = malloc(pieces * sizeof *clen);
  ZSTD_CCtx *cc = ZSTD_createCCtx();
  ZSTD_DCtx *dc = ZSTD_createDCtx();
  int rc = comp && back && clen && cc && dc ? 0 : -1;
  *comp_s = *decomp_s = 1e9;
  for (int pass = 0; rc == 0 && pass < passes; pass++) {
    double t = bench_now();
    for (size_t i = 0; rc == 0 && i < pieces; i++) {
      size_t len = i + 1 < pieces ? piece : n - i * piece;
      clen[i] = ZSTD_compressCCtx(cc, comp + i * bound, bound, p + i * piece, len, level);
      if (ZSTD_isError(clen[i]))
        rc = -1;
    }
    t = bench_now() - t;
    if (t < *comp_s)
      *comp_s = t;
    t = bench_now();
    for (size_t i = 0; rc == 0 && i < pieces; i++) {
      size_t len = i + 1 < pieces ? piece : n - i * piece;
      size_t r = ZSTD_decompressDCtx(dc, back, piece, comp + i * bound, clen[i]);
      if (ZSTD_isError(r) || r != len)
        rc = -1;
      else
        bench_sink(back, r);
    }
    t = bench_now() - t;
    if (t < *decomp_s)
      *decomp_s = t;
  }
  for (size_t i = 0; rc == 0 && i < pieces; i++) {
    size_t len = i + 1 < pieces ? piece : n - i * piece;
    size_t r = ZSTD_decompressDCtx(dc, back, piece, comp + i * bound, clen[i]);
    if (ZSTD_isError(r) || r != len || memcmp(back, p + i * piece, len) != 0)
      rc = -1;
  }
  if (rc)
    fprintf(stderr, "bench: zstd baseline failed\n");
  ZSTD_freeCCtx(cc);
  ZSTD_freeDCtx(dc);
  free(comp), free(back), free(clen);
  return rc;
}
