/* etcd://HOST:PORT[,HOST:PORT...][?prefix=ROOT] — the metadata store on etcd v3, through
 * its JSON gateway (POST /v3/kv/range|put|deleterange|txn, /v3/lease/...,
 * /v3/watch) with libcurl and jansson. docs/meta-etcd.md has the mapping of
 * every primitive; in short:
 *
 *   etcd key   = [root] "T" partition 0x00 tarn_meta_key_encode(key),
 *                root = "P" ROOT 0x00 with the option prefix=ROOT, else empty
 *                (bytewise etcd order = the store's key order, per partition)
 *   etcd value = 0x01, created_ms (8 bytes BE), nonce (8 bytes), value
 *   version    = the record's mod_revision (store-wide, grows on every write)
 *   session    = a lease (TTL = session timeout) kept alive by a thread;
 *                ephemeral records carry the lease
 *
 * Three files: this one, the records (the backend's table: lookups, writes,
 * deletes, the sequenced put, listing, watches); store/etcd_http.c, the
 * transport (endpoints, TLS, sign-in, error mapping); store/etcd_session.c,
 * the leases (the session and its keepalive, the store clock).
 *
 * Writes that must keep the creation timestamp (Put, CompareAndSet) and the
 * sequenced put are read-then-transaction loops guarded by mod_revision
 * compares, retried on conflict. The JSON gateway omits false and zero
 * fields: a failed txn has no "succeeded", a count of 0 is absent.
 *
 * On a connection error a request moves to the next endpoint. A write whose
 * outcome is unknown reports TARN_EUNKNOWN, except the sequenced put, which
 * finds out itself: its value carries a random nonce that it looks for under
 * the keys it tried before trying again, and its range compare makes a late
 * commit of an earlier attempt and a new attempt exclusive. */
#include <jansson.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "store/etcd_http.h"
#include "store/etcd_session.h"
#include "store/meta_vfs.h"
#include "tarn/buf.h"
#include "util/base64.h"
#include "util/bytes.h"
#include "util/clock.h"
#include "util/error.h"
#include "util/planted.h"

#define HDR 17 /* value header: tag, created_ms, nonce */

typedef struct ehandle {
  tarn__etcd_http http;
  tarn__etcd_session sess;
  /* Every key of the handle starts with this: empty, or "P" prefix 0x00 for
   * the URI option prefix= (keys without a root start with "T", so deployments
   * under different roots, or none, never share a key). */
  char *root;
  size_t rootlen;
} ehandle;

static int post(ehandle *h, const char *path, json_t *req, int unsafe, json_t **out) {
  return tarn__etcd_post(&h->http, path, req, unsafe, out);
}

/* ---- base64 and keys -------------------------------------------------------- */

/* The Base64 text of p[0..n) as a C string (malloc'd); NULL without memory. */
static char *b64(const uint8_t *p, size_t n) {
  tarn_buf t = TARN_BUF_INIT;
  if (tarn__b64_encode(p, n, &t) || tarn_buf_putc(&t, 0)) {
    tarn_buf_free(&t);
    return NULL;
  }
  return (char *)tarn_buf_steal(&t, NULL);
}

/* Appends the bytes of an answer's Base64 field s (NULL: absent, none). */
static int unb64(const char *s, tarn_buf *out, const char *what) {
  return tarn__b64_decode(s ? s : "", s ? strlen(s) : 0, out, what);
}

/* The etcd key's bytes, before Base64: [root] "T" part 0x00 [encoded key]
 * [extra byte]; extra < 0: none. */
static int ekey_raw(const ehandle *h, const char *part, const char *key, int extra, tarn_buf *b) {
  size_t pl = strlen(part), kl = key ? tarn_meta_key_encode(key, NULL) : 0;
  if (tarn_buf_reserve(b, h->rootlen + 3 + pl + kl))
    return -1;
  if (h->rootlen)
    tarn_buf_append(b, h->root, h->rootlen);
  tarn_buf_putc(b, 'T');
  tarn_buf_append(b, part, pl);
  tarn_buf_putc(b, 0);
  if (key)
    b->len += tarn_meta_key_encode(key, b->data + b->len);
  if (extra >= 0)
    tarn_buf_putc(b, (uint8_t)extra);
  return 0;
}

/* The etcd key, in Base64 (malloc'd; NULL without memory). */
static char *ekey(const ehandle *h, const char *part, const char *key, int extra) {
  tarn_buf b = TARN_BUF_INIT;
  char *s = ekey_raw(h, part, key, extra, &b) ? NULL : b64(b.data, b.len);
  tarn_buf_free(&b);
  return s;
}

/* The end of a partition's key space: [root] "T" part 0x01. */
static char *epart_end(const ehandle *h, const char *part) {
  tarn_buf b = TARN_BUF_INIT;
  char *s = NULL;
  if (ekey_raw(h, part, NULL, -1, &b) == 0) {
    b.data[b.len - 1] = 1; /* the 0x00 after the partition */
    s = b64(b.data, b.len);
  }
  tarn_buf_free(&b);
  return s;
}

/* ---- records -------------------------------------------------------------------- */

