/* WAL objects: the spec's 31-byte example, every reader check, section order and
 * payload placement, randomized builder round trips, index-only decoding, and
 * the legacy layout of Appendix C. */
#include "testutil.h"

#include <stdlib.h>
#include <string.h>

#include "tarn/buf.h"
#include "tarn/error.h"
#include "tarn/wal.h"

#define EX31 "00000013 00000003 00000000 00000007 02000502 05030101 02030405 060708"

/* Decodes hex and expects failure code with a message containing want. */
static void expect_fail(const char *hex, int code, const char *want) {
  size_t n;
  uint8_t *p = tu_hex(hex, &n);
  tarn_wal w;
  int rc = tarn_wal_decode(p, n, &w);
  if (rc != code || !strstr(tarn_errmsg(), want))
    fail_msg("%s: got %d '%s', want %d '%s'", hex, rc, tarn_errmsg(), code, want);
  assert_int_equal(w.section_count, 0);
  free(p);
}

/* LS-018, LS-017: the spec's example decodes field by field and the builder,
 * given those fields, writes the same 31 bytes. */
static void example_31_bytes(void **state) {
  size_t n;
  uint8_t *obj = tu_hex(EX31, &n);
  assert_int_equal(n, 31);
  assert_int_equal(tarn_wal_detect_version(obj, n), TARN_WAL_VERSION);
  tarn_wal w;
  assert_int_equal(tarn_wal_decode(obj, n, &w), 0);
  assert_int_equal(w.version, 3);
  assert_int_equal(w.index_version, 3);
  assert_int_equal(w.index_length, 19);
  assert_int_equal(w.payload_region_offset, 23);
  assert_int_equal(w.payload_region_size, 8);
  assert_int_equal(w.section_count, 1);
  const tarn_wal_section *s = tarn_wal_find(&w, 7);
  assert_non_null(s);
  assert_null(tarn_wal_find(&w, 8));
  assert_int_equal(s->index_pos, 8);
  assert_int_equal(s->entry_count, 2);
  assert_int_equal(s->record_total, 3);
  assert_int_equal(s->payload_total, 8);
  assert_int_equal(s->entries[0].payload_offset, 0);
  assert_int_equal(s->entries[0].payload_size, 5);
  assert_int_equal(s->entries[0].record_count, 2);
  assert_int_equal(s->entries[0].payload_pos, 23);
  assert_int_equal(s->entries[0].index_pos, 17);
  assert_ptr_equal(s->entries[0].payload, obj + 23); /* zero-copy */
  assert_int_equal(s->entries[1].payload_offset, 5);
  assert_int_equal(s->entries[1].payload_size, 3);
  assert_int_equal(s->entries[1].record_count, 1);
  assert_int_equal(s->entries[1].payload_pos, 28);
  tu_assert_hex(s->entries[1].payload, 3, "060708");

  tarn_wal_builder b;
  tarn_wal_builder_init(&b);
  for (size_t i = 0; i < s->entry_count; i++)
    assert_int_equal(tarn_wal_builder_add(&b, s->log_id, s->entries[i].payload,
                                          s->entries[i].payload_size, s->entries[i].record_count),
                     0);
  tarn_buf out = TARN_BUF_INIT;
  assert_int_equal(tarn_wal_builder_finish(&b, &out), 0);
  tu_assert_hex(out.data, out.len, EX31);
  assert_int_equal(out.len, 31);
  /* The totals the writer's sequenced put and RAW EntryIndex take: d1 = 3, d2 = 8, A = [2, 3]. */
  assert_int_equal(b.section_count, 1);
  assert_int_equal(b.sections[0].log_id, 7);
  assert_int_equal(b.sections[0].entry_count, 2);
  assert_int_equal(b.sections[0].record_total, 3);
  assert_int_equal(b.sections[0].payload_total, 8);
  assert_int_equal(b.sections[0].bounds[0], 2);
  assert_int_equal(b.sections[0].bounds[1], 3);
  assert_int_equal(b.index_length, 19);
  assert_int_equal(b.payload_region_size, 8);
  tarn_buf_free(&out);
  tarn_wal_builder_free(&b);
  tarn_wal_free(&w);
  free(obj);
}

