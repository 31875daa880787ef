/* EntryIndex values (tables §3.5, §4.3–§4.5) and legacy values (§4.9). */
#include "testutil.h"

#include <stdlib.h>
#include <string.h>

#include "tarn/entryindex.h"
#include "tarn/error.h"
#include "tarn/offsets.h"

#define RAW61                                                                                      \
  "0803120e 372d3030 30303030 30312e77 616c1800 20012803 30083808 40ffffff ffffffff ffff0148 "     \
  "02521208 0110081a 0c000000 02000000 00000081 82"
#define PARQUET123                                                                                 \
  "0803120b 372d302e 70617271 75657418 01200128 07301c38 1c400048 015a5c0a 18436f6d 70616374 "     \
  "65644f62 6a656374 46696c65 496e6465 78124041 41414141 41414141 41494141 41414c4e 7930774c "     \
  "6e426863 6e46315a 58514141 41414141 41414142 67414141 4173334c 544d7563 47467963 58566c64 "     \
  "413d3d"
#define FI_B64 "AAAAAAAAAAIAAAALNy0wLnBhcnF1ZXQAAAAAAAAABgAAAAs3LTMucGFycXVldA=="

static const uint32_t A23[] = {2, 3};
static const tarn_file_index_entry files[] = {{2, "7-0.parquet"}, {6, "7-3.parquet"}};

static tarn_raw_record raw_example(void) {
  tarn_raw_record r = {"7-00000001.wal", 1, 3, 8, 8, A23, 2};
  return r;
}
static tarn_parquet_record parquet_example(void) {
  tarn_parquet_record r = {NULL, 0, 7, 0, 28, 28, files, 2};
  return r;
}

/* LS-026, LS-033, LS-034, LS-003: the RAW example byte for byte, and back. Its 18 00
 * (file_type RAW) shows protobuf-c writes a proto2 optional whose has_ flag is set
 * even when the value is 0; the PARQUET example does the same with 40 00. */
static void raw_record(void **state) {
  (void)state;
  tarn_raw_record r = raw_example();
  tarn_buf b = TARN_BUF_INIT;
  assert_int_equal(tarn_entry_index_build_raw(&r, &b), 0);
  assert_int_equal(b.len, 61);
  tu_assert_hex(b.data, b.len, RAW61);
  tarn_entry_index ei;
  assert_int_equal(tarn_entry_index_decode(b.data, b.len, &ei), 0);
  assert_int_equal(ei.version, 3);
  assert_string_equal(ei.location, "7-00000001.wal");
  assert_int_equal(ei.file_type, TARN_FILE_RAW);
  assert_true(ei.has_index_type);
  assert_int_equal(ei.index_type, TARN_INDEX_COMPACT);
  assert_int_equal(ei.message_count, 3);
  assert_int_equal(ei.entry_size_bytes, 8);
  assert_true(ei.has_file_size);
  assert_int_equal(ei.file_size, 8);
  assert_true(ei.has_offset_in_file);
  assert_int_equal(ei.offset_in_file, -1);
  assert_int_equal(ei.entry_count, 2);
  assert_true(ei.has_entry_offsets);
  assert_int_equal(ei.compression_type, TARN_COMPRESSION_FASTPFOR);
  assert_int_equal(ei.uncompressed_size, 8);
  tu_assert_hex(ei.compressed_payload, ei.compressed_payload_len, "00000002 00000000 00008182");
  assert_int_equal(ei.n_boundaries, 2);
  assert_int_equal(ei.boundaries[0], 2);
  assert_int_equal(ei.boundaries[1], 3);
  assert_int_equal(ei.n_extra, 0);
  assert_null(ei.file_index);
  /* LS-035: the boundaries derived from the section's record counts (2, 1) agree. */
  uint32_t from_section[2];
  assert_int_equal(tarn_entry_offsets_from_counts((const uint32_t[]){2, 1}, 2, from_section), 0);
  assert_memory_equal(from_section, ei.boundaries, sizeof from_section);
  /* re-encoding the decoded fields gives the same bytes */
  tarn_buf again = TARN_BUF_INIT;
  assert_int_equal(tarn_entry_index_encode(&ei, &again), 0);
  tu_assert_hex(again.data, again.len, RAW61);
  tarn_buf_free(&again);
  tarn_entry_index_free(&ei);

  /* LS-033: one entry carries no entry_offsets; a multi-section object is NORMAL */
  tarn_buf_reset(&b);
  static const uint32_t one[] = {3};
  r.boundaries = one, r.entry_count = 1, r.single_section = 0;
  assert_int_equal(tarn_entry_index_build_raw(&r, &b), 0);
  assert_int_equal(tarn_entry_index_decode(b.data, b.len, &ei), 0);
  assert_false(ei.has_entry_offsets);
  assert_null(ei.boundaries);
  assert_int_equal(ei.index_type, TARN_INDEX_NORMAL);
  assert_null(memchr(b.data, 0x52, b.len)); /* no field-10 tag at all */
  tarn_entry_index_free(&ei);
  tarn_buf_free(&b);
}