static int kv_to_rec(const ehandle *h, json_t *kv, const char *part, int values, tarn_meta_rec *r,
                     int64_t *lease, uint64_t *nonce) {
  tarn_buf k = TARN_BUF_INIT, v = TARN_BUF_INIT;
  int rc = unb64(json_string_value(json_object_get(kv, "key")), &k, "etcd key");
  if (rc == 0)
    rc = unb64(json_string_value(json_object_get(kv, "value")), &v, "etcd value");
  size_t pl = h->rootlen + strlen(part) + 2;
  char *key = NULL;
  if (rc == 0 && k.len < pl) {
    rc = tarn__err(TARN_ECORRUPT, "etcd: a record's key is not a tarn key");
  } else if (rc == 0 && (v.len < HDR || v.data[0] != 1)) {
    rc = tarn__corrupt("etcd value header", v.len < HDR ? v.len : 0, "not a tarn record");
  } else if (rc == 0 && !(key = malloc(k.len - pl + 1))) {
    rc = tarn__err(TARN_ENOMEM, "etcd: out of memory");
  } else if (rc == 0 && (rc = tarn_meta_key_decode(k.data + pl, k.len - pl, key)) == 0) {
    rc =
        tarn__meta_rec_set(r, key, values ? v.data + HDR : NULL, v.len - HDR,
                           tarn__etcd_jint(kv, "mod_revision"), (int64_t)tarn__ld_be64(v.data + 1));
    if (lease)
      *lease = tarn__etcd_jint(kv, "lease");
    if (nonce)
      *nonce = tarn__ld_be64(v.data + 9);
  }
  free(key);
  tarn_buf_free(&k);
  tarn_buf_free(&v);
  return rc;
}

static char *evalue(const void *val, size_t len, int64_t created, uint64_t nonce) {
  uint8_t *p = malloc(HDR + len);
  if (!p)
    return NULL;
  p[0] = 1;
  tarn__st_be64(p + 1, (uint64_t)created);
  tarn__st_be64(p + 9, nonce);
  if (len)
    memcpy(p + HDR, val, len);
  char *s = b64(p, HDR + len);
  free(p);
  return s;
}

static json_t *range_req(const char *key, const char *end, int desc) {
  json_t *req = json_pack("{s:s, s:s, s:s}", "key", key, "range_end", end, "limit", "1");
  if (req && desc) {
    json_object_set_new(req, "sort_order", json_string("DESCEND"));
    json_object_set_new(req, "sort_target", json_string("KEY"));
  }
  return req;
}

/* One range request: [key, end) with an order; the first kv (or NULL). */
static int range_one(ehandle *h, const char *key, const char *end, int desc, json_t **resp,
                     json_t **kv) {
  json_t *req = range_req(key, end, desc);
  if (!req)
    return tarn__err(TARN_ENOMEM, "etcd: out of memory");
  int rc = post(h, "/v3/kv/range", req, TARN__ETCD_SAFE, resp);
  json_decref(req);
  *kv = rc ? NULL : json_array_get(json_object_get(*resp, "kvs"), 0);
  return rc;
}

static int e_find(tarn_meta *m, const char *part, const char *key, int cmp, tarn_meta_rec *out) {
  ehandle *h = m->impl;
  char *k = NULL, *e = NULL;
  int desc = 0, rc;
  json_t *resp = NULL, *kv = NULL;
  switch (cmp) {
  case TARN__META_EQUAL: k = ekey(h, part, key, -1), e = ekey(h, part, key, 0); break;
  case TARN__META_CEILING: k = ekey(h, part, key, -1), e = epart_end(h, part); break;
  case TARN__META_HIGHER: k = ekey(h, part, key, 0), e = epart_end(h, part); break;
  case TARN__META_FLOOR: k = ekey(h, part, NULL, -1), e = ekey(h, part, key, 0), desc = 1; break;
  default: k = ekey(h, part, NULL, -1), e = ekey(h, part, key, -1), desc = 1; break;
  }
  if (!k || !e)
    rc = tarn__err(TARN_ENOMEM, "etcd: out of memory");
  else if ((rc = range_one(h, k, e, desc, &resp, &kv)) == 0) {
    if (!kv)
      rc = tarn__err(TARN_ENOTFOUND, "etcd: no key for \"%s\" in partition %s", key, part);
    else
      rc = kv_to_rec(h, kv, part, 1, out, NULL, NULL);
  }
  json_decref(resp);
  free(k);
  free(e);
  return rc;
}

/* A txn: compares, then the success ops, else the failure ops (each may be
 * NULL; references stolen). *ok = succeeded, *rev = the revision after it;
 * *resp (may be NULL) gets the whole response, so a retry or a verdict on
 * the guards needs no separate read. */
static int txn(ehandle *h, json_t *compares, json_t *success, json_t *failure, int *ok,
               int64_t *rev, json_t **resp) {
  json_t *req = json_object();
  if (req) {
    json_object_set_new(req, "compare", compares ? compares : json_array());
    json_object_set_new(req, "success", success ? success : json_array());
    if (failure)
      json_object_set_new(req, "failure", failure);
  } else {
    json_decref(compares), json_decref(success), json_decref(failure);
    return tarn__err(TARN_ENOMEM, "etcd: out of memory");
  }
  json_t *r;
  int rc = post(h, "/v3/kv/txn", req, TARN__ETCD_UNSAFE, &r);
  json_decref(req);
  if (rc)
    return rc;
  *ok = json_is_true(json_object_get(r, "succeeded"));
  *rev = tarn__etcd_jint(json_object_get(r, "header"), "revision");
  if (resp)
    *resp = r;
  else
    json_decref(r);
  return 0;
}

