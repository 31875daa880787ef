/* Companion files: the §4.8 vector, block boundaries, the floor lookup and
 * every refusal of the reader. */
#include "testutil.h"

#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "lakehouse_entry_metadata.pb-c.h"
#include "tarn/companion.h"
#include "tarn/error.h"
#include "util/bytes.h"

#define T 1700000000000LL

static const tarn_entry_header vec_rows[2] = {{0, 2, T, 5, 5}, {2, 1, T, 3, 8}};

static const char vec_rows_json[] = "[{\"metadata\":\"Eg8IABACGIDQlf+8MSAFKAU=\",\"offset\":\"0\"},"
                                    "{\"metadata\":\"Eg8IAhABGIDQlf+8MSADKAg=\",\"offset\":\"2\"}]";

static void put_json(tarn_buf *b, const char *json) {
  assert_int_equal(tarn_buf_put_be32(b, (uint32_t)strlen(json)), 0);
  assert_int_equal(tarn_buf_append(b, json, strlen(json)), 0);
}

/* A whole stream from its blocks (NULL-terminated) and its offset map. */
static void build_stream(tarn_buf *b, const char *const *blocks, const char *map) {
  tarn_buf_reset(b);
  for (; *blocks; blocks++)
    put_json(b, *blocks);
  assert_int_equal(tarn_buf_put_be32(b, TARN_COMPANION_SENTINEL), 0);
  put_json(b, map);
}

static void write_rows(tarn_buf *out, const tarn_entry_header *rows, size_t n, size_t block_rows,
                       int flags) {
  tarn_companion_writer *w;
  assert_int_equal(tarn_companion_writer_open(&w, out, block_rows, flags), 0);
  for (size_t i = 0; i < n; i++)
    assert_int_equal(tarn_companion_writer_add(w, &rows[i]), 0);
  assert_int_equal(tarn_companion_writer_close(w), 0);
}

static void assert_rows_equal(const tarn_companion *c, const tarn_entry_header *rows, size_t n) {
  assert_int_equal(c->nrows, n);
  for (size_t i = 0; i < n; i++) {
    assert_int_equal(c->rows[i].offset, rows[i].offset);
    assert_int_equal(c->rows[i].record_count, rows[i].record_count);
    assert_int_equal(c->rows[i].timestamp_ms, rows[i].timestamp_ms);
    assert_int_equal(c->rows[i].entry_size, rows[i].entry_size);
    assert_int_equal(c->rows[i].cumulative_size, rows[i].cumulative_size);
  }
}

static void assert_floor(const tarn_companion *c, int64_t o, size_t want) {
  size_t row = 99;
  assert_int_equal(tarn_companion_floor(c, o, &row), 0);
  assert_int_equal(row, want);
}

static void metadata_vector(void **state) {
  /* §4.8 / §3.7: all five header fields, zeros included; no schemaVersion. */
  tarn_buf b = TARN_BUF_INIT;
  assert_int_equal(tarn_companion_encode_metadata(&b, &vec_rows[0]), 0);
  tu_assert_hex(b.data, b.len, "120f0800 10021880 d095ffbc 31200528 05");
  tarn_buf_reset(&b);
  assert_int_equal(tarn_companion_encode_metadata(&b, &vec_rows[1]), 0);
  tu_assert_hex(b.data, b.len, "120f0802 10011880 d095ffbc 31200328 08");
  tarn_buf_free(&b);
}

/* The writer encodes the metadata by hand (companion.c encode_metadata):
 * its bytes must be protobuf-c's for every value, varint boundaries and the
 * 10-byte two's complement of negative int32 and int64 fields included. */
