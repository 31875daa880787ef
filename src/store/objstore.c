/* Object-store dispatch: picks the backend by URI scheme, validates names and
 * arguments, and routes every call through the backend's function table. */
#include "store/objstore_vfs.h"

#include <stdlib.h>
#include <string.h>

#include "tarn/metrics.h"
#include "util/error.h"

static const struct tarn__objstore_vfs *const backends[] = {
    &tarn__objstore_file, &tarn__objstore_mem, &tarn__objstore_s3, &tarn__objstore_lat};

/* Counts one operation of s in the process's metrics (tarn/metrics.h) and
 * passes rc through. */
static int counted(const tarn_objstore *s, const char *op, int rc, uint64_t bytes) {
  const char *b = s->vfs->scheme;
  tarn_metrics_inc("tarn_objstore_requests_total", 1, "op", op, "backend", b, NULL);
  if (rc)
    tarn_metrics_inc("tarn_objstore_errors_total", 1, "op", op, "backend", b, "error",
                     tarn_errname(rc), NULL);
  else if (bytes)
    tarn_metrics_inc("tarn_objstore_bytes_total", bytes, "op", op, "backend", b, NULL);
  return rc;
}

int tarn__objdst_put(tarn__objdst *d, const void *p, size_t n) {
  if (d->buf) {
    int rc = tarn_buf_append(d->buf, p, n);
    if (rc == 0)
      d->len += n;
    return rc;
  }
  size_t room = d->cap - d->len;
  if (n > room)
    n = room;
  if (n)
    memcpy(d->p + d->len, p, n);
  d->len += n;
  return 0;
}

int tarn__objdst_room(tarn__objdst *d, size_t n, uint8_t **at, size_t *room) {
  if (d->buf) {
    int rc = tarn_buf_reserve(d->buf, n);
    if (rc)
      return rc;
    *at = d->buf->data + d->buf->len;
    *room = n;
    return 0;
  }
  *at = d->p + d->len;
  *room = d->cap - d->len < n ? d->cap - d->len : n;
  return 0;
}

void tarn__objdst_commit(tarn__objdst *d, size_t k) {
  if (d->buf)
    d->buf->len += k;
  d->len += k;
}

int tarn_objstore_check_name(const char *name, size_t len) {
  if (!name || len == 0)
    return tarn__err(TARN_EINVAL, "object name: empty");
  if (len > TARN_OBJSTORE_NAME_MAX)
    return tarn__err(TARN_EINVAL, "object name: %zu bytes, longer than the %d allowed", len,
                     TARN_OBJSTORE_NAME_MAX);
  if (memchr(name, 0, len))
    return tarn__err(TARN_EINVAL, "object name: contains a NUL byte at %zu",
                     (size_t)((const char *)memchr(name, 0, len) - name));
  if (name[0] == '/')
    return tarn__err(TARN_EINVAL, "object name \"%.*s\": absolute (begins with /)", (int)len, name);
  if (name[len - 1] == '/')
    return tarn__err(TARN_EINVAL, "object name \"%.*s\": ends with /", (int)len, name);
  size_t plen = strlen(TARN__OBJSTORE_TMP_PREFIX);
  for (size_t i = 0; i < len;) {
    size_t j = i;
    while (j < len && name[j] != '/')
      j++;
    size_t n = j - i;
    const char *seg = name + i;
    if (n == 0)
      return tarn__err(TARN_EINVAL, "object name \"%.*s\": empty segment at byte %zu", (int)len,
                       name, i);
    if ((n == 1 && seg[0] == '.') || (n == 2 && seg[0] == '.' && seg[1] == '.'))
      return tarn__err(TARN_EINVAL, "object name \"%.*s\": \"%.*s\" segment at byte %zu", (int)len,
                       name, (int)n, seg, i);
    if (n >= plen && memcmp(seg, TARN__OBJSTORE_TMP_PREFIX, plen) == 0)
      return tarn__err(TARN_EINVAL,
                       "object name \"%.*s\": segment at byte %zu begins with the reserved "
                       "\"" TARN__OBJSTORE_TMP_PREFIX "\"",
                       (int)len, name, i);
    i = j + 1;
  }
  return 0;
}

static int check(const char *name) {
  return tarn_objstore_check_name(name, name ? strlen(name) : 0);
}

