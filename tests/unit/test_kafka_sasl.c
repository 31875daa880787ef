/* SASL of the Kafka listener (src/kafka/scram.c, sasl.c, sasl_users.c):
 * - SCRAM-SHA-256 against RFC 7677 §3's example: the server-first-message and
 *   the server signature come out byte for byte from the keys derived from
 *   "pencil" and the example's salt, nonce and iterations;
 * - a proof made with another password, a changed nonce or channel binding,
 *   and every malformed client message are refused, never crash;
 * - PLAIN checks the password against the same salted keys;
 * - a user record round-trips through the metadata store (mem:) and holds no
 *   password bytes; records that do not decode are refused;
 * - issue 33 item 5: an unknown user cannot be told from a known one: SCRAM
 *   answers it with a salt as stable as a real user's (same length, same
 *   iterations) and refuses it at the proof as a wrong password, with the
 *   same reason; PLAIN refuses it as a wrong password, after the same hash
 *   work (not many times faster);
 * - issue 33 item 4: after N failures of a user from an address the next
 *   attempt there is refused without a password hash, while the user still
 *   gets in from another address; unknown users are counted alike; a
 *   success forgives its pair's failures; one address cycling names is
 *   limited by its own bucket; the table stays bounded; the hashing queue
 *   refuses a second hash of one address and a full queue; a delayed
 *   answer comes after the delay;
 * - issue 33, secret copies wiped: a PLAIN token (v0, a raw frame) no longer
 *   holds the password in the request's frame once it was checked, nor
 *   a SaslAuthenticate v1 one. */
#define _GNU_SOURCE /* memmem */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>
#include <pthread.h>
#include <stdatomic.h>

#include "kafka/api.h"
#include "kafka/proto/kproto.h"
#include "kafka/sasl.h"
#include "kafka/sasl_guard.h"
#include "kafka/sasl_users.h"
#include "kafka/scram.h"
#include "tarn/error.h"
#include "tarn/meta.h"
#include "util/base64.h"

/* RFC 7677 §3 */
static const char client_first[] = "n,,n=user,r=rOprNGfwEbeRWgbNEkqO";
static const char snonce[] = "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0";
static const char server_first[] =
    "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096";
static const char client_final[] = "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
                                   "p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=";
static const char server_final[] = "v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=";

static void rfc_cred(const char *password, tarn__kcred *c) {
  memset(c, 0, sizeof *c);
  tarn_buf salt = TARN_BUF_INIT;
  assert_int_equal(tarn__b64_decode("W22ZaJ0SNY7soEsUEjb6gQ==", 24, &salt, "salt"), 0);
  memcpy(c->salt, salt.data, salt.len);
  c->salt_len = salt.len;
  tarn_buf_free(&salt);
  c->iterations = 4096;
  c->mechanisms = TARN__KSASL_SCRAM_SHA_256 | TARN__KSASL_PLAIN;
  assert_int_equal(tarn__kcred_derive(password, strlen(password), c), 0);
}

/* Runs the exchange with client-final fin; returns the final step's code. */
static int exchange(const tarn__kcred *c, const char *first, const char *fin, tarn_buf *sfinal) {
  tarn__scram s = {0};
  tarn_buf sf = TARN_BUF_INIT;
  int rc = tarn__scram_client_first(&s, (const uint8_t *)first, strlen(first));
  if (!rc) {
    assert_string_equal(s.user, "user");
    assert_int_equal(tarn__scram_server_first(&s, c, snonce, &sf), 0);
    assert_int_equal(sf.len, strlen(server_first));
    assert_memory_equal(sf.data, server_first, sf.len);
    rc = tarn__scram_client_final(&s, c, (const uint8_t *)fin, strlen(fin), sfinal);
  }
  tarn_buf_free(&sf);
  tarn__scram_free(&s);
  return rc;
}

static void rfc7677_vector(void **state) {
  (void)state;
  tarn__kcred c;
  rfc_cred("pencil", &c);
  tarn_buf out = TARN_BUF_INIT;
  assert_int_equal(exchange(&c, client_first, client_final, &out), 0);
  assert_int_equal(out.len, strlen(server_final));
  assert_memory_equal(out.data, server_final, out.len);
  tarn_buf_free(&out);
}

