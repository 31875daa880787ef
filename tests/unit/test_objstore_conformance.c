/* One conformance suite for every object-store backend: the same tests run
 * against file:// (a temporary directory), mem:, lat: (the latency wrapper
 * around file://, so it must keep the whole contract) and s3:// (TARN_TEST_S3_URI;
 * in CI a missing server fails the s3:// tests instead of skipping them).
 * Each test's name begins with the backend's scheme, so the output shows
 * which backend passed what. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <dirent.h>

#include "tarn/error.h"
#include "tarn/metrics.h"
#include "tarn/objstore.h"
#include "testutil.h"

typedef struct backend {
  const char *label; /* "file://", "mem:", "s3://", "lat:" */
  char *base;        /* URI of the backend's root for this run; NULL: not configured */
  char *tmpdir;      /* file:// only */
} backend;

static backend backends[4];
static backend *cur;
static char run_id[64];
static const char *cur_test;

/* A fresh, empty store for one test: the backend's root plus a per-run,
 * per-test subdirectory or prefix, so tests and runs never see each other. */
static tarn_objstore *open_fresh(void) {
  if (!cur->base) {
    tu_env_required("TARN_TEST_S3_URI");
    skip();
  }
  char uri[4096];
  const char *q = strchr(cur->base, '?');
  size_t bl = q ? (size_t)(q - cur->base) : strlen(cur->base);
  const char *sep = strcmp(cur->label, "mem:") == 0 ? "-" : "/";
  if (strcmp(cur->label, "s3://") == 0 && cur->base[bl - 1] == '/')
    sep = "";
  snprintf(uri, sizeof uri, "%.*s%s%s-%s%s", (int)bl, cur->base, sep, run_id, cur_test, q ? q : "");
  tarn_objstore *s = NULL;
  int rc = tarn_objstore_open(uri, &s);
  if (rc)
    fail_msg("%s: open %s: %s", cur->label, uri, tarn_errmsg());
  assert_string_equal(tarn_objstore_scheme(s), cur->label[0] == 'f'   ? "file"
                                               : cur->label[0] == 'm' ? "mem"
                                               : cur->label[0] == 'l' ? "lat"
                                                                      : "s3");
  return s;
}

/* file:// directly or under the lat: wrapper */
static int filelike(void) {
  return strcmp(cur->label, "file://") == 0 || strcmp(cur->label, "lat:") == 0;
}

