/* Dispatch and completion of one request (api.h). */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kafka/api.h"
#include "kafka/proto/kproto.h"
#include "kafka/sasl.h"
#include "tarn/error.h"
#include "tarn/metrics.h"

/* Frees what dispatch gave the request, then hands it back to its connection. */
static void finish(tarn__kreq *req, int how, tarn_buf *frame) {
  if (req->arena) {
    tarn__karena_free(req->arena);
    free(req->arena);
    req->arena = NULL;
  }
  free((void *)req->client_id);
  req->client_id = NULL;
  req->done(req, how, frame);
}

void tarn__kreq_respond(tarn__kreq *req, const void *resp) {
  tarn_buf f = TARN_BUF_INIT;
  int rc = tarn__kresp_frame(req->api_key, req->api_version, req->correlation_id, resp, &f);
  if (rc) {
    /* A response the codec cannot write is a defect, not the client's:
     * closing tells the client without a reply it would misread. */
    fprintf(stderr, "tarn: kafka %s v%d response to %s: %s\n",
            tarn__kapi_find(req->api_key) ? tarn__kapi_find(req->api_key)->name : "?",
            req->api_version, req->peer, tarn_errmsg());
    tarn_buf_free(&f);
    tarn_metrics_inc("tarn_kafka_responses_total", 1, "result", "unencodable", NULL);
    finish(req, TARN__KREQ_CLOSE, NULL);
    return;
  }
  tarn_metrics_inc("tarn_kafka_responses_total", 1, "result", "ok", NULL);
  finish(req, TARN__KREQ_RESPONSE, &f);
}

void *tarn__kresp_entries(tarn__kreq *req, int32_t n, size_t size, int32_t *count) {
  size_t k = n > 0 ? (size_t)n : 0;
  /* one entry at least: NULL means out of memory, never an empty array */
  void *v = tarn__karena_alloc(req->arena, (k ? k : 1) * size);
  *count = v ? (int32_t)k : 0;
  return v;
}

tarn__kstr tarn__kresp_str(tarn__kreq *req, const char *s) {
  size_t n = s ? strlen(s) : 0;
  char *p = s ? tarn__karena_alloc(req->arena, n + 1) : NULL;
  if (!p)
    return (tarn__kstr){NULL, -1};
  memcpy(p, s, n + 1);
  return (tarn__kstr){p, (int32_t)n};
}

void tarn__kreq_respond_frame(tarn__kreq *req, tarn_buf *frame) {
  tarn_metrics_inc("tarn_kafka_responses_total", 1, "result", "ok", NULL);
  finish(req, TARN__KREQ_RESPONSE, frame);
}

void tarn__kreq_no_response(tarn__kreq *req) { finish(req, TARN__KREQ_NONE, NULL); }

void tarn__kreq_close(tarn__kreq *req) {
  tarn_metrics_inc("tarn_kafka_responses_total", 1, "result", "closed", NULL);
  finish(req, TARN__KREQ_CLOSE, NULL);
}

/* tarn_kafka_requests_total{api, result, version}: api is Kafka's name of the
 * key also when tarn does not serve it; result ok (handed to the handler),
 * malformed (header or body did not decode), unsupported (API or version not
 * served), unauthenticated. */
static void count(const tarn__kreq *req, const char *result) {
  char v[8];
  snprintf(v, sizeof v, "%d", req->api_key < 0 ? -1 : req->api_version);
  tarn_metrics_inc("tarn_kafka_requests_total", 1, "api", tarn__kapi_name(req->api_key), "result",
                   result, "version", v, NULL);
}

int tarn__kreq_body(tarn__kreq *req, void *out) {
  int rc = tarn__kmsg_decode(req->api_key, req->api_version, 0, req->frame + req->body_off,
                             req->frame_len - req->body_off, req->arena, out);
  if (rc) {
    count(req, "malformed");
    tarn__kreq_close(req);
    return rc;
  }
  req->body = out;
  return 0;
}

/* SASL's gate (sasl.h): 1 when req may run on its connection. */
static int sasl_allows(const tarn__kreq *req, int16_t api_key) {
  if (!req->sasl) /* no SASL on this listener: its APIs are not served */
    return api_key != TARN__KAPI_SASL_HANDSHAKE && api_key != TARN__KAPI_SASL_AUTHENTICATE;
  if (tarn__ksasl_failed(req->sasl))
    return 0;
  return tarn__ksasl_authenticated(req->sasl) || api_key == TARN__KAPI_API_VERSIONS ||
         api_key == TARN__KAPI_SASL_HANDSHAKE || api_key == TARN__KAPI_SASL_AUTHENTICATE;
}

void tarn__kreq_dispatch(tarn__knode *node, tarn__kreq *req) {
  if (!atomic_load(&node->ready)) { /* still starting: the client reconnects */
    tarn_metrics_inc("tarn_kafka_requests_refused_starting_total", 1, NULL);
    tarn__kreq_close(req);
    return;
  }
  if (req->sasl && tarn__ksasl_raw_next(req->sasl)) { /* a raw token, not a request */
    tarn__ksasl_raw(node, req);
    return;
  }
  tarn__kreq_header h;
  memset(&h, 0, sizeof h);
  size_t off = 0;
  int rc = tarn__kreq_header_decode(req->frame, req->frame_len, &h, &off);
  req->api_key = h.api_key;
  req->api_version = h.api_version;
  req->correlation_id = h.correlation_id;
  req->body_off = off;
  size_t cl = h.client_id.len > 0 ? (size_t)h.client_id.len : 0;
  char *cid = malloc(cl + 1);
  req->arena = malloc(sizeof *req->arena);
  if (!cid || !req->arena) {
    free(cid);
    free(req->arena);
    req->arena = NULL;
    tarn__kreq_close(req);
    return;
  }
  if (cl)
    memcpy(cid, h.client_id.p, cl);
  cid[cl] = 0;
  req->client_id = cid;
  tarn__karena_init(req->arena);
  if (rc && rc != TARN_EUNSUPPORTED) { /* no header: nothing to answer to */
    req->api_key = -1;                 /* no header: no key to name */
    count(req, "malformed");
    tarn__kreq_close(req);
    return;
  }
  if (!sasl_allows(req, h.api_key)) {
    count(req, "unauthenticated");
    tarn__kreq_close(req);
    return;
  }
  const tarn__kapi *api = tarn__kapi_find(h.api_key);
  /* KIP-511: ApiVersions of any version is answered (its handler replies
   * in v0 with UNSUPPORTED_VERSION to a version it does not know). Any
   * other API at a version not advertised closes the connection, as Kafka. */
  if (api && h.api_key == TARN__KAPI_API_VERSIONS) {
    count(req, "ok");
    api->handle(node, req);
    return;
  }
  if (rc || !api || h.api_version < api->min_version || h.api_version > api->max_version) {
    count(req, "unsupported");
    tarn__kreq_close(req);
    return;
  }
  count(req, "ok");
  api->handle(node, req);
}