/* A txn of one put on success; on failure the txn runs the failure ops (if
 * not NULL; stolen) and *fresp gets the whole response. */
static int txn_put(ehandle *h, json_t *compares, const char *key, const char *val, int64_t lease,
                   json_t *failure, int *ok, int64_t *rev, json_t **fresp) {
  json_t *put = json_pack("{s:s, s:s}", "key", key, "value", val);
  if (put && lease)
    json_object_set_new(put, "lease", json_sprintf("%lld", (long long)lease));
  json_t *succ = put ? json_pack("[{s:o}]", "request_put", put) : NULL;
  if (!succ) {
    json_decref(compares), json_decref(failure);
    return tarn__err(TARN_ENOMEM, "etcd: out of memory");
  }
  json_t *resp = NULL;
  int rc = txn(h, compares, succ, failure, ok, rev, &resp);
  if (rc)
    return rc;
  if (fresp && !*ok)
    *fresp = resp;
  else
    json_decref(resp);
  return 0;
}

static json_t *cmp_mod(const char *key, const char *range_end, const char *result, int64_t rev) {
  json_t *c = json_pack("{s:s, s:s, s:s, s:o}", "target", "MOD", "key", key, "result", result,
                        "mod_revision", json_sprintf("%lld", (long long)rev));
  if (!c)
    return NULL;
  if (range_end)
    json_object_set_new(c, "range_end", json_string(range_end));
  return c;
}

static json_t *cmp_absent(const char *key) {
  return json_pack("{s:s, s:s, s:s, s:s}", "target", "CREATE", "key", key, "result", "EQUAL",
                   "create_revision", "0");
}

static json_t *cmp_present(const char *key) {
  return json_pack("{s:s, s:s, s:s, s:s}", "target", "CREATE", "key", key, "result", "GREATER",
                   "create_revision", "0");
}

/* Appends the guards' compares to c and, to the failure ops f, a read of each
 * guard's key (so a failed txn tells which guard failed, at its revision). */
static int add_guards(ehandle *h, const char *part, const tarn_meta_guard *g, size_t ng, json_t *c,
                      json_t *f) {
  for (size_t i = 0; i < ng; i++) {
    char *k = ekey(h, part, g[i].key, -1), *e = ekey(h, part, g[i].key, 0);
    /* a TARN_META_GUARD_LAST is no compare of its own: the sequenced put
     * compares the range it read (seq_put_locked); its key is still read so
     * that the failure ops stay one per guard */
    json_t *cmp = !k || !e                                ? NULL
                  : g[i].kind == TARN_META_GUARD_LAST     ? json_null()
                  : g[i].kind == TARN_META_GUARD_ABSENT   ? cmp_absent(k)
                  : g[i].version == TARN_META_ANY_VERSION ? cmp_present(k)
                                                          : cmp_mod(k, NULL, "EQUAL", g[i].version);
    json_t *rd =
        k && e ? json_pack("{s:{s:s, s:s}}", "request_range", "key", k, "range_end", e) : NULL;
    free(k);
    free(e);
    if (!cmp || !rd || (!json_is_null(cmp) && json_array_append_new(c, cmp)) ||
        json_array_append_new(f, rd)) {
      json_decref(cmp), json_decref(rd);
      return tarn__err(TARN_ENOMEM, "etcd: out of memory");
    }
  }
  return 0;
}

/* The kv that failure op i of a failed txn read, or NULL. */
static json_t *failed_read(json_t *resp, size_t i) {
  json_t *rr =
      json_object_get(json_array_get(json_object_get(resp, "responses"), i), "response_range");
  return json_array_get(json_object_get(rr, "kvs"), 0);
}

/* After a failed txn whose failure ops began with add_guards' reads:
 * TARN_EGUARD for the first guard that failed, 0 if all held. */
static int guard_verdict(const char *part, const char *key, const tarn_meta_guard *g, size_t ng,
                         json_t *resp) {
  for (size_t i = 0; i < ng; i++) {
    json_t *kv = failed_read(resp, i);
    int64_t ver = kv ? tarn__etcd_jint(kv, "mod_revision") : 0;
    if (!tarn__meta_guard_holds(&g[i], kv != NULL, ver))
      return tarn__meta_guard_failed("etcd", part, key, &g[i], kv != NULL, ver);
  }
  return 0;
}

/* The guards' verdict now, by a txn of their compares alone (read-only):
 * for an answer of the primitive's own that comes from an earlier read, so
 * that TARN_EGUARD still takes precedence. */
static int guards_now(ehandle *h, const char *part, const char *key, const tarn_meta_guard *g,
                      size_t ng) {
  if (ng == 0)
    return 0;
  json_t *c = json_array(), *f = json_array(), *resp = NULL;
  if (!c || !f || add_guards(h, part, g, ng, c, f)) {
    json_decref(c), json_decref(f);
    return tarn__err(TARN_ENOMEM, "etcd: out of memory");
  }
  int ok;
  int64_t rev;
  int rc = txn(h, c, NULL, f, &ok, &rev, &resp);
  if (rc == 0 && !ok)
    rc = guard_verdict(part, key, g, ng, resp);
  json_decref(resp);
  return rc;
}