static void metadata_as_protobuf_c(void **state) {
  static const int64_t v64[] = {
      0, 1, 127, 128, 16383, 16384, INT32_MAX, (int64_t)1 << 35, INT64_MAX, -1, INT64_MIN};
  static const int32_t v32[] = {0, 1, 127, 128, 300, INT32_MAX, -1, INT32_MIN};
  size_t n64 = sizeof v64 / sizeof *v64, n32 = sizeof v32 / sizeof *v32;
  tarn_buf b = TARN_BUF_INIT;
  uint8_t want[128];
  for (size_t i = 0; i < n64 * n32; i++) {
    tarn_entry_header h = {v64[i % n64], v32[i % n32], v64[(i / 3) % n64], v32[(i / 5) % n32],
                           v64[(i / 7) % n64]};
    Materialization__Proto__EntryHeader hdr = MATERIALIZATION__PROTO__ENTRY_HEADER__INIT;
    Materialization__Proto__LakehouseEntryMetadata m =
        MATERIALIZATION__PROTO__LAKEHOUSE_ENTRY_METADATA__INIT;
    hdr.has_offset = hdr.has_numberofmessages = hdr.has_writtentimestamp = 1;
    hdr.has_entrysize = hdr.has_cumulativesize = 1;
    hdr.offset = h.offset, hdr.numberofmessages = h.record_count;
    hdr.writtentimestamp = h.timestamp_ms, hdr.entrysize = h.entry_size;
    hdr.cumulativesize = h.cumulative_size;
    m.entryheader = &hdr;
    size_t n = materialization__proto__lakehouse_entry_metadata__get_packed_size(&m);
    assert_true(n <= sizeof want);
    materialization__proto__lakehouse_entry_metadata__pack(&m, want);
    tarn_buf_reset(&b);
    assert_int_equal(tarn_companion_encode_metadata(&b, &h), 0);
    assert_int_equal(b.len, n);
    assert_memory_equal(b.data, want, n);
  }
  tarn_buf_free(&b);
}

static void example_stream(void **state) {
  /* LS-060: the §4.8 vector, byte for byte (132 bytes uncompressed). */
  tarn_buf raw = TARN_BUF_INIT, gz = TARN_BUF_INIT, want = TARN_BUF_INIT, inflated = TARN_BUF_INIT;
  const char *blocks[] = {vec_rows_json, NULL};
  build_stream(&want, blocks, "{\"0\":0,\"2\":1}");
  assert_int_equal(want.len, 132);
  write_rows(&raw, vec_rows, 2, 0, TARN_COMPANION_UNCOMPRESSED);
  assert_int_equal(raw.len, 132);
  assert_memory_equal(raw.data, want.data, 132);
  tu_assert_hex(raw.data, 4, "0000006b");
  tu_assert_hex(raw.data + 111, 8, "7fffffff 0000000d");

  write_rows(&gz, vec_rows, 2, 0, 0);
  assert_int_equal(gz.data[0], 0x1f);
  assert_int_equal(gz.data[1], 0x8b);
  assert_int_equal(tarn_companion_inflate(&inflated, gz.data, gz.len, 0), 0);
  assert_int_equal(inflated.len, 132);
  assert_memory_equal(inflated.data, want.data, 132);

  tarn_companion c;
  assert_int_equal(tarn_companion_decode(&c, gz.data, gz.len, 0), 0);
  assert_rows_equal(&c, vec_rows, 2);
  assert_int_equal(c.nblocks, 1);
  assert_int_equal(c.blocks[0].rows, 2);
  assert_int_equal(c.nmap, 2);
  /* LS-065: offset 1 has no key; the floor is 0, row 0. */
  assert_floor(&c, 1, 0);
  assert_floor(&c, 2, 1);
  assert_floor(&c, 7, 1);
  tarn_companion_free(&c);
  tarn_buf_free(&raw), tarn_buf_free(&gz), tarn_buf_free(&want), tarn_buf_free(&inflated);
}

static tarn_entry_header *make_rows(size_t n) {
  tarn_entry_header *r = calloc(n ? n : 1, sizeof *r);
  assert_non_null(r);
  int64_t off = 5, cum = 0;
  for (size_t i = 0; i < n; i++) {
    int32_t cnt = (int32_t)(1 + i % 7), size = (int32_t)(10 + i % 100);
    cum += size;
    r[i] = (tarn_entry_header){off, cnt, T + (int64_t)i, size, cum};
    off += cnt;
  }
  return r;
}

