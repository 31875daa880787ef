/* tarn express fence|settle — ends an express epoch at its cut and settles it
 * (tarn/express_fence.h, docs/express.md "Fence and settlement"). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "express/express_internal.h"
#include "express/fence.h"
#include "tarn/deployment.h"
#include "tarn/catalog.h"
#include "tarn/error.h"
#include "tarn/express.h"
#include "tarn/express_fence.h"

static void fence_help(void) {
  printf("usage: tarn express fence NS/NAME | --star STAR  [--epoch E] [--timeout-ms MS]\n"
         "                          [DEPLOYMENT FLAGS] [--json]\n"
         "\n"
         "Ends an express epoch at a definite slot, the cut, so that a writer that died\n"
         "(or was cut off) can never have more of its entries acknowledged, and\n"
         "publishes the cut on the epoch record. Run it before `tarn express settle`\n"
         "when a writer was killed; then start the next writer.\n"
         "\n"
         "  NS/NAME          the express stream: fences the epoch of the star that\n"
         "                   writes each of its partitions (recorded by the writer at its\n"
         "                   first append; `tarn append --star` names it)\n"
         "  --star STAR      the writer identity itself (one of the two is needed)\n"
         "  --epoch E        the epoch (default: every epoch of the star's express\n"
         "                   chain not yet settled, oldest first, then its head, the\n"
         "                   one its last writer minted: a writer that rolled left\n"
         "                   several)\n"
         "  --timeout-ms MS  how long a slot may stay undecided (its deciding copies in\n"
         "                   unreachable buckets) before the command fails (30000)\n"
         "  --json           {star, epoch, estimate, start, cut, slots_walked,\n"
         "                   repair_puts, poison_puts, published}; for NS/NAME (or\n"
         "                   several epochs) an array of those, one per star and epoch\n"
         "\n"
         "How: probes for the chain's end, walks from max(checkpoint, estimate - WIN)\n"
         "through the slots in all K buckets of the epoch's bucket set, repairs\n"
         "partial slots, poisons empty ones (one bucket at a time, in the set's order)\n"
         "until a slot is dead (K-W+1 poison copies). An epoch already fenced is only\n"
         "read (same cut, published false).\n"
         "\n%s"
         "\nExit status: 0 fenced; 1 failed (undecided past the timeout, a disagreeing\n"
         "cut, no such epoch or stream); 2 bad command line; 3 a store could not be\n"
         "reached.\n",
         tarn_cli_deploy_help);
}

static void settle_help(void) {
  printf("usage: tarn express settle NS/NAME | --star STAR  [--epoch E] [--timeout-ms MS]\n"
         "                           [DEPLOYMENT FLAGS] [--json]\n"
         "\n"
         "Settles a fenced epoch: absorbs every committed slot below the cut that the\n"
         "star's writer had not absorbed (into WAL objects of the deployment's WAL root\n"
         "and the offset index, exactly once, at the offsets they were acknowledged\n"
         "at), then deletes the straggling flights in [cut, cut + WIN] from every\n"
         "bucket, and never anything below the cut or any poison (poison stands until\n"
         "the star is decommissioned). Afterwards `tarn read` finds every acknowledged\n"
         "entry.\n"
         "\n"
         "  NS/NAME          the express stream: settles the epoch of the star that\n"
         "                   writes each of its partitions\n"
         "  --star STAR      the writer identity itself (one of the two is needed)\n"
         "  --epoch E        the epoch (default: every epoch of the star's express\n"
         "                   chain not yet settled, oldest first, then its head)\n"
         "  --timeout-ms MS  how long to wait for a flight below the cut that no\n"
         "                   reachable bucket holds (30000)\n"
         "  --json           {star, epoch, cut, absorbed, deleted, poison_kept}; for\n"
         "                   NS/NAME (or several epochs) an array, one per star and epoch\n"
         "\n%s"
         "\nExit status: 0 settled; 1 failed (not fenced, not absorbed, no such epoch or\n"
         "stream); 2 bad command line; 3 a store could not be reached.\n",
         tarn_cli_deploy_help);
}

typedef struct xargs {
  tarn_cli_deploy d;
  const char *star, *stream;
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
  const tarn_cli_verb v = {name, help, opts, &a->d, &a->json, 1, NULL};
  int ex = tarn_cli_parse(&v, argc, argv, &nargs);
  if (ex != TARN_CLI_GO_ON)
    return ex;
  a->stream = nargs ? argv[1] : NULL; /* the parser moved the positional ones there */
  if (!a->star == !a->stream)
    return tarn_cli_usage_error(name, a->star ? "give NS/NAME or --star, not both"
                                              : "NS/NAME or --star is missing");
  return TARN_CLI_GO_ON;
}

