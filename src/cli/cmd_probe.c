/* tarn probe — does a store do what tarn relies on? (issue 31, "Stores that
 * lie"; the checks are tarn_probe_objstore / tarn_probe_meta, tarn/probe.h) */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "tarn/error.h"
#include "tarn/meta.h"
#include "tarn/objstore.h"
#include "tarn/probe.h"

static void help(void) {
  printf("usage: tarn probe STORE-URI [--json]\n"
         "\n"
         "Checks what tarn relies on in an object store or a metadata store, and prints a\n"
         "verdict per property. It works in a scratch prefix (objects tarn-probe-RANDOM/)\n"
         "or partition (tarn-probe-RANDOM) of its own and removes what it wrote; a\n"
         "deployment's own data is never touched.\n"
         "\n"
         "STORE-URI is an object store (file://DIR, s3://BUCKET/PREFIX?..., mem:NAME) or\n"
         "a metadata store (sqlite:PATH, etcd://HOST:PORT...), as for --wal, --compacted\n"
         "and --meta; mem: is probed as an object store.\n"
         "\n"
         "Verdicts: holds, fails, not checked (the detail says why). A property marked *\n"
         "protects tarn's safety: when it fails the store is UNSAFE for tarn and `tarn\n"
         "init` refuses it. One without * is reported but refuses nothing.\n"
         "\n"
         "Object store properties:\n"
         "  create_only*        a create-only PUT (If-None-Match: *) of an existing name is\n"
         "                      refused; protects every WAL object, slot and root marker\n"
         "                      from being replaced (some stores ignore the header)\n"
         "  read_after_write*   a GET and a HEAD right after a PUT see it; protects readers\n"
         "                      and the settling of a put whose reply was lost\n"
         "  etag                s3: a single PUT's ETag is the MD5 of its bytes, the same at\n"
         "                      every HEAD (S3 Express directory buckets and SSE-KMS give\n"
         "                      other ETags); a lost reply to a multipart put that landed\n"
         "                      is then reported \"exists\": a compaction fails, no\n"
         "                      acknowledged entry depends on it\n"
         "  range_read*         a ranged GET returns those bytes; protects every read\n"
         "  list_order*         LIST returns names in byte order across pages (S3 Express\n"
         "                      directory buckets do not: paging skips names); protects\n"
         "                      reclamation, fsck and the init marker check\n"
         "  list_complete*      LIST returns every name just written, once, across pages,\n"
         "                      and says when a page is cut short; protects the same\n"
         "  read_after_delete*  a deleted name is gone at once; protects reclamation\n"
         "  delete_absent       deleting an absent name succeeds\n"
         "  if_match            s3: a PUT with a stale If-Match is refused (412), one with\n"
         "                      the current ETag overwrites; tarn never sends If-Match\n"
         "  if_match_missing    s3: If-Match to a missing key creates nothing; the detail\n"
         "                      says whether the store answers 412 or 404 (tarn tolerates\n"
         "                      either)\n"
         "  create_only_multipart\n"
         "                      s3: CompleteMultipartUpload with If-None-Match: * onto a\n"
         "                      name created during the upload is refused (radosgw 16.2\n"
         "                      replaces the object; tarn HEADs before completing, and only\n"
         "                      compacted files over multipart_threshold go multipart)\n"
         "  throttling_503*     s3: the 503/429 answers met during the probe were retried\n"
         "                      and every property above held through them (a 412 after\n"
         "                      a retried 5xx is settled by reading back, so create-only\n"
         "                      stays create-only and an own put is not reported\n"
         "                      \"exists\"); not checked when the store did not throttle\n"
         "\n"
         "Metadata store properties (all *): create_if_absent, read_after_write,\n"
         "compare_and_set, guarded_write, sequenced_put, key_order (Oxia's order),\n"
         "cas_linearizable (two sessions race Get + CompareAndSet on one key: no update\n"
         "lost; protects leases, locks, the catalog) and ephemeral_session (an ephemeral\n"
         "record is seen by other sessions and gone when its session ends; protects write\n"
         "leases and locks of dead processes).\n"
         "\n"
         "Options:\n"
         "  --json   print {\"uri\", \"kind\", \"verdict\": \"ok\"|\"unsafe\", \"deviations\":\n"
         "           [names of failing properties without *], \"properties\": [{\"name\",\n"
         "           \"safety\", \"verdict\": \"holds\"|\"fails\"|\"not checked\", \"detail\"}]}\n"
         "\n"
         "`tarn init` runs the object-store checks on the WAL and compacted roots and\n"
         "refuses a store that fails a * property, unless given\n"
         "--i-know-the-store-is-unsafe.\n"
         "\n"
         "Exit status: 0 every * property holds (properties without * may fail: see\n"
         "\"deviations\"); 1 a * property fails; 2 bad command line; 3 the store could not\n"
         "be reached.\n");
}

