#include "testutil.h"

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "util/clock.h"

static int hv(int c) {
  if (c >= '0' && c <= '9')
    return c - '0';
  if (c >= 'a' && c <= 'f')
    return c - 'a' + 10;
  if (c >= 'A' && c <= 'F')
    return c - 'A' + 10;
  return -1;
}

uint8_t *tu_hex(const char *hex, size_t *len) {
  size_t n = strlen(hex);
  uint8_t *p = malloc(n / 2 + 1);
  assert_non_null(p);
  size_t k = 0;
  int hi = -1;
  for (size_t i = 0; i < n; i++) {
    if (hex[i] == ' ' || hex[i] == '\n')
      continue;
    int v = hv((unsigned char)hex[i]);
    assert_true(v >= 0);
    if (hi < 0)
      hi = v;
    else
      p[k++] = (uint8_t)(hi << 4 | v), hi = -1;
  }
  assert_true(hi < 0);
  *len = k;
  return p;
}

void tu_assert_hex(const uint8_t *p, size_t n, const char *hex) {
  size_t want_len;
  uint8_t *want = tu_hex(hex, &want_len);
  if (n != want_len || memcmp(p, want, n) != 0) {
    fprintf(stderr, "want: %s\ngot:  ", hex);
    for (size_t i = 0; i < n; i++)
      fprintf(stderr, "%s%02x", i && i % 4 == 0 ? " " : "", p[i]);
    fprintf(stderr, "\n");
    free(want);
    fail_msg("bytes differ (got %zu bytes, want %zu)", n, want_len);
  }
  free(want);
}

char *tu_tmpdir(const char *tag) {
  const char *t = getenv("TMPDIR");
  char tmpl[4096];
  snprintf(tmpl, sizeof tmpl, "%s/tarn-%s-XXXXXX", t && *t ? t : "/tmp", tag);
  char *d = mkdtemp(tmpl);
  assert_non_null(d);
  return strdup(d);
}

static int rm_one(const char *p, const struct stat *sb, int flag, struct FTW *ftw) {
  (void)sb, (void)flag, (void)ftw;
  return remove(p);
}

void tu_rmtree(const char *path) { nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS); }

uint64_t tu_rand(uint64_t *s) {
  if (*s == 0)
    *s = 1;
  *s ^= *s >> 12;
  *s ^= *s << 25;
  *s ^= *s >> 27;
  return *s * 0x2545F4914F6CDD1DULL;
}

int tu_in_ci(void) {
  const char *ci = getenv("CI");
  return ci && (strcmp(ci, "true") == 0 || strcmp(ci, "1") == 0);
}

const char *tu_env_required(const char *name) {
  const char *v = getenv(name);
  if ((!v || !*v) && tu_in_ci())
    fail_msg("%s is not set: CI must start the server this test needs", name);
  return v && *v ? v : NULL;
}

int64_t tu_skew;

int64_t tu_real_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}
static int64_t skew_now(void *arg) {
  (void)arg;
  return tu_real_ms() + tu_skew;
}
static int64_t skew_mono(void *arg) {
  (void)arg;
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}
static void skew_sleep(void *arg, int64_t ms) {
  (void)arg;
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000};
  nanosleep(&ts, NULL);
}
void tu_skew_clock(void) {
  tarn__clock_hooks h = {skew_now, skew_mono, skew_sleep, NULL};
  tarn__clock_set(&h);
}