#define OK(expr)                                                                                   \
  do {                                                                                             \
    int rc_ = (expr);                                                                              \
    if (rc_ != 0)                                                                                  \
      fail_msg("%s: %s -> %s: %s", cur->label, #expr, tarn_errname(rc_), tarn_errmsg());           \
  } while (0)
#define RC(want, expr)                                                                             \
  do {                                                                                             \
    int rc_ = (expr);                                                                              \
    if (rc_ != (want))                                                                             \
      fail_msg("%s: %s -> %s, want %s: %s", cur->label, #expr, tarn_errname(rc_),                  \
               tarn_errname(want), tarn_errmsg());                                                 \
  } while (0)

static void fill(uint8_t *p, size_t n, uint64_t seed) {
  for (size_t i = 0; i < n; i++)
    p[i] = (uint8_t)((seed * 131 + i * 7 + (i >> 9)) & 0xff);
}

static void assert_object(tarn_objstore *s, const char *name, const void *want, size_t n) {
  tarn_buf b = TARN_BUF_INIT;
  OK(tarn_objstore_get(s, name, &b));
  assert_int_equal(b.len, n);
  if (n)
    assert_memory_equal(b.data, want, n);
  uint64_t size = 0;
  OK(tarn_objstore_head(s, name, &size));
  assert_int_equal(size, n);
  tarn_buf_free(&b);
}

/* --- basic operations ------------------------------------------------------ */

static void t_put_get(void **st) {
  (void)st;
  tarn_objstore *s = open_fresh();
  uint8_t data[3000];
  fill(data, sizeof data, 1);
  OK(tarn_objstore_put(s, "one", data, sizeof data));
  assert_object(s, "one", data, sizeof data);
  OK(tarn_objstore_put(s, "dir/sub/two", data, 10));
  assert_object(s, "dir/sub/two", data, 10);
  OK(tarn_objstore_put(s, "empty", NULL, 0));
  assert_object(s, "empty", NULL, 0);
  tarn_objstore_close(s);
}

/* Write once: a second put of a name fails and leaves the first object. */
static void t_create_only(void **st) {
  (void)st;
  tarn_objstore *s = open_fresh();
  OK(tarn_objstore_put(s, "x", "first", 5));
  RC(TARN_EEXIST, tarn_objstore_put(s, "x", "second!", 7));
  RC(TARN_EEXIST, tarn_objstore_put(s, "x", "", 0));
  assert_object(s, "x", "first", 5);
  OK(tarn_objstore_put(s, "d/x", "a", 1));
  RC(TARN_EEXIST, tarn_objstore_put(s, "d/x", "b", 1));
  assert_object(s, "d/x", "a", 1);
  tarn_objstore_close(s);
}

static void t_missing(void **st) {
  (void)st;
  tarn_objstore *s = open_fresh();
  tarn_buf b = TARN_BUF_INIT;
  uint64_t size;
  char mem[8];
  size_t got = 99;
  RC(TARN_ENOTFOUND, tarn_objstore_get(s, "nope", &b));
  RC(TARN_ENOTFOUND, tarn_objstore_get_range(s, "nope", 0, 10, &b));
  RC(TARN_ENOTFOUND, tarn_objstore_head(s, "nope", &size));
  RC(TARN_ENOTFOUND, tarn_objstore_read(s, "nope", 0, mem, sizeof mem, &got));
  assert_int_equal(got, 0);
  RC(TARN_ENOTFOUND, tarn_objstore_head(s, "no/such/dir", &size));
  OK(tarn_objstore_put(s, "a/b", "x", 1));
  /* "a" exists only as a directory on file://: still no object */
  RC(TARN_ENOTFOUND, tarn_objstore_head(s, "a", &size));
  RC(TARN_ENOTFOUND, tarn_objstore_get(s, "a", &b));
  RC(TARN_ENOTFOUND, tarn_objstore_head(s, "a/b/c", &size));
  tarn_buf_free(&b);
  tarn_objstore_close(s);
}

static void t_delete_idempotent(void **st) {
  (void)st;
  tarn_objstore *s = open_fresh();
  uint64_t size;
  OK(tarn_objstore_put(s, "d/e", "abc", 3));
  OK(tarn_objstore_delete(s, "d/e"));
  RC(TARN_ENOTFOUND, tarn_objstore_head(s, "d/e", &size));
  OK(tarn_objstore_delete(s, "d/e"));         /* already gone */
  OK(tarn_objstore_delete(s, "never/there")); /* never existed */
  OK(tarn_objstore_delete(s, "d"));           /* only a "directory" */
  tarn_objstore_listing l;
  OK(tarn_objstore_list(s, "", NULL, 100, &l));
  assert_int_equal(l.n, 0);
  tarn_objstore_listing_free(&l);
  tarn_objstore_close(s);
}

/* --- names ----------------------------------------------------------------- */

static void t_names(void **st) {
  (void)st;
  tarn_objstore *s = open_fresh();
  static const char *bad[] = {"",       "/a",       "a/",   "a//b", ".",      "..",
                              "./a",    "a/./b",    "a/..", "../a", "a/../b", "/",
                              ".tmp-x", "a/.tmp-1", "//",   "a/b/"};
  tarn_buf b = TARN_BUF_INIT;
  uint64_t size;
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    RC(TARN_EINVAL, tarn_objstore_check_name(bad[i], strlen(bad[i])));
    RC(TARN_EINVAL, tarn_objstore_put(s, bad[i], "x", 1));
    RC(TARN_EINVAL, tarn_objstore_get(s, bad[i], &b));
    RC(TARN_EINVAL, tarn_objstore_head(s, bad[i], &size));
    RC(TARN_EINVAL, tarn_objstore_delete(s, bad[i]));
    tarn_objstore_upload *u;
    RC(TARN_EINVAL, tarn_objstore_put_begin(s, bad[i], &u));
    assert_true(strlen(tarn_errmsg()) > 0);
  }
  RC(TARN_EINVAL, tarn_objstore_put(s, NULL, "x", 1));
  RC(TARN_EINVAL, tarn_objstore_check_name("a\0b", 3));
  assert_non_null(strstr(tarn_errmsg(), "NUL"));
  /* 1024 bytes is the limit */
  char name[1100];
  for (size_t i = 0; i < sizeof name; i++)
    name[i] = i % 100 == 99 ? '/' : (char)('a' + i % 26);
  RC(0, tarn_objstore_check_name(name, 1024));
  RC(TARN_EINVAL, tarn_objstore_check_name(name, 1025));
  assert_non_null(strstr(tarn_errmsg(), "1024"));
  name[1025] = 0;
  RC(TARN_EINVAL, tarn_objstore_put(s, name, "x", 1));
  if (strcmp(cur->label, "s3://") != 0) {
    /* S3 counts the root's key prefix against its own 1024-byte limit */
    name[1024] = 0;
    OK(tarn_objstore_put(s, name, "long", 4));
    assert_object(s, name, "long", 4);
  }
  /* Names that are valid but awkward for paths and URLs */
  static const char *odd[] = {"..a",    "a..",    ".hidden",   "sp ace",  "p+q=r&s",
                              "pct%20", "ti~de",  "u\xc3\xbc", "q?x#y",   "semi;colon",
                              "star*",  "a/.tmp", "a/.tmpx",   "c,o:l@n", "b\\s"};
  for (size_t i = 0; i < sizeof odd / sizeof odd[0]; i++) {
    RC(0, tarn_objstore_check_name(odd[i], strlen(odd[i])));
    OK(tarn_objstore_put(s, odd[i], odd[i], strlen(odd[i])));
    assert_object(s, odd[i], odd[i], strlen(odd[i]));
  }
  tarn_objstore_listing l;
  OK(tarn_objstore_list(s, "", NULL, 1000, &l));
  size_t found = 0;
  for (size_t i = 0; i < l.n; i++)
    for (size_t j = 0; j < sizeof odd / sizeof odd[0]; j++)
      if (strcmp(l.names[i], odd[j]) == 0)
        found++;
  assert_int_equal(found, sizeof odd / sizeof odd[0]);
  tarn_objstore_listing_free(&l);
  tarn_buf_free(&b);
  tarn_objstore_close(s);
}

