/* The Parquet reader of compacted files: opens a file from its footer by
 * byte-range reads and reads the payload column one page at a time.
 *
 * Memory is bounded by the footer, one dictionary page and one data page
 * (compressed and decompressed), each at most max_page_size; every size the
 * file declares is checked against the file's bytes before it is used. */
#include <stdlib.h>
#include <string.h>

#include "format/parquet_internal.h"
#include "util/bytes.h"
#include "util/error.h"

#define DEFAULT_MAX_PAGE ((size_t)256 << 20)
#define DEFAULT_MAX_FOOTER ((size_t)64 << 20)
#define MAX_PAGE_HEADER ((size_t)16 << 20)
#define FILE_ "parquet file"
#define PAGE "parquet page"

/* An RLE/bit-packed hybrid run decoder (definition levels, dictionary indices). */
typedef struct hybrid {
  const uint8_t *p;
  size_t len, off;
  int bw;
  uint32_t left; /* values left in the current run */
  int rle;
  uint32_t value; /* of an RLE run */
  size_t bitpos;  /* of the next value of a bit-packed run */
  uint64_t page;  /* the page's file offset, for messages */
  const char *what;
} hybrid;

typedef struct dict_entry {
  const uint8_t *p;
  uint32_t n;
} dict_entry;

struct tarn_parquet_reader {
  tarn_parquet_read_at_fn read_at;
  void *ctx;
  uint64_t size;
  uint64_t data_end; /* where the footer starts */
  size_t max_page;
  tarn_parquet_meta meta;
  uint64_t *group_start; /* first row of each row group */

  /* position */
  uint64_t row;
  size_t group;
  int group_open;
  uint64_t group_rows_left; /* rows of the open group in pages not yet loaded */
  uint64_t chunk_pos, chunk_start, chunk_end;
  int codec;

  tarn_buf dict_buf;
  dict_entry *dict;
  size_t n_dict;
  int have_dict;

  tarn_buf hdr, raw, page;
  tarn__pq_codec_ctx cx; /* kept from page to page */
  uint64_t page_off;
  uint32_t page_left;
  int has_levels;
  hybrid levels;
  enum { V_PLAIN, V_DICT, V_DELTA } mode;
  hybrid idx;
  tarn__rd plain;  /* PLAIN values; the bytes of DELTA values */
  uint32_t *dlens; /* DELTA value lengths */
  size_t n_dlens, di;
  tarn_buf dbuf; /* DELTA_BYTE_ARRAY values, rebuilt */
};

static int read_at(tarn_parquet_reader *r, uint64_t off, void *buf, size_t n) {
  if (off > r->size || n > r->size - off)
    return tarn__corrupt(FILE_, (size_t)off, "read of %zu bytes runs past the end (%llu bytes)", n,
                         (unsigned long long)r->size);
  if (n == 0)
    return 0;
  int rc = r->read_at(r->ctx, off, buf, n);
  if (rc)
    return tarn__errctx(rc < 0 ? rc : TARN_EIO, FILE_ ": reading %zu bytes at byte %llu", n,
                        (unsigned long long)off);
  return 0;
}

/* ---- RLE / bit-packed hybrid ------------------------------------------ */

static void hybrid_init(hybrid *h, const uint8_t *p, size_t len, int bw, uint64_t page,
                        const char *what) {
  memset(h, 0, sizeof *h);
  h->p = p, h->len = len, h->bw = bw, h->page = page, h->what = what;
}