static int e_write(tarn_meta *m, const char *part, const char *key, const void *val, size_t len,
                   int mode, int flags, int64_t version, const tarn_meta_guard *g, size_t ng,
                   tarn_meta_stat *st) {
  ehandle *h = m->impl;
  char *k = ekey(h, part, key, -1), *e = ekey(h, part, key, 0);
  int rc = 0;
  if (!k || !e) {
    rc = tarn__err(TARN_ENOMEM, "etcd: out of memory");
    goto out;
  }
  for (;;) {
    int exists = 0;
    int64_t created = tarn__meta_now_ms(), lease = 0, cur = 0;
    uint64_t nonce = tarn__etcd_rand64();
    if (mode != TARN__META_CREATE) {
      json_t *resp, *kv;
      if ((rc = range_one(h, k, e, 0, &resp, &kv)))
        break;
      tarn_meta_rec r;
      if (kv &&
          (rc = kv_to_rec(h, kv, part, 0, &r, &lease,
                          TARN__PLANTED(TARN__BUG_SEQ_PUT_RETRY_BLIND) ? NULL : &nonce)) == 0) {
        exists = 1;
        cur = r.stat.version;
        /* kept when the value is replaced: the creation time, and the nonce,
         * which names the write that created the key. A sequenced put of
         * unknown outcome looks for its nonce under the key it tried; C3
         * (tarn compact, tarn serve) replaces the last RAW record in place
         * (a CompareAndSet), possibly within the seconds that put waited
         * for its answer, and with a fresh nonce the put took its own record
         * for another's and indexed its entries again after it (issue 31
         * item 1, the durability loop's duplicate). */
        created = r.stat.created_ms;
        tarn_meta_rec_free(&r);
      }
      json_decref(resp);
      if (rc)
        break;
      if (mode == TARN__META_CAS && (!exists || cur != version) &&
          (rc = guards_now(h, part, key, g, ng)))
        break;
      if (mode == TARN__META_CAS && !exists) {
        rc = tarn__err(TARN_ENOTFOUND, "etcd: compare-and-set of absent \"%s\"", key);
        break;
      }
      if (mode == TARN__META_CAS && cur != version) {
        rc = tarn__err(TARN_ECONFLICT, "etcd: \"%s\" has version %lld, not %lld", key,
                       (long long)cur, (long long)version);
        break;
      }
    } else if (flags & TARN_META_EPHEMERAL) {
      lease = h->sess.lease;
    }
    char *v = evalue(val, len, created, nonce);
    json_t *c = json_array(), *f = ng ? json_array() : NULL;
    json_t *one = exists ? cmp_mod(k, NULL, "EQUAL", cur) : cmp_absent(k);
    if (!v || !c || !one || json_array_append_new(c, one) || (ng && !f) ||
        (rc = add_guards(h, part, g, ng, c, f))) {
      free(v), json_decref(c), json_decref(f);
      rc = tarn__err(TARN_ENOMEM, "etcd: out of memory");
      break;
    }
    int ok;
    int64_t rev;
    json_t *fresp = NULL;
    rc = txn_put(h, c, k, v, lease, f, &ok, &rev, ng ? &fresp : NULL);
    free(v);
    if (rc == TARN_ESESSION)
      tarn__meta_session_ended(m);
    if (rc)
      break;
    if (ok) {
      st->version = rev;
      st->created_ms = created;
      break;
    }
    rc = guard_verdict(part, key, g, ng, fresp);
    json_decref(fresp);
    if (rc)
      break;
    if (mode == TARN__META_CREATE) {
      rc = tarn__err(TARN_EEXIST, "etcd: \"%s\" exists in partition %s", key, part);
      break;
    }
    /* Put or CompareAndSet raced with another write: read again. */
  }
out:
  free(k);
  free(e);
  return rc;
}

static int delete_range(ehandle *h, const char *k, const char *e, size_t *count) {
  json_t *req = json_pack("{s:s, s:s}", "key", k, "range_end", e), *resp;
  if (!req)
    return tarn__err(TARN_ENOMEM, "etcd: out of memory");
  int rc = post(h, "/v3/kv/deleterange", req, TARN__ETCD_UNSAFE, &resp);
  json_decref(req);
  if (rc)
    return rc;
  *count = (size_t)tarn__etcd_jint(resp, "deleted"); /* absent when 0 */
  json_decref(resp);
  return 0;
}

/* A delete as a txn: the guards, and (key) that key exists with the version
 * (unless TARN_META_ANY_VERSION); then DeleteRange [k, e). */
