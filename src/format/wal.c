/* WAL objects, format version 3: the zero-copy decoder and the builder (spec "WAL objects"). */
#include "tarn/wal.h"

#include <stdlib.h>
#include <string.h>

#include "format/wal_internal.h"
#include "tarn/error.h"
#include "util/bytes.h"
#include "util/error.h"

/* The smallest entry is three one-byte varints; the smallest section adds an
 * 8-byte log_id and a one-byte entry_count. Counts read from the index are
 * checked against these before anything is sized by them. */
#define ENTRY_MIN 3
#define SECTION_MIN (8 + 1 + ENTRY_MIN)

/* ---- version detection ---------------------------------------------------- */

/* A v3 object starts with int32 index_length >= 4, so its first four bytes are
 * never all zero. A legacy object starts with int64 index_length, whose four
 * high bytes are zero for any index region below 4 GiB (134 M tuples; Ursa
 * never wrote one that large). So "first four bytes zero" alone tells the
 * layouts apart, with no overlap; bytes 4..7 then are index_version (v3, which
 * must be 3) or the low half of a multiple of 32 (legacy). A legacy object of
 * 4 GiB or more of index would be taken for v3 and refused by its
 * index_version or its length, never misread. */
int tarn_wal_detect_version(const uint8_t *p, size_t n) {
  if (n < TARN_WAL_PROBE_LEN)
    return tarn__corrupt(TARN__WAL_WHAT, 0,
                         "%zu bytes cannot hold the 8-byte header of either layout", n);
  uint32_t first = tarn__ld_be32(p);
  if (first == 0)
    return TARN_WAL_LEGACY;
  if (first < 4)
    return tarn__corrupt(TARN__WAL_WHAT, 0, "index_length %u is less than 4", first);
  uint32_t version = tarn__ld_be32(p + 4);
  if (version != TARN_WAL_VERSION) /* LS-002 */
    return tarn__err(TARN_EVERSION,
                     "wal object: byte 4: index_version %u is not 3 (this build reads format "
                     "version 3, and the legacy layout of versions 1 and 2)",
                     version);
  return TARN_WAL_VERSION;
}

int tarn_wal_head_length(const uint8_t *p, size_t n, uint64_t object_size, uint64_t *head_len) {
  if (n > object_size || (n < TARN_WAL_PROBE_LEN && n < object_size))
    return tarn__err(TARN_EINVAL, "wal object: %zu probe bytes given for an object of %llu", n,
                     (unsigned long long)object_size);
  int v = tarn_wal_detect_version(p, n);
  if (v < 0)
    return v;
  uint64_t h = v == TARN_WAL_LEGACY ? 8 + tarn__ld_be64(p) : 4 + (uint64_t)tarn__ld_be32(p);
  if (h > object_size)
    return tarn__corrupt(TARN__WAL_WHAT, 0, "index_length %llu exceeds the object's %llu bytes",
                         (unsigned long long)(h - (v == TARN_WAL_LEGACY ? 8 : 4)),
                         (unsigned long long)object_size);
  *head_len = h;
  return 0;
}

/* ---- version 3 decoder ----------------------------------------------------- */

static int rd_varint32(tarn__rd *r, uint32_t *v, const char *field) {
  uint64_t x = 0;
  int rc = tarn__rd_uvarint(r, &x, 5, TARN_WAL_VARINT32_MAX, field); /* LS-019 */
  *v = (uint32_t)x;
  return rc;
}

/* Walks the log sections of the index region. With w == NULL it only checks
 * and counts; otherwise it fills w's arrays, which the counting pass sized. */
