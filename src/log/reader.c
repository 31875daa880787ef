/* The reader: R1 trim marker, R2 covering record, R3 dispatch, R4 entries. */
#include "tarn/reader.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log/read_cache.h"
#include "log/reader_parquet.h"
#include "tarn/parquet.h"
#include "tarn/buf.h"
#include "tarn/entryindex.h"
#include "tarn/kafka.h"
#include "tarn/kafka_topics.h"
#include "tarn/key.h"
#include "tarn/trimmark.h"
#include "tarn/wal.h"
#include "tarn/metrics.h"
#include "util/clock.h"
#include "util/error.h"
#include "util/planted.h"

/* The first read of an object: the head of most objects, and all of a small one. */
#define PROBE_BYTES (64u << 10)

struct tarn_reader {
  tarn_meta *meta;
  tarn_objstore *wal, *compacted;
  tarn_reader_options o;
  tarn__rec_cache recs;
  tarn__head_cache heads;
  pthread_mutex_t st_mu;
  tarn_reader_stats st;
};

/* The bindings this reader implements (LS-059): the Kafka binding. */
static const char *const default_serdes[] = {TARN_PARQUET_KAFKA_SERDE, TARN_PARQUET_TARN_SERDE};

void tarn_reader_options_default(tarn_reader_options *o) {
  memset(o, 0, sizeof *o);
  o->index_ttl_ms = 60000;
  o->index_cache_max = 4096;
  o->head_cache_bytes = 16u << 20;
  o->max_read_bytes = 8u << 20;
  o->serde_types = default_serdes;
  o->n_serde_types = 2;
}

int tarn_reader_open(tarn_meta *meta, tarn_objstore *wal, tarn_objstore *compacted,
                     const tarn_reader_options *o, tarn_reader **out) {
  *out = NULL;
  tarn_reader_options d;
  tarn_reader_options_default(&d);
  if (!o)
    o = &d;
  if (!meta || !wal || o->max_read_bytes == 0)
    return tarn__err(TARN_EINVAL, "reader: a metadata store, a WAL root and max_read_bytes > 0");
  tarn_reader *r = calloc(1, sizeof *r);
  if (!r)
    return tarn__err(TARN_ENOMEM, "out of memory");
  r->meta = meta;
  r->wal = wal;
  r->compacted = compacted;
  r->o = *o;
  int rc = tarn__rec_cache_init(&r->recs, o->index_cache_max, o->index_ttl_ms);
  if (rc) {
    free(r);
    return rc;
  }
  tarn__head_cache_init(&r->heads, o->head_cache_bytes);
  pthread_mutex_init(&r->st_mu, NULL);
  *out = r;
  return 0;
}

void tarn_reader_close(tarn_reader *r) {
  if (!r)
    return;
  tarn__rec_cache_free(&r->recs);
  tarn__head_cache_free(&r->heads);
  pthread_mutex_destroy(&r->st_mu);
  free(r);
}

void tarn_reader_stats_get(tarn_reader *r, tarn_reader_stats *s) {
  pthread_mutex_lock(&r->st_mu);
  *s = r->st;
  pthread_mutex_unlock(&r->st_mu);
}

#define STAT_ADD(r, field, v)                                                                      \
  do {                                                                                             \
    pthread_mutex_lock(&(r)->st_mu);                                                               \
    (r)->st.field += (v);                                                                          \
    pthread_mutex_unlock(&(r)->st_mu);                                                             \
  } while (0)

/* ---- R1 --------------------------------------------------------------------------- */

int tarn_reader_trim_offset(tarn_reader *r, uint64_t log_id, uint64_t *b) {
  char part[TARN_KEY_PARTITION_LEN + 1], key[TARN_KEY_SLASH_MAX];
  int rc;
  if ((rc = tarn_key_partition(part, log_id)) || (rc = tarn_key_trim_marker(key, log_id)))
    return rc;
  tarn_meta_rec m = {0};
  rc = tarn_meta_get(r->meta, part, key, &m);
  if (TARN__PLANTED(TARN__BUG_READER_SKIPS_TRIM)) {
    tarn_meta_rec_free(&m);
    rc = TARN_ENOTFOUND;
  }
  if (rc == TARN_ENOTFOUND) { /* LS-050: no marker, B = 0 */
    *b = 0;
    return 0;
  }
  if (!rc)
    rc = tarn_trimmark_parse(m.value, m.value_len, b);
  tarn_meta_rec_free(&m);
  return rc ? tarn__errctx(rc, "log %llu", (unsigned long long)log_id) : 0;
}

/* ---- R2: records -------------------------------------------------------------------- */

/* A legacy record (Appendix C): the value is a string naming one entry of a
 * legacy object by its entry_id; the deltas of the key are its record count
 * and payload size. Only RAW: legacy compacted data is out of scope. */