/* --- listing --------------------------------------------------------------- */

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Bytewise order puts '-' and '.' before '/', and '/' before '0': a walk of
 * directories must not list "a/..." before "a-b" or after "a0". */
static const char *const list_names[] = {
    "b",      "a-b",    "a/b/c/x",           "a0",  "ab/c", "A",   "a/b-c",
    "a/b0",   "z/y/x",  "\xc3\xa9t\xc3\xa9", "a/a", "aa",   "a.b", "a/b/c/d/e",
    "a/b/c0", "a/b.c/x"};
#define NLIST (sizeof list_names / sizeof list_names[0])

static void put_list_names(tarn_objstore *s, const char **sorted) {
  for (size_t i = 0; i < NLIST; i++) {
    OK(tarn_objstore_put(s, list_names[i], list_names[i], strlen(list_names[i])));
    sorted[i] = list_names[i];
  }
  qsort(sorted, NLIST, sizeof *sorted, cmp_str);
  sorted[NLIST] = NULL;
}

/* Listing is bytewise ordered, carries sizes, and never shows a name twice. */
static void t_list_order(void **st) {
  (void)st;
  tarn_objstore *s = open_fresh();
  const char *sorted[NLIST + 1];
  put_list_names(s, sorted);
  size_t k = NLIST;
  tarn_objstore_listing l;
  OK(tarn_objstore_list(s, "", NULL, 1000, &l));
  assert_int_equal(l.n, k);
  assert_false(l.truncated);
  for (size_t i = 0; i < k; i++) {
    assert_string_equal(l.names[i], sorted[i]);
    assert_int_equal(l.sizes[i], strlen(sorted[i]));
  }
  tarn_objstore_listing_free(&l);

  /* prefixes */
  static const char *prefixes[] = {"a", "a/", "a/b", "a/b/", "z", "zz", "\xc3", "b", "A"};
  for (size_t p = 0; p < sizeof prefixes / sizeof prefixes[0]; p++) {
    OK(tarn_objstore_list(s, prefixes[p], NULL, 1000, &l));
    size_t j = 0;
    for (size_t i = 0; i < k; i++)
      if (strncmp(sorted[i], prefixes[p], strlen(prefixes[p])) == 0) {
        assert_true(j < l.n);
        assert_string_equal(l.names[j], sorted[i]);
        j++;
      }
    assert_int_equal(l.n, j);
    tarn_objstore_listing_free(&l);
  }
  /* start-after that is not a name, with and without prefix */
  static const char *afters[] = {"a/", "a/b", "a+", "a/b/c/d", "zzz", "", "a/b/c/"};
  for (size_t p = 0; p < sizeof afters / sizeof afters[0]; p++)
    for (int withp = 0; withp < 2; withp++) {
      const char *pre = withp ? "a/" : "";
      OK(tarn_objstore_list(s, pre, afters[p], 1000, &l));
      size_t j = 0;
      for (size_t i = 0; i < k; i++)
        if (strcmp(sorted[i], afters[p]) > 0 && strncmp(sorted[i], pre, strlen(pre)) == 0) {
          assert_true(j < l.n);
          assert_string_equal(l.names[j], sorted[i]);
          j++;
        }
      assert_int_equal(l.n, j);
      tarn_objstore_listing_free(&l);
    }
  RC(TARN_EINVAL, tarn_objstore_list(s, "", NULL, 0, &l));
  /* A name that is also the "directory" of others: S3 and mem: hold both;
   * file:// cannot (a file and a directory of one name) and says so. */
  int rc = tarn_objstore_put(s, "a/b", "x", 1);
  if (filelike())
    RC(TARN_EUNSUPPORTED, rc);
  else
    OK(rc);
  rc = tarn_objstore_put(s, "b/c", "x", 1);
  if (filelike())
    RC(TARN_EUNSUPPORTED, rc);
  else
    OK(rc);
  tarn_objstore_close(s);
}

