/* Catalog records (JSON) and stream identities. */
#include "testutil.h"

#include <stdlib.h>
#include <string.h>

#include "tarn/catalog_record.h"
#include "tarn/error.h"

static int dec(const char *s, tarn_catalog_record *r) {
  return tarn_catalog_record_decode((const uint8_t *)s, strlen(s), r);
}

/* Encode -> decode -> encode gives the same bytes and fields. */
static void roundtrip(const tarn_catalog_record *r) {
  tarn_buf a = TARN_BUF_INIT, b = TARN_BUF_INIT;
  assert_int_equal(tarn_catalog_record_encode(r, &a), 0);
  tarn_catalog_record d;
  assert_int_equal(tarn_catalog_record_decode(a.data, a.len, &d), 0);
  assert_int_equal(d.kind, r->kind);
  assert_int_equal(d.n_logs, r->n_logs);
  for (size_t i = 0; i < r->n_logs; i++)
    assert_int_equal(d.logs[i], r->logs[i]);
  assert_int_equal(tarn_catalog_record_encode(&d, &b), 0);
  assert_int_equal(a.len, b.len);
  assert_memory_equal(a.data, b.data, a.len);
  tarn_catalog_record_free(&d);
  tarn_buf_free(&a);
  tarn_buf_free(&b);
}

static void records_round_trip(void **state) {
  uint64_t logs[] = {1, 9223372036854775807ull, 3};
  tarn_stream_prop props[] = {{"lakestream.kafka.topic.name", "orders"}, {"a", "ström ✓"}};
  tarn_catalog_record s = {.kind = TARN_CATREC_STREAM,
                           .ns = "default",
                           .name = "orders",
                           .time_ms = 1700000000000,
                           .logs = logs,
                           .n_logs = 3,
                           .props = props,
                           .n_props = 2};
  roundtrip(&s);
  tarn_buf b = TARN_BUF_INIT;
  assert_int_equal(tarn_catalog_record_encode(&s, &b), 0);
  tarn_buf_putc(&b, 0);
  assert_string_equal((char *)b.data,
                      "{\"kind\":\"stream\",\"version\":1,\"namespace\":\"default\",\"name\":"
                      "\"orders\",\"state\":\"active\",\"created_ms\":1700000000000,\"logs\":[1,"
                      "9223372036854775807,3],\"properties\":{\"a\":\"str\xc3\xb6m \xe2\x9c\x93\","
                      "\"lakestream.kafka.topic.name\":\"orders\"}}");
  tarn_buf_free(&b);
  tarn_catalog_record t = {.kind = TARN_CATREC_TOMBSTONE, .ns = "n", .name = "x", .time_ms = 5};
  roundtrip(&t);
  tarn_catalog_record l = {
      .kind = TARN_CATREC_LOG, .ns = "n", .name = "x", .log_id = 77, .partition = 4};
  roundtrip(&l);
  tarn_catalog_record c = {.kind = TARN_CATREC_COUNTER, .next_log_id = 12};
  roundtrip(&c);
  tarn_catalog_record d = {.kind = TARN_CATREC_DEPLOYMENT, .time_ms = 1};
  roundtrip(&d);
}

static void decodes_and_sorts_properties(void **state) {
  tarn_catalog_record r;
  assert_int_equal(dec("{\"kind\":\"stream\",\"version\":1,\"namespace\":\"ns\",\"name\":\"n\","
                       "\"state\":\"dropping\",\"created_ms\":3,\"logs\":[4],"
                       "\"properties\":{\"z\":\"1\",\"b\":\"2\"}}",
                       &r),
                   0);
  assert_int_equal(r.state, TARN_STREAM_DROPPING);
  assert_string_equal(r.props[0].key, "b");
  assert_string_equal(r.props[1].key, "z");
  assert_int_equal(r.logs[0], 4);
  tarn_catalog_record_free(&r);
}

