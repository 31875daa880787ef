/* tarn init — create a deployment. */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "tarn/catalog.h"
#include "tarn/deployment.h"
#include "tarn/express.h"
#include "tarn/probe.h"
#include "tarn/timing.h"

static void help(void) {
  printf("usage: tarn init [DEPLOYMENT FLAGS] [--json]\n"
         "\n"
         "Creates a tarn deployment: the local directories of file:// roots and of a\n"
         "sqlite: metadata store, the catalog's deployment record, the timing record\n"
         "(below), and the config file\n"
         "HOME/" TARN_DEPLOYMENT_CONFIG_FILE
         " naming the three stores, so that --home or TARN_HOME alone\n"
         "finds them later (flags and TARN_META/TARN_WAL/TARN_COMPACTED still win).\n"
         "Running it on an existing deployment changes nothing and succeeds.\n"
         "Each root gets a marker object " TARN_ROOT_MARKER " holding the deployment's id;\n"
         "a root that belongs to another deployment (its marker, or objects without\n"
         "a marker for a new deployment) is refused (docs/deployment.md).\n"
         "\n"
         "Options:\n"
         "  --json             print {meta, wal, compacted, config, created} as JSON\n"
         "  --wal-grace-ms N           the deployment's timing record (written once; the\n"
         "  --max-publish-delay-ms N   defaults 600000, 300000, 60000, 60000): the WAL\n"
         "  --max-put-ms N             grace must exceed the writers' publish limit + the\n"
         "  --skew-allowance-ms N      longest index put + the clock skew allowance\n"
         "                             (docs/compaction.md, \"Grace arithmetic\")\n"
         "  --express-bucket URI[@ZONE] one bucket of the express bucket set, repeated\n"
         "                             in the fixed order poison is written in\n"
         "                             (default with a file:// WAL root: the directories\n"
         "                             HOME/express/{a,b,c}, zones a, b, c)\n"
         "  --express-w N              the copy quorum W, 1..K (default 2, or K if less)\n"
         "  --express-win N            the pipeline window WIN in slots (default 8)\n"
         "                             (the express record is written once: docs/express.md)\n"
         "  --i-know-the-store-is-unsafe\n"
         "                             initialize even when the WAL or compacted root fails\n"
         "                             a property tarn's safety depends on (`tarn probe`:\n"
         "                             create-only puts, read-after-write, LIST order); by\n"
         "                             default init runs those checks and refuses such a\n"
         "                             store, since acknowledged data could be lost on it\n"
         "\n%s"
         "\nExit status: 0 created or already there; 1 failed, or a root failed a safety\n"
         "property; 2 bad command line;\n"
         "3 a store could not be reached.\n",
         tarn_cli_deploy_help);
}

/* Issue 31: the object-store checks of `tarn probe` on each root; a root
 * that fails a safety property is refused unless the operator overrides,
 * loudly. Returns 0 or the exit status. */
static int probe_roots(tarn_deployment *dep, int unsafe_ok) {
  const tarn_deployment_config *c = tarn_deployment_config_of(dep);
  struct {
    tarn_objstore *s;
    const char *uri, *what;
  } roots[2] = {{tarn_deployment_wal(dep), c->wal_uri, "WAL"},
                {tarn_deployment_compacted(dep), c->compacted_uri, "compacted"}};
  for (int i = 0; i < 2; i++) {
    tarn_probe_report rep;
    int rc = tarn_probe_objstore(roots[i].s, &rep);
    if (rc)
      return tarn_cli_fail_rc(rc, "init: probing the stores");
    if (!rep.unsafe)
      continue;
    for (size_t k = 0; k < rep.n; k++)
      if (rep.r[k].safety && rep.r[k].verdict == TARN_PROBE_FAILS)
        fprintf(stderr, "tarn: init: the %s root %s: %s fails: %s\n", roots[i].what, roots[i].uri,
                rep.r[k].name, rep.r[k].detail);
    if (!unsafe_ok) {
      fprintf(stderr,
              "tarn: init: refused: the %s root is not safe for tarn (see `tarn probe "
              "%s`); --i-know-the-store-is-unsafe overrides\n",
              roots[i].what, roots[i].uri);
      return TARN_EXIT_FAULT;
    }
    fprintf(stderr,
            "tarn: init: WARNING: --i-know-the-store-is-unsafe: initializing on a %s "
            "root that fails a safety property; acknowledged data may be lost or "
            "duplicated on it\n",
            roots[i].what);
  }
  return 0;
}

#define MAX_BUCKETS 8
typedef struct xbuckets {
  const char *v[MAX_BUCKETS];
  size_t n;
} xbuckets;

static int add_bucket(void *ctx, const char *v) {
  xbuckets *b = ctx;
  if (b->n >= MAX_BUCKETS || !*v)
    return -1;
  b->v[b->n++] = v;
  return 0;
}