static const char *verdict_name(int v) {
  return v == TARN_PROBE_HOLDS ? "holds" : v == TARN_PROBE_FAILS ? "fails" : "not checked";
}

static int is_meta_uri(const char *uri) {
  return strncmp(uri, "sqlite:", 7) == 0 || strncmp(uri, "etcd://", 7) == 0 ||
         strncmp(uri, "etcds://", 8) == 0;
}

int tarn_cli_probe_print(const char *uri, const char *kind, const tarn_probe_report *rep,
                         int json) {
  if (json) {
    json_t *o = json_object(), *a = json_array();
    json_object_set_new(o, "uri", json_string(uri));
    json_object_set_new(o, "kind", json_string(kind));
    json_object_set_new(o, "verdict", json_string(rep->unsafe ? "unsafe" : "ok"));
    json_t *dev = json_array();
    for (size_t i = 0; i < rep->n; i++)
      if (!rep->r[i].safety && rep->r[i].verdict == TARN_PROBE_FAILS)
        json_array_append_new(dev, json_string(rep->r[i].name));
    json_object_set_new(o, "deviations", dev);
    for (size_t i = 0; i < rep->n; i++) {
      json_t *p = json_object();
      json_object_set_new(p, "name", json_string(rep->r[i].name));
      json_object_set_new(p, "safety", json_boolean(rep->r[i].safety));
      json_object_set_new(p, "verdict", json_string(verdict_name(rep->r[i].verdict)));
      json_object_set_new(p, "detail", json_string(rep->r[i].detail));
      json_array_append_new(a, p);
    }
    json_object_set_new(o, "properties", a);
    tarn_cli_print_json(o);
  } else {
    printf("%s store %s\n", kind, uri);
    for (size_t i = 0; i < rep->n; i++)
      printf("  %-21s %-11s %s%s\n", rep->r[i].name, verdict_name(rep->r[i].verdict),
             rep->r[i].safety && rep->r[i].verdict == TARN_PROBE_FAILS ? "UNSAFE: " : "",
             rep->r[i].detail);
    char dev[256] = "";
    size_t dl = 0;
    for (size_t i = 0; i < rep->n; i++)
      if (!rep->r[i].safety && rep->r[i].verdict == TARN_PROBE_FAILS && dl < sizeof dev)
        dl += (size_t)snprintf(dev + dl, sizeof dev - dl, "%s%s", dl ? ", " : "", rep->r[i].name);
    if (rep->unsafe)
      printf("verdict: UNSAFE for tarn\n");
    else if (dl)
      printf("verdict: ok (fails, but tarn does not rely on it: %s)\n", dev);
    else
      printf("verdict: ok\n");
  }
  return rep->unsafe ? TARN_EXIT_FAULT : TARN_EXIT_OK;
}

int tarn_cmd_probe(int argc, char **argv) {
  int json = 0, nargs;
  const tarn_cli_verb v = {"probe", help, NULL, NULL, &json, 1, NULL};
  int ex = tarn_cli_parse(&v, argc, argv, &nargs);
  if (ex != TARN_CLI_GO_ON)
    return ex;
  if (!nargs)
    return tarn_cli_usage_error("probe", "which store? Give STORE-URI");
  const char *uri = argv[1];
  tarn_probe_report rep;
  int rc;
  const char *kind;
  if (is_meta_uri(uri)) {
    kind = "metadata";
    rc = tarn_probe_meta_uri(uri, &rep);
    if (rc == TARN_EINVAL || rc == TARN_EUNSUPPORTED)
      return tarn_cli_usage_error("probe", "%s", tarn_errmsg());
  } else {
    kind = "object";
    tarn_objstore *s;
    if ((rc = tarn_objstore_open(uri, &s)))
      return rc == TARN_EINVAL || rc == TARN_EUNSUPPORTED
                 ? tarn_cli_usage_error("probe", "%s", tarn_errmsg())
                 : tarn_cli_fail_rc(TARN_EUNAVAIL, "probe");
    rc = tarn_probe_objstore(s, &rep);
    tarn_objstore_close(s);
  }
  if (rc) { /* the message says which store could not be reached */
    fprintf(stderr, "tarn: %s\n", tarn_errmsg());
    return tarn_cli_exit_for(rc);
  }
  return tarn_cli_probe_print(uri, kind, &rep, json);
}
