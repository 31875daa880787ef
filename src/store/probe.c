/* Probing a store for what tarn relies on (tarn/probe.h; `tarn probe`,
 * `tarn init`; issue 31 "Stores that lie"). Each property is tried with the
 * public store operations, so the verdict is about the store as tarn's own
 * client sees it: a server that ignores If-None-Match shows as a second
 * create-only put that succeeds. */
#include "tarn/probe.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/objstore_s3.h"
#include "tarn/buf.h"
#include "util/error.h"
#include "util/random.h"

static void add(tarn_probe_report *rep, const char *name, int safety, int verdict, const char *fmt,
                ...) __attribute__((format(printf, 5, 6)));
static void add(tarn_probe_report *rep, const char *name, int safety, int verdict, const char *fmt,
                ...) {
  if (rep->n == TARN_PROBE_MAX)
    return;
  tarn_probe_result *r = &rep->r[rep->n++];
  r->name = name;
  r->safety = safety;
  r->verdict = verdict;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(r->detail, sizeof r->detail, fmt, ap);
  va_end(ap);
  if (safety && verdict == TARN_PROBE_FAILS)
    rep->unsafe = 1;
}

/* A store that cannot be reached (or refuses tarn's credentials) ends the
 * probe: no verdict can be given. */
static int unreachable(int rc) { return rc == TARN_EUNAVAIL || rc == TARN_EAUTH; }

static int scratch_name(char *out, size_t n, const char *fmt) {
  unsigned long long r;
  int rc = tarn__random(&r, sizeof r, "probe");
  if (!rc)
    snprintf(out, n, fmt, r);
  return rc;
}

/* ---- object stores ----------------------------------------------------------- */

static void obj_cleanup(tarn_objstore *s, const char *prefix) {
  char after[TARN_OBJSTORE_NAME_MAX + 1] = "";
  for (int pages = 0; pages < 100; pages++) {
    tarn_objstore_listing l = {0};
    if (tarn_objstore_list(s, prefix, after, 100, &l))
      return;
    for (size_t i = 0; i < l.n; i++)
      tarn_objstore_delete(s, l.names[i]);
    int more = l.truncated && l.n;
    if (more)
      snprintf(after, sizeof after, "%s", l.names[l.n - 1]);
    tarn_objstore_listing_free(&l);
    if (!more)
      return;
  }
}

/* The listing names, in an order that catches a store that sorts by anything
 * but bytes ('-' < '/' < '0' < 'B' < '_' < 'a'), put in another order. */
static const char *const list_names[] = {"l/b", "l/c/d", "l/B", "l/a-b", "l/_x", "l/a0",
                                         "l/a", "l/c0",  "l/0", "l/ab",  "l/A",  "l/c-e"};
#define N_LIST (sizeof list_names / sizeof list_names[0])
#define LIST_PAGE 5 /* pages of 5: the paging (start_after) is probed too */

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static int probe_list(tarn_objstore *s, const char *prefix, tarn_probe_report *rep) {
  char name[TARN_OBJSTORE_NAME_MAX + 1], lp[TARN_OBJSTORE_NAME_MAX + 1];
  for (size_t i = 0; i < N_LIST; i++) {
    snprintf(name, sizeof name, "%s%s", prefix, list_names[i]);
    int rc = tarn_objstore_put(s, name, list_names[i], strlen(list_names[i]));
    if (unreachable(rc))
      return rc;
    if (rc) {
      add(rep, "list_order", 1, TARN_PROBE_FAILS, "a put for the listing failed: %s",
          tarn_errmsg());
      return 0;
    }
  }
  snprintf(lp, sizeof lp, "%sl/", prefix);
  char *got[4 * N_LIST];
  size_t n = 0;
  int ordered = 1, rc = 0, pages = 0;
  char after[TARN_OBJSTORE_NAME_MAX + 1] = "", prev[TARN_OBJSTORE_NAME_MAX + 1] = "";
  for (; pages < 20; pages++) {
    tarn_objstore_listing l = {0};
    if ((rc = tarn_objstore_list(s, lp, after, LIST_PAGE, &l)))
      break;
    for (size_t i = 0; i < l.n && n < 4 * N_LIST; i++) {
      if (*prev && strcmp(prev, l.names[i]) >= 0)
        ordered = 0;
      snprintf(prev, sizeof prev, "%s", l.names[i]);
      got[n++] = strdup(l.names[i] + strlen(prefix));
    }
    int more = l.truncated && l.n;
    if (more)
      snprintf(after, sizeof after, "%s", l.names[l.n - 1]);
    tarn_objstore_listing_free(&l);
    if (!more)
      break;
  }
  if (unreachable(rc)) {
    for (size_t i = 0; i < n; i++)
      free(got[i]);
    return rc;
  }
  const char *want[N_LIST];
  memcpy(want, list_names, sizeof want);
  qsort(want, N_LIST, sizeof want[0], cmp_str);
  int complete = !rc && n == N_LIST;
  for (size_t i = 0; complete && i < n; i++)
    complete = got[i] && strcmp(got[i], want[i]) == 0;
  if (rc)
    add(rep, "list_order", 1, TARN_PROBE_FAILS, "LIST failed: %s", tarn_errmsg());
  else if (!ordered)
    add(rep, "list_order", 1, TARN_PROBE_FAILS,
        "LIST returned names out of byte order (as S3 Express directory buckets do): "
        "paging by start-after skips names, so reclamation and fsck miss objects");
  else
    add(rep, "list_order", 1, TARN_PROBE_HOLDS, "names in byte order across %d pages of %d",
        pages + 1, LIST_PAGE);
  if (!rc)
    add(rep, "list_complete", 1, complete ? TARN_PROBE_HOLDS : TARN_PROBE_FAILS,
        complete ? "every name listed once (%zu)"
                 : "%zu names listed for %zu written, or not the same ones",
        n, (size_t)N_LIST);
  for (size_t i = 0; i < n; i++)
    free(got[i]);
  return 0;
}

