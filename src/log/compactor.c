/* The compactor: C1 plan, C2 write, C3–C5 install (spec "Compaction",
 * "Compacted objects"; docs/compaction.md). */
#define _POSIX_C_SOURCE 200809L
#include "tarn/compactor.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log/compactor_intent.h"
#include "log/compactor_internal.h"
#include "log/ephemeral.h"
#include "log/index_scan.h"
#include "tarn/catalog.h"
#include "tarn/companion.h"
#include "tarn/entryindex.h"
#include "tarn/kafka_topics.h"
#include "tarn/key.h"
#include "tarn/lease.h"
#include "tarn/parquet.h"
#include "tarn/trim.h"
#include "tarn/wal.h"
#include "util/clock.h"
#include "util/error.h"
#include "util/planted.h"
#include "util/random.h"
#include "util/sb.h"

/* ---- options ------------------------------------------------------------- */

void tarn_compactor_options_default(tarn_compactor_options *o) {
  memset(o, 0, sizeof *o);
  o->max_range_bytes = (uint64_t)256 << 20;
  o->max_age_ms = 180000;
  o->max_file_bytes = (uint64_t)128 << 20;
  o->codec = TARN_PARQUET_ZSTD;
  o->install_attempts = 5;
  o->compress_threads = 1;
}

/* ---- the compactor ------------------------------------------------------- */

struct tarn_compactor {
  tarn_meta *meta;
  tarn_objstore *wal, *compacted;
  tarn_compactor_options o;
};

int tarn_compactor_open(tarn_meta *meta, tarn_objstore *wal, tarn_objstore *compacted,
                        const tarn_compactor_options *o, tarn_compactor **out) {
  if (o && o->max_range_bytes > TARN_COMPACT_RANGE_BYTES_MAX) /* LS-032 */
    return tarn__err(TARN_EINVAL,
                     "max_range_bytes %" PRIu64 " would let a range reach 2^31 "
                     "bytes; at most %u",
                     o->max_range_bytes, TARN_COMPACT_RANGE_BYTES_MAX);
  tarn_compactor *c = calloc(1, sizeof *c);
  if (!c)
    return tarn__err(TARN_ENOMEM, "out of memory");
  c->meta = meta;
  c->wal = wal;
  c->compacted = compacted;
  if (o)
    c->o = *o;
  else
    tarn_compactor_options_default(&c->o);
  if (c->o.install_attempts < 1)
    c->o.install_attempts = 1;
  if (!c->o.max_file_bytes)
    c->o.max_file_bytes = (uint64_t)128 << 20;
  *out = c;
  return 0;
}

void tarn_compactor_close(tarn_compactor *c) { free(c); }

tarn_meta *tarn__compactor_meta(tarn_compactor *c) { return c->meta; }

/* The stream directory of log_id and, optionally, its binding identifiers. */
static int stream_of(tarn_compactor *c, uint64_t log_id, char **dir, const char **serde,
                     const char **record, char **owned_serde, char **owned_record) {
  tarn_catalog *cat = NULL;
  tarn_catalog_record lr, sr;
  memset(&lr, 0, sizeof lr);
  memset(&sr, 0, sizeof sr);
  int rc = tarn_catalog_open(c->meta, NULL, &cat);
  if (!rc)
    rc = tarn_catalog_log_stream(cat, log_id, &lr);
  if (rc == TARN_ENOTFOUND)
    rc = tarn__err(TARN_ENOTFOUND, "log %llu belongs to no stream of the catalog",
                   (unsigned long long)log_id);
  if (!rc) {
    size_t n = strlen(lr.ns) + strlen(lr.name) + 3;
    if (!(*dir = malloc(n)))
      rc = tarn__err(TARN_ENOMEM, "out of memory");
    else
      snprintf(*dir, n, "%s/%s/", lr.ns, lr.name); /* LS-012 */
  }
  if (!rc && serde) {
    *serde = TARN_PARQUET_TARN_SERDE;
    *record = TARN_PARQUET_TARN_RECORD;
    if (tarn_catalog_open_stream(cat, lr.ns, lr.name, &sr) == 0) {
      /* issue 31: the one rule of a Kafka stream, the writer's too
       * (tarn_kafka_stream_is_kafka): its entries were checked as Kafka
       * batches, and only its files are Kafka-typed */
      int kafka = tarn_kafka_stream_is_kafka(&sr);
      if (kafka) {
        *serde = TARN_PARQUET_KAFKA_SERDE;
        *record = TARN_PARQUET_KAFKA_RECORD;
      }
      for (size_t i = 0; i < sr.n_props; i++) {
        if (strcmp(sr.props[i].key, TARN_PROP_COMPACTION_SERDE) == 0 && !kafka)
          *serde = *owned_serde = strdup(sr.props[i].value);
        else if (strcmp(sr.props[i].key, TARN_PROP_COMPACTION_RECORD) == 0)
          *record = *owned_record = strdup(sr.props[i].value);
      }
      if (!*serde || !*record)
        rc = tarn__err(TARN_ENOMEM, "out of memory");
    }
    if (c->o.serde_type)
      *serde = c->o.serde_type;
    if (c->o.record_name)
      *record = c->o.record_name;
  }
  tarn_catalog_record_free(&lr);
  tarn_catalog_record_free(&sr);
  tarn_catalog_close(cat);
  return rc;
}

/* ---- C1 ------------------------------------------------------------------ */