/* Writes n rows with the default block size, reads them back, checks the block
 * sizes and that every block but the last holds rows (LS-061). */
static void roundtrip_n(size_t n, const size_t *want_blocks, size_t nwant) {
  tarn_entry_header *rows = make_rows(n);
  tarn_buf gz = TARN_BUF_INIT, raw = TARN_BUF_INIT;
  write_rows(&gz, rows, n, 0, 0);
  write_rows(&raw, rows, n, 0, TARN_COMPANION_UNCOMPRESSED);
  tarn_companion c;
  assert_int_equal(tarn_companion_decode(&c, gz.data, gz.len, 0), 0);
  assert_int_equal(c.stream_len, raw.len);
  assert_rows_equal(&c, rows, n);
  assert_int_equal(c.nblocks, nwant);
  for (size_t i = 0; i < nwant; i++) {
    assert_int_equal(c.blocks[i].rows, want_blocks[i]);
    if (i + 1 < nwant)
      assert_true(c.blocks[i].rows >= 1); /* LS-061 */
  }
  if (want_blocks[nwant - 1] == 0) /* the empty last block is "[]", N = 2 (§7.7) */
    assert_int_equal(c.blocks[nwant - 1].len, 2);
  assert_int_equal(c.nmap, n);
  for (size_t i = 0; i < n; i += 997) {
    size_t row;
    assert_int_equal(tarn_companion_floor(&c, rows[i].offset, &row), 0);
    assert_int_equal(row, i);
    if (rows[i].record_count > 1) {
      assert_int_equal(tarn_companion_floor(&c, rows[i].offset + 1, &row), 0);
      assert_int_equal(row, i);
    }
  }
  tarn_companion_free(&c);
  tarn_buf_free(&gz), tarn_buf_free(&raw);
  free(rows);
}

static void blocks_10000(void **state) {
  /* LS-062: a multiple of the block size leaves an empty last block, accepted. */
  const size_t want[] = {10000, 0};
  roundtrip_n(10000, want, 2);
}
static void blocks_10001(void **state) {
  const size_t want[] = {10000, 1};
  roundtrip_n(10001, want, 2);
}
static void blocks_25000(void **state) {
  const size_t want[] = {10000, 10000, 5000};
  roundtrip_n(25000, want, 3);
}
static void blocks_zero_rows(void **state) {
  const size_t want[] = {0};
  roundtrip_n(0, want, 1);
}

static void small_blocks_empty_last(void **state) {
  /* LS-060, LS-062: block_rows 2 and 4 rows: [2 rows][2 rows][] */
  tarn_entry_header *rows = make_rows(4);
  tarn_buf raw = TARN_BUF_INIT;
  write_rows(&raw, rows, 4, 2, TARN_COMPANION_UNCOMPRESSED);
  tarn_companion c;
  assert_int_equal(tarn_companion_decode_stream(&c, raw.data, raw.len), 0);
  assert_int_equal(c.nblocks, 3);
  assert_int_equal(c.blocks[2].rows, 0);
  size_t p = c.blocks[2].pos;
  tu_assert_hex(raw.data + p, 10, "00000002 5b5d 7fffffff");
  assert_rows_equal(&c, rows, 4);
  tarn_companion_free(&c);
  tarn_buf_free(&raw);
  free(rows);
}

static char *b64_of(const tarn_entry_header *h) {
  tarn_buf m = TARN_BUF_INIT;
  assert_int_equal(tarn_companion_encode_metadata(&m, h), 0);
  char *s = malloc(4 * (m.len / 3 + 1) + 1);
  EVP_EncodeBlock((unsigned char *)s, m.data, (int)m.len);
  tarn_buf_free(&m);
  return s;
}

