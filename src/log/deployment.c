#include "tarn/deployment.h"

#include <errno.h>
#include <stdint.h>
#include <fcntl.h>
#include <jansson.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "util/dirs.h"
#include "util/error.h"
#include "util/secret_file.h"

struct tarn_deployment {
  tarn_deployment_config cfg;
  tarn_deployment_strings own; /* copies of the URIs, so the config outlives the caller's */
  tarn_meta *meta;
  tarn_objstore *wal;
  tarn_objstore *compacted;
};

static int dup_into(char **slot, const char *fmt, const char *a, const char *b) {
  int n = snprintf(NULL, 0, fmt, a, b);
  char *s = malloc((size_t)n + 1);
  if (!s)
    return tarn__err(TARN_ENOMEM, "out of memory");
  snprintf(s, (size_t)n + 1, fmt, a, b);
  *slot = s;
  return 0;
}

static int mkdirs(const char *path);

static const char *env(const char *name) {
  const char *v = getenv(name);
  return v && *v ? v : NULL;
}

int tarn_deployment_config_parse(const uint8_t *p, size_t len, const char *what, char *out[3]) {
  out[0] = out[1] = out[2] = NULL;
  json_error_t err;
  json_t *o = json_loadb((const char *)p, len, JSON_REJECT_DUPLICATES, &err);
  if (!o)
    return tarn__err(TARN_ECORRUPT, "deployment config %s: byte %d: %s", what, err.position,
                     err.text);
  static const char *const names[] = {"meta", "wal", "compacted"};
  int rc = 0;
  const char *k;
  json_t *v;
  if (!json_is_object(o))
    rc = tarn__err(TARN_ECORRUPT, "deployment config %s: byte 0: not a JSON object", what);
  json_object_foreach(o, k, v) {
    if (rc)
      break;
    int i = 0;
    while (i < 3 && strcmp(k, names[i]) != 0)
      i++;
    if (i == 3 || !json_is_string(v) || json_string_length(v) == 0 ||
        strlen(json_string_value(v)) != json_string_length(v))
      rc = tarn__err(TARN_ECORRUPT,
                     "deployment config %s: member \"%s\": expected \"meta\", \"wal\" or "
                     "\"compacted\" with a URI string",
                     what, k);
    else if (!(out[i] = strdup(json_string_value(v))))
      rc = tarn__err(TARN_ENOMEM, "out of memory");
  }
  json_decref(o);
  if (rc)
    for (int i = 0; i < 3; i++)
      free(out[i]), out[i] = NULL;
  return rc;
}

/* Fills the unset URIs from HOME/tarn.json, if there is one. Slots 4..6 of
 * *st hold the strings. */
static int read_config_file(tarn_deployment_config *c, tarn_deployment_strings *st) {
  char *path = NULL;
  int rc = dup_into(&path, "%s/%s", c->home, TARN_DEPLOYMENT_CONFIG_FILE);
  if (rc)
    return rc;
  FILE *f = fopen(path, "rb");
  if (!f) {
    rc = errno == ENOENT ? 0 : tarn__errno(errno, "cannot open %s", path);
    free(path);
    return rc;
  }
  /* It names the stores and the credential files: the owner's alone, as ssh
   * wants of its config (a warning, docs/deployment.md "Secure deployment"). */
  tarn__file_mode_warn(path, "the config file");
  enum { LIMIT = 65536 }; /* a config file is a few lines */
  uint8_t *buf = malloc(LIMIT + 1);
  size_t n = buf ? fread(buf, 1, LIMIT + 1, f) : 0;
  if (!buf)
    rc = tarn__err(TARN_ENOMEM, "out of memory");
  else if (ferror(f))
    rc = tarn__errno(errno, "cannot read %s", path);
  else if (n > LIMIT)
    rc = tarn__err(TARN_ECORRUPT, "deployment config %s: byte %d: longer than %d bytes", path,
                   LIMIT, LIMIT);
  fclose(f);
  char *uris[3] = {NULL, NULL, NULL};
  if (!rc)
    rc = tarn_deployment_config_parse(buf, n, path, uris);
  free(buf);
  free(path);
  const char **slots[] = {&c->meta_uri, &c->wal_uri, &c->compacted_uri};
  for (int i = 0; i < 3; i++) {
    if (!rc && uris[i] && !*slots[i])
      *slots[i] = st->s[4 + i] = uris[i];
    else
      free(uris[i]);
  }
  return rc;
}

