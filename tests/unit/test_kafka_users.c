/* The public front door to the Kafka SASL users (tarn/kafka_users.h, what
 * `tarn kafka user` runs on): a user put is listed with its mechanisms,
 * replaced by a second put, gone after delete; bad arguments are TARN_EINVAL
 * naming what is wrong; the record holds no password.
 * ctest-variants: mem sqlite */
#include "testutil.h"

#include <string.h>

#include "tarn/error.h"
#include "tarn/kafka_users.h"
#include "tarn/meta.h"
#include "tu_log.h"

static void put_list_delete(void **state) {
  char *uri;
  tarn_meta *m = tu_meta_open((const char *)*state, &uri);
  assert_int_equal(tarn_kafka_sasl_mechanism_parse("plain"), TARN_KAFKA_SASL_PLAIN);
  assert_int_equal(tarn_kafka_sasl_mechanism_parse("scram-sha-256"), TARN_KAFKA_SASL_SCRAM_SHA_256);
  assert_int_equal(tarn_kafka_sasl_mechanism_parse("SCRAM-SHA-512"), 0);
  assert_int_equal(tarn_kafka_user_put(m, "bob", "secret", 6, TARN_KAFKA_SASL_PLAIN, 0), 0);
  assert_int_equal(tarn_kafka_user_put(m, "alice", "pw", 2,
                                       TARN_KAFKA_SASL_PLAIN | TARN_KAFKA_SASL_SCRAM_SHA_256,
                                       TARN_KAFKA_SCRAM_ITER_MIN),
                   0);
  tarn_kafka_user *u;
  size_t n;
  assert_int_equal(tarn_kafka_user_list(m, &u, &n), 0);
  assert_int_equal(n, 2);
  assert_string_equal(u[0].name, "alice");
  assert_int_equal(u[0].mechanisms, TARN_KAFKA_SASL_PLAIN | TARN_KAFKA_SASL_SCRAM_SHA_256);
  assert_string_equal(u[1].name, "bob");
  assert_int_equal(u[1].mechanisms, TARN_KAFKA_SASL_PLAIN);
  tarn_kafka_users_free(u, n);
  /* replaced */
  assert_int_equal(tarn_kafka_user_put(m, "bob", "other", 5, TARN_KAFKA_SASL_SCRAM_SHA_256, 0), 0);
  assert_int_equal(tarn_kafka_user_list(m, &u, &n), 0);
  assert_int_equal(n, 2);
  assert_int_equal(u[1].mechanisms, TARN_KAFKA_SASL_SCRAM_SHA_256);
  tarn_kafka_users_free(u, n);
  /* the store holds no password */
  tarn_meta_recs rs = {0};
  assert_int_equal(tarn_meta_scan(m, "kafka-users", "/users/", "/users/\xff", 0, 0, &rs), 0);
  assert_int_equal(rs.n, 2);
  for (size_t i = 0; i < rs.n; i++)
    for (size_t j = 0; j + 5 <= rs.v[i].value_len; j++)
      assert_true(memcmp(rs.v[i].value + j, "other", 5) && memcmp(rs.v[i].value + j, "secre", 5));
  tarn_meta_recs_free(&rs);
  assert_int_equal(tarn_kafka_user_delete(m, "bob"), 0);
  assert_int_equal(tarn_kafka_user_delete(m, "bob"), TARN_ENOTFOUND);
  assert_int_equal(tarn_kafka_user_list(m, &u, &n), 0);
  assert_int_equal(n, 1);
  tarn_kafka_users_free(u, n);
  tu_meta_done(m, uri);
}

static void expect_einval(int rc, const char *what) {
  assert_int_equal(rc, TARN_EINVAL);
  if (!strstr(tarn_errmsg(), what))
    fail_msg("\"%s\" not in: %s", what, tarn_errmsg());
}

static void bad_arguments(void **state) {
  char *uri;
  tarn_meta *m = tu_meta_open((const char *)*state, &uri);
  char big[TARN_KAFKA_USER_NAME_MAX + 2];
  memset(big, 'a', sizeof big - 1);
  big[sizeof big - 1] = 0;
  expect_einval(tarn_kafka_user_put(m, "", "pw", 2, TARN_KAFKA_SASL_PLAIN, 0), "1..255 bytes");
  expect_einval(tarn_kafka_user_put(m, big, "pw", 2, TARN_KAFKA_SASL_PLAIN, 0), "1..255 bytes");
  expect_einval(tarn_kafka_user_put(m, "u", "", 0, TARN_KAFKA_SASL_PLAIN, 0), "password is empty");
  expect_einval(tarn_kafka_user_put(m, "u", "pw", 2, 0, 0), "mechanisms 0x0");
  expect_einval(tarn_kafka_user_put(m, "u", "pw", 2, 4, 0), "mechanisms 0x4");
  expect_einval(tarn_kafka_user_put(m, "u", "pw", 2, TARN_KAFKA_SASL_PLAIN, 100), "100 iterations");
  tarn_kafka_user *u;
  size_t n;
  assert_int_equal(tarn_kafka_user_list(m, &u, &n), 0);
  assert_int_equal(n, 0);
  tarn_kafka_users_free(u, n);
  tu_meta_done(m, uri);
}

int main(int argc, char **argv) {
  const char *v = argc > 1 ? argv[1] : "mem";
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_prestate(put_list_delete, (void *)v),
      cmocka_unit_test_prestate(bad_arguments, (void *)v),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
