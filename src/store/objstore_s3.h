/* Test hooks of the s3:// backend. */
#ifndef TARN_STORE_OBJSTORE_S3_H
#define TARN_STORE_OBJSTORE_S3_H

/* The next n mutating requests (PUT, POST, DELETE; only those of method when
 * it is not NULL) that get an answer are treated as if the connection broke
 * before the answer arrived: the server acted, the client did not see it.
 * Every attempt counts, retries included. Tests unknown-outcome resolution. */
void tarn__s3_lose_replies(const char *method, int n);

#endif
