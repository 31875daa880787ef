/* Bounded gzip decompression shared by the decoders that meet gzip: companion
 * files and gzip-compressed Kafka v0/v1 wrappers. */
#ifndef TARN_FORMAT_GUNZIP_H
#define TARN_FORMAT_GUNZIP_H

#include <stddef.h>
#include <stdint.h>

#include "tarn/buf.h"

/* Appends the decompression of the gzip bytes in[0..len) to out, at most max
 * bytes (a guard against decompression bombs). With members != 0, further
 * gzip members may follow the first (one stream, as gunzip reads them);
 * otherwise nothing may follow it. Returns 0; TARN_ENOMEM; or -1 for bad
 * input, with why set and *at the offset in in where the fault lies. On
 * failure out keeps its old length. */
int tarn__gunzip(tarn_buf *out, const uint8_t *in, size_t len, size_t max, int members, size_t *at,
                 char *why, size_t whylen);

#endif
