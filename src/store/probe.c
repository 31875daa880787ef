/* Probing a store for what tarn relies on (tarn/probe.h; `tarn probe`,
 * `tarn init`; issue 31 "Stores that lie"). Each property is tried with the
 * public store operations, so the verdict is about the store as tarn's own
 * client sees it: a server that ignores If-None-Match shows as a second
 * create-only put that succeeds. */
#include "tarn/probe.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

int tarn_probe_objstore(tarn_objstore *s, tarn_probe_report *rep) {
  memset(rep, 0, sizeof *rep);
  char prefix[64], x[128], raw[128];
  int rc = scratch_name(prefix, sizeof prefix, "tarn-probe-%016llx/");
  if (rc)
    return rc;
  snprintf(x, sizeof x, "%sx", prefix);
  snprintf(raw, sizeof raw, "%sraw", prefix);
  tarn_buf b = TARN_BUF_INIT;
  /* create-only: the property every WAL object, slot and marker relies on */
  rc = tarn_objstore_put(s, x, "first", 5);
  if (unreachable(rc))
    goto out;
  if (rc) {
    add(rep, "create_only", 1, TARN_PROBE_FAILS, "a put of a new name failed: %s", tarn_errmsg());
  } else {
    rc = tarn_objstore_put(s, x, "second", 6);
    if (unreachable(rc))
      goto out;
    if (rc == TARN_EEXIST) {
      add(rep, "create_only", 1, TARN_PROBE_HOLDS,
          "a create-only put (If-None-Match: *) of an existing name is refused");
    } else if (rc == 0) {
      int g = tarn_objstore_get(s, x, &b);
      int replaced = !g && b.len == 6;
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
  rc = 0;
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
  add(rep, "if_match", 0, TARN_PROBE_NOT_CHECKED,
      "tarn never sends If-Match (objects are written once and never replaced), so a store "
      "answering it 404 or 412 on a missing key does not matter to it");
  add(rep, "throttling_503", 0, TARN_PROBE_NOT_CHECKED,
      "a probe cannot make a store answer 503; tarn's S3 client retries 503/SlowDown with "
      "backoff and reports an unknown outcome after a put's last try (docs/objstore.md)");
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
