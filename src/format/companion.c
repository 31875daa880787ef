/* Companion files (spec "Companion files"; tables-and-vectors §3.7, §4.8, §7.7):
 * a streaming writer that deflates block by block, a total reader with a cap
 * on the decompressed size, and the floor lookup of LS-065. */
#include "tarn/companion.h"

#include <jansson.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <isa-l/igzip_lib.h>
#include <zlib.h>

#include "format/gunzip.h"
#include "lakehouse_entry_metadata.pb-c.h"
#include "util/bytes.h"
#include "util/base64.h"
#include "util/error.h"

#define WHAT "companion file"
#define WHAT_GZ "companion file (gzip)"

typedef Materialization__Proto__EntryHeader pb_header;
typedef Materialization__Proto__LakehouseEntryMetadata pb_meta;

/* ---- shared pieces ------------------------------------------------------- */

/* A canonical decimal: digits only, no sign, no leading zero except "0", at
 * most INT64_MAX. Returns 0 or -1. */
static int parse_decimal(const char *s, size_t n, int64_t *v) {
  if (n == 0 || n > 19 || (n > 1 && s[0] == '0'))
    return -1;
  uint64_t x = 0;
  for (size_t i = 0; i < n; i++) {
    if (s[i] < '0' || s[i] > '9')
      return -1;
    x = x * 10 + (uint64_t)(s[i] - '0');
  }
  if (x > INT64_MAX)
    return -1;
  *v = (int64_t)x;
  return 0;
}

static int check_header(const tarn_entry_header *h, char *why, size_t whylen) {
  if (h->offset < 0)
    snprintf(why, whylen, "offset %lld is negative", (long long)h->offset);
  else if (h->record_count <= 0)
    snprintf(why, whylen, "numberOfMessages %d is not positive", (int)h->record_count);
  else if (h->entry_size < 0)
    snprintf(why, whylen, "entrySize %d is negative", (int)h->entry_size);
  else if (h->cumulative_size < 0)
    snprintf(why, whylen, "cumulativeSize %lld is negative", (long long)h->cumulative_size);
  else
    return 0;
  return -1;
}

/* ---- writing ------------------------------------------------------------- */

/* The writer builds each block's JSON text itself (a row is always
 * {"metadata":"<Base64>","offset":"<decimal>"}, and neither Base64 nor a
 * decimal needs escaping, so the text is what jansson's JSON_COMPACT gives),
 * then compresses the whole block in one call with ISA-L's igzip at level 1,
 * which writes a standard gzip stream (RFC 1952). Per row that is one
 * protobuf encoding and a few appends; jansson objects and zlib at level 6
 * made it 15-30 MB/s of stream (docs/compaction.md "Where the time goes"). */
#define GZ_LEVEL 1

struct tarn_companion_writer {
  tarn_buf *out;
  size_t block_rows;
  int flags;
  struct isal_zstream *z; /* NULL when uncompressed */
  uint8_t *z_level_buf;
  tarn_buf text;    /* [int32 BE length][JSON] of the pending block */
  size_t block_n;   /* rows in the pending block */
  int64_t *offsets; /* every row's offset, for the offset map */
  size_t nrows, cap;
  uint64_t next_min; /* the least offset the next row may have */
};

static int emit_gzip(tarn_companion_writer *w, const uint8_t *p, size_t n, int last) {
  struct isal_zstream *z = w->z;
  for (;;) {
    /* igzip counts in uint32_t: feed very large pieces in slices. */
    size_t slice = n > (1u << 30) ? (1u << 30) : n;
    z->next_in = (uint8_t *)(uintptr_t)p;
    z->avail_in = (uint32_t)slice;
    z->end_of_stream = (uint16_t)(last && slice == n);
    z->flush = NO_FLUSH;
    do {
      size_t room = slice / 2 + 65536;
      int rc = tarn_buf_reserve(w->out, room);
      if (rc)
        return rc;
      z->next_out = w->out->data + w->out->len;
      z->avail_out = (uint32_t)room;
      int zr = isal_deflate(z);
      w->out->len += room - z->avail_out;
      if (zr != COMP_OK)
        return tarn__err(TARN_EIO, "companion writer: igzip deflate failed (%d)", zr);
    } while (z->avail_in > 0 || (z->end_of_stream && z->internal_state.state != ZSTATE_END));
    p += slice, n -= slice;
    if (n == 0)
      return 0;
  }
}

