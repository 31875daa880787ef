/* fsck: a deployment's invariants, log by log (tarn/fsck.h, docs/fsck.md). */
#include "tarn/fsck.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tarn/catalog.h"
#include "tarn/companion.h"
#include "tarn/entryindex.h"
#include "tarn/fileindex.h"
#include "tarn/key.h"
#include "tarn/parquet.h"
#include "tarn/reader.h"
#include "tarn/trim.h"
#include "tarn/wal.h"
#include "util/error.h"

#define PAGE 256

/* LS-001: the format version of the first index record fsck met in the
 * deployment, and where; every other record's version must be the same. */
typedef struct versions {
  int ver;                  /* 0: none met yet */
  uint64_t log_id, faulted; /* where it was met; the last log reported as differing */
  char key[TARN_KEY_LEN + 1];
} versions;

/* One index record as fsck keeps it for the adjacency checks. */
typedef struct span {
  uint64_t start, end, cum;
  int64_t size;
} span;

/* A RAW record's WAL section, for the double-index check (issue 31 item 4). */
typedef struct rawref {
  char *loc, *key;
  uint64_t start, end;
} rawref;

typedef struct ctx {
  tarn_meta *meta;
  tarn_objstore *wal, *compacted;
  const tarn_fsck_options *o;
  tarn_fsck_report *rep;
  uint64_t log_id, b;
  const char *ns, *name;
  int oom;
  int lost;     /* the record before was unreadable: its range is unknown */
  rawref *raws; /* the log's RAW records, by their WAL object */
  size_t n_raws, cap_raws;
  int ver;                        /* LS-001: the format version of the record before, or 0 */
  char ver_key[TARN_KEY_LEN + 1]; /* the first record of that version */
  versions *dep;                  /* the deployment's first version, across logs */
} ctx;

static void fault(ctx *c, const char *kind, uint64_t offset, const char *key, const char *object,
                  const char *fmt, ...) __attribute__((format(printf, 6, 7)));
static void fault(ctx *c, const char *kind, uint64_t offset, const char *key, const char *object,
                  const char *fmt, ...) {
  tarn_fsck_report *r = c->rep;
  tarn_fsck_fault *v = realloc(r->faults, (r->n_faults + 1) * sizeof *v);
  if (!v) {
    c->oom = 1;
    return;
  }
  r->faults = v;
  tarn_fsck_fault *f = &v[r->n_faults];
  memset(f, 0, sizeof *f);
  f->log_id = c->log_id;
  f->offset = offset;
  snprintf(f->kind, sizeof f->kind, "%s", kind);
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  f->key = key ? strdup(key) : NULL;
  f->object = object ? strdup(object) : NULL;
  f->message = strdup(msg);
  if (!f->message || (key && !f->key) || (object && !f->object)) {
    free(f->key);
    free(f->object);
    free(f->message);
    c->oom = 1;
    return;
  }
  r->n_faults++;
  if (c->o && c->o->on_fault)
    c->o->on_fault(c->o->fault_arg, f);
}

/* A check that could not run for want of memory is no fault of the
 * deployment: the run stops and fails with TARN_ENOMEM instead. */
static int oom(ctx *c, int rc) {
  if (rc == TARN_ENOMEM)
    c->oom = 1;
  return c->oom;
}

/* ---- RAW records ------------------------------------------------------------ */

