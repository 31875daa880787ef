/* s3:// range reads against answers radosgw never gives, from a small fake
 * server (libmicrohttpd): a 200 to a range request, a 206 without or with a
 * malformed Content-Range, one that describes other bytes than asked for, an
 * unknown complete length, and a 416 that states the size. The object's size
 * comes from the answer, from a fallback HEAD when the answer does not say,
 * and never from a guess. */
#include "testutil.h"
#include "tu_http.h"

#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tarn/error.h"
#include "tarn/metrics.h"
#include "tarn/objstore.h"

static const char body[] = "0123456789"; /* every object's bytes */
#define BODY_LEN 10

/* How the fake server answers a GET of /bucket/p/NAME. */
typedef struct behaviour {
  const char *name;
  int status;         /* 200: the whole body whatever the Range; 206; 416 */
  const char *crange; /* a fixed Content-Range; NULL: none; "" : the true one */
  size_t last_max;    /* when not 0: the body stops at this byte, whatever was asked */
} behaviour;

static const behaviour behaviours[] = {
    {"ignores-range", 200, NULL, 0},
    {"true-range", 206, "", 0},
    {"no-crange", 206, NULL, 0},
    {"bad-crange", 206, "bytes 2-5/1x", 0},
    {"other-bytes", 206, "bytes 3-6/10", 0},
    {"cut-short", 206, "", 5},
    {"unknown-total", 206, "bytes 2-5/*", 0},
    {"416-sized", 416, "bytes */10", 0},
};

static const behaviour *find(const char *url) {
  const char *slash = strrchr(url, '/');
  for (size_t i = 0; slash && i < sizeof behaviours / sizeof behaviours[0]; i++)
    if (strcmp(slash + 1, behaviours[i].name) == 0)
      return &behaviours[i];
  return NULL;
}

/* "bytes=a-b" or "bytes=a-" within the body; 0 when it does not parse. */
static int requested(struct MHD_Connection *c, size_t *first, size_t *last) {
  const char *r = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Range");
  unsigned long long a, b;
  int k = r ? sscanf(r, "bytes=%llu-%llu", &a, &b) : 0;
  if (k < 1)
    return 0;
  *first = (size_t)a;
  *last = k == 2 && b < BODY_LEN - 1 ? (size_t)b : BODY_LEN - 1;
  return 1;
}

static enum MHD_Result answer(struct MHD_Connection *c, unsigned status, const void *p, size_t n,
                              const char *crange) {
  struct MHD_Response *r = MHD_create_response_from_buffer(n, (void *)p, MHD_RESPMEM_MUST_COPY);
  if (!r)
    return MHD_NO;
  if (crange)
    MHD_add_response_header(r, "Content-Range", crange);
  enum MHD_Result ok = MHD_queue_response(c, status, r);
  MHD_destroy_response(r);
  return ok;
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *c, const char *url,
                              const char *method, const char *version, const char *upload,
                              size_t *upload_size, void **con_cls) {
  (void)cls, (void)version, (void)upload, (void)upload_size;
  if (!*con_cls) { /* the headers: answer on the next call */
    *con_cls = (void *)1;
    return MHD_YES;
  }
  const behaviour *b = find(url);
  if (!b)
    return answer(c, 404, "", 0, NULL);
  if (strcmp(method, "HEAD") == 0)
    return answer(c, 200, body, BODY_LEN, NULL);
  size_t first = 0, last = BODY_LEN - 1;
  int ranged = requested(c, &first, &last);
  if (b->last_max && last > b->last_max)
    last = b->last_max;
  if (b->status == 200 || !ranged)
    return answer(c, 200, body, BODY_LEN, NULL);
  if (b->status == 416 || first >= BODY_LEN)
    return answer(c, 416, "", 0, b->status == 416 ? b->crange : NULL);
  char cr[64];
  snprintf(cr, sizeof cr, "bytes %zu-%zu/%d", first, last, BODY_LEN);
  return answer(c, 206, body + first, last - first + 1, b->crange && !*b->crange ? cr : b->crange);
}

static struct MHD_Daemon *daemon_;
static tarn_objstore *store;

