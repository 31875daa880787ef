/* The object-store backend interface: each URI scheme is one table of
 * functions, in the manner of SQLite's VFS but built in, not registrable, so
 * the tables carry no version field (docs/objstore.md "Backends"). objstore.c
 * checks names and arguments once and dispatches; a backend only ever sees
 * valid names. */
#ifndef TARN_STORE_OBJSTORE_VFS_H
#define TARN_STORE_OBJSTORE_VFS_H

#include <stddef.h>
#include <stdint.h>

#include "tarn/buf.h"
#include "tarn/objstore.h"

/* Where a read puts its bytes: appended to a tarn_buf, or copied into the
 * caller's memory of cap bytes (never past it). A backend's get also reports
 * the whole object's size here when it learned it with the read (file: the
 * open descriptor, s3: Content-Range, mem: its data), so a caller that needs
 * it does not pay a HEAD; when it did not, the dispatcher falls back to head. */
typedef struct tarn__objdst {
  tarn_buf *buf;
  uint8_t *p;
  size_t cap;
  size_t len; /* bytes delivered so far */
  int sized;  /* object_size is known */
  uint64_t object_size;
} tarn__objdst;

/* Records that the object read into d is size bytes long. */
void tarn__objdst_sized(tarn__objdst *d, uint64_t size);

/* Appends n bytes to dst; with caller memory, bytes past cap are dropped. */
int tarn__objdst_put(tarn__objdst *d, const void *p, size_t n);
/* Room for n more bytes at *at (caller memory: at most cap - len); then
 * tarn__objdst_commit(d, k) records that k of them were filled. */
int tarn__objdst_room(tarn__objdst *d, size_t n, uint8_t **at, size_t *room);
void tarn__objdst_commit(tarn__objdst *d, size_t k);

struct tarn__objstore_vfs;

/* Every backend's handle begins with this. */
struct tarn_objstore {
  const struct tarn__objstore_vfs *vfs;
};
/* Every backend's upload begins with this. */
struct tarn_objstore_upload {
  tarn_objstore *store;
};

struct tarn__objstore_vfs {
  const char *scheme; /* "file": matches URIs "file:..." */
  /* uri is the whole URI. */
  int (*open)(const char *uri, tarn_objstore **out);
  void (*close)(tarn_objstore *s);
  int (*put)(tarn_objstore *s, const char *name, const void *data, size_t len);
  int (*put_begin)(tarn_objstore *s, const char *name, tarn_objstore_upload **out);
  int (*put_write)(tarn_objstore_upload *u, const void *data, size_t len);
  int (*put_commit)(tarn_objstore_upload *u); /* frees u */
  void (*put_abort)(tarn_objstore_upload *u); /* frees u */
  /* Reads [off, off+len) cut at the end (len may be UINT64_MAX); off > size is TARN_ERANGE.
   * Calls tarn__objdst_sized when the object's size comes with the read (optional:
   * the dispatcher asks head otherwise). */
  int (*get)(tarn_objstore *s, const char *name, uint64_t off, uint64_t len, tarn__objdst *dst);
  int (*head)(tarn_objstore *s, const char *name, uint64_t *size);
  int (*del)(tarn_objstore *s, const char *name);
  /* out is zeroed; max >= 1; start_after may be "". */
  int (*list)(tarn_objstore *s, const char *prefix, const char *start_after, size_t max,
              tarn_objstore_listing *out);
  /* Optional (NULL: the backend leaves no temporary files): removes those
   * older than older_than_ms, adding their number to *removed. */
  int (*sweep_temp)(tarn_objstore *s, int64_t older_than_ms, uint64_t *removed);
};

extern const struct tarn__objstore_vfs tarn__objstore_file;
extern const struct tarn__objstore_vfs tarn__objstore_mem;
extern const struct tarn__objstore_vfs tarn__objstore_s3;
extern const struct tarn__objstore_vfs tarn__objstore_lat;

/* Appends one (name, size) to a listing being built. */
int tarn__objlist_add(tarn_objstore_listing *l, const char *name, size_t name_len, uint64_t size);

/* The file:// backend's temporary-file marker: a segment beginning with it is
 * never a valid object name, so a temporary file cannot collide with an object. */
#define TARN__OBJSTORE_TMP_PREFIX ".tmp-"

#endif