static int is_s3(tarn_objstore *s) { return strcmp(tarn_objstore_scheme(s), "s3") == 0; }

/* etag: is a single PUT's ETag the MD5 of its bytes, the same at every HEAD?
 * tarn settles a create-only put whose reply it lost by the ETag first
 * (objstore_s3.c resolve()): a single put then falls back to reading the
 * bytes, but a multipart commit (objects over multipart_threshold) has only
 * the ETag, and with random ETags (S3 Express directory buckets, SSE-KMS) one
 * that landed is reported "exists". Not a safety property: nothing acknowledged
 * depends on it: the compaction that wrote the object fails. */
static int probe_etag(tarn_objstore *s, const char *name, const uint8_t *data, size_t len,
                      tarn_probe_report *rep) {
  if (!is_s3(s)) {
    add(rep, "etag", 0, TARN_PROBE_NOT_CHECKED, "%s:// has no ETags (only s3:// uses them)",
        tarn_objstore_scheme(s));
    return 0;
  }
  char e1[128], e2[128];
  int md5_1 = 0, md5_2 = 0;
  int rc = tarn__s3_etag(s, name, data, len, e1, sizeof e1, &md5_1);
  if (!rc)
    rc = tarn__s3_etag(s, name, data, len, e2, sizeof e2, &md5_2);
  if (unreachable(rc))
    return rc;
  if (rc)
    add(rep, "etag", 0, TARN_PROBE_FAILS, "HEAD failed: %s", tarn_errmsg());
  else if (strcmp(e1, e2) != 0)
    add(rep, "etag", 0, TARN_PROBE_FAILS,
        "two HEADs of one object gave different ETags (\"%.40s\", \"%.40s\"): random ETags; "
        "an interrupted multipart put that landed would be reported \"exists\"",
        e1, e2);
  else if (!md5_1)
    add(rep, "etag", 0, TARN_PROBE_FAILS,
        "the ETag (\"%.40s\") is not the MD5 of the bytes (as S3 Express directory buckets "
        "and SSE-KMS give): an interrupted single put is settled by reading its bytes back, "
        "but a multipart one that landed would be reported \"exists\"",
        e1);
  else
    add(rep, "etag", 0, TARN_PROBE_HOLDS,
        "a single PUT's ETag is the MD5 of its bytes, stable across HEADs");
  return 0;
}

/* if_match and if_match_missing: a conditional overwrite (If-Match: ETag) is
 * refused on a stale ETag (412) and done on the current one; on a missing
 * key S3-compatible stores answer 412 or 404. tarn never sends If-Match
 * (objects are written once), so it tolerates either answer and neither is a
 * safety property: the verdicts say what the store does, for a deployment
 * that would build on it. */