static void numeric_not_lexical(void **state) {
  /* LS-065: keys 9 and 10; the map lists "10" first, as a HashMap might.
   * Lexically "9" > "10", so a lexical floor of 95 would pick 9; numerically it is 10. */
  tarn_entry_header h9 = {9, 1, T, 1, 1}, h10 = {10, 100, T, 1, 2};
  char *m9 = b64_of(&h9), *m10 = b64_of(&h10);
  char block[256], map[] = "{\"10\":1,\"9\":0}";
  snprintf(block, sizeof block,
           "[{\"metadata\":\"%s\",\"offset\":\"9\"},{\"metadata\":\"%s\",\"offset\":\"10\"}]", m9,
           m10);
  const char *blocks[] = {block, NULL};
  tarn_buf s = TARN_BUF_INIT;
  build_stream(&s, blocks, map);
  tarn_companion c;
  assert_int_equal(tarn_companion_decode_stream(&c, s.data, s.len), 0);
  assert_floor(&c, 95, 1);
  assert_floor(&c, 9, 0);
  assert_floor(&c, 10, 1);
  size_t row;
  assert_int_equal(tarn_companion_floor(&c, 8, &row), TARN_ENOTFOUND);
  tarn_companion_free(&c);
  tarn_buf_free(&s);
  free(m9), free(m10);
}

static void unknown_fields_skipped(void **state) {
  /* Reserved fields 1 and 3 and schemaVersion (4) around the header are skipped. */
  static const uint8_t meta[] = {0x08, 0x07, 0x1a, 0x01, 0x41, 0x12, 0x0f, 0x08,
                                 0x00, 0x10, 0x02, 0x18, 0x80, 0xd0, 0x95, 0xff,
                                 0xbc, 0x31, 0x20, 0x05, 0x28, 0x05, 0x20, 0x03};
  char b64[64], block[160];
  EVP_EncodeBlock((unsigned char *)b64, meta, sizeof meta);
  snprintf(block, sizeof block, "[{\"offset\":\"0\",\"metadata\":\"%s\"}]", b64);
  const char *blocks[] = {block, NULL};
  tarn_buf s = TARN_BUF_INIT;
  build_stream(&s, blocks, "{\"0\":0}");
  tarn_companion c;
  assert_int_equal(tarn_companion_decode_stream(&c, s.data, s.len), 0);
  assert_rows_equal(&c, vec_rows, 1);
  tarn_companion_free(&c);
  tarn_buf_free(&s);
}

/* Expects the stream to be refused with a message holding want. */
static void refuse(const tarn_buf *s, const char *want) {
  tarn_companion c;
  int rc = tarn_companion_decode_stream(&c, s->data, s->len);
  if (rc != TARN_ECORRUPT || !strstr(tarn_errmsg(), want) ||
      strncmp(tarn_errmsg(), "companion file: byte ", 21) != 0)
    fail_msg("wanted a refusal with \"%s\", got rc %d: %s", want, rc, tarn_errmsg());
}

static void refuse_rows(const char *block, const char *map, const char *want) {
  const char *blocks[] = {block, NULL};
  tarn_buf s = TARN_BUF_INIT;
  build_stream(&s, blocks, map);
  refuse(&s, want);
  tarn_buf_free(&s);
}

#define R0 "\"Eg8IABACGIDQlf+8MSAFKAU=\""
#define R1 "\"Eg8IAhABGIDQlf+8MSADKAg=\""

