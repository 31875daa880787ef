/* The express-takeover job of `tarn serve` (issue 15 "Serving"; docs/express.md
 * "Serving"): a star (an express writer: `tarn append`, a library writer)
 * that died leaves its head epoch open, its acknowledged tail in the buckets
 * and out of the index. Every node looks, each pass, at the star recorded for
 * each log of every express stream (tarn-xlog) and hands each star to
 * tarn_express_takeover (src/express/takeover.c), which reads the star's head,
 * then judges it: a lease on one of its logs (the leases are ephemeral: they
 * end with the session), or the star's standing clean-release mark on every
 * one of them, leaves it alone; a liveness record (a process of the star
 * lives, perhaps restarted and not yet leading a log) lets only the epochs
 * below the head be taken; otherwise the epochs up to the head are fenced
 * (the cut published by CAS; the epoch, not a lease or a token, locks a late
 * writer out) and settled (every acknowledged entry absorbed at its
 * acknowledged offset), so readers and the next writer of the
 * log find them in the index. One node at a time per star: an ephemeral
 * record /takeover/{star} in partition tarn-xserve. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/node.h"
#include "server/sched.h"
#include "server/srvlog.h"
#include "tarn/catalog.h"
#include "tarn/deployment.h"
#include "tarn/error.h"
#include "tarn/express.h"
#include "tarn/express_fence.h"
#include "tarn/express_inspect.h"
#include "tarn/key.h"
#include "tarn/metrics.h"

#define XSERVE_PARTITION "tarn-xserve"

typedef struct xstate {
  tarn_deployment *d;
  int64_t fence_timeout_ms;
} xstate;

typedef struct star_logs {
  char star[TARN_EXPRESS_STAR_MAX + 1];
  uint64_t *logs;
  size_t n, cap;
} star_logs;

static int add_log(star_logs **v, size_t *n, const char *star, uint64_t log) {
  size_t i = 0;
  while (i < *n && strcmp((*v)[i].star, star))
    i++;
  if (i == *n) {
    star_logs *nv = realloc(*v, (*n + 1) * sizeof *nv);
    if (!nv)
      return tarn_set_errmsg(TARN_ENOMEM, "out of memory");
    *v = nv;
    memset(&nv[i], 0, sizeof nv[i]);
    snprintf(nv[i].star, sizeof nv[i].star, "%s", star);
    (*n)++;
  }
  star_logs *s = &(*v)[i];
  if (s->n == s->cap) {
    size_t nc = s->cap ? 2 * s->cap : 8;
    uint64_t *nl = realloc(s->logs, nc * sizeof *nl);
    if (!nl)
      return tarn_set_errmsg(TARN_ENOMEM, "out of memory");
    s->logs = nl;
    s->cap = nc;
  }
  s->logs[s->n++] = log;
  return 0;
}

/* Judges a star that may have died and takes it over (tarn_express_takeover:
 * the head read first, then its leases, marks and liveness record). */
static int take_over(xstate *s, const star_logs *sl) {
  tarn_xfence_opts fo = {s->fence_timeout_ms, 0};
  double t0 = tarn_metrics_now();
  tarn_xtakeover_report r;
  int rc = tarn_express_takeover(tarn_deployment_meta(s->d), tarn_deployment_wal(s->d), sl->star,
                                 sl->logs, sl->n, &fo, &r);
  if (rc || !r.epochs)
    return rc;
  char hd[24], hi[24], ne[24], abs_[24], del[24], ms[24];
  snprintf(hd, sizeof hd, "%llu", (unsigned long long)r.head);
  snprintf(hi, sizeof hi, "%llu", (unsigned long long)r.hi);
  snprintf(ne, sizeof ne, "%llu", (unsigned long long)r.epochs);
  snprintf(abs_, sizeof abs_, "%llu", (unsigned long long)r.st.absorbed);
  snprintf(del, sizeof del, "%llu", (unsigned long long)r.st.deleted);
  snprintf(ms, sizeof ms, "%.0f", (tarn_metrics_now() - t0) * 1000);
  tarn_srv_log(TARN_SRV_INFO, "express takeover", "star", sl->star, "verdict",
               r.verdict == TARN_XTAKE_ALIVE ? "alive (below the head)" : "dead", "head", hd,
               "newest_settled", hi, "epochs", ne, "slots_absorbed", abs_, "flights_deleted", del,
               "ms", ms, NULL);
  tarn_metrics_inc("tarn_express_takeovers_total", r.epochs, NULL);
  return 0;
}

static int takeover_job(void *arg, atomic_int *stop) {
  xstate *s = arg;
  tarn_meta *m = tarn_deployment_meta(s->d);
  tarn_catalog *c;
  int rc = tarn_catalog_open(m, NULL, &c);
  if (rc)
    return rc;
  tarn_catalog_record *v = NULL;
  size_t n = 0, ns = 0;
  star_logs *stars = NULL;
  rc = tarn_catalog_list_streams(c, &v, &n);
  for (size_t i = 0; !rc && i < n; i++) {
    if (v[i].state != TARN_STREAM_ACTIVE || !tarn_stream_is_express(&v[i]))
      continue;
    for (size_t j = 0; !rc && j < v[i].n_logs; j++) {
      char st[TARN_EXPRESS_STAR_MAX + 1];
      int r = tarn_express_log_star(m, v[i].logs[j], st, sizeof st);
      if (r == TARN_ENOTFOUND) { /* never written */
        tarn_errclear();
        continue;
      }
      rc = r ? r : add_log(&stars, &ns, st, v[i].logs[j]);
    }
  }
  for (size_t i = 0; i < n; i++)
    tarn_catalog_record_free(&v[i]);
  free(v);
  tarn_catalog_close(c);
  for (size_t i = 0; !rc && i < ns && !atomic_load(stop); i++) {
    char key[TARN_EXPRESS_STAR_MAX + 16];
    snprintf(key, sizeof key, "/takeover/%s", stars[i].star);
    int lrc = tarn_meta_create(m, XSERVE_PARTITION, key, "1", 1, TARN_META_EPHEMERAL, NULL);
    if (lrc == TARN_EEXIST) { /* another node takes it over now */
      tarn_errclear();
      continue;
    }
    if (lrc) {
      rc = lrc;
      break;
    }
    rc = take_over(s, &stars[i]);
    tarn_meta_delete(m, XSERVE_PARTITION, key);
  }
  for (size_t i = 0; i < ns; i++)
    free(stars[i].logs);
  free(stars);
  return rc;
}

int tarn_srv_express_jobs(struct tarn_deployment *d, const tarn_srv_options *o,
                          struct tarn_srv_job *jobs, void **state) {
  *state = NULL;
  if (!o->express_takeover)
    return 0;
  xstate *s = calloc(1, sizeof *s);
  if (!s)
    return TARN_ENOMEM;
  s->d = d;
  s->fence_timeout_ms = 30000;
  jobs[0] = (tarn_srv_job){"express-takeover", o->express_takeover_interval_ms, 1, takeover_job, s};
  *state = s;
  return 1;
}

void tarn_srv_express_free(void *state) { free(state); }