static int probe_if_match(tarn_objstore *s, const char *prefix, tarn_probe_report *rep) {
  if (!is_s3(s)) {
    add(rep, "if_match", 0, TARN_PROBE_NOT_CHECKED,
        "%s:// has no If-Match; tarn never sends it (objects are written once)",
        tarn_objstore_scheme(s));
    add(rep, "if_match_missing", 0, TARN_PROBE_NOT_CHECKED, "%s:// has no If-Match",
        tarn_objstore_scheme(s));
    return 0;
  }
  char m[128], miss[128], etag[128];
  snprintf(m, sizeof m, "%sm", prefix);
  snprintf(miss, sizeof miss, "%smissing", prefix);
  int md5 = 0, rc = tarn_objstore_put(s, m, "one", 3);
  if (!rc)
    rc = tarn__s3_etag(s, m, "one", 3, etag, sizeof etag, &md5);
  long stale = 0, cur = 0, bare = 0, missing = 0;
  if (!rc) /* an ETag no object has */
    rc = tarn__s3_put_if_match(s, m, "two", 3, "00000000000000000000000000000000", 1, &stale);
  if (!rc)
    rc = tarn__s3_put_if_match(s, m, "three", 5, etag, 1, &cur);
  /* radosgw compares the header's bytes with its unquoted ETag: the quoted
   * form (RFC 7232, S3, the AWS SDKs) never matches there. Try the bare one
   * to tell "refuses the current ETag" from "wants it unquoted". */
  if (!rc && cur == 412)
    rc = tarn__s3_put_if_match(s, m, "three", 5, etag, 0, &bare);
  if (!rc)
    rc = tarn__s3_put_if_match(s, miss, "four", 4, etag, 1, &missing);
  if (unreachable(rc))
    return rc;
  if (rc) {
    add(rep, "if_match", 0, TARN_PROBE_FAILS, "%s", tarn_errmsg());
    return 0;
  }
  tarn_buf b = TARN_BUF_INIT;
  int g = tarn_objstore_get(s, m, &b);
  int now_three = !g && b.len == 5 && !memcmp(b.data, "three", 5);
  int now_two = !g && b.len == 3 && !memcmp(b.data, "two", 3);
  tarn_buf_free(&b);
  if (unreachable(g))
    return g;
  if (stale / 100 == 2 || now_two)
    add(rep, "if_match", 0, TARN_PROBE_FAILS,
        "a PUT with a stale If-Match was answered %ld%s: the store ignores If-Match", stale,
        now_two ? " and replaced the object" : "");
  else if (stale != 412)
    add(rep, "if_match", 0, TARN_PROBE_FAILS,
        "a PUT with a stale If-Match was answered %ld, not 412 Precondition Failed", stale);
  else if (cur == 412 && bare / 100 == 2 && now_three)
    add(rep, "if_match", 0, TARN_PROBE_FAILS,
        "a stale If-Match is refused (412), but the current ETag quoted (RFC 7232, S3, the AWS "
        "SDKs) is refused too; only the bare ETag overwrites (as radosgw compares it)");
  else if (cur / 100 != 2 || !now_three)
    add(rep, "if_match", 0, TARN_PROBE_FAILS,
        "a stale If-Match is refused (412) but one with the current ETag was answered %ld%s "
        "(If-Match unsupported, or ETags not stable)",
        cur, cur / 100 == 2 ? " and did not write" : "");
  else
    add(rep, "if_match", 0, TARN_PROBE_HOLDS,
        "a stale If-Match is refused (412), the current ETag's overwrite done");
  if (missing / 100 == 2)
    add(rep, "if_match_missing", 0, TARN_PROBE_FAILS,
        "a PUT with If-Match to a missing key was answered %ld: it created the object", missing);
  else if (missing == 404)
    add(rep, "if_match_missing", 0, TARN_PROBE_HOLDS,
        "If-Match to a missing key: 404 Not Found, not 412 Precondition Failed (tarn tolerates "
        "either: it never sends If-Match)");
  else if (missing == 412)
    add(rep, "if_match_missing", 0, TARN_PROBE_HOLDS,
        "If-Match to a missing key: 412 Precondition Failed, nothing created");
  else
    add(rep, "if_match_missing", 0, TARN_PROBE_FAILS,
        "a PUT with If-Match to a missing key was answered %ld, neither 404 nor 412", missing);
  return 0;
}

/* create_only_multipart: CompleteMultipartUpload with If-None-Match: * onto a
 * name created while the upload ran must be refused. radosgw 16.2 completes
 * it and replaces the object; tarn HEADs the name before completing
 * (s_put_commit), which narrows the window to the time between that HEAD and
 * the completion but does not close it. Only objects over multipart_threshold
 * (16 MiB: compacted files, never WAL objects) go multipart, and their names
 * carry a fresh random part (LS-013, compactor.c), so no second writer of the
 * name exists in tarn: reported, not refused. */
