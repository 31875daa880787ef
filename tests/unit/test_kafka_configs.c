/* Kafka's topic configs (src/format/kafka_configs.c, issue 37 "Configs"): the
 * table is sorted and complete for lookup, every default passes its own
 * validator, and each kind of bad value is refused with Kafka's message
 * (retention.ms=banana, an unknown name, out of range, not a choice); good
 * values of each type pass. */
#include "testutil.h"

#include <string.h>

#include "tarn/error.h"
#include "tarn/kafka_configs.h"

static void table_sorted_and_defaults_valid(void **state) {
  (void)state;
  size_t n;
  const tarn_kafka_config_def *t = tarn_kafka_configs(&n);
  assert_true(n >= 30);
  for (size_t i = 0; i < n; i++) {
    if (i)
      assert_true(strcmp(t[i - 1].name, t[i].name) < 0);
    assert_ptr_equal(tarn_kafka_config_find(t[i].name), &t[i]);
    assert_non_null(t[i].note);
    assert_true(t[i].tarn == TARN_KAFKA_CONFIG_APPLIED || t[i].tarn == TARN_KAFKA_CONFIG_KEPT);
    /* "class" has no default value (a stream without a class) */
    if (strcmp(t[i].name, "class") != 0 && tarn_kafka_config_check(t[i].name, t[i].default_value))
      fail_msg("%s's default %s: %s", t[i].name, t[i].default_value, tarn_errmsg());
  }
  assert_null(tarn_kafka_config_find("retention"));
  assert_null(tarn_kafka_config_find("zzz"));
  assert_null(tarn_kafka_config_find(""));
}

static void refuses(const char *name, const char *value, const char *msg) {
  assert_int_equal(tarn_kafka_config_check(name, value), TARN_EINVAL);
  if (strcmp(tarn_errmsg(), msg) != 0)
    fail_msg("%s=%s: '%s', want '%s'", name, value, tarn_errmsg(), msg);
}

static void bad_values_refused_as_kafka(void **state) {
  (void)state;
  refuses("retention.ms", "banana",
          "Invalid value banana for configuration retention.ms: Not a number of type LONG");
  refuses("retention.ms", "-2",
          "Invalid value -2 for configuration retention.ms: Value must be at least -1");
  refuses("retention.ms", "99999999999999999999",
          "Invalid value 99999999999999999999 for configuration retention.ms: Not a number of "
          "type LONG");
  refuses("segment.bytes", "3000000000",
          "Invalid value 3000000000 for configuration segment.bytes: Not a number of type INT");
  refuses(
      "compression.lz4.level", "18",
      "Invalid value 18 for configuration compression.lz4.level: Value must be no more than 17");
  refuses("preallocate", "yes",
          "Invalid value yes for configuration preallocate: Expected value to be either true or "
          "false");
  refuses("min.cleanable.dirty.ratio", "1.5",
          "Invalid value 1.5 for configuration min.cleanable.dirty.ratio: Value must be no more "
          "than 1");
  refuses("min.cleanable.dirty.ratio", "half",
          "Invalid value half for configuration min.cleanable.dirty.ratio: Not a number of type "
          "DOUBLE");
  refuses("cleanup.policy", "delete,forever",
          "Invalid value delete,forever for configuration cleanup.policy: String must be one of: "
          "compact, delete");
  refuses("message.timestamp.type", "createtime",
          "Invalid value createtime for configuration message.timestamp.type: String must be one "
          "of: CreateTime, LogAppendTime");
  refuses("retention.msx", "1", "Unknown topic config name: retention.msx");
  refuses("tarn.kafka.batch.ms", "60001",
          "Invalid value 60001 for configuration tarn.kafka.batch.ms: Value must be no more than "
          "60000");
  refuses("max.message.bytes", "",
          "Invalid value  for configuration max.message.bytes: Not a "
          "number of type INT");
  refuses("class", "", "topic config class: 1..63 bytes");
  /* a long value is cut at 64 bytes: the name and the reason stay in the
   * bounded message (fuzz_kafka_config found them pushed out) */
  char longv[2000];
  memset(longv, ' ', sizeof longv - 1);
  longv[sizeof longv - 1] = 0;
  assert_int_equal(tarn_kafka_config_check("cleanup.policy", longv), TARN_EINVAL);
  assert_non_null(
      strstr(tarn_errmsg(), "... for configuration cleanup.policy: String must be one"));
}

static void good_values_pass(void **state) {
  (void)state;
  static const char *const ok[][2] = {
      {"retention.ms", "-1"},
      {"retention.ms", "5000"},
      {"retention.bytes", "-1"},
      {"cleanup.policy", "compact"},
      {"cleanup.policy", "compact, delete"},
      {"cleanup.policy", ""},
      {"compression.type", "zstd"},
      {"preallocate", "TRUE"},
      {"min.cleanable.dirty.ratio", "0.25"},
      {"segment.bytes", "14"},
      {"max.message.bytes", "2000"},
      {"tarn.kafka.batch.ms", "0"},
      {"class", "express"},
      {"follower.replication.throttled.replicas", "0:1,1:2"},
      {"compression.zstd.level", "-5"},
  };
  for (size_t i = 0; i < sizeof ok / sizeof *ok; i++)
    if (tarn_kafka_config_check(ok[i][0], ok[i][1]))
      fail_msg("%s=%s refused: %s", ok[i][0], ok[i][1], tarn_errmsg());
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(table_sorted_and_defaults_valid),
      cmocka_unit_test(bad_values_refused_as_kafka),
      cmocka_unit_test(good_values_pass),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
