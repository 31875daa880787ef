#include "log/reader_parquet.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tarn/buf.h"
#include "tarn/catalog.h"
#include "tarn/companion.h"
#include "tarn/fileindex.h"
#include "tarn/parquet.h"
#include "util/error.h"

typedef struct src {
  tarn_objstore *s;
  const char *name;
} src;

struct tarn__pq_cursor {
  tarn_objstore *store;
  src src; /* the open file, for the Parquet reader's reads */
  const char *const *serdes;
  size_t n_serdes;
  uint64_t log_id, start, end, next; /* next: the offset the next entry must start at */
  char *dir;                         /* "{namespace}/{stream name}/" */
  tarn_file_index fi;
  size_t file; /* the open file's index in fi */
  char *path;  /* its name in the compacted root */
  tarn_parquet_reader *pq;
  tarn_companion comp;
  int have_comp;
  size_t row; /* the next row to return */
};

static int read_at(void *ctx, uint64_t off, void *buf, size_t n) {
  src *x = ctx;
  size_t got = 0;
  int rc = tarn_objstore_read(x->s, x->name, off, buf, n, &got);
  if (!rc && got != n)
    rc = tarn__err(TARN_ECORRUPT, "compacted file %s: %zu bytes at %llu, %zu expected", x->name,
                   got, (unsigned long long)off, n);
  return rc;
}

static void close_file(tarn__pq_cursor *c) {
  tarn_parquet_close(c->pq);
  c->pq = NULL;
  if (c->have_comp)
    tarn_companion_free(&c->comp);
  c->have_comp = 0;
  free(c->path);
  c->path = NULL;
}

void tarn__pq_close(tarn__pq_cursor *c) {
  if (!c)
    return;
  close_file(c);
  tarn_file_index_free(&c->fi);
  free(c->dir);
  free(c);
}

/* Opens file c->file positioned at the entry holding o: steps 2 and 3. */
static int open_file(tarn__pq_cursor *c, uint64_t o) {
  close_file(c);
  const char *name = c->fi.files[c->file].name;
  size_t dl = strlen(c->dir), nl = strlen(name);
  const char *dot = strstr(name, ".parquet"); /* LS-013: the companion's name */
  if (!dot || dot[8])
    return tarn__err(TARN_ECORRUPT, "file index: \"%s\" does not end in .parquet", name);
  c->path = malloc(dl + nl + 1);
  char *ipath = malloc(dl + nl + 1);
  if (!c->path || !ipath) {
    free(ipath);
    return tarn__err(TARN_ENOMEM, "out of memory");
  }
  snprintf(c->path, dl + nl + 1, "%s%s", c->dir, name);
  snprintf(ipath, dl + nl + 1, "%s%.*s.index", c->dir, (int)(dot - name), name);
  uint64_t size;
  int rc = tarn_objstore_head(c->store, c->path, &size);
  if (!rc) {
    c->src.s = c->store;
    c->src.name = c->path;
    tarn_parquet_reader_opts ro = {.serde_types = c->serdes, .n_serde_types = c->n_serdes};
    rc = tarn_parquet_open(&c->pq, read_at, &c->src, size, &ro); /* step 2, LS-059 */
    if (rc)
      tarn__errctx(rc, "compacted file %s", c->path);
  }
  tarn_buf gz = TARN_BUF_INIT;
  if (!rc)
    rc = tarn_objstore_get(c->store, ipath, &gz);
  if (!rc) {
    rc = tarn_companion_decode(&c->comp, gz.data, gz.len, 0); /* step 3 */
    if (rc)
      tarn__errctx(rc, "companion %s", ipath);
    c->have_comp = rc == 0;
  }
  size_t row = 0;
  if (!rc && (rc = tarn_companion_floor(&c->comp, (int64_t)o, &row)) != 0) /* LS-065 */
    rc = tarn__err(TARN_ECORRUPT, "companion %s: no row holds offset %llu", ipath,
                   (unsigned long long)o);
  if (!rc && (rc = tarn_parquet_seek(c->pq, row)))
    tarn__errctx(rc, "compacted file %s: row %zu", c->path, row);
  c->row = row;
  if (rc == TARN_ENOTFOUND)
    tarn__err(rc, "compacted file %s or its companion does not exist", c->path);
  tarn_buf_free(&gz);
  free(ipath);
  return rc;
}