static void check_raw(ctx *c, const char *key, const tarn_entry_index *ei, uint64_t start,
                      uint64_t end) {
  const char *loc = ei->location;
  tarn_buf obj = TARN_BUF_INIT;
  int rc = tarn_objstore_get(c->wal, loc, &obj);
  if (rc == TARN_ENOTFOUND) {
    if (end > c->b) /* below B its object may have been reclaimed */
      fault(c, "wal-missing", start, key, loc, "the WAL object of a record above B is missing");
    tarn_buf_free(&obj);
    return;
  }
  if (rc) {
    if (!oom(c, rc))
      fault(c, "wal-object", start, key, loc, "cannot read the WAL object: %s", tarn_errmsg());
    tarn_buf_free(&obj);
    return;
  }
  c->rep->bytes_read += obj.len;
  tarn_wal w;
  if ((rc = tarn_wal_decode(obj.data, obj.len, &w))) {
    if (!oom(c, rc))
      fault(c, "wal-object", start, key, loc, "%s", tarn_errmsg());
    tarn_buf_free(&obj);
    return;
  }
  const tarn_wal_section *s = tarn_wal_find(&w, c->log_id);
  if (!s) {
    fault(c, "wal-section", start, key, loc, "the object has no section of log %llu",
          (unsigned long long)c->log_id);
  } else {
    if (s->entry_count != (size_t)ei->entry_count)
      fault(c, "wal-section", start, key, loc, "the section has %zu entries, the record %d",
            s->entry_count, (int)ei->entry_count);
    if (s->record_total != (uint64_t)ei->message_count)
      fault(c, "wal-section", start, key, loc,
            "the section holds %llu records, the record's message_count is %d",
            (unsigned long long)s->record_total, (int)ei->message_count);
    if (s->payload_total != (uint64_t)ei->entry_size_bytes)
      fault(c, "wal-section", start, key, loc,
            "the section's payloads total %llu bytes, the record's entry_size_bytes is %lld",
            (unsigned long long)s->payload_total, (long long)ei->entry_size_bytes);
    if (ei->has_file_size && w.version == TARN_WAL_VERSION &&
        (uint64_t)ei->file_size != w.payload_region_size)
      fault(c, "wal-section", start, key, loc,
            "the payload region is %llu bytes, the record's file_size is %lld",
            (unsigned long long)w.payload_region_size, (long long)ei->file_size);
    if (ei->boundaries && s->entry_count == ei->n_boundaries) {
      uint64_t acc = 0;
      for (size_t i = 0; i < s->entry_count; i++) {
        acc += s->entries[i].record_count;
        if (acc != ei->boundaries[i]) {
          fault(c, "wal-section", start, key, loc,
                "entry %zu ends at record %llu of the section, entry_offsets says %u", i,
                (unsigned long long)acc, ei->boundaries[i]);
          break;
        }
      }
    }
  }
  tarn_wal_free(&w);
  tarn_buf_free(&obj);
}

/* ---- PARQUET records -------------------------------------------------------- */

typedef struct src {
  tarn_objstore *s;
  const char *name;
} src;

static int read_at(void *x, uint64_t off, void *buf, size_t n) {
  src *s = x;
  size_t got = 0;
  int rc = tarn_objstore_read(s->s, s->name, off, buf, n, &got);
  if (!rc && got != n)
    rc = tarn__err(TARN_ECORRUPT, "%s: short read at %llu", s->name, (unsigned long long)off);
  return rc;
}

/* The companion's rows: contiguous, within [base, last], the last ending at
 * last + 1, each cumulative size following on *cum_before. */