static int guarded_delete(ehandle *h, const char *part, const char *what, const char *k,
                          const char *e, int key, int64_t version, const tarn_meta_guard *g,
                          size_t ng, size_t *count) {
  json_t *c = json_array(), *f = json_array();
  json_t *del = json_pack("[{s:{s:s, s:s}}]", "request_delete_range", "key", k, "range_end", e);
  int rc = 0, bad = !c || !f || !del || add_guards(h, part, g, ng, c, f) != 0;
  if (!bad && key) {
    json_t *own =
        version == TARN_META_ANY_VERSION ? cmp_present(k) : cmp_mod(k, NULL, "EQUAL", version);
    json_t *rd = json_pack("{s:{s:s, s:s}}", "request_range", "key", k, "range_end", e);
    /* both appended (or freed) whatever fails */
    bad = (json_array_append_new(c, own) | json_array_append_new(f, rd)) != 0;
  }
  if (bad) {
    json_decref(c), json_decref(f), json_decref(del);
    return tarn__err(TARN_ENOMEM, "etcd: out of memory");
  }
  int ok;
  int64_t rev;
  json_t *resp = NULL;
  if ((rc = txn(h, c, del, f, &ok, &rev, &resp)))
    return rc;
  if (ok) {
    json_t *dr = json_object_get(json_array_get(json_object_get(resp, "responses"), 0),
                                 "response_delete_range");
    *count = (size_t)tarn__etcd_jint(dr, "deleted"); /* absent when 0 */
  } else if ((rc = guard_verdict(part, what, g, ng, resp)) == 0) {
    json_t *kv = key ? failed_read(resp, ng) : NULL;
    if (!key)
      rc = tarn__err(TARN_EIO, "etcd: guarded delete of \"%s\" failed with its guards holding",
                     what);
    else if (!kv)
      rc = tarn__err(TARN_ENOTFOUND, "etcd: delete of absent \"%s\"", what);
    else
      rc = tarn__err(TARN_ECONFLICT, "etcd: delete of \"%s\": version %lld, not %lld", what,
                     (long long)tarn__etcd_jint(kv, "mod_revision"), (long long)version);
  }
  json_decref(resp);
  return rc;
}

static int e_del(tarn_meta *m, const char *part, const char *key, int64_t version,
                 const tarn_meta_guard *g, size_t ng) {
  ehandle *h = m->impl;
  char *k = ekey(h, part, key, -1), *e = ekey(h, part, key, 0);
  size_t n = 0;
  int rc = !k || !e ? tarn__err(TARN_ENOMEM, "etcd: out of memory")
           : version == TARN_META_ANY_VERSION && ng == 0
               ? delete_range(m->impl, k, e, &n)
               : guarded_delete(h, part, key, k, e, 1, version, g, ng, &n);
  free(k);
  free(e);
  if (rc == 0 && n == 0)
    rc = tarn__err(TARN_ENOTFOUND, "etcd: delete of absent \"%s\"", key);
  return rc;
}

static int e_del_range(tarn_meta *m, const char *part, const char *a, const char *b,
                       const tarn_meta_guard *g, size_t ng, size_t *count) {
  ehandle *h = m->impl;
  char *k = ekey(h, part, a, -1), *e = ekey(h, part, b, -1);
  int rc = !k || !e  ? tarn__err(TARN_ENOMEM, "etcd: out of memory")
           : ng == 0 ? delete_range(m->impl, k, e, count)
                     : guarded_delete(h, part, a, k, e, 0, TARN_META_ANY_VERSION, g, ng, count);
  free(k);
  free(e);
  return rc;
}

/* Looks for our nonce under key: 1 found (rec filled), 0 not, <0 error. */
static int find_nonce(ehandle *h, const char *part, const char *key, uint64_t nonce,
                      tarn_meta_rec *out) {
  char *k = ekey(h, part, key, -1), *e = ekey(h, part, key, 0);
  json_t *resp = NULL, *kv;
  int rc = k && e ? range_one(h, k, e, 0, &resp, &kv) : tarn__err(TARN_ENOMEM, "etcd: oom");
  if (rc == 0 && kv) {
    tarn_meta_rec r;
    uint64_t got;
    rc = kv_to_rec(h, kv, part, 0, &r, NULL, &got);
    if (rc == 0 && got == nonce) {
      *out = r;
      rc = 1;
    } else if (rc == 0) {
      tarn_meta_rec_free(&r);
    }
  }
  json_decref(resp);
  free(k);
  free(e);
  return rc;
}

/* Every txn, even one whose compare fails, is a raft round with an fsync,
 * so racing sequenced puts waste the cluster's time. Clients in one process
 * queue per partition here instead; other processes still race. */
#define SEQ_LOCKS 64
static pthread_mutex_t seq_locks[SEQ_LOCKS];
static pthread_once_t seq_locks_once = PTHREAD_ONCE_INIT;
static void seq_locks_init(void) {
  for (int i = 0; i < SEQ_LOCKS; i++)
    pthread_mutex_init(&seq_locks[i], NULL);
}

static int seq_put_locked(tarn_meta *m, const char *part, const char *prefix, uint64_t d1,
                          uint64_t d2, const void *val, size_t len, const tarn_meta_guard *g,
                          size_t ng, tarn_meta_rec *out);

static int e_seq_put(tarn_meta *m, const char *part, const char *prefix, uint64_t d1, uint64_t d2,
                     const void *val, size_t len, const tarn_meta_guard *g, size_t ng,
                     tarn_meta_rec *out) {
  uint32_t hsh = 2166136261u; /* FNV-1a of the partition */
  for (const char *p = part; *p; p++)
    hsh = (hsh ^ (uint8_t)*p) * 16777619u;
  pthread_once(&seq_locks_once, seq_locks_init);
  pthread_mutex_t *mu = &seq_locks[hsh % SEQ_LOCKS];
  pthread_mutex_lock(mu);
  int rc = seq_put_locked(m, part, prefix, d1, d2, val, len, g, ng, out);
  pthread_mutex_unlock(mu);
  return rc;
}