/* The stars to act on: --star, or the writer recorded for each log of the
 * express stream (distinct, in partition order). */
typedef struct stars {
  char v[64][TARN__X_STAR_MAX + 1];
  size_t n;
} stars;

static int resolve_stars(const char *name, xargs *a, tarn_deployment **dep, stars *out) {
  out->n = 0;
  if (a->star) {
    int ex = tarn_cli_deploy_open(&a->d, 0, dep);
    if (!ex)
      snprintf(out->v[out->n++], sizeof out->v[0], "%s", a->star);
    return ex;
  }
  tarn_catalog *cat;
  char *ns, *sname;
  int ex = tarn_cli_stream_open(name, &a->d, a->stream, dep, &cat, &ns, &sname);
  if (ex)
    return ex;
  tarn_catalog_record s = {0};
  int rc = tarn_catalog_open_stream(cat, ns, sname, &s);
  if (!rc && !tarn_stream_is_express(&s))
    rc = tarn_set_errmsg(TARN_EINVAL, "stream %s/%s is not an express stream (class=%s)", ns, sname,
                         TARN_STREAM_CLASS_STANDARD);
  for (size_t i = 0; !rc && i < s.n_logs; i++) {
    char st[TARN__X_STAR_MAX + 1];
    int r = tarn__xlog_star_get(tarn_deployment_meta(*dep), s.logs[i], st, sizeof st);
    if (r == TARN_ENOTFOUND) { /* a partition never written: nothing to fence */
      tarn_errclear();
      continue;
    }
    if (r) {
      rc = r;
      break;
    }
    size_t j = 0;
    while (j < out->n && strcmp(out->v[j], st))
      j++;
    if (j == out->n && out->n < sizeof out->v / sizeof out->v[0])
      snprintf(out->v[out->n++], sizeof out->v[0], "%s", st);
  }
  if (!rc && out->n == 0)
    rc = tarn_set_errmsg(TARN_ENOTFOUND, "no express writer has written %s/%s yet: nothing to do",
                         ns, sname);
  if (!rc && a->have_epoch && out->n > 1)
    rc = tarn_set_errmsg(TARN_EINVAL, "%s/%s is written by %zu stars: --epoch needs --star", ns,
                         sname, out->n);
  tarn_catalog_record_free(&s);
  free(ns);
  free(sname);
  tarn_catalog_close(cat);
  if (rc) {
    tarn_deployment_close(*dep);
    return tarn_cli_fail_rc(rc, name);
  }
  return TARN_EXIT_OK;
}

/* --epoch, else the head of star's chain (the epoch its last writer minted). */
static int epoch_of(tarn_meta *m, const xargs *a, const char *star, uint64_t *epoch) {
  if (a->have_epoch) {
    *epoch = a->epoch;
    return 0;
  }
  int rc = tarn__xchain_head(m, star, TARN__X_CLASS_EXPRESS, epoch);
  if (rc == 0 && *epoch == 0)
    rc = tarn_set_errmsg(TARN_ENOTFOUND, "star %s has no express epoch", star);
  return rc;
}