static int walk_sections(const uint8_t *p, uint64_t index_length, uint64_t region_off,
                         uint64_t region_size, const uint8_t *payloads, tarn_wal *w, size_t *nsec,
                         size_t *nent) {
  tarn__rd r;
  tarn__rd_init(&r, p + 8, (size_t)index_length - 4, TARN__WAL_WHAT);
  r.base = 8;
  size_t s = 0, e = 0;
  while (tarn__rd_left(&r)) {
    size_t sec_pos = r.base + r.off;
    uint64_t log_id;
    uint32_t count;
    int rc = tarn__rd_be64(&r, &log_id, "log_id");
    if (rc)
      return rc;
    if (log_id > TARN_WAL_LOG_ID_MAX)
      return tarn__corrupt(TARN__WAL_WHAT, sec_pos, "log_id %llu exceeds 2^63-1",
                           (unsigned long long)log_id);
    size_t count_pos = r.base + r.off;
    if ((rc = rd_varint32(&r, &count, "entry_count")))
      return rc;
    if (count == 0) /* LS-016: a section holds at least one entry */
      return tarn__corrupt(TARN__WAL_WHAT, count_pos, "entry_count of log %llu is 0",
                           (unsigned long long)log_id);
    if ((uint64_t)count * ENTRY_MIN > tarn__rd_left(&r))
      return tarn__corrupt(TARN__WAL_WHAT, count_pos,
                           "entry_count %u needs at least %llu bytes, %zu left in the index region",
                           count, (unsigned long long)count * ENTRY_MIN, tarn__rd_left(&r));
    tarn_wal_section *sec = NULL;
    if (w) {
      sec = &w->sections[s];
      sec->log_id = log_id;
      sec->entry_count = count;
      sec->entries = &w->entry_store_[e];
      sec->index_pos = sec_pos;
    }
    for (uint32_t i = 0; i < count; i++) {
      size_t ent_pos = r.base + r.off;
      uint32_t off, size, recs;
      if ((rc = rd_varint32(&r, &off, "payload_offset")) ||
          (rc = rd_varint32(&r, &size, "payload_size")))
        return rc;
      size_t rc_pos = r.base + r.off;
      if ((rc = rd_varint32(&r, &recs, "record_count")))
        return rc;
      if (recs == 0) /* LS-016 */
        return tarn__corrupt(TARN__WAL_WHAT, rc_pos, "record_count of log %llu entry %u is 0",
                             (unsigned long long)log_id, i);
      if ((uint64_t)off + size > region_size) /* LS-022 */
        return tarn__corrupt(TARN__WAL_WHAT, ent_pos,
                             "payload of log %llu entry %u ([%u, %llu)) lies outside the %llu-byte "
                             "payload region",
                             (unsigned long long)log_id, i, off, (unsigned long long)off + size,
                             (unsigned long long)region_size);
      if (sec) {
        tarn_wal_entry *en = &sec->entries[i];
        en->payload_offset = off; /* LS-024: located by its own offset, never by adjacency */
        en->payload_size = size;
        en->payload_pos = region_off + off;
        en->payload = payloads ? payloads + off : NULL;
        en->record_count = recs;
        en->entry_id = i;
        en->index_pos = ent_pos;
        sec->record_total += recs;
        sec->payload_total += size;
      }
    }
    s++;
    e += count;
  }
  if (s == 0)
    return tarn__corrupt(TARN__WAL_WHAT, 8, "the index region holds no log section");
  *nsec = s;
  *nent = e;
  return 0;
}

static int decode_v3(const uint8_t *p, size_t avail, uint64_t object_size, int with_payloads,
                     tarn_wal *out) {
  uint32_t index_length = tarn__ld_be32(p);
  if (index_length > TARN_WAL_VARINT32_MAX)
    return tarn__corrupt(TARN__WAL_WHAT, 0, "index_length %u exceeds 2^31-1 (int32)", index_length);
  if (index_length < 4)
    return tarn__corrupt(TARN__WAL_WHAT, 0, "index_length %u is less than 4", index_length);
  if (index_length > object_size - 4)
    return tarn__corrupt(TARN__WAL_WHAT, 0,
                         "index_length %u exceeds the %llu bytes after the length field",
                         index_length, (unsigned long long)object_size - 4);
  if (avail < 4 + (uint64_t)index_length)
    return tarn__err(TARN_EINVAL, "wal object: %zu head bytes given, the index region ends at %llu",
                     avail, 4 + (unsigned long long)index_length);
  uint64_t region_off = 4 + (uint64_t)index_length;
  uint64_t region_size = object_size - region_off;
  const uint8_t *payloads = with_payloads ? p + region_off : NULL;
  size_t nsec, nent;
  int rc = walk_sections(p, index_length, region_off, region_size, NULL, NULL, &nsec, &nent);
  if (rc)
    return rc;
  tarn_wal w;
  memset(&w, 0, sizeof w);
  if ((rc = tarn__wal_alloc(&w, nsec, nent)))
    return rc;
  if ((rc = walk_sections(p, index_length, region_off, region_size, payloads, &w, &nsec, &nent)) ||
      (rc = tarn__wal_index_logs(&w))) {
    tarn_wal_free(&w);
    return rc;
  }
  w.version = TARN_WAL_VERSION;
  w.index_version = TARN_WAL_VERSION;
  w.index_length = index_length;
  w.object_size = object_size;
  w.payload_region_offset = region_off;
  w.payload_region_size = region_size;
  w.has_payloads = with_payloads;
  *out = w;
  return 0;
}