/* Hands w->text (a block, or the sentinel and the map) to the output. */
static int emit_text(tarn_companion_writer *w, int last) {
  int rc = 0;
  if (w->z)
    rc = emit_gzip(w, w->text.data, w->text.len, last);
  else
    rc = tarn_buf_append(w->out, w->text.data, w->text.len);
  tarn_buf_reset(&w->text);
  return rc;
}

/* Starts a [int32 BE N][N bytes of JSON] piece whose N is filled in by end_piece. */
static int begin_piece(tarn_companion_writer *w, char open) {
  uint8_t b[5] = {0, 0, 0, 0, (uint8_t)open};
  return tarn_buf_append(&w->text, b, 5);
}

static int end_piece(tarn_companion_writer *w, size_t at, char close) {
  int rc = tarn_buf_putc(&w->text, (uint8_t)close);
  if (rc)
    return rc;
  size_t n = w->text.len - at - 4;
  if (n > INT32_MAX - 1)
    return tarn__err(TARN_ERANGE, "companion writer: block of %zu bytes", n);
  tarn__st_be32(w->text.data + at, (uint32_t)n);
  return 0;
}

static int flush_block(tarn_companion_writer *w) {
  int rc = w->text.len == 0 ? begin_piece(w, '[') : 0; /* an empty block: [] */
  if (!rc)
    rc = end_piece(w, 0, ']');
  w->block_n = 0;
  return rc ? rc : emit_text(w, 0);
}

/* A protobuf varint of v; int32 and int64 fields both encode a negative
 * value as its 64-bit two's complement (10 bytes), as protobuf-c does. */
static size_t put_varint(uint8_t *p, uint64_t v) {
  size_t n = 0;
  while (v >= 0x80) {
    p[n++] = (uint8_t)(v | 0x80);
    v >>= 7;
  }
  p[n++] = (uint8_t)v;
  return n;
}

/* The LakehouseEntryMetadata bytes of h into p (at most META_MAX): field 2,
 * the EntryHeader, with its five fields in field order. Written by hand
 * because protobuf-c's descriptor-driven packing was a fifth of the
 * companion writer's time; the bytes are protobuf-c's (test_companion
 * checks them against the §4.8 vector and against protobuf-c). */
#define META_MAX (2 + 5 * 11)
static size_t encode_metadata(uint8_t *p, const tarn_entry_header *h) {
  /* Every field present, zeros included, as Ursa writes them (§3.7). */
  uint8_t *q = p + 2;
  *q++ = 1 << 3, q += put_varint(q, (uint64_t)h->offset);
  *q++ = 2 << 3, q += put_varint(q, (uint64_t)(int64_t)h->record_count);
  *q++ = 3 << 3, q += put_varint(q, (uint64_t)h->timestamp_ms);
  *q++ = 4 << 3, q += put_varint(q, (uint64_t)(int64_t)h->entry_size);
  *q++ = 5 << 3, q += put_varint(q, (uint64_t)h->cumulative_size);
  p[0] = 2 << 3 | 2;           /* entryHeader, length-delimited */
  p[1] = (uint8_t)(q - p - 2); /* at most 55: one length byte */
  return (size_t)(q - p);
}

int tarn_companion_encode_metadata(tarn_buf *out, const tarn_entry_header *h) {
  int rc = tarn_buf_reserve(out, META_MAX);
  if (rc)
    return rc;
  out->len += encode_metadata(out->data + out->len, h);
  return 0;
}

/* The decimal digits of v at p; returns their count (at most 20). */
static size_t put_decimal(char *p, uint64_t v) {
  char t[20];
  size_t n = 0;
  do {
    t[n++] = (char)('0' + v % 10);
    v /= 10;
  } while (v);
  for (size_t i = 0; i < n; i++)
    p[i] = t[n - 1 - i];
  return n;
}