/* A reader that fetches the head first, then one section's payloads by range. */
static void index_only_decoding(void **state) {
  size_t n;
  uint8_t *obj = tu_hex(EX31, &n);
  uint64_t head = 0;
  assert_int_equal(tarn_wal_head_length(obj, TARN_WAL_PROBE_LEN, n, &head), 0);
  assert_int_equal(head, 23);
  tarn_wal w;
  assert_int_equal(tarn_wal_decode_index(obj, (size_t)head, n, &w), 0);
  assert_false(w.has_payloads);
  assert_int_equal(w.payload_region_size, 8);
  const tarn_wal_section *s = tarn_wal_find(&w, 7);
  assert_non_null(s);
  assert_null(s->entries[0].payload);
  assert_int_equal(s->entries[1].payload_pos, 28);
  assert_int_equal(s->entries[1].payload_size, 3);
  tarn_wal_free(&w);
  /* Too few head bytes is the caller's error, not corruption. */
  assert_int_equal(tarn_wal_decode_index(obj, 22, n, &w), TARN_EINVAL);
  /* The object size bounds the payloads even without them: LS-022 */
  assert_int_equal(tarn_wal_decode_index(obj, 23, 30, &w), TARN_ECORRUPT);
  assert_non_null(strstr(tarn_errmsg(), "wal object: byte 20: payload of log 7 entry 1"));
  /* Fewer bytes than the header is the caller's error too. */
  assert_int_equal(tarn_wal_head_length(obj, 4, n, &head), TARN_EINVAL);
  assert_int_equal(tarn_wal_decode_index(obj, 7, n, &w), TARN_EINVAL);
  /* A head length beyond the object is refused from the probe alone. */
  assert_int_equal(tarn_wal_head_length(obj, 8, 22, &head), TARN_ECORRUPT);
  free(obj);
}

static void reader_checks(void **state) {
  /* LS-002: index_version must be 3. */
  expect_fail("00000013 00000002 00000000 00000007 02000502 05030101 02030405 060708",
              TARN_EVERSION, "wal object: byte 4: index_version 2 is not 3");
  /* index_length below 4, beyond the object, or above int32. */
  expect_fail("00000003 00000003", TARN_ECORRUPT, "byte 0: index_length 3 is less than 4");
  expect_fail("00000020 00000003 00000000 00000007 02000502 05030101 02030405 060708",
              TARN_ECORRUPT, "byte 0: index_length 32 exceeds the 27 bytes");
  expect_fail("80000000 00000003 00000000 00000007", TARN_ECORRUPT, "byte 0: index_length");
  expect_fail("000000", TARN_ECORRUPT, "byte 0: 3 bytes cannot hold");
  /* LS-019: a varint32 of six bytes, and one above 2^31-1. */
  expect_fail("00000018 00000003 00000000 00000007 02808080 80800005 02050301 01020304 05060708",
              TARN_ECORRUPT, "wal object: byte 17: payload_offset: varint longer than 5 bytes");
  expect_fail("00000017 00000003 00000000 00000007 02000580 80808008 05030101 02030405 060708",
              TARN_ECORRUPT, "wal object: byte 19: record_count: 2147483648 exceeds 2147483647");
  /* LS-016: entry_count 0 and record_count 0. */
  expect_fail("0000000d 00000003 00000000 00000007 00", TARN_ECORRUPT,
              "byte 16: entry_count of log 7 is 0");
  expect_fail("00000013 00000003 00000000 00000007 02000500 05030101 02030405 060708",
              TARN_ECORRUPT, "byte 19: record_count of log 7 entry 0 is 0");
  /* LS-022: a payload reaching past the region (entry 1 at [5, 9) of 8 bytes). */
  expect_fail("00000013 00000003 00000000 00000007 02000502 05040101 02030405 060708",
              TARN_ECORRUPT, "byte 20: payload of log 7 entry 1 ([5, 9)) lies outside");
  /* An entry_count the index region cannot hold. */
  expect_fail("00000013 00000003 00000000 00000007 03000502 05030101 02030405 060708",
              TARN_ECORRUPT, "byte 16: entry_count 3 needs at least 9 bytes, 6 left");
  /* Sections consume the index region exactly: one byte short, one byte over. */
  expect_fail("00000012 00000003 00000000 00000007 02000502 050301 01020304 05060708",
              TARN_ECORRUPT, "byte 16: entry_count 2 needs at least 6 bytes, 5 left");
  expect_fail("00000010 00000003 00000000 00000007 01800085 0002 01020304 05", TARN_ECORRUPT,
              "byte 20: payload_size: varint truncated");
  expect_fail("00000014 00000003 00000000 00000007 02000502 05030100 01020304 05060708",
              TARN_ECORRUPT, "byte 23: log_id needs 8 bytes, 1 left");
  /* No section at all. */
  expect_fail("00000004 00000003", TARN_ECORRUPT, "byte 8: the index region holds no log section");
  /* log_id above 2^63-1 cannot have index keys. */
  expect_fail("00000013 00000003 80000000 00000007 02000502 05030101 02030405 060708",
              TARN_ECORRUPT, "byte 8: log_id 9223372036854775815 exceeds 2^63-1");
  /* LS-020: log 7 in two sections; the second (byte 16) is named. */
  expect_fail("0000001c 00000003 00000000 00000007 01000501 00000000 00000007 01050301"
              " 01020304 05060708",
              TARN_ECORRUPT, "byte 20: log_id 7 has a second log section (the first is at byte 8)");
}