static int legacy_rec(uint64_t log_id, const tarn_meta_rec *m, const tarn_key *k, tarn__rec *out) {
  tarn_legacy_index_value lv;
  int rc = tarn_legacy_index_value_parse(m->value, m->value_len, &lv);
  if (rc)
    return tarn__errctx(rc, "index record %s", m->key);
  if (lv.has_file_type && lv.file_type != TARN_FILE_RAW)
    rc = tarn__err(TARN_EUNSUPPORTED,
                   "index record %s: a legacy (v%d) PARQUET record; legacy "
                   "compacted data is out of scope (spec Appendix C)",
                   m->key, lv.version);
  else if (lv.message_count < 1 || lv.message_count > INT32_MAX ||
           (uint64_t)lv.message_count > k->end_offset || lv.entry_size_bytes < 0 ||
           (uint64_t)lv.entry_size_bytes > k->cumulative_size)
    rc = tarn__err(TARN_ECORRUPT,
                   "index record %s: legacy message_count %lld or "
                   "entry_size_bytes %lld does not fit the key's numbers",
                   m->key, (long long)lv.message_count, (long long)lv.entry_size_bytes);
  if (!rc) {
    out->log_id = log_id;
    out->end = k->end_offset;
    out->start = k->end_offset - (uint64_t)lv.message_count;
    out->cumulative = k->cumulative_size;
    out->timestamp_ms = m->stat.created_ms;
    out->version = m->stat.version;
    out->file_type = TARN_FILE_RAW;
    out->entry_size_bytes = lv.entry_size_bytes;
    out->entry_count = 1;
    out->legacy = lv.version;
    out->entry_id = (uint64_t)lv.entry_id;
    memcpy(out->key, m->key, TARN_KEY_LEN + 1);
    out->location = lv.location, lv.location = NULL;
  }
  tarn_legacy_index_value_free(&lv);
  return rc;
}

/* Decodes a looked-up record of log_id into *out: an EntryIndex, or a legacy
 * string value, told apart by the value's first bytes (Appendix C). */
static int rec_from_meta(uint64_t log_id, const tarn_meta_rec *m, tarn__rec *out) {
  memset(out, 0, sizeof *out);
  tarn_key k;
  int rc = tarn_key_parse(m->key, strlen(m->key), &k);
  if (rc)
    return rc;
  int v = tarn_index_value_detect_version(m->value, m->value_len);
  if (v == 1 || v == 2)
    return legacy_rec(log_id, m, &k, out);
  tarn_entry_index ei;
  if ((rc = tarn_entry_index_decode(m->value, m->value_len, &ei)))
    return tarn__errctx(rc, "index record %s", m->key);
  if ((uint64_t)ei.message_count > k.end_offset ||
      (uint64_t)ei.entry_size_bytes > k.cumulative_size) {
    tarn_entry_index_free(&ei);
    return tarn__err(TARN_ECORRUPT,
                     "index record %s: message_count %d or entry_size_bytes %lld "
                     "exceeds the key's numbers",
                     m->key, ei.message_count, (long long)ei.entry_size_bytes);
  }
  out->log_id = log_id;
  out->end = k.end_offset;
  out->start = k.end_offset - (uint64_t)ei.message_count;
  out->cumulative = k.cumulative_size;
  out->timestamp_ms = m->stat.created_ms;
  out->version = m->stat.version;
  out->file_type = ei.file_type;
  out->entry_size_bytes = ei.entry_size_bytes;
  out->entry_count = ei.entry_count;
  memcpy(out->key, m->key, TARN_KEY_LEN + 1);
  if (ei.location)
    out->location = strdup(ei.location);
  if (ei.file_index)
    out->file_index = strdup(ei.file_index);
  if (ei.boundaries) {
    out->boundaries = malloc(ei.n_boundaries * sizeof *out->boundaries);
    if (out->boundaries)
      memcpy(out->boundaries, ei.boundaries, ei.n_boundaries * sizeof *out->boundaries);
  }
  rc = ((ei.location && !out->location) || (ei.boundaries && !out->boundaries) ||
        (ei.file_index && !out->file_index))
           ? tarn__err(TARN_ENOMEM, "out of memory")
           : 0;
  tarn_entry_index_free(&ei);
  if (rc)
    tarn__rec_free(out);
  return rc;
}

/* Higher(P(L), key) with the prefix check (LS-051): TARN_EEND when the result
 * is not a record of L. */
static int higher(tarn_reader *r, uint64_t log_id, uint64_t e, uint64_t c, tarn__rec *out) {
  char part[TARN_KEY_PARTITION_LEN + 1], key[TARN_KEY_LEN + 1];
  tarn_key_partition(part, log_id);
  int rc = tarn_key_format(key, log_id, e, c);
  if (rc)
    return rc;
  tarn_meta_rec m = {0};
  STAT_ADD(r, index_lookups, 1);
  rc = tarn_meta_higher(r->meta, part, key, &m);
  if (rc == TARN_ENOTFOUND || (!rc && !tarn_key_has_prefix(m.key, strlen(m.key), log_id) &&
                               !TARN__PLANTED(TARN__BUG_READER_SKIPS_PREFIX_CHECK)))
    rc = TARN_EEND;
  if (!rc)
    rc = rec_from_meta(log_id, &m, out);
  tarn_meta_rec_free(&m);
  return rc;
}

/* How many index records a read-ahead lookup takes in one Scan. */
#define SCAN_AHEAD 32

