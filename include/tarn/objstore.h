/* tarn — object storage: the spec's three operations (write once, read, delete)
 * plus head and list, behind one interface with several backends:
 *
 *   file://DIR                 a directory on a local file system (the embedded default)
 *   mem:NAME  or  mem:         memory; handles that open the same NAME share one store
 *   s3://BUCKET/PREFIX[?...]   S3 or an S3-compatible server (see docs/objstore.md)
 *
 * Code that holds a tarn_objstore never knows which backend it is.
 *
 * Names are relative to the store's root ("a/b/c"). A valid name is 1..1024
 * bytes, has no NUL, does not begin or end with '/', and has no empty, "." or
 * ".." segment and no segment beginning with ".tmp-" (reserved for the file://
 * backend's temporary files). Any operation given another name fails with
 * TARN_EINVAL.
 *
 * Every put is create-only: it fails with TARN_EEXIST when the name exists and
 * never replaces an object (spec "Storage operations": write once). A put that
 * returns TARN_EUNKNOWN may or may not have created the object. */
#ifndef TARN_OBJSTORE_H
#define TARN_OBJSTORE_H

#include <stddef.h>
#include <stdint.h>

#include "tarn/buf.h"

#ifdef __cplusplus
extern "C" {
#endif

#define TARN_OBJSTORE_NAME_MAX 1024

typedef struct tarn_objstore tarn_objstore;
typedef struct tarn_objstore_upload tarn_objstore_upload;

/* Opens the store a URI names; TARN_EUNSUPPORTED for an unknown scheme,
 * TARN_EINVAL for a malformed URI. */
int tarn_objstore_open(const char *uri, tarn_objstore **out);
/* Closes the handle; NULL is allowed. Uploads still open must be aborted first. */
void tarn_objstore_close(tarn_objstore *s);
/* The backend's URI scheme: "file", "mem" or "s3". */
const char *tarn_objstore_scheme(const tarn_objstore *s);

/* 0 when name[0..len) is a valid object name, else TARN_EINVAL with a message
 * saying what is wrong. */
int tarn_objstore_check_name(const char *name, size_t len);

/* Creates the object name holding len bytes; TARN_EEXIST when it exists. */
int tarn_objstore_put(tarn_objstore *s, const char *name, const void *data, size_t len);

/* A streaming put for large objects: begin, write chunks, then commit (create-only,
 * like tarn_objstore_put) or abort. Commit and abort free the upload whatever
 * they return; nothing is visible under the name before commit succeeds. */
int tarn_objstore_put_begin(tarn_objstore *s, const char *name, tarn_objstore_upload **out);
int tarn_objstore_put_write(tarn_objstore_upload *u, const void *data, size_t len);
int tarn_objstore_put_commit(tarn_objstore_upload *u);
void tarn_objstore_put_abort(tarn_objstore_upload *u);

/* Reads the whole object into out (which is reset first); TARN_ENOTFOUND. */
int tarn_objstore_get(tarn_objstore *s, const char *name, tarn_buf *out);
/* Reads the bytes [off, off+len) into out (reset first). A range that runs past
 * the end is cut at the end; off == size gives 0 bytes; off > size is TARN_ERANGE. */
int tarn_objstore_get_range(tarn_objstore *s, const char *name, uint64_t off, uint64_t len,
                            tarn_buf *out);
/* tarn_objstore_get_range that also gives the whole object's size in
 * *object_size (NULL: not wanted). file://, mem: and s3:// learn it with the
 * read itself (no extra request); a backend that cannot asks head. A size that
 * disagrees with the bytes delivered is TARN_EIO. */
int tarn_objstore_get_range_sized(tarn_objstore *s, const char *name, uint64_t off, uint64_t len,
                                  tarn_buf *out, uint64_t *object_size);
/* Reads up to cap bytes from off into dst, the count read in *got (the same
 * range rules as tarn_objstore_get_range). */
int tarn_objstore_read(tarn_objstore *s, const char *name, uint64_t off, void *dst, size_t cap,
                       size_t *got);
/* The object's size; TARN_ENOTFOUND when absent. */
int tarn_objstore_head(tarn_objstore *s, const char *name, uint64_t *size);
/* Deletes the object; deleting an absent name succeeds. */
int tarn_objstore_delete(tarn_objstore *s, const char *name);
/* Removes the backend's temporary files not touched for older_than_ms (file://:
 * the ".tmp-" files of killed puts; other backends have none) and adds their
 * number to *removed. Run by the reclaimer (issue 31 item 9). */
int tarn_objstore_sweep_temp(tarn_objstore *s, int64_t older_than_ms, uint64_t *removed);

/* One page of a listing. */
typedef struct tarn_objstore_listing {
  char **names;    /* full names (relative to the root), ordered bytewise */
  uint64_t *sizes; /* sizes[i] is the size of names[i] */
  size_t n;
  int truncated; /* more names follow: pass names[n-1] as start_after */
} tarn_objstore_listing;

/* Lists up to max (>= 1) names that begin with prefix ("" for all) and sort
 * bytewise after start_after (NULL or "" to start at the beginning). */
int tarn_objstore_list(tarn_objstore *s, const char *prefix, const char *start_after, size_t max,
                       tarn_objstore_listing *out);
void tarn_objstore_listing_free(tarn_objstore_listing *l);

#ifdef __cplusplus
}
#endif
#endif