static void t_list_pages(void **st) {
  (void)st;
  tarn_objstore *s = open_fresh();
  char name[64];
  for (int i = 0; i < 23; i++) {
    snprintf(name, sizeof name, "p/%02d", (i * 7) % 23);
    OK(tarn_objstore_put(s, name, name, (size_t)i));
  }
  OK(tarn_objstore_put(s, "q", "q", 1));
  for (size_t page = 1; page <= 24; page += 5) {
    char after[64] = "";
    int seen = 0, pages = 0;
    for (;;) {
      tarn_objstore_listing l;
      OK(tarn_objstore_list(s, "p/", after, page, &l));
      pages++;
      assert_true(l.n <= page);
      for (size_t i = 0; i < l.n; i++) {
        snprintf(name, sizeof name, "p/%02d", seen);
        assert_string_equal(l.names[i], name);
        seen++;
      }
      int more = l.truncated;
      if (l.n)
        snprintf(after, sizeof after, "%s", l.names[l.n - 1]);
      assert_true(more ? l.n == page : 1);
      tarn_objstore_listing_free(&l);
      if (!more)
        break;
      assert_true(pages < 100);
    }
    assert_int_equal(seen, 23);
  }
  tarn_objstore_close(s);
}

/* --- range reads ----------------------------------------------------------- */

static void t_range(void **st) {
  (void)st;
  tarn_objstore *s = open_fresh();
  uint8_t data[1000];
  fill(data, sizeof data, 3);
  OK(tarn_objstore_put(s, "r", data, sizeof data));
  OK(tarn_objstore_put(s, "e", NULL, 0));
  tarn_buf b = TARN_BUF_INIT;
  struct {
    uint64_t off, len;
    size_t want_off, want_len;
  } cases[] = {{0, 1000, 0, 1000}, {0, 1, 0, 1},
               {999, 1, 999, 1},   {999, 10, 999, 1},
               {1000, 5, 1000, 0}, {1, 998, 1, 998},
               {0, 0, 0, 0},       {500, 0, 500, 0},
               {1000, 0, 1000, 0}, {17, UINT64_MAX, 17, 983},
               {0, 2000, 0, 1000}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    OK(tarn_objstore_get_range(s, "r", cases[i].off, cases[i].len, &b));
    assert_int_equal(b.len, cases[i].want_len);
    if (b.len)
      assert_memory_equal(b.data, data + cases[i].want_off, b.len);
  }
  RC(TARN_ERANGE, tarn_objstore_get_range(s, "r", 1001, 1, &b));
  RC(TARN_ERANGE, tarn_objstore_get_range(s, "r", UINT64_MAX, 1, &b));
  assert_int_equal(b.len, 0);
  OK(tarn_objstore_get_range(s, "e", 0, 10, &b));
  assert_int_equal(b.len, 0);
  RC(TARN_ERANGE, tarn_objstore_get_range(s, "e", 1, 10, &b));

  /* into the caller's memory */
  uint8_t mem[64];
  size_t got = 0;
  OK(tarn_objstore_read(s, "r", 10, mem, sizeof mem, &got));
  assert_int_equal(got, 64);
  assert_memory_equal(mem, data + 10, 64);
  OK(tarn_objstore_read(s, "r", 980, mem, sizeof mem, &got));
  assert_int_equal(got, 20);
  assert_memory_equal(mem, data + 980, 20);
  OK(tarn_objstore_read(s, "r", 1000, mem, sizeof mem, &got));
  assert_int_equal(got, 0);
  RC(TARN_ERANGE, tarn_objstore_read(s, "r", 1001, mem, sizeof mem, &got));
  tarn_buf_free(&b);
  tarn_objstore_close(s);
}

/* The dispatcher's HEAD requests so far on this backend. */
static int64_t heads_sent(tarn_objstore *s) {
  return tarn_metrics_value("tarn_objstore_requests_total", "op", "head", "backend",
                            tarn_objstore_scheme(s), NULL);
}

