/* The leases of the etcd:// metadata store (store/meta_etcd.c), over its
 * transport (store/etcd_http.h):
 *   - the session: a lease (TTL = the session timeout) that a keepalive
 *     thread renews; ephemeral records carry it, and its end (expired,
 *     revoked, unreachable for a TTL) ends the tarn_meta session;
 *   - the store clock: the age of one long lease that every handle of the
 *     cluster reads (tarn_meta_clock), counted down by etcd's leader. */
#ifndef TARN_STORE_ETCD_SESSION_H
#define TARN_STORE_ETCD_SESSION_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "store/etcd_http.h"
#include "tarn/meta.h"

typedef struct tarn__etcd_session {
  tarn__etcd_http *http;
  tarn_meta *m;          /* whose session ends with the lease */
  _Atomic int64_t lease; /* replaced by a renewal while other threads write */
  int64_t ttl_s;
  _Atomic int64_t clock_lease; /* the cluster's clock lease, 0 until looked up */
  pthread_t ka;
  pthread_mutex_t ka_mu;
  pthread_cond_t ka_cv;
  int stop, ka_started;
} tarn__etcd_session;

/* Sets s up (no request yet): the TTL is m's session timeout. */
void tarn__etcd_session_init(tarn__etcd_session *s, tarn__etcd_http *http, tarn_meta *m);
/* Grants the session's lease, then starts its keepalive. */
int tarn__etcd_session_start(tarn__etcd_session *s);
/* A new lease and keepalive (tarn_meta_session_renew); the old lease's
 * records are gone or going. */
int tarn__etcd_session_renew(tarn__etcd_session *s);
/* Stops the keepalive and revokes the lease, which deletes the session's
 * ephemeral records. */
void tarn__etcd_session_end(tarn__etcd_session *s);
/* Frees what init made (after end, or after a failed start). */
void tarn__etcd_session_free(tarn__etcd_session *s);

/* The store clock (tarn_meta_clock): ms since the clock lease was granted,
 * in whole seconds (the clock's tick is 1000 ms). */
int tarn__etcd_clock(tarn__etcd_session *s, int64_t *ms);

#endif
