/* Producer fencing tokens (tarn/token.h; docs/express.md "Fencing tokens"). */
#include "tarn/token.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tarn/error.h"
#include "util/error.h"

static int token_key(const char *ns, const char *name, char *out, size_t n) {
  int k = snprintf(out, n, "/token/%s/%s", ns, name);
  return k > 0 && (size_t)k < n ? 0 : tarn__err(TARN_EINVAL, "stream name too long");
}

static int token_valid(const char *t) {
  size_t n = t ? strlen(t) : 0;
  return n >= 1 && n <= TARN_TOKEN_MAX
             ? 0
             : tarn__err(TARN_EINVAL, "a fencing token is 1..%d bytes", TARN_TOKEN_MAX);
}

int tarn_token_mode_check(const char *v) {
  return v && (!strcmp(v, TARN_TOKEN_MODE_ANY) || !strcmp(v, TARN_TOKEN_MODE_FENCED))
             ? 0
             : tarn__err(TARN_EINVAL, "token mode %s: any or fenced", v ? v : "(none)");
}

int tarn_stream_token_mode(const tarn_catalog_record *s) {
  for (size_t i = 0; s && i < s->n_props; i++)
    if (!strcmp(s->props[i].key, TARN_STREAM_TOKEN_MODE_PROP))
      return strcmp(s->props[i].value, TARN_TOKEN_MODE_FENCED) ? TARN_TOKEN_ANY : TARN_TOKEN_FENCED;
  return TARN_TOKEN_ANY;
}

static char *dup_value(const tarn_meta_rec *r) {
  char *s = malloc(r->value_len + 1);
  if (s) {
    memcpy(s, r->value, r->value_len);
    s[r->value_len] = 0;
  }
  return s;
}

int tarn_stream_token_get(tarn_meta *m, const char *ns, const char *name, char **out) {
  *out = NULL;
  char key[640];
  int rc = token_key(ns, name, key, sizeof key);
  tarn_meta_rec r;
  if (rc || (rc = tarn_meta_get(m, TARN_TOKEN_PARTITION, key, &r)))
    return rc;
  *out = dup_value(&r);
  tarn_meta_rec_free(&r);
  return *out ? 0 : tarn__err(TARN_ENOMEM, "out of memory");
}

int tarn_stream_token_install(tarn_meta *m, const char *ns, const char *name, const char *token,
                              char **previous) {
  if (previous)
    *previous = NULL;
  char key[640];
  int rc = token_valid(token);
  if (rc || (rc = token_key(ns, name, key, sizeof key)))
    return rc;
  size_t len = strlen(token);
  for (int attempt = 0; attempt < 64; attempt++) {
    tarn_meta_rec r;
    rc = tarn_meta_get(m, TARN_TOKEN_PARTITION, key, &r);
    if (rc == TARN_ENOTFOUND) {
      rc = tarn_meta_create(m, TARN_TOKEN_PARTITION, key, token, len, 0, NULL);
      if (rc == TARN_EEXIST)
        continue; /* another install landed first: read it and replace it */
      return rc;
    }
    if (rc)
      return rc;
    int same = r.value_len == len && !memcmp(r.value, token, len);
    char *old = same ? NULL : dup_value(&r);
    int64_t ver = r.stat.version;
    tarn_meta_rec_free(&r);
    if (same)
      return 0; /* installed already: nothing to write */
    if (!old)
      return tarn__err(TARN_ENOMEM, "out of memory");
    rc = tarn_meta_cas(m, TARN_TOKEN_PARTITION, key, token, len, ver, NULL);
    if (rc == TARN_ECONFLICT || rc == TARN_ENOTFOUND) {
      free(old);
      continue;
    }
    if (!rc && previous)
      *previous = old;
    else
      free(old);
    return rc;
  }
  return tarn__err(TARN_ECONFLICT, "installing the token of %s/%s: 64 racing installs", ns, name);
}

int tarn_stream_token_check(tarn_meta *m, const tarn_catalog_record *s, const char *token) {
  int fenced = tarn_stream_token_mode(s) == TARN_TOKEN_FENCED;
  if (!token && !fenced)
    return 0; /* cooperative: a producer without a token writes */
  if (!token)
    return tarn__err(TARN_EFENCED,
                     "stream %s/%s has token mode fenced: a producer must give its token "
                     "(install it with tarn stream fence %s/%s --token T)",
                     s->ns, s->name, s->ns, s->name);
  char *have;
  int rc = token_valid(token);
  if (rc)
    return rc;
  rc = tarn_stream_token_get(m, s->ns, s->name, &have);
  if (rc == TARN_ENOTFOUND)
    return fenced ? tarn__err(TARN_EFENCED,
                              "stream %s/%s has token mode fenced and no token installed "
                              "(tarn stream fence %s/%s --token T)",
                              s->ns, s->name, s->ns, s->name)
                  : 0; /* cooperative, nothing installed: nobody to be stale against */
  if (rc)
    return rc;
  /* exact equality: a token is an opaque name, never ordered or compared by prefix */
  rc = strcmp(have, token) ? tarn__err(TARN_EFENCED,
                                       "stream %s/%s: token refused (another producer's token "
                                       "is installed: this one is stale)",
                                       s->ns, s->name)
                           : 0;
  free(have);
  return rc;
}