static int decode_any(const uint8_t *p, size_t avail, uint64_t object_size, int with_payloads,
                      tarn_wal *out) {
  memset(out, 0, sizeof *out);
  if (avail < TARN_WAL_PROBE_LEN && avail < object_size)
    return tarn__err(TARN_EINVAL, "wal object: %zu head bytes given, the header needs %d", avail,
                     TARN_WAL_PROBE_LEN);
  int v = tarn_wal_detect_version(p, avail < object_size ? avail : (size_t)object_size);
  if (v < 0)
    return v;
  if (v == TARN_WAL_LEGACY)
    return tarn__wal_decode_legacy(p, avail, object_size, with_payloads, out);
  return decode_v3(p, avail, object_size, with_payloads, out);
}

int tarn_wal_decode(const uint8_t *obj, size_t len, tarn_wal *out) {
  return decode_any(obj, len, len, 1, out);
}

int tarn_wal_decode_index(const uint8_t *head, size_t head_len, uint64_t object_size,
                          tarn_wal *out) {
  if (head_len > object_size) {
    memset(out, 0, sizeof *out);
    return tarn__err(TARN_EINVAL, "wal object: %zu head bytes given for an object of %llu",
                     head_len, (unsigned long long)object_size);
  }
  return decode_any(head, head_len, object_size, 0, out);
}

/* ---- version 3 builder ----------------------------------------------------- */

void tarn_wal_builder_init(tarn_wal_builder *b) { memset(b, 0, sizeof *b); }

void tarn_wal_builder_free(tarn_wal_builder *b) {
  free(b->sections);
  free(b->ents_);
  free(b->heads_);
  free(b->tails_);
  free(b->bounds_);
  memset(b, 0, sizeof *b);
}

void tarn_wal_builder_reset(tarn_wal_builder *b) {
  b->section_count = 0;
  b->nents_ = 0;
  b->last_sec_ = 0;
  b->payload_len_ = 0;
  b->payload_region_size = 0;
  b->index_length = 0;
}

static int grow(void **p, size_t *cap, size_t need, size_t elem) {
  if (need <= *cap)
    return 0;
  size_t n = *cap ? *cap : 8;
  while (n < need)
    n *= 2;
  void *q = realloc(*p, n * elem);
  if (!q)
    return tarn__err(TARN_ENOMEM, "wal builder: out of memory");
  *p = q;
  *cap = n;
  return 0;
}

static int find_or_add_section(tarn_wal_builder *b, uint64_t log_id, size_t *out) {
  if (b->last_sec_ < b->section_count && b->sections[b->last_sec_].log_id == log_id) {
    *out = b->last_sec_;
    return 0;
  }
  for (size_t i = 0; i < b->section_count; i++)
    if (b->sections[i].log_id == log_id) { /* LS-020: one section per log */
      *out = b->last_sec_ = i;
      return 0;
    }
  size_t n = b->section_count, cap = b->cap_secs_;
  int rc = grow((void **)&b->sections, &cap, n + 1, sizeof *b->sections);
  if (!rc) {
    size_t c2 = b->cap_secs_;
    rc = grow((void **)&b->heads_, &c2, n + 1, sizeof *b->heads_);
    c2 = b->cap_secs_;
    if (!rc)
      rc = grow((void **)&b->tails_, &c2, n + 1, sizeof *b->tails_);
  }
  if (rc)
    return rc;
  b->cap_secs_ = cap;
  memset(&b->sections[n], 0, sizeof b->sections[n]);
  b->sections[n].log_id = log_id;
  b->heads_[n] = b->tails_[n] = SIZE_MAX;
  b->section_count = n + 1;
  *out = b->last_sec_ = n;
  return 0;
}