static int hybrid_next(hybrid *h, uint32_t *v) {
  while (h->left == 0) {
    if (h->off >= h->len)
      return tarn__corrupt(PAGE, (size_t)h->page,
                           "%s end after %zu bytes, before the page's values", h->what, h->len);
    tarn__rd rd;
    tarn__rd_init(&rd, h->p, h->len, PAGE);
    rd.off = h->off;
    uint64_t hdr = 0;
    int rc = tarn__rd_uvarint(&rd, &hdr, 5, UINT32_MAX, h->what);
    if (rc)
      return tarn__corrupt(PAGE, (size_t)h->page, "%s: bad run header at byte %zu", h->what,
                           h->off);
    h->off = rd.off;
    if (hdr & 1) {
      uint64_t groups = hdr >> 1, bytes = groups * (uint64_t)h->bw;
      size_t avail = bytes < h->len - h->off ? (size_t)bytes : h->len - h->off;
      uint64_t n = h->bw ? (uint64_t)avail * 8 / (uint64_t)h->bw : groups * 8;
      h->left = n > UINT32_MAX ? UINT32_MAX : (uint32_t)n;
      h->rle = 0;
      h->bitpos = h->off * 8;
      h->off += avail;
    } else {
      size_t nb = (size_t)(h->bw + 7) / 8;
      if (nb > h->len - h->off)
        return tarn__corrupt(PAGE, (size_t)h->page, "%s: RLE run value truncated", h->what);
      uint32_t x = 0;
      for (size_t i = 0; i < nb; i++)
        x |= (uint32_t)h->p[h->off + i] << (8 * i);
      h->off += nb;
      h->value = x;
      h->left = (uint32_t)(hdr >> 1);
      h->rle = 1;
    }
  }
  h->left--;
  if (h->rle) {
    *v = h->value;
    return 0;
  }
  size_t byte = h->bitpos >> 3;
  unsigned shift = (unsigned)(h->bitpos & 7), nbytes = (shift + (unsigned)h->bw + 7) / 8;
  uint64_t acc = 0;
  for (unsigned i = 0; i < nbytes; i++)
    acc |= (uint64_t)h->p[byte + i] << (8 * i);
  *v = (uint32_t)((acc >> shift) & (((uint64_t)1 << h->bw) - 1));
  h->bitpos += (size_t)h->bw;
  return 0;
}

/* A chunk starts at its dictionary page, if any, else at its first data
 * page; some writers put 0 in dictionary_page_offset to mean none. */
static int64_t chunk_first_page(const tarn_parquet_chunk *c) {
  return c->dictionary_page_offset > 0 && c->dictionary_page_offset < c->data_page_offset
             ? c->dictionary_page_offset
             : c->data_page_offset;
}

/* ---- open ------------------------------------------------------------- */

const tarn_parquet_meta *tarn_parquet_get_meta(const tarn_parquet_reader *r) { return &r->meta; }

const char *tarn_parquet_kv_get(const tarn_parquet_reader *r, const char *key) {
  for (size_t i = 0; i < r->meta.n_kv; i++)
    if (strcmp(r->meta.kv[i].key, key) == 0)
      return r->meta.kv[i].value;
  return NULL;
}

/* LS-059: a file of a binding this reader does not implement is refused. */
static int check_serde(tarn_parquet_reader *r, const tarn_parquet_reader_opts *o) {
  if (!o || o->n_serde_types == 0)
    return 0;
  const char *v = tarn_parquet_kv_get(r, "entrySerDeType");
  if (!v)
    return tarn__err(
        TARN_EUNSUPPORTED,
        "parquet footer: no entrySerDeType key; not a compacted file of a known binding");
  for (size_t i = 0; i < o->n_serde_types; i++)
    if (strcmp(v, o->serde_types[i]) == 0)
      return 0;
  return tarn__err(TARN_EUNSUPPORTED,
                   "parquet footer: entrySerDeType \"%s\" is not a binding this reader implements "
                   "(expected \"%s\"%s)",
                   v, o->serde_types[0], o->n_serde_types > 1 ? " or another known one" : "");
}

static int check_chunks(tarn_parquet_reader *r) {
  uint64_t row = 0;
  for (size_t g = 0; g < r->meta.n_row_groups; g++) {
    const tarn_parquet_row_group *rg = &r->meta.row_groups[g];
    const tarn_parquet_chunk *c = &rg->chunk;
    r->group_start[g] = row;
    row += (uint64_t)rg->num_rows;
    if (c->type != TARN_PARQUET_BYTE_ARRAY)
      return tarn__corrupt("parquet footer", 0, "row group %zu: payload chunk has type %d", g,
                           c->type);
    if (rg->num_rows == 0)
      continue;
    int64_t start = chunk_first_page(c);
    if (start < 4 || c->total_compressed_size <= 0 || (uint64_t)start > r->data_end ||
        (uint64_t)c->total_compressed_size > r->data_end - (uint64_t)start)
      return tarn__corrupt("parquet footer", (size_t)r->data_end,
                           "row group %zu: column chunk at byte %lld of %lld bytes lies outside "
                           "the file's data (bytes 4 to %llu)",
                           g, (long long)start, (long long)c->total_compressed_size,
                           (unsigned long long)r->data_end);
  }
  return 0;
}

