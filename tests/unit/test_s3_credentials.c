/* s3:// credentials on the wire, seen by a small fake server (libmicrohttpd):
 * an AWS session token is sent whole whatever its length (issue 33: tokens
 * longer than about 2 KB were cut at a fixed-size header buffer, while the
 * signature covered the whole token — every request then failed), and the
 * Authorization header is the SigV4 one for the access key. */
#include "testutil.h"
#include "tu_http.h"

#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tarn/buf.h"
#include "tarn/error.h"
#include "tarn/objstore.h"

static struct MHD_Daemon *daemon_;
static unsigned port;
static char seen_token[16384];
static char seen_auth[1024];

static enum MHD_Result handle(void *cls, struct MHD_Connection *c, const char *url,
                              const char *method, const char *version, const char *upload,
                              size_t *upload_size, void **con_cls) {
  (void)cls, (void)url, (void)method, (void)version, (void)upload;
  if (!*con_cls) {
    *con_cls = (void *)1;
    return MHD_YES;
  }
  if (*upload_size) { /* a PUT's body: taken, answered once it is all in */
    *upload_size = 0;
    return MHD_YES;
  }
  const char *t = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "x-amz-security-token");
  const char *a = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization");
  snprintf(seen_token, sizeof seen_token, "%s", t ? t : "");
  snprintf(seen_auth, sizeof seen_auth, "%s", a ? a : "");
  struct MHD_Response *r = MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
  if (!r)
    return MHD_NO;
  enum MHD_Result ok = MHD_queue_response(c, 200, r);
  MHD_destroy_response(r);
  return ok;
}

static int setup(void **st) {
  (void)st;
  return (daemon_ = tu_http_start(handle, &port)) ? 0 : -1;
}

static int teardown(void **st) {
  (void)st;
  MHD_stop_daemon(daemon_);
  return 0;
}

/* One PUT through a store opened with a session token of len characters;
 * the token the server saw must be the whole one. */
static void token_of(size_t len) {
  char *token = malloc(len + 1);
  assert_non_null(token);
  for (size_t i = 0; i < len; i++)
    token[i] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/="[i * 7 % 65];
  token[len] = 0;
  setenv("AWS_ACCESS_KEY_ID", "AKIDTESTCREDENTIALS0", 1);
  setenv("AWS_SECRET_ACCESS_KEY", "secretsecretsecretsecretsecretsecret0000", 1);
  setenv("AWS_SESSION_TOKEN", token, 1);
  char uri[256];
  snprintf(uri, sizeof uri, "s3://bucket/p?endpoint=http://127.0.0.1:%u&timeout_ms=3000", port);
  tarn_objstore *s;
  assert_int_equal(tarn_objstore_open(uri, &s), 0);
  seen_token[0] = seen_auth[0] = 0;
  int rc = tarn_objstore_put(s, "obj", "hello", 5);
  if (rc)
    fail_msg("put with a %zu-character token: %s", len, tarn_errmsg());
  tarn_objstore_close(s);
  unsetenv("AWS_SESSION_TOKEN");
  if (strcmp(seen_token, token) != 0)
    fail_msg("a %zu-character token arrived as %zu characters", len, strlen(seen_token));
  assert_non_null(strstr(seen_auth, "AWS4-HMAC-SHA256 Credential=AKIDTESTCREDENTIALS0/"));
  assert_non_null(strstr(seen_auth, "x-amz-security-token"));
  free(token);
}

static void short_token(void **state) {
  (void)state;
  token_of(40);
}

/* STS tokens of federated and role-chained sessions run to several KB. */
static void long_tokens(void **state) {
  (void)state;
  token_of(2100);
  token_of(6000);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(short_token), cmocka_unit_test(long_tokens)};
  return cmocka_run_group_tests(tests, setup, teardown);
}