int tarn_objstore_open(const char *uri, tarn_objstore **out) {
  *out = NULL;
  if (!uri)
    return tarn__err(TARN_EINVAL, "object store: no URI");
  const char *colon = strchr(uri, ':');
  if (!colon)
    return tarn__err(
        TARN_EINVAL,
        "object store \"%s\": no scheme (use file://DIR, mem:NAME or s3://BUCKET/PREFIX)", uri);
  size_t n = (size_t)(colon - uri);
  for (size_t i = 0; i < sizeof backends / sizeof backends[0]; i++) {
    const struct tarn__objstore_vfs *v = backends[i];
    if (strlen(v->scheme) != n || memcmp(v->scheme, uri, n) != 0)
      continue;
    int rc = v->open(uri, out);
    if (rc)
      return rc;
    (*out)->vfs = v;
    return 0;
  }
  return tarn__err(TARN_EUNSUPPORTED, "object store: unknown scheme \"%.*s\" in \"%.*s\"", (int)n,
                   uri, (int)(n + 1), uri);
}

void tarn_objstore_close(tarn_objstore *s) {
  if (s)
    s->vfs->close(s);
}

const char *tarn_objstore_scheme(const tarn_objstore *s) { return s->vfs->scheme; }

int tarn_objstore_put(tarn_objstore *s, const char *name, const void *data, size_t len) {
  int rc = check(name);
  if (rc)
    return rc;
  if (!data && len)
    return tarn__err(TARN_EINVAL, "object store: put of %zu bytes from NULL", len);
  return counted(s, "put", s->vfs->put(s, name, data ? data : "", len), len);
}

int tarn_objstore_put_begin(tarn_objstore *s, const char *name, tarn_objstore_upload **out) {
  *out = NULL;
  int rc = check(name);
  if (rc)
    return rc;
  rc = s->vfs->put_begin(s, name, out);
  if (rc == 0)
    (*out)->store = s;
  return rc;
}

int tarn_objstore_put_write(tarn_objstore_upload *u, const void *data, size_t len) {
  if (len == 0)
    return 0;
  if (!data)
    return tarn__err(TARN_EINVAL, "object store: write of %zu bytes from NULL", len);
  int rc = u->store->vfs->put_write(u, data, len);
  if (rc == 0)
    tarn_metrics_inc("tarn_objstore_bytes_total", len, "op", "put", "backend",
                     u->store->vfs->scheme, NULL);
  return rc;
}

int tarn_objstore_put_commit(tarn_objstore_upload *u) {
  tarn_objstore *s = u->store;
  return counted(s, "put", s->vfs->put_commit(u), 0);
}

void tarn_objstore_put_abort(tarn_objstore_upload *u) {
  if (u)
    u->store->vfs->put_abort(u);
}

void tarn__objdst_sized(tarn__objdst *d, uint64_t size) {
  d->sized = 1;
  d->object_size = size;
}

int tarn_objstore_get(tarn_objstore *s, const char *name, tarn_buf *out) {
  return tarn_objstore_get_range_sized(s, name, 0, UINT64_MAX, out, NULL);
}

int tarn_objstore_get_range(tarn_objstore *s, const char *name, uint64_t off, uint64_t len,
                            tarn_buf *out) {
  return tarn_objstore_get_range_sized(s, name, off, len, out, NULL);
}

int tarn_objstore_get_range_sized(tarn_objstore *s, const char *name, uint64_t off, uint64_t len,
                                  tarn_buf *out, uint64_t *object_size) {
  tarn_buf_reset(out);
  int rc = check(name);
  if (rc)
    return rc;
  tarn__objdst d = {.buf = out};
  rc = s->vfs->get(s, name, off, len, &d);
  counted(s, "get", rc, rc ? 0 : out->len);
  /* A backend that cannot tell the size with the read: objects never change,
   * so a HEAD after it tells the size of the object read. */
  if (rc == 0 && object_size && !d.sized && (rc = tarn_objstore_head(s, name, &d.object_size)) == 0)
    d.sized = 1;
  if (rc == 0 && d.sized) {
    /* The size and the bytes must agree, or the backend (or a server's
     * Content-Range) told a story that cannot be trusted. */
    uint64_t want = off > d.object_size ? 0 : d.object_size - off;
    if (want > len)
      want = len;
    if (off > d.object_size || out->len != want)
      rc = tarn__err(TARN_EIO,
                     "object store %s: get \"%s\": %zu bytes at offset %llu, but the object is "
                     "%llu bytes",
                     s->vfs->scheme, name, out->len, (unsigned long long)off,
                     (unsigned long long)d.object_size);
  }
  if (rc == 0 && object_size)
    *object_size = d.object_size;
  if (rc)
    tarn_buf_reset(out);
  return rc;
}

