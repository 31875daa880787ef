/* SaslHandshake (key 17), versions 0-1 (sasl.h): the client names its
 * mechanism; the answer lists the listener's. After v0 the exchange goes on
 * in raw token frames, after v1 in SaslAuthenticate requests. */
#include <string.h>

#include "kafka/api.h"
#include "kafka/proto/kproto.h"
#include "kafka/sasl.h"

void tarn__kapi_sasl_handshake(tarn__knode *node, tarn__kreq *req) {
  tarn__k_sasl_handshake_req b;
  if (tarn__kreq_body(req, &b))
    return;
  tarn__k_sasl_handshake_resp r;
  tarn__kmsg_init(TARN__KAPI_SASL_HANDSHAKE, 1, &r);
  static const int mechs[] = {TARN__KSASL_PLAIN, TARN__KSASL_SCRAM_SHA_256};
  tarn__kstr *v = tarn__karena_alloc(req->arena, sizeof mechs / sizeof mechs[0] * sizeof *v);
  if (!v) {
    tarn__kreq_close(req);
    return;
  }
  int32_t n = 0;
  for (size_t i = 0; i < sizeof mechs / sizeof mechs[0]; i++)
    if (node->cfg.sasl_mechanisms & mechs[i]) {
      const char *name = tarn__ksasl_mechanism_name(mechs[i]);
      v[n++] = (tarn__kstr){name, (int32_t)strlen(name)};
    }
  r.mechanisms.n = n;
  r.mechanisms.v = v;
  r.error_code = tarn__ksasl_handshake(node, req->sasl, b.mechanism.p,
                                       b.mechanism.len > 0 ? (size_t)b.mechanism.len : 0,
                                       req->api_version == 0);
  tarn__kreq_respond(req, &r);
}