typedef struct plan_ctx {
  tarn_compact_range *r;
  const tarn_compactor_options *o;
  int started, closed;
  int full; /* closed before a record that would take it to 2^31 */
  uint64_t prev_end;
  int have_prev;
  int overlap;         /* a record starts below the end of the one before it */
  uint64_t ov_s, ov_e; /* that record's range */
  int ov_parquet;
} plan_ctx;

static int plan_cb(void *ctx, const tarn__ixrec *x) {
  plan_ctx *p = ctx;
  if (p->have_prev && x->start < p->prev_end) {
    /* a compaction interrupted between C3 and C4 (LS-078): its PARQUET record
     * overlaps the RAW records before it; tarn_compact_repair finishes it */
    p->overlap = 1;
    p->ov_s = x->start;
    p->ov_e = x->key.end_offset;
    p->ov_parquet = x->file_type == TARN_FILE_PARQUET;
    return 1;
  }
  int raw_v3 = x->version == 3 && x->file_type == TARN_FILE_RAW;
  int follows = !p->have_prev || x->start == p->prev_end;
  p->prev_end = x->key.end_offset;
  p->have_prev = 1;
  /* LS-078: a PARQUET record whose C4 never ran sits after the RAW records
   * it covers, so it may be well past where the range closed (seed 5095);
   * look on over the RAW records that follow without a gap, so that no range
   * is planned over offsets such a record already covers. */
  if (p->closed)
    return raw_v3 && follows ? 0 : 1;
  if (!p->started) {
    if (!raw_v3) /* LS-075: never a PARQUET (or legacy) record */
      return 0;
    /* LS-068: s is 0 or the end of an earlier record; a first record after a
     * gap (left by a hard trim) starts at an earlier record's end too. */
    p->started = 1;
    p->r->s = x->start;
    p->r->c_s = x->key.cumulative_size - (uint64_t)x->ei.entry_size_bytes;
    p->r->oldest_ms = x->rec->stat.created_ms;
  } else if (!raw_v3 || x->start != p->r->e) {
    p->closed = 1; /* the run ends at a PARQUET record, a legacy one, or a gap; */
    return 0;      /* the next record is still looked at for an overlap */
  } else if (p->r->bytes + (uint64_t)x->ei.entry_size_bytes > TARN_COMPACT_RANGE_BYTES_MAX) {
    p->closed = p->full = 1; /* LS-032: before the record that would reach 2^31 */
    return 0;
  }
  p->r->e = x->key.end_offset;
  p->r->c_e = x->key.cumulative_size;
  p->r->n_records++;
  p->r->bytes += (uint64_t)x->ei.entry_size_bytes;
  if (p->r->bytes >= p->o->max_range_bytes)
    p->closed = 1;
  return 0;
}

int tarn_compact_plan(tarn_compactor *c, uint64_t log_id, int force, tarn_compact_range *out) {
  memset(out, 0, sizeof *out);
  uint64_t b;
  int rc = tarn_trim_marker_read(c->meta, log_id, &b, NULL);
  if (rc)
    return rc;
  char from[TARN_KEY_LEN + 1];
  /* Records ending at or below B are never read: nothing to gain. */
  if ((rc = tarn_key_format(from, log_id, b, TARN_KEY_MAX)))
    return rc;
  plan_ctx p = {.r = out, .o = &c->o};
  out->log_id = log_id;
  out->trim = b;
  if ((rc = tarn__index_scan(c->meta, log_id, from, NULL, plan_cb, &p)))
    return rc;
  if (p.overlap && !TARN__PLANTED(TARN__BUG_PLAN_OVER_UNFINISHED)) {
    memset(out, 0, sizeof *out);
    return tarn__err(TARN_EBUSY,
                     "log %" PRIu64 ": the record for [%" PRIu64 ", %" PRIu64
                     ") overlaps the records before it (an interrupted compaction): "
                     "tarn_compact_repair first",
                     log_id, p.ov_s, p.ov_e);
  }
  int64_t now = tarn__now_ms();
  int ready = p.started && (force || p.full || p.r->bytes >= c->o.max_range_bytes ||
                            now - out->oldest_ms >= c->o.max_age_ms);
  if (!ready) {
    memset(out, 0, sizeof *out);
    return TARN_ENOTFOUND;
  }
  if ((rc = stream_of(c, log_id, &out->dir, NULL, NULL, NULL, NULL))) {
    tarn_compact_range_free(out);
    return rc;
  }
  return 0;
}

/* ---- C2 ------------------------------------------------------------------ */

typedef struct wctx {
  tarn_compactor *c;
  tarn_compact_range *r;
  const char *serde, *record;
  tarn_buf obj;             /* the WAL object being read */
  tarn_objstore_upload *up; /* the open Parquet file */
  tarn_parquet_writer *pq;
  tarn_companion_writer *cw;
  tarn_buf comp;
  char *base; /* the open file's name without .parquet */
  uint64_t file_bytes, file_rows;
  int64_t last_end; /* end offset of the last row written */
  uint64_t done, total;
} wctx;

static int up_write(void *ctx, const void *p, size_t n) {
  return tarn_objstore_put_write(ctx, p, n);
}

