/* A tiny, bounded reader for the few XML elements S3 responses carry
 * (ListObjectsV2, InitiateMultipartUpload, Error). No XML library is among
 * the dependencies, and S3's responses are flat enough not to need one. It
 * never reads outside [p, p+n) and never allocates by an unchecked length. */
#ifndef TARN_STORE_S3_XML_H
#define TARN_STORE_S3_XML_H

#include <stddef.h>

#include "tarn/buf.h"

/* Finds the next element named tag at or after *pos in p[0..n): sets its
 * content span (between the start and end tags; empty for <tag/>) and moves
 * *pos past it. Returns 1 when found, 0 when there is none, or TARN_ECORRUPT
 * when a start tag has no end. */
int tarn__xml_next(const char *p, size_t n, size_t *pos, const char *tag, const char **content,
                   size_t *clen);

/* Appends the text p[0..n) to out with the five named entities and numeric
 * character references (&#N; &#xH;) decoded to UTF-8; TARN_ECORRUPT on a
 * malformed reference. No NUL is appended. */
int tarn__xml_text(const char *p, size_t n, tarn_buf *out);

/* The decoded text of the first element tag in p[0..n), NUL-terminated in out
 * (reset first). 1 found, 0 absent, or a negative error. */
int tarn__xml_get(const char *p, size_t n, const char *tag, tarn_buf *out);

#endif