/* A range read reports the whole object's size, learned with the read itself:
 * full, partial, cut at the end, at the end, past it, and empty objects, and
 * no HEAD goes out for any of them. */
static void t_range_sized(void **st) {
  (void)st;
  tarn_objstore *s = open_fresh();
  uint8_t data[1000];
  fill(data, sizeof data, 5);
  OK(tarn_objstore_put(s, "r", data, sizeof data));
  OK(tarn_objstore_put(s, "e", NULL, 0));
  int64_t heads0 = heads_sent(s);
  tarn_buf b = TARN_BUF_INIT;
  struct {
    uint64_t off, len;
    size_t want_len;
  } cases[] = {{0, UINT64_MAX, 1000},
               {0, 1000, 1000},
               {0, 2000, 1000},
               {0, 10, 10},
               {17, 1, 1},
               {990, 10, 10},
               {995, 10, 5},
               {999, UINT64_MAX, 1},
               {1000, 5, 0},
               {1000, 0, 0},
               {0, 0, 0},
               {500, 0, 0}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    uint64_t size = 12345;
    OK(tarn_objstore_get_range_sized(s, "r", cases[i].off, cases[i].len, &b, &size));
    if (size != sizeof data || b.len != cases[i].want_len)
      fail_msg("%s: [%llu, +%llu): size %llu, %zu bytes; want 1000, %zu", cur->label,
               (unsigned long long)cases[i].off, (unsigned long long)cases[i].len,
               (unsigned long long)size, b.len, cases[i].want_len);
    if (b.len)
      assert_memory_equal(b.data, data + cases[i].off, b.len);
  }
  uint64_t size = 12345;
  RC(TARN_ERANGE, tarn_objstore_get_range_sized(s, "r", 1001, 1, &b, &size));
  RC(TARN_ERANGE, tarn_objstore_get_range_sized(s, "r", UINT64_MAX, UINT64_MAX, &b, &size));
  assert_int_equal(b.len, 0);
  /* the empty object */
  OK(tarn_objstore_get_range_sized(s, "e", 0, 10, &b, &size));
  assert_int_equal(size, 0);
  assert_int_equal(b.len, 0);
  size = 12345;
  OK(tarn_objstore_get_range_sized(s, "e", 0, UINT64_MAX, &b, &size));
  assert_int_equal(size, 0);
  RC(TARN_ERANGE, tarn_objstore_get_range_sized(s, "e", 1, 10, &b, &size));
  RC(TARN_ENOTFOUND, tarn_objstore_get_range_sized(s, "nope", 0, 10, &b, &size));
  /* without the out parameter it is tarn_objstore_get_range */
  OK(tarn_objstore_get_range_sized(s, "r", 5, 5, &b, NULL));
  assert_int_equal(b.len, 5);
  assert_memory_equal(b.data, data + 5, 5);
  if (heads_sent(s) != heads0)
    fail_msg("%s: %lld HEAD requests for sized range reads, want none", cur->label,
             (long long)(heads_sent(s) - heads0));
  tarn_buf_free(&b);
  tarn_objstore_close(s);
}

/* --- streaming puts -------------------------------------------------------- */

static void t_stream(void **st) {
  (void)st;
  tarn_objstore *s = open_fresh();
  size_t total = 11u << 20; /* more than two multipart parts on s3:// in this suite */
  uint8_t *data = malloc(total);
  assert_non_null(data);
  fill(data, total, 5);
  tarn_objstore_upload *u;
  OK(tarn_objstore_put_begin(s, "big/one", &u));
  uint64_t size;
  size_t off = 0, step = 1;
  while (off < total) {
    size_t n = step < total - off ? step : total - off;
    OK(tarn_objstore_put_write(u, data + off, n));
    off += n;
    step = step * 3 + 1;
    if (off > total / 2)
      RC(TARN_ENOTFOUND, tarn_objstore_head(s, "big/one", &size)); /* not visible yet */
  }
  OK(tarn_objstore_put_commit(u));
  assert_object(s, "big/one", data, total);
  tarn_buf b = TARN_BUF_INIT;
  OK(tarn_objstore_get_range(s, "big/one", (5u << 20) - 3, 7, &b));
  assert_memory_equal(b.data, data + (5u << 20) - 3, 7);

  /* commit is create-only too, small and large */
  OK(tarn_objstore_put_begin(s, "big/one", &u));
  OK(tarn_objstore_put_write(u, "tiny", 4));
  RC(TARN_EEXIST, tarn_objstore_put_commit(u));
  OK(tarn_objstore_put_begin(s, "big/one", &u));
  OK(tarn_objstore_put_write(u, data + 1, total - 1));
  RC(TARN_EEXIST, tarn_objstore_put_commit(u));
  assert_object(s, "big/one", data, total);

  /* abort leaves nothing */
  OK(tarn_objstore_put_begin(s, "big/two", &u));
  OK(tarn_objstore_put_write(u, data, 6u << 20));
  tarn_objstore_put_abort(u);
  RC(TARN_ENOTFOUND, tarn_objstore_head(s, "big/two", &size));
  /* an empty streamed object */
  OK(tarn_objstore_put_begin(s, "big/empty", &u));
  OK(tarn_objstore_put_commit(u));
  assert_object(s, "big/empty", NULL, 0);
  tarn_objstore_listing l;
  OK(tarn_objstore_list(s, "big/", NULL, 10, &l));
  assert_int_equal(l.n, 2);
  assert_string_equal(l.names[0], "big/empty");
  assert_string_equal(l.names[1], "big/one");
  tarn_objstore_listing_free(&l);
  tarn_buf_free(&b);
  free(data);
  tarn_objstore_close(s);
}