/* R2 for a reader that reads on (issue 36 item 2, issue 37 failover): Higher
 * as one Scan of P(L) from K(L, o, MAX) exclusive to K(L, MAX, MAX), whose
 * first result is Higher's answer (the bounds keep it within L: LS-051's
 * prefix check holds by construction, and is checked again) and whose
 * following records, the next ones of the log, go into the cache: a Fetch of
 * a backlog of n WAL objects looks its records up in n / SCAN_AHEAD calls,
 * not n. */
static int higher_ahead(tarn_reader *r, uint64_t log_id, uint64_t o, tarn__rec *out) {
  char part[TARN_KEY_PARTITION_LEN + 1], a[TARN_KEY_LEN + 1], b[TARN_KEY_LEN + 1];
  tarn_key_partition(part, log_id);
  int rc = tarn_key_format(a, log_id, o, TARN_KEY_MAX);
  if (!rc)
    rc = tarn_key_format(b, log_id, TARN_KEY_MAX, TARN_KEY_MAX);
  if (rc)
    return rc;
  tarn_meta_recs rs = {0};
  STAT_ADD(r, index_lookups, 1);
  rc = tarn_meta_scan(r->meta, part, a, b, TARN_META_AFTER, SCAN_AHEAD, &rs);
  if (!rc && (rs.n == 0 || !tarn_key_has_prefix(rs.v[0].key, strlen(rs.v[0].key), log_id)))
    rc = TARN_EEND;
  if (!rc)
    rc = rec_from_meta(log_id, &rs.v[0], out);
  for (size_t i = 1; !rc && i < rs.n; i++) {
    tarn__rec next;
    if (rec_from_meta(log_id, &rs.v[i], &next))
      break; /* a record that does not decode is reported when it is read */
    tarn__rec_cache_put(&r->recs, &next);
    tarn__rec_free(&next);
  }
  tarn_meta_recs_free(&rs);
  return rc;
}

/* R2: the record covering o (from the cache when fresh). */
static int covering(tarn_reader *r, uint64_t log_id, uint64_t o, int use_cache, int ahead,
                    tarn__rec *out) {
  if (use_cache && tarn__rec_cache_get(&r->recs, log_id, o, out)) {
    STAT_ADD(r, index_hits, 1);
    return 0;
  }
  int rc = ahead ? higher_ahead(r, log_id, o, out) : higher(r, log_id, o, TARN_KEY_MAX, out);
  if (!rc)
    tarn__rec_cache_put(&r->recs, out);
  return rc;
}

int tarn_reader_first_offset(tarn_reader *r, uint64_t log_id, uint64_t *first) {
  uint64_t b;
  int rc = tarn_reader_trim_offset(r, log_id, &b);
  if (rc)
    return rc;
  tarn__rec rec;
  /* LS-054 */
  rc = b ? higher(r, log_id, b, TARN_KEY_MAX, &rec) : higher(r, log_id, 0, 0, &rec);
  if (rc == TARN_EEND)
    return tarn__err(TARN_ENOTFOUND, "log %llu has no records above its trim offset %llu",
                     (unsigned long long)log_id, (unsigned long long)b);
  if (rc)
    return rc;
  *first = rec.start > b ? rec.start : b;
  tarn__rec_free(&rec);
  return 0;
}

int tarn_reader_end_offset(tarn_reader *r, uint64_t log_id, uint64_t *end,
                           uint64_t *cumulative_size) {
  char part[TARN_KEY_PARTITION_LEN + 1], key[TARN_KEY_LEN + 1];
  tarn_key_partition(part, log_id);
  int rc = tarn_key_format(key, log_id, TARN_KEY_MAX, TARN_KEY_MAX);
  if (rc)
    return rc;
  tarn_meta_rec m = {0};
  rc = tarn_meta_floor(r->meta, part, key, &m);
  *end = 0;
  if (cumulative_size)
    *cumulative_size = 0;
  if (rc == TARN_ENOTFOUND || (!rc && !tarn_key_has_prefix(m.key, strlen(m.key), log_id))) {
    tarn_meta_rec_free(&m);
    return 0;
  }
  tarn_key k;
  if (!rc && !(rc = tarn_key_parse(m.key, strlen(m.key), &k))) {
    *end = k.end_offset;
    if (cumulative_size)
      *cumulative_size = k.cumulative_size;
  }
  tarn_meta_rec_free(&m);
  return rc;
}

/* ---- R3: a RAW record's object -------------------------------------------------------- */

