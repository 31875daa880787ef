/* SASL on a Kafka connection (docs/kafka.md "Security"): the state of one
 * connection's authentication, the mechanisms (PLAIN, SCRAM-SHA-256) and the
 * gate of dispatch: until a connection has authenticated, only ApiVersions,
 * SaslHandshake and SaslAuthenticate are answered; any other request closes
 * it. A connection's requests run one at a time (kafka_conn.h), so its state
 * is touched by one thread at a time; except that with a guard a PLAIN check
 * completes on a hashing thread after its handler returned (issue 33 item
 * 4): a request pipelined behind it then reads only the state (atomic), which
 * says "checking" and makes any SASL step out of turn. */
#ifndef TARN_KAFKA_SASL_H
#define TARN_KAFKA_SASL_H

#include <stddef.h>
#include <stdint.h>

#include "kafka/api.h"
#include "kafka/scram.h"

typedef struct tarn__ksasl tarn__ksasl;

/* A connection's state, when the listener requires SASL; NULL: no memory. */
tarn__ksasl *tarn__ksasl_new(void);
void tarn__ksasl_free(tarn__ksasl *s);
int tarn__ksasl_authenticated(const tarn__ksasl *s);
/* 1 when the connection's next frame is a raw SASL token (after a v0
 * SaslHandshake, as Kafka's wire format has it). */
int tarn__ksasl_raw_next(const tarn__ksasl *s);
/* 1 when the connection failed to authenticate: every later request closes it. */
int tarn__ksasl_failed(const tarn__ksasl *s);

/* The TARN__KSASL_* bit of mechanism name p[0..n), 0 when not one of them. */
int tarn__ksasl_mechanism(const char *p, size_t n);
const char *tarn__ksasl_mechanism_name(int mech);
/* A command line's mechanism ("plain", "scram-sha-256") ORed into *(int *)ctx;
 * TARN_EINVAL for another word (the shape of a TARN_CLI_CALL option). */
int tarn__ksasl_mechanism_option(void *ctx, const char *v);

/* SaslHandshake's step: mechanism p[0..n) chosen (among node's), v0 or not.
 * Returns the Kafka error code (0, UNSUPPORTED_SASL_MECHANISM,
 * ILLEGAL_SASL_STATE). */
int16_t tarn__ksasl_handshake(tarn__knode *node, tarn__ksasl *s, const char *p, size_t n, int v0);
/* One token of the chosen mechanism, in the calling thread (PLAIN's hash
 * too; node->guard's limits apply): 0 and the answer in out (maybe empty);
 * TARN_EAUTH refused (bad password, unknown user, malformed token: one log
 * line through node->cfg.auth_log, never the secret); TARN_EINVAL out of turn
 * (no handshake). After a refusal the connection is failed. */
int tarn__ksasl_step(tarn__knode *node, tarn__ksasl *s, const char *peer, const uint8_t *in,
                     size_t n, tarn_buf *out);
/* Issue 33 item 4: one token of req (its connection's state, its peer) with
 * done(node, req, rc, out) called once, as tarn__ksasl_step returns: at once,
 * or with node->guard from a hashing thread once PLAIN's password hash ran
 * there (the request worker is free meanwhile). A guarded PLAIN or SCRAM
 * attempt whose address or name is limited, or that finds the hashing queue
 * full, is refused (TARN_EAUTH) without a hash. */
typedef void (*tarn__ksasl_done_fn)(tarn__knode *node, tarn__kreq *req, int rc, tarn_buf *out);
void tarn__ksasl_step_req(tarn__knode *node, tarn__kreq *req, const uint8_t *in, size_t n,
                          tarn__ksasl_done_fn done);
/* The client's message for a refusal of s ("invalid credentials", or the
 * guard's "retry later"). */
const char *tarn__ksasl_error(const tarn__ksasl *s);
/* Completes a refused req with resp (NULL: closes), after node->guard's
 * failure delay (connection.failed.authentication.delay.ms), no thread
 * waiting; at once without a guard. */
void tarn__ksasl_refuse_later(tarn__knode *node, tarn__kreq *req, const void *resp);
/* PLAIN password checks run so far (tests). */
uint64_t tarn__ksasl_hashes(void);
/* Answers a raw token frame (after a v0 handshake): the response is the
 * 4-byte size and the token; a refusal closes the connection. */
void tarn__ksasl_raw(tarn__knode *node, tarn__kreq *req);

#endif