static void raw_builder_refusals(void **state) {
  (void)state;
  tarn_buf b = TARN_BUF_INIT;
  tarn_raw_record r = raw_example();
  static const uint32_t flat[] = {2, 2}, ends_wrong[] = {2, 4}, zero[] = {0, 3};
  r.boundaries = flat;
  assert_int_equal(tarn_entry_index_build_raw(&r, &b), TARN_EINVAL);
  r.boundaries = ends_wrong;
  assert_int_equal(tarn_entry_index_build_raw(&r, &b), TARN_EINVAL);
  r.boundaries = zero;
  assert_int_equal(tarn_entry_index_build_raw(&r, &b), TARN_EINVAL);
  r = raw_example(), r.location = "";
  assert_int_equal(tarn_entry_index_build_raw(&r, &b), TARN_EINVAL);
  r = raw_example(), r.message_count = (int64_t)1 << 31;
  assert_int_equal(tarn_entry_index_build_raw(&r, &b), TARN_ERANGE);
  r = raw_example(), r.file_size = 7; /* below the section's own payload */
  assert_int_equal(tarn_entry_index_build_raw(&r, &b), TARN_EINVAL);
  assert_int_equal(b.len, 0);
  tarn_buf_free(&b);
}

/* LS-027, LS-066: the PARQUET example byte for byte, and back. */
static void parquet_record(void **state) {
  (void)state;
  tarn_parquet_record r = parquet_example();
  tarn_buf b = TARN_BUF_INIT;
  unsigned warn = 99;
  assert_int_equal(tarn_entry_index_build_parquet(&r, &b, &warn), 0);
  assert_int_equal(warn, 0);
  assert_int_equal(b.len, 123);
  tu_assert_hex(b.data, b.len, PARQUET123);
  tarn_entry_index ei;
  assert_int_equal(tarn_entry_index_decode(b.data, b.len, &ei), 0);
  assert_int_equal(ei.version, 3);
  assert_string_equal(ei.location, "7-0.parquet");
  assert_int_equal(ei.file_type, TARN_FILE_PARQUET);
  assert_int_equal(ei.index_type, TARN_INDEX_COMPACT);
  assert_int_equal(ei.message_count, 7);
  assert_int_equal(ei.entry_size_bytes, 28);
  assert_int_equal(ei.file_size, 28);
  assert_true(ei.has_offset_in_file);
  assert_int_equal(ei.offset_in_file, 0);
  assert_int_equal(ei.entry_count, 1);
  assert_false(ei.has_entry_offsets);
  assert_int_equal(ei.n_extra, 1);
  assert_string_equal(ei.extra[0].key, "CompactedObjectFileIndex");
  assert_string_equal(ei.extra[0].value, FI_B64);
  assert_string_equal(ei.file_index, FI_B64);
  tarn_file_index fi;
  assert_int_equal(tarn_file_index_decode_base64(ei.file_index, strlen(ei.file_index), &fi), 0);
  assert_int_equal(fi.n, 2);
  assert_string_equal(fi.files[1].name, "7-3.parquet");
  tarn_file_index_free(&fi);
  tarn_buf again = TARN_BUF_INIT;
  assert_int_equal(tarn_entry_index_encode(&ei, &again), 0);
  tu_assert_hex(again.data, again.len, PARQUET123);
  tarn_buf_free(&again);
  tarn_entry_index_free(&ei);

  /* LS-066 through the builder: the last file must end at e-1 */
  tarn_buf_reset(&b);
  r.e = 8;
  assert_int_equal(tarn_entry_index_build_parquet(&r, &b, &warn), TARN_EINVAL);
  assert_int_equal(b.len, 0);
  tarn_buf_free(&b);
}

