/* The EntryIndex value of format version 3 (spec "Offset index values", tables
 * §3.5, §4.3, §4.5), through protobuf-c.
 *
 * protobuf-c does the decoding; before it runs, a framing walk of the wire
 * bytes checks what protobuf-c would report without a position (truncated
 * varints and lengths, wrong wire types of known fields, groups) and what it
 * cannot see at all (a NUL inside a string, which a C string would silently
 * cut), and records where each field was, so the semantic checks afterwards
 * can name a byte offset. */
#include "tarn/entryindex.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "entry_index.pb-c.h"
#include "tarn/error.h"
#include "tarn/offsets.h"
#include "util/bytes.h"
#include "util/error.h"

#define WHAT "entry index"

enum { K_INDEX, K_OFFSETS, K_EXTRA };

typedef struct scan {
  size_t field_off[12]; /* 1 + byte of the last tag of each EntryIndex field; 0 = absent */
  size_t payload_off;   /* first byte of the last compressed_payload value */
  size_t *extra_off;    /* byte of each extraData tag, in order */
  size_t n_extra, cap_extra;
} scan;

/* Wire type each known field must have: 0 varint, 2 length-delimited. */
static int expected_wire_type(int kind, uint64_t field) {
  switch (kind) {
  case K_INDEX: return field == 2 || field == 10 || field == 11 ? 2 : field <= 9 ? 0 : -1;
  case K_OFFSETS: return field == 3 ? 2 : field <= 2 ? 0 : -1;
  default: return field <= 2 ? 2 : -1;
  }
}

static int is_string(int kind, uint64_t field) {
  return (kind == K_INDEX && field == 2) || kind == K_EXTRA;
}

static int walk(const uint8_t *p, size_t len, size_t base, int kind, scan *sc) {
  tarn__rd r;
  tarn__rd_init(&r, p, len, WHAT);
  r.base = base;
  while (tarn__rd_left(&r)) {
    size_t at = base + r.off;
    uint64_t tag = 0, v = 0;
    int rc = tarn__rd_uvarint(&r, &tag, 5, UINT32_MAX, "field tag");
    if (rc)
      return rc;
    uint64_t field = tag >> 3;
    int wt = (int)(tag & 7);
    if (field == 0)
      return tarn__corrupt(WHAT, at, "field number 0");
    int want = expected_wire_type(kind, field);
    if (want >= 0 && want != wt)
      return tarn__corrupt(WHAT, at, "field %llu has wire type %d, expected %d",
                           (unsigned long long)field, wt, want);
    switch (wt) {
    case 0:
      if ((rc = tarn__rd_uvarint(&r, &v, 10, UINT64_MAX, "varint field")))
        return rc;
      break;
    case 1:
    case 5:
      if ((rc = tarn__rd_need(&r, wt == 1 ? 8 : 4, "fixed-width field")))
        return rc;
      r.off += wt == 1 ? 8 : 4;
      break;
    case 2: {
      const uint8_t *body;
      if ((rc = tarn__rd_uvarint(&r, &v, 5, INT32_MAX, "field length")))
        return rc;
      size_t body_at = base + r.off;
      if ((rc = tarn__rd_bytes(&r, (size_t)v, &body, "length-delimited field")))
        return rc;
      if (want < 0)
        break; /* an unknown field: protobuf-c keeps it aside */
      if (is_string(kind, field) && memchr(body, 0, (size_t)v))
        return tarn__corrupt(WHAT,
                             body_at + (size_t)((const uint8_t *)memchr(body, 0, (size_t)v) - body),
                             "string field %llu contains a NUL byte", (unsigned long long)field);
      if (kind == K_INDEX && field == 10 && (rc = walk(body, (size_t)v, body_at, K_OFFSETS, sc)))
        return rc;
      if (kind == K_INDEX && field == 11 && (rc = walk(body, (size_t)v, body_at, K_EXTRA, sc)))
        return rc;
      if (kind == K_OFFSETS && field == 3)
        sc->payload_off = body_at;
      break;
    }
    default:
      return tarn__corrupt(WHAT, at, "field %llu has wire type %d, which this format never uses",
                           (unsigned long long)field, wt);
    }
    if (kind == K_INDEX && field <= 11) {
      sc->field_off[field] = at + 1;
      if (field == 11) {
        if (sc->n_extra == sc->cap_extra) {
          size_t ncap = sc->cap_extra ? 2 * sc->cap_extra : 4;
          size_t *x = realloc(sc->extra_off, ncap * sizeof *x);
          if (!x)
            return tarn__err(TARN_ENOMEM, "entry index: out of memory");
          sc->extra_off = x, sc->cap_extra = ncap;
        }
        sc->extra_off[sc->n_extra++] = at;
      }
    }
  }
  return 0;
}

