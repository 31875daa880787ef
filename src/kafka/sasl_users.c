/* Kafka SASL users in the metadata store (sasl_users.h). A value is
 *   "KU" format(1) mechanisms(1) iterations(be32) salt_len(1) salt
 *   stored_key(32) server_key(32) name_len(1) name
 * The name is in the value so that a scan needs no key parsing. */
#include "kafka/sasl_users.h"

#include <openssl/crypto.h>
#include <stdlib.h>
#include <string.h>

#include "kafka/keyseg.h"
#include "tarn/buf.h"
#include "tarn/error.h"
#include "tarn/meta.h"
#include "util/bytes.h"
#include "util/error.h"
#include "util/random.h"

#define PART TARN__KU_PARTITION
#define FORMAT 1
#define PREFIX "/users/"

static char *user_key(const char *name) {
  size_t n = strlen(name);
  if (!n || n > TARN__KU_NAME_MAX)
    return NULL;
  char *k = malloc(n * 3 + sizeof PREFIX);
  if (k) {
    memcpy(k, PREFIX, sizeof PREFIX - 1);
    tarn__kkey_escape(name, k + sizeof PREFIX - 1);
  }
  return k;
}

static int encode(const char *name, const tarn__kcred *c, tarn_buf *out) {
  size_t nl = name ? strlen(name) : 0;
  if (nl > TARN__KU_NAME_MAX || c->salt_len > TARN__SCRAM_SALT_MAX)
    return tarn__err(TARN_EINVAL, "kafka user: name or salt too long");
  uint8_t h[9] = {'K', 'U', FORMAT, (uint8_t)c->mechanisms, 0, 0, 0, 0, (uint8_t)c->salt_len};
  tarn__st_be32(h + 4, c->iterations);
  uint8_t l = (uint8_t)nl;
  if (tarn_buf_append(out, h, sizeof h) || tarn_buf_append(out, c->salt, c->salt_len) ||
      tarn_buf_append(out, c->stored_key, TARN__SCRAM_KEY) ||
      tarn_buf_append(out, c->server_key, TARN__SCRAM_KEY) || tarn_buf_append(out, &l, 1) ||
      tarn_buf_append(out, name, nl))
    return tarn__err(TARN_ENOMEM, "kafka user: out of memory");
  return 0;
}

int tarn__kuser_encode(const tarn__kcred *c, tarn_buf *out) { return encode("", c, out); }

/* Decodes p[0..n); name (TARN__KU_NAME_MAX + 1 bytes) gets the name when not NULL. */
static int decode(const uint8_t *p, size_t n, tarn__kcred *c, char *name) {
  memset(c, 0, sizeof *c);
  if (n < 9 || p[0] != 'K' || p[1] != 'U')
    return tarn__corrupt("kafka user record", 0, "not a user record");
  if (p[2] != FORMAT)
    return tarn__err(TARN_EVERSION, "kafka user record of format %u", p[2]);
  c->mechanisms = p[3];
  c->iterations = tarn__ld_be32(p + 4);
  c->salt_len = p[8];
  size_t off = 9;
  if (c->salt_len == 0 || c->salt_len > TARN__SCRAM_SALT_MAX ||
      n < off + c->salt_len + 2 * TARN__SCRAM_KEY + 1)
    return tarn__corrupt("kafka user record", 8, "salt of %zu bytes in %zu", c->salt_len, n);
  memcpy(c->salt, p + off, c->salt_len);
  off += c->salt_len;
  memcpy(c->stored_key, p + off, TARN__SCRAM_KEY);
  memcpy(c->server_key, p + off + TARN__SCRAM_KEY, TARN__SCRAM_KEY);
  off += 2 * TARN__SCRAM_KEY;
  size_t nl = p[off++];
  if (n != off + nl)
    return tarn__corrupt("kafka user record", off, "name of %zu bytes in %zu", nl, n - off);
  if (c->iterations < TARN__SCRAM_ITER_MIN || c->iterations > TARN__SCRAM_ITER_MAX ||
      !c->mechanisms || (c->mechanisms & ~(TARN__KSASL_PLAIN | TARN__KSASL_SCRAM_SHA_256)))
    return tarn__corrupt("kafka user record", 3, "mechanisms %#x or iterations %u", c->mechanisms,
                         c->iterations);
  if (name) {
    memcpy(name, p + off, nl);
    name[nl] = 0;
  }
  return 0;
}