int tarn_companion_writer_open(tarn_companion_writer **wp, tarn_buf *out, size_t block_rows,
                               int flags) {
  tarn_companion_writer *w = calloc(1, sizeof *w);
  if (!w)
    return tarn__err(TARN_ENOMEM, "out of memory");
  w->out = out;
  w->block_rows = block_rows ? block_rows : TARN_COMPANION_BLOCK_ROWS;
  w->flags = flags;
  tarn_buf_init(&w->text);
  if (!(flags & TARN_COMPANION_UNCOMPRESSED)) {
    if (!(w->z = malloc(sizeof *w->z)) || !(w->z_level_buf = malloc(ISAL_DEF_LVL1_DEFAULT))) {
      tarn_companion_writer_abort(w);
      return tarn__err(TARN_ENOMEM, "companion writer: out of memory");
    }
    /* IGZIP_GZIP: a gzip wrapper, as Hadoop's GzipCodec writes. */
    isal_deflate_init(w->z);
    w->z->level = GZ_LEVEL;
    w->z->level_buf = w->z_level_buf;
    w->z->level_buf_size = ISAL_DEF_LVL1_DEFAULT;
    w->z->gzip_flag = IGZIP_GZIP;
  }
  *wp = w;
  return 0;
}

void tarn_companion_writer_abort(tarn_companion_writer *w) {
  if (!w)
    return;
  free(w->z);
  free(w->z_level_buf);
  free(w->offsets);
  tarn_buf_free(&w->text);
  free(w);
}

int tarn_companion_writer_add(tarn_companion_writer *w, const tarn_entry_header *h) {
  char why[96];
  if (check_header(h, why, sizeof why))
    return tarn__err(TARN_EINVAL, "companion writer: row %zu: %s", w->nrows, why);
  if ((uint64_t)h->offset < w->next_min)
    return tarn__err(TARN_EINVAL,
                     "companion writer: row %zu: offset %lld overlaps the previous entry, which "
                     "ends at %llu",
                     w->nrows, (long long)h->offset, (unsigned long long)w->next_min);
  if (w->nrows == w->cap) {
    size_t cap = w->cap ? 2 * w->cap : 1024;
    int64_t *o = realloc(w->offsets, cap * sizeof *o);
    if (!o)
      return tarn__err(TARN_ENOMEM, "out of memory");
    w->offsets = o, w->cap = cap;
  }
  uint8_t meta[META_MAX];
  size_t mlen = encode_metadata(meta, h);
  /* Key order metadata, then offset, as Ursa's rows come out (§3.7). The
   * row is at most ROW_MAX bytes: one reservation, then plain stores. */
  enum { ROW_MAX = 5 + 13 + (META_MAX + 2) / 3 * 4 + 12 + 20 + 2 };
  int rc = tarn_buf_reserve(&w->text, ROW_MAX + 1);
  if (rc)
    return rc;
  if (w->text.len == 0)
    (void)begin_piece(w, '['); /* within the reservation: cannot fail */
  else
    w->text.data[w->text.len++] = ',';
  static const char k1[] = "{\"metadata\":\"", k2[] = "\",\"offset\":\"";
  memcpy(w->text.data + w->text.len, k1, sizeof k1 - 1);
  w->text.len += sizeof k1 - 1;
  if ((rc = tarn__b64_encode(meta, mlen, &w->text)))
    return rc;
  char *q = (char *)w->text.data + w->text.len;
  memcpy(q, k2, sizeof k2 - 1);
  q += sizeof k2 - 1;
  q += put_decimal(q, (uint64_t)h->offset);
  *q++ = '"', *q++ = '}';
  w->text.len = (size_t)((uint8_t *)q - w->text.data);
  w->block_n++;
  w->offsets[w->nrows++] = h->offset;
  w->next_min = (uint64_t)h->offset + (uint64_t)h->record_count;
  /* Flush as soon as the block is full, so a multiple of block_rows leaves an
   * empty last block for close(), as Ursa does (§7.7). */
  if (w->block_n >= w->block_rows)
    return flush_block(w);
  return 0;
}