void tarn_entry_index_free(tarn_entry_index *ei) {
  free(ei->location);
  free(ei->compressed_payload);
  free(ei->boundaries);
  for (size_t i = 0; i < ei->n_extra; i++)
    free(ei->extra[i].key), free(ei->extra[i].value);
  free(ei->extra);
  memset(ei, 0, sizeof *ei);
}

static char *dup_str(const char *s, int *oom) {
  if (!s)
    return NULL;
  char *d = strdup(s);
  if (!d)
    *oom = 1;
  return d;
}

/* Copies the protobuf-c message into ei (which owns everything afterwards). */
static int copy_out(const Storage__Proto__EntryIndex *m, tarn_entry_index *ei) {
  int oom = 0;
  memset(ei, 0, sizeof *ei);
  ei->version = m->has_version ? (int32_t)m->version : -1;
  ei->location = dup_str(m->location, &oom);
  ei->file_type = m->has_file_type ? (int32_t)m->file_type : -1;
  ei->has_index_type = m->has_index_type, ei->index_type = (int32_t)m->index_type;
  ei->message_count = m->has_message_count ? m->message_count : 0;
  ei->entry_size_bytes = m->has_entry_size_bytes ? m->entry_size_bytes : -1;
  ei->has_file_size = m->has_file_size, ei->file_size = m->file_size;
  ei->has_offset_in_file = m->has_offset_in_file, ei->offset_in_file = m->offset_in_file;
  ei->entry_count = m->has_entry_count ? m->entry_count : 0;
  if (m->entry_offsets) {
    const Storage__Proto__EntryOffsets *o = m->entry_offsets;
    ei->has_entry_offsets = 1;
    ei->has_compression_type = o->has_compression_type;
    ei->compression_type = (int32_t)o->compression_type;
    ei->has_uncompressed_size = o->has_uncompressed_size;
    ei->uncompressed_size = o->uncompressed_size;
    if (o->has_compressed_payload) {
      size_t n = o->compressed_payload.len;
      ei->compressed_payload = malloc(n ? n : 1);
      if (ei->compressed_payload) {
        if (n)
          memcpy(ei->compressed_payload, o->compressed_payload.data, n);
        ei->compressed_payload_len = n;
      } else
        oom = 1;
    }
  }
  if (m->n_extradata) {
    ei->extra = calloc(m->n_extradata, sizeof *ei->extra);
    if (!ei->extra)
      oom = 1;
    else {
      ei->n_extra = m->n_extradata;
      for (size_t i = 0; i < m->n_extradata; i++) {
        ei->extra[i].key = dup_str(m->extradata[i]->key, &oom);
        ei->extra[i].value = dup_str(m->extradata[i]->value, &oom);
      }
    }
  }
  return oom ? tarn__err(TARN_ENOMEM, "entry index: out of memory") : 0;
}

/* Byte of field f for a message, or the end of the value when f is absent. */
#define AT(f) (sc.field_off[f] ? sc.field_off[f] - 1 : len)