int tarn_parquet_open(tarn_parquet_reader **out, tarn_parquet_read_at_fn fn, void *ctx,
                      uint64_t file_size, const tarn_parquet_reader_opts *o) {
  *out = NULL;
  tarn_parquet_reader *r = calloc(1, sizeof *r);
  if (!r)
    return tarn__err(TARN_ENOMEM, FILE_ ": out of memory");
  r->read_at = fn, r->ctx = ctx, r->size = file_size;
  r->max_page = o && o->max_page_size ? o->max_page_size : DEFAULT_MAX_PAGE;
  size_t max_footer = o && o->max_footer_size ? o->max_footer_size : DEFAULT_MAX_FOOTER;
  uint8_t tail[8], head[4];
  uint8_t *foot = NULL;
  int rc = 0;
  if (file_size < 12) {
    rc = tarn__corrupt(FILE_, 0, "%llu bytes is too short for a Parquet file (at least 12)",
                       (unsigned long long)file_size);
    goto fail;
  }
  if ((rc = read_at(r, file_size - 8, tail, 8)) || (rc = read_at(r, 0, head, 4)))
    goto fail;
  if (memcmp(tail + 4, "PAR1", 4) != 0) {
    rc = tarn__corrupt(FILE_, (size_t)(file_size - 4), "no PAR1 magic at the end%s",
                       memcmp(tail + 4, "PARE", 4) == 0 ? " (an encrypted file)" : "");
    goto fail;
  }
  if (memcmp(head, "PAR1", 4) != 0) {
    rc = tarn__corrupt(FILE_, 0, "no PAR1 magic at the start");
    goto fail;
  }
  uint32_t flen = tarn__ld_le32(tail);
  if (flen > file_size - 12 || flen == 0) {
    rc = tarn__corrupt(FILE_, (size_t)(file_size - 8),
                       "footer length %u does not fit in a file of %llu bytes", flen,
                       (unsigned long long)file_size);
    goto fail;
  }
  if (flen > max_footer) {
    rc = tarn__corrupt(FILE_, (size_t)(file_size - 8), "footer length %u exceeds the limit %zu",
                       flen, max_footer);
    goto fail;
  }
  r->data_end = file_size - 8 - flen;
  if (!(foot = malloc(flen))) {
    rc = tarn__err(TARN_ENOMEM, FILE_ ": out of memory for a %u-byte footer", flen);
    goto fail;
  }
  if ((rc = read_at(r, r->data_end, foot, flen)) ||
      (rc = tarn__pq_meta_decode(foot, flen, r->data_end, &r->meta)))
    goto fail;
  if (!(r->group_start = calloc(r->meta.n_row_groups + 1, sizeof *r->group_start))) {
    rc = tarn__err(TARN_ENOMEM, FILE_ ": out of memory");
    goto fail;
  }
  if ((rc = check_chunks(r)) || (rc = check_serde(r, o)))
    goto fail;
  free(foot);
  *out = r;
  return 0;
fail:
  free(foot);
  tarn_parquet_close(r);
  return rc;
}

void tarn_parquet_close(tarn_parquet_reader *r) {
  if (!r)
    return;
  tarn__pq_meta_free(&r->meta);
  free(r->group_start);
  free(r->dict);
  tarn_buf_free(&r->dict_buf);
  tarn_buf_free(&r->hdr);
  tarn_buf_free(&r->raw);
  tarn_buf_free(&r->page);
  tarn__pq_codec_ctx_free(&r->cx);
  tarn_buf_free(&r->dbuf);
  free(r->dlens);
  free(r);
}

/* ---- pages ------------------------------------------------------------ */