int tarn_companion_writer_close(tarn_companion_writer *w) {
  /* LS-060: blocks, sentinel, offset map. */
  int rc = flush_block(w);
  uint8_t sentinel[4];
  tarn__st_be32(sentinel, TARN_COMPANION_SENTINEL);
  if (!rc)
    rc = tarn_buf_append(&w->text, sentinel, 4);
  if (!rc)
    rc = begin_piece(w, '{');
  /* ,"<offset>":<row>: at most 46 bytes a row */
  if (!rc && w->nrows > (SIZE_MAX - 64) / 48)
    rc = tarn__err(TARN_ERANGE, "companion writer: %zu rows", w->nrows);
  if (!rc)
    rc = tarn_buf_reserve(&w->text, w->nrows * 48 + 2);
  for (size_t i = 0; !rc && i < w->nrows; i++) {
    char *q = (char *)w->text.data + w->text.len;
    if (i)
      *q++ = ',';
    *q++ = '"';
    q += put_decimal(q, (uint64_t)w->offsets[i]);
    *q++ = '"', *q++ = ':';
    q += put_decimal(q, i);
    w->text.len = (size_t)((uint8_t *)q - w->text.data);
  }
  if (!rc)
    rc = end_piece(w, 4, '}');
  if (!rc)
    rc = emit_text(w, 1);
  tarn_companion_writer_abort(w);
  return rc;
}

/* ---- reading ------------------------------------------------------------- */

int tarn_companion_inflate(tarn_buf *out, const void *gz, size_t len, size_t max_stream) {
  char why[96];
  size_t at;
  int rc = tarn__gunzip(out, gz, len, max_stream ? max_stream : TARN_COMPANION_MAX_STREAM, 1, &at,
                        why, sizeof why);
  return rc == -1 ? tarn__corrupt(WHAT_GZ, at, "%s", why) : rc;
}

void tarn_companion_free(tarn_companion *c) {
  free(c->rows);
  free(c->blocks);
  free(c->map);
  memset(c, 0, sizeof *c);
}

typedef struct reader {
  tarn_companion *c;
  size_t rows_cap, blocks_cap;
  tarn_buf meta;                   /* scratch for decoded metadata */
  _Alignas(16) uint8_t arena[512]; /* protobuf-c's allocations for one row */
  size_t arena_used;
} reader;

/* protobuf-c's allocations for one row's metadata come from the reader's
 * scratch arena (reset per row), not malloc: a row's message is a few dozen
 * bytes, and malloc/free per row were a quarter of the read's time. A request
 * the arena cannot hold (a row with large unknown fields) goes to malloc. */
static void *arena_alloc(void *data, size_t size) {
  reader *r = data;
  size = (size + 15) & ~(size_t)15;
  if (size <= sizeof r->arena - r->arena_used) {
    void *p = r->arena + r->arena_used;
    r->arena_used += size;
    return p;
  }
  return malloc(size);
}

static void arena_free(void *data, void *p) {
  reader *r = data;
  if ((uint8_t *)p < r->arena || (uint8_t *)p >= r->arena + sizeof r->arena)
    free(p);
}