int tarn_deployment_config_resolve(tarn_deployment_config *c, tarn_deployment_strings *st) {
  memset(st, 0, sizeof *st);
  if (!c->meta_uri)
    c->meta_uri = env("TARN_META");
  if (!c->wal_uri)
    c->wal_uri = env("TARN_WAL");
  if (!c->compacted_uri)
    c->compacted_uri = env("TARN_COMPACTED");
  if (!c->home)
    c->home = env("TARN_HOME");
  if (!c->home)
    c->home = TARN_DEFAULT_HOME;
  int rc = 0;
  if (!c->meta_uri || !c->wal_uri || !c->compacted_uri)
    rc = read_config_file(c, st);
  if (!rc && !c->meta_uri && !(rc = dup_into(&st->s[0], "sqlite:%s%s", c->home, "/meta.db")))
    c->meta_uri = st->s[0];
  if (!rc && !c->wal_uri && !(rc = dup_into(&st->s[1], "file://%s%s", c->home, "/wal")))
    c->wal_uri = st->s[1];
  if (!rc && !c->compacted_uri && !(rc = dup_into(&st->s[2], "file://%s%s", c->home, "/compacted")))
    c->compacted_uri = st->s[2];
  if (rc)
    tarn_deployment_config_free(st);
  return rc;
}

int tarn_deployment_config_save(const tarn_deployment_config *c, int *written) {
  if (written)
    *written = 0;
  if (!c->home || !c->meta_uri || !c->wal_uri || !c->compacted_uri)
    return tarn__err(TARN_EINVAL, "deployment config: resolve the config first");
  char *path = NULL;
  int rc = dup_into(&path, "%s/%s", c->home, TARN_DEPLOYMENT_CONFIG_FILE);
  if (rc)
    return rc;
  json_t *o = json_object();
  json_object_set_new(o, "meta", json_string(c->meta_uri));
  json_object_set_new(o, "wal", json_string(c->wal_uri));
  json_object_set_new(o, "compacted", json_string(c->compacted_uri));
  char *text = json_dumps(o, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
  json_decref(o);
  if (!text) {
    free(path);
    return tarn__err(TARN_ENOMEM, "out of memory");
  }
  if ((rc = mkdirs(c->home)) == 0) {
    /* Create-only: an existing file is the deployment's, and stays. */
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600); /* the owner's: see the warning above */
    if (fd < 0) {
      rc = errno == EEXIST ? 0 : tarn__errno(errno, "cannot create %s", path);
    } else {
      size_t n = strlen(text), off = 0;
      while (off < n && !rc) {
        ssize_t w = write(fd, text + off, n - off);
        if (w < 0)
          rc = tarn__errno(errno, "cannot write %s", path);
        else
          off += (size_t)w;
      }
      if (!rc && write(fd, "\n", 1) != 1)
        rc = tarn__errno(errno, "cannot write %s", path);
      if (close(fd) != 0 && !rc)
        rc = tarn__errno(errno, "cannot write %s", path);
      if (rc)
        unlink(path);
      else if (written)
        *written = 1;
    }
  }
  free(text);
  free(path);
  return rc;
}

void tarn_file_mode_warn(const char *path, const char *what) { tarn__file_mode_warn(path, what); }

void tarn_deployment_config_free(tarn_deployment_strings *st) {
  for (size_t i = 0; i < sizeof st->s / sizeof st->s[0]; i++)
    free(st->s[i]), st->s[i] = NULL;
}

/* mkdir -p, durable: a deployment's directories outlive a crash as its
 * objects do (util/dirs.h). */
static int mkdirs(const char *path) {
  char *p = strdup(path);
  if (!p)
    return tarn__err(TARN_ENOMEM, "out of memory");
  int rc = tarn__mkdirs_durable(p, 0777) ? tarn__errno(errno, "cannot create directory %s", p) : 0;
  free(p);
  return rc;
}

