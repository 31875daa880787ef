/* The metrics registry and its Prometheus text rendering. */
#include "testutil.h"

#include <pthread.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tarn/error.h"
#include "tarn/metrics.h"

static char *render(void) {
  tarn_buf b = TARN_BUF_INIT;
  assert_int_equal(tarn_metrics_render(&b), 0);
  assert_int_equal(tarn_buf_putc(&b, 0), 0);
  return (char *)b.data;
}

/* Every line is a HELP, a TYPE or a sample of the exposition format 0.0.4, a
 * family's HELP and TYPE come once and before its samples, and every sample
 * belongs to the family last typed. */
static void assert_valid_exposition(const char *text) {
  regex_t help, type, sample;
  assert_int_equal(regcomp(&help, "^# HELP ([a-zA-Z_:][a-zA-Z0-9_:]*) .*$", REG_EXTENDED), 0);
  assert_int_equal(
      regcomp(&type, "^# TYPE ([a-zA-Z_:][a-zA-Z0-9_:]*) (counter|gauge|histogram)$", REG_EXTENDED),
      0);
  assert_int_equal(regcomp(&sample,
                           "^([a-zA-Z_:][a-zA-Z0-9_:]*)"
                           "(\\{([a-zA-Z_][a-zA-Z0-9_]*=\"([^\"\\\\\n]|\\\\[\\\\\"n])*\""
                           "(,[a-zA-Z_][a-zA-Z0-9_]*=\"([^\"\\\\\n]|\\\\[\\\\\"n])*\")*)\\})?"
                           " (-?[0-9.e+-]+|\\+Inf|NaN)$",
                           REG_EXTENDED),
                   0);
  char *copy = strdup(text), *save = NULL, typed[256] = "";
  char *seen = calloc(1, strlen(text) + 2);
  for (char *line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
    regmatch_t m[2];
    if (regexec(&help, line, 2, m, 0) == 0)
      continue;
    if (regexec(&type, line, 2, m, 0) == 0) {
      snprintf(typed, sizeof typed, "%.*s", (int)(m[1].rm_eo - m[1].rm_so), line + m[1].rm_so);
      char tag[300];
      snprintf(tag, sizeof tag, "|%s|", typed);
      assert_null(strstr(seen, tag)); /* one TYPE per family */
      strcat(seen, tag);
      continue;
    }
    if (regexec(&sample, line, 2, m, 0) != 0)
      fail_msg("not an exposition line: %s", line);
    assert_true(typed[0]);
    assert_int_equal(strncmp(line, typed, strlen(typed)), 0);
  }
  free(seen);
  free(copy);
  regfree(&help);
  regfree(&type);
  regfree(&sample);
}

static void counters_gauges_and_labels(void **state) {
  tarn_metrics_reset();
  tarn_metrics_inc("tarn_objstore_requests_total", 1, "op", "put", "backend", "file", NULL);
  tarn_metrics_inc("tarn_objstore_requests_total", 2, "op", "put", "backend", "file", NULL);
  tarn_metrics_inc("tarn_objstore_requests_total", 5, "op", "get", "backend", "file", NULL);
  tarn_metrics_set("tarn_serve_up", 1, NULL);
  tarn_metrics_add("tarn_compaction_tasks", 3, "state", "claimed", NULL);
  tarn_metrics_add("tarn_compaction_tasks", -1, "state", "claimed", NULL);
  /* a gauge update of a counter family is ignored */
  tarn_metrics_set("tarn_objstore_requests_total", 100, "op", "put", "backend", "file", NULL);
  assert_int_equal(
      tarn_metrics_value("tarn_objstore_requests_total", "op", "put", "backend", "file", NULL), 3);
  assert_int_equal(tarn_metrics_value("tarn_compaction_tasks", "state", "claimed", NULL), 2);
  assert_int_equal(tarn_metrics_value("tarn_nothing", NULL), 0);
  char *t = render();
  assert_valid_exposition(t);
  assert_non_null(strstr(t, "# HELP tarn_objstore_requests_total Object storage operations"));
  assert_non_null(strstr(t, "# TYPE tarn_objstore_requests_total counter\n"));
  assert_non_null(strstr(t, "tarn_objstore_requests_total{op=\"put\",backend=\"file\"} 3\n"));
  assert_non_null(strstr(t, "tarn_objstore_requests_total{op=\"get\",backend=\"file\"} 5\n"));
  assert_non_null(strstr(t, "# TYPE tarn_serve_up gauge\ntarn_serve_up 1\n"));
  assert_non_null(strstr(t, "tarn_compaction_tasks{state=\"claimed\"} 2\n"));
  /* families sorted by name */
  assert_true(strstr(t, "tarn_compaction_tasks") < strstr(t, "tarn_objstore_requests_total"));
  free(t);
}

static void label_values_are_escaped(void **state) {
  tarn_metrics_reset();
  assert_int_equal(tarn_metrics_describe("x_total", TARN_METRIC_COUNTER, "a \\ b\nc"), 0);
  assert_int_equal(tarn_metrics_describe("x_total", TARN_METRIC_GAUGE, "other"), TARN_EINVAL);
  assert_int_equal(tarn_metrics_describe("9bad", TARN_METRIC_GAUGE, "x"), TARN_EINVAL);
  tarn_metrics_inc("x_total", 1, "path", "a\"b\\c\nd", NULL);
  char *t = render();
  assert_valid_exposition(t);
  assert_non_null(strstr(t, "# HELP x_total a \\\\ b\\nc\n"));
  assert_non_null(strstr(t, "x_total{path=\"a\\\"b\\\\c\\nd\"} 1\n"));
  free(t);
}