/* Decodes one row from its two string values (the JSON text's, unescaped). */
static int decode_fields(reader *r, const char *ms, size_t mlen, const char *os, size_t olen,
                         size_t pos, size_t b, size_t i) {
  tarn_companion *c = r->c;
  size_t row = c->nrows;
  int64_t off;
  if (parse_decimal(os, olen, &off))
    return tarn__corrupt(WHAT, pos,
                         "block %zu row %zu (row %zu): offset \"%.*s\" is not a canonical decimal",
                         b, i, row, (int)(olen < 40 ? olen : 40), os);
  tarn_buf_reset(&r->meta);
  int brc = tarn__b64_decode(ms, mlen, &r->meta, "metadata");
  if (brc == TARN_ENOMEM)
    return brc;
  if (brc)
    return tarn__corrupt(WHAT, pos,
                         "block %zu row %zu (row %zu): metadata is not padded standard Base64", b,
                         i, row);
  /* Unknown fields (the reserved 1 and 3) and schemaVersion are skipped. */
  ProtobufCAllocator pa = {arena_alloc, arena_free, r};
  r->arena_used = 0;
  pb_meta *m =
      materialization__proto__lakehouse_entry_metadata__unpack(&pa, r->meta.len, r->meta.data);
  if (!m)
    return tarn__corrupt(WHAT, pos,
                         "block %zu row %zu (row %zu): metadata is not a LakehouseEntryMetadata", b,
                         i, row);
  if (!m->entryheader) {
    materialization__proto__lakehouse_entry_metadata__free_unpacked(m, &pa);
    return tarn__corrupt(WHAT, pos, "block %zu row %zu (row %zu): metadata has no entryHeader", b,
                         i, row);
  }
  const pb_header *h = m->entryheader;
  tarn_entry_header e = {h->offset, h->numberofmessages, h->writtentimestamp, h->entrysize,
                         h->cumulativesize};
  materialization__proto__lakehouse_entry_metadata__free_unpacked(m, &pa);
  char why[96];
  if (e.offset != off)
    return tarn__corrupt(WHAT, pos,
                         "block %zu row %zu (row %zu): entryHeader offset %lld differs from the "
                         "row's offset %lld",
                         b, i, row, (long long)e.offset, (long long)off);
  if (check_header(&e, why, sizeof why))
    return tarn__corrupt(WHAT, pos, "block %zu row %zu (row %zu): entryHeader %s", b, i, row, why);
  if (row > 0) {
    const tarn_entry_header *p = &c->rows[row - 1];
    if ((uint64_t)off < (uint64_t)p->offset + (uint64_t)p->record_count)
      return tarn__corrupt(WHAT, pos,
                           "block %zu row %zu (row %zu): offset %lld is not past the previous "
                           "entry [%lld, %lld)",
                           b, i, row, (long long)off, (long long)p->offset,
                           (long long)p->offset + p->record_count);
  }
  if (c->nrows == r->rows_cap) {
    size_t cap = r->rows_cap ? 2 * r->rows_cap : 64;
    tarn_entry_header *nr = realloc(c->rows, cap * sizeof *nr);
    if (!nr)
      return tarn__err(TARN_ENOMEM, "out of memory");
    c->rows = nr, r->rows_cap = cap;
  }
  c->rows[c->nrows++] = e;
  return 0;
}

/* Decodes one row object of the block whose JSON starts at pos. */
static int decode_row(reader *r, json_t *obj, size_t pos, size_t b, size_t i) {
  size_t row = r->c->nrows;
  if (!json_is_object(obj))
    return tarn__corrupt(WHAT, pos, "block %zu row %zu (row %zu): not a JSON object", b, i, row);
  json_t *jm = json_object_get(obj, "metadata"), *jo = json_object_get(obj, "offset");
  if (json_object_size(obj) != 2 || !jm || !jo)
    return tarn__corrupt(WHAT, pos,
                         "block %zu row %zu (row %zu): keys must be exactly metadata and offset", b,
                         i, row);
  if (!json_is_string(jm) || !json_is_string(jo))
    return tarn__corrupt(
        WHAT, pos, "block %zu row %zu (row %zu): metadata and offset must be strings", b, i, row);
  return decode_fields(r, json_string_value(jm), json_string_length(jm), json_string_value(jo),
                       json_string_length(jo), pos, b, i);
}

static json_t *load_json(const uint8_t *p, size_t n, size_t pos, const char *what, int *rc) {
  json_error_t err;
  json_t *v = json_loadb((const char *)p, n, JSON_REJECT_DUPLICATES, &err);
  if (!v)
    *rc = tarn__corrupt(WHAT, pos + (err.position > 0 ? (size_t)err.position : 0), "%s: JSON: %s",
                        what, err.text);
  return v;
}

static int decode_block_json(reader *r, const uint8_t *p, size_t n, size_t pos);
static int decode_map_json(reader *r, const uint8_t *p, size_t n, size_t pos);