struct tarn_log_iter {
  tarn_reader *r;
  uint64_t log_id;
  uint64_t pos;        /* where the next entry starts (R4) */
  uint64_t b;          /* B as read for the current record */
  int per_read;        /* tarn_log_iter_begin_read was called: B once per read */
  int b_known;         /* per_read: B is this read's */
  int have;            /* rec/ents describe the current record */
  tarn__pq_cursor *pq; /* the current record is PARQUET: its cursor */
  tarn__rec rec;
  tarn__sec_ent *ents;
  size_t n, idx;  /* the section's entries; the next one to return */
  uint64_t off;   /* offset of entry idx */
  uint64_t cum;   /* cumulative size before entry idx */
  tarn_buf whole; /* the whole object when the probe read all of it */
  int have_whole;
  tarn_buf win; /* payloads of entries [win_first, win_end) */
  size_t win_first, win_end;
  uint64_t win_pos; /* object position of win.data[0] */
  int kafka;        /* -1 not known yet; 1 the entries get Kafka offsets (LS-099) */
  tarn_buf kbuf;    /* the last entry, its batches' offsets rewritten */
  struct ahead {    /* per_read: the probes of the next records' objects */
    tarn_objstore *s;
    char *name; /* NULL: an empty slot */
    tarn_buf buf;
    uint64_t size;
    int rc, started;
    pthread_t th;
  } ra[3];
};

/* ---- read-ahead (issue 36 item 2): a read's next objects fetched together ---------- */

static void *ahead_get(void *arg) {
  struct ahead *a = arg;
  a->rc = tarn_objstore_get_range_sized(a->s, a->name, 0, PROBE_BYTES, &a->buf, &a->size);
  return NULL;
}

static void ahead_drop(tarn_log_iter *it) {
  for (size_t i = 0; i < sizeof it->ra / sizeof *it->ra; i++) {
    free(it->ra[i].name);
    it->ra[i].name = NULL;
    tarn_buf_free(&it->ra[i].buf);
  }
}

/* Starts the probes of the objects of the records after the current one that
 * the record cache holds (the Scan put them there), one thread each: they
 * run while the caller reads the current object, and ahead_join waits for
 * them before load_head returns, so no thread outlives the call. A failed
 * probe is only not used: the object is read again when its turn comes. */
static void ahead_start(tarn_log_iter *it) {
  ahead_drop(it);
  uint64_t o = it->rec.end;
  for (size_t n = 0; n < sizeof it->ra / sizeof *it->ra;) {
    tarn__rec next;
    if (!tarn__rec_cache_get(&it->r->recs, it->log_id, o, &next))
      return;
    int raw = next.file_type == TARN_FILE_RAW && next.location && !next.legacy;
    struct ahead *a = &it->ra[n];
    o = next.end;
    if (raw && (a->name = strdup(next.location))) {
      a->s = it->r->wal;
      a->rc = TARN_EIO;
      a->started = pthread_create(&a->th, NULL, ahead_get, a) == 0;
      if (a->started)
        n++;
      else
        free(a->name), a->name = NULL;
    }
    tarn__rec_free(&next);
    if (!raw)
      return;
  }
}

static void ahead_join(tarn_log_iter *it) {
  for (size_t i = 0; i < sizeof it->ra / sizeof *it->ra; i++)
    if (it->ra[i].started)
      pthread_join(it->ra[i].th, NULL), it->ra[i].started = 0;
}

/* The probe of object name when read ahead: into it->whole, 1. */
static int ahead_take(tarn_log_iter *it, const char *name, uint64_t *size) {
  for (size_t i = 0; i < sizeof it->ra / sizeof *it->ra; i++) {
    struct ahead *a = &it->ra[i];
    if (a->name && a->rc == 0 && strcmp(a->name, name) == 0) {
      tarn_buf t = it->whole;
      it->whole = a->buf;
      a->buf = t;
      *size = a->size;
      free(a->name);
      a->name = NULL;
      return 1;
    }
  }
  return 0;
}

static void iter_drop_record(tarn_log_iter *it) {
  tarn__rec_free(&it->rec);
  tarn__pq_close(it->pq);
  it->pq = NULL;
  free(it->ents);
  it->ents = NULL;
  it->n = it->idx = 0;
  it->have = it->have_whole = 0;
  it->win_first = it->win_end = 0;
  tarn_buf_reset(&it->win);
  tarn_buf_reset(&it->whole);
}

/* A legacy record's entry: the tuple of the legacy object (its head in
 * it->whole) with the record's log and entry_id, as a one-entry section whose
 * record count is the record's (the object has none). */
static int legacy_section(tarn_log_iter *it, size_t head_len, uint64_t size) {
  const tarn__rec *rec = &it->rec;
  tarn_wal w;
  int rc = tarn_wal_decode_index(it->whole.data, head_len, size, &w);
  if (rc)
    return tarn__errctx(rc, "WAL object %s", rec->location);
  const tarn_wal_section *sec = w.version == TARN_WAL_LEGACY ? tarn_wal_find(&w, it->log_id) : NULL;
  const tarn_wal_entry *e = NULL;
  for (size_t i = 0; sec && !e && i < sec->entry_count; i++)
    if (sec->entries[i].entry_id == rec->entry_id)
      e = &sec->entries[i];
  if (w.version != TARN_WAL_LEGACY) /* LS-001: one format version per deployment */
    rc = tarn__err(TARN_EVERSION,
                   "record %s is a legacy (v%d) record, but WAL object %s has the "
                   "version 3 layout",
                   rec->key, rec->legacy, rec->location);
  else if (!e)
    rc = tarn__err(TARN_ECORRUPT, "WAL object %s holds no entry %llu of log %llu (record %s)",
                   rec->location, (unsigned long long)rec->entry_id, (unsigned long long)it->log_id,
                   rec->key);
  else if (!(it->ents = malloc(sizeof *it->ents)))
    rc = tarn__err(TARN_ENOMEM, "out of memory");
  if (!rc) {
    it->ents[0] = (tarn__sec_ent){.pos = e->payload_pos,
                                  .size = e->payload_size,
                                  .records = (uint32_t)(rec->end - rec->start)};
    it->n = 1;
  }
  tarn_wal_free(&w);
  return rc;
}