/* {star, epoch, names[i]: vals[i]...} */
static json_t *report_json(const char *star, uint64_t epoch, const char *const *names,
                           const uint64_t *vals, size_t n) {
  json_t *v = json_object();
  json_object_set_new(v, "star", json_string(star));
  json_object_set_new(v, "epoch", json_integer((json_int_t)epoch));
  for (size_t i = 0; i < n; i++)
    json_object_set_new(v, names[i], json_integer((json_int_t)vals[i]));
  return v;
}

static json_t *fence_json(const char *star, uint64_t epoch, const tarn_xfence_report *r) {
  static const char *const names[] = {"estimate",     "start",       "cut",
                                      "slots_walked", "repair_puts", "poison_puts"};
  const uint64_t vals[] = {r->estimate,     r->start,       r->cut,
                           r->slots_walked, r->repair_puts, r->poison_puts};
  json_t *v = report_json(star, epoch, names, vals, 6);
  json_object_set_new(v, "published", json_boolean(r->published));
  return v;
}

static json_t *settle_json(const char *star, uint64_t epoch, const tarn_xsettle_report *r) {
  static const char *const names[] = {"cut", "absorbed", "deleted", "poison_kept"};
  const uint64_t vals[] = {r->cut, r->absorbed, r->deleted, r->poison_kept};
  return report_json(star, epoch, names, vals, 4);
}

/* One star's fence or settlement: its line to stdout, or its JSON into arr. */
typedef int (*star_fn)(tarn_deployment *dep, const xargs *a, const char *star, uint64_t epoch,
                       json_t **json);

static int fence_one(tarn_deployment *dep, const xargs *a, const char *star, uint64_t epoch,
                     json_t **json) {
  tarn_xfence_opts o = {.timeout_ms = a->have_timeout ? (int64_t)a->timeout : 30000};
  tarn_xfence_report r;
  int rc = tarn_express_fence(tarn_deployment_meta(dep), star, epoch, &o, &r);
  if (rc)
    return rc;
  if (a->json)
    *json = fence_json(star, epoch, &r);
  else if (r.published)
    printf("%s/%llu: cut %llu (estimate %llu, walked %llu slots from %llu; %llu repair and "
           "%llu poison PUTs)\n",
           star, (unsigned long long)epoch, (unsigned long long)r.cut,
           (unsigned long long)r.estimate, (unsigned long long)r.slots_walked,
           (unsigned long long)r.start, (unsigned long long)r.repair_puts,
           (unsigned long long)r.poison_puts);
  else
    printf("%s/%llu: cut %llu (already fenced)\n", star, (unsigned long long)epoch,
           (unsigned long long)r.cut);
  return 0;
}

static int settle_one(tarn_deployment *dep, const xargs *a, const char *star, uint64_t epoch,
                      json_t **json) {
  tarn_xsettle_report r;
  tarn_xfence_opts o = {.timeout_ms = a->have_timeout ? (int64_t)a->timeout : 30000};
  int rc =
      tarn_express_settle(tarn_deployment_meta(dep), tarn_deployment_wal(dep), star, epoch, &o, &r);
  if (rc)
    return rc;
  if (a->json)
    *json = settle_json(star, epoch, &r);
  else
    printf("%s/%llu: settled at cut %llu: %llu slots absorbed, %llu straggling flights "
           "deleted, %llu poison objects left standing\n",
           star, (unsigned long long)epoch, (unsigned long long)r.cut,
           (unsigned long long)r.absorbed, (unsigned long long)r.deleted,
           (unsigned long long)r.poison_kept);
  return 0;
}

/* The epochs to act on for star (issue 30 item 5): --epoch; else every epoch
 * of the star's chain below its head that is not settled (burned numbers
 * skipped), oldest first, then the head. The head alone missed a writer that
 * rolled and died: its older epoch's acknowledged entries stayed unreadable
 * after the documented recovery. Oldest first, as settlement must go
 * (docs/express.md "Settlement order"). *v is malloc'd. */