static void wrong_proofs_refused(void **state) {
  (void)state;
  tarn__kcred c;
  rfc_cred("pencil2", &c); /* the client's proof is pencil's */
  tarn_buf out = TARN_BUF_INIT;
  assert_int_equal(exchange(&c, client_first, client_final, &out), TARN_EAUTH);
  tarn_buf_reset(&out);
  rfc_cred("pencil", &c);
  /* a proof with one bit changed */
  char fin[sizeof client_final];
  memcpy(fin, client_final, sizeof fin);
  fin[strlen(fin) - 3] ^= 1;
  assert_int_not_equal(exchange(&c, client_first, fin, &out), 0);
  tarn_buf_reset(&out);
  /* another nonce, another channel binding */
  const char *bad[] = {
      "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k1,"
      "p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=",
      "c=eSws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
      "p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=",
      "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0",
      "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=",
      "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=AAAA",
      "",
      ",",
      "p=",
      "c=,r=,p=",
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    assert_int_not_equal(exchange(&c, client_first, bad[i], &out), 0);
    tarn_buf_reset(&out);
  }
  tarn_buf_free(&out);
}

static void malformed_first_refused(void **state) {
  (void)state;
  const char *bad[] = {"",
                       "n",
                       "n,",
                       "n,,",
                       "p=tls-unique,,n=user,r=abc",
                       "n,,r=abc",
                       "n,,n=,r=abc",
                       "n,,n=user",
                       "n,,n=user,r=",
                       "n,,n=us=er,r=abc",
                       "n,,n=us=2,r=abc",
                       "x,,n=user,r=abc",
                       "n,,m=ext,n=user,r=abc"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    tarn__scram s = {0};
    assert_int_not_equal(tarn__scram_client_first(&s, (const uint8_t *)bad[i], strlen(bad[i])), 0);
    tarn__scram_free(&s);
  }
  /* a NUL inside, and every prefix of a good message, never crash */
  tarn__scram s = {0};
  assert_int_not_equal(tarn__scram_client_first(&s, (const uint8_t *)"n,,n=u\0r,r=a", 12), 0);
  tarn__scram_free(&s);
  for (size_t n = 0; n < sizeof client_first - 1; n++) {
    tarn__scram p = {0};
    uint8_t *cp = malloc(n ? n : 1);
    memcpy(cp, client_first, n);
    (void)tarn__scram_client_first(&p, cp, n);
    free(cp);
    tarn__scram_free(&p);
  }
  /* the escaped names =2C and =3D */
  tarn__scram e = {0};
  const char *esc = "n,,n=a=2Cb=3Dc,r=xyz";
  assert_int_equal(tarn__scram_client_first(&e, (const uint8_t *)esc, strlen(esc)), 0);
  assert_string_equal(e.user, "a,b=c");
  tarn__scram_free(&e);
}

static void plain_checks_salted_keys(void **state) {
  (void)state;
  tarn__kcred c;
  assert_int_equal(tarn__kcred_make("s3cret", 6, TARN__KSASL_PLAIN, 4096, &c), 0);
  assert_true(tarn__kcred_check(&c, "s3cret", 6));
  assert_false(tarn__kcred_check(&c, "s3cre", 5));
  assert_false(tarn__kcred_check(&c, "s3creT", 6));
  tarn__kcred d;
  assert_int_equal(tarn__kcred_make("s3cret", 6, TARN__KSASL_PLAIN, 4096, &d), 0);
  assert_memory_not_equal(c.salt, d.salt, c.salt_len); /* a fresh salt each time */
  assert_memory_not_equal(c.stored_key, d.stored_key, sizeof c.stored_key);
  assert_int_not_equal(tarn__kcred_make("x", 1, TARN__KSASL_PLAIN, 10, &d), 0);
}

