/* Issue 33, "secret copies are not wiped after use": every block that
 * libtarn's objects free, and every block jansson frees (its allocator set
 * here), is scanned for the secrets before it goes; a secret found in one is
 * a copy freed unwiped. free is routed through __wrap_free for libtarn's
 * static objects and this file:
 *   ctest-wrap: free
 * (tests/CMakeLists.txt). Copies inside shared libraries' own allocations
 * (libcurl's, libc's stdio buffers) are not seen here.
 *   - tarn__secret_read/tarn__secret_free: the password's line and what
 *     follows it in the file (a second line was left in the buffer)
 *   - an etcd sign-in against a fake server (tu_http): the password from its
 *     file, in the request jansson builds and in the body it is dumped into
 *     (json_dumps' growing buffer freed smaller copies unwiped) */
#include "testutil.h"
#include "tu_http.h"

#include <jansson.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "store/etcd_http.h"
#include "util/secret_file.h"

void __real_free(void *p);
void __wrap_free(void *p);

static const char *secrets[2]; /* scanned for while set */
static int found;              /* freed blocks that held one */

static int holds(const char *p, size_t n, const char *s) {
  size_t l = strlen(s);
  for (size_t i = 0; i + l <= n; i++)
    if (memcmp(p + i, s, l) == 0)
      return 1;
  return 0;
}

void __wrap_free(void *p) {
  if (p) {
    size_t n = malloc_usable_size(p);
    for (int i = 0; i < 2; i++)
      if (secrets[i] && holds(p, n, secrets[i]))
        found++;
  }
  __real_free(p);
}

static void jansson_free(void *p) { __wrap_free(p); }

static char *write_file(const char *text) {
  char *dir = tu_tmpdir("secret_wipe"), path[512];
  snprintf(path, sizeof path, "%s/pw", dir);
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fputs(text, f);
  fclose(f);
  chmod(path, 0600);
  free(dir);
  return strdup(path);
}

static void secret_file_is_wiped(void **state) {
  (void)state;
  char *path = write_file("Pw-Marker-one\r\nSecond-Marker-two\n");
  secrets[0] = "Marker-one", secrets[1] = "Marker-two", found = 0;
  char *s = NULL;
  assert_int_equal(tarn__secret_read(path, "password file", &s), 0);
  assert_string_equal(s, "Pw-Marker-one");
  tarn__secret_free(s);
  secrets[0] = secrets[1] = NULL;
  assert_int_equal(found, 0);
  free(path);
}

/* The fake etcd: a sign-in gets a token, anything else an empty answer. */
static enum MHD_Result handle(void *cls, struct MHD_Connection *c, const char *url,
                              const char *method, const char *version, const char *upload,
                              size_t *upload_size, void **con_cls) {
  (void)cls, (void)method, (void)version, (void)upload;
  if (!*con_cls) {
    *con_cls = (void *)1;
    return MHD_YES;
  }
  if (*upload_size) {
    *upload_size = 0;
    return MHD_YES;
  }
  const char *body = strcmp(url, "/v3/auth/authenticate") == 0
                         ? "{\"header\":{\"revision\":\"1\"},\"token\":\"tokTOKEN.12\"}"
                         : "{\"header\":{\"revision\":\"1\"}}";
  struct MHD_Response *r =
      MHD_create_response_from_buffer(strlen(body), (void *)body, MHD_RESPMEM_PERSISTENT);
  if (!r)
    return MHD_NO;
  enum MHD_Result ok = MHD_queue_response(c, 200, r);
  MHD_destroy_response(r);
  return ok;
}

static void etcd_password_is_wiped(void **state) {
  (void)state;
  unsigned port;
  struct MHD_Daemon *d = tu_http_start(handle, &port);
  assert_non_null(d);
  char *path = write_file("Etcd-Pw-Marker-5c1\n"), target[64], opts[600];
  snprintf(target, sizeof target, "//127.0.0.1:%u", port);
  snprintf(opts, sizeof opts, "user=u&plaintext_auth=1&password_file=%s", path);
  json_set_alloc_funcs(malloc, jansson_free);
  secrets[0] = "Pw-Marker-5c1", found = 0;
  tarn__etcd_http h;
  memset(&h, 0, sizeof h);
  int rc = tarn__etcd_http_open(&h, target, 0, opts);
  json_t *req = json_pack("{s:s}", "key", "eA=="), *out = NULL;
  if (!rc)
    rc = tarn__etcd_post(&h, "/v3/kv/range", req, TARN__ETCD_SAFE, &out);
  json_decref(req);
  json_decref(out);
  tarn__etcd_http_free(&h);
  secrets[0] = NULL;
  json_set_alloc_funcs(malloc, free);
  MHD_stop_daemon(d);
  free(path);
  assert_int_equal(rc, 0);
  assert_int_equal(found, 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(secret_file_is_wiped),
                                     cmocka_unit_test(etcd_password_is_wiped)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