/* Reads the object's head (by range: probe, then the rest of the index
 * region if needed) and the log's section. The probe also gives the object's
 * size, which the index region's bounds need: no HEAD per object. */
static int load_head(tarn_log_iter *it) {
  tarn_reader *r = it->r;
  const char *name = it->rec.location;
  uint64_t size = 0;
  if (!it->rec.legacy &&
      tarn__head_cache_get(&r->heads, name, it->log_id, &it->ents, &it->n, &size)) {
    STAT_ADD(r, head_hits, 1);
    return 0;
  }
  int rc = 0, ahead = it->per_read && !it->rec.legacy;
  if (!ahead || !ahead_take(it, name, &size)) {
    if (ahead)
      ahead_start(it);
    rc = tarn_objstore_get_range_sized(r->wal, name, 0, PROBE_BYTES, &it->whole, &size);
    ahead_join(it);
  }
  if (rc)
    return rc;
  STAT_ADD(r, head_reads, 1);
  STAT_ADD(r, bytes_read, it->whole.len);
  it->have_whole = it->whole.len == size;
  uint64_t head_len;
  if ((rc = tarn_wal_head_length(
           it->whole.data, it->whole.len < TARN_WAL_PROBE_LEN ? it->whole.len : TARN_WAL_PROBE_LEN,
           size, &head_len)))
    return tarn__errctx(rc, "WAL object %s", name);
  if (head_len > it->whole.len) {
    tarn_buf rest = TARN_BUF_INIT;
    rc = tarn_objstore_get_range(r->wal, name, it->whole.len, head_len - it->whole.len, &rest);
    if (!rc && rest.len != head_len - it->whole.len)
      rc = tarn__err(TARN_EIO, "WAL object %s: short read of its head", name);
    if (!rc)
      rc = tarn_buf_append(&it->whole, rest.data, rest.len);
    STAT_ADD(r, bytes_read, rest.len);
    tarn_buf_free(&rest);
    if (rc)
      return rc;
  }
  if (it->rec.legacy)
    return legacy_section(it, (size_t)head_len, size);
  return tarn__head_cache_add(&r->heads, name, it->whole.data, (size_t)head_len, size, it->log_id,
                              &it->ents, &it->n);
}

/* Checks the section against the record: the object and the index must tell
 * the same story before offsets are assigned. */
static int check_section(tarn_log_iter *it) {
  const tarn__rec *rec = &it->rec;
  if (it->n == 0)
    return tarn__err(TARN_ECORRUPT, "WAL object %s has no section for log %llu (record %s)",
                     rec->location, (unsigned long long)it->log_id, rec->key);
  if (it->n != (size_t)rec->entry_count)
    return tarn__err(TARN_ECORRUPT, "record %s: entry_count %d but the object's section has %zu",
                     rec->key, rec->entry_count, it->n);
  uint64_t recs = 0, bytes = 0;
  for (size_t i = 0; i < it->n; i++) {
    recs += it->ents[i].records;
    bytes += it->ents[i].size;
    if (rec->boundaries && rec->boundaries[i] != recs)
      return tarn__err(TARN_ECORRUPT, "record %s: entry_offsets[%zu] = %u but the object says %llu",
                       rec->key, i, rec->boundaries[i], (unsigned long long)recs);
  }
  if (recs != rec->end - rec->start || bytes != (uint64_t)rec->entry_size_bytes)
    return tarn__err(TARN_ECORRUPT,
                     "record %s: message_count/entry_size_bytes %llu/%lld but the "
                     "section holds %llu records in %llu bytes",
                     rec->key, (unsigned long long)(rec->end - rec->start),
                     (long long)rec->entry_size_bytes, (unsigned long long)recs,
                     (unsigned long long)bytes);
  return 0;
}

/* Fetches the payloads from entry idx on: one range read over the entries that
 * lie back to back (at most max_read_bytes, at least one entry). */
static int load_window(tarn_log_iter *it) {
  tarn_reader *r = it->r;
  size_t i = it->idx, j = i + 1;
  uint64_t from = it->ents[i].pos, to = from + it->ents[i].size;
  while (j < it->n && it->ents[j].pos == to && to + it->ents[j].size - from <= r->o.max_read_bytes)
    to += it->ents[j++].size;
  tarn_buf_reset(&it->win);
  if (to > from) {
    int rc = tarn_objstore_get_range(r->wal, it->rec.location, from, to - from, &it->win);
    if (rc)
      return rc;
    STAT_ADD(r, range_reads, 1);
    STAT_ADD(r, bytes_read, it->win.len);
    if (it->win.len != to - from)
      return tarn__err(TARN_ECORRUPT, "WAL object %s: %zu bytes where %llu were expected at %llu",
                       it->rec.location, it->win.len, (unsigned long long)(to - from),
                       (unsigned long long)from);
  }
  it->win_first = i;
  it->win_end = j;
  it->win_pos = from;
  return 0;
}

