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
         "Object store properties (* = tarn's safety depends on it):\n"
         "  create_only*        a create-only PUT (If-None-Match: *) of an existing name is\n"
         "                      refused; some stores ignore the header under some\n"
         "                      conditions, and then a WAL object could be replaced\n"
         "  read_after_write*   a GET and a HEAD right after a PUT see it\n"
         "  range_read*         a ranged GET returns those bytes\n"
         "  list_order*         LIST returns names in byte order across pages (S3 Express\n"
         "                      directory buckets do not: paging skips names)\n"
         "  list_complete*      LIST returns every name once\n"
         "  read_after_delete*  a deleted name is gone at once\n"
         "  delete_absent       deleting an absent name succeeds\n"
         "  if_match            not checked: tarn never sends If-Match\n"
         "  throttling_503      not checked: a store cannot be made to answer 503; the\n"
         "                      client retries it\n"
         "Metadata store properties (all *): create_if_absent, read_after_write,\n"
         "compare_and_set, guarded_write, sequenced_put, key_order.\n"
         "\n"
         "Options:\n"
         "  --json   print {\"uri\", \"kind\", \"verdict\": \"ok\"|\"unsafe\", \"properties\":\n"
         "           [{\"name\", \"safety\", \"verdict\": \"holds\"|\"fails\"|\"not checked\",\n"
         "           \"detail\"}]}\n"
         "\n"
         "`tarn init` runs the object-store checks on the WAL and compacted roots and\n"
         "refuses a store that fails a safety property, unless given\n"
         "--i-know-the-store-is-unsafe.\n"
         "\n"
         "Exit status: 0 every property holds; 1 a property tarn's safety depends on\n"
         "fails; 2 bad command line; 3 the store could not be reached.\n");
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
      printf("  %-18s %-11s %s%s\n", rep->r[i].name, verdict_name(rep->r[i].verdict),
             rep->r[i].safety && rep->r[i].verdict == TARN_PROBE_FAILS ? "UNSAFE: " : "",
             rep->r[i].detail);
    printf("verdict: %s\n", rep->unsafe ? "UNSAFE for tarn" : "ok");
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
    tarn_meta *m;
    if ((rc = tarn_meta_open(uri, &m)))
      return rc == TARN_EINVAL || rc == TARN_EUNSUPPORTED
                 ? tarn_cli_usage_error("probe", "%s", tarn_errmsg())
                 : tarn_cli_fail_rc(TARN_EUNAVAIL, "probe");
    rc = tarn_probe_meta(m, &rep);
    tarn_meta_close(m);
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
