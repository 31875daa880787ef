/* A range of a metadata-store partition read in pages (issue 37: the
 * sweeps over producer state and committed offsets), so that a range of any
 * size is walked in bounded memory. */
#ifndef TARN_STORE_META_PAGES_H
#define TARN_STORE_META_PAGES_H

#include <stddef.h>

#include "tarn/meta.h"

/* Calls fn(arg, r) on every record of [a, b) in partition part, in key
 * order, read `page` records at a time (tarn_meta_scan, the next page after
 * the last key read). Stops at fn's first nonzero return and returns it, or
 * the store's error. */
int tarn__meta_scan_each(tarn_meta *m, const char *part, const char *a, const char *b, size_t page,
                         int (*fn)(void *arg, const tarn_meta_rec *r), void *arg);

#endif