/* ---- the canonical text ---------------------------------------------------
 * tarn's writer and Ursa's (Jackson's compact output) give every block as
 * [{"metadata":"<Base64>","offset":"<decimal>"},...] and the offset map as
 * {"<decimal>":<row>,...}, with no white space and nothing to escape. The
 * reader first matches that exact text, byte by byte, and decodes the values
 * in place; anything else — other white space, key order, escapes, any fault
 * at all — makes it start the piece again with jansson, which takes every
 * JSON text and names the fault. So the fast path decides nothing by itself:
 * what it accepts, jansson accepts with the same values (test_companion
 * checks both paths on every vector and on texts that differ only in form).
 * jansson's DOM was 80% of a read: 25 MB/s of stream against >200 now. */

static int lit(const uint8_t *p, size_t n, size_t *at, const char *s, size_t k) {
  if (n - *at < k || memcmp(p + *at, s, k))
    return -1;
  *at += k;
  return 0;
}

/* A run of bytes up to the closing quote that needs no unescaping (no '\\'
 * and no control character); *at ends past the quote. */
static int plain_string(const uint8_t *p, size_t n, size_t *at, const char **s, size_t *len) {
  size_t i = *at;
  while (i < n && p[i] != '"' && p[i] != '\\' && p[i] >= 0x20)
    i++;
  if (i >= n || p[i] != '"')
    return -1;
  *s = (const char *)p + *at, *len = i - *at;
  *at = i + 1;
  return 0;
}

/* Returns the rows of a canonical block (appended to c->rows), or -1: not
 * canonical or not valid, for jansson to take. */
static int scan_block(reader *r, const uint8_t *p, size_t n, size_t pos, size_t b, size_t *rows) {
  static const char k1[] = "{\"metadata\":\"", k2[] = "\",\"offset\":\"";
  size_t at = 0, i = 0;
  if (lit(p, n, &at, "[", 1))
    return -1;
  if (!lit(p, n, &at, "]", 1))
    return at == n ? (*rows = 0, 0) : -1;
  for (;; i++) {
    const char *ms, *os;
    size_t ml, ol;
    if (lit(p, n, &at, k1, sizeof k1 - 1) || plain_string(p, n, &at, &ms, &ml) ||
        lit(p, n, &at, k2 + 1, sizeof k2 - 2) || plain_string(p, n, &at, &os, &ol) ||
        lit(p, n, &at, "}", 1))
      return -1;
    int rc = decode_fields(r, ms, ml, os, ol, pos, b, i);
    if (rc)
      return rc == TARN_ENOMEM ? rc : -1;
    if (!lit(p, n, &at, "]", 1))
      break;
    if (lit(p, n, &at, ",", 1))
      return -1;
  }
  if (at != n)
    return -1;
  *rows = i + 1;
  return 0;
}

static int decode_block(reader *r, const uint8_t *p, size_t n, size_t pos) {
  tarn_companion *c = r->c;
  size_t b = c->nblocks;
  if (c->nblocks == r->blocks_cap) {
    size_t cap = r->blocks_cap ? 2 * r->blocks_cap : 8;
    tarn_companion_block *nb = realloc(c->blocks, cap * sizeof *nb);
    if (!nb)
      return tarn__err(TARN_ENOMEM, "out of memory");
    c->blocks = nb, r->blocks_cap = cap;
  }
  size_t first = c->nrows, rows;
  int rc = scan_block(r, p, n, pos, b, &rows);
  if (rc == TARN_ENOMEM)
    return rc;
  if (!rc) {
    c->blocks[c->nblocks++] = (tarn_companion_block){pos - 4, n, first, rows};
    return 0;
  }
  c->nrows = first; /* jansson decodes the block again, from its start */
  return decode_block_json(r, p, n, pos);
}

