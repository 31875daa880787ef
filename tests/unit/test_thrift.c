/* The Thrift compact protocol encoder and decoder, and Parquet's page header on it. */
#include "testutil.h"

#include <stdlib.h>
#include <string.h>

#include "format/parquet_internal.h"
#include "format/thrift.h"
#include "tarn/buf.h"
#include "tarn/error.h"

/* struct { 1: i32 -3; 2: binary "hi"; 3: bool true; 20: i64 300; 21: list<i32> [1,2,3];
 *          22: struct { 1: i32 7 } } — worked out by hand from the compact protocol spec:
 * short field headers (delta << 4 | type), a long one for the jump from 3 to 20
 * (type, then the zigzag id), zigzag varints, a list header (count << 4 | type). */
static const char sample_hex[] = "1505 18026869 11 0628d804 1935020406 1c150e00 00";

static void encode_known_bytes(void **state) {
  tarn_buf b = TARN_BUF_INIT;
  tarn__thrift_wr w;
  tarn__thrift_wr_init(&w, &b);
  tarn__thrift_w_struct_begin(&w, -1);
  tarn__thrift_w_i32(&w, 1, -3);
  tarn__thrift_w_binary(&w, 2, "hi", 2);
  tarn__thrift_w_bool(&w, 3, 1);
  tarn__thrift_w_i64(&w, 20, 300);
  tarn__thrift_w_list(&w, 21, TARN__T_I32, 3);
  for (int i = 1; i <= 3; i++)
    tarn__thrift_w_elem_i32(&w, i);
  tarn__thrift_w_struct_begin(&w, 22);
  tarn__thrift_w_i32(&w, 1, 7);
  tarn__thrift_w_struct_end(&w);
  tarn__thrift_w_struct_end(&w);
  assert_int_equal(w.rc, 0);
  tu_assert_hex(b.data, b.len, sample_hex);
  /* A long list takes the 0xf header and a varint count. */
  tarn_buf_reset(&b);
  tarn__thrift_wr_init(&w, &b);
  tarn__thrift_w_struct_begin(&w, -1);
  tarn__thrift_w_list(&w, 1, TARN__T_BINARY, 20);
  assert_int_equal(w.rc, 0);
  tu_assert_hex(b.data, b.len, "19 f8 14");
  tarn_buf_free(&b);
}

static void decode_known_bytes(void **state) {
  size_t n;
  uint8_t *p = tu_hex(sample_hex, &n);
  tarn__thrift_rd d;
  tarn__thrift_rd_init(&d, p, n, 100, "test struct");
  assert_int_equal(tarn__thrift_struct_begin(&d), 0);
  int16_t id;
  int type, seen = 0;
  for (;;) {
    assert_int_equal(tarn__thrift_field(&d, &id, &type), 0);
    if (type == TARN__T_STOP)
      break;
    int32_t i32;
    int64_t i64;
    int b, et;
    const uint8_t *s;
    size_t len;
    switch (id) {
    case 1:
      assert_int_equal(tarn__thrift_i32(&d, type, &i32, "f1"), 0);
      assert_int_equal(i32, -3);
      break;
    case 2:
      assert_int_equal(tarn__thrift_binary(&d, type, &s, &len, "f2"), 0);
      assert_int_equal(len, 2);
      assert_memory_equal(s, "hi", 2);
      break;
    case 3:
      assert_int_equal(tarn__thrift_bool(&d, type, 0, &b, "f3"), 0);
      assert_true(b);
      break;
    case 20:
      assert_int_equal(tarn__thrift_i64(&d, type, &i64, "f20"), 0);
      assert_int_equal(i64, 300);
      break;
    case 21:
      assert_int_equal(tarn__thrift_list(&d, type, &et, &len, "f21"), 0);
      assert_int_equal(len, 3);
      for (int i = 1; i <= 3; i++) {
        assert_int_equal(tarn__thrift_i32(&d, et, &i32, "f21"), 0);
        assert_int_equal(i32, i);
      }
      break;
    case 22: assert_int_equal(tarn__thrift_skip(&d, type), 0); break;
    default: fail_msg("unexpected field %d", id);
    }
    seen++;
  }
  assert_int_equal(seen, 6);
  assert_int_equal(d.depth, 0);
  assert_int_equal(d.r.off, n);
  /* A field of the wrong type is named, with the offset. */
  tarn__thrift_rd_init(&d, p, n, 100, "test struct");
  tarn__thrift_struct_begin(&d);
  tarn__thrift_field(&d, &id, &type);
  int64_t v;
  assert_int_equal(tarn__thrift_i64(&d, type, &v, "f1"), TARN_ECORRUPT);
  assert_string_equal(tarn_errmsg(), "test struct: byte 101: f1 is a i32, expected a i64");
  free(p);
}