/* A sequenced put in progress (seq_put_locked). */
typedef struct seqput {
  ehandle *h;
  const char *part, *prefix;
  uint64_t d1, d2;
  const void *val;
  size_t len;
  const tarn_meta_guard *g;
  size_t ng;
  tarn_meta_rec *out;
  char *lo, *hi; /* the etcd keys of [first key, bound) */
  char *tried[64];
  int ntried, unknown; /* unknown: an attempt's outcome is unknown */
  char *base;          /* the last key the latest unknown attempt followed ("" none) */
  uint64_t nonce;
  int64_t deadline;
  json_t *state; /* a range response: the last key below the bound */
  json_t *kv;
  int64_t rev;
} seqput;

/* Reads the state (unless a lost race's answer holds it) and looks for the
 * nonce of the attempts of unknown outcome: 1 found (s->out filled), 0 go
 * on with *last the record of the last key (none: last->key NULL), <0 error. */
static int seq_look(seqput *s, tarn_meta_rec *last) {
  ehandle *h = s->h;
  int rc;
  if (!s->state) {
    if ((rc = range_one(h, s->lo, s->hi, 1, &s->state, &s->kv)))
      return rc;
    s->rev = tarn__etcd_jint(json_object_get(s->state, "header"), "revision");
  }
  /* Did an attempt whose outcome we did not learn commit after all? Asked
   * AFTER the state was read at rev (issue 31 item 1b): an attempt that
   * commits before this look is found here, and one that commits after
   * the state read fails the next attempt's range compare (< rev + 1).
   * Looked for before the read, an attempt that etcd applied between the
   * look and the read became the last key, and the next attempt indexed
   * the same entries again after it. */
  for (int i = 0; s->unknown && i < s->ntried; i++)
    if ((rc = find_nonce(h, s->part, s->tried[i], s->nonce, s->out)))
      return rc; /* found (1) or error */
  if (s->kv && (rc = kv_to_rec(h, s->kv, s->part, 0, last, NULL, NULL)))
    return rc;
  const char *lastk = last->key;
  /* Not found, and the log moved on since the attempt of unknown outcome
   * was sent: the new last key may hold that attempt's entries under
   * another value (rewritten or compacted), or another writer's. Trying
   * again would index ours after it, maybe twice (issue 31 item 1): the
   * outcome stays unknown. Trying again is sound only while the last key
   * is still the one that attempt followed (then its range compare fails
   * should it commit late). */
  if (s->unknown && strcmp(lastk ? lastk : "", s->base) != 0 &&
      !TARN__PLANTED(TARN__BUG_SEQ_PUT_RETRY_BLIND))
    return tarn__err(TARN_EUNKNOWN,
                     "etcd: sequenced put: the log moved on (last key %s, was %s) after an "
                     "attempt whose outcome is unknown",
                     lastk ? lastk : "none", s->base[0] ? s->base : "none");
  return 0;
}

/* One attempt: the put of the key after last (*key, stamped *created) in a
 * txn whose compares make the state read at s->rev still hold; *ok and
 * *newrev as txn_put's, *fresp its failure ops' answer. */
static int seq_send(seqput *s, const tarn_meta_rec *last, char **key, int64_t *created, int *ok,
                    int64_t *newrev, json_t **fresp) {
  ehandle *h = s->h;
  const char *lastk = last->key;
  /* the compares below make this check one step with the put: the last
   * key is still lastk when the txn commits */
  int rc = tarn__meta_seq_last("etcd", s->part, s->prefix, lastk, s->g, s->ng);
  if (rc == 0)
    rc = tarn__meta_seq_key(s->prefix, lastk, s->d1, s->d2, key);
  json_t *c = json_array(), *f = json_array();
  char *ek = *key ? ekey(h, s->part, *key, -1) : NULL;
  char *el = lastk ? ekey(h, s->part, lastk, -1) : NULL;
  *created = tarn__meta_now_ms();
  char *v = evalue(s->val, s->len, *created, s->nonce);
  json_t *rr0 = range_req(s->lo, s->hi, 1);
  if (rc == 0 && (!c || !f || !ek || !v || (lastk && !el) || !rr0 ||
                  add_guards(h, s->part, s->g, s->ng, c, f) ||
                  json_array_append_new(f, json_pack("{s:o}", "request_range", rr0))))
    rc = tarn__err(TARN_ENOMEM, "etcd: oom");
  else if (rc)
    json_decref(rr0);
  /* Nothing in [lo, bound) changed since rev, and the last key is still
   * the one we read: then the new key is exactly Oxia's. */
  if (rc == 0)
    json_array_append_new(c, cmp_mod(s->lo, s->hi, "LESS", s->rev + 1));
  if (rc == 0 && el)
    json_array_append_new(c, cmp_mod(el, NULL, "EQUAL", last->stat.version));
  json_decref(s->state);
  s->state = NULL, s->kv = NULL;
  free(el);
  if (rc == 0) {
    rc = txn_put(h, c, ek, v, 0, f, ok, newrev, fresp);
    c = f = NULL;
  }
  json_decref(c);
  json_decref(f);
  free(v);
  free(ek);
  return rc;
}