/* Opens the record covering it->pos (R1, R2, R3), positioned at the entry that
 * holds max(pos, B). TARN_EEND at the end of the log. */
static int open_record(tarn_log_iter *it) {
  tarn_reader *r = it->r;
  iter_drop_record(it);
  int rc = 0;
  /* R1, LS-050: B at the start of the read ("To read log L from offset o":
   * R1 once, then R2-R4 record after record); an iterator that never began a
   * read reads it for every record */
  if (!it->per_read || !it->b_known)
    rc = tarn_reader_trim_offset(r, it->log_id, &it->b);
  if (rc)
    return rc;
  it->b_known = 1;
  if (it->pos < it->b)
    it->pos = it->b;
  int use_cache = 1;
  char missing_key[TARN_KEY_LEN + 1] = "";
  int64_t missing_version = 0;
  for (int attempt = 0;; attempt++) {
    if ((rc = covering(r, it->log_id, it->pos, use_cache, it->per_read, &it->rec))) /* R2, LS-051 */
      return rc;
    it->have = 1;
    /* R3, LS-028, LS-052: by file_type alone */
    if (it->rec.file_type == TARN_FILE_PARQUET) {
      if (!r->compacted)
        return tarn__err(TARN_EUNSUPPORTED,
                         "record %s is a PARQUET record and this reader has no compacted root",
                         it->rec.key);
      uint64_t o = it->pos > it->rec.start ? it->pos : it->rec.start;
      rc = tarn__pq_open(r->meta, r->compacted, r->o.serde_types, r->o.n_serde_types, &it->rec, o,
                         &it->pq); /* LS-067 */
    } else if (it->rec.file_type == TARN_FILE_RAW && it->rec.location) {
      rc = load_head(it);
    } else {
      return tarn__err(TARN_ECORRUPT, "record %s: file_type %d", it->rec.key, it->rec.file_type);
    }
    if (rc == TARN_ENOTFOUND && attempt < 3) {
      /* LS-055: a compaction or a hard trim may have replaced the record */
      if (attempt > 0 && strcmp(missing_key, it->rec.key) == 0 &&
          missing_version == it->rec.version)
        break;
      snprintf(missing_key, sizeof missing_key, "%s", it->rec.key);
      missing_version = it->rec.version;
      tarn__rec_cache_forget(&r->recs, it->log_id);
      iter_drop_record(it);
      if ((rc = tarn_reader_trim_offset(r, it->log_id, &it->b)))
        return rc;
      if (it->pos < it->b)
        it->pos = it->b;
      use_cache = 0;
      continue;
    }
    break;
  }
  if (rc == TARN_ENOTFOUND && it->pq == NULL && it->rec.file_type == TARN_FILE_PARQUET)
    return tarn__errctx(rc, "record %s", it->rec.key);
  if (rc == TARN_ENOTFOUND)
    return tarn__err(TARN_ENOTFOUND, "WAL object %s named by record %s does not exist",
                     it->rec.location, it->rec.key);
  if (rc)
    return rc;
  if (it->pq)
    return 0;
  if ((rc = check_section(it)))
    return rc;
  /* position at the entry holding pos (R4); entries of the record start at rec.start */
  it->off = it->rec.start;
  it->cum = it->rec.cumulative - (uint64_t)it->rec.entry_size_bytes;
  it->idx = 0;
  while (it->idx < it->n && it->off + it->ents[it->idx].records <= it->pos) {
    it->off += it->ents[it->idx].records;
    it->cum += it->ents[it->idx].size;
    it->idx++;
  }
  return 0;
}

/* ---- R4: the iterator -------------------------------------------------------------- */

int tarn_log_iter_open(tarn_reader *r, uint64_t log_id, uint64_t from, tarn_log_iter **out) {
  *out = NULL;
  if (log_id > TARN_KEY_MAX || from > TARN_KEY_MAX)
    return tarn__err(TARN_EINVAL, "reader: log ID or offset above 2^63-1");
  tarn_log_iter *it = calloc(1, sizeof *it);
  if (!it)
    return tarn__err(TARN_ENOMEM, "out of memory");
  it->r = r;
  it->log_id = log_id;
  it->pos = from;
  it->kafka = r->o.kafka_offsets == TARN_READER_KAFKA_ALL      ? 1
              : r->o.kafka_offsets == TARN_READER_KAFKA_TOPICS ? -1
                                                               : 0;
  *out = it;
  return 0;
}

uint64_t tarn_log_iter_position(const tarn_log_iter *it) { return it->pos; }

size_t tarn_log_iter_held_bytes(const tarn_log_iter *it) {
  size_t n = it->win.cap + it->whole.cap + it->kbuf.cap;
  for (size_t i = 0; i < sizeof it->ra / sizeof *it->ra; i++)
    n += it->ra[i].buf.cap;
  return n;
}

