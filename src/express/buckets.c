/* The deployment's express bucket set (issue 14, "Class per stream"): K
 * object-store URIs with zones in a fixed order, W and WIN, recorded once in
 * the metadata store by `tarn init`. */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "express/express_internal.h"
#include "util/error.h"

static char *dup(const char *s, size_t n) {
  char *p = malloc(n + 1);
  if (p) {
    memcpy(p, s, n);
    p[n] = 0;
  }
  return p;
}

static int add(tarn__xbuckets *s, const char *uri, size_t ulen, const char *zone, size_t zlen) {
  if (s->k >= TARN__X_K_MAX)
    return tarn__err(TARN_EINVAL, "express bucket set: more than %d buckets", TARN__X_K_MAX);
  if (ulen == 0)
    return tarn__err(TARN_EINVAL, "express bucket set: an empty bucket URI");
  if (zlen > TARN__X_ZONE_MAX || memchr(zone, '/', zlen))
    return tarn__err(TARN_EINVAL,
                     "express bucket set: zone '%.*s' is longer than %d bytes or "
                     "holds '/'",
                     (int)zlen, zone, TARN__X_ZONE_MAX);
  tarn__xbucket *b = &s->b[s->k];
  b->uri = dup(uri, ulen);
  b->zone = dup(zone, zlen);
  b->store = NULL;
  if (!b->uri || !b->zone) {
    free(b->uri);
    free(b->zone);
    return tarn__err(TARN_ENOMEM, "out of memory");
  }
  s->k++;
  return 0;
}

int tarn__xbuckets_add(tarn__xbuckets *s, const char *arg) {
  /* the zone follows the last '@' past the scheme's separator, so user@host
   * in an authority is taken for a zone only when nothing follows it */
  const char *start = strstr(arg, "//");
  start = start ? start + 2 : (strchr(arg, ':') ? strchr(arg, ':') + 1 : arg);
  const char *at = strrchr(start, '@');
  if (at && strchr(at, '/'))
    at = NULL;
  if (!at)
    return add(s, arg, strlen(arg), "", 0);
  return add(s, arg, (size_t)(at - arg), at + 1, strlen(at + 1));
}

int tarn__xbuckets_check(const tarn__xbuckets *s) {
  if (s->k < 1)
    return tarn__err(TARN_EINVAL, "express bucket set: no bucket");
  if (s->w < 1 || s->w > s->k)
    return tarn__err(TARN_EINVAL, "express bucket set: W = %u outside 1..K = %zu", s->w, s->k);
  if (s->win < 1 || s->win > TARN__X_WIN_MAX)
    return tarn__err(TARN_EINVAL, "express bucket set: WIN = %u outside 1..%d", s->win,
                     TARN__X_WIN_MAX);
  for (size_t i = 0; i < s->k; i++)
    for (size_t j = 0; j < i; j++)
      if (!strcmp(s->b[i].uri, s->b[j].uri))
        return tarn__err(TARN_EINVAL, "express bucket set: %s named twice", s->b[i].uri);
  return 0;
}

int tarn__xbuckets_open(tarn__xbuckets *s) {
  for (size_t i = 0; i < s->k; i++) {
    if (s->b[i].store)
      continue;
    int rc = tarn_objstore_open(s->b[i].uri, &s->b[i].store);
    if (rc) {
      rc = tarn__errctx(rc, "opening express bucket %zu (%s)", i, s->b[i].uri);
      for (size_t j = 0; j < i; j++) {
        tarn_objstore_close(s->b[j].store);
        s->b[j].store = NULL;
      }
      return rc;
    }
  }
  return 0;
}

void tarn__xbuckets_free(tarn__xbuckets *s) {
  for (size_t i = 0; i < s->k; i++) {
    tarn_objstore_close(s->b[i].store);
    free(s->b[i].uri);
    free(s->b[i].zone);
  }
  memset(s, 0, sizeof *s);
}

int tarn__xbuckets_copy(const tarn__xbuckets *from, tarn__xbuckets *to) {
  memset(to, 0, sizeof *to);
  for (size_t i = 0; i < from->k; i++) {
    int rc =
        add(to, from->b[i].uri, strlen(from->b[i].uri), from->b[i].zone, strlen(from->b[i].zone));
    if (rc) {
      tarn__xbuckets_free(to);
      return rc;
    }
  }
  to->w = from->w;
  to->win = from->win;
  return 0;
}