/* LS-032: entry_size_bytes of 2^31 or more is representable but flagged. */
static void parquet_large_size(void **state) {
  (void)state;
  tarn_parquet_record r = parquet_example();
  r.c_s = 100, r.c_e = 100 + ((int64_t)1 << 31), r.file_size = (int64_t)1 << 31;
  tarn_buf b = TARN_BUF_INIT;
  unsigned warn = 0;
  assert_int_equal(tarn_entry_index_build_parquet(&r, &b, &warn), 0);
  assert_int_equal(warn, TARN_EI_WARN_SIZE_2_31);
  tarn_entry_index ei;
  assert_int_equal(tarn_entry_index_decode(b.data, b.len, &ei), 0);
  assert_int_equal(ei.entry_size_bytes, (int64_t)1 << 31);
  tarn_entry_index_free(&ei);
  tarn_buf_reset(&b);
  r.c_e = 100 + ((int64_t)1 << 31) - 1;
  assert_int_equal(tarn_entry_index_build_parquet(&r, &b, &warn), 0);
  assert_int_equal(warn, 0);
  tarn_buf_free(&b);
}

/* Decodes d, re-encodes it after mutate(), and expects the decoder's verdict. */
static void expect_refused(tarn_entry_index *d, int code, const char *msg) {
  tarn_buf b = TARN_BUF_INIT;
  assert_int_equal(tarn_entry_index_encode(d, &b), 0);
  tarn_entry_index ei;
  int rc = tarn_entry_index_decode(b.data, b.len, &ei);
  if (rc != code)
    fail_msg("got %s (%s), want %s", tarn_errname(rc), tarn_errmsg(), tarn_errname(code));
  if (!strstr(tarn_errmsg(), msg))
    fail_msg("message '%s' lacks '%s'", tarn_errmsg(), msg);
  assert_non_null(strstr(tarn_errmsg(), "entry index: byte "));
  tarn_buf_free(&b);
}

static tarn_entry_index decoded(const char *hex) {
  size_t len;
  uint8_t *p = tu_hex(hex, &len);
  tarn_entry_index ei;
  assert_int_equal(tarn_entry_index_decode(p, len, &ei), 0);
  free(p);
  return ei;
}

static void field_refusals(void **state) {
  (void)state;
  tarn_entry_index ei = decoded(RAW61);
  ei.version = 2; /* LS-002 */
  expect_refused(&ei, TARN_EVERSION, "byte 0: version 2 is not 3");
  ei.version = 3;
  ei.file_type = 2;
  expect_refused(&ei, TARN_ECORRUPT, "byte 18: file_type 2 is neither");
  ei.file_type = 0;
  ei.message_count = 0;
  expect_refused(&ei, TARN_ECORRUPT, "message_count below 1");
  ei.message_count = 3;
  ei.entry_size_bytes = -1;
  expect_refused(&ei, TARN_ECORRUPT, "entry_size_bytes is negative");
  ei.entry_size_bytes = 8;
  char *loc = ei.location;
  ei.location = NULL;
  expect_refused(&ei, TARN_ECORRUPT, "a RAW record needs a location");
  ei.location = loc;
  ei.compression_type = TARN_COMPRESSION_ZSTD; /* LS-034 */
  expect_refused(&ei, TARN_ECORRUPT, "compression_type 2 is not FastPFOR");
  ei.compression_type = TARN_COMPRESSION_FASTPFOR;
  ei.message_count = 4; /* boundaries end at 3 */
  expect_refused(&ei, TARN_ECORRUPT, "entry_offsets end at 3, message_count is 4");
  ei.message_count = 2; /* boundary 3 above message_count */
  expect_refused(&ei, TARN_ECORRUPT, "at most message_count 2");
  ei.message_count = 3;
  ei.entry_count = 3;
  expect_refused(&ei, TARN_ECORRUPT, "entry_offsets hold 2 values, entry_count is 3");
  ei.entry_count = 0;
  expect_refused(&ei, TARN_ECORRUPT, "entry_count below 1");
  ei.entry_count = 2;
  /* not strictly increasing: A = [2, 2] */
  uint8_t *keep = ei.compressed_payload;
  uint8_t flat[] = {0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0x80, 0x82};
  ei.compressed_payload = flat;
  expect_refused(&ei, TARN_ECORRUPT, "boundary 1 (2) is not above the previous (2)");
  /* a broken payload: the codec's message, placed at the payload's byte */
  flat[7] = 1;
  expect_refused(&ei, TARN_ECORRUPT, "byte 49: compressed_payload: entry offsets: byte 4: marker");
  ei.compressed_payload = keep;

  /* LS-029, LS-030 */
  tarn_extra_data x[2] = {{"k", "v"}, {"k", "w"}};
  ei.extra = x, ei.n_extra = 2;
  expect_refused(&ei, TARN_ECORRUPT,
                 "byte 69: extraData pair 1 repeats the key 'k' of pair 0 (LS-030)");
  x[1].key = NULL;
  expect_refused(&ei, TARN_ECORRUPT, "extraData pair 1 has no key (LS-029)");
  x[1].key = "j", x[1].value = NULL;
  expect_refused(&ei, TARN_ECORRUPT, "extraData pair 1 has no value (LS-029)");
  ei.extra = NULL, ei.n_extra = 0;
  tarn_entry_index_free(&ei);

  /* LS-031: a PARQUET record without its file index is not read */
  ei = decoded(PARQUET123);
  ei.extra[0].key[0] = 'X';
  expect_refused(&ei, TARN_EUNSUPPORTED, "PARQUET record without a CompactedObjectFileIndex");
  ei.extra[0].key[0] = 'C';
  /* LS-028: index_type never decides: PARQUET with NORMAL is still PARQUET */
  ei.index_type = TARN_INDEX_NORMAL;
  assert_int_equal(tarn_entry_index_read_kind(&ei), TARN_FILE_PARQUET);
  tarn_entry_index_free(&ei);
  ei = decoded(RAW61); /* RAW marked COMPACT is still read from the WAL object */
  assert_int_equal(ei.index_type, TARN_INDEX_COMPACT);
  assert_int_equal(tarn_entry_index_read_kind(&ei), TARN_FILE_RAW);
  tarn_entry_index_free(&ei);
}