static void user_records(void **state) {
  (void)state;
  tarn_meta *m;
  assert_int_equal(tarn_meta_open("mem:", &m), 0);
  tarn__kcred c, got;
  assert_int_equal(tarn__kcred_make("hunter2-secret", 14, TARN__KSASL_SCRAM_SHA_256, 4096, &c), 0);
  assert_int_equal(tarn__kuser_get(m, "bob", &got), TARN_ENOTFOUND);
  assert_int_equal(tarn__kuser_put(m, "bob/x y", &c), 0);
  assert_int_equal(tarn__kuser_put(m, "alice", &c), 0);
  assert_int_equal(tarn__kuser_get(m, "bob/x y", &got), 0);
  assert_int_equal(got.mechanisms, TARN__KSASL_SCRAM_SHA_256);
  assert_int_equal(got.iterations, 4096);
  assert_memory_equal(got.stored_key, c.stored_key, sizeof c.stored_key);
  assert_memory_equal(got.server_key, c.server_key, sizeof c.server_key);
  assert_memory_equal(got.salt, c.salt, c.salt_len);
  char **names;
  int *mechs;
  size_t n;
  assert_int_equal(tarn__kuser_list(m, &names, &mechs, &n), 0);
  assert_int_equal(n, 2);
  assert_string_equal(names[0], "alice");
  assert_string_equal(names[1], "bob/x y");
  for (size_t i = 0; i < n; i++)
    free(names[i]);
  free(names);
  free(mechs);
  /* no password in the record */
  tarn_meta_rec r = {0};
  assert_int_equal(tarn_meta_get(m, TARN__KU_PARTITION, "/users/alice", &r), 0);
  assert_null(memmem(r.value, r.value_len, "hunter2", 7));
  /* every truncation and a wrong kind or format are refused */
  for (size_t i = 0; i < r.value_len; i++)
    assert_int_not_equal(tarn__kuser_decode(r.value, i, &got), 0);
  r.value[2] = 9;
  assert_int_equal(tarn__kuser_decode(r.value, r.value_len, &got), TARN_EVERSION);
  r.value[0] = 'X';
  assert_int_not_equal(tarn__kuser_decode(r.value, r.value_len, &got), 0);
  tarn_meta_rec_free(&r);
  assert_int_equal(tarn__kuser_delete(m, "alice"), 0);
  assert_int_equal(tarn__kuser_get(m, "alice", &got), TARN_ENOTFOUND);
  tarn_meta_close(m);
}

static char last_reason[128], last_user[1100];
static void auth_log(const tarn__knode *n, int ok, const char *peer, const char *user,
                     const char *mech, const char *reason) {
  (void)n, (void)ok, (void)peer, (void)mech;
  snprintf(last_reason, sizeof last_reason, "%s", reason ? reason : "accepted");
  snprintf(last_user, sizeof last_user, "%s", user);
}

/* A SCRAM exchange for user with a proof no password gives: the
 * server-first-message in first (a NUL-terminated string) and the result of
 * the final step. */
static int scram_try(tarn__knode *node, const char *user, char *first, size_t cap) {
  tarn__ksasl *s = tarn__ksasl_new();
  assert_non_null(s);
  assert_int_equal(tarn__ksasl_handshake(node, s, "SCRAM-SHA-256", 13, 0), 0);
  char msg[512];
  snprintf(msg, sizeof msg, "n,,n=%s,r=fyko+d2lbbFgONRv9qkxdawL", user);
  tarn_buf out = TARN_BUF_INIT;
  assert_int_equal(tarn__ksasl_step(node, s, "peer", (const uint8_t *)msg, strlen(msg), &out), 0);
  snprintf(first, cap, "%.*s", (int)out.len, (const char *)out.data);
  const char *r = strstr(first, "r="), *e = strchr(first, ',');
  assert_non_null(r);
  snprintf(msg, sizeof msg,
           "c=biws,r=%.*s,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=", (int)(e - r - 2), r + 2);
  tarn_buf_reset(&out);
  int rc = tarn__ksasl_step(node, s, "peer", (const uint8_t *)msg, strlen(msg), &out);
  tarn_buf_free(&out);
  tarn__ksasl_free(s);
  return rc;
}

static int plain_try(tarn__knode *node, const char *user, const char *pw, double *secs) {
  tarn__ksasl *s = tarn__ksasl_new();
  assert_non_null(s);
  assert_int_equal(tarn__ksasl_handshake(node, s, "PLAIN", 5, 0), 0);
  char msg[512];
  int n = snprintf(msg, sizeof msg, "%c%s%c%s", 0, user, 0, pw);
  tarn_buf out = TARN_BUF_INIT;
  struct timespec a, b;
  clock_gettime(CLOCK_MONOTONIC, &a);
  int rc = tarn__ksasl_step(node, s, "peer", (const uint8_t *)msg, (size_t)n, &out);
  clock_gettime(CLOCK_MONOTONIC, &b);
  *secs = (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) / 1e9;
  tarn_buf_free(&out);
  tarn__ksasl_free(s);
  return rc;
}