json_t *tarn__xbuckets_json(const tarn__xbuckets *s) {
  json_t *arr = json_array();
  for (size_t i = 0; arr && i < s->k; i++)
    json_array_append_new(arr, json_pack("{s:s,s:s}", "uri", s->b[i].uri, "zone", s->b[i].zone));
  return arr;
}

int tarn__xbuckets_from_json(json_t *arr, json_t *w, json_t *win, tarn__xbuckets *out) {
  memset(out, 0, sizeof *out);
  if (!json_is_array(arr) || !json_is_integer(w) || !json_is_integer(win))
    return TARN_ECORRUPT;
  size_t i;
  json_t *v;
  json_array_foreach(arr, i, v) {
    json_t *u = json_object_get(v, "uri"), *z = json_object_get(v, "zone");
    if (!json_is_string(u) || !json_is_string(z) || json_object_size(v) != 2 ||
        add(out, json_string_value(u), json_string_length(u), json_string_value(z),
            json_string_length(z))) {
      tarn__xbuckets_free(out);
      return TARN_ECORRUPT;
    }
  }
  json_int_t wv = json_integer_value(w), winv = json_integer_value(win);
  out->w = wv > 0 && wv <= TARN__X_K_MAX ? (uint32_t)wv : 0;
  out->win = winv > 0 && winv <= TARN__X_WIN_MAX ? (uint32_t)winv : 0;
  if (tarn__xbuckets_check(out)) {
    tarn__xbuckets_free(out);
    return TARN_ECORRUPT;
  }
  return 0;
}

int tarn__xbuckets_encode(const tarn__xbuckets *s, tarn_buf *out) {
  int rc = tarn__xbuckets_check(s);
  if (rc)
    return rc;
  json_t *o = json_pack("{s:o,s:I,s:I}", "buckets", tarn__xbuckets_json(s), "w", (json_int_t)s->w,
                        "win", (json_int_t)s->win);
  char *text = o ? json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
  json_decref(o);
  if (!text)
    return tarn__err(TARN_ENOMEM, "out of memory");
  rc = tarn_buf_append(out, text, strlen(text));
  free(text);
  return rc;
}

int tarn__xbuckets_decode(const uint8_t *p, size_t n, tarn__xbuckets *out) {
  memset(out, 0, sizeof *out);
  json_t *o = json_loadb((const char *)p, n, JSON_REJECT_DUPLICATES, NULL);
  int rc = TARN_ECORRUPT;
  if (json_is_object(o) && json_object_size(o) == 3)
    rc = tarn__xbuckets_from_json(json_object_get(o, "buckets"), json_object_get(o, "w"),
                                  json_object_get(o, "win"), out);
  json_decref(o);
  return rc ? tarn__err(TARN_ECORRUPT,
                        "the deployment's express record %s%s is not "
                        "{\"buckets\":[{\"uri\",\"zone\"}..],\"w\",\"win\"} with "
                        "1 <= W <= K and 1 <= WIN",
                        TARN__X_DEPLOY_PARTITION, TARN__X_DEPLOY_KEY)
            : 0;
}

int tarn__xbuckets_record(tarn_meta *m, const tarn__xbuckets *s, int *created) {
  if (created)
    *created = 0;
  tarn_buf b;
  tarn_buf_init(&b);
  int rc = tarn__xbuckets_encode(s, &b);
  if (!rc)
    rc = tarn_meta_create(m, TARN__X_DEPLOY_PARTITION, TARN__X_DEPLOY_KEY, b.data, b.len,
                          TARN_META_PERSISTENT, NULL);
  tarn_buf_free(&b);
  if (rc == TARN_EEXIST)
    return 0; /* the deployment's, and it stays */
  if (!rc && created)
    *created = 1;
  return rc ? tarn__errctx(rc, "writing the deployment's express record") : 0;
}

int tarn__xbuckets_load(tarn_meta *m, tarn__xbuckets *out) {
  memset(out, 0, sizeof *out);
  tarn_meta_rec r = {0};
  int rc = tarn_meta_get(m, TARN__X_DEPLOY_PARTITION, TARN__X_DEPLOY_KEY, &r);
  if (rc == TARN_ENOTFOUND)
    return tarn__err(TARN_ENOTFOUND,
                     "the deployment has no express bucket set (%s%s); run "
                     "`tarn init` (with --express-bucket URI[@ZONE] ...)",
                     TARN__X_DEPLOY_PARTITION, TARN__X_DEPLOY_KEY);
  if (rc)
    return tarn__errctx(rc, "reading the deployment's express record");
  rc = tarn__xbuckets_decode(r.value, r.value_len, out);
  tarn_meta_rec_free(&r);
  return rc;
}