static int decode_block_json(reader *r, const uint8_t *p, size_t n, size_t pos) {
  tarn_companion *c = r->c;
  size_t b = c->nblocks;
  char what[32];
  snprintf(what, sizeof what, "block %zu", b);
  int rc = 0;
  json_t *arr = load_json(p, n, pos, what, &rc);
  if (!arr)
    return rc;
  if (!json_is_array(arr)) {
    json_decref(arr);
    return tarn__corrupt(WHAT, pos, "block %zu: not a JSON array", b);
  }
  tarn_companion_block *blk = &c->blocks[c->nblocks++];
  blk->pos = pos - 4, blk->len = n, blk->first_row = c->nrows, blk->rows = json_array_size(arr);
  for (size_t i = 0; !rc && i < blk->rows; i++)
    rc = decode_row(r, json_array_get(arr, i), pos, b, i);
  json_decref(arr);
  return rc;
}

static int map_cmp(const void *a, const void *b) {
  int64_t x = ((const tarn_companion_map_entry *)a)->offset;
  int64_t y = ((const tarn_companion_map_entry *)b)->offset;
  return (x > y) - (x < y);
}

/* A canonical offset map ({"<decimal>":<row>,...}, see scan_block): fills
 * c->map, or -1 for jansson to take it (c->map then freed). A key names a
 * row of its own offset, and rows' offsets rise, so a valid map has at most
 * nrows entries; a repeated key (jansson refuses it) sends it to jansson. */
static int scan_map(reader *r, const uint8_t *p, size_t n) {
  tarn_companion *c = r->c;
  size_t at = 0, cap = n / 6 + 1 < c->nrows ? n / 6 + 1 : c->nrows;
  if (lit(p, n, &at, "{", 1))
    return -1;
  if (!lit(p, n, &at, "}", 1))
    return at == n ? 0 : -1;
  if (!cap)
    return -1;
  if (!(c->map = malloc(cap * sizeof *c->map)))
    return tarn__err(TARN_ENOMEM, "out of memory");
  for (;;) {
    const char *key;
    size_t klen, d = at;
    int64_t off, row;
    if (c->nmap == cap || lit(p, n, &at, "\"", 1) || plain_string(p, n, &at, &key, &klen) ||
        parse_decimal(key, klen, &off) || lit(p, n, &at, ":", 1))
      break;
    for (d = at; at < n && p[at] >= '0' && p[at] <= '9'; at++)
      ;
    if (parse_decimal((const char *)p + d, at - d, &row) || (uint64_t)row >= c->nrows ||
        c->rows[row].offset != off)
      break;
    c->map[c->nmap++] = (tarn_companion_map_entry){off, (size_t)row};
    if (!lit(p, n, &at, "}", 1)) {
      if (at != n)
        break;
      if (c->nmap > 1)
        qsort(c->map, c->nmap, sizeof *c->map, map_cmp); /* numeric order, LS-065 */
      for (size_t i = 1; i < c->nmap; i++)
        if (c->map[i].offset == c->map[i - 1].offset)
          goto slow;
      return 0;
    }
    if (lit(p, n, &at, ",", 1))
      break;
  }
slow:
  free(c->map);
  c->map = NULL, c->nmap = 0;
  return -1;
}

static int decode_map(reader *r, const uint8_t *p, size_t n, size_t pos) {
  int rc = scan_map(r, p, n);
  if (rc != -1)
    return rc;
  return decode_map_json(r, p, n, pos);
}

static int decode_map_json(reader *r, const uint8_t *p, size_t n, size_t pos) {
  tarn_companion *c = r->c;
  int rc = 0;
  json_t *obj = load_json(p, n, pos, "offset map", &rc);
  if (!obj)
    return rc;
  if (!json_is_object(obj)) {
    json_decref(obj);
    return tarn__corrupt(WHAT, pos, "offset map: not a JSON object");
  }
  size_t k = json_object_size(obj);
  if (k && !(c->map = malloc(k * sizeof *c->map))) {
    json_decref(obj);
    return tarn__err(TARN_ENOMEM, "out of memory");
  }
  const char *key;
  size_t klen;
  json_t *v;
  json_object_keylen_foreach(obj, key, klen, v) {
    int64_t off;
    if (parse_decimal(key, klen, &off)) {
      rc = tarn__corrupt(WHAT, pos, "offset map: key \"%.40s\" is not a canonical decimal", key);
      break;
    }
    if (!json_is_integer(v) || json_integer_value(v) < 0 ||
        (uint64_t)json_integer_value(v) >= c->nrows) {
      rc = tarn__corrupt(WHAT, pos, "offset map: key \"%s\": value is not a row number below %zu",
                         key, c->nrows);
      break;
    }
    size_t row = (size_t)json_integer_value(v);
    /* The keys are the rows' offsets: a key naming a row of another offset
     * would send the floor lookup to the wrong entry. */
    if (c->rows[row].offset != off) {
      rc = tarn__corrupt(WHAT, pos, "offset map: key \"%s\" names row %zu, whose offset is %lld",
                         key, row, (long long)c->rows[row].offset);
      break;
    }
    c->map[c->nmap].offset = off;
    c->map[c->nmap++].row = row;
  }
  json_decref(obj);
  if (!rc && c->nmap > 1)
    qsort(c->map, c->nmap, sizeof *c->map, map_cmp); /* numeric order, LS-065 */
  return rc;
}