static int check(tarn_entry_index *ei, const scan *scp, size_t len) {
  const scan sc = *scp;
  tarn_entry_index *out = ei; /* gets the decoded boundaries and the file index */
  if (ei->version < 0)
    return tarn__corrupt(WHAT, len, "version (field 1) absent");
  if (ei->version != 3) /* LS-002 */
    return tarn__err(TARN_EVERSION, "entry index: byte %zu: version %d is not 3 (LS-002)", AT(1),
                     ei->version);
  if (ei->file_type < 0)
    return tarn__corrupt(WHAT, len, "file_type (field 3) absent");
  if (ei->file_type != TARN_FILE_RAW && ei->file_type != TARN_FILE_PARQUET)
    return tarn__corrupt(WHAT, AT(3), "file_type %d is neither RAW (0) nor PARQUET (1)",
                         ei->file_type);
  if (ei->message_count < 1)
    return tarn__corrupt(WHAT, AT(5), "message_count %s", sc.field_off[5] ? "below 1" : "absent");
  if (ei->entry_size_bytes < 0)
    return tarn__corrupt(WHAT, AT(6), "entry_size_bytes %s",
                         sc.field_off[6] ? "is negative" : "absent");
  if (ei->entry_count < 1)
    return tarn__corrupt(WHAT, AT(9), "entry_count %s", sc.field_off[9] ? "below 1" : "absent");
  if (ei->file_type == TARN_FILE_RAW && (!ei->location || !ei->location[0]))
    return tarn__corrupt(WHAT, AT(2), "a RAW record needs a location");
  for (size_t i = 0; i < ei->n_extra; i++) {
    size_t at = i < sc.n_extra ? sc.extra_off[i] : AT(11);
    if (!ei->extra[i].key || !ei->extra[i].value) /* LS-029 */
      return tarn__corrupt(WHAT, at, "extraData pair %zu has no %s (LS-029)", i,
                           ei->extra[i].key ? "value" : "key");
    for (size_t j = 0; j < i; j++)
      if (strcmp(ei->extra[j].key, ei->extra[i].key) == 0) /* LS-030 */
        return tarn__corrupt(WHAT, at,
                             "extraData pair %zu repeats the key '%s' of pair %zu (LS-030)", i,
                             ei->extra[i].key, j);
    if (strcmp(ei->extra[i].key, TARN_FILE_INDEX_KEY) == 0)
      out->file_index = ei->extra[i].value;
  }
  if (ei->has_entry_offsets) {
    if (!ei->has_compression_type || ei->compression_type != TARN_COMPRESSION_FASTPFOR) /* LS-034 */
      return tarn__corrupt(WHAT, AT(10), "entry_offsets compression_type %d is not FastPFOR (1)",
                           ei->has_compression_type ? ei->compression_type : -1);
    if (!ei->compressed_payload)
      return tarn__corrupt(WHAT, AT(10), "entry_offsets has no compressed_payload");
    size_t n;
    int rc = tarn_entry_offsets_peek_count(ei->compressed_payload, ei->compressed_payload_len, &n);
    if (!rc && n != (size_t)ei->entry_count)
      return tarn__corrupt(WHAT, sc.payload_off, "entry_offsets hold %zu values, entry_count is %d",
                           n, ei->entry_count);
    if (!rc)
      rc = tarn_entry_offsets_decode(ei->compressed_payload, ei->compressed_payload_len,
                                     &out->boundaries, &out->n_boundaries);
    if (rc)
      return tarn__errctx(rc, "entry index: byte %zu: compressed_payload", sc.payload_off);
    uint32_t prev = 0;
    for (size_t i = 0; i < n; i++) {
      if (out->boundaries[i] <= prev || out->boundaries[i] > (uint32_t)ei->message_count)
        return tarn__corrupt(WHAT, sc.payload_off,
                             "entry_offsets boundary %zu (%u) is not above the previous (%u) "
                             "and at most message_count %d",
                             i, out->boundaries[i], prev, ei->message_count);
      prev = out->boundaries[i];
    }
    if (prev != (uint32_t)ei->message_count)
      return tarn__corrupt(WHAT, sc.payload_off, "entry_offsets end at %u, message_count is %d",
                           prev, ei->message_count);
  }
  if (ei->file_type == TARN_FILE_PARQUET && !out->file_index) /* LS-031 */
    return tarn__err(
        TARN_EUNSUPPORTED,
        "entry index: byte %zu: PARQUET record without a CompactedObjectFileIndex "
        "extraData pair (legacy compacted data): its entries must not be read (LS-031)",
        AT(11));
  return 0;
}

int tarn_entry_index_decode(const uint8_t *p, size_t len, tarn_entry_index *out) {
  scan sc;
  memset(&sc, 0, sizeof sc);
  memset(out, 0, sizeof *out);
  int rc = walk(p, len, 0, K_INDEX, &sc);
  if (rc) {
    free(sc.extra_off);
    return rc;
  }
  Storage__Proto__EntryIndex *m = storage__proto__entry_index__unpack(NULL, len, p);
  if (!m) {
    free(sc.extra_off);
    return tarn__corrupt(WHAT, 0, "not a valid protobuf message");
  }
  tarn_entry_index ei;
  rc = copy_out(m, &ei);
  storage__proto__entry_index__free_unpacked(m, NULL);
  if (!rc)
    rc = check(&ei, &sc, len);
  free(sc.extra_off);
  if (rc) {
    tarn_entry_index_free(&ei);
    return rc;
  }
  *out = ei;
  return 0;
}