static void check_rows(ctx *c, const char *key, uint64_t start, const char *ipath, int64_t base,
                       int64_t last, const tarn_companion *comp, uint64_t *cum_before) {
  if (comp->nrows == 0) {
    fault(c, "companion", start, key, ipath, "the companion has no rows");
    *cum_before = UINT64_MAX;
  }
  for (size_t i = 0; i < comp->nrows; i++) {
    const tarn_entry_header *h = &comp->rows[i];
    if (i == 0 && h->offset != base && !(h->offset > base && (uint64_t)h->offset <= c->b))
      fault(c, "companion", (uint64_t)h->offset, key, ipath,
            "the first row starts at %lld, the file index says the file starts at %lld",
            (long long)h->offset, (long long)base);
    if (i > 0 && h->offset != comp->rows[i - 1].offset + comp->rows[i - 1].record_count)
      fault(c, "companion", (uint64_t)h->offset, key, ipath,
            "row %zu starts at %lld, the row before it ends at %lld", i, (long long)h->offset,
            (long long)(comp->rows[i - 1].offset + comp->rows[i - 1].record_count));
    if (*cum_before != UINT64_MAX && (i > 0 || h->offset == base) &&
        (uint64_t)h->cumulative_size != *cum_before + (uint64_t)h->entry_size)
      fault(c, "cumulative", (uint64_t)h->offset, key, ipath,
            "row %zu's cumulative size is %lld, %llu expected", i, (long long)h->cumulative_size,
            (unsigned long long)(*cum_before + (uint64_t)h->entry_size));
    *cum_before = (uint64_t)h->cumulative_size;
  }
  if (comp->nrows &&
      comp->rows[comp->nrows - 1].offset + comp->rows[comp->nrows - 1].record_count != last + 1)
    fault(c, "companion", start, key, ipath,
          "the last row ends at %lld, the file index's last offset is %lld",
          (long long)(comp->rows[comp->nrows - 1].offset +
                      comp->rows[comp->nrows - 1].record_count - 1),
          (long long)last);
}

/* The Parquet file: its row count and payload sizes against the companion's. */
static void check_payloads(ctx *c, const char *key, uint64_t start, const char *path, uint64_t size,
                           const tarn_companion *comp) {
  tarn_parquet_reader *pq = NULL;
  int rc;
  src s = {c->compacted, path};
  if ((rc = tarn_parquet_open(&pq, read_at, &s, size, NULL))) {
    if (!oom(c, rc))
      fault(c, "parquet", start, key, path, "%s", tarn_errmsg());
    return;
  }
  c->rep->bytes_read += size;
  const tarn_parquet_meta *pm = tarn_parquet_get_meta(pq);
  if (pm->num_rows != (int64_t)comp->nrows) {
    fault(c, "parquet", start, key, path, "the file has %lld rows, its companion %zu",
          (long long)pm->num_rows, comp->nrows);
    goto out;
  }
  for (size_t i = 0; i < comp->nrows; i++) {
    const uint8_t *p;
    size_t n;
    int is_null;
    if ((rc = tarn_parquet_next(pq, &p, &n, &is_null))) {
      if (!oom(c, rc))
        fault(c, "parquet", (uint64_t)comp->rows[i].offset, key, path, "row %zu: %s", i,
              tarn_errmsg());
      break;
    }
    if ((is_null ? 0 : n) != (size_t)comp->rows[i].entry_size) {
      fault(c, "parquet", (uint64_t)comp->rows[i].offset, key, path,
            "row %zu's payload is %zu bytes, its companion row says %d", i, is_null ? 0 : n,
            (int)comp->rows[i].entry_size);
      break;
    }
  }
out:
  tarn_parquet_close(pq);
}

/* One file of a PARQUET record holding [base, last]; *cum_before is the
 * cumulative size before the file's first row (UINT64_MAX: unknown), updated
 * to after its last row. */
