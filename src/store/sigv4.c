/* AWS Signature Version 4: canonical request, string to sign, signing-key
 * chain (HMAC of date, region, service, "aws4_request"), signature. */
#include "store/sigv4.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/sha.h>

#include "util/error.h"
#include "util/sb.h"

static const char hexd[] = "0123456789abcdef";

static void to_hex(const unsigned char *p, size_t n, char *out) {
  for (size_t i = 0; i < n; i++)
    out[2 * i] = hexd[p[i] >> 4], out[2 * i + 1] = hexd[p[i] & 15];
  out[2 * n] = 0;
}

void tarn__sha256_hex(const void *p, size_t n, char out[65]) {
  unsigned char md[SHA256_DIGEST_LENGTH];
  SHA256(p, n, md);
  to_hex(md, sizeof md, out);
}

static int hmac(const void *key, size_t klen, const void *msg, size_t mlen, unsigned char out[32]) {
  unsigned int len = 32;
  if (!HMAC(EVP_sha256(), key, (int)klen, msg, mlen, out, &len) || len != 32)
    return tarn__err(TARN_EIO, "sigv4: HMAC-SHA256 failed");
  return 0;
}

int tarn__sigv4_encode(tarn_buf *out, const char *s, size_t n, int keep_slash) {
  static const char up[] = "0123456789ABCDEF";
  int rc = tarn_buf_reserve(out, n * 3);
  if (rc)
    return rc;
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    if (isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~' || (keep_slash && c == '/'))
      out->data[out->len++] = c;
    else {
      out->data[out->len++] = '%';
      out->data[out->len++] = (uint8_t)up[c >> 4];
      out->data[out->len++] = (uint8_t)up[c & 15];
    }
  }
  return 0;
}

typedef struct pair {
  char *k, *v;
} pair;

static int pair_cmp(const void *a, const void *b) {
  const pair *x = a, *y = b;
  int c = strcmp(x->k, y->k);
  return c ? c : strcmp(x->v, y->v);
}

static char *encoded(const char *s, int keep_slash) {
  tarn_buf b = TARN_BUF_INIT;
  if (tarn__sigv4_encode(&b, s ? s : "", s ? strlen(s) : 0, keep_slash) || tarn_buf_putc(&b, 0)) {
    tarn_buf_free(&b);
    return NULL;
  }
  return (char *)tarn_buf_steal(&b, NULL);
}

int tarn__sigv4_query(tarn_buf *out, const tarn__sigv4_kv *q, size_t nq) {
  if (nq == 0)
    return 0;
  pair *ps = calloc(nq, sizeof *ps);
  if (!ps)
    return tarn__err(TARN_ENOMEM, "sigv4: out of memory");
  int rc = 0;
  for (size_t i = 0; i < nq && rc == 0; i++) {
    ps[i].k = encoded(q[i].name, 0);
    ps[i].v = encoded(q[i].value, 0);
    if (!ps[i].k || !ps[i].v)
      rc = tarn__err(TARN_ENOMEM, "sigv4: out of memory");
  }
  if (rc == 0)
    qsort(ps, nq, sizeof *ps, pair_cmp);
  if (rc == 0) {
    tarn__sb sb;
    tarn__sb_init(&sb, out);
    for (size_t i = 0; i < nq; i++) {
      if (i)
        tarn__sb_putc(&sb, '&');
      tarn__sb_puts(&sb, ps[i].k);
      tarn__sb_putc(&sb, '=');
      tarn__sb_puts(&sb, ps[i].v);
    }
    rc = tarn__sb_rc(&sb);
  }
  for (size_t i = 0; i < nq; i++)
    free(ps[i].k), free(ps[i].v);
  free(ps);
  return rc;
}

/* A header's canonical form: lower-case name; value trimmed, runs of spaces folded. */
static int canon_header(const tarn__sigv4_kv *h, pair *out) {
  size_t nl = strlen(h->name), vl = strlen(h->value);
  out->k = malloc(nl + 1);
  out->v = malloc(vl + 1);
  if (!out->k || !out->v)
    return tarn__err(TARN_ENOMEM, "sigv4: out of memory");
  for (size_t i = 0; i <= nl; i++)
    out->k[i] = (char)tolower((unsigned char)h->name[i]);
  size_t j = 0;
  const char *v = h->value;
  while (*v == ' ' || *v == '\t')
    v++;
  for (; *v; v++) {
    int sp = *v == ' ' || *v == '\t';
    if (sp && (j == 0 || out->v[j - 1] == ' '))
      continue;
    out->v[j++] = sp ? ' ' : *v;
  }
  while (j > 0 && out->v[j - 1] == ' ')
    j--;
  out->v[j] = 0;
  return 0;
}

