/* tarn_probe_objstore / tarn_probe_meta_uri without servers (issue 31,
 * "Stores that lie"): every safety property holds on mem: and sqlite:
 * (cas_linearizable and ephemeral_session included), and a mem: store whose
 * read right after a write returns other bytes fails read_after_write, unsafe.
 * The s3-only properties and the other lies are cli_test_probe's (the lying
 * proxy in front of radosgw). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tarn/error.h"
#include "tarn/objstore.h"
#include "tarn/probe.h"
#include "tarn/testing.h"
#include "testutil.h"

static const tarn_probe_result *find(const tarn_probe_report *rep, const char *name) {
  for (size_t i = 0; i < rep->n; i++)
    if (strcmp(rep->r[i].name, name) == 0)
      return &rep->r[i];
  fail_msg("no property %s", name);
  return NULL;
}

static void test_mem_holds(void **st) {
  (void)st;
  tarn_objstore *s;
  assert_int_equal(tarn_objstore_open("mem:probe-holds", &s), 0);
  tarn_probe_report rep;
  assert_int_equal(tarn_probe_objstore(s, &rep), 0);
  assert_false(rep.unsafe);
  static const char *const safe[] = {"create_only",  "read_after_write", "range_read",
                                     "list_order",   "list_complete",    "read_after_delete",
                                     "delete_absent"};
  for (size_t i = 0; i < sizeof safe / sizeof safe[0]; i++)
    assert_int_equal(find(&rep, safe[i])->verdict, TARN_PROBE_HOLDS);
  /* the s3-only ones say why they were not checked */
  assert_int_equal(find(&rep, "if_match")->verdict, TARN_PROBE_NOT_CHECKED);
  assert_int_equal(find(&rep, "throttling_503")->verdict, TARN_PROBE_NOT_CHECKED);
  /* and the scratch prefix is gone */
  tarn_objstore_listing l = {0};
  assert_int_equal(tarn_objstore_list(s, "", NULL, 10, &l), 0);
  assert_int_equal(l.n, 0);
  tarn_objstore_listing_free(&l);
  tarn_objstore_close(s);
}

/* A store whose GET right after a PUT returns other bytes (the first one
 * inverted; a body cut short is caught by the client itself)
 * fails read_after_write, unsafe; the other properties still hold. (mem:
 * cannot acknowledge a put it did not apply: the create_only lie is
 * cli_test_probe's, through the proxy's ignore-inm mode.) */
static void test_mem_damaged_read(void **st) {
  (void)st;
  tarn_objstore *s;
  assert_int_equal(tarn_objstore_open("mem:probe-lies", &s), 0);
  assert_int_equal(tarn_objstore_mem_fault(s, TARN_MEM_OP_GET, 1, 1, TARN_MEM_FAULT_CORRUPT, 0), 0);
  tarn_probe_report rep;
  assert_int_equal(tarn_probe_objstore(s, &rep), 0);
  assert_true(rep.unsafe);
  const tarn_probe_result *r = find(&rep, "read_after_write");
  assert_int_equal(r->verdict, TARN_PROBE_FAILS);
  assert_non_null(strstr(r->detail, "other bytes"));
  assert_int_equal(find(&rep, "create_only")->verdict, TARN_PROBE_HOLDS);
  assert_int_equal(find(&rep, "list_order")->verdict, TARN_PROBE_HOLDS);
  tarn_objstore_close(s);
}

static void test_sqlite_meta(void **st) {
  (void)st;
  char *dir = tu_tmpdir("probe"), uri[1024];
  snprintf(uri, sizeof uri, "sqlite:%s/m.db", dir);
  tarn_probe_report rep;
  assert_int_equal(tarn_probe_meta_uri(uri, &rep), 0);
  assert_false(rep.unsafe);
  for (size_t i = 0; i < rep.n; i++)
    assert_int_equal(rep.r[i].verdict, TARN_PROBE_HOLDS);
  assert_int_equal(find(&rep, "cas_linearizable")->verdict, TARN_PROBE_HOLDS);
  assert_int_equal(find(&rep, "ephemeral_session")->verdict, TARN_PROBE_HOLDS);
  tu_rmtree(dir);
  free(dir);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_mem_holds),
                                     cmocka_unit_test(test_mem_damaged_read),
                                     cmocka_unit_test(test_sqlite_meta)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