/* Reads the page header at pos, no further than end; checks the page lies
 * before end and its sizes are within the limit. */
static int read_page_header(tarn_parquet_reader *r, uint64_t pos, uint64_t end,
                            tarn__pq_page_header *h, size_t *hlen) {
  uint64_t avail = end - pos;
  size_t cap = avail < MAX_PAGE_HEADER ? (size_t)avail : MAX_PAGE_HEADER;
  size_t win = cap < 256 ? cap : 256;
  int rc;
  for (;;) {
    tarn_buf_reset(&r->hdr);
    if ((rc = tarn_buf_reserve(&r->hdr, win)) || (rc = read_at(r, pos, r->hdr.data, win)))
      return rc;
    rc = tarn__pq_page_header_decode(r->hdr.data, win, pos, h, hlen);
    if (rc == 0 || win == cap)
      break;
    /* A header larger than the window (long statistics): read more. */
    win = win > cap / 16 ? cap : win * 16;
  }
  if (rc)
    return rc;
  uint64_t body = pos + *hlen;
  if ((uint64_t)h->compressed_size > end - body)
    return tarn__corrupt(PAGE, (size_t)pos,
                         "compressed_page_size %d runs past the column chunk's end at byte %llu",
                         h->compressed_size, (unsigned long long)end);
  if ((size_t)h->compressed_size > r->max_page || (size_t)h->uncompressed_size > r->max_page)
    return tarn__corrupt(PAGE, (size_t)pos,
                         "page of %d bytes (%d compressed) exceeds the limit %zu",
                         h->uncompressed_size, h->compressed_size, r->max_page);
  return 0;
}

/* Reads the page body's compressed bytes into r->raw. */
static int read_body(tarn_parquet_reader *r, uint64_t pos, const tarn__pq_page_header *h) {
  tarn_buf_reset(&r->raw);
  int rc = tarn_buf_reserve(&r->raw, (size_t)h->compressed_size + 1);
  if (rc == 0 && (rc = read_at(r, pos, r->raw.data, (size_t)h->compressed_size)) == 0)
    r->raw.len = (size_t)h->compressed_size;
  return rc;
}

/* Decompresses n bytes at src into out, which gets exactly dst_len bytes. */
static int inflate_into(tarn_parquet_reader *r, const uint8_t *src, size_t n, size_t dst_len,
                        tarn_buf *out, uint64_t page) {
  tarn_buf_reset(out);
  int rc = tarn_buf_reserve(out, dst_len + 1);
  if (rc == 0 &&
      (rc = tarn__pq_decompress_ctx(&r->cx, r->codec, src, n, out->data, dst_len, page)) == 0)
    out->len = dst_len;
  return rc;
}

static int load_dictionary(tarn_parquet_reader *r, uint64_t pos, size_t hlen,
                           const tarn__pq_page_header *h) {
  if (h->encoding != TARN_PARQUET_PLAIN && h->encoding != TARN_PARQUET_PLAIN_DICTIONARY)
    return tarn__err(TARN_EUNSUPPORTED, PAGE ": byte %llu: dictionary encoding %d is not supported",
                     (unsigned long long)pos, h->encoding);
  int rc = read_body(r, pos + hlen, h);
  if (rc || (rc = inflate_into(r, r->raw.data, r->raw.len, (size_t)h->uncompressed_size,
                               &r->dict_buf, pos)))
    return rc;
  /* Each PLAIN value takes at least its 4-byte length. */
  if ((size_t)h->num_values > r->dict_buf.len / 4)
    return tarn__corrupt(PAGE, (size_t)pos, "dictionary of %d values in %zu bytes", h->num_values,
                         r->dict_buf.len);
  free(r->dict);
  r->have_dict = 0;
  if (!(r->dict = calloc((size_t)h->num_values + 1, sizeof *r->dict)))
    return tarn__err(TARN_ENOMEM, PAGE ": out of memory");
  tarn__rd rd;
  tarn__rd_init(&rd, r->dict_buf.data, r->dict_buf.len, PAGE);
  for (int32_t i = 0; i < h->num_values; i++) {
    uint32_t n;
    const uint8_t *p, *lp;
    if ((rc = tarn__rd_bytes(&rd, 4, &lp, "dictionary value length")))
      return tarn__corrupt(PAGE, (size_t)pos, "dictionary value %d: length truncated", i);
    n = tarn__ld_le32(lp);
    if ((rc = tarn__rd_bytes(&rd, n, &p, "dictionary value")))
      return tarn__corrupt(PAGE, (size_t)pos, "dictionary value %d of %u bytes runs past the page",
                           i, n);
    r->dict[i] = (dict_entry){p, n};
  }
  r->n_dict = (size_t)h->num_values;
  r->have_dict = 1;
  return 0;
}