static void check_file(ctx *c, const char *key, uint64_t start, uint64_t end, const char *fname,
                       int64_t base, int64_t last, uint64_t *cum_before) {
  size_t dl = strlen(c->ns) + strlen(c->name) + strlen(fname) + 8;
  char *path = malloc(dl), *ipath = malloc(dl);
  if (!path || !ipath) {
    c->oom = 1;
    free(path);
    free(ipath);
    return;
  }
  const char *dot = strstr(fname, ".parquet");
  snprintf(path, dl, "%s/%s/%s", c->ns, c->name, fname);
  snprintf(ipath, dl, "%s/%s/%.*s.index", c->ns, c->name,
           (int)(dot ? dot - fname : (ptrdiff_t)strlen(fname)), fname);
  uint64_t size = 0;
  tarn_buf gz = TARN_BUF_INIT;
  tarn_companion comp;
  memset(&comp, 0, sizeof comp);
  int have_comp = 0;
  c->rep->compacted_files++;
  int rc = tarn_objstore_head(c->compacted, path, &size);
  if (rc == TARN_ENOTFOUND ||
      (rc == 0 && (rc = tarn_objstore_get(c->compacted, ipath, &gz)) == TARN_ENOTFOUND)) {
    if (end > c->b)
      fault(c, "compacted-missing", start, key, rc == 0 ? ipath : path,
            "a compacted file or companion of a record above B is missing");
    *cum_before = UINT64_MAX;
    goto out;
  }
  if (rc) {
    if (!oom(c, rc))
      fault(c, "parquet", start, key, path, "cannot read: %s", tarn_errmsg());
    *cum_before = UINT64_MAX;
    goto out;
  }
  c->rep->bytes_read += gz.len;
  if ((rc = tarn_companion_decode(&comp, gz.data, gz.len, 0))) {
    if (!oom(c, rc))
      fault(c, "companion", start, key, ipath, "%s", tarn_errmsg());
    *cum_before = UINT64_MAX;
    goto out;
  }
  have_comp = 1;
  check_rows(c, key, start, ipath, base, last, &comp, cum_before);
  check_payloads(c, key, start, path, size, &comp);
out:
  if (have_comp)
    tarn_companion_free(&comp);
  tarn_buf_free(&gz);
  free(path);
  free(ipath);
}

static void check_parquet(ctx *c, const char *key, const tarn_entry_index *ei, uint64_t start,
                          uint64_t end, uint64_t cum) {
  tarn_file_index fi;
  int rc = tarn_file_index_decode_base64(ei->file_index, strlen(ei->file_index), &fi);
  if (rc) {
    if (!oom(c, rc))
      fault(c, "file-index", start, key, NULL, "%s", tarn_errmsg());
    return;
  }
  if (fi.files[fi.n - 1].last_offset != (int64_t)end - 1 ||
      fi.files[0].last_offset < (int64_t)start)
    fault(c, "file-index", start, key, fi.files[fi.n - 1].name,
          "the files cover up to offset %lld from %lld, the record is [%llu, %llu)",
          (long long)fi.files[fi.n - 1].last_offset, (long long)fi.files[0].last_offset,
          (unsigned long long)start, (unsigned long long)end);
  if (!c->ns) {
    fault(c, "file-index", start, key, NULL, "the log has a PARQUET record and no stream");
  } else {
    uint64_t cb = cum - (uint64_t)ei->entry_size_bytes;
    for (size_t i = 0; i < fi.n && !c->oom; i++) {
      int64_t base = i ? fi.files[i - 1].last_offset + 1 : (int64_t)start;
      check_file(c, key, start, end, fi.files[i].name, base, fi.files[i].last_offset, &cb);
    }
    if (!c->oom && cb != UINT64_MAX && cb != cum) { /* a file left unchecked proves nothing */
      char path[1200];
      snprintf(path, sizeof path, "%s/%s/%s", c->ns, c->name, fi.files[fi.n - 1].name);
      fault(c, "cumulative", start, key, path,
            "the last row's cumulative size is %llu, the key's %llu", (unsigned long long)cb,
            (unsigned long long)cum);
    }
  }
  tarn_file_index_free(&fi);
}

/* ---- the index records -------------------------------------------------------- */

typedef struct spans {
  span *v;
  size_t n, cap;
} spans;

static int spans_push(spans *s, span x) {
  if (s->n == s->cap) {
    size_t cap = s->cap ? 2 * s->cap : 64;
    span *v = realloc(s->v, cap * sizeof *v);
    if (!v)
      return tarn__err(TARN_ENOMEM, "out of memory");
    s->v = v;
    s->cap = cap;
  }
  s->v[s->n++] = x;
  return 0;
}

/* Adjacency and cumulative sizes of record x (of type file_type) after the
 * records in *s. */