int tarn_companion_decode_stream(tarn_companion *c, const void *stream, size_t len) {
  memset(c, 0, sizeof *c);
  reader r = {.c = c};
  tarn__rd rd;
  tarn__rd_init(&rd, stream, len, WHAT);
  int rc = 0;
  for (;;) {
    uint32_t n;
    size_t at = rd.off;
    if ((rc = tarn__rd_be32(&rd, &n, "block length or sentinel")))
      goto out;
    if (n == TARN_COMPANION_SENTINEL)
      break;
    if (n > INT32_MAX) {
      rc = tarn__corrupt(WHAT, at, "block length %u is negative as an int32", n);
      goto out;
    }
    /* LS-061, LS-062: only the last block may be empty. */
    if (c->nblocks && c->blocks[c->nblocks - 1].rows == 0) {
      rc = tarn__corrupt(WHAT, at, "block %zu is empty but is not the last block", c->nblocks - 1);
      goto out;
    }
    const uint8_t *p;
    if ((rc = tarn__rd_bytes(&rd, n, &p, "block")))
      goto out;
    if ((rc = decode_block(&r, p, n, at + 4)))
      goto out;
  }
  uint32_t n;
  size_t at = rd.off;
  const uint8_t *p;
  if ((rc = tarn__rd_be32(&rd, &n, "offset map length")))
    goto out;
  if (n > INT32_MAX) {
    rc = tarn__corrupt(WHAT, at, "offset map length %u is negative as an int32", n);
    goto out;
  }
  if ((rc = tarn__rd_bytes(&rd, n, &p, "offset map")))
    goto out;
  if ((rc = decode_map(&r, p, n, at + 4)))
    goto out;
  if (tarn__rd_left(&rd)) {
    rc = tarn__corrupt(WHAT, rd.off, "%zu trailing bytes after the offset map", tarn__rd_left(&rd));
    goto out;
  }
  c->stream_len = len;
out:
  tarn_buf_free(&r.meta);
  if (rc)
    tarn_companion_free(c);
  return rc;
}

int tarn_companion_decode(tarn_companion *c, const void *gz, size_t len, size_t max_stream) {
  tarn_buf s = TARN_BUF_INIT;
  memset(c, 0, sizeof *c);
  int rc = tarn_companion_inflate(&s, gz, len, max_stream);
  if (!rc)
    rc = tarn_companion_decode_stream(c, s.data ? s.data : (const uint8_t *)"", s.len);
  tarn_buf_free(&s);
  return rc;
}

int tarn_companion_floor(const tarn_companion *c, int64_t o, size_t *row) {
  /* LS-065: the exact key, else the greatest start offset below o, comparing
   * the keys as numbers (the map is sorted numerically). */
  size_t lo = 0, hi = c->nmap; /* first entry with offset > o */
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (c->map[mid].offset <= o)
      lo = mid + 1;
    else
      hi = mid;
  }
  if (lo == 0)
    return tarn__err(TARN_ENOTFOUND, "companion file: offset %lld lies below its first entry",
                     (long long)o);
  *row = c->map[lo - 1].row;
  return 0;
}