static void refusals_rows(void **state) {
  refuse_rows("[{\"metadata\":" R0 ",\"offset\":\"0\"", "{}", "block 0: JSON");
  refuse_rows("{}", "{}", "not a JSON array");
  refuse_rows("[1]", "{}", "not a JSON object");
  refuse_rows("[{\"metadata\":" R0 "}]", "{}", "exactly metadata and offset");
  refuse_rows("[{\"metadata\":" R0 ",\"offset\":\"0\",\"x\":1}]", "{}",
              "exactly metadata and offset");
  refuse_rows("[{\"metadata\":" R0 ",\"offset\":0}]", "{}", "must be strings");
  refuse_rows("[{\"metadata\":" R0 ",\"metadata\":" R0 ",\"offset\":\"0\"}]", "{}", "JSON");
  refuse_rows("[{\"metadata\":" R0 ",\"offset\":\"00\"}]", "{}", "canonical decimal");
  refuse_rows("[{\"metadata\":" R0 ",\"offset\":\"-0\"}]", "{}", "canonical decimal");
  refuse_rows("[{\"metadata\":" R0 ",\"offset\":\"+0\"}]", "{}", "canonical decimal");
  refuse_rows("[{\"metadata\":" R0 ",\"offset\":\"\"}]", "{}", "canonical decimal");
  refuse_rows("[{\"metadata\":" R0 ",\"offset\":\"9223372036854775808\"}]", "{}",
              "canonical decimal");
  refuse_rows("[{\"metadata\":\"Eg8IABACGIDQlf+8MSAFKAU\",\"offset\":\"0\"}]", "{}", "Base64");
  refuse_rows("[{\"metadata\":\"Eg8IABACGIDQlf-8MSAFKAU=\",\"offset\":\"0\"}]", "{}", "Base64");
  refuse_rows("[{\"metadata\":\" g8IABACGIDQlf+8MSAFKAU=\",\"offset\":\"0\"}]", "{}", "Base64");
  refuse_rows("[{\"metadata\":\"Eg8I=BACGIDQlf+8MSAFKAU=\",\"offset\":\"0\"}]", "{}", "Base64");
  refuse_rows("[{\"metadata\":\"Eg8IABACGIDQlf+8MSAFKA==\",\"offset\":\"0\"}]", "{}",
              "not a LakehouseEntryMetadata"); /* truncated protobuf */
  refuse_rows("[{\"metadata\":\"IAM=\",\"offset\":\"0\"}]", "{}", "no entryHeader");
  refuse_rows("[{\"metadata\":\"\",\"offset\":\"0\"}]", "{}", "no entryHeader");
  refuse_rows("[{\"metadata\":" R0 ",\"offset\":\"2\"}]", "{}", "differs from the row's offset");
  refuse_rows("[{\"metadata\":" R1 ",\"offset\":\"2\"},{\"metadata\":" R0 ",\"offset\":\"0\"}]",
              "{}", "is not past the previous entry");
  refuse_rows("[{\"metadata\":" R0 ",\"offset\":\"0\"},{\"metadata\":" R0 ",\"offset\":\"0\"}]",
              "{}", "is not past the previous entry");
  /* numberOfMessages 0 */
  refuse_rows("[{\"metadata\":\"EgQIABAA\",\"offset\":\"0\"}]", "{}", "numberOfMessages 0");
}

static void refusals_map(void **state) {
  const char *ok =
      "[{\"metadata\":" R0 ",\"offset\":\"0\"},{\"metadata\":" R1 ",\"offset\":\"2\"}]";
  refuse_rows(ok, "[]", "offset map: not a JSON object");
  refuse_rows(ok, "{\"0\":0", "offset map: JSON");
  refuse_rows(ok, "{\"00\":0}", "not a canonical decimal");
  refuse_rows(ok, "{\"x\":0}", "not a canonical decimal");
  refuse_rows(ok, "{\"0\":2}", "not a row number below 2");
  refuse_rows(ok, "{\"0\":-1}", "not a row number");
  refuse_rows(ok, "{\"0\":0.0}", "not a row number");
  refuse_rows(ok, "{\"0\":\"0\"}", "not a row number");
  refuse_rows(ok, "{\"0\":1}", "names row 1, whose offset is 2");
  refuse_rows(ok, "{\"0\":0,\"0\":0}", "offset map: JSON");
}

/* The reader matches the canonical text (tarn's and Jackson's compact output)
 * itself and gives every other form to jansson (companion.c, "the canonical
 * text"): texts that differ only in form decode to the same rows and map. */