enum { DELTA_LENGTH_BYTE_ARRAY = 6, DELTA_BYTE_ARRAY = 7 };

/* DELTA_LENGTH_BYTE_ARRAY: the lengths, then the bytes of every value.
 * DELTA_BYTE_ARRAY: prefix lengths, then the suffixes as DELTA_LENGTH_BYTE_ARRAY;
 * each value is a prefix of the one before it plus its suffix, rebuilt here
 * into at most max_page bytes. */
static int setup_delta(tarn_parquet_reader *r, const uint8_t *vals, size_t vlen, uint64_t pos,
                       const tarn__pq_page_header *h) {
  size_t max = (size_t)h->num_values;
  if (max > r->max_page / sizeof(uint32_t))
    return tarn__corrupt(PAGE, (size_t)pos, "%zu DELTA values exceed the page limit", max);
  uint32_t *pre = NULL;
  size_t n_pre = 0, used = 0;
  int rc;
  free(r->dlens);
  r->dlens = NULL;
  if (h->encoding == DELTA_BYTE_ARRAY) {
    if ((rc = tarn__pq_delta_lengths(vals, vlen, pos, max, &pre, &n_pre, &used)))
      return rc;
    vals += used, vlen -= used;
  }
  rc = tarn__pq_delta_lengths(vals, vlen, pos, max, &r->dlens, &r->n_dlens, &used);
  if (rc) {
    free(pre);
    return rc;
  }
  vals += used, vlen -= used;
  r->di = 0;
  if (h->encoding == DELTA_LENGTH_BYTE_ARRAY) {
    tarn__rd_init(&r->plain, vals, vlen, PAGE);
    return 0;
  }
  if (n_pre != r->n_dlens) {
    free(pre);
    return tarn__corrupt(PAGE, (size_t)pos, "DELTA_BYTE_ARRAY with %zu prefixes and %zu suffixes",
                         n_pre, r->n_dlens);
  }
  uint64_t total = 0, suffixes = 0;
  for (size_t i = 0; i < n_pre; i++)
    total += (uint64_t)pre[i] + r->dlens[i], suffixes += r->dlens[i];
  if (total > r->max_page || suffixes > vlen) {
    free(pre);
    return tarn__corrupt(PAGE, (size_t)pos,
                         "DELTA_BYTE_ARRAY values of %llu bytes (suffixes %llu "
                         "in %zu bytes) exceed the page",
                         (unsigned long long)total, (unsigned long long)suffixes, vlen);
  }
  tarn_buf_reset(&r->dbuf);
  if ((rc = tarn_buf_reserve(&r->dbuf, (size_t)total + 1))) {
    free(pre);
    return rc;
  }
  size_t prev = 0, prev_len = 0, s = 0;
  for (size_t i = 0; i < n_pre; i++) {
    if (pre[i] > prev_len) {
      uint32_t bad = pre[i]; /* read before pre is freed */
      free(pre);
      return tarn__corrupt(PAGE, (size_t)pos,
                           "DELTA_BYTE_ARRAY value %zu: prefix %u of a %zu-byte "
                           "value",
                           i, bad, prev_len);
    }
    size_t at = r->dbuf.len;
    memmove(r->dbuf.data + at, r->dbuf.data + prev, pre[i]);
    memcpy(r->dbuf.data + at + pre[i], vals + s, r->dlens[i]);
    s += r->dlens[i];
    r->dbuf.len += pre[i] + r->dlens[i];
    prev = at, prev_len = pre[i] + r->dlens[i];
    r->dlens[i] = (uint32_t)prev_len;
  }
  free(pre);
  tarn__rd_init(&r->plain, r->dbuf.data, r->dbuf.len, PAGE);
  return 0;
}