/* The express bucket set: the flags', else the embedded default when the WAL
 * root is a directory; nothing for a remote WAL root without flags. */
static int record_express(tarn_meta *m, const tarn_deployment_config *c, const xbuckets *b,
                          uint64_t w, uint64_t win) {
  if (!b->n && strncmp(c->wal_uri, "file://", 7))
    return 0;
  if (!b->n)
    return tarn_express_deploy_default(m, c->home, NULL);
  if (!w)
    w = b->n < 2 ? b->n : 2;
  return tarn_express_deploy(m, b->v, b->n, (uint32_t)w, (uint32_t)win, NULL);
}

int tarn_cmd_init(int argc, char **argv) {
  tarn_cli_deploy d = {0};
  xbuckets xb = {{0}, 0};
  uint64_t xw = 0, xwin = 8;
  int json = 0, nargs, ex, unsafe_ok = 0;
  tarn_timing t;
  tarn_timing_default(&t);
  const tarn_cli_opt opts[] = {
      TARN_CLI_OPT_UINT("--wal-grace-ms", &t.wal_grace_ms, 1, INT64_MAX >> 3, "a number of ms",
                        NULL),
      TARN_CLI_OPT_UINT("--max-publish-delay-ms", &t.max_publish_delay_ms, 1, INT64_MAX >> 3,
                        "a number of ms", NULL),
      TARN_CLI_OPT_UINT("--max-put-ms", &t.max_put_ms, 1, INT64_MAX >> 3, "a number of ms", NULL),
      TARN_CLI_OPT_UINT("--skew-allowance-ms", &t.skew_allowance_ms, 1, INT64_MAX >> 3,
                        "a number of ms", NULL),
      TARN_CLI_OPT_CALL("--express-bucket", add_bucket, &xb, "URI[@ZONE] (at most 8)"),
      TARN_CLI_OPT_UINT("--express-w", &xw, 1, MAX_BUCKETS, "a number 1 .. 8", NULL),
      TARN_CLI_OPT_UINT("--express-win", &xwin, 1, 4096, "a number 1 .. 4096", NULL),
      TARN_CLI_OPT_FLAG("--i-know-the-store-is-unsafe", &unsafe_ok, 1),
      {0}};
  const tarn_cli_verb v = {"init", help, opts, &d, &json, 0, NULL};
  if ((ex = tarn_cli_parse(&v, argc, argv, &nargs)) != TARN_CLI_GO_ON)
    return ex;
  tarn_deployment *dep;
  ex = tarn_cli_deploy_open(&d, 1, &dep);
  if (ex)
    return ex;
  if ((ex = probe_roots(dep, unsafe_ok))) {
    tarn_cli_catalog_close(dep, NULL);
    return ex;
  }
  tarn_catalog *cat = NULL;
  int created = 0;
  /* Issue 31 item 5: the roots carry this deployment's id; a root of
   * another deployment is refused before anything is written */
  int rc = tarn_deployment_claim_roots(dep, 1);
  if (!rc)
    rc = tarn_catalog_open(tarn_deployment_meta(dep), NULL, &cat);
  if (!rc)
    rc = tarn_catalog_init(cat, &created);
  const tarn_deployment_config *c = tarn_deployment_config_of(dep);
  int saved = 0;
  if (!rc) /* LS-085, LS-086: the grace and what it must outlast, for every process */
    rc = tarn_timing_record(tarn_deployment_meta(dep), &t, NULL);
  if (!rc)
    rc = record_express(tarn_deployment_meta(dep), c, &xb, xw, xwin);
  if (!rc) /* so that --home/TARN_HOME alone finds these stores from now on */
    rc = tarn_deployment_config_save(c, &saved);
  if (rc) {
    ex = tarn_cli_fail_rc(rc, "init");
    tarn_cli_catalog_close(dep, cat);
    return ex;
  }
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", c->home, TARN_DEPLOYMENT_CONFIG_FILE);
  if (json) {
    json_t *o = json_object();
    json_object_set_new(o, "meta", json_string(c->meta_uri));
    json_object_set_new(o, "wal", json_string(c->wal_uri));
    json_object_set_new(o, "compacted", json_string(c->compacted_uri));
    json_object_set_new(o, "config", json_string(path));
    json_object_set_new(o, "created", json_boolean(created));
    ex = tarn_cli_print_json(o);
  } else {
    printf("%s tarn deployment\n  metadata store  %s\n  WAL root        %s\n"
           "  compacted root  %s\n  config          %s%s\n",
           created ? "created" : "already initialized:", c->meta_uri, c->wal_uri, c->compacted_uri,
           path, saved ? " (written)" : "");
  }
  tarn_cli_catalog_close(dep, cat);
  return ex;
}
