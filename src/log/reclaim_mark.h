/* A reclaim pass mark's value (src/log/reclaim.c, docs/compaction.md "Pass
 * marks"), for its fuzz target (fuzz/fuzz_reclaim_mark.c: every decoder of
 * stored bytes has one, issue 31). */
#ifndef TARN_LOG_RECLAIM_MARK_H
#define TARN_LOG_RECLAIM_MARK_H

#include <stddef.h>
#include <stdint.h>

/* Decodes a mark's value, total: "none" (*none = 1), "r\n{lo}\n{hi}" (*lo,
 * *hi malloc'd: names in (lo, hi] at risk), or any other bytes (*all = 1:
 * every name at risk, only ever a longer grace; also when memory runs out).
 * Always 0. */
int tarn__reclaim_mark_parse(const uint8_t *v, size_t len, int *all, int *none, char **lo,
                             char **hi);

#endif