static void check_adjacent(ctx *c, spans *s, span x, int file_type, const char *key) {
  if (c->lost) { /* nothing to compare with: the fault before says why */
    c->lost = 0;
    return;
  }
  if (s->n == 0) {
    if (x.start == 0 && x.cum - (uint64_t)x.size != 0)
      fault(c, "cumulative", x.start, key, NULL,
            "the first record's cumulative size %llu minus entry_size_bytes %lld is not 0",
            (unsigned long long)x.cum, (long long)x.size);
    else if (x.start > c->b)
      fault(c, "gap", 0, key, NULL, "offsets [0, %llu) above B = %llu have no record",
            (unsigned long long)x.start, (unsigned long long)c->b);
    return;
  }
  span *p = &s->v[s->n - 1];
  if (x.start == p->end) {
    if (x.cum - (uint64_t)x.size != p->cum)
      fault(c, "cumulative", x.start, key, NULL,
            "cumulative size %llu minus entry_size_bytes %lld is %llu, the previous key's is %llu",
            (unsigned long long)x.cum, (long long)x.size,
            (unsigned long long)(x.cum - (uint64_t)x.size), (unsigned long long)p->cum);
  } else if (x.start > p->end) {
    if (x.start > c->b) /* the spec's second exception lies at or below B */
      fault(c, "gap", p->end, key, NULL, "offsets [%llu, %llu) have no record",
            (unsigned long long)p->end, (unsigned long long)x.start);
  } else {
    /* The first exception: between C3 and C4 a PARQUET record [s, e) overlaps
     * the records it replaces, which start at s. */
    size_t j = s->n;
    while (j > 0 && s->v[j - 1].start > x.start)
      j--;
    if (file_type == TARN_FILE_PARQUET && j > 0 && s->v[j - 1].start == x.start) {
      span *first = &s->v[j - 1];
      c->rep->warnings++;
      if (x.cum - (uint64_t)x.size != first->cum - (uint64_t)first->size)
        fault(c, "cumulative", x.start, key, NULL,
              "the PARQUET record's cumulative size before it is %llu, the records it "
              "replaces say %llu",
              (unsigned long long)(x.cum - (uint64_t)x.size),
              (unsigned long long)(first->cum - (uint64_t)first->size));
      s->n = j - 1; /* x replaces them */
    } else {
      fault(c, "overlap", x.start, key, NULL, "the record [%llu, %llu) overlaps [%llu, %llu)",
            (unsigned long long)x.start, (unsigned long long)x.end, (unsigned long long)p->start,
            (unsigned long long)p->end);
    }
  }
}

/* ---- one section indexed twice (issue 31 item 4) ---------------------------- */

static void raw_push(ctx *c, const char *loc, const char *key, uint64_t start, uint64_t end) {
  if (c->n_raws == c->cap_raws) {
    size_t cap = c->cap_raws ? 2 * c->cap_raws : 64;
    rawref *v = realloc(c->raws, cap * sizeof *v);
    if (!v) {
      c->oom = 1;
      return;
    }
    c->raws = v, c->cap_raws = cap;
  }
  rawref *x = &c->raws[c->n_raws];
  x->loc = strdup(loc ? loc : "");
  x->key = strdup(key);
  x->start = start, x->end = end;
  if (!x->loc || !x->key) {
    free(x->loc), free(x->key);
    c->oom = 1;
    return;
  }
  c->n_raws++;
}

static int rawref_cmp(const void *a, const void *b) {
  const rawref *x = a, *y = b;
  int d = strcmp(x->loc, y->loc);
  return d ? d : (x->start > y->start) - (x->start < y->start);
}

/* A writer puts one section of a log in an object and indexes it with one
 * record (A3); a retried object gets a new name. Two RAW records of the log
 * naming one object therefore index the same entries twice: an append whose
 * index put was applied twice (issue 31 item 1, found on etcd), acknowledged
 * at most once, read twice. */