int tarn_entry_index_read_kind(const tarn_entry_index *ei) {
  /* LS-028: file_type alone; index_type is never consulted. */
  if (ei->file_type == TARN_FILE_RAW || ei->file_type == TARN_FILE_PARQUET)
    return ei->file_type;
  return tarn__err(TARN_EINVAL, "entry index: file_type %d is neither RAW nor PARQUET",
                   ei->file_type);
}

int tarn_entry_index_encode(const tarn_entry_index *ei, tarn_buf *out) {
  Storage__Proto__EntryIndex m = STORAGE__PROTO__ENTRY_INDEX__INIT;
  Storage__Proto__EntryOffsets o = STORAGE__PROTO__ENTRY_OFFSETS__INIT;
  m.has_version = 1, m.version = (Storage__Proto__Version)ei->version;
  m.location = ei->location;
  m.has_file_type = 1, m.file_type = (Storage__Proto__FileType)ei->file_type;
  m.has_index_type = ei->has_index_type, m.index_type = (Storage__Proto__IndexType)ei->index_type;
  m.has_message_count = 1, m.message_count = ei->message_count;
  m.has_entry_size_bytes = 1, m.entry_size_bytes = ei->entry_size_bytes;
  m.has_file_size = ei->has_file_size, m.file_size = ei->file_size;
  m.has_offset_in_file = ei->has_offset_in_file, m.offset_in_file = ei->offset_in_file;
  m.has_entry_count = 1, m.entry_count = ei->entry_count;
  if (ei->has_entry_offsets) {
    o.has_compression_type = ei->has_compression_type;
    o.compression_type = (Storage__Proto__CompressionType)ei->compression_type;
    o.has_uncompressed_size = ei->has_uncompressed_size;
    o.uncompressed_size = ei->uncompressed_size;
    o.has_compressed_payload = ei->compressed_payload != NULL;
    o.compressed_payload.data = ei->compressed_payload;
    o.compressed_payload.len = ei->compressed_payload_len;
    m.entry_offsets = &o;
  }
  Storage__Proto__ExtraData *xs = NULL, **xp = NULL;
  if (ei->n_extra) {
    xs = calloc(ei->n_extra, sizeof *xs);
    xp = calloc(ei->n_extra, sizeof *xp);
    if (!xs || !xp) {
      free(xs), free(xp);
      return tarn__err(TARN_ENOMEM, "entry index: out of memory");
    }
    for (size_t i = 0; i < ei->n_extra; i++) {
      storage__proto__extra_data__init(&xs[i]);
      xs[i].key = ei->extra[i].key, xs[i].value = ei->extra[i].value;
      xp[i] = &xs[i];
    }
  }
  m.n_extradata = ei->n_extra, m.extradata = xp;
  size_t n = storage__proto__entry_index__get_packed_size(&m);
  int rc = tarn_buf_reserve(out, n);
  if (!rc)
    out->len += storage__proto__entry_index__pack(&m, out->data + out->len);
  free(xs), free(xp);
  return rc;
}

int tarn_entry_index_build_raw(const tarn_raw_record *r, tarn_buf *out) {
  size_t n = r->entry_count;
  if (!r->location || !r->location[0])
    return tarn__err(TARN_EINVAL, "entry index: a RAW record needs a location");
  if (r->message_count < 1 || r->message_count > INT32_MAX)
    return tarn__err(TARN_ERANGE, "entry index: message_count %lld outside 1..2^31-1",
                     (long long)r->message_count);
  if (n < 1 || n > INT32_MAX / 4) /* uncompressed_size = 4n is an int32 */
    return tarn__err(TARN_ERANGE, "entry index: entry_count %zu outside 1..2^29-1", n);
  if (r->entry_size_bytes < 0 || r->file_size < r->entry_size_bytes)
    return tarn__err(TARN_EINVAL,
                     "entry index: entry_size_bytes %lld must be >= 0 and at most file_size %lld",
                     (long long)r->entry_size_bytes, (long long)r->file_size);
  if (!r->boundaries)
    return tarn__err(TARN_EINVAL, "entry index: a RAW record needs its entry boundaries");
  uint32_t prev = 0;
  for (size_t i = 0; i < n; i++) {
    if (r->boundaries[i] <= prev)
      return tarn__err(TARN_EINVAL, "entry index: boundary %zu (%u) not above %u", i,
                       r->boundaries[i], prev);
    prev = r->boundaries[i];
  }
  if ((int64_t)prev != r->message_count)
    return tarn__err(TARN_EINVAL, "entry index: the last boundary %u is not message_count %lld",
                     prev, (long long)r->message_count);
  tarn_entry_index ei;
  memset(&ei, 0, sizeof ei);
  ei.version = 3;
  ei.location = (char *)r->location;
  ei.file_type = TARN_FILE_RAW; /* written explicitly as 18 00 (§3.5) */
  ei.has_index_type = 1;
  ei.index_type = r->single_section ? TARN_INDEX_COMPACT : TARN_INDEX_NORMAL;
  ei.message_count = (int32_t)r->message_count;
  ei.entry_size_bytes = r->entry_size_bytes;
  ei.has_file_size = 1, ei.file_size = r->file_size;
  ei.has_offset_in_file = 1, ei.offset_in_file = -1;
  ei.entry_count = (int32_t)n;
  tarn_buf words = TARN_BUF_INIT;
  if (n > 1) { /* LS-033, LS-034 */
    int rc = tarn_entry_offsets_encode(r->boundaries, n, &words);
    if (rc)
      return rc;
    ei.has_entry_offsets = 1;
    ei.has_compression_type = 1, ei.compression_type = TARN_COMPRESSION_FASTPFOR;
    ei.has_uncompressed_size = 1, ei.uncompressed_size = (int32_t)(4 * n);
    ei.compressed_payload = words.data, ei.compressed_payload_len = words.len;
  }
  int rc = tarn_entry_index_encode(&ei, out);
  tarn_buf_free(&words);
  return rc;
}