/* Unknown fields of every type are skipped: double, map, set, empty map, byte, i16. */
static void skip_every_type(void **state) {
  size_t n;
  uint8_t *p = tu_hex("17 0000000000000000  1b 01 58 02 0178  1a 15 04  1b 00  13 7f  14 03"
                      "  15 02  00",
                      &n);
  tarn__thrift_rd d;
  tarn__thrift_rd_init(&d, p, n, 0, "skip");
  assert_int_equal(tarn__thrift_struct_begin(&d), 0);
  int16_t id;
  int type;
  int32_t v = 0;
  for (;;) {
    assert_int_equal(tarn__thrift_field(&d, &id, &type), 0);
    if (type == TARN__T_STOP)
      break;
    if (id == 7)
      assert_int_equal(tarn__thrift_i32(&d, type, &v, "f7"), 0);
    else
      assert_int_equal(tarn__thrift_skip(&d, type), 0);
  }
  assert_int_equal(v, 1);
  assert_int_equal(d.r.off, n);
  free(p);
}

static int skip_all(const uint8_t *p, size_t n) {
  tarn__thrift_rd d;
  tarn__thrift_rd_init(&d, p, n, 0, "hostile");
  return tarn__thrift_skip(&d, TARN__T_STRUCT);
}

static void hostile_input(void **state) {
  /* Nesting bomb: structs in structs, and lists of lists. */
  uint8_t bomb[4000];
  memset(bomb, 0x1c, sizeof bomb);
  assert_int_equal(skip_all(bomb, sizeof bomb), TARN_ECORRUPT);
  assert_non_null(strstr(tarn_errmsg(), "nested deeper than"));
  bomb[0] = 0x19;
  memset(bomb + 1, 0x19, sizeof bomb - 1); /* list of 1 list of 1 list ... */
  assert_int_equal(skip_all(bomb, sizeof bomb), TARN_ECORRUPT);
  assert_non_null(strstr(tarn_errmsg(), "nested deeper than"));

  size_t n;
  /* A list claiming more elements than there are bytes: refused before any allocation. */
  uint8_t *p = tu_hex("19 f5 ffffffff07 00", &n);
  assert_int_equal(skip_all(p, n), TARN_ECORRUPT);
  assert_non_null(
      strstr(tarn_errmsg(), "hostile: byte 1: list: list of 2147483647 elements in 1 bytes"));
  free(p);
  /* An i32 varint of 6 bytes; an i32 value above 32 bits. */
  p = tu_hex("15 8080808080 01 00", &n);
  assert_int_equal(skip_all(p, n), TARN_ECORRUPT);
  assert_non_null(strstr(tarn_errmsg(), "varint longer than 5 bytes"));
  free(p);
  p = tu_hex("15 ffffffff1f 00", &n);
  assert_int_equal(skip_all(p, n), TARN_ECORRUPT);
  assert_non_null(strstr(tarn_errmsg(), "does not fit in i32"));
  free(p);
  /* A type code that is not Thrift's; a binary longer than the input. */
  p = tu_hex("1d 00", &n);
  assert_int_equal(skip_all(p, n), TARN_ECORRUPT);
  assert_non_null(strstr(tarn_errmsg(), "field type 13 is not a Thrift type"));
  free(p);
  p = tu_hex("18 7f 41 00", &n);
  assert_int_equal(skip_all(p, n), TARN_ECORRUPT);
  assert_non_null(strstr(tarn_errmsg(), "binary needs 127 bytes, 2 left"));
  free(p);
  /* Every truncation of the sample fails without reading past the end. */
  p = tu_hex(sample_hex, &n);
  for (size_t k = 0; k < n; k++) {
    uint8_t *cut = malloc(k ? k : 1);
    memcpy(cut, p, k);
    assert_int_equal(skip_all(cut, k), TARN_ECORRUPT);
    free(cut);
  }
  assert_int_equal(skip_all(p, n), 0);
  free(p);
}

