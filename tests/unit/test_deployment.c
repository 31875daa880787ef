/* Deployment config: flags > environment > HOME/tarn.json > HOME defaults. */
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tarn/deployment.h"
#include "tarn/error.h"

static void clear_env(void) {
  unsetenv("TARN_META");
  unsetenv("TARN_WAL");
  unsetenv("TARN_COMPACTED");
  unsetenv("TARN_HOME");
}

static void write_file(const char *dir, const char *text) {
  char path[1024];
  snprintf(path, sizeof path, "%s/%s", dir, TARN_DEPLOYMENT_CONFIG_FILE);
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fputs(text, f);
  fclose(f);
}

static void precedence(void **state) {
  clear_env();
  char *home = tu_tmpdir("deploy");
  tarn_deployment_strings st;
  /* Defaults under HOME. */
  tarn_deployment_config c = {.home = home};
  assert_int_equal(tarn_deployment_config_resolve(&c, &st), 0);
  char want[1024];
  snprintf(want, sizeof want, "sqlite:%s/meta.db", home);
  assert_string_equal(c.meta_uri, want);
  snprintf(want, sizeof want, "file://%s/compacted", home);
  assert_string_equal(c.compacted_uri, want);
  tarn_deployment_config_free(&st);
  /* The file fills what flags and environment leave unset. */
  write_file(home, "{\"meta\": \"mem:from-file\", \"wal\": \"file:///w\"}");
  setenv("TARN_WAL", "file:///from-env", 1);
  tarn_deployment_config c2 = {.home = home};
  assert_int_equal(tarn_deployment_config_resolve(&c2, &st), 0);
  assert_string_equal(c2.meta_uri, "mem:from-file");
  assert_string_equal(c2.wal_uri, "file:///from-env");
  snprintf(want, sizeof want, "file://%s/compacted", home);
  assert_string_equal(c2.compacted_uri, want);
  tarn_deployment_config_free(&st);
  tarn_deployment_config c3 = {.home = home, .meta_uri = "mem:flag"};
  assert_int_equal(tarn_deployment_config_resolve(&c3, &st), 0);
  assert_string_equal(c3.meta_uri, "mem:flag");
  tarn_deployment_config_free(&st);
  /* TARN_HOME names the home when no flag does. */
  setenv("TARN_HOME", home, 1);
  tarn_deployment_config c4 = {0};
  assert_int_equal(tarn_deployment_config_resolve(&c4, &st), 0);
  assert_string_equal(c4.meta_uri, "mem:from-file");
  tarn_deployment_config_free(&st);
  clear_env();
  tu_rmtree(home);
  free(home);
}

static void bad_files_are_refused(void **state) {
  clear_env();
  char *home = tu_tmpdir("deploy");
  const char *bad[] = {"",
                       "[]",
                       "{\"meta\": 3}",
                       "{\"other\": \"x\"}",
                       "{\"meta\": \"\"}",
                       "{\"meta\": \"a\", \"meta\": \"b\"}",
                       "{\"meta\": \"a\\u0000b\"}"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    write_file(home, bad[i]);
    tarn_deployment_strings st;
    tarn_deployment_config c = {.home = home};
    int rc = tarn_deployment_config_resolve(&c, &st);
    if (rc != TARN_ECORRUPT)
      fail_msg("case %zu: %d", i, rc);
    assert_non_null(strstr(tarn_errmsg(), TARN_DEPLOYMENT_CONFIG_FILE));
  }
  tu_rmtree(home);
  free(home);
}

static void save_is_create_only(void **state) {
  clear_env();
  char *home = tu_tmpdir("deploy");
  tarn_deployment_config c = {
      .home = home, .meta_uri = "mem:a", .wal_uri = "file:///w", .compacted_uri = "file:///c"};
  int written;
  assert_int_equal(tarn_deployment_config_save(&c, &written), 0);
  assert_int_equal(written, 1);
  c.meta_uri = "mem:b";
  assert_int_equal(tarn_deployment_config_save(&c, &written), 0);
  assert_int_equal(written, 0);
  tarn_deployment_strings st;
  tarn_deployment_config r = {.home = home};
  assert_int_equal(tarn_deployment_config_resolve(&r, &st), 0);
  assert_string_equal(r.meta_uri, "mem:a");
  assert_string_equal(r.wal_uri, "file:///w");
  assert_string_equal(r.compacted_uri, "file:///c");
  tarn_deployment_config_free(&st);
  tu_rmtree(home);
  free(home);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(precedence),
      cmocka_unit_test(bad_files_are_refused),
      cmocka_unit_test(save_is_create_only),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
