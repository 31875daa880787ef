/* etcd answers that are not JSON, from a small fake server (libmicrohttpd):
 * the message names the store and quotes the answer (issue 33: "HTTP 400,
 * response is not JSON" said nothing), and etcd 3.4's gateway refusal of a
 * client certificate with a CommonName while auth is on is a refusal
 * (TARN_EAUTH, final) that says what to do. */
#include "testutil.h"
#include "tu_http.h"

#include <stdio.h>
#include <string.h>

#include "tarn/error.h"
#include "tarn/meta.h"

static const char *reply; /* the fake server's body, HTTP 400 */

static enum MHD_Result handle(void *cls, struct MHD_Connection *c, const char *url,
                              const char *method, const char *version, const char *upload,
                              size_t *upload_size, void **con_cls) {
  (void)cls, (void)url, (void)method, (void)version, (void)upload;
  if (!*con_cls) {
    *con_cls = (void *)1;
    return MHD_YES;
  }
  if (*upload_size) {
    *upload_size = 0;
    return MHD_YES;
  }
  struct MHD_Response *r =
      MHD_create_response_from_buffer(strlen(reply), (void *)reply, MHD_RESPMEM_PERSISTENT);
  if (!r)
    return MHD_NO;
  enum MHD_Result ok = MHD_queue_response(c, 400, r);
  MHD_destroy_response(r);
  return ok;
}

static struct MHD_Daemon *daemon_;
static unsigned port;

static int setup(void **st) {
  (void)st;
  return (daemon_ = tu_http_start(handle, &port)) ? 0 : -1;
}

static int teardown(void **st) {
  (void)st;
  MHD_stop_daemon(daemon_);
  return 0;
}

static int open_fails(char *msg, size_t n) {
  char uri[128];
  snprintf(uri, sizeof uri, "etcd://127.0.0.1:%u", port);
  tarn_meta *m = NULL;
  int rc = tarn_meta_open(uri, &m);
  assert_null(m);
  snprintf(msg, n, "%s", tarn_errmsg());
  return rc;
}

static void common_name_is_a_refusal(void **state) {
  (void)state;
  reply = "CommonName of client sending a request against gateway will be ignored and not used "
          "as expected user name\n";
  char msg[1024];
  int rc = open_fails(msg, sizeof msg);
  if (rc != TARN_EAUTH || !strstr(msg, "refused the client certificate") ||
      !strstr(msg, "without a CN") || !strstr(msg, "127.0.0.1"))
    fail_msg("rc %d: %s", rc, msg);
}

static void other_text_is_quoted(void **state) {
  (void)state;
  reply = "upstream connect error\x1b[31m or disconnect\r\nsecond line";
  char msg[1024];
  int rc = open_fails(msg, sizeof msg);
  if (rc == TARN_EAUTH || !strstr(msg, "HTTP 400, response is not JSON: \"upstream connect "
                                       "error?[31m or disconnect\""))
    fail_msg("rc %d: %s", rc, msg);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(common_name_is_a_refusal),
                                     cmocka_unit_test(other_text_is_quoted)};
  return cmocka_run_group_tests(tests, setup, teardown);
}