/* Sets up the page's definition levels and values from its body. */
static int setup_data_page(tarn_parquet_reader *r, uint64_t pos, size_t hlen,
                           const tarn__pq_page_header *h) {
  int rc = read_body(r, pos + hlen, h);
  if (rc)
    return rc;
  const uint8_t *vals;
  size_t vlen;
  int max_def = r->meta.payload_max_def;
  r->has_levels = max_def > 0;
  if (h->type == TARN_PARQUET_DATA_PAGE) {
    const uint8_t *b = r->raw.data;
    size_t blen = r->raw.len;
    if (r->codec != TARN_PARQUET_UNCOMPRESSED || blen != (size_t)h->uncompressed_size) {
      if ((rc = inflate_into(r, r->raw.data, r->raw.len, (size_t)h->uncompressed_size, &r->page,
                             pos)))
        return rc;
      b = r->page.data, blen = r->page.len;
    }
    vals = b, vlen = blen;
    if (max_def) {
      if (h->def_encoding != TARN_PARQUET_RLE)
        return tarn__err(TARN_EUNSUPPORTED,
                         PAGE ": byte %llu: definition level encoding %d is not supported",
                         (unsigned long long)pos, h->def_encoding);
      uint32_t n = blen >= 4 ? tarn__ld_le32(b) : UINT32_MAX;
      if (blen < 4 || n > blen - 4)
        return tarn__corrupt(PAGE, (size_t)pos, "definition levels of %u bytes in a %zu-byte page",
                             n, blen);
      hybrid_init(&r->levels, b + 4, n, 1, pos, "definition levels");
      vals = b + 4 + n, vlen = blen - 4 - n;
    }
  } else {
    size_t lv = (size_t)h->def_len + (size_t)h->rep_len;
    if (lv > r->raw.len || lv > (size_t)h->uncompressed_size)
      return tarn__corrupt(PAGE, (size_t)pos, "levels of %zu bytes exceed the page's %zu", lv,
                           r->raw.len);
    if (r->has_levels)
      hybrid_init(&r->levels, r->raw.data, (size_t)h->def_len, 1, pos, "definition levels");
    vals = r->raw.data + lv, vlen = r->raw.len - lv;
    /* v2: the levels are never compressed; the values are when is_compressed. */
    if (h->is_compressed && r->codec != TARN_PARQUET_UNCOMPRESSED) {
      if ((rc = inflate_into(r, vals, vlen, (size_t)h->uncompressed_size - lv, &r->page, pos)))
        return rc;
      vals = r->page.data, vlen = r->page.len;
    }
  }
  r->mode = V_PLAIN;
  if (h->encoding == TARN_PARQUET_PLAIN) {
    tarn__rd_init(&r->plain, vals, vlen, PAGE);
  } else if (h->encoding == TARN_PARQUET_PLAIN_DICTIONARY ||
             h->encoding == TARN_PARQUET_RLE_DICTIONARY) {
    if (!r->have_dict)
      return tarn__corrupt(PAGE, (size_t)pos, "dictionary-encoded page without a dictionary page");
    if (vlen < 1 || vals[0] > 32)
      return tarn__corrupt(PAGE, (size_t)pos, "bad dictionary index bit width");
    hybrid_init(&r->idx, vals + 1, vlen - 1, vals[0], pos, "dictionary indices");
    r->mode = V_DICT;
  } else if (h->encoding == DELTA_LENGTH_BYTE_ARRAY || h->encoding == DELTA_BYTE_ARRAY) {
    if ((rc = setup_delta(r, vals, vlen, pos, h)))
      return rc;
    r->mode = V_DELTA;
  } else {
    return tarn__err(TARN_EUNSUPPORTED, PAGE ": byte %llu: value encoding %d is not supported",
                     (unsigned long long)pos, h->encoding);
  }
  r->page_off = pos;
  r->page_left = (uint32_t)h->num_values;
  return 0;
}