/* PageHeader round trips for the three page types tarn reads. */
static void page_header_round_trip(void **state) {
  tarn__pq_page_header hs[3] = {{.type = TARN_PARQUET_DATA_PAGE,
                                 .uncompressed_size = 1000,
                                 .compressed_size = 600,
                                 .num_values = 77,
                                 .encoding = TARN_PARQUET_PLAIN,
                                 .def_encoding = TARN_PARQUET_RLE,
                                 .num_nulls = 5,
                                 .is_compressed = 1},
                                {.type = TARN_PARQUET_DICTIONARY_PAGE,
                                 .uncompressed_size = 30,
                                 .compressed_size = 30,
                                 .num_values = 3,
                                 .encoding = TARN_PARQUET_PLAIN_DICTIONARY,
                                 .num_nulls = -1,
                                 .is_compressed = 1},
                                {.type = TARN_PARQUET_DATA_PAGE_V2,
                                 .uncompressed_size = 5000,
                                 .compressed_size = 100,
                                 .num_values = 900,
                                 .encoding = TARN_PARQUET_RLE_DICTIONARY,
                                 .num_nulls = 9,
                                 .num_rows = 900,
                                 .def_len = 40,
                                 .rep_len = 0,
                                 .is_compressed = 0}};
  for (int i = 0; i < 3; i++) {
    tarn_buf b = TARN_BUF_INIT;
    assert_int_equal(tarn__pq_page_header_encode(&hs[i], &b), 0);
    tarn_buf_append(&b, "trailing", 8);
    tarn__pq_page_header h;
    size_t used;
    assert_int_equal(tarn__pq_page_header_decode(b.data, b.len, 0, &h, &used), 0);
    assert_int_equal(used, b.len - 8);
    assert_int_equal(h.type, hs[i].type);
    assert_int_equal(h.uncompressed_size, hs[i].uncompressed_size);
    assert_int_equal(h.compressed_size, hs[i].compressed_size);
    assert_int_equal(h.num_values, hs[i].num_values);
    assert_int_equal(h.encoding, hs[i].encoding);
    assert_int_equal(h.num_nulls, hs[i].num_nulls);
    assert_int_equal(h.is_compressed, hs[i].is_compressed);
    if (i == 2) {
      assert_int_equal(h.def_len, 40);
      assert_int_equal(h.num_rows, 900);
    }
    /* Without its own header a data page is refused. */
    tarn_buf_free(&b);
  }
  size_t n;
  uint8_t *p = tu_hex("15 00 15 02 15 02 00", &n); /* DATA_PAGE with no DataPageHeader */
  tarn__pq_page_header h;
  size_t used;
  assert_int_equal(tarn__pq_page_header_decode(p, n, 50, &h, &used), TARN_ECORRUPT);
  assert_string_equal(tarn_errmsg(), "parquet page: byte 50: page of type 0 lacks its own header");
  free(p);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(encode_known_bytes),     cmocka_unit_test(decode_known_bytes),
      cmocka_unit_test(skip_every_type),        cmocka_unit_test(hostile_input),
      cmocka_unit_test(page_header_round_trip),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