int tarn_entry_index_build_parquet(const tarn_parquet_record *r, tarn_buf *out,
                                   unsigned *warnings) {
  if (warnings)
    *warnings = 0;
  if (r->e <= r->s || r->e - r->s > INT32_MAX)
    return tarn__err(TARN_ERANGE,
                     "entry index: range [%lld, %lld) is empty or exceeds 2^31-1 records",
                     (long long)r->s, (long long)r->e);
  if (r->c_e < r->c_s)
    return tarn__err(TARN_EINVAL, "entry index: cumulative size %lld below %lld", (long long)r->c_e,
                     (long long)r->c_s);
  if (!r->files || r->n_files == 0)
    return tarn__err(TARN_EINVAL, "entry index: a PARQUET record needs at least one file");
  tarn_buf b64 = TARN_BUF_INIT;
  int rc = tarn_file_index_build_base64(r->files, r->n_files, r->s, r->e, &b64);
  if (!rc)
    rc = tarn_buf_putc(&b64, 0);
  if (rc) {
    tarn_buf_free(&b64);
    return rc;
  }
  tarn_extra_data x = {(char *)TARN_FILE_INDEX_KEY, (char *)b64.data};
  tarn_entry_index ei;
  memset(&ei, 0, sizeof ei);
  ei.version = 3;
  ei.location = (char *)(r->location ? r->location : r->files[0].name);
  ei.file_type = TARN_FILE_PARQUET;
  ei.has_index_type = 1, ei.index_type = TARN_INDEX_COMPACT;
  ei.message_count = (int32_t)(r->e - r->s);
  ei.entry_size_bytes = r->c_e - r->c_s;
  ei.has_file_size = 1, ei.file_size = r->file_size;
  ei.has_offset_in_file = 1, ei.offset_in_file = 0;
  ei.entry_count = 1;
  ei.extra = &x, ei.n_extra = 1;
  if (warnings && ei.entry_size_bytes >= (int64_t)1 << 31) /* LS-032: SHOULD stay below 2^31 */
    *warnings |= TARN_EI_WARN_SIZE_2_31;
  rc = tarn_entry_index_encode(&ei, out);
  tarn_buf_free(&b64);
  return rc;
}

int tarn_entry_index_build_raw_section(const tarn_wal_builder *b, size_t i, const char *location,
                                       tarn_buf *out) {
  const tarn_wal_built_section *bs = &b->sections[i];
  uint32_t *bounds = malloc((bs->entry_count ? bs->entry_count : 1) * sizeof *bounds);
  if (!bounds)
    return tarn__err(TARN_ENOMEM, "out of memory");
  for (size_t k = 0; k < bs->entry_count; k++)
    bounds[k] = (uint32_t)bs->bounds[k];
  tarn_raw_record r = {.location = location,
                       .single_section = b->section_count == 1,
                       .message_count = (int64_t)bs->record_total,
                       .entry_size_bytes = (int64_t)bs->payload_total,
                       .file_size = (int64_t)b->payload_region_size,
                       .boundaries = bounds,
                       .entry_count = bs->entry_count};
  int rc = tarn_entry_index_build_raw(&r, out);
  free(bounds);
  return rc;
}