static int probe_multipart(tarn_objstore *s, const char *prefix, tarn_probe_report *rep) {
  if (!is_s3(s)) {
    add(rep, "create_only_multipart", 0, TARN_PROBE_NOT_CHECKED,
        "%s:// has no multipart uploads: a streaming put is as create-only as a put",
        tarn_objstore_scheme(s));
    return 0;
  }
  char name[128];
  snprintf(name, sizeof name, "%smp", prefix);
  int replaced = 0, rc = tarn__s3_multipart_race(s, name, &replaced);
  if (unreachable(rc))
    return rc;
  tarn_buf b = TARN_BUF_INIT;
  int g = rc ? rc : tarn_objstore_get(s, name, &b);
  int multipart = !g && b.len == 9 && !memcmp(b.data, "multipart", 9);
  tarn_buf_free(&b);
  if (unreachable(g))
    return g;
  if (rc)
    add(rep, "create_only_multipart", 0, TARN_PROBE_FAILS, "%s", tarn_errmsg());
  else if (replaced || multipart)
    add(rep, "create_only_multipart", 0, TARN_PROBE_FAILS,
        "CompleteMultipartUpload with If-None-Match: * replaced an object created while the "
        "upload ran (as radosgw 16.2 does); tarn's HEAD before completing narrows the window, "
        "and only compacted files over multipart_threshold (random names) go multipart");
  else
    add(rep, "create_only_multipart", 0, TARN_PROBE_HOLDS,
        "CompleteMultipartUpload with If-None-Match: * onto a name created meanwhile is "
        "refused (412)");
  return 0;
}

/* create-only: the property every WAL object, slot and marker relies on.
 * Returns 0, or the error when the store cannot be reached. */
static int probe_create_only(tarn_objstore *s, const char *x, tarn_buf *b, tarn_probe_report *rep) {
  int rc = tarn_objstore_put(s, x, "first", 5);
  if (unreachable(rc))
    return rc;
  if (rc) {
    add(rep, "create_only", 1, TARN_PROBE_FAILS, "a put of a new name failed: %s", tarn_errmsg());
  } else {
    rc = tarn_objstore_put(s, x, "second", 6);
    if (unreachable(rc))
      return rc;
    if (rc == TARN_EEXIST) {
      add(rep, "create_only", 1, TARN_PROBE_HOLDS,
          "a create-only put (If-None-Match: *) of an existing name is refused");
    } else if (rc == 0) {
      int g = tarn_objstore_get(s, x, b);
      int replaced = !g && b->len == 6;
      add(rep, "create_only", 1, TARN_PROBE_FAILS,
          "a create-only put of an existing name SUCCEEDED (the store ignores If-None-Match: *)%s",
          g          ? ""
          : replaced ? " and replaced the object"
                     : "; the object kept its first bytes");
    } else {
      add(rep, "create_only", 1, TARN_PROBE_FAILS,
          "a create-only put of an existing name answered \"%s\", not \"exists\" (412)",
          tarn_errmsg());
    }
  }
  return 0;
}

/* throttling_503: what the client met on the way. Every verdict above was
 * reached through its retries, so when 503s came and every property held,
 * the retries kept create-only create-only (a 412 after a retried 5xx is
 * settled by reading back, objstore_s3.c) and reported our own puts as ours. */
static void probe_throttling(tarn_objstore *s, tarn_probe_report *rep) {
  uint64_t throttled = 0, retried = 0;
  tarn__s3_counts(s, &throttled, &retried);
  if (!is_s3(s))
    add(rep, "throttling_503", 1, TARN_PROBE_NOT_CHECKED, "%s:// does not throttle",
        tarn_objstore_scheme(s));
  else if (!throttled)
    add(rep, "throttling_503", 1, TARN_PROBE_NOT_CHECKED,
        "the store answered no 503/429 during the probe (%llu retries for other causes): "
        "nothing to judge",
        (unsigned long long)retried);
  else {
    int ok = !rep->unsafe;
    add(rep, "throttling_503", 1, ok ? TARN_PROBE_HOLDS : TARN_PROBE_FAILS,
        ok ? "%llu answers 503/429 during the probe, each retried; every property above held "
             "through them"
           : "%llu answers 503/429 during the probe; a property above failed through them",
        (unsigned long long)throttled);
  }
}