static void forms_decode_alike(void **state) {
  const char *canon[] = {vec_rows_json, NULL};
  const char *spaced[] = {" [ {\"metadata\" : " R0 " , \"offset\" : \"0\" } ,\n"
                          "{ \"metadata\":" R1 ",\"offset\":\"2\"} ] ",
                          NULL};
  const char *reordered[] = {"[{\"offset\":\"0\",\"metadata\":" R0 "},"
                             "{\"metadata\":" R1 ",\"offset\":\"2\"}]",
                             NULL};
  const char *escaped[] = {"[{\"metadata\":" R0 ",\"offset\":\"\\u0030\"},"
                           "{\"metadata\":\"Eg8IAhABGIDQlf\\u002b8MSADKAg=\",\"offset\":\"2\"}]",
                           NULL};
  const char *maps[] = {"{\"0\":0,\"2\":1}", "{\"2\":1,\"0\":0}", "{ \"0\" : 0 , \"2\":1 }",
                        "{\"\\u0032\":1,\"0\":0}", "{\"0\":0,\"2\":1e0}"};
  const char *const *forms[] = {canon, spaced, reordered, escaped};
  tarn_buf s = TARN_BUF_INIT;
  for (size_t f = 0; f < sizeof forms / sizeof forms[0]; f++)
    for (size_t m = 0; m < sizeof maps / sizeof maps[0]; m++) {
      tarn_companion c;
      build_stream(&s, forms[f], maps[m]);
      int rc = tarn_companion_decode_stream(&c, s.data, s.len);
      if (m == 4) { /* 1e0 is a JSON real, not an integer: refused by either path */
        assert_int_equal(rc, TARN_ECORRUPT);
        continue;
      }
      if (rc)
        fail_msg("form %zu, map %zu: %s", f, m, tarn_errmsg());
      assert_rows_equal(&c, vec_rows, 2);
      assert_int_equal(c.nblocks, 1);
      assert_int_equal(c.blocks[0].rows, 2);
      assert_int_equal(c.nmap, 2);
      assert_int_equal(c.map[0].offset, 0), assert_int_equal(c.map[0].row, 0);
      assert_int_equal(c.map[1].offset, 2), assert_int_equal(c.map[1].row, 1);
      assert_floor(&c, 1, 0);
      tarn_companion_free(&c);
    }
  tarn_buf_free(&s);
  (void)state;
}

static void refusals_layout(void **state) {
  tarn_buf s = TARN_BUF_INIT;
  const char *two[] = {"[]", vec_rows_json, NULL};
  build_stream(&s, two, "{}");
  refuse(&s, "block 0 is empty but is not the last block"); /* LS-061 */

  const char *one[] = {vec_rows_json, NULL};
  build_stream(&s, one, "{\"0\":0,\"2\":1}");
  tarn_buf full = TARN_BUF_INIT;
  tarn_buf_append(&full, s.data, s.len);
  for (size_t cut = 0; cut < full.len; cut++) { /* every truncation is refused */
    tarn_buf_reset(&s);
    tarn_buf_append(&s, full.data, cut);
    refuse(&s, "");
  }
  tarn_buf_reset(&s);
  tarn_buf_append(&s, full.data, full.len);
  tarn_buf_putc(&s, 0);
  refuse(&s, "byte 132: 1 trailing bytes after the offset map");

  tarn_buf_reset(&s);
  tarn_buf_put_be32(&s, 0x80000000u);
  refuse(&s, "byte 0: block length 2147483648 is negative");
  tarn_buf_reset(&s);
  tarn_buf_put_be32(&s, 200);
  tarn_buf_append(&s, "[]", 2);
  refuse(&s, "byte 4: block needs 200 bytes, 2 left");
  tarn_buf_free(&s);
  tarn_buf_free(&full);
}