/* The salt and the iterations of a server-first-message "r=...,s=...,i=..." */
static void salt_of(const char *first, char *salt, size_t cap, char *iter, size_t icap) {
  const char *s = strstr(first, ",s="), *i = strstr(first, ",i=");
  assert_non_null(s);
  assert_non_null(i);
  snprintf(salt, cap, "%.*s", (int)(i - s - 3), s + 3);
  snprintf(iter, icap, "%s", i + 3);
}

/* A node on a mem: store holding user alice (password "Alice-pw-1") for
 * the mechanisms mechs, salted with iterations; the store, to close. */
static tarn_meta *alice_node(tarn__knode *node, int mechs, uint32_t iterations) {
  tarn_meta *m;
  assert_int_equal(tarn_meta_open("mem:", &m), 0);
  tarn__kcred c;
  assert_int_equal(tarn__kcred_make("Alice-pw-1", 10, mechs, iterations, &c), 0);
  assert_int_equal(tarn__kuser_put(m, "alice", &c), 0);
  memset(node, 0, sizeof *node);
  node->meta = m;
  node->cfg.sasl_mechanisms = mechs;
  node->cfg.auth_log = auth_log;
  return m;
}

static void unknown_users_indistinguishable(void **state) {
  (void)state;
  tarn__knode node;
  tarn_meta *m =
      alice_node(&node, TARN__KSASL_PLAIN | TARN__KSASL_SCRAM_SHA_256, TARN__SCRAM_ITER_DEFAULT);
  char first[4][512], salt[4][128], iter[4][32], reason[4][128];
  const char *users[4] = {"alice", "alice", "mallory", "mallory"};
  for (int i = 0; i < 4; i++) {
    assert_int_equal(scram_try(&node, users[i], first[i], sizeof first[i]), TARN_EAUTH);
    snprintf(reason[i], sizeof reason[i], "%s", last_reason);
    salt_of(first[i], salt[i], sizeof salt[i], iter[i], sizeof iter[i]);
  }
  /* the unknown user's salt is stable across attempts, as the known one's */
  assert_string_equal(salt[0], salt[1]);
  assert_string_equal(salt[2], salt[3]);
  assert_string_not_equal(salt[0], salt[2]);
  /* of the same form: length, iterations; refused at the proof alike */
  assert_int_equal(strlen(salt[0]), strlen(salt[2]));
  assert_string_equal(iter[0], iter[2]);
  assert_string_equal(reason[0], "invalid credentials");
  assert_string_equal(reason[2], reason[0]);
  /* another unknown user's salt differs from mallory's */
  char f5[512], s5[128], i5[32];
  assert_int_equal(scram_try(&node, "eve", f5, sizeof f5), TARN_EAUTH);
  salt_of(f5, s5, sizeof s5, i5, sizeof i5);
  assert_string_not_equal(s5, salt[2]);

  /* PLAIN: an unknown user and a wrong password are refused alike, and the
   * unknown one is not answered many times faster (the fastest of 5 tries
   * each: robust to a loaded machine) */
  double known = 1e9, unknown = 1e9, t;
  for (int i = 0; i < 5; i++) {
    assert_int_equal(plain_try(&node, "alice", "wrong-pw", &t), TARN_EAUTH);
    known = t < known ? t : known;
    char r1[128];
    snprintf(r1, sizeof r1, "%s", last_reason);
    assert_int_equal(plain_try(&node, "mallory", "wrong-pw", &t), TARN_EAUTH);
    unknown = t < unknown ? t : unknown;
    assert_string_equal(last_reason, r1);
  }
  assert_int_equal(plain_try(&node, "alice", "Alice-pw-1", &t), 0);
  print_message("PLAIN refusal: known user %.2f ms, unknown user %.2f ms\n", known * 1e3,
                unknown * 1e3);
  assert_true(unknown > known / 4);
  tarn_meta_close(m);
}

