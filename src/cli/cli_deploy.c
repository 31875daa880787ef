/* The deployment flags every store-using verb shares. */
#include "cli/cli.h"

#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "tarn/deployment.h"
#include "tarn/timing.h"
#include "tarn/error.h"

const char tarn_cli_deploy_help[] =
    "Deployment (the same for every command that opens the stores):\n"
    "  --home DIR         one directory holding everything: sqlite:DIR/meta.db,\n"
    "                     file://DIR/wal, file://DIR/compacted (env TARN_HOME;\n"
    "                     default ./" TARN_DEFAULT_HOME ")\n"
    "  --meta URI         metadata store: sqlite:PATH, mem:NAME, etcd://HOST:PORT,\n"
    "                     etcd+https://HOST:PORT[,...]?cacert=F&cert=F&key=F&user=U\n"
    "                     &password_file=F (env TARN_META; docs/deployment.md)\n"
    "  --wal URI          WAL root: file://DIR, s3://BUCKET/PREFIX (env TARN_WAL)\n"
    "  --compacted URI    compacted root (env TARN_COMPACTED)\n"
    "  A flag wins over its variable; a variable wins over --home/TARN_HOME.\n";

int tarn_cli_exit_for(int rc) {
  if (rc == 0)
    return TARN_EXIT_OK;
  /* a store that refuses tarn's credentials is as unusable as one that is down */
  return rc == TARN_EUNAVAIL || rc == TARN_EAUTH ? TARN_EXIT_UNAVAIL : TARN_EXIT_FAULT;
}

int tarn_cli_deploy_open(const tarn_cli_deploy *d, int create, struct tarn_deployment **out) {
  tarn_deployment_config c = {d->meta, d->wal, d->compacted, d->home};
  tarn_deployment_strings st;
  int rc = tarn_deployment_config_resolve(&c, &st);
  if (!rc && !create && strncmp(c.meta_uri, "sqlite:", 7) == 0) {
    /* Opening would create an empty database: say what is missing instead. */
    char path[4096];
    snprintf(path, sizeof path, "%.*s", (int)strcspn(c.meta_uri + 7, "?"), c.meta_uri + 7);
    struct stat sb;
    if (stat(path, &sb) != 0) {
      fprintf(stderr,
              "tarn: no tarn deployment here: the metadata store %s does not exist.\n"
              "Create one with 'tarn init', or point --home/TARN_HOME (or --meta) at an "
              "existing one.\n",
              path);
      tarn_deployment_config_free(&st);
      return TARN_EXIT_FAULT;
    }
  }
  if (!rc)
    rc = tarn_deployment_open(&c, create, out);
  if (rc) {
    if (rc == TARN_EUNAVAIL)
      fprintf(stderr,
              "tarn: a store is unreachable: %s\n"
              "Check that it runs and the URI is right (--meta/--wal/--compacted, "
              "TARN_META/TARN_WAL/TARN_COMPACTED).\n",
              tarn_errmsg());
    else if (rc == TARN_EAUTH)
      fprintf(stderr, "tarn: a store refused tarn: %s\n", tarn_errmsg());
    else if (rc == TARN_ECORRUPT)
      fprintf(stderr, "tarn: %s\nFix the file, or remove it to use the defaults.\n", tarn_errmsg());
    else if (rc == TARN_ENOTFOUND) /* no deployment record: the message says tarn init */
      fprintf(stderr,
              "tarn: cannot open the deployment: %s\n"
              "Or point --home/TARN_HOME (or --meta) at an existing one.\n",
              tarn_errmsg());
    else /* issue 33: "create one with tarn init" misled where a store failed */
      fprintf(stderr, "tarn: cannot open the deployment: %s\n", tarn_errmsg());
  }
  tarn_deployment_config_free(&st);
  return tarn_cli_exit_for(rc);
}

int tarn_cli_timing_check(struct tarn_deployment *dep, const char *verb, int grace_set,
                          int64_t *wal_grace_ms) {
  tarn_timing mine = {grace_set ? *wal_grace_ms : -1, -1, -1, -1}, t;
  int rc = tarn_timing_check_process(tarn_deployment_meta(dep), &mine, verb, &t);
  if (rc == TARN_EINVAL) {
    fprintf(stderr, "tarn: %s: refused: %s\n", verb, tarn_errmsg());
    return TARN_EXIT_FAULT;
  }
  if (rc)
    return tarn_cli_fail_rc(rc, verb);
  if (wal_grace_ms)
    *wal_grace_ms = t.wal_grace_ms;
  return 0;
}