int tarn__pq_open(tarn_meta *meta, tarn_objstore *compacted, const char *const *serdes,
                  size_t n_serdes, const tarn__rec *rec, uint64_t o, tarn__pq_cursor **out) {
  *out = NULL;
  if (!rec->file_index)
    return tarn__err(TARN_EUNSUPPORTED, "record %s: PARQUET without a file index", rec->key);
  tarn__pq_cursor *c = calloc(1, sizeof *c);
  if (!c)
    return tarn__err(TARN_ENOMEM, "out of memory");
  c->store = compacted;
  c->serdes = serdes;
  c->n_serdes = n_serdes;
  c->log_id = rec->log_id;
  c->start = rec->start;
  c->end = rec->end;
  c->next = o;
  /* step 1: the file that holds o */
  int rc = tarn_file_index_decode_base64(rec->file_index, strlen(rec->file_index), &c->fi);
  if (rc) {
    tarn__errctx(rc, "record %s", rec->key);
    tarn__pq_close(c);
    return rc;
  }
  int64_t base;
  if ((rc = tarn_file_index_lookup(&c->fi, (int64_t)rec->start, (int64_t)o, &c->file, &base))) {
    tarn__pq_close(c);
    return tarn__err(TARN_ECORRUPT, "record %s: its file index holds no file for offset %llu",
                     rec->key, (unsigned long long)o);
  }
  /* the directory of the log's stream, from the catalog */
  tarn_catalog *cat = NULL;
  tarn_catalog_record cr;
  memset(&cr, 0, sizeof cr);
  rc = tarn_catalog_open(meta, NULL, &cat);
  if (!rc)
    rc = tarn_catalog_log_stream(cat, rec->log_id, &cr);
  if (!rc) {
    size_t n = strlen(cr.ns) + strlen(cr.name) + 3;
    if ((c->dir = malloc(n)))
      snprintf(c->dir, n, "%s/%s/", cr.ns, cr.name);
    else
      rc = tarn__err(TARN_ENOMEM, "out of memory");
  } else if (rc == TARN_ENOTFOUND) {
    rc = tarn__err(TARN_ECORRUPT, "log %llu has a PARQUET record but no stream in the catalog",
                   (unsigned long long)rec->log_id);
  }
  tarn_catalog_record_free(&cr);
  tarn_catalog_close(cat);
  if (!rc)
    rc = open_file(c, o);
  if (rc) {
    tarn__pq_close(c);
    return rc;
  }
  *out = c;
  return 0;
}

int tarn__pq_next(tarn__pq_cursor *c, tarn_entry *e) {
  for (;;) {
    if (c->next >= c->end)
      return TARN_EEND;
    if (!c->pq) {
      if (++c->file >= c->fi.n)
        return tarn__err(TARN_ECORRUPT, "file index: the files end before offset %llu",
                         (unsigned long long)c->end);
      int rc = open_file(c, c->next);
      if (rc)
        return rc;
    }
    if (c->row >= c->comp.nrows) { /* this file is done: the next one */
      close_file(c);
      continue;
    }
    const tarn_entry_header *h = &c->comp.rows[c->row];
    const uint8_t *p;
    size_t n;
    int is_null;
    int rc = tarn_parquet_next(c->pq, &p, &n, &is_null); /* step 4 */
    if (rc == TARN_EEND)
      return tarn__err(TARN_ECORRUPT, "compacted file %s has fewer rows than its companion",
                       c->path);
    if (rc)
      return rc;
    c->row++;
    if (h->record_count < 1 || h->offset < 0 || (is_null && h->entry_size != 0) ||
        (!is_null && n != (size_t)h->entry_size))
      return tarn__err(TARN_ECORRUPT,
                       "compacted file %s, row %zu: payload of %zu bytes, header says %d bytes "
                       "and %d records",
                       c->path, c->row - 1, is_null ? 0 : n, h->entry_size, h->record_count);
    uint64_t off = (uint64_t)h->offset, end = off + (uint64_t)h->record_count;
    if (end <= c->next) /* before the entry that holds the first offset asked for */
      continue;
    if (off > c->next)
      return tarn__err(TARN_ECORRUPT, "compacted file %s: no entry holds offset %llu", c->path,
                       (unsigned long long)c->next);
    c->next = end;
    e->log_id = c->log_id;
    e->offset = off;
    e->record_count = (uint32_t)h->record_count;
    e->timestamp_ms = h->timestamp_ms; /* LS-064: from the row */
    e->payload = is_null ? (const uint8_t *)"" : p;
    e->payload_len = is_null ? 0 : n;
    e->cumulative_size = (uint64_t)h->cumulative_size;
    return 0;
  }
}
