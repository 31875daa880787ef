/* The file index of a PARQUET record: spec "File index", tables §3.8, §4.6. */
#include "tarn/fileindex.h"

#include <stdlib.h>
#include <string.h>

#include "tarn/error.h"
#include "util/base64.h"
#include "util/bytes.h"
#include "util/error.h"

#define WHAT "file index"

void tarn_file_index_free(tarn_file_index *fi) {
  for (size_t i = 0; i < fi->n; i++)
    free(fi->files[i].name);
  free(fi->files);
  fi->files = NULL;
  fi->n = 0;
}

static int cmp_name(const void *a, const void *b) {
  const tarn_file_index_entry *x = *(const tarn_file_index_entry *const *)a;
  const tarn_file_index_entry *y = *(const tarn_file_index_entry *const *)b;
  return strcmp(x->name, y->name);
}

/* LS-066: each file once. */
/* offs: the byte of each file's entry in the decoded input; NULL for the builder. */
static int check_unique_names(const tarn_file_index *fi, const size_t *offs) {
  if (fi->n < 2)
    return 0;
  const tarn_file_index_entry **v = malloc(fi->n * sizeof *v);
  if (!v)
    return tarn__err(TARN_ENOMEM, "file index: out of memory");
  for (size_t i = 0; i < fi->n; i++)
    v[i] = &fi->files[i];
  qsort(v, fi->n, sizeof *v, cmp_name);
  int rc = 0;
  for (size_t i = 1; i < fi->n && !rc; i++)
    if (strcmp(v[i - 1]->name, v[i]->name) == 0) {
      if (v[i] < v[i - 1]) { /* name the later of the two */
        const tarn_file_index_entry *t = v[i];
        v[i] = v[i - 1], v[i - 1] = t;
      }
      rc = !offs ? tarn__err(TARN_EINVAL, "file index: file %zu repeats the name '%s' (LS-066)",
                             (size_t)(v[i] - fi->files), v[i]->name)
                 : tarn__corrupt(WHAT, offs[v[i] - fi->files],
                                 "file %zu repeats the name '%s' of file %zu (LS-066)",
                                 (size_t)(v[i] - fi->files), v[i]->name,
                                 (size_t)(v[i - 1] - fi->files));
    }
  free(v);
  return rc;
}

int tarn_file_index_decode(const uint8_t *p, size_t len, tarn_file_index *out) {
  tarn__rd r;
  tarn__rd_init(&r, p, len, WHAT);
  tarn_file_index fi = {NULL, 0};
  size_t cap = 0, *offs = NULL;
  int rc = 0;
  if (len == 0)
    return tarn__corrupt(WHAT, 0, "no files");
  while (tarn__rd_left(&r) > 0) {
    size_t at = r.off;
    uint64_t last;
    uint32_t nl;
    const uint8_t *name;
    if ((rc = tarn__rd_be64(&r, &last, "last_offset")))
      goto fail;
    if ((int64_t)last < 0) {
      rc = tarn__corrupt(WHAT, at, "file %zu: last_offset %lld is negative", fi.n,
                         (long long)(int64_t)last);
      goto fail;
    }
    if (fi.n && (int64_t)last <= fi.files[fi.n - 1].last_offset) {
      rc =
          tarn__corrupt(WHAT, at, "file %zu: last_offset %lld not above the previous %lld (LS-066)",
                        fi.n, (long long)last, (long long)fi.files[fi.n - 1].last_offset);
      goto fail;
    }
    size_t nl_at = r.off;
    if ((rc = tarn__rd_be32(&r, &nl, "name_length")))
      goto fail;
    if (nl == 0 || nl > tarn__rd_left(&r)) {
      rc = tarn__corrupt(WHAT, nl_at, "file %zu: name_length %d %s", fi.n, (int32_t)nl,
                         nl == 0 ? "is 0" : "exceeds the bytes left");
      goto fail;
    }
    size_t name_at = r.off;
    if ((rc = tarn__rd_bytes(&r, nl, &name, "name")))
      goto fail;
    const void *nul = memchr(name, 0, nl);
    if (nul) {
      rc = tarn__corrupt(WHAT, name_at + (size_t)((const uint8_t *)nul - name),
                         "file %zu: name contains a NUL byte", fi.n);
      goto fail;
    }
    if (fi.n == cap) {
      size_t ncap = cap ? 2 * cap : 4;
      tarn_file_index_entry *f = realloc(fi.files, ncap * sizeof *f);
      if (f)
        fi.files = f;
      size_t *o = f ? realloc(offs, ncap * sizeof *o) : NULL;
      if (o)
        offs = o;
      if (!f || !o) {
        rc = tarn__err(TARN_ENOMEM, "file index: out of memory");
        goto fail;
      }
      cap = ncap;
    }
    char *s = malloc(nl + 1);
    if (!s) {
      rc = tarn__err(TARN_ENOMEM, "file index: out of memory");
      goto fail;
    }
    memcpy(s, name, nl);
    s[nl] = 0;
    offs[fi.n] = at;
    fi.files[fi.n].last_offset = (int64_t)last;
    fi.files[fi.n++].name = s;
  }
  if ((rc = check_unique_names(&fi, offs)))
    goto fail;
  free(offs);
  *out = fi;
  return 0;
fail:
  free(offs);
  tarn_file_index_free(&fi);
  return rc;
}