int tarn__kuser_decode(const uint8_t *p, size_t n, tarn__kcred *out) {
  return decode(p, n, out, NULL);
}

int tarn__kuser_put(tarn_meta *m, const char *name, const tarn__kcred *c) {
  char *k = user_key(name);
  if (!k)
    return tarn__err(TARN_EINVAL, "kafka user name of 1..%d bytes", TARN__KU_NAME_MAX);
  tarn_buf b = TARN_BUF_INIT;
  int rc = encode(name, c, &b);
  if (!rc)
    rc = tarn_meta_put(m, PART, k, b.data, b.len, NULL);
  tarn_buf_free(&b);
  free(k);
  return rc ? tarn__errctx(rc, "kafka user %s: writing its record", name) : 0;
}

int tarn__kuser_get(tarn_meta *m, const char *name, tarn__kcred *out) {
  memset(out, 0, sizeof *out);
  char *k = user_key(name);
  if (!k)
    return tarn__err(TARN_ENOTFOUND, "no such kafka user");
  tarn_meta_rec r = {0};
  int rc = tarn_meta_get(m, PART, k, &r);
  free(k);
  if (!rc)
    rc = decode(r.value, r.value_len, out, NULL);
  tarn_meta_rec_free(&r);
  return rc;
}

/* Outside PREFIX: no user name maps to it, and the user scan skips it. */
#define SECRET_KEY "/secret/unknown-users"

int tarn__kuser_secret(tarn_meta *m, uint8_t out[32]) {
  for (int tries = 0; tries < 2; tries++) {
    tarn_meta_rec r = {0};
    int rc = tarn_meta_get(m, PART, SECRET_KEY, &r);
    if (!rc && r.value_len == 32)
      memcpy(out, r.value, 32);
    else if (!rc)
      rc = tarn__corrupt("kafka users secret", 0, "%zu bytes, not 32", r.value_len);
    tarn_meta_rec_free(&r);
    if (rc != TARN_ENOTFOUND)
      return rc;
    /* the first login of an unknown user: create it; a node that raced us
     * created it first (EEXIST), read theirs */
    uint8_t v[32];
    rc = tarn__random(v, sizeof v, "the unknown-users secret");
    if (!rc)
      rc = tarn_meta_create(m, PART, SECRET_KEY, v, sizeof v, TARN_META_PERSISTENT, NULL);
    OPENSSL_cleanse(v, sizeof v);
    if (rc && rc != TARN_EEXIST)
      return rc;
  }
  return tarn__err(TARN_EUNKNOWN, "kafka users secret: created but not read back");
}

int tarn__kuser_delete(tarn_meta *m, const char *name) {
  char *k = user_key(name);
  if (!k)
    return tarn__err(TARN_ENOTFOUND, "no such kafka user");
  int rc = tarn_meta_delete(m, PART, k);
  free(k);
  return rc;
}

int tarn__kuser_list(tarn_meta *m, char ***names, int **mechanisms, size_t *n) {
  *names = NULL, *mechanisms = NULL, *n = 0;
  tarn_meta_recs rs = {0};
  int rc = tarn_meta_scan(m, PART, PREFIX, PREFIX "\xff", 0, 0, &rs);
  if (rc)
    return rc;
  char **v = calloc(rs.n ? rs.n : 1, sizeof *v);
  int *mv = calloc(rs.n ? rs.n : 1, sizeof *mv);
  if (!v || !mv)
    rc = tarn__err(TARN_ENOMEM, "kafka users: out of memory");
  size_t k = 0;
  for (size_t i = 0; !rc && i < rs.n; i++) {
    char name[TARN__KU_NAME_MAX + 1];
    tarn__kcred c;
    rc = decode(rs.v[i].value, rs.v[i].value_len, &c, name);
    if (!rc && !(v[k] = strdup(name)))
      rc = tarn__err(TARN_ENOMEM, "kafka users: out of memory");
    if (!rc)
      mv[k++] = c.mechanisms;
  }
  tarn_meta_recs_free(&rs);
  if (rc) {
    for (size_t i = 0; i < k; i++)
      free(v[i]);
    free(v);
    free(mv);
    return rc;
  }
  *names = v, *mechanisms = mv, *n = k;
  return 0;
}