static int file_open(wctx *w, int64_t first) {
  uint8_t rnd[8];
  int rc = tarn__random(rnd, sizeof rnd, "compacted file name");
  if (rc)
    return rc;
  /* LS-084: the random part starts with the intent's ID, so the intent names
   * every file of the compaction before any exists */
  char hex[33];
  memcpy(hex, w->r->intent, TARN__INTENT_ID_LEN);
  for (int i = 0; i < 8; i++)
    snprintf(hex + TARN__INTENT_ID_LEN + 2 * i, 3, "%02x", rnd[i]);
  /* LS-013, LS-014: a fresh random part makes the name new in the directory;
   * the log and first offset make it readable and let orphans be told apart. */
  /* Built to length, so that a long directory fails loudly instead of
   * truncating the name. */
  tarn_buf base = TARN_BUF_INIT, path = TARN_BUF_INIT, comp_name = TARN_BUF_INIT;
  tarn__sb sb, sp, sc;
  tarn__sb_init(&sb, &base), tarn__sb_init(&sp, &path), tarn__sb_init(&sc, &comp_name);
  tarn__sb_appendf(&sb, "%s%" PRIu64 "-%" PRId64 "-%s", w->r->dir, w->r->log_id, first, hex);
  if ((rc = tarn__sb_cstr(&sb)))
    return rc;
  w->base = (char *)tarn_buf_steal(&base, NULL);
  tarn__sb_appendf(&sp, "%s.parquet", w->base);
  tarn__sb_appendf(&sc, "%s.index", w->base + strlen(w->r->dir));
  if ((rc = tarn__sb_cstr(&sp)) || (rc = tarn__sb_cstr(&sc)))
    goto out;
  if ((rc = tarn_objstore_put_begin(w->c->compacted, (const char *)path.data, &w->up))) {
    rc = tarn__errctx(rc, "compacted file %s", (const char *)path.data);
    goto out;
  }
  tarn_parquet_writer_opts po = {.record_name = w->record,
                                 .entry_serde_type = w->serde,
                                 .row_metadata = (const char *)comp_name.data,
                                 .codec = w->c->o.codec,
                                 .threads = w->c->o.compress_threads};
  rc = tarn_parquet_writer_open(&w->pq, &po, up_write, w->up);
out:
  tarn_buf_free(&path), tarn_buf_free(&comp_name);
  if (rc)
    return rc;
  tarn_buf_reset(&w->comp);
  if ((rc = tarn_companion_writer_open(&w->cw, &w->comp, w->c->o.companion_block_rows, 0)))
    return rc;
  w->file_bytes = w->file_rows = 0;
  return 0;
}

static void file_abort(wctx *w) {
  tarn_parquet_writer_close(w->pq);
  w->pq = NULL;
  tarn_companion_writer_abort(w->cw);
  w->cw = NULL;
  if (w->up)
    tarn_objstore_put_abort(w->up);
  w->up = NULL;
  free(w->base);
  w->base = NULL;
}

static int file_close(wctx *w) {
  uint64_t size = 0;
  int rc = tarn_parquet_writer_finish(w->pq, &size);
  tarn_parquet_writer_close(w->pq);
  w->pq = NULL;
  if (!rc) {
    rc = tarn_objstore_put_commit(w->up);
    w->up = NULL;
  }
  if (!rc) {
    rc = tarn_companion_writer_close(w->cw);
    w->cw = NULL;
  }
  char path[1400];
  snprintf(path, sizeof path, "%s.index", w->base);
  if (!rc)
    rc = tarn_objstore_put(w->c->compacted, path, w->comp.data, w->comp.len); /* LS-062 */
  if (rc) {
    file_abort(w);
    return rc;
  }
  tarn_compact_range *r = w->r;
  tarn_compact_file *nf = realloc(r->files, (r->n_files + 1) * sizeof *nf);
  if (!nf) {
    file_abort(w);
    return tarn__err(TARN_ENOMEM, "out of memory");
  }
  r->files = nf;
  tarn_compact_file *f = &r->files[r->n_files];
  size_t dl = strlen(r->dir);
  f->name = malloc(strlen(w->base) - dl + 9);
  if (!f->name) {
    file_abort(w);
    return tarn__err(TARN_ENOMEM, "out of memory");
  }
  sprintf(f->name, "%s.parquet", w->base + dl);
  f->last_offset = w->last_end - 1;
  f->rows = w->file_rows;
  f->size = size;
  r->n_files++;
  free(w->base);
  w->base = NULL;
  return 0;
}