static int epochs_of(tarn_meta *m, const xargs *a, const char *star, uint64_t **v, size_t *n) {
  uint64_t head;
  *v = NULL;
  *n = 0;
  int rc = epoch_of(m, a, star, &head);
  if (rc)
    return rc;
  uint64_t lo = a->have_epoch ? head : 1;
  *v = malloc((size_t)(head - lo + 1) * sizeof **v);
  if (!*v)
    return tarn_set_errmsg(TARN_ENOMEM, "out of memory");
  for (uint64_t e = lo; e < head; e++) {
    tarn__xepoch ep;
    rc = tarn__xepoch_load(m, star, TARN__X_CLASS_EXPRESS, e, &ep);
    if (rc == TARN_ENOTFOUND) { /* a burned number */
      tarn_errclear();
      continue;
    }
    if (rc)
      return rc;
    int settled = ep.state == TARN__XEPOCH_FENCED && ep.has_cut && ep.checkpoint >= ep.cut;
    tarn__xepoch_free(&ep);
    if (!settled)
      (*v)[(*n)++] = e;
  }
  (*v)[(*n)++] = head;
  return 0;
}

/* The verbs' shared body: parse, resolve the stars, act on each one's epochs. */
static int run_verb(const char *name, void (*help)(void), star_fn fn, int argc, char **argv) {
  xargs a = {0};
  int ex = parse(name, help, argc, argv, &a);
  if (ex != TARN_CLI_GO_ON)
    return ex;
  tarn_deployment *dep;
  stars *ss = calloc(1, sizeof *ss);
  if (!ss)
    return tarn_cli_fail_rc(tarn_set_errmsg(TARN_ENOMEM, "out of memory"), name);
  if ((ex = resolve_stars(name, &a, &dep, ss))) {
    free(ss);
    return ex;
  }
  json_t *arr = a.json ? json_array() : NULL, *one = NULL;
  int rc = 0;
  size_t acted = 0;
  for (size_t i = 0; !rc && i < ss->n; i++) {
    uint64_t *ev = NULL;
    size_t ne = 0;
    rc = epochs_of(tarn_deployment_meta(dep), &a, ss->v[i], &ev, &ne);
    for (size_t k = 0; !rc && k < ne; k++) {
      json_t *j = NULL;
      rc = fn(dep, &a, ss->v[i], ev[k], &j);
      if (j) {
        json_array_append_new(arr, j);
        acted++;
      }
    }
    free(ev);
  }
  /* --star acting on one epoch answers one object, as before; NS/NAME, or
   * several epochs, an array */
  if (arr && !a.stream && acted == 1) {
    one = json_incref(json_array_get(arr, 0));
    json_decref(arr);
    arr = NULL;
  }
  if (rc) {
    ex = tarn_cli_fail_rc(rc, name);
    json_decref(arr);
    json_decref(one);
  } else if (arr || one)
    ex = tarn_cli_print_json(arr ? arr : one);
  free(ss);
  tarn_deployment_close(dep);
  return ex;
}

static int cmd_fence(int argc, char **argv) {
  return run_verb("express fence", fence_help, fence_one, argc, argv);
}

static int cmd_settle(int argc, char **argv) {
  return run_verb("express settle", settle_help, settle_one, argc, argv);
}

static const tarn_cli_cmd verbs[] = {
    {"fence", "end an express epoch at its cut and publish it", cmd_fence},
    {"settle", "absorb a fenced epoch below its cut; delete its stragglers (never poison)",
     cmd_settle},
    {NULL, NULL, NULL}};

static const char intro[] =
    "usage: tarn express VERB [ARGS]\n"
    "\n"
    "Express streams' epochs (docs/express.md): after a writer was killed, fence\n"
    "its epoch, then settle it, by the stream's name or the star's:\n"
    "  tarn express fence fast/orders && tarn express settle fast/orders\n";

int tarn_cmd_express(int argc, char **argv) {
  return tarn_cli_dispatch("tarn express", verbs, argc, argv, intro);
}