static void check_double(ctx *c) {
  if (c->n_raws > 1)
    qsort(c->raws, c->n_raws, sizeof *c->raws, rawref_cmp);
  for (size_t i = 1; i < c->n_raws; i++) {
    const rawref *p = &c->raws[i - 1], *x = &c->raws[i];
    if (strcmp(p->loc, x->loc) == 0)
      fault(c, "index-double", x->start, x->key, x->loc,
            "the WAL section of log %llu is indexed twice: offsets [%llu, %llu) (key %s) "
            "hold the same entries as [%llu, %llu)",
            (unsigned long long)c->log_id, (unsigned long long)x->start, (unsigned long long)x->end,
            x->key, (unsigned long long)p->start, (unsigned long long)p->end);
  }
  for (size_t i = 0; i < c->n_raws; i++)
    free(c->raws[i].loc), free(c->raws[i].key);
  free(c->raws);
  c->raws = NULL, c->n_raws = c->cap_raws = 0;
}

/* LS-001: one format version per deployment, so per log. tarn writes
 * version 3 only and refuses to append to a legacy log
 * (log/format_version.c); a log that mixes versions was appended to by an
 * older tarn or another writer, and neither Ursa (which reads the version
 * from its configuration, not the bytes) nor the spec's reader can read all
 * of it. One fault where the version changes along the log, and one for the
 * first log whose version is not the deployment's. */
static void check_version(ctx *c, int ver, const char *key, uint64_t start) {
  if (c->ver && ver != c->ver)
    fault(c, "version-mixed", start, key, NULL,
          "log %llu mixes format versions (LS-001): this record is a version %d value, "
          "the records before it from %s are version %d",
          (unsigned long long)c->log_id, ver, c->ver_key, c->ver);
  if (ver != c->ver)
    c->ver = ver, (void)snprintf(c->ver_key, sizeof c->ver_key, "%s", key);
  versions *d = c->dep;
  if (!d->ver) {
    d->ver = ver, d->log_id = c->log_id;
    snprintf(d->key, sizeof d->key, "%s", key);
  } else if (d->log_id != c->log_id && d->faulted != c->log_id && d->ver != ver) {
    fault(c, "version-mixed", start, key, NULL,
          "the deployment mixes format versions (LS-001): log %llu holds a version %d record, "
          "log %llu version %d (record %s)",
          (unsigned long long)c->log_id, ver, (unsigned long long)d->log_id, d->ver, d->key);
    d->faulted = c->log_id; /* one fault per log that differs, not per record */
  }
}

static void check_record(ctx *c, spans *s, const tarn_meta_rec *r) {
  tarn_key k;
  if (tarn_key_parse(r->key, strlen(r->key), &k) || k.log_id != c->log_id) {
    fault(c, "key", 0, r->key, NULL, "not an index key of log %llu: %s",
          (unsigned long long)c->log_id, tarn_errmsg());
    return;
  }
  int ver = tarn_index_value_detect_version(r->value, r->value_len);
  tarn_entry_index ei;
  memset(&ei, 0, sizeof ei);
  span x = {.end = k.end_offset, .cum = k.cumulative_size};
  int file_type;
  if (ver == 3) {
    int rc = tarn_entry_index_decode(r->value, r->value_len, &ei);
    if (rc) {
      if (!oom(c, rc))
        fault(c, "value", k.end_offset, r->key, NULL, "%s", tarn_errmsg());
      s->n = 0; /* its range is unknown: restart the adjacency checks after it */
      c->lost = 1;
      return;
    }
    x.size = ei.entry_size_bytes;
    file_type = ei.file_type;
    x.start = k.end_offset - (uint64_t)ei.message_count;
  } else {
    tarn_legacy_index_value lv;
    int rc = ver < 0 ? ver : tarn_legacy_index_value_parse(r->value, r->value_len, &lv);
    if (rc) {
      if (!oom(c, rc))
        fault(c, "value", k.end_offset, r->key, NULL, "%s", tarn_errmsg());
      s->n = 0;
      c->lost = 1;
      return;
    }
    x.size = lv.entry_size_bytes;
    file_type = lv.has_file_type ? lv.file_type : TARN_FILE_RAW;
    x.start = k.end_offset - (uint64_t)lv.message_count;
    if ((uint64_t)lv.message_count > k.end_offset)
      x.start = 0;
    tarn_legacy_index_value_free(&lv);
  }
  if ((uint64_t)(ver == 3 ? ei.message_count : 0) > k.end_offset ||
      (uint64_t)x.size > k.cumulative_size) {
    fault(c, "value", k.end_offset, r->key, NULL,
          "message_count or entry_size_bytes exceed the key's end offset or cumulative size");
    tarn_entry_index_free(&ei);
    s->n = 0;
    c->lost = 1;
    return;
  }
  check_version(c, ver, r->key, x.start);
  check_adjacent(c, s, x, file_type, r->key);
  if (spans_push(s, x))
    c->oom = 1;
  if (ver == 3 && file_type == TARN_FILE_RAW) {
    check_raw(c, r->key, &ei, x.start, x.end);
    raw_push(c, ei.location, r->key, x.start, x.end);
  } else if (ver == 3 && file_type == TARN_FILE_PARQUET && ++c->rep->compacted_records)
    check_parquet(c, r->key, &ei, x.start, x.end, x.cum);
  tarn_entry_index_free(&ei);
}