static int write_cb(void *ctx, const tarn__ixrec *x) {
  wctx *w = ctx;
  tarn_compact_range *r = w->r;
  if (x->key.end_offset > r->e ||
      (TARN__PLANTED(TARN__BUG_C2_STOPS_BEFORE_E) && x->key.end_offset == r->e))
    return 1;
  if (x->version != 3 || x->file_type != TARN_FILE_RAW)
    return tarn__err(TARN_ECONFLICT,
                     "compaction of log %" PRIu64 " [%" PRIu64 ", %" PRIu64
                     "): record %s is no longer RAW",
                     r->log_id, r->s, r->e, x->rec->key);
  /* LS-077: entries ending at or below B are left out, unless the whole
   * range lies there (a file index needs a file). */
  int skip_low = r->e > r->trim;
  if (skip_low && x->key.end_offset <= r->trim)
    return 0;
  int rc = tarn_objstore_get(w->c->wal, x->ei.location, &w->obj);
  if (rc)
    return tarn__errctx(rc, "compaction: WAL object %s of record %s", x->ei.location, x->rec->key);
  tarn_wal wal;
  if ((rc = tarn_wal_decode(w->obj.data, w->obj.len, &wal)))
    return tarn__errctx(rc, "compaction: WAL object %s", x->ei.location);
  const tarn_wal_section *sec = tarn_wal_find(&wal, r->log_id);
  uint64_t sum = 0;
  if (sec)
    for (size_t i = 0; i < sec->entry_count; i++)
      sum += sec->entries[i].payload_size;
  if (!sec || sec->entry_count != (size_t)x->ei.entry_count ||
      sec->record_total != (uint64_t)x->ei.message_count ||
      sum != (uint64_t)x->ei.entry_size_bytes) {
    tarn_wal_free(&wal);
    return tarn__err(TARN_ECORRUPT, "compaction: WAL object %s does not match record %s",
                     x->ei.location, x->rec->key);
  }
  uint64_t o = x->start, cum = x->key.cumulative_size - (uint64_t)x->ei.entry_size_bytes;
  for (size_t i = 0; i < sec->entry_count && !rc; i++) {
    const tarn_wal_entry *en = &sec->entries[i];
    uint64_t end = o + en->record_count;
    cum += en->payload_size;
    if (!(skip_low && end <= r->trim)) {
      if (w->c->o.throttle && (rc = w->c->o.throttle(w->c->o.throttle_ctx, en->payload_size)))
        break;
      if (!w->pq && (rc = file_open(w, (int64_t)o)))
        break;
      /* LS-063, LS-076: the header as read from the RAW record */
      tarn_entry_header h = {
          .offset = (int64_t)o,
          .record_count = (int32_t)en->record_count,
          .timestamp_ms =
              TARN__PLANTED(TARN__BUG_C2_TIMESTAMP_NOW) ? tarn__now_ms() : x->rec->stat.created_ms,
          .entry_size = (int32_t)en->payload_size,
          .cumulative_size = (int64_t)(cum - (TARN__PLANTED(TARN__BUG_C2_CUMULATIVE_BEFORE_ENTRY)
                                                  ? en->payload_size
                                                  : 0))};
      if ((rc = tarn_parquet_writer_add(w->pq, en->payload, en->payload_size))) /* LS-058 */
        break;
      if ((rc = tarn_companion_writer_add(w->cw, &h)))
        break;
      w->file_bytes += en->payload_size;
      w->file_rows++;
      w->last_end = (int64_t)end;
      w->done += en->payload_size;
      if (w->c->o.progress)
        w->c->o.progress(w->c->o.progress_ctx, w->done, w->total);
      /* LS-066: a new file once this one is full, never an empty one */
      if (w->file_bytes >= w->c->o.max_file_bytes && end < r->e)
        rc = file_close(w);
    }
    o = end;
  }
  tarn_wal_free(&wal);
  return rc;
}

int tarn_compact_write(tarn_compactor *c, tarn_compact_range *r) {
  if (r->n_files)
    return tarn__err(TARN_EINVAL, "compaction range already written");
  const char *serde = NULL, *record = NULL;
  char *os = NULL, *orec = NULL, *dir = NULL;
  int rc = stream_of(c, r->log_id, &dir, &serde, &record, &os, &orec);
  if (!rc && r->dir && strcmp(dir, r->dir) != 0)
    rc = tarn__err(TARN_ECONFLICT, "log %" PRIu64 " moved from %s to %s", r->log_id, r->dir, dir);
  if (!rc && !r->dir) {
    r->dir = dir;
    dir = NULL;
  }
  free(dir);
  wctx w = {.c = c, .r = r, .serde = serde, .record = record, .total = r->bytes};
  char from[TARN_KEY_LEN + 1];
  /* LS-084: announced before the first file exists */
  if (!rc)
    rc = tarn__intent_open(c->meta, r->log_id, tarn__now_ms(), r->intent);
  if (!rc)
    rc = tarn_key_format(from, r->log_id, r->s, TARN_KEY_MAX);
  if (!rc)
    rc = tarn__index_scan(c->meta, r->log_id, from, NULL, write_cb, &w);
  if (!rc && w.pq)
    rc = file_close(&w);
  if (!rc && (w.last_end != (int64_t)r->e || r->n_files == 0))
    rc = tarn__err(TARN_ECONFLICT,
                   "compaction of log %" PRIu64 ": the records end at %" PRId64 ", not %" PRIu64,
                   r->log_id, w.last_end, r->e);
  if (rc) {
    file_abort(&w);
    /* the files written stay as orphans for the reclaimer; forget them here
     * (an intent left behind by a failed Delete expires: docs/compaction.md) */
    char why[1024];
    snprintf(why, sizeof why, "%s", tarn_errmsg());
    tarn__intent_drop(c->meta, r->log_id, r->intent);
    tarn__err(rc, "%s", why);
    r->intent[0] = 0;
    for (size_t i = 0; i < r->n_files; i++)
      free(r->files[i].name);
    free(r->files);
    r->files = NULL;
    r->n_files = 0;
  }
  tarn_buf_free(&w.obj);
  tarn_buf_free(&w.comp);
  free(os);
  free(orec);
  return rc;
}

int tarn_compact_value(const tarn_compact_range *r, tarn_buf *out) {
  if (!r->n_files)
    return tarn__err(TARN_EINVAL, "compaction range without files");
  tarn_file_index_entry *fe = calloc(r->n_files, sizeof *fe);
  if (!fe)
    return tarn__err(TARN_ENOMEM, "out of memory");
  for (size_t i = 0; i < r->n_files; i++) {
    fe[i].name = r->files[i].name;
    fe[i].last_offset = r->files[i].last_offset;
  }
  tarn_parquet_record pr = {.location = NULL,
                            .s = (int64_t)r->s,
                            .e = (int64_t)r->e,
                            .c_s = (int64_t)r->c_s,
                            .c_e = (int64_t)r->c_e,
                            .file_size = (int64_t)(r->c_e - r->c_s),
                            .files = fe,
                            .n_files = r->n_files};
  int rc = tarn_entry_index_build_parquet(&pr, out, NULL);
  free(fe);
  return rc;
}

