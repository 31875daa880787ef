/* One deployment per root (issue 31 item 5; docs/deployment.md "One
 * deployment per root"). Why: two deployments on one root see each other's
 * objects as unreferenced, and each one's reclaimer deletes the other's data
 * after the grace. A root carries the id of the deployment it belongs to,
 * written create-only, and no process deletes from a root that is not its
 * deployment's. */
#include "log/root_mark.h"

#include <stdio.h>
#include <string.h>

#include "log/format_version.h"
#include "tarn/catalog.h"
#include "tarn/deployment.h"
#include "util/error.h"
#include "util/planted.h"
#include "util/random.h"

#define ID_LEN 32

/* The metadata store's id: *have = 0 when it has none. */
static int meta_id(tarn_meta *m, char id[ID_LEN + 1], int *have) {
  tarn_meta_rec r = {0};
  *have = 0;
  int rc = tarn_meta_get(m, TARN_DEPLOYMENT_ID_PARTITION, TARN_DEPLOYMENT_ID_KEY, &r);
  if (rc == TARN_ENOTFOUND)
    return 0;
  if (rc)
    return tarn__errctx(rc, "reading the deployment's id");
  if (r.value_len != ID_LEN)
    rc = tarn__err(TARN_ECORRUPT, "the deployment's id %s/%s: %zu bytes, not %d",
                   TARN_DEPLOYMENT_ID_PARTITION, TARN_DEPLOYMENT_ID_KEY, r.value_len, ID_LEN);
  else
    memcpy(id, r.value, ID_LEN), id[ID_LEN] = 0, *have = 1;
  tarn_meta_rec_free(&r);
  return rc;
}

/* A root's marker: *have = 0 when it has none; any other bytes than an id
 * are kept in id (cut) to be shown as another deployment's. */
static int root_id(tarn_objstore *s, const char *what, char id[ID_LEN + 1], int *have) {
  tarn_buf b = TARN_BUF_INIT;
  *have = 0;
  int rc = tarn_objstore_get(s, TARN_ROOT_MARKER, &b);
  if (rc == TARN_ENOTFOUND)
    return 0;
  if (rc)
    return tarn__errctx(rc, "reading the %s's marker %s", what, TARN_ROOT_MARKER);
  size_t n = b.len < ID_LEN ? b.len : ID_LEN;
  memcpy(id, b.data, n);
  id[n] = 0;
  for (size_t i = 0; i < n; i++)
    if (id[i] < '!' || id[i] > '~')
      id[i] = '?';
  *have = 1;
  tarn_buf_free(&b);
  return 0;
}

static int foreign(const char *what, const char *theirs, const char *ours) {
  if (ours)
    return tarn__err(TARN_EBUSY,
                     "the %s belongs to another deployment: its marker %s holds %s, this "
                     "deployment (its metadata store) is %s; refusing to touch it (one "
                     "deployment per root: docs/deployment.md)",
                     what, TARN_ROOT_MARKER, theirs, ours);
  return tarn__err(TARN_EBUSY,
                   "the %s belongs to another deployment: its marker %s holds %s, and this "
                   "metadata store has no deployment id; refusing to touch it (one deployment "
                   "per root: docs/deployment.md)",
                   what, TARN_ROOT_MARKER, theirs);
}

int tarn__roots_check(tarn_meta *m, tarn_objstore *wal, tarn_objstore *compacted) {
  if (TARN__PLANTED(TARN__BUG_ROOTS_UNCHECKED))
    return 0;
  char ours[ID_LEN + 1], theirs[ID_LEN + 1];
  int have, marked;
  int rc = meta_id(m, ours, &have);
  tarn_objstore *roots[2] = {wal, compacted};
  static const char *const what[2] = {"WAL root", "compacted root"};
  for (int i = 0; i < 2 && !rc; i++) {
    if (!roots[i] || (rc = root_id(roots[i], what[i], theirs, &marked)))
      continue;
    if (marked && (!have || strcmp(theirs, ours) != 0))
      rc = foreign(what[i], theirs, have ? ours : NULL);
    else if (!marked && have)
      rc = tarn__err(TARN_EBUSY,
                     "the %s has no marker %s, but this deployment (%s) marks its roots: it "
                     "may be another deployment's; refusing to delete from it (`tarn gc` or "
                     "`tarn init` claims an unmarked root of this deployment: "
                     "docs/deployment.md)",
                     what[i], TARN_ROOT_MARKER, ours);
  }
  return rc;
}

/* Whether a root holds an object other than its marker. */
static int root_used(tarn_objstore *s, const char *what, int *used) {
  tarn_objstore_listing l;
  *used = 0;
  int rc = tarn_objstore_list(s, "", NULL, 2, &l);
  if (rc)
    return tarn__errctx(rc, "listing the %s", what);
  for (size_t i = 0; i < l.n; i++)
    if (strcmp(l.names[i], TARN_ROOT_MARKER) != 0)
      *used = 1;
  tarn_objstore_listing_free(&l);
  return 0;
}