/* Every prefix and every one-byte change of the example either decodes or is
 * refused; with ASan this is the no-overread check. */
static void truncations_and_mutations(void **state) {
  size_t n;
  uint8_t *obj = tu_hex(EX31, &n);
  tarn_wal w;
  for (size_t k = 0; k < n; k++) {
    uint8_t *cut = malloc(k ? k : 1);
    memcpy(cut, obj, k);
    assert_true(tarn_wal_decode(cut, k, &w) < 0);
    free(cut);
  }
  for (size_t i = 0; i < n; i++)
    for (int v = 0; v < 256; v++) {
      uint8_t *m = malloc(n);
      memcpy(m, obj, n);
      m[i] = (uint8_t)v;
      if (tarn_wal_decode(m, n, &w) == 0) {
        for (size_t s = 0; s < w.section_count; s++)
          for (size_t e = 0; e < w.sections[s].entry_count; e++) {
            const tarn_wal_entry *en = &w.sections[s].entries[e];
            assert_true(en->payload_pos + en->payload_size <= n);
            assert_true(en->payload_pos >= w.payload_region_offset);
          }
        tarn_wal_free(&w);
      } else {
        assert_int_equal(w.section_count, 0);
      }
      free(m);
    }
  free(obj);
}

/* LS-023, LS-024: sections in descending log order, payloads not adjacent, not
 * in section order, with a gap and a shared region. */
static void order_and_placement(void **state) {
  /* index: version; log 9: 2 entries (off 6 size 2 rc 1), (off 0 size 3 rc 4);
   *        log 3: 1 entry (off 3 size 1 rc 2)
   * index_length = 4 + (8+1+6) + (8+1+3) = 31; payload region: aa bb cc | dd | ee ff | 11 22 */
  const char *hex = "0000001f 00000003"
                    "00000000 00000009 02 040201 000304"
                    "00000000 00000003 01 030102"
                    "aabbccdd eeff1122";
  size_t n;
  uint8_t *obj = tu_hex(hex, &n);
  tarn_wal w;
  assert_int_equal(tarn_wal_decode(obj, n, &w), 0);
  assert_int_equal(w.section_count, 2);
  const tarn_wal_section *s3 = tarn_wal_find(&w, 3), *s9 = tarn_wal_find(&w, 9);
  assert_non_null(s3);
  assert_non_null(s9);
  assert_ptr_equal(s9, &w.sections[0]); /* object order kept */
  assert_int_equal(s9->entry_count, 2);
  tu_assert_hex(s9->entries[0].payload, s9->entries[0].payload_size, "eeff");
  tu_assert_hex(s9->entries[1].payload, s9->entries[1].payload_size, "aabbcc");
  assert_int_equal(s9->record_total, 5);
  assert_int_equal(s9->payload_total, 5);
  assert_int_equal(s3->entry_count, 1);
  tu_assert_hex(s3->entries[0].payload, 1, "dd");
  assert_int_equal(s3->entries[0].record_count, 2);
  assert_int_equal(s3->index_pos, 23);
  tarn_wal_free(&w);
  free(obj);
}

static void builder_refusals(void **state) {
  static const uint8_t pay[4] = {1, 2, 3, 4};
  tarn_wal_builder b;
  tarn_wal_builder_init(&b);
  tarn_buf out = TARN_BUF_INIT;
  assert_int_equal(tarn_wal_builder_finish(&b, &out), TARN_EINVAL);      /* empty object */
  assert_int_equal(tarn_wal_builder_add(&b, 1, pay, 4, 0), TARN_EINVAL); /* LS-016 */
  assert_int_equal(tarn_wal_builder_add(&b, 1ull << 63, pay, 4, 1), TARN_EINVAL);
  /* LS-019: values that do not fit a varint32. Payloads are held by pointer
   * and only read at finish, so sizes can be claimed without the memory. */
  assert_int_equal(tarn_wal_builder_add(&b, 1, pay, 4, 0x80000000u), TARN_ERANGE);
  assert_int_equal(tarn_wal_builder_add(&b, 1, pay, (size_t)1 << 31, 1), TARN_ERANGE);
  assert_int_equal(tarn_wal_builder_add(&b, 1, pay, 0x7fffffff, 1), 0);
  assert_int_equal(tarn_wal_builder_add(&b, 2, pay, 1, 1), 0);           /* offset 2^31-1: fits */
  assert_int_equal(tarn_wal_builder_add(&b, 1, pay, 1, 1), TARN_ERANGE); /* offset 2^31 */
  tarn_wal_builder_reset(&b);
  assert_int_equal(b.section_count, 0);
  assert_int_equal(tarn_wal_builder_add(&b, 5, pay, 4, 1), 0);
  assert_int_equal(tarn_wal_builder_finish(&b, &out), 0);
  tu_assert_hex(out.data, out.len, "00000010 00000003 00000000 00000005 01000401 01020304");
  tarn_buf_free(&out);
  tarn_wal_builder_free(&b);
}