static void refuses_bad_records(void **state) {
  const char *bad[] = {
      "",
      "[]",
      "{\"kind\":\"nope\",\"version\":1}",
      "{\"kind\":\"log-id-counter\",\"version\":1}",                           /* missing */
      "{\"kind\":\"log-id-counter\",\"version\":1,\"next_log_id\":1,\"x\":1}", /* unknown */
      "{\"kind\":\"log-id-counter\",\"version\":1,\"next_log_id\":-1}",
      "{\"kind\":\"log-id-counter\",\"version\":1,\"next_log_id\":9223372036854775808}",
      "{\"kind\":\"log-id-counter\",\"version\":1,\"next_log_id\":1.5}",
      "{\"kind\":\"log-id-counter\",\"version\":1,\"next_log_id\":1,\"next_log_id\":2}",
      /* LS-093, LS-094 */
      "{\"kind\":\"tombstone\",\"version\":1,\"namespace\":\"a/b\",\"name\":\"n\","
      "\"dropped_ms\":1,\"logs\":[]}",
      "{\"kind\":\"tombstone\",\"version\":1,\"namespace\":\"a\",\"name\":\"n/x\","
      "\"dropped_ms\":1,\"logs\":[]}",
      "{\"kind\":\"tombstone\",\"version\":1,\"namespace\":\"a\",\"name\":\"\\u0007\","
      "\"dropped_ms\":1,\"logs\":[]}",
      "{\"kind\":\"stream\",\"version\":1,\"namespace\":\"ns\",\"name\":\"n\",\"state\":"
      "\"active\",\"created_ms\":3,\"logs\":[],\"properties\":{}}", /* no partition */
      "{\"kind\":\"stream\",\"version\":1,\"namespace\":\"ns\",\"name\":\"n\",\"state\":"
      "\"active\",\"created_ms\":3,\"logs\":[2,2],\"properties\":{}}", /* a log twice */
      "{\"kind\":\"stream\",\"version\":1,\"namespace\":\"ns\",\"name\":\"n\",\"state\":"
      "\"gone\",\"created_ms\":3,\"logs\":[2],\"properties\":{}}",
      "{\"kind\":\"stream\",\"version\":1,\"namespace\":\"ns\",\"name\":\"n\",\"state\":"
      "\"active\",\"created_ms\":3,\"logs\":[2],\"properties\":{\"k\":1}}",
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    tarn_catalog_record r;
    int rc = dec(bad[i], &r);
    if (rc != TARN_ECORRUPT)
      fail_msg("case %zu: %d (%s)", i, rc, bad[i]);
    assert_non_null(strstr(tarn_errmsg(), "catalog record: byte "));
  }
  tarn_catalog_record r;
  assert_int_equal(dec("{\"kind\":\"deployment\",\"version\":2,\"created_ms\":1}", &r),
                   TARN_EVERSION);
  /* Syntax errors name the byte where parsing stopped. */
  assert_int_equal(dec("{\"kind\":", &r), TARN_ECORRUPT);
  assert_non_null(strstr(tarn_errmsg(), "byte 8"));
}

/* LS-010, LS-011, LS-093, LS-094 */
static void identities(void **state) {
  assert_int_equal(tarn_stream_ident_check("default", "orders"), 0);
  assert_int_equal(tarn_stream_ident_check("ns", "str\xc3\xb6m-1.topic"), 0);
  assert_int_equal(tarn_stream_ident_check("a/b", "x"), TARN_EINVAL);
  assert_non_null(strstr(tarn_errmsg(), "'/'"));
  assert_int_equal(tarn_stream_ident_check("a", "x/y"), TARN_EINVAL);
  assert_int_equal(tarn_stream_ident_check("", "x"), TARN_EINVAL);
  assert_int_equal(tarn_stream_ident_check("a", ""), TARN_EINVAL);
  assert_int_equal(tarn_stream_ident_check("a", "tab\there"), TARN_EINVAL);
  assert_int_equal(tarn_stream_ident_check("a", "del\x7f"), TARN_EINVAL);
  assert_int_equal(tarn_stream_ident_check("a", "c1\xc2\x85"), TARN_EINVAL);
  assert_int_equal(tarn_stream_ident_check("a", "bad\xc3"), TARN_EINVAL);
  assert_int_equal(tarn_stream_ident_check("a", "over\xc0\xaf"), TARN_EINVAL);
  assert_int_equal(tarn_stream_ident_check("a", ".."), TARN_EINVAL);
  char longname[TARN_STREAM_NAME_MAX + 2];
  memset(longname, 'x', sizeof longname);
  longname[TARN_STREAM_NAME_MAX] = 0;
  assert_int_equal(tarn_stream_ident_check("a", longname), 0);
  longname[TARN_STREAM_NAME_MAX] = 'x', longname[TARN_STREAM_NAME_MAX + 1] = 0;
  assert_int_equal(tarn_stream_ident_check("a", longname), TARN_EINVAL);

  char *ns, *name;
  assert_int_equal(tarn_stream_ident_parse("orders", &ns, &name), 0);
  assert_string_equal(ns, "default");
  assert_string_equal(name, "orders");
  free(ns), free(name);
  assert_int_equal(tarn_stream_ident_parse("team/orders", &ns, &name), 0);
  assert_string_equal(ns, "team");
  assert_string_equal(name, "orders");
  free(ns), free(name);
  assert_int_equal(tarn_stream_ident_parse("a/b/c", &ns, &name), TARN_EINVAL);
  assert_null(ns);
  assert_int_equal(tarn_stream_ident_parse("/x", &ns, &name), TARN_EINVAL);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(records_round_trip),
      cmocka_unit_test(decodes_and_sorts_properties),
      cmocka_unit_test(refuses_bad_records),
      cmocka_unit_test(identities),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