static int open_group(tarn_parquet_reader *r, size_t g) {
  const tarn_parquet_row_group *rg = &r->meta.row_groups[g];
  const tarn_parquet_chunk *c = &rg->chunk;
  if (!tarn__pq_codec_known(c->codec))
    return tarn__err(TARN_EUNSUPPORTED,
                     "parquet footer: row group %zu: codec %d (%s) is not supported", g, c->codec,
                     tarn_parquet_codec_name(c->codec));
  int64_t start = chunk_first_page(c);
  r->group = g;
  r->group_open = 1;
  r->group_rows_left = (uint64_t)rg->num_rows;
  r->chunk_start = r->chunk_pos = (uint64_t)start;
  r->chunk_end = (uint64_t)start + (uint64_t)c->total_compressed_size;
  r->codec = c->codec;
  r->have_dict = 0;
  r->page_left = 0;
  return 0;
}

/* Loads the open group's next data page; with skip, whole pages of at most
 * *skip values are passed over unread (and *skip reduced). */
static int next_data_page(tarn_parquet_reader *r, uint64_t *skip) {
  for (;;) {
    if (r->chunk_pos >= r->chunk_end)
      return tarn__corrupt(FILE_, (size_t)r->chunk_pos,
                           "column chunk of row group %zu ends with %llu of its rows missing",
                           r->group, (unsigned long long)r->group_rows_left);
    tarn__pq_page_header h;
    size_t hlen;
    uint64_t pos = r->chunk_pos;
    int rc = read_page_header(r, pos, r->chunk_end, &h, &hlen);
    if (rc)
      return rc;
    r->chunk_pos = pos + hlen + (uint64_t)h.compressed_size;
    if (h.type == TARN_PARQUET_DICTIONARY_PAGE) {
      if ((rc = load_dictionary(r, pos, hlen, &h)))
        return rc;
      continue;
    }
    if (h.type != TARN_PARQUET_DATA_PAGE && h.type != TARN_PARQUET_DATA_PAGE_V2)
      continue; /* index pages and pages of future types carry no rows */
    if ((uint64_t)h.num_values > r->group_rows_left)
      return tarn__corrupt(PAGE, (size_t)pos, "page of %d values, but row group %zu has %llu left",
                           h.num_values, r->group, (unsigned long long)r->group_rows_left);
    r->group_rows_left -= (uint64_t)h.num_values;
    if (h.num_values == 0)
      continue;
    if (skip && (uint64_t)h.num_values <= *skip) {
      *skip -= (uint64_t)h.num_values;
      continue;
    }
    return setup_data_page(r, pos, hlen, &h);
  }
}

static int next_value(tarn_parquet_reader *r, const uint8_t **p, size_t *n, int *is_null) {
  uint32_t v;
  int rc;
  r->page_left--;
  r->row++;
  if (r->has_levels) {
    if ((rc = hybrid_next(&r->levels, &v)))
      return rc;
    if (v > 1)
      return tarn__corrupt(PAGE, (size_t)r->page_off, "definition level %u exceeds 1", v);
    if (v == 0) {
      *p = NULL, *n = 0, *is_null = 1;
      return 0;
    }
  }
  *is_null = 0;
  if (r->mode == V_DELTA) {
    if (r->di >= r->n_dlens)
      return tarn__corrupt(PAGE, (size_t)r->page_off, "DELTA lengths end before row %llu",
                           (unsigned long long)(r->row - 1));
    uint32_t len = r->dlens[r->di++];
    if (tarn__rd_bytes(&r->plain, len, p, "value"))
      return tarn__corrupt(PAGE, (size_t)r->page_off,
                           "value of row %llu (%u bytes) runs past the page",
                           (unsigned long long)(r->row - 1), len);
    *n = len;
    return 0;
  }
  if (r->mode == V_DICT) {
    if ((rc = hybrid_next(&r->idx, &v)))
      return rc;
    if (v >= r->n_dict)
      return tarn__corrupt(PAGE, (size_t)r->page_off, "dictionary index %u of %zu entries", v,
                           r->n_dict);
    *p = r->dict[v].p, *n = r->dict[v].n;
    return 0;
  }
  const uint8_t *lp;
  if (tarn__rd_bytes(&r->plain, 4, &lp, "value length"))
    return tarn__corrupt(PAGE, (size_t)r->page_off, "values end before row %llu",
                         (unsigned long long)(r->row - 1));
  uint32_t len = tarn__ld_le32(lp);
  if (tarn__rd_bytes(&r->plain, len, p, "value"))
    return tarn__corrupt(PAGE, (size_t)r->page_off,
                         "value of row %llu (%u bytes) runs past the page",
                         (unsigned long long)(r->row - 1), len);
  *n = len;
  return 0;
}