int tarn_log_iter_next_size(const tarn_log_iter *it, size_t *size) {
  if (!it->have || it->pq || it->idx >= it->n)
    return TARN_ENOTFOUND; /* a record to open, or rows to decode: not known */
  *size = (size_t)it->ents[it->idx].size;
  return 0;
}

void tarn_log_iter_kafka_offsets(tarn_log_iter *it) { it->kafka = 1; }

void tarn_log_iter_begin_read(tarn_log_iter *it) {
  it->per_read = 1;
  it->b_known = 0;
}

void tarn_log_iter_close(tarn_log_iter *it) {
  if (!it)
    return;
  iter_drop_record(it);
  ahead_drop(it);
  tarn_buf_free(&it->win);
  tarn_buf_free(&it->whole);
  tarn_buf_free(&it->kbuf);
  free(it);
}

/* LS-055: an object or file went away mid-record: look the covering record up
 * again, past the cache. The end of the log is no error here. */
static int relookup(tarn_log_iter *it) {
  if (!TARN__PLANTED(TARN__BUG_READER_RELOOKUP_THROUGH_CACHE))
    tarn__rec_cache_forget(&it->r->recs, it->log_id);
  it->b_known = 0; /* a hard trim may have removed it: B afresh */
  ahead_drop(it);  /* and objects read ahead */
  int rc = open_record(it);
  return rc == TARN_EEND ? 0 : rc;
}

/* After a read's rc: TARN_ENOTFOUND (LS-055) up to 3 times a call looks the
 * record up again and gives 1 (read again); else rc, or relookup's error. */
static int again_if_missing(tarn_log_iter *it, int rc, int *relookups) {
  if (rc != TARN_ENOTFOUND || (*relookups)++ >= 3)
    return rc;
  rc = relookup(it);
  return rc ? rc : 1;
}

/* The next row of the Parquet record being read. Returns 0 with *e, 1 when
 * the record has no more rows (*used_end: its end offset), or an error. */
static int next_pq_row(tarn_log_iter *it, tarn_entry *e, int *relookups, uint64_t *used_end) {
  while (it->have && it->pq) {
    int rc = tarn__pq_next(it->pq, e);
    if (rc == TARN_EEND && TARN__PLANTED(TARN__BUG_READER_PQ_END_IS_LOG_END))
      return rc;
    if (rc == TARN_EEND) { /* this record's end, not the log's: on to the next record */
      it->have = 0;
      *used_end = it->rec.end;
      return 1;
    }
    if ((rc = again_if_missing(it, rc, relookups)) == 1)
      continue;
    if (rc)
      return rc;
    uint64_t end = e->offset + e->record_count;
    if (end <= it->b || end <= it->pos) /* LS-053 */
      continue;
    it->pos = end;
    return 0;
  }
  return 1;
}

/* The next entry of the WAL section being read. Returns 0 with *e, 1 when the
 * section has no more entries, or an error. */
static int next_section_entry(tarn_log_iter *it, tarn_entry *e, int *relookups) {
  while (it->have && it->idx < it->n) {
    size_t i = it->idx;
    const tarn__sec_ent *se = &it->ents[i];
    uint64_t off = it->off, end = off + se->records;
    /* LS-053: never an entry ending at or below B, nor one before pos */
    if (end <= it->b + TARN__PLANTED(TARN__BUG_READER_TRIM_LAST_OFFSET) || end <= it->pos) {
      it->off = end;
      it->cum += se->size;
      it->idx++;
      continue;
    }
    const uint8_t *p;
    if (it->have_whole) {
      p = it->whole.data + se->pos;
    } else {
      if (i < it->win_first || i >= it->win_end) {
        int rc = load_window(it);
        if ((rc = again_if_missing(it, rc, relookups)) == 1)
          continue;
        if (rc)
          return rc;
      }
      p = it->win.len ? it->win.data + (se->pos - it->win_pos) : (const uint8_t *)"";
    }
    it->off = end;
    it->cum += se->size;
    it->idx++;
    e->log_id = it->log_id;
    e->offset = off;
    e->record_count = se->records;
    e->timestamp_ms = it->rec.timestamp_ms;
    e->payload = p;
    e->payload_len = (size_t)se->size;
    e->cumulative_size = it->cum;
    it->pos = end; /* R4: the next read starts where this entry ends */
    return 0;
  }
  return 1;
}