/* Writes a new random id create-only; ours gets the store's id (another
 * process's when it was first). */
static int create_id(tarn_meta *m, char ours[ID_LEN + 1]) {
  uint8_t raw[ID_LEN / 2];
  int have = 0;
  int rc = tarn__random(raw, sizeof raw, "a deployment id");
  for (size_t i = 0; !rc && i < sizeof raw; i++)
    snprintf(ours + 2 * i, 3, "%02x", raw[i]);
  if (!rc)
    rc = tarn_meta_create(m, TARN_DEPLOYMENT_ID_PARTITION, TARN_DEPLOYMENT_ID_KEY, ours, ID_LEN,
                          TARN_META_PERSISTENT, NULL);
  /* another process was first, or ours landed: the store's id is the one */
  if (!rc)
    have = 1;
  else if (rc == TARN_EEXIST || rc == TARN_EUNKNOWN)
    rc = meta_id(m, ours, &have);
  if (!rc && !have)
    rc = tarn__err(TARN_EUNKNOWN, "writing the deployment's id: the outcome is unknown");
  return rc;
}

static int hex_value(char c) {
  return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

int tarn__deployment_id(tarn_meta *m, int create, uint8_t out[16]) {
  char id[ID_LEN + 1];
  int have;
  int rc = meta_id(m, id, &have);
  if (!rc && !have && !create)
    return tarn__err(TARN_ENOTFOUND, "the deployment has no id (%s/%s)",
                     TARN_DEPLOYMENT_ID_PARTITION, TARN_DEPLOYMENT_ID_KEY);
  if (!rc && !have)
    rc = create_id(m, id);
  for (int i = 0; !rc && i < ID_LEN / 2; i++) {
    int hi = hex_value(id[2 * i]), lo = hex_value(id[2 * i + 1]);
    if (hi < 0 || lo < 0)
      rc = tarn__err(TARN_ECORRUPT, "the deployment's id %s/%s: \"%s\" is not 32 hex digits",
                     TARN_DEPLOYMENT_ID_PARTITION, TARN_DEPLOYMENT_ID_KEY, id);
    else
      out[i] = (uint8_t)(hi << 4 | lo);
  }
  return rc;
}

int tarn_deployment_claim_roots(tarn_deployment *d, int init) {
  tarn_meta *m = tarn_deployment_meta(d);
  tarn_objstore *roots[2] = {tarn_deployment_wal(d), tarn_deployment_compacted(d)};
  static const char *const what[2] = {"WAL root", "compacted root"};
  char ours[ID_LEN + 1], theirs[ID_LEN + 1];
  int have, marked[2] = {0, 0}, fresh = 0;
  int rc = meta_id(m, ours, &have);
  if (!rc && init) { /* a new deployment: no deployment record yet */
    tarn_meta_rec r = {0};
    rc = tarn_meta_get(m, TARN_CATALOG_PARTITION, "/catalog/deployment", &r);
    fresh = rc == TARN_ENOTFOUND;
    if (rc == TARN_ENOTFOUND)
      rc = 0;
    tarn_meta_rec_free(&r);
  }
  /* Look at every root before writing anything: a refusal leaves no trace */
  for (int i = 0; i < 2 && !rc; i++) {
    if ((rc = root_id(roots[i], what[i], theirs, &marked[i])))
      break;
    if (marked[i] && (!have || strcmp(theirs, ours) != 0)) {
      rc = foreign(what[i], theirs, have ? ours : NULL);
    } else if (!marked[i] && fresh) {
      int used;
      if (!(rc = root_used(roots[i], what[i], &used)) && used)
        rc = tarn__err(TARN_EBUSY,
                       "the %s holds objects but no marker %s: it is another deployment's "
                       "(one from before markers); a new deployment needs roots of its own "
                       "(docs/deployment.md)",
                       what[i], TARN_ROOT_MARKER);
    }
  }
  if (!rc && !have && (rc = create_id(m, ours)))
    rc = tarn__errctx(rc, "claiming the roots");
  for (int i = 0; i < 2 && !rc; i++) {
    if (marked[i])
      continue;
    rc = tarn_objstore_put(roots[i], TARN_ROOT_MARKER, ours, ID_LEN);
    if (rc == TARN_EEXIST || rc == TARN_EUNKNOWN) { /* a racer's, or ours: read it */
      int m2;
      if (!(rc = root_id(roots[i], what[i], theirs, &m2)) && (!m2 || strcmp(theirs, ours) != 0))
        rc = m2 ? foreign(what[i], theirs, ours)
                : tarn__err(TARN_EUNKNOWN, "writing the %s's marker: the outcome is unknown",
                            what[i]);
    } else if (rc) {
      rc = tarn__errctx(rc, "writing the %s's marker %s", what[i], TARN_ROOT_MARKER);
    }
  }
  /* LS-001 (issue 31): the deployment's format version, recorded once in
   * its life by whichever claiming process comes first (format_version.h) */
  if (!rc)
    rc = tarn__deployment_version_settle(m, NULL);
  return rc;
}