/* ---- the per-log compaction lock (LS-074) -------------------------------- */

struct tarn_compact_lock {
  tarn_meta *meta;
  char key[64];
  int64_t version;
  char val[320];
  /* A create of this acquisition had an unknown outcome: a copy of it may
   * still be in flight and land after the release. */
  int in_flight;
};

/* The lock record's value: the owner, then a random token that tells this
 * acquisition's record from any other holder's with the same owner. */
static int lock_value(const char *owner, char *out, size_t n) {
  uint8_t b[16];
  int rc = tarn__random(b, sizeof b, "compaction lock token");
  if (rc)
    return rc;
  int k = snprintf(out, n, "%s ", owner ? owner : "");
  for (size_t i = 0; i < sizeof b && k > 0 && (size_t)k + 2 < n; i++)
    k += snprintf(out + k, n - (size_t)k, "%02x", b[i]);
  return 0;
}

int tarn_compact_lock_acquire(tarn_meta *m, uint64_t log_id, const char *owner,
                              tarn_compact_lock **out) {
  *out = NULL;
  tarn_compact_lock *l = calloc(1, sizeof *l);
  if (!l)
    return tarn__err(TARN_ENOMEM, "out of memory");
  l->meta = m;
  snprintf(l->key, sizeof l->key, "/locks/%020" PRIu64, log_id);
  int rc = lock_value(owner, l->val, sizeof l->val);
  /* Issue 12 (tarn-sim seed 10516): a create that lands after we gave up
   * must not leave a lock no one releases (log/ephemeral.h). */
  if (!rc)
    rc = tarn__ephemeral_create(m, TARN_COMPACTION_PARTITION, l->key, l->val, &l->version,
                                &l->in_flight);
  if (rc) {
    free(l);
    if (rc == TARN_EEXIST)
      return tarn__err(TARN_EEXIST, "log %" PRIu64 ": another compactor holds its lock", log_id);
    return tarn__errctx(rc, "compaction lock of log %" PRIu64, log_id);
  }
  *out = l;
  return 0;
}

int64_t tarn__compact_lock_version(const tarn_compact_lock *l) { return l->version; }

int tarn_compact_lock_release(tarn_compact_lock *l) {
  if (!l)
    return 0;
  /* A record left behind would block the log's compaction for as long as our
   * session lives (this process keeps it alive): retry a failed Get or
   * Delete — a lost reply, an unavailable store or a transient allocation
   * failure. */
  int rc = 0;
  for (int attempt = 0; attempt < 4; attempt++) {
    /* Only our acquisition's version: a Get then Delete could delete the
     * record of a newer holder created in between. TARN_ECONFLICT: the
     * record is another holder's, ours is gone. */
    rc = tarn_meta_delete_if(
        l->meta, TARN_COMPACTION_PARTITION, l->key,
        TARN__PLANTED(TARN__BUG_LOCK_RELEASE_ANY_VERSION) ? TARN_META_ANY_VERSION : l->version,
        NULL, 0);
    if (rc == 0 || rc == TARN_ENOTFOUND || rc == TARN_ESESSION || rc == TARN_ECONFLICT) {
      rc = 0;
      break;
    }
  }
  /* A copy of the create still in flight may land after this, or the record
   * stayed: the next acquire through this handle deletes it. */
  tarn__ephemeral_released(l->meta, TARN_COMPACTION_PARTITION, l->key, l->val, l->in_flight, rc);
  free(l);
  return rc;
}

/* ---- C3–C5 --------------------------------------------------------------- */

static int progress_key(char out[TARN_KEY_SLASH_MAX], uint64_t log_id) {
  snprintf(out, TARN_KEY_SLASH_MAX, "/compacted-through/%" PRIu64, log_id);
  return 0;
}

/* The progress record's e and version (-1: no record). */
static int progress_get(tarn_meta *m, uint64_t log_id, uint64_t *e, int64_t *version) {
  char part[TARN_KEY_PARTITION_LEN + 1], key[TARN_KEY_SLASH_MAX];
  tarn_key_partition(part, log_id);
  progress_key(key, log_id);
  tarn_meta_rec r = {0};
  *e = 0;
  *version = -1;
  int rc = tarn_meta_get(m, part, key, &r);
  if (rc == TARN_ENOTFOUND)
    return 0;
  if (rc)
    return rc;
  uint64_t v = 0;
  int ok = r.value_len > 0 && r.value_len <= 19;
  for (size_t i = 0; ok && i < r.value_len; i++) {
    if (r.value[i] < '0' || r.value[i] > '9')
      ok = 0;
    else
      v = v * 10 + (uint64_t)(r.value[i] - '0');
  }
  *version = r.stat.version;
  tarn_meta_rec_free(&r);
  if (!ok)
    return tarn__err(TARN_ECORRUPT, "compaction progress of log %" PRIu64 ": not decimal", log_id);
  *e = v;
  return 0;
}

int tarn_compact_progress_read(tarn_meta *m, uint64_t log_id, uint64_t *e) {
  int64_t version;
  return progress_get(m, log_id, e, &version);
}

/* C5 (LS-072): tarn's progress record holds e, the first uncompacted offset;
 * it only moves up. Guarded by the lease like C3 and C4, and conditional on
 * the version read (issue 31 item 11): two passes of one log (compactors of
 * different ranges, a repair) each read the record, and a plain put of the
 * lower e after the higher one's would move it back. A create-only put when
 * there is none, a compare-and-set on the version otherwise; a conflict
 * means another pass moved it: read again, and stop once it is at or past
 * e. TARN_EUNKNOWN goes to the caller as C3/C4's does: a held put that lands
 * later is judged on the version it read, so it can only move the record up
 * from that version, never back. */