/* One round of the sequenced put: 1 done (s->out filled), 0 another round,
 * <0 error. */
static int seq_round(seqput *s) {
  tarn_meta_rec last = {0};
  int rc = seq_look(s, &last);
  if (rc) {
    tarn_meta_rec_free(&last);
    return rc; /* found (1), error, or unknown */
  }
  /* what this attempt follows, should its outcome be unknown */
  char *follows = strdup(last.key ? last.key : "");
  char *key = NULL;
  int64_t created = 0, newrev = 0;
  int ok = 0;
  json_t *fresp = NULL;
  rc = seq_send(s, &last, &key, &created, &ok, &newrev, &fresp);
  tarn_meta_rec_free(&last);
  if (rc == TARN_EUNKNOWN && s->ntried < 64 && tarn__mono_ms() < s->deadline) {
    s->tried[s->ntried++] = key;
    s->unknown = 1;
    free(s->base);
    s->base = follows;
    if (!s->base)
      return tarn__err(TARN_EUNKNOWN,
                       "etcd: sequenced put: out of memory after an unknown outcome");
    tarn__sleep_ms(50);
    return 0;
  }
  free(follows);
  /* The put took effect: running out of memory for its result must not
   * report it as failed. */
  if (rc == 0 && ok && tarn__meta_rec_set(s->out, key, NULL, 0, newrev, created))
    rc = tarn__err(TARN_EUNKNOWN, "etcd: sequenced put committed; out of memory for its key");
  free(key);
  if (!rc && !ok && (rc = guard_verdict(s->part, s->prefix, s->g, s->ng, fresp)))
    json_decref(fresp);
  if (rc || ok)
    return rc ? rc : 1;
  /* Lost a race: the failure branch read the new last key at newrev. */
  s->state = fresp;
  s->rev = newrev;
  json_t *rr =
      json_object_get(json_array_get(json_object_get(fresp, "responses"), s->ng), "response_range");
  s->kv = json_array_get(json_object_get(rr, "kvs"), 0);
  if (!rr)
    json_decref(s->state), s->state = NULL;
  return 0;
}

static int seq_put_locked(tarn_meta *m, const char *part, const char *prefix, uint64_t d1,
                          uint64_t d2, const void *val, size_t len, const tarn_meta_guard *g,
                          size_t ng, tarn_meta_rec *out) {
  seqput s = {.h = m->impl,
              .part = part,
              .prefix = prefix,
              .d1 = d1,
              .d2 = d2,
              .val = val,
              .len = len,
              .g = g,
              .ng = ng,
              .out = out};
  char *bound = tarn__meta_seq_bound(prefix);
  s.lo = ekey(s.h, part, NULL, -1), s.hi = bound ? ekey(s.h, part, bound, -1) : NULL;
  s.nonce = tarn__etcd_rand64();
  s.deadline = tarn__mono_ms() + TARN__ETCD_RETRY_MS;
  int rc = s.lo && s.hi ? 0 : tarn__err(TARN_ENOMEM, "etcd: out of memory");
  while (rc == 0)
    rc = seq_round(&s);
  json_decref(s.state);
  if (rc == 1)
    rc = 0;
  /* Issue 31 item 2: once an attempt's outcome is unknown, no later error
   * proves that the put did not and will not happen (that attempt may still
   * commit, or did where this could not look): the outcome stays unknown. */
  if (rc < 0 && s.unknown && rc != TARN_EUNKNOWN)
    rc =
        tarn__errctx(TARN_EUNKNOWN, "etcd: sequenced put: an earlier attempt's outcome is unknown");
  for (int i = 0; i < s.ntried; i++)
    free(s.tried[i]);
  free(s.base);
  free(bound);
  free(s.lo);
  free(s.hi);
  return rc;
}
static int e_range(tarn_meta *m, const char *part, const char *a, const char *b, int flags,
                   size_t limit, int values, tarn_meta_recs *out) {
  ehandle *h = m->impl;
  char *k = ekey(h, part, a, (flags & TARN_META_AFTER) ? 0 : -1), *e = ekey(h, part, b, -1);
  json_t *req = k && e ? json_pack("{s:s, s:s}", "key", k, "range_end", e) : NULL, *resp = NULL;
  int rc = req ? 0 : tarn__err(TARN_ENOMEM, "etcd: out of memory");
  if (rc == 0 && limit)
    json_object_set_new(req, "limit", json_sprintf("%zu", limit + 1));
  if (rc == 0)
    rc = post(h, "/v3/kv/range", req, TARN__ETCD_SAFE, &resp);
  json_t *kvs = rc ? NULL : json_object_get(resp, "kvs");
  for (size_t i = 0; rc == 0 && i < json_array_size(kvs); i++) {
    if (limit && out->n == limit) {
      out->more = 1;
      break;
    }
    tarn_meta_rec *r = tarn__meta_recs_push(out);
    rc = r ? kv_to_rec(h, json_array_get(kvs, i), part, values, r, NULL, NULL)
           : tarn__err(TARN_ENOMEM, "etcd: out of memory");
  }
  json_decref(resp);
  json_decref(req);
  free(k);
  free(e);
  return rc;
}