/* LS-017, LS-020, LS-021, LS-023: random interleavings of many logs round-trip,
 * whole and from the head alone. */
static void randomized_round_trips(void **state) {
  uint64_t rng = 42;
  uint8_t *pool = malloc(1 << 16);
  for (int i = 0; i < (1 << 16); i++)
    pool[i] = (uint8_t)tu_rand(&rng);
  tarn_wal_builder b;
  tarn_wal_builder_init(&b);
  tarn_buf out = TARN_BUF_INIT;
  for (int round = 0; round < 200; round++) {
    int nlogs = 1 + (int)(tu_rand(&rng) % (round < 100 ? 5 : 300));
    int nents = 1 + (int)(tu_rand(&rng) % 600);
    uint64_t *logs = malloc(sizeof *logs * (size_t)nlogs);
    for (int l = 0; l < nlogs; l++) /* distinct: log IDs of every size, small ones too */
      logs[l] = (l % 3 == 0 ? tu_rand(&rng) >> 10 : tu_rand(&rng) % 100000) * 512 + (uint64_t)l;
    struct ref {
      int log;
      size_t off, len;
      uint32_t rc;
    } *refs = malloc(sizeof *refs * (size_t)nents);
    for (int i = 0; i < nents; i++) {
      refs[i].log = (int)(tu_rand(&rng) % (uint64_t)nlogs);
      refs[i].len = tu_rand(&rng) % (i % 50 == 0 ? 20000 : 300);
      refs[i].off = tu_rand(&rng) % ((1 << 16) - refs[i].len + 1);
      uint64_t r = tu_rand(&rng);
      refs[i].rc = (uint32_t)(r % 4 == 0 ? 1 + (r >> 33) % 0x7fffffff : 1 + r % 200);
      assert_int_equal(
          tarn_wal_builder_add(&b, logs[refs[i].log], pool + refs[i].off, refs[i].len, refs[i].rc),
          0);
    }
    tarn_buf_reset(&out);
    assert_int_equal(tarn_wal_builder_finish(&b, &out), 0);
    tarn_wal w, h;
    assert_int_equal(tarn_wal_decode(out.data, out.len, &w), 0);
    uint64_t head;
    assert_int_equal(tarn_wal_head_length(out.data, 8, out.len, &head), 0);
    assert_int_equal(head, 4 + b.index_length);
    assert_int_equal(tarn_wal_decode_index(out.data, (size_t)head, out.len, &h), 0);
    assert_int_equal(w.section_count, b.section_count);
    assert_int_equal(w.entry_total, (size_t)nents);
    assert_int_equal(w.payload_region_size, b.payload_region_size);
    uint64_t expect_off = 0;
    size_t *seen = calloc((size_t)nlogs, sizeof *seen);
    for (int i = 0; i < nents; i++) {
      const tarn_wal_section *s = tarn_wal_find(&w, logs[refs[i].log]);
      const tarn_wal_section *hs = tarn_wal_find(&h, logs[refs[i].log]);
      assert_non_null(s);
      assert_non_null(hs);
      const tarn_wal_entry *e = &s->entries[seen[refs[i].log]];
      const tarn_wal_entry *he = &hs->entries[seen[refs[i].log]++];
      assert_int_equal(e->payload_size, refs[i].len);
      assert_int_equal(e->record_count, refs[i].rc);
      assert_int_equal(e->payload_offset, expect_off); /* payloads in the order added */
      assert_memory_equal(e->payload, pool + refs[i].off, refs[i].len);
      assert_null(he->payload);
      assert_int_equal(he->payload_pos, e->payload_pos);
      assert_int_equal(he->record_count, e->record_count);
      expect_off += refs[i].len;
    }
    for (size_t s = 0; s < b.section_count; s++) {
      const tarn_wal_built_section *bs = &b.sections[s];
      const tarn_wal_section *ws = tarn_wal_find(&w, bs->log_id);
      assert_ptr_equal(ws, &w.sections[s]); /* sections in order of first appearance */
      assert_int_equal(ws->entry_count, bs->entry_count);
      assert_int_equal(ws->record_total, bs->record_total);
      assert_int_equal(ws->payload_total, bs->payload_total);
      uint64_t acc = 0;
      for (size_t e = 0; e < ws->entry_count; e++) {
        acc += ws->entries[e].record_count;
        assert_int_equal(bs->bounds[e], acc);
      }
      assert_int_equal(acc, bs->record_total);
    }
    free(seen);
    tarn_wal_free(&w);
    tarn_wal_free(&h);
    tarn_wal_builder_reset(&b);
    free(refs);
    free(logs);
  }
  tarn_buf_free(&out);
  tarn_wal_builder_free(&b);
  free(pool);
}