int tarn_probe_objstore(tarn_objstore *s, tarn_probe_report *rep) {
  memset(rep, 0, sizeof *rep);
  char prefix[64], x[128], raw[128];
  int rc = scratch_name(prefix, sizeof prefix, "tarn-probe-%016llx/");
  if (rc)
    return rc;
  snprintf(x, sizeof x, "%sx", prefix);
  snprintf(raw, sizeof raw, "%sraw", prefix);
  tarn_buf b = TARN_BUF_INIT;
  if ((rc = probe_create_only(s, x, &b, rep)))
    goto out;
  /* read-after-write, whole and ranged */
  uint8_t data[1000];
  for (size_t i = 0; i < sizeof data; i++)
    data[i] = (uint8_t)(i * 7 + 3);
  rc = tarn_objstore_put(s, raw, data, sizeof data);
  uint64_t size = 0;
  if (!rc)
    rc = tarn_objstore_get(s, raw, &b);
  int same = !rc && b.len == sizeof data && memcmp(b.data, data, sizeof data) == 0;
  if (!rc)
    rc = tarn_objstore_head(s, raw, &size);
  if (unreachable(rc))
    goto out;
  add(rep, "read_after_write", 1,
      !rc && same && size == sizeof data ? TARN_PROBE_HOLDS : TARN_PROBE_FAILS,
      rc     ? "put, get or head failed: %s"
      : same ? (size == sizeof data ? "a get and a head right after the put see it%s"
                                    : "head gave another size%s")
             : "a get right after the put returned other bytes%s",
      rc ? tarn_errmsg() : "");
  if ((rc = probe_etag(s, raw, data, sizeof data, rep)))
    goto out;
  rc = tarn_objstore_get_range(s, raw, 100, 50, &b);
  if (unreachable(rc))
    goto out;
  add(rep, "range_read", 1,
      !rc && b.len == 50 && memcmp(b.data, data + 100, 50) == 0 ? TARN_PROBE_HOLDS
                                                                : TARN_PROBE_FAILS,
      "%s", rc ? tarn_errmsg() : "bytes [100, 150) of the object");
  if ((rc = probe_list(s, prefix, rep)))
    goto out;
  /* deletion: a deleted name is gone (reclamation, fsck) */
  rc = tarn_objstore_delete(s, x);
  int h = rc ? rc : tarn_objstore_head(s, x, &size);
  int g = rc ? rc : tarn_objstore_get(s, x, &b);
  if (unreachable(rc) || unreachable(h) || unreachable(g)) {
    rc = TARN_EUNAVAIL;
    goto out;
  }
  add(rep, "read_after_delete", 1,
      h == TARN_ENOTFOUND && g == TARN_ENOTFOUND ? TARN_PROBE_HOLDS : TARN_PROBE_FAILS, "%s",
      rc                                           ? tarn_errmsg()
      : h == TARN_ENOTFOUND && g == TARN_ENOTFOUND ? "head and get right after the delete: 404"
                                                   : "the object is still seen after its delete");
  rc = tarn_objstore_delete(s, x);
  add(rep, "delete_absent", 0, rc ? TARN_PROBE_FAILS : TARN_PROBE_HOLDS, "%s",
      rc ? tarn_errmsg() : "deleting an absent name succeeds (204/404 taken as done)");
  rc = 0;
  if ((rc = probe_if_match(s, prefix, rep)))
    goto out;
  if ((rc = probe_multipart(s, prefix, rep)))
    goto out;
  probe_throttling(s, rep);
out:
  tarn_buf_free(&b);
  obj_cleanup(s, prefix);
  if (unreachable(rc))
    return tarn__errctx(TARN_EUNAVAIL, "probe: the object store cannot be reached");
  return 0;
}

/* ---- metadata stores --------------------------------------------------------- */

/* Keys in Oxia's slash-aware order (tarn_meta_key_compare) differ from byte
 * order: a store that orders bytes puts "/b" before "/a/b". */
static const char *const meta_keys[] = {"b", "/a/b", "a-b", "/b", "a", "/a/a", "/a"};
#define N_META (sizeof meta_keys / sizeof meta_keys[0])
#define META_END "/~/~/~/~/~/~/~/~" /* after every key above */

static int cmp_key(const void *a, const void *b) {
  return tarn_meta_key_compare(*(const char *const *)a, *(const char *const *)b);
}

