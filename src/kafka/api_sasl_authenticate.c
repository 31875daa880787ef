/* SaslAuthenticate (key 36), versions 0-2 (sasl.h): one token of the
 * mechanism chosen at the handshake. A refusal answers
 * SASL_AUTHENTICATION_FAILED, and the connection is failed: its next
 * request closes it (Kafka closes it after the answer). */
#include <stdio.h>
#include <string.h>

#include <openssl/crypto.h>

#include "kafka/api.h"
#include "kafka/proto/kproto.h"
#include "kafka/sasl.h"
#include "tarn/error.h"

static void authenticate_done(tarn__knode *node, tarn__kreq *req, int rc, tarn_buf *out) {
  /* a PLAIN token holds the password: the request's body (the frame,
   * malloc'd by the listener, read-only only to the handlers) is wiped once
   * the token was checked (issue 33); nothing reads it after */
  if (req->frame_len > req->body_off)
    OPENSSL_cleanse((uint8_t *)req->frame + req->body_off, req->frame_len - req->body_off);
  tarn__k_sasl_authenticate_resp r;
  tarn__kmsg_init(TARN__KAPI_SASL_AUTHENTICATE, 1, &r);
  uint8_t *tok = out->len ? tarn__karena_alloc(req->arena, out->len) : NULL;
  if (out->len && !tok) {
    tarn__kreq_close(req);
    return;
  }
  if (out->len)
    memcpy(tok, out->data, out->len);
  r.auth_bytes = (tarn__kbytes){tok ? tok : (const uint8_t *)"", (int32_t)out->len};
  if (rc == TARN_EINVAL) {
    r.error_code = TARN__KERR_ILLEGAL_SASL_STATE;
    r.error_message = (tarn__kstr){"SaslAuthenticate before SaslHandshake v1", 40};
  } else if (rc) {
    const char *msg = tarn__ksasl_error(req->sasl);
    r.error_code = TARN__KERR_SASL_AUTHENTICATION_FAILED;
    r.error_message = (tarn__kstr){msg, (int32_t)strlen(msg)};
    /* issue 33 item 4: Kafka's connection.failed.authentication.delay.ms */
    tarn__ksasl_refuse_later(node, req, &r);
    return;
  }
  tarn__kreq_respond(req, &r);
}

void tarn__kapi_sasl_authenticate(tarn__knode *node, tarn__kreq *req) {
  tarn__k_sasl_authenticate_req b;
  if (tarn__kreq_body(req, &b))
    return;
  tarn__ksasl_step_req(node, req, b.auth_bytes.p,
                       b.auth_bytes.len > 0 ? (size_t)b.auth_bytes.len : 0, authenticate_done);
}