/* Issue 33: PLAIN's password holds no NUL (RFC 4616: 1*SAFE), and a user
 * name reaches the log with its control bytes escaped, so it cannot forge a
 * log line. */
static void plain_strict_and_names_escaped(void **state) {
  (void)state;
  tarn__knode node;
  tarn_meta *m = alice_node(&node, TARN__KSASL_PLAIN, 4096);
  static const char extra[] = "\0alice\0Alice-pw-1\0trailing";
  tarn__ksasl *s = tarn__ksasl_new();
  assert_non_null(s);
  assert_int_equal(tarn__ksasl_handshake(&node, s, "PLAIN", 5, 0), 0);
  tarn_buf out = TARN_BUF_INIT;
  assert_int_equal(
      tarn__ksasl_step(&node, s, "peer", (const uint8_t *)extra, sizeof extra - 1, &out),
      TARN_EAUTH);
  assert_string_equal(last_reason, "malformed PLAIN message");
  tarn__ksasl_free(s);
  double t;
  assert_int_equal(plain_try(&node, "alice", "Alice-pw-1", &t), 0); /* the same, without */
  assert_int_equal(plain_try(&node, "eve\r\n2026 accepted user=root\x1b[2J\\", "x", &t),
                   TARN_EAUTH);
  assert_string_equal(last_user, "eve\\x0d\\x0a2026 accepted user=root\\x1b[2J\\x5c");
  tarn_buf_free(&out);
  tarn_meta_close(m);
}

/* One PLAIN attempt of user with pw from peer: the step's result. */
static int plain_from(tarn__knode *node, const char *peer, const char *user, const char *pw) {
  tarn__ksasl *s = tarn__ksasl_new();
  assert_non_null(s);
  assert_int_equal(tarn__ksasl_handshake(node, s, "PLAIN", 5, 0), 0);
  char msg[512];
  int n = snprintf(msg, sizeof msg, "%c%s%c%s", 0, user, 0, pw);
  tarn_buf out = TARN_BUF_INIT;
  int rc = tarn__ksasl_step(node, s, peer, (const uint8_t *)msg, (size_t)n, &out);
  tarn_buf_free(&out);
  tarn__ksasl_free(s);
  return rc;
}

/* Issue 33 item 4: failed logins are limited per address, name and pair,
 * before any hash. Refills of a minute: no token comes back during the test. */
static void failed_logins_limited(void **state) {
  (void)state;
  tarn__knode node;
  tarn_meta *m = alice_node(&node, TARN__KSASL_PLAIN, 4096);
  tarn__kguard_config gc;
  tarn__kguard_config_default(&gc);
  gc.delay_ms = 0;
  gc.addr = (tarn__kguard_limit){20, 60000};
  gc.user = (tarn__kguard_limit){50, 60000};
  gc.pair = (tarn__kguard_limit){10, 60000};
  assert_int_equal(tarn__kguard_open(&gc, &node.guard), 0);
  /* 10 failures of alice from one address: each hashed */
  uint64_t h0 = tarn__ksasl_hashes();
  for (int i = 0; i < 10; i++)
    assert_int_equal(plain_from(&node, "10.0.0.1:4000", "alice", "guess"), TARN_EAUTH);
  assert_int_equal(tarn__ksasl_hashes() - h0, 10);
  /* the 11th, even with the right password, is refused without a hash */
  assert_int_equal(plain_from(&node, "10.0.0.1:4001", "alice", "Alice-pw-1"), TARN_EAUTH);
  assert_int_equal(tarn__ksasl_hashes() - h0, 10);
  assert_string_equal(last_reason, "too many failed attempts (throttled)");
  /* alice from another address gets in */
  assert_int_equal(plain_from(&node, "10.0.0.2:4000", "alice", "Alice-pw-1"), 0);
  assert_int_equal(tarn__ksasl_hashes() - h0, 11);
  /* item 5: an unknown name is limited after as many failures */
  for (int i = 0; i < 10; i++)
    assert_int_equal(plain_from(&node, "10.0.0.3:1", "mallory", "guess"), TARN_EAUTH);
  uint64_t h1 = tarn__ksasl_hashes();
  assert_int_equal(plain_from(&node, "10.0.0.3:1", "mallory", "guess"), TARN_EAUTH);
  assert_int_equal(tarn__ksasl_hashes(), h1);
  /* a success forgives its pair: 9 failures, a login, 9 more all hashed */
  for (int i = 0; i < 19; i++) {
    uint64_t h = tarn__ksasl_hashes();
    assert_int_equal(plain_from(&node, "10.0.0.4:1", "alice", i == 9 ? "Alice-pw-1" : "guess"),
                     i == 9 ? 0 : TARN_EAUTH);
    assert_int_equal(tarn__ksasl_hashes(), h + 1);
  }
  /* one address cycling names: its own bucket (20) ends it */
  h1 = tarn__ksasl_hashes();
  for (int i = 0; i < 25; i++) {
    char u[16];
    snprintf(u, sizeof u, "user%d", i);
    assert_int_equal(plain_from(&node, "10.0.0.5:1", u, "guess"), TARN_EAUTH);
  }
  assert_int_equal(tarn__ksasl_hashes() - h1, 20);
  tarn__kguard_close(node.guard);
  tarn_meta_close(m);
}