/* Reads every entry at or above B; on a failure, records it and goes on from
 * the end of the record that holds the offset. */
static int read_all(ctx *c, const spans *s) {
  if (s->n == 0 || s->v[s->n - 1].end <= c->b)
    return 0;
  tarn_reader *r;
  tarn_reader_options ro;
  tarn_reader_options_default(&ro);
  ro.index_ttl_ms = 0;
  ro.head_cache_bytes = 0;
  int rc = tarn_reader_open(c->meta, c->wal, c->compacted, &ro, &r);
  if (rc)
    return rc;
  uint64_t pos = c->b, end = s->v[s->n - 1].end;
  uint64_t cum = UINT64_MAX;
  while (pos < end && !c->oom) {
    tarn_log_iter *it;
    if ((rc = tarn_log_iter_open(r, c->log_id, pos, &it)))
      break;
    tarn_entry e;
    while ((rc = tarn_log_iter_next(it, &e, 0)) == 0) {
      c->rep->entries_read++;
      if (cum != UINT64_MAX && e.offset == pos && e.cumulative_size != cum + e.payload_len)
        fault(c, "read", e.offset, NULL, NULL, "entry's cumulative size %llu, %llu expected",
              (unsigned long long)e.cumulative_size, (unsigned long long)(cum + e.payload_len));
      pos = e.offset + e.record_count;
      cum = e.cumulative_size;
    }
    tarn_log_iter_close(it);
    if (rc == TARN_EEND && pos >= end) {
      rc = 0;
      break;
    }
    /* a fault at pos: skip to the end of the record holding it */
    uint64_t next = end;
    for (size_t i = 0; i < s->n; i++)
      if (s->v[i].start <= pos && pos < s->v[i].end) {
        next = s->v[i].end;
        break;
      } else if (s->v[i].start > pos) {
        next = s->v[i].start;
        break;
      }
    if (oom(c, rc))
      break;
    fault(c, "read", pos, NULL, NULL, "entries from offset %llu do not read: %s",
          (unsigned long long)pos, rc == TARN_EEND ? "the log ends early" : tarn_errmsg());
    pos = next > pos ? next : pos + 1;
    cum = UINT64_MAX;
    rc = 0;
  }
  tarn_reader_close(r);
  return rc;
}