static int probe_meta_order(tarn_meta *m, const char *part, tarn_probe_report *rep) {
  for (size_t i = 0; i < N_META; i++) {
    int rc = tarn_meta_put(m, part, meta_keys[i], "o", 1, NULL);
    if (unreachable(rc))
      return rc;
    if (rc) {
      add(rep, "key_order", 1, TARN_PROBE_FAILS, "a put failed: %s", tarn_errmsg());
      return 0;
    }
  }
  tarn_meta_recs r = {0};
  int rc = tarn_meta_list(m, part, "", META_END, 0, 0, &r);
  if (unreachable(rc))
    return rc;
  const char *want[N_META];
  memcpy(want, meta_keys, sizeof want);
  qsort(want, N_META, sizeof want[0], cmp_key);
  size_t seen = 0;
  int ok = !rc;
  for (size_t i = 0; ok && i < r.n; i++) {
    if (strcmp(r.v[i].key, "k1") == 0 || strncmp(r.v[i].key, "s-", 2) == 0)
      continue; /* the other probes' keys */
    ok = seen < N_META && strcmp(r.v[i].key, want[seen]) == 0;
    seen++;
  }
  ok = ok && seen == N_META;
  add(rep, "key_order", 1, ok ? TARN_PROBE_HOLDS : TARN_PROBE_FAILS, "%s",
      rc   ? tarn_errmsg()
      : ok ? "List returns every key once, in the slash-aware key order"
           : "List returned keys missing, twice or out of the key order");
  tarn_meta_recs_free(&r);
  return 0;
}

int tarn_probe_meta(tarn_meta *m, tarn_probe_report *rep) {
  memset(rep, 0, sizeof *rep);
  char part[64];
  int rc = scratch_name(part, sizeof part, "tarn-probe-%016llx");
  if (rc)
    return rc;
  tarn_meta_stat st = {0}, st2 = {0};
  tarn_meta_rec r = {0};
  rc = tarn_meta_create(m, part, "k1", "v1", 2, TARN_META_PERSISTENT, &st);
  if (unreachable(rc))
    goto out;
  int again = rc ? rc : tarn_meta_create(m, part, "k1", "v2", 2, TARN_META_PERSISTENT, NULL);
  if (unreachable(again)) {
    rc = again;
    goto out;
  }
  add(rep, "create_if_absent", 1, !rc && again == TARN_EEXIST ? TARN_PROBE_HOLDS : TARN_PROBE_FAILS,
      "%s",
      rc                     ? tarn_errmsg()
      : again == TARN_EEXIST ? "CreateIfAbsent of an existing key is refused"
                             : "CreateIfAbsent of an existing key was not refused");
  rc = tarn_meta_get(m, part, "k1", &r);
  if (unreachable(rc))
    goto out;
  add(rep, "read_after_write", 1,
      !rc && r.value_len == 2 && !memcmp(r.value, "v1", 2) && r.stat.version == st.version
          ? TARN_PROBE_HOLDS
          : TARN_PROBE_FAILS,
      "%s", rc ? tarn_errmsg() : "a Get right after the write sees its value and version");
  tarn_meta_rec_free(&r);
  /* CompareAndSet on another version must fail, on the right one succeed */
  int bad = tarn_meta_cas(m, part, "k1", "v3", 2, st.version + 1000, NULL);
  int good = tarn_meta_cas(m, part, "k1", "v4", 2, st.version, &st2);
  if (unreachable(bad) || unreachable(good)) {
    rc = TARN_EUNAVAIL;
    goto out;
  }
  add(rep, "compare_and_set", 1,
      bad == TARN_ECONFLICT && !good && st2.version > st.version ? TARN_PROBE_HOLDS
                                                                 : TARN_PROBE_FAILS,
      "%s",
      bad != TARN_ECONFLICT ? "CompareAndSet on another version was not refused"
      : good                ? "CompareAndSet on the current version failed"
                            : "refused on another version; on the current one a greater version");
  /* guards: a write whose condition fails writes nothing */
  tarn_meta_guard gd = {TARN_META_GUARD_EXISTS, "no-such-key", TARN_META_ANY_VERSION};
  int gr = tarn_meta_put_if(m, part, "k2", "g", 1, &gd, 1, NULL);
  int k2 = tarn_meta_get(m, part, "k2", &r);
  tarn_meta_rec_free(&r);
  if (unreachable(gr) || unreachable(k2)) {
    rc = TARN_EUNAVAIL;
    goto out;
  }
  add(rep, "guarded_write", 1,
      gr == TARN_EGUARD && k2 == TARN_ENOTFOUND ? TARN_PROBE_HOLDS : TARN_PROBE_FAILS, "%s",
      gr == TARN_EGUARD && k2 == TARN_ENOTFOUND
          ? "a put whose guard fails is refused and writes nothing"
          : "a put whose guard fails was not refused, or wrote");
  /* SequencedPut: the index keys' offsets */
  tarn_meta_rec o1 = {0}, o2 = {0};
  int s1 = tarn_meta_sequenced_put(m, part, "s", 3, 10, "x", 1, &o1);
  int s2 = s1 ? s1 : tarn_meta_sequenced_put(m, part, "s", 2, 5, "y", 1, &o2);
  if (unreachable(s1) || unreachable(s2)) {
    tarn_meta_rec_free(&o1);
    tarn_meta_rec_free(&o2);
    rc = TARN_EUNAVAIL;
    goto out;
  }
  int seq_ok = !s1 && !s2 && o1.key && o2.key &&
               !strcmp(o1.key, "s-00000000000000000003-00000000000000000010") &&
               !strcmp(o2.key, "s-00000000000000000005-00000000000000000015");
  add(rep, "sequenced_put", 1, seq_ok ? TARN_PROBE_HOLDS : TARN_PROBE_FAILS, "%s",
      seq_ok ? "SequencedPut adds to the last key's numbers"
             : "SequencedPut gave other keys, or failed");
  tarn_meta_rec_free(&o1);
  tarn_meta_rec_free(&o2);
  rc = probe_meta_order(m, part, rep);
out:
  if (!unreachable(rc))
    rc = 0;
  char why[512];
  snprintf(why, sizeof why, "%s", tarn_errmsg());
  tarn_meta_delete_range(m, part, "", META_END, NULL);
  if (rc)
    return tarn__err(TARN_EUNAVAIL, "probe: the metadata store cannot be reached: %s", why);
  return 0;
}

