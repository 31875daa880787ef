/* Test hooks of the s3:// backend. */
#ifndef TARN_STORE_OBJSTORE_S3_H
#define TARN_STORE_OBJSTORE_S3_H

#include <stddef.h>
#include <stdint.h>

#include "tarn/objstore.h"

/* The next n mutating requests (PUT, POST, DELETE; only those of method when
 * it is not NULL) that get an answer are treated as if the connection broke
 * before the answer arrived: the server acted, the client did not see it.
 * Every attempt counts, retries included. Tests unknown-outcome resolution. */
void tarn__s3_lose_replies(const char *method, int n);

/* What `tarn probe` (probe.c, issue 31 "Stores that lie") asks of an s3://
 * store beyond the public interface; each fails with TARN_EUNSUPPORTED for
 * another backend. */

/* The ETag a HEAD of name gives (quotes stripped) into etag[cap], and in
 * *content_md5 whether it is the MD5 of data[0..len) (the bytes the caller
 * wrote there with one PUT): S3 and radosgw give that; S3 Express directory
 * buckets and SSE-KMS give other ETags. */
int tarn__s3_etag(tarn_objstore *s, const char *name, const void *data, size_t len, char *etag,
                  size_t cap, int *content_md5);

/* One PUT of name with If-Match: the ETag etag (quoted as RFC 7232 and S3
 * have it when quote is 1, bare when 0), a conditional overwrite: the only
 * request tarn sends that may replace an object, for the probe's if_match
 * check in its scratch prefix (tarn itself never sends If-Match). Retried like
 * every request; 0 with the final answer's HTTP status in *status. */
int tarn__s3_put_if_match(tarn_objstore *s, const char *name, const void *data, size_t len,
                          const char *etag, int quote, long *status);

/* Does CompleteMultipartUpload honour If-None-Match? Starts a multipart
 * upload of name (one part), creates name with a single create-only PUT, then
 * completes the upload with If-None-Match: * and without the HEAD that
 * tarn_objstore_put_commit sends first. *replaced is 1 when the completion
 * succeeded (it replaced the object: radosgw 16.2), 0 when it was refused. */
int tarn__s3_multipart_race(tarn_objstore *s, const char *name, int *replaced);

/* Since the handle was opened: the 503/429 answers it got (each retried) and
 * all its retries (any cause). Zero for another backend. */
void tarn__s3_counts(tarn_objstore *s, uint64_t *throttled, uint64_t *retried);

#endif