static int e_token(tarn_meta *m, int64_t *token) {
  json_t *req = json_pack("{s:s, s:b}", "key", "AA==", "count_only", 1), *resp;
  if (!req)
    return tarn__err(TARN_ENOMEM, "etcd: out of memory");
  int rc = post(m->impl, "/v3/kv/range", req, TARN__ETCD_SAFE, &resp);
  json_decref(req);
  if (rc)
    return rc;
  *token = tarn__etcd_jint(json_object_get(resp, "header"), "revision");
  json_decref(resp);
  return 0;
}

static int e_wait(tarn_meta *m, const char *part, const char *a, const char *b, int64_t since,
                  int timeout_ms) {
  ehandle *h = m->impl;
  return tarn__etcd_watch(&h->http, ekey(h, part, a, -1), ekey(h, part, b, -1), since, timeout_ms);
}

static int buf_cmp(const tarn_buf *x, const tarn_buf *y) {
  size_t n = x->len < y->len ? x->len : y->len;
  int c = n ? memcmp(x->data, y->data, n) : 0;
  return c ? c : (x->len > y->len) - (x->len < y->len);
}

/* One watch over the span from the lowest range start to the highest range
 * end (etcd's JSON gateway takes one watch per stream): a change between the
 * ranges ends the wait too, which the contract allows (the caller re-reads). */
static int e_wait_any(tarn_meta *m, const tarn_meta_range *r, size_t n, int64_t since,
                      int timeout_ms) {
  ehandle *h = m->impl;
  tarn_buf lo = TARN_BUF_INIT, hi = TARN_BUF_INIT, x = TARN_BUF_INIT;
  int rc = 0;
  for (size_t i = 0; rc == 0 && i < n; i++) {
    tarn_buf_reset(&x);
    if (ekey_raw(h, r[i].part, r[i].a, -1, &x))
      rc = -1;
    else if (i == 0 || buf_cmp(&x, &lo) < 0)
      tarn_buf_reset(&lo), rc = tarn_buf_append(&lo, x.data, x.len);
    tarn_buf_reset(&x);
    if (rc == 0 && ekey_raw(h, r[i].part, r[i].b, -1, &x))
      rc = -1;
    else if (rc == 0 && (i == 0 || buf_cmp(&x, &hi) > 0))
      tarn_buf_reset(&hi), rc = tarn_buf_append(&hi, x.data, x.len);
  }
  char *k = rc ? NULL : b64(lo.data, lo.len), *e = rc ? NULL : b64(hi.data, hi.len);
  tarn_buf_free(&lo);
  tarn_buf_free(&hi);
  tarn_buf_free(&x);
  return tarn__etcd_watch(&h->http, k, e, since, timeout_ms);
}

/* ---- the handle ------------------------------------------------------------------- */

static int e_clock(tarn_meta *m, int64_t *ms) {
  ehandle *h = m->impl;
  return tarn__etcd_clock(&h->sess, ms);
}

static int e_renew(tarn_meta *m) {
  ehandle *h = m->impl;
  return tarn__etcd_session_renew(&h->sess);
}

static void free_handle(ehandle *h) {
  tarn__etcd_http_free(&h->http);
  tarn__etcd_session_free(&h->sess);
  free(h->root);
  free(h);
}

/* The root of every key for the option prefix=: "P" prefix 0x00. */
static int set_root(ehandle *h, const char *prefix) {
  size_t pl = strlen(prefix);
  if (!(h->root = malloc(pl + 2)))
    return tarn__err(TARN_ENOMEM, "etcd: out of memory");
  h->root[0] = 'P';
  memcpy(h->root + 1, prefix, pl);
  h->root[pl + 1] = 0;
  h->rootlen = pl + 2;
  return 0;
}

static int e_open(tarn_meta *m, const char *target) {
  ehandle *h = calloc(1, sizeof *h);
  if (!h)
    return tarn__err(TARN_ENOMEM, "etcd: out of memory");
  tarn__etcd_session_init(&h->sess, &h->http, m);
  int https = strcmp(m->vfs->scheme, "etcd+https") == 0;
  int rc = tarn__etcd_http_open(&h->http, target, https, m->backend_opts);
  if (rc == 0 && m->root_prefix)
    rc = set_root(h, m->root_prefix);
  if (rc == 0) {
    m->impl = h;
    rc = tarn__etcd_session_start(&h->sess);
  }
  if (rc) {
    m->impl = NULL;
    free_handle(h);
  }
  return rc;
}

static void e_close(tarn_meta *m) {
  ehandle *h = m->impl;
  /* Revoking the lease deletes the session's ephemeral records. */
  tarn__etcd_session_end(&h->sess);
  free_handle(h);
}

/* etcd: and etcd+https: (the same backend over TLS) differ only in the scheme. */
#define ETCD_VFS(name)                                                                             \
  {                                                                                                \
    .scheme = name, .open = e_open, .close = e_close, .find = e_find, .write = e_write,            \
    .del = e_del, .del_range = e_del_range, .seq_put = e_seq_put, .range = e_range,                \
    .token = e_token, .wait = e_wait, .renew = e_renew, .clock = e_clock, .wait_any = e_wait_any,  \
    .clock_tick_ms = 1000,                                                                         \
  }
const tarn__meta_vfs tarn__meta_vfs_etcd = ETCD_VFS("etcd");
const tarn__meta_vfs tarn__meta_vfs_etcd_https = ETCD_VFS("etcd+https");