int tarn_file_index_decode_base64(const char *b64, size_t len, tarn_file_index *out) {
  tarn_buf b = TARN_BUF_INIT;
  int rc = tarn__b64_decode(b64, len, &b, "file index base64");
  if (!rc)
    rc = tarn_file_index_decode(b.data, b.len, out);
  tarn_buf_free(&b);
  return rc;
}

int tarn_file_index_encode(const tarn_file_index_entry *files, size_t n, tarn_buf *out) {
  for (size_t i = 0; i < n; i++) {
    size_t nl = strlen(files[i].name);
    if (nl > INT32_MAX)
      return tarn__err(TARN_ERANGE, "file index: name %zu is too long", i);
    int rc = tarn_buf_put_be64(out, (uint64_t)files[i].last_offset);
    if (!rc)
      rc = tarn_buf_put_be32(out, (uint32_t)nl);
    if (!rc)
      rc = tarn_buf_append(out, files[i].name, nl);
    if (rc)
      return rc;
  }
  return 0;
}

/* LS-013: ends in .parquet and contains it nowhere else. */
static int check_name(const char *name, size_t i) {
  static const char sfx[] = ".parquet";
  size_t n = strlen(name), k = sizeof sfx - 1;
  const char *first = strstr(name, sfx);
  if (n <= k || strcmp(name + n - k, sfx) != 0 || first != name + n - k)
    return tarn__err(TARN_EINVAL,
                     "file index: file %zu name '%s' must end in .parquet and contain it "
                     "nowhere else (LS-013)",
                     i, name);
  return 0;
}

int tarn_file_index_build_base64(const tarn_file_index_entry *files, size_t n, int64_t s, int64_t e,
                                 tarn_buf *out) {
  if (n == 0 || s < 0 || e <= s)
    return tarn__err(TARN_EINVAL, "file index: needs at least one file and a range s < e");
  for (size_t i = 0; i < n; i++) {
    int rc = check_name(files[i].name, i);
    if (rc)
      return rc;
    if (files[i].last_offset > e - 1)
      return tarn__err(TARN_EINVAL, "file index: file %zu last_offset %lld beyond e-1 = %lld", i,
                       (long long)files[i].last_offset, (long long)(e - 1));
    int64_t floor = i ? files[i - 1].last_offset + 1 : s;
    if (files[i].last_offset < floor)
      return tarn__err(TARN_EINVAL,
                       "file index: file %zu last_offset %lld below %lld: files must be "
                       "ascending and non-empty (LS-066)",
                       i, (long long)files[i].last_offset, (long long)floor);
  }
  if (files[n - 1].last_offset != e - 1)
    return tarn__err(TARN_EINVAL, "file index: the last file ends at %lld, not e-1 = %lld (LS-066)",
                     (long long)files[n - 1].last_offset, (long long)(e - 1));
  tarn_file_index fi = {(tarn_file_index_entry *)files, n};
  int rc = check_unique_names(&fi, NULL);
  if (rc)
    return rc;
  tarn_buf bin = TARN_BUF_INIT;
  rc = tarn_file_index_encode(files, n, &bin);
  if (!rc)
    rc = tarn__b64_encode(bin.data, bin.len, out);
  tarn_buf_free(&bin);
  return rc;
}

int tarn_file_index_lookup(const tarn_file_index *fi, int64_t s, int64_t o, size_t *idx,
                           int64_t *base) {
  if (fi->n == 0 || o < s || o > fi->files[fi->n - 1].last_offset)
    return tarn__err(TARN_ENOTFOUND, "file index: offset %lld is outside [%lld, %lld]",
                     (long long)o, (long long)s,
                     fi->n ? (long long)fi->files[fi->n - 1].last_offset : (long long)s - 1);
  size_t lo = 0, hi = fi->n - 1; /* first with last_offset >= o */
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (fi->files[mid].last_offset >= o)
      hi = mid;
    else
      lo = mid + 1;
  }
  *idx = lo;
  *base = lo ? fi->files[lo - 1].last_offset + 1 : s;
  return 0;
}