/* --- races: exactly one winner -------------------------------------------- */

#define RACERS 8

typedef struct racer {
  const char *uri;
  tarn_objstore *s;
  int id, rc;
  pthread_barrier_t *bar;
} racer;

static void *race_thread(void *arg) {
  racer *r = arg;
  char body[64];
  snprintf(body, sizeof body, "winner-%d", r->id);
  pthread_barrier_wait(r->bar);
  r->rc = tarn_objstore_put(r->s, "race/one", body, strlen(body));
  return NULL;
}

static void check_winner(tarn_objstore *s, const int *rcs, int n) {
  int winners = 0, w = -1;
  for (int i = 0; i < n; i++) {
    if (rcs[i] == 0)
      winners++, w = i;
    else if (rcs[i] != TARN_EEXIST)
      fail_msg("%s: racer %d: %s", cur->label, i, tarn_errname(rcs[i]));
  }
  assert_int_equal(winners, 1);
  char body[64];
  snprintf(body, sizeof body, "winner-%d", w);
  assert_object(s, "race/one", body, strlen(body));
  printf("%s: %d racers, one winner (%d)\n", cur->label, n, w);
}

static void t_race_threads(void **st) {
  (void)st;
  tarn_objstore *s = open_fresh();
  for (int round = 0; round < 3; round++) {
    if (round)
      OK(tarn_objstore_delete(s, "race/one"));
    pthread_barrier_t bar;
    pthread_barrier_init(&bar, NULL, RACERS);
    racer r[RACERS];
    pthread_t th[RACERS];
    int rcs[RACERS];
    for (int i = 0; i < RACERS; i++) {
      r[i] = (racer){NULL, s, i, 0, &bar};
      assert_int_equal(pthread_create(&th[i], NULL, race_thread, &r[i]), 0);
    }
    for (int i = 0; i < RACERS; i++)
      pthread_join(th[i], NULL), rcs[i] = r[i].rc;
    pthread_barrier_destroy(&bar);
    check_winner(s, rcs, RACERS);
  }
  tarn_objstore_close(s);
}

/* Separate processes, each with its own handle: file:// and s3:// only, as a
 * mem: store lives in one process. */
static void t_race_procs(void **st) {
  (void)st;
  if (strcmp(cur->label, "mem:") == 0) {
    printf("mem: a store lives in one process; cross-process race not applicable\n");
    skip();
  }
  tarn_objstore *s = open_fresh();
  int pipes[2];
  assert_int_equal(pipe(pipes), 0);
  pid_t pids[RACERS];
  fflush(NULL);
  for (int i = 0; i < RACERS; i++) {
    pids[i] = fork();
    assert_true(pids[i] >= 0);
    if (pids[i] == 0) {
      char c;
      close(pipes[1]);
      /* all children start their put when the parent closes the pipe */
      if (read(pipes[0], &c, 1) < 0)
        _exit(90);
      char body[64];
      snprintf(body, sizeof body, "winner-%d", i);
      int rc = tarn_objstore_put(s, "race/one", body, strlen(body));
      _exit(rc == 0 ? 0 : rc == TARN_EEXIST ? 1 : 2);
    }
  }
  close(pipes[0]);
  usleep(50000);
  close(pipes[1]);
  int rcs[RACERS];
  for (int i = 0; i < RACERS; i++) {
    int status;
    assert_int_equal(waitpid(pids[i], &status, 0), pids[i]);
    assert_true(WIFEXITED(status));
    int e = WEXITSTATUS(status);
    rcs[i] = e == 0 ? 0 : e == 1 ? TARN_EEXIST : TARN_EIO;
  }
  check_winner(s, rcs, RACERS);
  tarn_objstore_close(s);
}