int tarn__compact_progress_advance(tarn_meta *m, const tarn_meta_guard *g, size_t ng,
                                   uint64_t log_id, uint64_t e) {
  char part[TARN_KEY_PARTITION_LEN + 1], key[TARN_KEY_SLASH_MAX], v[24];
  tarn_key_partition(part, log_id);
  progress_key(key, log_id);
  int n = snprintf(v, sizeof v, "%" PRIu64, e);
  for (int attempt = 0; attempt < 16; attempt++) {
    uint64_t cur;
    int64_t version;
    int rc = progress_get(m, log_id, &cur, &version);
    if (rc || cur >= e)
      return rc;
    if (TARN__PLANTED(TARN__BUG_PROGRESS_UNCONDITIONAL))
      return tarn_meta_put_if(m, part, key, v, (size_t)n, g, ng, NULL);
    rc = version < 0 ? tarn_meta_create_if(m, part, key, v, (size_t)n, 0, g, ng, NULL)
                     : tarn_meta_cas_if(m, part, key, v, (size_t)n, version, g, ng, NULL);
    if (rc != TARN_ECONFLICT && rc != TARN_EEXIST && rc != TARN_ENOTFOUND)
      return rc; /* 0, or an error: TARN_EGUARD, TARN_EUNKNOWN, ... */
  }
  return tarn__err(TARN_EBUSY,
                   "compaction progress of log %" PRIu64 ": changed by others 16 times in a row",
                   log_id);
}

static int write_progress(tarn_meta *m, tarn_lease *lease, uint64_t log_id, uint64_t e) {
  tarn_meta_guard g[TARN_LEASE_GUARDS];
  size_t ng = tarn_lease_guards(lease, g);
  return tarn__compact_progress_advance(m, g, ng, log_id, e);
}

typedef struct check_ctx {
  const tarn_compact_range *r;
  const tarn_buf *value;
  int ok;
  uint64_t prev_end;
} check_ctx;

/* C1 still holds: every record ending in (s, e] is RAW (LS-075), and no
 * record above covers offsets below e — a compaction between its C3 and C4,
 * which may sit past RAW records above e (LS-078, seed 5095). */
static int check_cb(void *ctx, const tarn__ixrec *x) {
  check_ctx *k = ctx;
  if (x->key.end_offset > k->r->e) {
    if (x->start < k->r->e) { /* overlapped from above: an interrupted compaction */
      k->ok = 0;
      return 1;
    }
    int go_on = x->version == 3 && x->file_type == TARN_FILE_RAW && x->start == k->prev_end;
    k->prev_end = x->key.end_offset;
    return go_on ? 0 : 1;
  }
  k->prev_end = x->key.end_offset;
  if (x->file_type != TARN_FILE_RAW) {
    k->ok = 0;
    return 1;
  }
  return 0;
}

/* Before C3: every file and companion the file index names exists (*ok).
 * The intent (or the task record) kept them from the reclaimer; this finds a
 * compaction that lost them anyway — its intent expired — so that C3 never
 * installs a record naming a file that is gone (LS-084, LS-062). */
static int files_exist(tarn_compactor *c, const tarn_compact_range *r, int *ok) {
  *ok = 1;
  for (size_t i = 0; i < r->n_files && *ok; i++) {
    const char *n = r->files[i].name;
    size_t l = strlen(n);
    char p[2][1400];
    snprintf(p[0], sizeof p[0], "%s%s", r->dir, n);
    snprintf(p[1], sizeof p[1], "%s%.*s.index", r->dir, (int)(l > 8 ? l - 8 : l), n);
    for (int k = 0; k < 2 && *ok; k++) {
      uint64_t size;
      int rc = tarn_objstore_head(c->compacted, p[k], &size);
      if (rc == TARN_ENOTFOUND) {
        *ok = 0;
        tarn__err(TARN_ENOTFOUND, "compacted file %s is gone", p[k]);
      } else if (rc) {
        return tarn__errctx(rc, "compacted file %s", p[k]);
      }
    }
  }
  return 0;
}

