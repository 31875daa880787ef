/* Issue 33 item 4: password guessing made slow and kept off the request
 * workers (docs/kafka.md "Security"). Three parts, one object per node:
 *
 * - failed-authentication limits: a token bucket of failures per client
 *   address, per user name and per (address, user name); an attempt whose
 *   address, name or pair has no failure left is refused before any
 *   password hash (tarn_kafka_auth_throttled_total). A name is counted
 *   whether or not the user exists (item 5: the answers do not tell). A
 *   success resets its pair. The table holds at most max_entries keys, the
 *   least recently used going first (an attacker cycling addresses or names
 *   cannot grow it).
 * - a small pool of hashing threads (PBKDF2 of PLAIN) with a bounded queue,
 *   at most per_addr_max hashes of an address queued or running and never
 *   two of one address running at once, so that neither a flood of guesses
 *   nor one address can hold the 16 request workers or every hashing
 *   thread (a host whose clients log in together still queues).
 * - one timer thread that delivers failed-authentication responses after
 *   delay_ms (Kafka's connection.failed.authentication.delay.ms) without a
 *   thread waiting for each. */
#ifndef TARN_KAFKA_SASL_GUARD_H
#define TARN_KAFKA_SASL_GUARD_H

#include <stddef.h>
#include <stdint.h>

/* A limit: burst failures saved up, one more every refill_ms. */
typedef struct tarn__kguard_limit {
  uint32_t burst;
  uint32_t refill_ms;
} tarn__kguard_limit;

typedef struct tarn__kguard_config {
  int delay_ms;            /* a failed login's answer is sent this late (100) */
  int threads;             /* hashing threads (2) */
  int queue_max;           /* hashes waiting at most; beyond, refused (64) */
  int per_addr_max;        /* hashes of one address queued or running at most (8) */
  size_t max_entries;      /* keys in the limits' table (16384) */
  tarn__kguard_limit addr; /* per client address (20, one per 1000 ms) */
  tarn__kguard_limit user; /* per user name (50, one per 200 ms) */
  tarn__kguard_limit pair; /* per address and user name (10, one per 2000 ms) */
} tarn__kguard_config;

void tarn__kguard_config_default(tarn__kguard_config *c);

typedef struct tarn__kguard tarn__kguard;

/* Starts the threads; NULL c: the defaults. */
int tarn__kguard_open(const tarn__kguard_config *c, tarn__kguard **out);
/* Runs the hashes queued, delivers every delayed answer now, and from then
 * on runs work in the caller's thread (the listener's drain: every request
 * must complete before it stops). */
void tarn__kguard_drain(tarn__kguard *g);
/* Drains, joins the threads, frees. */
void tarn__kguard_close(tarn__kguard *g);

/* 1 when peer ("host:port" or "host") may try user's password now, 0 when
 * the address, the name or the pair has no failure left. */
int tarn__kguard_allowed(tarn__kguard *g, const char *peer, const char *user);
/* A failed attempt (a wrong password, an unknown user) of user from peer. */
void tarn__kguard_failed(tarn__kguard *g, const char *peer, const char *user);
/* A success: the pair's failures are forgiven. */
void tarn__kguard_succeeded(tarn__kguard *g, const char *peer, const char *user);

/* Queues fn(arg) on a hashing thread, then after(arg) once that thread no
 * longer counts for peer's address (the answer: a client that logs in again
 * at once does not find its own hash still running): 0; TARN_EBUSY when the
 * queue is full or the address has per_addr_max hashes queued or running
 * (neither is called). */
int tarn__kguard_hash(tarn__kguard *g, const char *peer, void (*fn)(void *), void (*after)(void *),
                      void *arg);
/* Calls fn(arg) on the timer thread after the failure delay (at once when
 * the delay is 0 or the guard drains). */
void tarn__kguard_later(tarn__kguard *g, void (*fn)(void *), void *arg);
/* Keys in the limits' table (tests). */
size_t tarn__kguard_entries(tarn__kguard *g);

#endif