int tarn__sigv4_sign(const tarn__sigv4_creds *c, const char *method, const char *canon_uri,
                     const tarn__sigv4_kv *query, size_t nq, const tarn__sigv4_kv *headers,
                     size_t nh, const char *payload_hash, const char *amz_date,
                     tarn_buf *authorization, tarn_buf *canonical, tarn_buf *to_sign) {
  if (strlen(amz_date) != 16 || amz_date[8] != 'T' || amz_date[15] != 'Z')
    return tarn__err(TARN_EINVAL, "sigv4: x-amz-date \"%s\" is not YYYYMMDDTHHMMSSZ", amz_date);
  tarn_buf cr = TARN_BUF_INIT, sts = TARN_BUF_INIT, signed_h = TARN_BUF_INIT;
  pair *hs = calloc(nh ? nh : 1, sizeof *hs);
  int rc = hs ? 0 : tarn__err(TARN_ENOMEM, "sigv4: out of memory");
  for (size_t i = 0; i < nh && rc == 0; i++)
    rc = canon_header(&headers[i], &hs[i]);
  if (rc == 0 && nh > 1)
    qsort(hs, nh, sizeof *hs, pair_cmp);
  /* canonical request */
  tarn__sb scr, ssh;
  tarn__sb_init(&scr, &cr), tarn__sb_init(&ssh, &signed_h);
  if (!rc) {
    tarn__sb_appendf(&scr, "%s\n%s\n", method, canon_uri);
    if (!tarn__sb_rc(&scr))
      scr.rc = tarn__sigv4_query(&cr, query, nq);
    tarn__sb_putc(&scr, '\n');
    for (size_t i = 0; i < nh; i++) {
      tarn__sb_appendf(&scr, "%s:%s\n", hs[i].k, hs[i].v);
      if (i)
        tarn__sb_putc(&ssh, ';');
      tarn__sb_puts(&ssh, hs[i].k);
    }
    if (!(rc = tarn__sb_rc(&ssh))) {
      tarn__sb_putc(&scr, '\n');
      tarn__sb_append(&scr, signed_h.data, signed_h.len);
      tarn__sb_appendf(&scr, "\n%s", payload_hash);
      rc = tarn__sb_rc(&scr);
    }
  }
  /* string to sign */
  char date[9], crhash[65];
  memcpy(date, amz_date, 8);
  date[8] = 0;
  if (!rc) {
    tarn__sha256_hex(cr.data, cr.len, crhash);
    tarn__sb ssts;
    tarn__sb_init(&ssts, &sts);
    tarn__sb_appendf(&ssts, "AWS4-HMAC-SHA256\n%s\n%s/%s/%s/aws4_request\n%s", amz_date, date,
                     c->region, c->service, crhash);
    rc = tarn__sb_rc(&ssts);
  }
  /* signing key: HMAC chain from "AWS4" + secret */
  unsigned char k[32];
  char sig[65];
  if (!rc) {
    size_t sl = strlen(c->secret_key);
    char *ks = malloc(sl + 5);
    if (!ks)
      rc = tarn__err(TARN_ENOMEM, "sigv4: out of memory");
    else {
      memcpy(ks, "AWS4", 4);
      memcpy(ks + 4, c->secret_key, sl + 1);
      rc = hmac(ks, sl + 4, date, 8, k);
      OPENSSL_cleanse(ks, sl + 4);
      free(ks);
    }
    if (!rc)
      rc = hmac(k, 32, c->region, strlen(c->region), k);
    if (!rc)
      rc = hmac(k, 32, c->service, strlen(c->service), k);
    if (!rc)
      rc = hmac(k, 32, "aws4_request", 12, k);
    unsigned char s[32];
    if (!rc)
      rc = hmac(k, 32, sts.data, sts.len, s);
    OPENSSL_cleanse(k, sizeof k);
    if (!rc)
      to_hex(s, 32, sig);
  }
  if (!rc) {
    tarn_buf_reset(authorization);
    tarn__sb sa;
    tarn__sb_init(&sa, authorization);
    tarn__sb_appendf(&sa, "AWS4-HMAC-SHA256 Credential=%s/%s/%s/%s/aws4_request,SignedHeaders=",
                     c->access_key, date, c->region, c->service);
    tarn__sb_append(&sa, signed_h.data, signed_h.len);
    tarn__sb_appendf(&sa, ",Signature=%s", sig);
    rc = tarn__sb_cstr(&sa); /* NUL-terminated, NUL not counted */
  }
  if (!rc && canonical) {
    tarn_buf_reset(canonical);
    rc = tarn_buf_append(canonical, cr.data, cr.len);
  }
  if (!rc && to_sign) {
    tarn_buf_reset(to_sign);
    rc = tarn_buf_append(to_sign, sts.data, sts.len);
  }
  for (size_t i = 0; hs && i < nh; i++)
    free(hs[i].k), free(hs[i].v);
  free(hs);
  tarn_buf_free(&cr), tarn_buf_free(&sts), tarn_buf_free(&signed_h);
  return rc;
}