/* One attempt at C3–C4 (and C5). *took is set once C3 has taken effect. */
static int install_attempt(tarn_compactor *c, const tarn_compact_range *r, const tarn_buf *val,
                           int *took, int *stale) {
  tarn_meta *m = c->meta;
  char part[TARN_KEY_PARTITION_LEN + 1], k[TARN_KEY_LEN + 1], a[TARN_KEY_LEN + 1],
      b[TARN_KEY_LEN + 1];
  tarn_key_partition(part, r->log_id);
  tarn_key_format(k, r->log_id, r->e, r->c_e);
  tarn_key_format(a, r->log_id, r->s + !TARN__PLANTED(TARN__BUG_C4_RANGE_FROM_S), 0);
  tarn_key_format(b, r->log_id, r->e - !TARN__PLANTED(TARN__BUG_C4_RANGE_PAST_E), TARN_KEY_MAX);
  tarn_lease *lease = NULL;
  int rc = tarn_lease_acquire(m, r->log_id, &lease); /* LS-073 */
  if (rc)
    return rc;
  tarn_meta_rec cur = {0};
  rc = tarn_meta_get(m, part, k, &cur); /* C3: Get */
  int exists = rc == 0;
  if (rc == TARN_ENOTFOUND)
    rc = 0;
  if (!rc && exists && cur.value_len == val->len && memcmp(cur.value, val->data, val->len) == 0)
    *took = 1;
  if (!rc && !*took) {
    /* The range must still be what C1 chose: K(L, e, c_e) a RAW record (or
     * gone with the whole range at or below B), only RAW records in (s, e]. */
    check_ctx ck = {.r = r, .value = val, .ok = 1};
    char from[TARN_KEY_LEN + 1];
    tarn_key_format(from, r->log_id, r->s, TARN_KEY_MAX);
    rc = tarn__index_scan(m, r->log_id, from, NULL, check_cb, &ck);
    if (!rc && !exists) {
      uint64_t bb;
      rc = tarn_trim_marker_read(m, r->log_id, &bb, NULL);
      if (!rc && r->e > bb)
        ck.ok = 0;
    }
    if (!rc && !ck.ok) {
      *stale = 1;
      tarn_meta_rec_free(&cur);
      tarn_lease_release(lease);
      return 0;
    }
  }
  int64_t seen = cur.stat.version;
  tarn_meta_rec_free(&cur);
  if (!rc && exists && !*took) {
    int all = 0;
    rc = tarn__intent_refresh(m, r->log_id, r->intent, tarn__now_ms());
    if (!rc && !TARN__PLANTED(TARN__BUG_RECLAIM_IGNORES_INTENTS))
      rc = files_exist(c, r, &all);
    else
      all = 1;
    if (!rc && !all) {
      *stale = 1;
      tarn_lease_release(lease);
      return 0;
    }
  }
  /* C3–C5 commit only under the lease's guards (docs/compaction.md): nothing
   * changes L once its deletion drained the leases, nor after our session
   * ended. */
  tarn_meta_guard g[TARN_LEASE_GUARDS];
  size_t ng = tarn_lease_guards(lease, g);
  if (!rc)
    rc = tarn_lease_check(lease); /* LS-049 */
  if (!rc && TARN__PLANTED(TARN__BUG_C4_BEFORE_C3))
    rc = tarn_meta_delete_range(m, part, a, b, NULL); /* planted: C4 before C3 */
  if (!rc && exists) {
    /* C3, LS-070: a CompareAndSet on the version the Get returned, so that
     * a record changed since (another compactor's install) is not
     * overwritten; TARN_ECONFLICT makes the next attempt look again. */
    rc = tarn_meta_cas_if(m, part, k, val->data, val->len, seen, g, ng, NULL);
    if (rc == 0 || rc == TARN_EUNKNOWN)
      *took = 1;
  }
  if (!rc)
    rc = tarn_lease_check(lease);
  if (!rc && !TARN__PLANTED(TARN__BUG_C4_SKIPPED))
    rc = tarn_meta_delete_range_if(m, part, a, b, g, ng, NULL); /* C4, LS-071 */
  if (!rc)
    rc = tarn_lease_check(lease);
  if (!rc)
    rc = write_progress(m, lease, r->log_id,
                        r->e + TARN__PLANTED(TARN__BUG_PROGRESS_ONE_PAST)); /* C5 */
  if (!exists)
    *took = 1; /* C3 skipped: only C4 remained */
  int rrc = tarn_lease_release(lease);
  return rc ? rc : rrc;
}

int tarn_compact_install(tarn_compactor *c, const tarn_compact_range *r, int *outcome) {
  *outcome = TARN_INSTALL_DONE;
  tarn_buf val = TARN_BUF_INIT;
  int rc = tarn_compact_value(r, &val);
  if (rc)
    return rc;
  int took = 0, stale = 0;
  char why[512] = "";
  for (int i = 0; i < c->o.install_attempts; i++) {
    stale = 0;
    rc = install_attempt(c, r, &val, &took, &stale);
    if (!rc && stale && !took) {
      *outcome = TARN_INSTALL_STALE;
      break;
    }
    if (!rc || rc == TARN_EFENCED || rc == TARN_ESESSION || rc == TARN_EGUARD)
      break;
    snprintf(why, sizeof why, "%s", tarn_errmsg());
    /* LS-078: after C3 took effect, C3 and C4 are repeated with the same value. */
  }
  if (rc && rc != TARN_EFENCED && rc != TARN_ESESSION && rc != TARN_EGUARD && why[0])
    tarn__err(rc, "installing log %" PRIu64 " [%" PRIu64 ", %" PRIu64 ")%s: %s", r->log_id, r->s,
              r->e, took ? " (C3 took effect; retry)" : "", why);
  tarn_buf_free(&val);
  /* LS-084: no install of this range can follow — the record names its files
   * now, or they are orphans; the intent goes (a failed Delete: it expires) */
  if (!rc || rc == TARN_EFENCED)
    tarn__intent_drop(c->meta, r->log_id, r->intent);
  return rc;
}

typedef struct repair_ctx {
  uint64_t s, e;
  int raw_only;
} repair_ctx;

static int repair_cb(void *ctx, const tarn__ixrec *x) {
  repair_ctx *q = ctx;
  if (x->key.end_offset >= q->e)
    return 1;
  if (x->file_type != TARN_FILE_RAW)
    q->raw_only = 0;
  return 0;
}

