/* ApiVersions (key 18), versions 0-3 (KIP-511 for the others). */
#include "kafka/api.h"
#include "kafka/proto/kproto.h"

void tarn__kapi_api_versions(tarn__knode *node, tarn__kreq *req) {
  tarn__k_api_versions_resp r;
  tarn__kmsg_init(TARN__KAPI_API_VERSIONS, 1, &r);
  const tarn__kapi *self = tarn__kapi_find(TARN__KAPI_API_VERSIONS);
  if (req->api_version < self->min_version || req->api_version > self->max_version) {
    /* KIP-511: a version this node does not know gets a v0 answer (the
     * client can read it whatever it sent) with UNSUPPORTED_VERSION and the
     * range of ApiVersions itself, so the client retries within it. */
    tarn__k_api_versions_api_version own; /* encoded before respond returns */
    own.api_key = self->api_key;
    own.min_version = self->min_version;
    own.max_version = self->max_version;
    r.error_code = TARN__KERR_UNSUPPORTED_VERSION;
    r.api_keys.n = 1;
    r.api_keys.v = &own;
    req->api_version = 0;
    tarn__kreq_respond(req, &r);
    return;
  }
  tarn__k_api_versions_req b;
  if (tarn__kreq_body(req, &b))
    return;
  /* Exactly the dispatch table: an API is advertised only where a handler
   * answers it, in the versions the handler serves. */
  size_t n;
  const tarn__kapi *t = tarn__kapi_table(&n);
  tarn__k_api_versions_api_version *v = tarn__karena_alloc(req->arena, n * sizeof *v);
  if (!v) {
    tarn__kreq_close(req);
    return;
  }
  size_t k = 0;
  for (size_t i = 0; i < n; i++) {
    /* SaslHandshake and SaslAuthenticate only where SASL is required (the
     * gate in kreq.c refuses them elsewhere) */
    if ((t[i].api_key == TARN__KAPI_SASL_HANDSHAKE ||
         t[i].api_key == TARN__KAPI_SASL_AUTHENTICATE) &&
        !node->cfg.sasl_mechanisms)
      continue;
    v[k].api_key = t[i].api_key;
    v[k].min_version = t[i].min_version;
    v[k++].max_version = t[i].max_version;
  }
  r.api_keys.n = (int32_t)k;
  r.api_keys.v = v;
  tarn__kreq_respond(req, &r);
}