/* Creates the local directories a URI needs: file://DIR and the parent of sqlite:PATH. */
static int prepare_local(const char *uri) {
  if (strncmp(uri, "file://", 7) == 0) {
    const char *dir = uri + 7;
    size_t n = strcspn(dir, "?");
    char *d = strndup(dir, n);
    if (!d)
      return tarn__err(TARN_ENOMEM, "out of memory");
    int rc = *d ? mkdirs(d) : 0;
    free(d);
    return rc;
  }
  if (strncmp(uri, "sqlite:", 7) == 0) {
    const char *path = uri + 7;
    size_t n = strcspn(path, "?");
    char *d = strndup(path, n);
    if (!d)
      return tarn__err(TARN_ENOMEM, "out of memory");
    char *slash = strrchr(d, '/');
    int rc = 0;
    if (slash && slash != d) {
      *slash = 0;
      rc = mkdirs(d);
    }
    free(d);
    return rc;
  }
  return 0;
}

/* The length of a URI as messages show it: without its "?options", which may
 * hold what a user should not have put there (a password=, refused by the
 * backend) and name credential files that add nothing to "which store". */
static int uri_shown(const char *uri) { return (int)strcspn(uri, "?"); }

int tarn_deployment_open(const tarn_deployment_config *c, int create, tarn_deployment **out) {
  *out = NULL;
  if (!c->meta_uri || !c->wal_uri || !c->compacted_uri)
    return tarn__err(TARN_EINVAL, "deployment: the metadata store, WAL root and compacted root "
                                  "must all be set (resolve the config first)");
  tarn_deployment *d = calloc(1, sizeof *d);
  if (!d)
    return tarn__err(TARN_ENOMEM, "out of memory");
  int rc = 0;
  if (!(d->own.s[0] = strdup(c->meta_uri)) || !(d->own.s[1] = strdup(c->wal_uri)) ||
      !(d->own.s[2] = strdup(c->compacted_uri)) || (c->home && !(d->own.s[3] = strdup(c->home)))) {
    rc = tarn__err(TARN_ENOMEM, "out of memory");
    goto fail;
  }
  d->cfg.meta_uri = d->own.s[0];
  d->cfg.wal_uri = d->own.s[1];
  d->cfg.compacted_uri = d->own.s[2];
  d->cfg.home = d->own.s[3];
  if (create) {
    for (int i = 0; i < 3 && !rc; i++)
      rc = prepare_local(d->own.s[i]);
    if (rc)
      goto fail;
  }
  if ((rc = tarn_meta_open(d->cfg.meta_uri, &d->meta))) {
    rc = tarn__errctx(rc, "metadata store %.*s", uri_shown(d->cfg.meta_uri), d->cfg.meta_uri);
    goto fail;
  }
  if ((rc = tarn_objstore_open(d->cfg.wal_uri, &d->wal))) {
    rc = tarn__errctx(rc, "WAL root %.*s", uri_shown(d->cfg.wal_uri), d->cfg.wal_uri);
    goto fail;
  }
  if ((rc = tarn_objstore_open(d->cfg.compacted_uri, &d->compacted))) {
    rc = tarn__errctx(rc, "compacted root %.*s", uri_shown(d->cfg.compacted_uri),
                      d->cfg.compacted_uri);
    goto fail;
  }
  *out = d;
  return 0;
fail:
  tarn_deployment_close(d);
  return rc;
}

void tarn_deployment_close(tarn_deployment *d) {
  if (!d)
    return;
  tarn_objstore_close(d->compacted);
  tarn_objstore_close(d->wal);
  tarn_meta_close(d->meta);
  tarn_deployment_config_free(&d->own);
  free(d);
}

tarn_meta *tarn_deployment_meta(tarn_deployment *d) { return d->meta; }
tarn_objstore *tarn_deployment_wal(tarn_deployment *d) { return d->wal; }
tarn_objstore *tarn_deployment_compacted(tarn_deployment *d) { return d->compacted; }
const tarn_deployment_config *tarn_deployment_config_of(const tarn_deployment *d) {
  return &d->cfg;
}