static void histograms(void **state) {
  tarn_metrics_reset();
  tarn_metrics_observe("tarn_writer_stage_seconds", 0.0001, "stage", "object_put", NULL);
  tarn_metrics_observe("tarn_writer_stage_seconds", 0.3, "stage", "object_put", NULL);
  tarn_metrics_observe("tarn_writer_stage_seconds", 60, "stage", "object_put", NULL);
  char *t = render();
  assert_valid_exposition(t);
  assert_non_null(strstr(t, "# TYPE tarn_writer_stage_seconds histogram\n"));
  assert_non_null(
      strstr(t, "tarn_writer_stage_seconds_bucket{stage=\"object_put\",le=\"0.0005\"} 1\n"));
  assert_non_null(
      strstr(t, "tarn_writer_stage_seconds_bucket{stage=\"object_put\",le=\"0.25\"} 1\n"));
  assert_non_null(
      strstr(t, "tarn_writer_stage_seconds_bucket{stage=\"object_put\",le=\"0.5\"} 2\n"));
  assert_non_null(strstr(t, "tarn_writer_stage_seconds_bucket{stage=\"object_put\",le=\"5\"} 2\n"));
  assert_non_null(
      strstr(t, "tarn_writer_stage_seconds_bucket{stage=\"object_put\",le=\"+Inf\"} 3\n"));
  assert_non_null(strstr(t, "tarn_writer_stage_seconds_count{stage=\"object_put\"} 3\n"));
  assert_non_null(strstr(t, "tarn_writer_stage_seconds_sum{stage=\"object_put\"} 60.3001\n"));
  free(t);
}

/* Observations collected in a tarn_metrics_hist render exactly as the same
 * observations made one by one. */
static void batched_histograms_equal_single_observations(void **state) {
  static const double obs[] = {0, 0.0004, 0.0005, 0.0006, 0.002, 0.02, 0.3, 0.3, 1, 4.9, 60, 1e6};
  const size_t n = sizeof obs / sizeof obs[0];
  tarn_metrics_reset();
  for (size_t i = 0; i < n; i++)
    tarn_metrics_observe("h_seconds", obs[i], "way", "one", NULL);
  tarn_metrics_hist h;
  memset(&h, 0, sizeof h);
  for (size_t i = 0; i < n; i++)
    tarn_metrics_hist_add(&h, obs[i]);
  tarn_metrics_observe_hist("h_seconds", &h, "way", "many", NULL);
  tarn_metrics_hist empty;
  memset(&empty, 0, sizeof empty);
  tarn_metrics_observe_hist("h_seconds", &empty, "way", "none", NULL); /* creates nothing */
  char *t = render();
  assert_valid_exposition(t);
  assert_null(strstr(t, "way=\"none\""));
  /* every line of "one" appears with "many" instead */
  size_t lines = 0;
  for (char *p = t; (p = strstr(p, "way=\"one\"")) != NULL; p++) {
    char *bol = p;
    while (bol > t && bol[-1] != '\n')
      bol--;
    const char *eol = strchr(p, '\n'), *rest = p + strlen("way=\"one\"");
    char want[300];
    snprintf(want, sizeof want, "%.*sway=\"many\"%.*s\n", (int)(p - bol), bol, (int)(eol - rest),
             rest);
    assert_non_null(strstr(t, want));
    lines++;
  }
  assert_int_equal(lines, TARN_METRICS_BUCKETS + 1 + 2); /* buckets, +Inf, sum, count */
  assert_int_equal(tarn_metrics_value("h_seconds", "way", "many", NULL), (int64_t)n);
  free(t);
}

static void *bump(void *arg) {
  for (int i = 0; i < 20000; i++) {
    char lab[8];
    snprintf(lab, sizeof lab, "%d", i % 7);
    tarn_metrics_inc("race_total", 1, "k", lab, NULL);
  }
  return arg;
}

static void concurrent_increments_are_not_lost(void **state) {
  tarn_metrics_reset();
  pthread_t th[4];
  for (int i = 0; i < 4; i++)
    assert_int_equal(pthread_create(&th[i], NULL, bump, NULL), 0);
  for (int i = 0; i < 4; i++)
    pthread_join(th[i], NULL);
  int64_t sum = 0;
  for (int i = 0; i < 7; i++) {
    char lab[8];
    snprintf(lab, sizeof lab, "%d", i);
    sum += tarn_metrics_value("race_total", "k", lab, NULL);
  }
  assert_int_equal(sum, 80000);
  char *t = render();
  assert_valid_exposition(t);
  /* one series per label value: no duplicate created by racing first uses */
  size_t n = 0;
  for (const char *p = t; (p = strstr(p, "\nrace_total{")) != NULL; p++)
    n++;
  assert_int_equal(n, 7);
  free(t);
  tarn_metrics_reset();
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(counters_gauges_and_labels),
      cmocka_unit_test(label_values_are_escaped),
      cmocka_unit_test(histograms),
      cmocka_unit_test(batched_histograms_equal_single_observations),
      cmocka_unit_test(concurrent_increments_are_not_lost),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