/* The table's bound: an attacker cycling addresses does not grow it. */
static void guard_table_bounded(void **state) {
  (void)state;
  tarn__kguard_config gc;
  tarn__kguard_config_default(&gc);
  gc.max_entries = 64;
  tarn__kguard *g;
  assert_int_equal(tarn__kguard_open(&gc, &g), 0);
  for (int i = 0; i < 1000; i++) {
    char peer[32];
    snprintf(peer, sizeof peer, "10.1.%d.%d:9", i / 256, i % 256);
    tarn__kguard_failed(g, peer, "bob");
    assert_true(tarn__kguard_entries(g) <= 64);
  }
  /* the most recent address is still counted */
  for (int i = 0; i < 25; i++)
    tarn__kguard_failed(g, "10.9.9.9:1", "carol");
  assert_false(tarn__kguard_allowed(g, "10.9.9.9:2", "dave"));
  assert_true(tarn__kguard_allowed(g, "10.9.9.8:2", "dave"));
  tarn__kguard_close(g);
}

static pthread_mutex_t gate_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t gate_cv = PTHREAD_COND_INITIALIZER;
static int gate_open;
static _Atomic int ran;
static void gated(void *arg) {
  (void)arg;
  pthread_mutex_lock(&gate_mu);
  while (!gate_open)
    pthread_cond_wait(&gate_cv, &gate_mu);
  pthread_mutex_unlock(&gate_mu);
  atomic_fetch_add(&ran, 1);
}
static void nop(void *arg) { (void)arg; }
static _Atomic int64_t fired_at;
static int64_t mono_ms(void);
static void fire(void *arg) {
  (void)arg;
  fired_at = mono_ms();
}

static _Atomic int marked;
static void mark(void *arg) {
  (void)arg;
  atomic_store(&marked, 1);
}
static void pause_ms(long ms) {
  struct timespec d = {ms / 1000, (ms % 1000) * 1000000L};
  nanosleep(&d, NULL);
}
static int64_t mono_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/* The hashing queue: an address's hashes bounded and never two running,
 * another address's hash taken ahead of them, a bounded queue; a delayed
 * answer comes after the delay, and at once when draining. */