/* The row group that holds row (row < num_rows). */
static size_t group_of(const tarn_parquet_reader *r, uint64_t row) {
  size_t lo = 0, hi = r->meta.n_row_groups;
  while (hi - lo > 1) {
    size_t mid = lo + (hi - lo) / 2;
    if (r->group_start[mid] <= row)
      lo = mid;
    else
      hi = mid;
  }
  while (lo + 1 < r->meta.n_row_groups && r->meta.row_groups[lo].num_rows == 0)
    lo++;
  return lo;
}

int tarn_parquet_next(tarn_parquet_reader *r, const uint8_t **p, size_t *n, int *is_null) {
  int rc;
  while (r->page_left == 0) {
    if (r->row >= (uint64_t)r->meta.num_rows)
      return tarn__err(TARN_EEND, FILE_ ": no row after row %llu", (unsigned long long)r->row);
    if (!r->group_open || r->group_rows_left == 0) {
      size_t g = group_of(r, r->row);
      if ((rc = open_group(r, g)))
        return rc;
    }
    if ((rc = next_data_page(r, NULL)))
      return rc;
  }
  return next_value(r, p, n, is_null);
}

int tarn_parquet_seek(tarn_parquet_reader *r, uint64_t row) {
  if (row > (uint64_t)r->meta.num_rows)
    return tarn__err(TARN_EINVAL, FILE_ ": row %llu is past the last row (%lld rows)",
                     (unsigned long long)row, (long long)r->meta.num_rows);
  r->page_left = 0;
  r->group_open = 0;
  r->row = row;
  if (row == (uint64_t)r->meta.num_rows)
    return 0;
  size_t g = group_of(r, row);
  int rc = open_group(r, g);
  uint64_t skip = row - r->group_start[g];
  if (rc || (rc = next_data_page(r, &skip)))
    return rc;
  /* The page holds the row: skip the values before it. */
  r->row = row - skip;
  const uint8_t *p;
  size_t n;
  int is_null;
  while (skip-- > 0)
    if ((rc = next_value(r, &p, &n, &is_null)))
      return rc;
  return 0;
}

int tarn_parquet_pages(tarn_parquet_reader *r, size_t g,
                       int (*fn)(void *ctx, const tarn_parquet_page_info *page), void *ctx) {
  if (g >= r->meta.n_row_groups)
    return tarn__err(TARN_EINVAL, FILE_ ": no row group %zu", g);
  const tarn_parquet_chunk *c = &r->meta.row_groups[g].chunk;
  if (r->meta.row_groups[g].num_rows == 0)
    return 0;
  int64_t start = chunk_first_page(c);
  uint64_t pos = (uint64_t)start, end = pos + (uint64_t)c->total_compressed_size;
  while (pos < end) {
    tarn__pq_page_header h;
    size_t hlen;
    int rc = read_page_header(r, pos, end, &h, &hlen);
    if (rc)
      return rc;
    tarn_parquet_page_info info = {pos,
                                   (uint32_t)hlen,
                                   h.type,
                                   h.uncompressed_size,
                                   h.compressed_size,
                                   h.num_values,
                                   h.encoding,
                                   h.type == TARN_PARQUET_DATA_PAGE_V2 ? h.num_nulls : -1,
                                   h.is_compressed};
    if ((rc = fn(ctx, &info)))
      return rc;
    pos += hlen + (uint64_t)h.compressed_size;
  }
  return 0;
}