/* ---- metadata stores: two sessions ------------------------------------------- */

/* cas_linearizable: two handles (two sessions, as two tarn processes) add 1
 * to one counter CAS_ROUNDS times each by Get then CompareAndSet, retrying on
 * a conflict. On a store whose CAS is linearizable no increment is lost: the
 * counter ends at 2 * CAS_ROUNDS. A store that serves a stale Get and then
 * accepts a CompareAndSet on the version it showed, or that checks versions
 * per session, loses some: the leases, locks and catalog records tarn guards
 * with CAS would be taken twice. */
#define CAS_ROUNDS 12

typedef struct cas_worker {
  tarn_meta *m;
  const char *part;
  int done, err;
  char why[256];
} cas_worker;

static void *cas_run(void *arg) {
  cas_worker *w = arg;
  for (int tries = 0; w->done < CAS_ROUNDS && tries < 50 * CAS_ROUNDS; tries++) {
    tarn_meta_rec r = {0};
    int rc = tarn_meta_get(w->m, w->part, "counter", &r);
    if (!rc) {
      char v[32];
      size_t n = r.value_len < sizeof v - 1 ? r.value_len : sizeof v - 1;
      memcpy(v, r.value, n);
      v[n] = 0;
      snprintf(v, sizeof v, "%lld", strtoll(v, NULL, 10) + 1);
      rc = tarn_meta_cas(w->m, w->part, "counter", v, strlen(v), r.stat.version, NULL);
    }
    tarn_meta_rec_free(&r);
    if (!rc)
      w->done++;
    else if (rc != TARN_ECONFLICT) {
      w->err = rc;
      snprintf(w->why, sizeof w->why, "%s", tarn_errmsg());
      return NULL;
    }
  }
  return NULL;
}

