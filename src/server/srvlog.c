/* Structured logs on stderr (srvlog.h). */
#include "server/srvlog.h"

#include <jansson.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tarn/clock.h"

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static int fmt = TARN_SRV_LOG_TEXT, min = TARN_SRV_INFO;

void tarn_srv_log_setup(int format, int min_level) {
  fmt = format;
  min = min_level;
}

/* A value needs quoting in a text line when it has spaces, quotes or '='. */
static int needs_quotes(const char *v) {
  if (!*v)
    return 1;
  for (; *v; v++)
    if (*v == ' ' || *v == '"' || *v == '=' || *v == '\n' || *v == '\t' || *v == '\\')
      return 1;
  return 0;
}

void tarn_srv_logv(int level, const char *msg, const char *const *kv) {
  static const char *const names[] = {"debug", "info", "warn", "error"};
  static const char *const upper[] = {"DEBUG", "INFO", "WARN", "ERROR"};
  if (level < min || level < 0 || level > 3)
    return;
  /* The one clock (tarn/clock.h): under a hook, log lines carry its time. */
  int64_t now = tarn_clock_now_ms();
  time_t secs = (time_t)(now / 1000);
  struct tm tm;
  gmtime_r(&secs, &tm);
  char when[40];
  size_t n = strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%S", &tm);
  snprintf(when + n, sizeof when - n, ".%03dZ", (int)(now % 1000));
  if (fmt == TARN_SRV_LOG_JSON) {
    json_t *o = json_object();
    json_object_set_new(o, "ts", json_string(when));
    json_object_set_new(o, "level", json_string(names[level]));
    json_object_set_new(o, "msg", json_string(msg));
    for (size_t i = 0; kv[i]; i += 2) {
      const char *k = kv[i], *v = kv[i + 1];
      json_object_set_new(o, k, json_string(v ? v : ""));
    }
    char *s = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(o);
    pthread_mutex_lock(&mu);
    if (s)
      fprintf(stderr, "%s\n", s);
    fflush(stderr);
    pthread_mutex_unlock(&mu);
    free(s);
  } else {
    char line[4096];
    int len = snprintf(line, sizeof line, "%s %s %s", when, upper[level], msg);
    for (size_t i = 0; kv[i] && len < (int)sizeof line; i += 2) {
      const char *k = kv[i], *v = kv[i + 1];
      if (!v)
        v = "";
      if (needs_quotes(v)) {
        len += snprintf(line + len, sizeof line - (size_t)len, " %s=\"", k);
        for (; *v && len < (int)sizeof line - 3; v++) {
          if (*v == '"' || *v == '\\')
            line[len++] = '\\';
          line[len++] = *v == '\n' ? ' ' : *v;
        }
        if (len < (int)sizeof line - 1)
          line[len++] = '"';
        line[len < (int)sizeof line ? len : (int)sizeof line - 1] = 0;
      } else {
        len += snprintf(line + len, sizeof line - (size_t)len, " %s=%s", k, v);
      }
    }
    pthread_mutex_lock(&mu);
    fprintf(stderr, "%s\n", line);
    fflush(stderr);
    pthread_mutex_unlock(&mu);
  }
}

void tarn_srv_log(int level, const char *msg, ...) {
  const char *kv[2 * 32 + 1];
  size_t i = 0;
  va_list ap;
  va_start(ap, msg);
  for (const char *k; i + 2 < sizeof kv / sizeof *kv && (k = va_arg(ap, const char *)) != NULL;) {
    kv[i++] = k;
    kv[i++] = va_arg(ap, const char *);
  }
  va_end(ap);
  kv[i] = NULL;
  tarn_srv_logv(level, msg, kv);
}