int tarn_objstore_read(tarn_objstore *s, const char *name, uint64_t off, void *dst, size_t cap,
                       size_t *got) {
  *got = 0;
  int rc = check(name);
  if (rc)
    return rc;
  if (!dst && cap)
    return tarn__err(TARN_EINVAL, "object store: read into NULL");
  tarn__objdst d = {.p = dst, .cap = cap};
  rc = s->vfs->get(s, name, off, cap, &d);
  if (rc == 0)
    *got = d.len > cap ? cap : d.len;
  counted(s, "get", rc, *got);
  return rc;
}

int tarn_objstore_head(tarn_objstore *s, const char *name, uint64_t *size) {
  int rc = check(name);
  if (rc)
    return rc;
  uint64_t tmp;
  return counted(s, "head", s->vfs->head(s, name, size ? size : &tmp), 0);
}

int tarn_objstore_delete(tarn_objstore *s, const char *name) {
  int rc = check(name);
  if (rc)
    return rc;
  return counted(s, "delete", s->vfs->del(s, name), 0);
}

int tarn__objlist_add(tarn_objstore_listing *l, const char *name, size_t name_len, uint64_t size) {
  /* Capacity is implicit: 16, then doubled whenever n reaches a power of two. */
  size_t n = l->n;
  if (n == 0 || (n >= 16 && (n & (n - 1)) == 0)) {
    size_t cap = n ? 2 * n : 16;
    char **nn = realloc(l->names, cap * sizeof *nn);
    if (!nn)
      return tarn__err(TARN_ENOMEM, "object list: out of memory");
    l->names = nn;
    uint64_t *ss = realloc(l->sizes, cap * sizeof *ss);
    if (!ss)
      return tarn__err(TARN_ENOMEM, "object list: out of memory");
    l->sizes = ss;
  }
  char *c = malloc(name_len + 1);
  if (!c)
    return tarn__err(TARN_ENOMEM, "object list: out of memory");
  memcpy(c, name, name_len);
  c[name_len] = 0;
  l->names[l->n] = c;
  l->sizes[l->n] = size;
  l->n++;
  return 0;
}

int tarn_objstore_list(tarn_objstore *s, const char *prefix, const char *start_after, size_t max,
                       tarn_objstore_listing *out) {
  memset(out, 0, sizeof *out);
  if (!prefix)
    prefix = "";
  if (!start_after)
    start_after = "";
  if (max == 0)
    return tarn__err(TARN_EINVAL, "object list: max must be at least 1");
  if (strlen(prefix) > TARN_OBJSTORE_NAME_MAX || strlen(start_after) > TARN_OBJSTORE_NAME_MAX)
    return tarn__err(TARN_EINVAL, "object list: prefix or start-after longer than %d bytes",
                     TARN_OBJSTORE_NAME_MAX);
  int rc = counted(s, "list", s->vfs->list(s, prefix, start_after, max, out), 0);
  if (rc)
    tarn_objstore_listing_free(out);
  return rc;
}

void tarn_objstore_listing_free(tarn_objstore_listing *l) {
  if (!l)
    return;
  for (size_t i = 0; i < l->n; i++)
    free(l->names[i]);
  free(l->names);
  free(l->sizes);
  memset(l, 0, sizeof *l);
}

int tarn_objstore_sweep_temp(tarn_objstore *s, int64_t older_than_ms, uint64_t *removed) {
  if (older_than_ms < 0)
    return tarn__err(TARN_EINVAL, "sweeping temporary files: a negative age");
  if (!s->vfs->sweep_temp)
    return 0;
  return counted(s, "sweep_temp", s->vfs->sweep_temp(s, older_than_ms, removed), 0);
}