/* --- crash safety (file://) ----------------------------------------------- */

#define CRASH_SIZE (4u << 20)

static void crash_child(const char *uri, int round) {
  tarn_objstore *s;
  if (tarn_objstore_open(uri, &s) != 0)
    _exit(3);
  uint8_t *data = malloc(CRASH_SIZE);
  char name[64];
  for (int i = 0;; i++) {
    fill(data, CRASH_SIZE, (uint64_t)(round * 1000 + i));
    snprintf(name, sizeof name, "c%d/obj-%d", round, i);
    tarn_objstore_upload *u;
    if (tarn_objstore_put_begin(s, name, &u) != 0)
      _exit(4);
    for (size_t off = 0; off < CRASH_SIZE; off += 65536)
      if (tarn_objstore_put_write(u, data + off, 65536) != 0)
        _exit(5);
    if (tarn_objstore_put_commit(u) != 0)
      _exit(6);
  }
}

/* A put killed at any moment leaves its name absent or complete, and its
 * temporary file never shows up in a listing. */
static void t_crash(void **st) {
  (void)st;
  if (strcmp(cur->label, "file://") != 0) {
    printf("%s: crash test applies to file:// only\n", cur->label);
    skip();
  }
  tarn_objstore *s = open_fresh();
  char uri[4096];
  snprintf(uri, sizeof uri, "%s/%s-%s", cur->base, run_id, cur_test);
  uint64_t seed = (uint64_t)time(NULL) ^ (uint64_t)getpid();
  uint8_t *want = malloc(CRASH_SIZE);
  tarn_buf b = TARN_BUF_INIT;
  int complete = 0, temps = 0;
  for (int round = 0; round < 6; round++) {
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0)
      crash_child(uri, round);
    usleep((useconds_t)(tu_rand(&seed) % 150000));
    kill(pid, SIGKILL);
    int status;
    waitpid(pid, &status, 0);
    assert_true(WIFSIGNALED(status));
    char name[64];
    for (int i = 0; i < 1000; i++) {
      snprintf(name, sizeof name, "c%d/obj-%d", round, i);
      int rc = tarn_objstore_get(s, name, &b);
      if (rc == TARN_ENOTFOUND)
        break; /* puts are sequential: every later name is absent too */
      OK(rc);
      fill(want, CRASH_SIZE, (uint64_t)(round * 1000 + i));
      assert_int_equal(b.len, CRASH_SIZE);
      assert_memory_equal(b.data, want, CRASH_SIZE);
      complete++;
    }
    char dir[4200];
    snprintf(dir, sizeof dir, "%s/c%d", uri + 7, round);
    DIR *d = opendir(dir);
    if (d) {
      struct dirent *de;
      while ((de = readdir(d)))
        temps += strncmp(de->d_name, ".tmp-", 5) == 0;
      closedir(d);
    }
  }
  tarn_objstore_listing l;
  OK(tarn_objstore_list(s, "", NULL, 10000, &l));
  assert_int_equal(l.n, (size_t)complete);
  for (size_t i = 0; i < l.n; i++) {
    assert_null(strstr(l.names[i], ".tmp-"));
    assert_int_equal(l.sizes[i], CRASH_SIZE);
  }
  printf("file://: 6 killed writers left %d complete objects and %d temporary files "
         "(none listed)\n",
         complete, temps);
  tarn_objstore_listing_free(&l);
  tarn_buf_free(&b);
  free(want);
  tarn_objstore_close(s);
}

/* --- URIs ------------------------------------------------------------------ */

static void t_uris(void **st) {
  (void)st;
  tarn_objstore *s = NULL;
  RC(TARN_EUNSUPPORTED, tarn_objstore_open("ftp://x/y", &s));
  RC(TARN_EINVAL, tarn_objstore_open("no-scheme", &s));
  RC(TARN_EINVAL, tarn_objstore_open("file://", &s));
  RC(TARN_EINVAL, tarn_objstore_open("file:relative", &s));
  RC(TARN_EINVAL, tarn_objstore_open("s3://", &s));
  RC(TARN_EINVAL, tarn_objstore_open(NULL, &s));
  assert_null(s);
  tarn_objstore *a, *b2;
  OK(tarn_objstore_open("mem:", &a));
  OK(tarn_objstore_open("mem:", &b2));
  OK(tarn_objstore_put(a, "x", "1", 1));
  uint64_t size;
  RC(TARN_ENOTFOUND, tarn_objstore_head(b2, "x", &size)); /* "mem:" is private */
  tarn_objstore_close(a);
  tarn_objstore_close(b2);
  char uri[128];
  snprintf(uri, sizeof uri, "mem:shared-%s", run_id);
  OK(tarn_objstore_open(uri, &a));
  OK(tarn_objstore_open(uri, &b2));
  OK(tarn_objstore_put(a, "x", "1", 1));
  OK(tarn_objstore_head(b2, "x", &size)); /* "mem:NAME" is shared */
  tarn_objstore_close(a);
  tarn_objstore_close(b2);
}