int tarn_wal_builder_add(tarn_wal_builder *b, uint64_t log_id, const void *payload, size_t len,
                         uint32_t record_count) {
  if (record_count == 0) /* LS-016 */
    return tarn__err(TARN_EINVAL, "wal builder: an entry must hold at least one record");
  if (record_count > TARN_WAL_VARINT32_MAX) /* LS-019 */
    return tarn__err(TARN_ERANGE, "wal builder: record_count %u exceeds 2^31-1", record_count);
  if (log_id > TARN_WAL_LOG_ID_MAX)
    return tarn__err(TARN_EINVAL, "wal builder: log_id %llu exceeds 2^63-1",
                     (unsigned long long)log_id);
  if (len > TARN_WAL_VARINT32_MAX) /* LS-019 */
    return tarn__err(TARN_ERANGE, "wal builder: payload_size %zu exceeds 2^31-1", len);
  if (b->payload_len_ > TARN_WAL_VARINT32_MAX) /* LS-019: this entry's payload_offset */
    return tarn__err(TARN_ERANGE,
                     "wal builder: payload_offset %llu exceeds 2^31-1; start a new object",
                     (unsigned long long)b->payload_len_);
  if (len && !payload)
    return tarn__err(TARN_EINVAL, "wal builder: NULL payload of %zu bytes", len);
  size_t s;
  int rc = find_or_add_section(b, log_id, &s);
  if (rc)
    return rc;
  if ((rc = grow((void **)&b->ents_, &b->cap_ents_, b->nents_ + 1, sizeof *b->ents_)))
    return rc;
  size_t i = b->nents_++;
  tarn_wal_builder_ent_ *e = &b->ents_[i];
  e->payload = payload;
  e->size = (uint32_t)len;
  e->record_count = record_count;
  e->offset = (uint32_t)b->payload_len_;
  e->section = s;
  e->next = SIZE_MAX;
  if (b->tails_[s] == SIZE_MAX)
    b->heads_[s] = i;
  else
    b->ents_[b->tails_[s]].next = i; /* LS-021: a log's entries stay in the order added */
  b->tails_[s] = i;
  b->sections[s].entry_count++;
  b->sections[s].record_total += record_count;
  b->sections[s].payload_total += len;
  b->payload_len_ += len;
  return 0;
}

static unsigned varint_len(uint32_t v) {
  return v < (1u << 7) ? 1 : v < (1u << 14) ? 2 : v < (1u << 21) ? 3 : v < (1u << 28) ? 4 : 5;
}

static uint8_t *put_varint(uint8_t *p, uint32_t v) {
  while (v >= 0x80) {
    *p++ = (uint8_t)(v | 0x80);
    v >>= 7;
  }
  *p++ = (uint8_t)v;
  return p;
}

int tarn_wal_builder_finish(tarn_wal_builder *b, tarn_buf *out) {
  if (b->nents_ == 0)
    return tarn__err(TARN_EINVAL, "wal builder: an object must hold at least one entry");
  uint64_t index_length = 4;
  for (size_t s = 0; s < b->section_count; s++)
    index_length += 8 + varint_len((uint32_t)b->sections[s].entry_count);
  for (size_t i = 0; i < b->nents_; i++) {
    const tarn_wal_builder_ent_ *e = &b->ents_[i];
    index_length += varint_len(e->offset) + varint_len(e->size) + varint_len(e->record_count);
  }
  if (index_length > TARN_WAL_VARINT32_MAX)
    return tarn__err(TARN_ERANGE, "wal builder: index_length %llu exceeds 2^31-1",
                     (unsigned long long)index_length);
  int rc = grow((void **)&b->bounds_, &b->cap_bounds_, b->nents_, sizeof *b->bounds_);
  if (rc)
    return rc;
  uint64_t total = 4 + index_length + b->payload_len_;
  if (total > SIZE_MAX - out->len)
    return tarn__err(TARN_ERANGE, "wal builder: object of %llu bytes", (unsigned long long)total);
  if ((rc = tarn_buf_reserve(out, (size_t)total)))
    return rc;
  /* LS-017: the exact v3 layout, written in one pass into reserved memory. */
  uint8_t *p = out->data + out->len;
  tarn__st_be32(p, (uint32_t)index_length);
  tarn__st_be32(p + 4, TARN_WAL_VERSION);
  p += 8;
  uint64_t *bounds = b->bounds_;
  for (size_t s = 0; s < b->section_count; s++) {
    tarn_wal_built_section *sec = &b->sections[s];
    tarn__st_be64(p, sec->log_id);
    p = put_varint(p + 8, (uint32_t)sec->entry_count);
    sec->bounds = bounds;
    uint64_t acc = 0;
    for (size_t i = b->heads_[s]; i != SIZE_MAX; i = b->ents_[i].next) {
      const tarn_wal_builder_ent_ *e = &b->ents_[i];
      p = put_varint(p, e->offset);
      p = put_varint(p, e->size);
      p = put_varint(p, e->record_count);
      *bounds++ = acc += e->record_count;
    }
  }
  for (size_t i = 0; i < b->nents_; i++) { /* payloads in the order added, copied once */
    const tarn_wal_builder_ent_ *e = &b->ents_[i];
    if (e->size)
      memcpy(p, e->payload, e->size);
    p += e->size;
  }
  out->len += (size_t)total;
  b->index_length = index_length;
  b->payload_region_size = b->payload_len_;
  return 0;
}