#define LEGACY80                                                                                   \
  "00000000 00000040 00000000 00000007 00000000 00000000 00000000 00000000 00000000 00000005"      \
  " 00000000 00000007 00000000 00000001 00000000 00000005 00000000 00000003 01020304 05060708"
#define LEGACY80_SWAPPED                                                                           \
  "00000000 00000040 00000000 00000007 00000000 00000001 00000000 00000005 00000000 00000003"      \
  " 00000000 00000007 00000000 00000000 00000000 00000000 00000000 00000005 01020304 05060708"

/* Appendix C, tables-and-vectors §4.9: the 80-byte legacy object, in either tuple order. */
static void legacy_80_bytes(void **state) {
  const char *vectors[2] = {LEGACY80, LEGACY80_SWAPPED};
  for (int k = 0; k < 2; k++) {
    size_t n;
    uint8_t *obj = tu_hex(vectors[k], &n);
    assert_int_equal(n, 80);
    assert_int_equal(tarn_wal_detect_version(obj, n), TARN_WAL_LEGACY);
    tarn_wal w;
    assert_int_equal(tarn_wal_decode(obj, n, &w), 0);
    assert_int_equal(w.version, TARN_WAL_LEGACY);
    assert_int_equal(w.index_length, 64);
    assert_int_equal(w.payload_region_offset, 72);
    assert_int_equal(w.payload_region_size, 8);
    assert_int_equal(w.section_count, 1);
    const tarn_wal_section *s = tarn_wal_find(&w, 7);
    assert_non_null(s);
    assert_int_equal(s->entry_count, 2);
    assert_int_equal(s->payload_total, 8);
    assert_int_equal(s->entries[0].entry_id, 0);
    assert_int_equal(s->entries[1].entry_id, 1);
    tu_assert_hex(s->entries[0].payload, s->entries[0].payload_size, "0102030405");
    tu_assert_hex(s->entries[1].payload, s->entries[1].payload_size, "060708");
    assert_int_equal(s->entries[1].payload_pos, 77);
    assert_int_equal(s->entries[0].index_pos, k == 0 ? 8 : 40);
    tarn_wal_free(&w);
    uint64_t head;
    assert_int_equal(tarn_wal_head_length(obj, 8, n, &head), 0);
    assert_int_equal(head, 72);
    assert_int_equal(tarn_wal_decode_index(obj, 72, n, &w), 0);
    assert_null(tarn_wal_find(&w, 7)->entries[0].payload);
    tarn_wal_free(&w);
    free(obj);
  }
  expect_fail("00000000 00000041 00000000 00000007", TARN_ECORRUPT,
              "byte 0: legacy index_length 65 is not a multiple");
  expect_fail("00000000 00000000", TARN_ECORRUPT, "byte 0: legacy index region holds no entry");
  expect_fail("00000000 00000020 00000000 00000007 00000000 00000000 00000000 00000004"
              " 00000000 00000005 01020304 05060708",
              TARN_ECORRUPT, "byte 24: legacy payload [4, +5) lies outside the 8-byte");
  expect_fail("00000000 00000040 00000000 00000007 00000000 00000001 00000000 00000000"
              " 00000000 00000005 00000000 00000007 00000000 00000001 00000000 00000005"
              " 00000000 00000003 01020304 05060708",
              TARN_ECORRUPT, "legacy entry_id 1 of log 7 appears twice");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(example_31_bytes),       cmocka_unit_test(index_only_decoding),
      cmocka_unit_test(reader_checks),          cmocka_unit_test(truncations_and_mutations),
      cmocka_unit_test(order_and_placement),    cmocka_unit_test(builder_refusals),
      cmocka_unit_test(randomized_round_trips), cmocka_unit_test(legacy_80_bytes),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