static int probe_cas_race(tarn_meta *m, tarn_meta *peer, const char *part, tarn_probe_report *rep) {
  int rc = tarn_meta_create(m, part, "counter", "0", 1, TARN_META_PERSISTENT, NULL);
  if (unreachable(rc))
    return rc;
  if (rc) {
    add(rep, "cas_linearizable", 1, TARN_PROBE_FAILS, "%s", tarn_errmsg());
    return 0;
  }
  cas_worker w[2] = {{m, part, 0, 0, ""}, {peer, part, 0, 0, ""}};
  pthread_t t;
  int threaded = pthread_create(&t, NULL, cas_run, &w[1]) == 0;
  cas_run(&w[0]);
  if (threaded)
    pthread_join(t, NULL);
  else
    cas_run(&w[1]);
  for (int i = 0; i < 2; i++)
    if (unreachable(w[i].err))
      return tarn__err(w[i].err, "%s", w[i].why);
  tarn_meta_rec r = {0};
  rc = tarn_meta_get(m, part, "counter", &r);
  if (unreachable(rc))
    return rc;
  long long got = -1;
  if (!rc) {
    char v[32];
    size_t n = r.value_len < sizeof v - 1 ? r.value_len : sizeof v - 1;
    memcpy(v, r.value, n);
    v[n] = 0;
    got = strtoll(v, NULL, 10);
  }
  tarn_meta_rec_free(&r);
  int done = w[0].done + w[1].done, e = w[0].err ? w[0].err : w[1].err;
  const char *why = w[0].err ? w[0].why : w[1].why;
  if (e == TARN_EUNKNOWN || e == TARN_ETIMEDOUT) /* may have landed: the count cannot judge */
    add(rep, "cas_linearizable", 1, TARN_PROBE_NOT_CHECKED,
        "a CompareAndSet's outcome is unknown (%s): run the probe again", why);
  else if (e)
    add(rep, "cas_linearizable", 1, TARN_PROBE_FAILS, "a CompareAndSet failed: %s", why);
  else if (rc || got != done || done != 2 * CAS_ROUNDS)
    add(rep, "cas_linearizable", 1, TARN_PROBE_FAILS,
        "two sessions racing CompareAndSet: %d increments succeeded but the counter is %lld: "
        "an update was lost",
        done, got);
  else
    add(rep, "cas_linearizable", 1, TARN_PROBE_HOLDS,
        "two sessions racing Get + CompareAndSet on one key: %d increments, none lost", done);
  return 0;
}

/* ephemeral_session: an ephemeral record is seen by other sessions while its
 * session lives and is gone once that session ends (tarn_meta_close): write
 * leases and locks are ephemeral, and a dead writer's must not outlive it. */
static int probe_ephemeral(tarn_meta *m, tarn_meta **peer, const char *part,
                           tarn_probe_report *rep) {
  int rc = tarn_meta_create(*peer, part, "eph", "e", 1, TARN_META_EPHEMERAL, NULL);
  tarn_meta_rec r = {0};
  int seen = rc ? rc : tarn_meta_get(m, part, "eph", &r);
  tarn_meta_rec_free(&r);
  if (unreachable(rc) || unreachable(seen))
    return unreachable(rc) ? rc : seen;
  tarn_meta_close(*peer);
  *peer = NULL;
  if (rc || seen) {
    add(rep, "ephemeral_session", 1, TARN_PROBE_FAILS, "%s",
        rc ? tarn_errmsg() : "another session did not see the ephemeral record");
    return 0;
  }
  int gone = tarn_meta_get(m, part, "eph", &r);
  tarn_meta_rec_free(&r);
  if (unreachable(gone))
    return gone;
  add(rep, "ephemeral_session", 1, gone == TARN_ENOTFOUND ? TARN_PROBE_HOLDS : TARN_PROBE_FAILS,
      "%s",
      gone == TARN_ENOTFOUND ? "an ephemeral record is seen by another session, and gone when "
                               "its own session ends"
      : gone                 ? tarn_errmsg()
                             : "an ephemeral record outlived its session's end");
  return 0;
}

int tarn_probe_meta_uri(const char *uri, tarn_probe_report *rep) {
  memset(rep, 0, sizeof *rep);
  tarn_meta *m = NULL, *peer = NULL;
  int rc = tarn_meta_open(uri, &m);
  if (rc)
    return rc;
  if ((rc = tarn_probe_meta(m, rep))) {
    tarn_meta_close(m);
    return rc;
  }
  char part[64] = "";
  if ((rc = scratch_name(part, sizeof part, "tarn-probe-%016llx")))
    goto out;
  if ((rc = tarn_meta_open(uri, &peer))) {
    if (!unreachable(rc))
      rc = tarn__errctx(TARN_EUNAVAIL, "probe: a second session");
    goto out;
  }
  if (!(rc = probe_cas_race(m, peer, part, rep)))
    rc = probe_ephemeral(m, &peer, part, rep);
out:;
  char why[512];
  snprintf(why, sizeof why, "%s", tarn_errmsg());
  tarn_meta_close(peer);
  if (*part)
    tarn_meta_delete_range(m, part, "", META_END, NULL);
  tarn_meta_close(m);
  if (rc && unreachable(rc))
    return tarn__err(TARN_EUNAVAIL, "probe: the metadata store cannot be reached: %s", why);
  if (rc)
    return tarn__err(rc, "probe: %s", why);
  return 0;
}