static void expect_bytes_refused(const char *hex, int code, const char *msg) {
  size_t len;
  uint8_t *p = tu_hex(hex, &len);
  tarn_entry_index ei;
  int rc = tarn_entry_index_decode(p, len, &ei);
  if (rc != code)
    fail_msg("%s: got %s (%s)", hex, tarn_errname(rc), tarn_errmsg());
  if (!strstr(tarn_errmsg(), msg))
    fail_msg("message '%s' lacks '%s'", tarn_errmsg(), msg);
  free(p);
}

static void wire_refusals(void **state) {
  (void)state;
  expect_bytes_refused("", TARN_ECORRUPT, "byte 0: version (field 1) absent");
  expect_bytes_refused("0803 1800 2803 3008 4802", TARN_ECORRUPT, "RAW record needs a location");
  expect_bytes_refused("0803 120161 2803 3008 4801", TARN_ECORRUPT,
                       "byte 11: file_type (field 3) absent");
  expect_bytes_refused("0803 120161 1800 3008 4801", TARN_ECORRUPT, "message_count absent");
  expect_bytes_refused("0803 120161 1800 2803 4801", TARN_ECORRUPT, "entry_size_bytes absent");
  expect_bytes_refused("0803 120161 1800 2803 3008", TARN_ECORRUPT, "entry_count absent");
  expect_bytes_refused("0802 120161 1800 2803 3008 4801", TARN_EVERSION,
                       "byte 0: version 2 is not 3 (LS-002)");
  expect_bytes_refused("0803 120361 0062 1800 2803 3008 4801", TARN_ECORRUPT,
                       "byte 5: string field 2 contains a NUL");
  expect_bytes_refused("0803 1205 61", TARN_ECORRUPT,
                       "byte 4: length-delimited field needs 5 bytes, 1 left");
  expect_bytes_refused("0803 08", TARN_ECORRUPT, "byte 3: varint field: varint truncated");
  expect_bytes_refused("0a03 616263", TARN_ECORRUPT, "byte 0: field 1 has wire type 2, expected 0");
  expect_bytes_refused("0803 0b 0c", TARN_ECORRUPT, "byte 2: field 1 has wire type 3");
  expect_bytes_refused("0803 00", TARN_ECORRUPT, "byte 2: field number 0");
  expect_bytes_refused("0803 120161 1800 2803 3008 4801 5a04 0a01 0000", TARN_ECORRUPT,
                       "string field 1 contains a NUL");
  expect_bytes_refused("0803 120161 1800 2803 3008 4802 5204 0a02 0801", TARN_ECORRUPT,
                       "field 1 has wire type 2, expected 0");
  /* unknown fields are skipped, as protobuf requires */
  size_t len;
  uint8_t *p = tu_hex("0803 120161 1800 2803 3008 4801 f807 05 8201 0178", &len);
  tarn_entry_index ei;
  assert_int_equal(tarn_entry_index_decode(p, len, &ei), 0);
  assert_int_equal(ei.entry_count, 1);
  tarn_entry_index_free(&ei);
  free(p);
  /* every prefix of both examples: an error or a value, never a crash */
  const char *ex[] = {RAW61, PARQUET123};
  for (int k = 0; k < 2; k++) {
    p = tu_hex(ex[k], &len);
    for (size_t n = 0; n < len; n++) {
      int rc = tarn_entry_index_decode(p, n, &ei);
      if (rc == 0)
        tarn_entry_index_free(&ei);
      else
        assert_non_null(strstr(tarn_errmsg(), "entry index: byte "));
    }
    free(p);
  }
}