static int fsck_log(tarn_meta *meta, tarn_objstore *wal, tarn_objstore *compacted, uint64_t log_id,
                    const char *ns, const char *name, const tarn_fsck_options *o,
                    tarn_fsck_report *rep, versions *dep) {
  ctx c = {meta, wal, compacted, o, rep, log_id, 0, ns, name, 0, 0, NULL, 0, 0, 0, "", dep};
  int rc = tarn_trim_marker_read(meta, log_id, &c.b, NULL);
  if (rc && !oom(&c, rc)) {
    fault(&c, "key", 0, NULL, NULL, "the trim marker does not read: %s", tarn_errmsg());
    c.b = 0;
  }
  rep->logs++;
  char part[TARN_KEY_PARTITION_LEN + 1], a[TARN_KEY_LEN + 1], b[TARN_KEY_LEN + 1];
  tarn_key_partition(part, log_id);
  tarn_key_format(a, log_id, 0, 0);
  tarn_key_format(b, log_id, TARN_KEY_MAX, TARN_KEY_MAX);
  spans s = {0};
  int flags = 0;
  char after[TARN_KEY_LEN + 1];
  for (;;) {
    tarn_meta_recs recs;
    if ((rc = tarn_meta_scan(meta, part, flags ? after : a, b, flags, PAGE, &recs)))
      break;
    for (size_t i = 0; i < recs.n && !c.oom; i++) {
      rep->records++;
      check_record(&c, &s, &recs.v[i]);
    }
    int more = recs.more && recs.n > 0;
    if (more)
      snprintf(after, sizeof after, "%s", recs.v[recs.n - 1].key);
    tarn_meta_recs_free(&recs);
    if (!more)
      break;
    flags = TARN_META_AFTER;
  }
  check_double(&c);
  if (!rc && !(o && o->skip_read))
    rc = read_all(&c, &s);
  free(s.v);
  if (!rc && c.oom)
    rc = tarn__err(TARN_ENOMEM, "out of memory");
  return rc;
}

int tarn_fsck_log(tarn_meta *meta, tarn_objstore *wal, tarn_objstore *compacted, uint64_t log_id,
                  const char *ns, const char *name, const tarn_fsck_options *o,
                  tarn_fsck_report *rep) {
  versions dep = {0};
  return fsck_log(meta, wal, compacted, log_id, ns, name, o, rep, &dep);
}

int tarn_fsck_run(tarn_meta *meta, tarn_objstore *wal, tarn_objstore *compacted,
                  const tarn_fsck_options *o, tarn_fsck_report *rep) {
  memset(rep, 0, sizeof *rep);
  tarn_catalog *cat;
  int rc = tarn_catalog_open(meta, NULL, &cat);
  if (rc)
    return rc;
  tarn_catalog_record *st = NULL;
  size_t n = 0;
  rc = tarn_catalog_list_streams(cat, &st, &n);
  tarn_catalog_close(cat);
  if (rc)
    return rc;
  size_t total = 0, done = 0;
  versions dep = {0};
  for (size_t i = 0; i < n; i++)
    if (st[i].state == TARN_STREAM_ACTIVE)
      total += st[i].n_logs;
  for (size_t i = 0; i < n && !rc; i++) {
    if (st[i].state != TARN_STREAM_ACTIVE) /* a deleted log may hold late writes */
      continue;
    rep->streams++;
    for (size_t p = 0; p < st[i].n_logs && !rc; p++) {
      if (o && o->progress)
        o->progress(o->progress_arg, done, total, st[i].logs[p]);
      rc = fsck_log(meta, wal, compacted, st[i].logs[p], st[i].ns, st[i].name, o, rep, &dep);
      done++;
    }
  }
  tarn_catalog_records_free(st, n);
  if (rc) /* the faults found before the error would leak: callers free only after success */
    tarn_fsck_report_free(rep);
  return rc;
}

void tarn_fsck_report_free(tarn_fsck_report *rep) {
  for (size_t i = 0; i < rep->n_faults; i++) {
    free(rep->faults[i].key);
    free(rep->faults[i].object);
    free(rep->faults[i].message);
  }
  free(rep->faults);
  memset(rep, 0, sizeof *rep);
}