static void guard_queue_and_delay(void **state) {
  (void)state;
  tarn__kguard_config gc;
  tarn__kguard_config_default(&gc);
  gc.threads = 2;
  gc.queue_max = 2;
  gc.per_addr_max = 2;
  gc.delay_ms = 150;
  tarn__kguard *g;
  assert_int_equal(tarn__kguard_open(&gc, &g), 0);
  assert_int_equal(tarn__kguard_hash(g, "10.0.0.1:1", gated, nop, NULL), 0);
  pause_ms(50);                                                              /* a thread takes it */
  assert_int_equal(tarn__kguard_hash(g, "10.0.0.1:2", gated, nop, NULL), 0); /* waits */
  assert_int_equal(tarn__kguard_hash(g, "10.0.0.1:3", gated, nop, NULL), TARN_EBUSY);
  /* the other thread skips 10.0.0.1's second hash for 10.0.0.2's */
  assert_int_equal(tarn__kguard_hash(g, "10.0.0.2:1", mark, nop, NULL), 0);
  for (int i = 0; i < 200 && !atomic_load(&marked); i++)
    pause_ms(10);
  assert_true(atomic_load(&marked));
  assert_int_equal(tarn__kguard_hash(g, "10.0.0.3:1", gated, nop, NULL), 0);
  pause_ms(50); /* the other thread takes it: both busy, 10.0.0.1's second queued */
  assert_int_equal(tarn__kguard_hash(g, "10.0.0.4:1", gated, nop, NULL), 0);
  assert_int_equal(tarn__kguard_hash(g, "10.0.0.5:1", gated, nop, NULL), TARN_EBUSY); /* full */
  int64_t t0 = mono_ms();
  tarn__kguard_later(g, fire, NULL);
  pthread_mutex_lock(&gate_mu);
  gate_open = 1;
  pthread_cond_broadcast(&gate_cv);
  pthread_mutex_unlock(&gate_mu);
  for (int i = 0; i < 200 && (!fired_at || atomic_load(&ran) < 4); i++)
    pause_ms(10);
  assert_true(fired_at - t0 >= 150);
  assert_int_equal(atomic_load(&ran), 4);
  /* draining: a delayed answer goes at once */
  tarn__kguard_drain(g);
  fired_at = 0;
  tarn__kguard_later(g, fire, NULL);
  assert_true(fired_at != 0);
  tarn__kguard_close(g);
}

static int raw_how = -1;
static void raw_done(tarn__kreq *req, int how, tarn_buf *frame) {
  (void)req;
  raw_how = how;
  if (frame)
    tarn_buf_free(frame);
}

/* One PLAIN login of alice through the listener's entry: v0 (a raw token
 * frame, tarn__ksasl_raw) or v1 (SaslAuthenticate); 1 when the request's
 * frame still holds the password after it. */
static int plain_frame_keeps_password(tarn__knode *node, int v0) {
  tarn__ksasl *s = tarn__ksasl_new();
  assert_non_null(s);
  assert_int_equal(tarn__ksasl_handshake(node, s, "PLAIN", 5, v0), 0);
  static const char tok[] = "\0alice\0Alice-pw-1";
  size_t tl = sizeof tok - 1, off = v0 ? 0 : 4; /* v1: BYTES, a 32-bit length first */
  uint8_t *frame = malloc(off + tl);
  assert_non_null(frame);
  if (!v0)
    frame[0] = frame[1] = frame[2] = 0, frame[3] = (uint8_t)tl;
  memcpy(frame + off, tok, tl);
  tarn__kreq req;
  memset(&req, 0, sizeof req);
  req.frame = frame, req.frame_len = off + tl, req.sasl = s, req.done = raw_done;
  raw_how = -1;
  if (v0) {
    tarn__ksasl_raw(node, &req);
  } else {
    req.api_key = TARN__KAPI_SASL_AUTHENTICATE, req.api_version = 1;
    assert_non_null(req.arena = malloc(sizeof *req.arena));
    tarn__karena_init(req.arena);
    tarn__kapi_sasl_authenticate(node, &req);
  }
  assert_int_equal(raw_how, TARN__KREQ_RESPONSE);
  assert_string_equal(last_reason, "accepted");
  int kept = memmem(frame, off + tl, "Alice-pw-1", 10) != NULL;
  free(frame);
  tarn__ksasl_free(s);
  return kept;
}

static void plain_password_wiped(void **state) {
  (void)state;
  tarn__knode node;
  tarn_meta *m = alice_node(&node, TARN__KSASL_PLAIN, 4096);
  assert_false(plain_frame_keeps_password(&node, 1));
  assert_false(plain_frame_keeps_password(&node, 0));
  tarn_meta_close(m);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(rfc7677_vector),
      cmocka_unit_test(plain_strict_and_names_escaped),
      cmocka_unit_test(wrong_proofs_refused),
      cmocka_unit_test(malformed_first_refused),
      cmocka_unit_test(plain_checks_salted_keys),
      cmocka_unit_test(user_records),
      cmocka_unit_test(unknown_users_indistinguishable),
      cmocka_unit_test(plain_password_wiped),
      cmocka_unit_test(failed_logins_limited),
      cmocka_unit_test(guard_table_bounded),
      cmocka_unit_test(guard_queue_and_delay),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