int tarn_compact_repair(tarn_compactor *c, uint64_t log_id, int *repaired) {
  if (repaired)
    *repaired = 0;
  for (int round = 0; round < 64; round++) {
    tarn_compact_range r;
    int rc = tarn_compact_plan(c, log_id, 1, &r);
    tarn_compact_range_free(&r);
    if (rc != TARN_EBUSY)
      return rc == TARN_ENOTFOUND ? 0 : rc;
    /* find the overlapping record again, from the log's start above B */
    uint64_t b;
    if ((rc = tarn_trim_marker_read(c->meta, log_id, &b, NULL)))
      return rc;
    char from[TARN_KEY_LEN + 1];
    tarn_key_format(from, log_id, b, TARN_KEY_MAX);
    plan_ctx p = {.r = &r, .o = &c->o};
    memset(&r, 0, sizeof r);
    if ((rc = tarn__index_scan(c->meta, log_id, from, NULL, plan_cb, &p)))
      return rc;
    if (!p.overlap)
      continue;
    /* LS-078: C4 of that record's range, but only over RAW records (LS-075) */
    repair_ctx q = {p.ov_s, p.ov_e, 1};
    tarn_key_format(from, log_id, p.ov_s, TARN_KEY_MAX);
    if ((rc = tarn__index_scan(c->meta, log_id, from, NULL, repair_cb, &q)))
      return rc;
    if (!p.ov_parquet || !q.raw_only)
      return tarn__err(TARN_ECORRUPT,
                       "log %" PRIu64 ": overlapping records around [%" PRIu64 ", %" PRIu64
                       ") that no interrupted compaction explains",
                       log_id, p.ov_s, p.ov_e);
    tarn_lease *lease;
    if ((rc = tarn_lease_acquire(c->meta, log_id, &lease)))
      return rc;
    char part[TARN_KEY_PARTITION_LEN + 1], a[TARN_KEY_LEN + 1], z[TARN_KEY_LEN + 1];
    tarn_key_partition(part, log_id);
    tarn_key_format(a, log_id, p.ov_s + 1, 0);
    tarn_key_format(z, log_id, p.ov_e - !TARN__PLANTED(TARN__BUG_REPAIR_C4_PAST_E), TARN_KEY_MAX);
    tarn_meta_guard g[TARN_LEASE_GUARDS];
    size_t ng = tarn_lease_guards(lease, g);
    rc = tarn_lease_check(lease);
    if (!rc)
      rc = tarn_meta_delete_range_if(c->meta, part, a, z, g, ng, NULL); /* C4, LS-071 */
    if (!rc)
      rc = tarn_lease_check(lease);
    if (!rc)
      rc = write_progress(c->meta, lease, log_id, p.ov_e); /* C5 */
    int rrc = tarn_lease_release(lease);
    if (rc || rrc)
      return rc ? rc : rrc;
    if (repaired)
      *repaired = 1;
  }
  return tarn__err(TARN_EBUSY, "log %" PRIu64 ": still overlapping after repairs", log_id);
}

int tarn_compact_once(tarn_compactor *c, uint64_t log_id, int force, tarn_compact_range *done,
                      int *did) {
  if (did)
    *did = 0;
  tarn_compact_lock *lk = NULL;
  int rc = tarn_compact_lock_acquire(c->meta, log_id, "tarn_compact_once", &lk);
  if (rc)
    return rc;
  tarn_compact_range r;
  memset(&r, 0, sizeof r);
  int outcome = TARN_INSTALL_STALE;
  /* A stale install changed nothing (the records moved on, or the range's
   * files are gone): planned again, a few times. */
  for (int round = 0; !rc && outcome == TARN_INSTALL_STALE && round < 3; round++) {
    tarn_compact_range_free(&r);
    rc = tarn_compact_repair(c, log_id, NULL); /* an earlier compaction's C4, if it died */
    if (!rc)
      rc = tarn_compact_plan(c, log_id, force, &r);
    if (rc == TARN_ENOTFOUND) {
      tarn_compact_lock_release(lk);
      return 0;
    }
    if (!rc)
      rc = tarn_compact_write(c, &r);
    if (!rc)
      rc = tarn_compact_install(c, &r, &outcome);
  }
  if (!rc && outcome == TARN_INSTALL_DONE && did)
    *did = 1;
  int lrc = tarn_compact_lock_release(lk);
  if (!rc)
    rc = lrc;
  if (done && !rc)
    *done = r;
  else
    tarn_compact_range_free(&r);
  return rc;
}

/* ---- lag ----------------------------------------------------------------- */

typedef struct lag_ctx {
  tarn_compact_lag *l;
} lag_ctx;

static int lag_cb(void *ctx, const tarn__ixrec *x) {
  lag_ctx *g = ctx;
  if (x->file_type != TARN_FILE_RAW)
    return 0;
  if (!g->l->oldest_ms || x->rec->stat.created_ms < g->l->oldest_ms)
    g->l->oldest_ms = x->rec->stat.created_ms;
  g->l->raw_records++;
  g->l->raw_bytes +=
      x->version == 3 ? (uint64_t)x->ei.entry_size_bytes : (uint64_t)x->lv.entry_size_bytes;
  return 0;
}

int tarn_compact_lag_read(tarn_meta *m, uint64_t log_id, int64_t now_ms, tarn_compact_lag *out) {
  memset(out, 0, sizeof *out);
  uint64_t b;
  int rc = tarn_trim_marker_read(m, log_id, &b, NULL);
  char from[TARN_KEY_LEN + 1];
  if (!rc)
    rc = tarn_key_format(from, log_id, b, TARN_KEY_MAX);
  lag_ctx g = {out};
  if (!rc)
    rc = tarn__index_scan(m, log_id, from, NULL, lag_cb, &g);
  if (!rc && out->oldest_ms)
    out->lag_ms = now_ms > out->oldest_ms ? now_ms - out->oldest_ms : 0;
  return rc;
}