/* Appendix C, §4.9 */
static void legacy_values(void **state) {
  (void)state;
  const char *v1 = "00000000000000000002-00000000000000000005-7-00000001.wal-0";
  const char *v2 = "00000000000000000002-00000000000000000005-7-00000001.wal-0-RAW";
  assert_int_equal(strlen(v1), 58);
  assert_int_equal(strlen(v2), 62);
  tarn_legacy_index_value v;
  for (int k = 0; k < 2; k++) {
    const char *s = k ? v2 : v1;
    assert_int_equal(tarn_index_value_detect_version((const uint8_t *)s, strlen(s)), k + 1);
    assert_int_equal(tarn_legacy_index_value_parse((const uint8_t *)s, strlen(s), &v), 0);
    assert_int_equal(v.version, k + 1);
    assert_int_equal(v.message_count, 2);
    assert_int_equal(v.entry_size_bytes, 5);
    assert_string_equal(v.location, "7-00000001.wal"); /* a location may contain '-' */
    assert_int_equal(v.entry_id, 0);
    assert_int_equal(v.has_file_type, k);
    tarn_buf b = TARN_BUF_INIT;
    assert_int_equal(tarn_legacy_index_value_encode(&v, &b), 0);
    assert_int_equal(b.len, strlen(s));
    assert_memory_equal(b.data, s, b.len);
    tarn_buf_free(&b);
    tarn_legacy_index_value_free(&v);
  }
  const char *pq = "00000000000000000007-00000000000000000028-a-b-c.parquet-12-PARQUET";
  assert_int_equal(tarn_legacy_index_value_parse((const uint8_t *)pq, strlen(pq), &v), 0);
  assert_int_equal(v.file_type, TARN_FILE_PARQUET);
  assert_int_equal(v.entry_id, 12);
  assert_string_equal(v.location, "a-b-c.parquet");
  tarn_legacy_index_value_free(&v);

  size_t len;
  uint8_t *p = tu_hex(RAW61, &len);
  assert_int_equal(tarn_index_value_detect_version(p, len), 3);
  p[1] = 2;
  assert_int_equal(tarn_index_value_detect_version(p, len), TARN_ECORRUPT);
  free(p);
  assert_int_equal(tarn_index_value_detect_version((const uint8_t *)"x", 1), TARN_ECORRUPT);
  assert_non_null(strstr(tarn_errmsg(), "index value: byte 0: begins with 0x78"));
  assert_int_equal(tarn_index_value_detect_version((const uint8_t *)"", 0), TARN_ECORRUPT);

  const char *bad[] = {
      "0000000000000000000x-00000000000000000005-7-00000001.wal-0",
      "00000000000000000002+00000000000000000005-7-00000001.wal-0",
      "00000000000000000002-00000000000000000005+7-00000001.wal-0",
      "00000000000000000002-00000000000000000005-7-00000001.wal-",
      "00000000000000000002-00000000000000000005-7-00000001.wal-x",
      "00000000000000000002-00000000000000000005--0",
      "00000000000000000002-00000000000000000005-nodash",
      "00000000000000000002-00000000000000000005-wal-0-RAWX",
      "00000000000000000002-00000000000000000005-wal-0-PARQUET-RAW",
      "99999999999999999999-00000000000000000005-7-00000001.wal-0",
      "00000000000000000002-00000000000000000005-7",
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    if (tarn_legacy_index_value_parse((const uint8_t *)bad[i], strlen(bad[i]), &v) != TARN_ECORRUPT)
      fail_msg("accepted '%s'", bad[i]);
    assert_non_null(strstr(tarn_errmsg(), "legacy index value: byte "));
  }
  assert_int_equal(tarn_legacy_index_value_parse((const uint8_t *)bad[0], strlen(bad[0]), &v),
                   TARN_ECORRUPT);
  assert_non_null(strstr(tarn_errmsg(), "byte 19: message_count: 0x78 is not a decimal digit"));
  const uint8_t nul[] = "00000000000000000002-00000000000000000005-7\0-00000001.wal-0";
  assert_int_equal(tarn_legacy_index_value_parse(nul, sizeof nul - 1, &v), TARN_ECORRUPT);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(raw_record),     cmocka_unit_test(raw_builder_refusals),
      cmocka_unit_test(parquet_record), cmocka_unit_test(parquet_large_size),
      cmocka_unit_test(field_refusals), cmocka_unit_test(wire_refusals),
      cmocka_unit_test(legacy_values),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