/* --- driver ---------------------------------------------------------------- */

typedef struct tcase {
  const char *name;
  void (*fn)(void **);
} tcase;

static const tcase cases[] = {
    {"put_get", t_put_get},
    {"create_only", t_create_only},
    {"missing", t_missing},
    {"delete_idempotent", t_delete_idempotent},
    {"names", t_names},
    {"list_order_prefix_start_after", t_list_order},
    {"list_pagination", t_list_pages},
    {"range_reads", t_range},
    {"range_reads_sized", t_range_sized},
    {"streaming_put", t_stream},
    {"race_threads_one_winner", t_race_threads},
    {"race_processes_one_winner", t_race_procs},
    {"crash_never_partial", t_crash},
};
#define NCASES (sizeof cases / sizeof cases[0])

static int setup(void **st) {
  (void)st;
  return 0;
}

static void *names_alloc[4][NCASES];

static int case_setup(void **st) {
  /* the test's short name is passed in the initial state */
  cur_test = (const char *)*st;
  return 0;
}

/* ctest-variants: file mem s3 lat */
int main(int argc, char **argv) {
  /* With an argument (file, mem, s3 or lat), only that backend runs: one ctest test per backend. */
  const char *only = argc > 1 ? argv[1] : NULL;
  snprintf(run_id, sizeof run_id, "%ld-%ld", (long)time(NULL), (long)getpid());
  backends[0].label = "file://";
  backends[0].tmpdir = tu_tmpdir("objstore");
  backends[0].base = malloc(strlen(backends[0].tmpdir) + 8);
  sprintf(backends[0].base, "file://%s", backends[0].tmpdir);
  backends[1].label = "mem:";
  backends[1].base = strdup("mem:conformance");
  backends[3].label = "lat:";
  backends[3].base = malloc(strlen(backends[0].tmpdir) + 64);
  sprintf(backends[3].base, "lat:median=50us,p99=400us,seed=1;file://%s/lat", backends[0].tmpdir);
  backends[2].label = "s3://";
  const char *s3 = getenv("TARN_TEST_S3_URI");
  if (s3 && *s3) {
    /* small multipart parts so the streaming test crosses part boundaries */
    const char *q = strchr(s3, '?');
    backends[2].base = malloc(strlen(s3) + 64);
    sprintf(backends[2].base, "%s%cmultipart_threshold=5242880&part_size=5242880", s3,
            q ? '&' : '?');
  } else {
    printf("s3://: TARN_TEST_S3_URI is not set: s3:// tests are skipped%s\n",
           tu_in_ci() ? " (and fail, in CI)" : "");
  }

  int failed = 0;
  static const char *const keys[4] = {"file", "mem", "s3", "lat"};
  for (int bi = 0; bi < 4; bi++) {
    if (only && strcmp(only, keys[bi]) != 0)
      continue;
    cur = &backends[bi];
    struct CMUnitTest tests[NCASES + 1];
    size_t n = 0;
    for (size_t i = 0; i < NCASES; i++) {
      char *nm = malloc(128);
      snprintf(nm, 128, "%s %s", cur->label, cases[i].name);
      names_alloc[bi][i] = nm;
      tests[n++] = (struct CMUnitTest){nm, cases[i].fn, case_setup, NULL, (void *)cases[i].name};
    }
    if (bi == 1)
      tests[n++] = (struct CMUnitTest){"uris", t_uris, case_setup, NULL, (void *)"uris"};
    char group[64];
    snprintf(group, sizeof group, "objstore conformance %s", cur->label);
    failed += _cmocka_run_group_tests(group, tests, n, setup, NULL);
    for (size_t i = 0; i < NCASES; i++)
      free(names_alloc[bi][i]);
  }
  tu_rmtree(backends[0].tmpdir);
  for (int bi = 0; bi < 4; bi++)
    free(backends[bi].base);
  free(backends[0].tmpdir);
  return failed;
}