static int next_entry(tarn_log_iter *it, tarn_entry *e, int timeout_ms) {
  tarn_reader *r = it->r;
  int64_t deadline = timeout_ms > 0 ? tarn__mono_ms() + timeout_ms : 0;
  int relookups = 0;
  for (;;) {
    uint64_t used_end = 0; /* the end offset of a record just read to its end */
    int rc = next_pq_row(it, e, &relookups, &used_end);
    if (rc <= 0)
      return rc;
    if ((rc = next_section_entry(it, e, &relookups)) <= 0)
      return rc;
    if (it->have && !it->pq)
      used_end = it->rec.end;
    /* A record read to its end leaves the iterator at its end offset or past
     * it, and the next lookup must give a record ending above that: each
     * round then moves pos forward and the loop ends. Were either broken (a
     * section or file whose entries stop short of the record's end, a lookup
     * answering at or below pos), the same record would come back for ever:
     * an error instead. */
    if (used_end > it->pos)
      return tarn__err(TARN_ECORRUPT,
                       "log %llu: record %s was read to its last entry, but the "
                       "reader stands at %llu, short of its end offset %llu",
                       (unsigned long long)it->log_id, it->rec.key, (unsigned long long)it->pos,
                       (unsigned long long)used_end);
    /* the current record is used up: find the next one; tailing waits for it.
     * The token is taken before the lookup so no record slips between them. */
    int64_t token = 0;
    if (timeout_ms != 0 && (rc = tarn_meta_change_token(r->meta, &token)))
      return rc;
    rc = open_record(it);
    if (rc == 0 && it->rec.end <= it->pos)
      return tarn__err(TARN_ECORRUPT,
                       "log %llu: the lookup for offset %llu gave record %s, which "
                       "ends at %llu",
                       (unsigned long long)it->log_id, (unsigned long long)it->pos, it->rec.key,
                       (unsigned long long)it->rec.end);
    if (rc == 0)
      continue;
    if (rc != TARN_EEND)
      return rc;
    if (timeout_ms == 0)
      return tarn__err(TARN_EEND, "log %llu: offset %llu is the end of the log",
                       (unsigned long long)it->log_id, (unsigned long long)it->pos);
    int wait = 10000;
    if (timeout_ms > 0) {
      int64_t left = deadline - tarn__mono_ms();
      if (left <= 0)
        return tarn__err(TARN_ETIMEDOUT, "log %llu: no entry at %llu within %d ms",
                         (unsigned long long)it->log_id, (unsigned long long)it->pos, timeout_ms);
      wait = left < wait ? (int)left : wait;
    }
    char part[TARN_KEY_PARTITION_LEN + 1], a[TARN_KEY_LEN + 1], b[TARN_KEY_LEN + 1];
    tarn_key_partition(part, it->log_id);
    tarn_key_format(a, it->log_id, it->pos, 0);
    tarn_key_format(b, it->log_id, TARN_KEY_MAX, TARN_KEY_MAX);
    rc = tarn_meta_wait_for_change(r->meta, part, a, b, token, wait);
    if (rc && rc != TARN_ETIMEDOUT)
      return rc;
  }
}

/* The bytes of e when they are the iterator's own buffer (the whole object
 * or the window it read): rewritten there, in place, with no copy. A
 * compacted file's rows may sit elsewhere: NULL. Rewriting is idempotent,
 * so an entry served twice from one window gets the same bytes. */
static uint8_t *own_bytes(tarn_log_iter *it, const tarn_entry *e) {
  const tarn_buf *bufs[2] = {&it->whole, &it->win};
  if (it->pq)
    return NULL;
  for (int i = 0; i < 2; i++) {
    const tarn_buf *b = bufs[i];
    if (b->len && e->payload >= b->data && e->payload_len <= b->len &&
        (size_t)(e->payload - b->data) <= b->len - e->payload_len)
      return b->data + (e->payload - b->data);
  }
  return NULL;
}

/* LS-099: the entry's batches take offsets in order from the entry's
 * offset; each batch's offset field gets them (tables §3.11). In the
 * iterator's own window the rewrite is made in place (one copy of the bytes
 * fewer for a Kafka Fetch); bytes held anywhere else are copied first. */
static int kafka_offsets(tarn_log_iter *it, tarn_entry *e) {
  if (it->kafka < 0) {
    int k = tarn_kafka_log_is_topic(it->r->meta, it->log_id);
    if (k < 0)
      return k;
    it->kafka = k;
  }
  if (!it->kafka)
    return 0;
  uint8_t *own = own_bytes(it, e);
  int rc = 0;
  if (!own) {
    tarn_buf_reset(&it->kbuf);
    rc = tarn_buf_append(&it->kbuf, e->payload, e->payload_len);
    own = it->kbuf.data;
  }
  if (!rc)
    rc = tarn_kafka_rewrite_offsets(own, e->payload_len, (int64_t)e->offset, e->record_count);
  if (rc)
    return tarn__errctx(rc, "log %llu: entry at %llu", (unsigned long long)it->log_id,
                        (unsigned long long)e->offset);
  e->payload = own;
  return 0;
}

int tarn_log_iter_next(tarn_log_iter *it, tarn_entry *e, int timeout_ms) {
  int rc = next_entry(it, e, timeout_ms);
  if (rc == 0 && it->kafka)
    rc = kafka_offsets(it, e);
  if (rc == 0) {
    tarn_metrics_inc("tarn_reader_entries_total", 1, NULL);
    tarn_metrics_inc("tarn_reader_bytes_total", e->payload_len, NULL);
  } else if (rc != TARN_EEND && rc != TARN_ETIMEDOUT) {
    tarn_metrics_inc("tarn_reader_errors_total", 1, "error", tarn_errname(rc), NULL);
  }
  return rc;
}