static void refusals_gzip(void **state) {
  tarn_buf gz = TARN_BUF_INIT, out = TARN_BUF_INIT;
  tarn_companion c;
  write_rows(&gz, vec_rows, 2, 0, 0);
  assert_int_equal(tarn_companion_decode(&c, "xx", 2, 0), TARN_ECORRUPT);
  assert_non_null(strstr(tarn_errmsg(), "companion file (gzip): byte 0: not a gzip stream"));
  assert_int_equal(tarn_companion_decode(&c, gz.data, gz.len - 1, 0), TARN_ECORRUPT);
  assert_non_null(strstr(tarn_errmsg(), "truncated"));
  assert_int_equal(tarn_companion_decode(&c, gz.data, 10, 0), TARN_ECORRUPT);
  /* Decompression-bomb guard: the 132-byte stream with a cap of 131. */
  assert_int_equal(tarn_companion_decode(&c, gz.data, gz.len, 131), TARN_ECORRUPT);
  assert_non_null(strstr(tarn_errmsg(), "decompresses past the limit of 131 bytes"));
  assert_int_equal(tarn_companion_decode(&c, gz.data, gz.len, 132), 0);
  tarn_companion_free(&c);
  /* A corrupted deflate body. */
  tarn_buf bad = TARN_BUF_INIT;
  tarn_buf_append(&bad, gz.data, gz.len);
  bad.data[12] ^= 0xff;
  bad.data[13] ^= 0xff;
  assert_int_not_equal(tarn_companion_decode(&c, bad.data, bad.len, 0), 0);
  /* Trailing garbage, and a second member (accepted as one stream by gunzip too). */
  tarn_buf_reset(&bad);
  tarn_buf_append(&bad, gz.data, gz.len);
  tarn_buf_append(&bad, "zz", 2);
  assert_int_equal(tarn_companion_decode(&c, bad.data, bad.len, 0), TARN_ECORRUPT);
  assert_non_null(strstr(tarn_errmsg(), "trailing bytes after the gzip stream"));
  tarn_buf_reset(&bad);
  tarn_buf_append(&bad, gz.data, 20);
  assert_int_equal(tarn_companion_inflate(&out, bad.data, bad.len, 0), TARN_ECORRUPT);
  assert_int_equal(out.len, 0);
  tarn_buf_free(&bad);
  tarn_buf_free(&gz);
  tarn_buf_free(&out);
}

static void writer_refusals(void **state) {
  tarn_buf out = TARN_BUF_INIT;
  tarn_companion_writer *w;
  assert_int_equal(tarn_companion_writer_open(&w, &out, 0, 0), 0);
  tarn_entry_header h = {10, 2, T, 1, 1};
  assert_int_equal(tarn_companion_writer_add(w, &h), 0);
  h.offset = 11; /* inside the previous entry [10, 12) */
  assert_int_equal(tarn_companion_writer_add(w, &h), TARN_EINVAL);
  h.offset = 12, h.record_count = 0;
  assert_int_equal(tarn_companion_writer_add(w, &h), TARN_EINVAL);
  h.record_count = 1, h.entry_size = -1;
  assert_int_equal(tarn_companion_writer_add(w, &h), TARN_EINVAL);
  tarn_companion_writer_abort(w);
  tarn_buf_free(&out);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(metadata_vector),     cmocka_unit_test(metadata_as_protobuf_c),
      cmocka_unit_test(example_stream),      cmocka_unit_test(blocks_10000),
      cmocka_unit_test(blocks_10001),        cmocka_unit_test(blocks_25000),
      cmocka_unit_test(blocks_zero_rows),    cmocka_unit_test(small_blocks_empty_last),
      cmocka_unit_test(numeric_not_lexical), cmocka_unit_test(unknown_fields_skipped),
      cmocka_unit_test(refusals_rows),       cmocka_unit_test(refusals_map),
      cmocka_unit_test(refusals_layout),     cmocka_unit_test(refusals_gzip),
      cmocka_unit_test(writer_refusals),     cmocka_unit_test(forms_decode_alike),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
