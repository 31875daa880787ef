/* tarn express fence|settle — ends an express epoch at its cut and settles it
 * (tarn/express_fence.h, docs/express.md "Fence and settlement"). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "express/xfence.h"
#include "tarn/deployment.h"
#include "tarn/error.h"
#include "tarn/express_fence.h"
#include "util/error.h"

static void fence_help(void) {
  printf("usage: tarn express fence --star STAR [--epoch E] [--timeout-ms MS]\n"
         "                          [DEPLOYMENT FLAGS] [--json]\n"
         "\n"
         "Fences epoch E (default: the head of STAR's express chain): probes for the\n"
         "chain's end, walks from max(checkpoint, estimate - WIN) through the slots in\n"
         "all K buckets of the epoch's bucket set, repairs partial slots, poisons empty\n"
         "ones (one bucket at a time, in the set's order) until a slot is dead (K-W+1\n"
         "poison copies), and publishes that slot, the cut, on the epoch record. An\n"
         "epoch already fenced is only read. A slot whose deciding vote lies in\n"
         "unreachable buckets blocks the walk until --timeout-ms (default 30000), then\n"
         "the command fails naming the slot and its age.\n"
         "\n"
         "  --json   {star, epoch, estimate, start, cut, slots_walked, repair_puts,\n"
         "           poison_puts, published}\n"
         "\n%s"
         "\nExit status: 0 fenced; 1 failed (undecided past the timeout, a disagreeing\n"
         "cut, no such epoch); 2 bad command line; 3 a store could not be reached.\n",
         tarn_cli_deploy_help);
}

static void settle_help(void) {
  printf("usage: tarn express settle --star STAR --epoch E [--timeout-ms MS]\n"
         "                           [DEPLOYMENT FLAGS] [--json]\n"
         "\n"
         "Settles a fenced epoch: absorbs every committed slot below the cut that the\n"
         "star's writer had not absorbed (into WAL objects of the deployment's WAL root\n"
         "and the offset index, exactly once), then deletes the straggling flights in\n"
         "[cut, cut + WIN] from every bucket, and never anything below the cut or any\n"
         "poison (poison stands until the star is decommissioned). A flight below the\n"
         "cut that no reachable bucket holds is waited for until --timeout-ms (30000).\n"
         "\n"
         "  --json   {star, epoch, cut, absorbed, deleted, poison_kept}\n"
         "\n%s"
         "\nExit status: 0 settled; 1 failed (not fenced, not absorbed); 2 bad command\n"
         "line; 3 a store could not be reached.\n",
         tarn_cli_deploy_help);
}

typedef struct xargs {
  tarn_cli_deploy d;
  const char *star;
  uint64_t epoch, timeout;
  int have_epoch, have_timeout, json;
} xargs;

static int parse(const char *name, void (*help)(void), int argc, char **argv, xargs *a) {
  int nargs;
  const tarn_cli_opt opts[] = {
      TARN_CLI_OPT_STRING("--star", &a->star, "a star name"),
      TARN_CLI_OPT_UINT("--epoch", &a->epoch, 1, UINT64_MAX, "an epoch number", &a->have_epoch),
      TARN_CLI_OPT_UINT("--timeout-ms", &a->timeout, 0, INT32_MAX, "milliseconds",
                        &a->have_timeout),
      {0}};
  const tarn_cli_verb v = {name, help, opts, &a->d, &a->json, 0, NULL};
  int ex = tarn_cli_parse(&v, argc, argv, &nargs);
  if (ex != TARN_CLI_GO_ON)
    return ex;
  if (!a->star)
    return tarn_cli_usage_error(name, "--star is missing");
  return TARN_CLI_GO_ON;
}

static int open_epoch(const char *name, xargs *a, tarn_deployment **dep, tarn__xepoch *e) {
  int ex = tarn_cli_deploy_open(&a->d, 0, dep);
  if (ex)
    return ex;
  tarn_meta *m = tarn_deployment_meta(*dep);
  int rc = 0;
  if (!a->have_epoch) {
    rc = tarn__xchain_head(m, a->star, TARN__X_CLASS_EXPRESS, &a->epoch);
    if (rc == 0 && a->epoch == 0)
      rc = tarn__err(TARN_ENOTFOUND, "star %s has no express epoch", a->star);
  }
  if (rc == 0)
    rc = tarn__xepoch_load(m, a->star, TARN__X_CLASS_EXPRESS, a->epoch, e);
  if (rc) {
    tarn_deployment_close(*dep);
    return tarn_cli_fail_rc(rc, name);
  }
  return TARN_EXIT_OK;
}

static int cmd_fence(int argc, char **argv) {
  xargs a = {0};
  int ex = parse("express fence", fence_help, argc, argv, &a);
  if (ex != TARN_CLI_GO_ON)
    return ex;
  tarn_deployment *dep;
  tarn__xepoch e;
  memset(&e, 0, sizeof e);
  if ((ex = open_epoch("express fence", &a, &dep, &e)))
    return ex;
  tarn__xepoch_free(&e);
  tarn_xfence_opts o = {.timeout_ms = a.have_timeout ? (int64_t)a.timeout : 30000};
  tarn_xfence_report r;
  int rc = tarn_express_fence(tarn_deployment_meta(dep), a.star, a.epoch, &o, &r);
  if (rc)
    ex = tarn_cli_fail_rc(rc, "express fence");
  else if (a.json) {
    json_t *v = json_object();
    json_object_set_new(v, "star", json_string(a.star));
    json_object_set_new(v, "epoch", json_integer((json_int_t)a.epoch));
    json_object_set_new(v, "estimate", json_integer((json_int_t)r.estimate));
    json_object_set_new(v, "start", json_integer((json_int_t)r.start));
    json_object_set_new(v, "cut", json_integer((json_int_t)r.cut));
    json_object_set_new(v, "slots_walked", json_integer((json_int_t)r.slots_walked));
    json_object_set_new(v, "repair_puts", json_integer((json_int_t)r.repair_puts));
    json_object_set_new(v, "poison_puts", json_integer((json_int_t)r.poison_puts));
    json_object_set_new(v, "published", json_boolean(r.published));
    ex = tarn_cli_print_json(v);
  } else if (r.published)
    printf("%s/%llu: cut %llu (estimate %llu, walked %llu slots from %llu; %llu repair and "
           "%llu poison PUTs)\n",
           a.star, (unsigned long long)a.epoch, (unsigned long long)r.cut,
           (unsigned long long)r.estimate, (unsigned long long)r.slots_walked,
           (unsigned long long)r.start, (unsigned long long)r.repair_puts,
           (unsigned long long)r.poison_puts);
  else
    printf("%s/%llu: cut %llu (already fenced)\n", a.star, (unsigned long long)a.epoch,
           (unsigned long long)r.cut);
  tarn_deployment_close(dep);
  return ex;
}

static int cmd_settle(int argc, char **argv) {
  xargs a = {0};
  int ex = parse("express settle", settle_help, argc, argv, &a);
  if (ex != TARN_CLI_GO_ON)
    return ex;
  if (!a.have_epoch)
    return tarn_cli_usage_error("express settle", "--epoch is missing");
  tarn_deployment *dep;
  if ((ex = tarn_cli_deploy_open(&a.d, 0, &dep)))
    return ex;
  tarn_xsettle_report r;
  tarn_xfence_opts o = {.timeout_ms = a.have_timeout ? (int64_t)a.timeout : 30000};
  int rc = tarn_express_settle(tarn_deployment_meta(dep), tarn_deployment_wal(dep), a.star,
                               a.epoch, &o, &r);
  if (rc)
    ex = tarn_cli_fail_rc(rc, "express settle");
  else if (a.json) {
    json_t *v = json_object();
    json_object_set_new(v, "star", json_string(a.star));
    json_object_set_new(v, "epoch", json_integer((json_int_t)a.epoch));
    json_object_set_new(v, "cut", json_integer((json_int_t)r.cut));
    json_object_set_new(v, "absorbed", json_integer((json_int_t)r.absorbed));
    json_object_set_new(v, "deleted", json_integer((json_int_t)r.deleted));
    json_object_set_new(v, "poison_kept", json_integer((json_int_t)r.poison_kept));
    ex = tarn_cli_print_json(v);
  } else
    printf("%s/%llu: settled at cut %llu: %llu slots absorbed, %llu straggling flights "
           "deleted, %llu poison objects left standing\n",
           a.star, (unsigned long long)a.epoch, (unsigned long long)r.cut,
           (unsigned long long)r.absorbed, (unsigned long long)r.deleted,
           (unsigned long long)r.poison_kept);
  tarn_deployment_close(dep);
  return ex;
}

static const tarn_cli_cmd verbs[] = {
    {"fence", "end an express epoch at its cut and publish it", cmd_fence},
    {"settle", "delete a fenced epoch's straggling flights (never poison)", cmd_settle},
    {NULL, NULL, NULL}};

static const char intro[] = "usage: tarn express VERB [ARGS]\n"
                            "\n"
                            "Express streams' epochs (docs/express.md): fence and settle.\n";

int tarn_cmd_express(int argc, char **argv) {
  return tarn_cli_dispatch("tarn express", verbs, argc, argv, intro);
}
