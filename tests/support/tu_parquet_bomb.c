#include "tu_parquet_bomb.h"

#include "testutil.h"
#include "format/thrift.h"
#include "tarn/parquet.h"
#include "util/bytes.h"

static void empty_structs(tarn__thrift_wr *w, int16_t id, size_t k) {
  tarn__thrift_w_list(w, id, TARN__T_STRUCT, k);
  for (size_t i = 0; i < k; i++) {
    tarn__thrift_w_struct_begin(w, -1);
    tarn__thrift_w_struct_end(w);
  }
}

void tu_parquet_bomb_footer(tarn_buf *b, int field, size_t k) {
  tarn__thrift_wr w;
  tarn__thrift_wr_init(&w, b);
  tarn__thrift_w_struct_begin(&w, -1);
  tarn__thrift_w_i32(&w, 1, 1);
  if (field == 2) {
    empty_structs(&w, 2, k);
  } else {
    tarn__thrift_w_list(&w, 2, TARN__T_STRUCT, 2);
    tarn__thrift_w_struct_begin(&w, -1);
    tarn__thrift_w_string(&w, 4, "r");
    tarn__thrift_w_i32(&w, 5, 1);
    tarn__thrift_w_struct_end(&w);
    tarn__thrift_w_struct_begin(&w, -1);
    tarn__thrift_w_i32(&w, 1, TARN_PARQUET_BYTE_ARRAY);
    tarn__thrift_w_i32(&w, 3, TARN_PARQUET_REQUIRED);
    tarn__thrift_w_string(&w, 4, "payload");
    tarn__thrift_w_struct_end(&w);
  }
  tarn__thrift_w_i64(&w, 3, 0);
  empty_structs(&w, 4, field == 4 ? k : 0);
  if (field == 5)
    empty_structs(&w, 5, k);
  tarn__thrift_w_struct_end(&w);
  assert_int_equal(w.rc, 0);
}

void tu_parquet_wrap_footer(tarn_buf *file, const tarn_buf *footer) {
  uint8_t len[4] = {(uint8_t)footer->len, (uint8_t)(footer->len >> 8), (uint8_t)(footer->len >> 16),
                    (uint8_t)(footer->len >> 24)};
  assert_int_equal(tarn_buf_append(file, "PAR1", 4), 0);
  assert_int_equal(tarn_buf_append(file, footer->data, footer->len), 0);
  assert_int_equal(tarn_buf_append(file, len, 4), 0);
  assert_int_equal(tarn_buf_append(file, "PAR1", 4), 0);
}

size_t tu_parquet_footer_len(const tarn_buf *file) {
  assert_true(file->len >= 12);
  return tarn__ld_le32(file->data + file->len - 8);
}