static int setup(void **st) {
  (void)st;
  unsigned port;
  if (!(daemon_ = tu_http_start(handle, &port)))
    return -1;
  char uri[256];
  snprintf(uri, sizeof uri, "s3://bucket/p?endpoint=http://127.0.0.1:%u&timeout_ms=3000", port);
  unsetenv("AWS_ACCESS_KEY_ID"); /* unsigned requests: the fake server checks nothing */
  unsetenv("AWS_SECRET_ACCESS_KEY");
  unsetenv("AWS_SESSION_TOKEN");
  return tarn_objstore_open(uri, &store) == 0 ? 0 : -1;
}

static int teardown(void **st) {
  (void)st;
  tarn_objstore_close(store);
  MHD_stop_daemon(daemon_);
  return 0;
}

static int64_t heads(void) {
  return tarn_metrics_value("tarn_objstore_requests_total", "op", "head", "backend", "s3", NULL);
}

/* Reads [off, off+len) of name; checks the bytes and the size, and how many
 * HEADs went out for it. */
static void read_ok(const char *name, uint64_t off, uint64_t len, size_t want_len,
                    int64_t want_heads) {
  tarn_buf b = TARN_BUF_INIT;
  uint64_t size = 0;
  int64_t h0 = heads();
  int rc = tarn_objstore_get_range_sized(store, name, off, len, &b, &size);
  if (rc)
    fail_msg("%s [%llu, +%llu): %s: %s", name, (unsigned long long)off, (unsigned long long)len,
             tarn_errname(rc), tarn_errmsg());
  assert_int_equal(size, BODY_LEN);
  assert_int_equal(b.len, want_len);
  if (want_len)
    assert_memory_equal(b.data, body + off, want_len);
  assert_int_equal(heads() - h0, want_heads);
  tarn_buf_free(&b);
}

/* Fails with want, and the message mentions what. */
static void read_fails(const char *name, uint64_t off, uint64_t len, int want, const char *what) {
  tarn_buf b = TARN_BUF_INIT;
  uint64_t size = 0;
  int rc = tarn_objstore_get_range_sized(store, name, off, len, &b, &size);
  if (rc != want || !strstr(tarn_errmsg(), what))
    fail_msg("%s: %s \"%s\", want %s mentioning \"%s\"", name, tarn_errname(rc), tarn_errmsg(),
             tarn_errname(want), what);
  assert_int_equal(b.len, 0);
  tarn_buf_free(&b);
}

static void size_from_content_range(void **st) {
  (void)st;
  read_ok("true-range", 2, 4, 4, 0);
  read_ok("true-range", 0, 100, 10, 0); /* the server cuts at the end */
  read_ok("true-range", 0, UINT64_MAX, 10, 0);
}

/* A 200 to a range request carries the whole object: its length is the size,
 * and the range is cut from it. */
static void whole_body_answer(void **st) {
  (void)st;
  read_ok("ignores-range", 2, 4, 4, 0);
  read_ok("ignores-range", 7, 100, 3, 0);
  read_ok("ignores-range", 10, 5, 0, 0);
  read_fails("ignores-range", 11, 5, TARN_ERANGE, "past the end");
}

/* A 206 that does not say the complete length: the size is asked with HEAD. */
static void fallback_to_head(void **st) {
  (void)st;
  read_ok("no-crange", 2, 4, 4, 1);
  read_ok("unknown-total", 2, 4, 4, 1);
}

/* A Content-Range that does not parse, or that contradicts the request or the
 * body, is an error, never a size. */
static void contradictions_fail(void **st) {
  (void)st;
  read_fails("bad-crange", 2, 4, TARN_EIO, "Content-Range: byte 11: ");
  read_fails("other-bytes", 2, 4, TARN_EIO, "Content-Range \"bytes 3-6/10\"");
  /* a well-formed range whose body stops before the end it admits to */
  read_fails("cut-short", 2, 6, TARN_EIO, "4 bytes at offset 2, but the object is 10 bytes");
  read_ok("cut-short", 2, 4, 4, 0);
}

/* A 416 that states the size answers a read at the end without a HEAD; past
 * the end is TARN_ERANGE. */
static void unsatisfied_range(void **st) {
  (void)st;
  read_ok("416-sized", 10, 5, 0, 0);
  read_fails("416-sized", 11, 5, TARN_ERANGE, "past the end");
  read_fails("missing", 0, 5, TARN_ENOTFOUND, "no object");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(size_from_content_range), cmocka_unit_test(whole_body_answer),
      cmocka_unit_test(fallback_to_head),        cmocka_unit_test(contradictions_fail),
      cmocka_unit_test(unsatisfied_range),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
