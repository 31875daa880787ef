/* The compaction jobs of `tarn serve` (tarn/compactor.h, tarn/tasks.h):
 *   compact-plan  plans ranges into tasks (several nodes may plan: a task is
 *                 created with CreateIfAbsent, one per log)
 *   compact       claims and runs tasks, one at a time per thread; a task is
 *                 held by the log's ephemeral lock, so nodes never run the
 *                 same one, and a node that dies loses it to another
 *   stats         compaction lag and tasks by state, as gauges
 *   reclaim       files of trimmed records, then their hard trim; orphan
 *                 compacted files after a grace period (tarn/reclaim.h)
 *   wal-gc        unreferenced WAL objects after a grace period
 *   retention     plain streams' retention.ms/retention.bytes, by soft trim
 *                 (tarn/retention.h); reclaim then deletes what lies below */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "server/node.h"
#include "server/sched.h"
#include "server/srvlog.h"
#include "tarn/catalog.h"
#include "tarn/clock.h"
#include "tarn/compactor.h"
#include "tarn/deployment.h"
#include "tarn/error.h"
#include "tarn/metrics.h"
#include "tarn/reclaim.h"
#include "tarn/retention.h"
#include "tarn/tasks.h"

typedef struct cstate {
  tarn_deployment *d;
  tarn_compactor *c;
  tarn_token_bucket *bucket;
  tarn_tasks_options to;
  char owner[128];
  int64_t wal_grace_ms, orphan_grace_ms;
  atomic_int roots_claimed; /* issue 31 item 5: once per process */
} cstate;

static int plan_job(void *arg, atomic_int *stop) {
  (void)stop;
  cstate *s = arg;
  size_t created = 0;
  int rc = tarn_tasks_plan(s->c, &s->to, 0, &created);
  if (created) {
    char n[24];
    snprintf(n, sizeof n, "%zu", created);
    tarn_srv_log(TARN_SRV_INFO, "compaction planned", "tasks", n, NULL);
  }
  return rc;
}

static int compact_job(void *arg, atomic_int *stop) {
  (void)stop; /* a task, once claimed, runs to its end: nothing half-done */
  cstate *s = arg;
  int ran = 0;
  int rc = tarn_tasks_run_one(s->c, &s->to, &ran);
  if (ran)
    tarn_metrics_inc("tarn_compaction_tasks_run_total", 1, "result", rc ? "error" : "ok", NULL);
  if (rc == TARN_ENOTFOUND || rc == TARN_EEXIST) /* nothing to claim; another node has it */
    rc = 0;
  return rc ? rc : ran ? 1 : 0;
}

static int stats_job(void *arg, atomic_int *stop) {
  cstate *s = arg;
  tarn_meta *m = tarn_deployment_meta(s->d);
  tarn_task *tasks = NULL;
  size_t n = 0;
  int rc = tarn_tasks_list(m, &tasks, &n);
  if (rc)
    return rc;
  int64_t by_state[4] = {0};
  for (size_t i = 0; i < n; i++)
    if (tasks[i].state >= 0 && tasks[i].state < 4)
      by_state[tasks[i].state]++;
  tarn_tasks_free(tasks, n);
  for (int st = 0; st < 4; st++)
    tarn_metrics_set("tarn_compaction_tasks", by_state[st], "state", tarn_task_state_name(st),
                     NULL);
  tarn_catalog *cat;
  if ((rc = tarn_catalog_open(m, NULL, &cat)))
    return rc;
  tarn_catalog_record *st = NULL;
  size_t ns = 0;
  rc = tarn_catalog_list_streams(cat, &st, &ns);
  tarn_catalog_close(cat);
  if (rc)
    return rc;
  int64_t now = tarn_clock_now_ms(), max_lag = 0;
  uint64_t records = 0, bytes = 0;
  for (size_t i = 0; i < ns && !rc && !atomic_load(stop); i++) {
    if (st[i].state != TARN_STREAM_ACTIVE)
      continue;
    for (size_t p = 0; p < st[i].n_logs && !rc; p++) {
      tarn_compact_lag lag;
      if ((rc = tarn_compact_lag_read(m, st[i].logs[p], now, &lag)))
        break;
      if (lag.lag_ms > max_lag)
        max_lag = lag.lag_ms;
      records += lag.raw_records;
      bytes += lag.raw_bytes;
    }
  }
  tarn_catalog_records_free(st, ns);
  if (!rc) {
    tarn_metrics_set("tarn_compaction_lag_ms", max_lag, NULL);
    tarn_metrics_set("tarn_compaction_raw_records", (int64_t)records, NULL);
    tarn_metrics_set("tarn_compaction_raw_bytes", (int64_t)bytes, NULL);
  }
  return rc;
}

/* Called by the reclaimer before each deletion; the bytes are counted from
 * its stats after the pass. */
static void reclaimed(void *ctx, const char *kind, const char *name, uint64_t bytes) {
  (void)ctx;
  if (strcmp(kind, "hard-trim") == 0) {
    tarn_srv_log(TARN_SRV_INFO, "reclaimed", "kind", kind, "what", name, NULL);
    return;
  }
  char b[24];
  snprintf(b, sizeof b, "%llu", (unsigned long long)bytes);
  tarn_srv_log(TARN_SRV_DEBUG, "reclaiming", "kind", kind, "object", name, "bytes", b, NULL);
}

static void count_reclaimed(uint64_t objects, uint64_t bytes, const char *root,
                            const char *reason) {
  if (objects)
    tarn_metrics_inc("tarn_reclaimed_objects_total", objects, "root", root, "reason", reason, NULL);
  if (bytes)
    tarn_metrics_inc("tarn_reclaimed_bytes_total", bytes, "root", root, "reason", reason, NULL);
}

/* Issue 31 item 7: the scheduler's stop flag, polled by the pass between
 * pages, logs and deletions, so shutdown does not wait for a pass */
static int stop_set(void *ctx) { return atomic_load((atomic_int *)ctx) != 0; }

static int reclaim(cstate *s, int wal, atomic_int *stop) {
  /* Issue 31 item 5: claims this deployment's unmarked roots (deployments
   * from before markers) and refuses another deployment's */
  if (!atomic_load(&s->roots_claimed)) {
    int crc = tarn_deployment_claim_roots(s->d, 0);
    if (crc)
      return crc;
    atomic_store(&s->roots_claimed, 1);
  }
  tarn_reclaim_options ro;
  tarn_reclaim_options_default(&ro);
  ro.wal = wal;
  ro.trimmed_files = ro.orphans = !wal;
  ro.wal_grace_ms = s->wal_grace_ms;
  ro.orphan_grace_ms = s->orphan_grace_ms;
  ro.report = reclaimed;
  ro.report_ctx = s;
  ro.stop = stop_set;
  ro.stop_ctx = stop;
  tarn_reclaim_stats st;
  memset(&st, 0, sizeof st);
  int rc = tarn_reclaim_pass(tarn_deployment_meta(s->d), tarn_deployment_wal(s->d),
                             tarn_deployment_compacted(s->d), &ro, &st);
  count_reclaimed(st.wal_deleted, st.wal_deleted_bytes, "wal", "wal");
  count_reclaimed(st.compacted_deleted, st.compacted_deleted_bytes, "compacted", "compacted");
  count_reclaimed(st.trimmed_files_deleted, st.trimmed_files_deleted_bytes, "compacted", "trimmed");
  uint64_t n = st.wal_deleted + st.compacted_deleted + st.trimmed_files_deleted;
  uint64_t bytes =
      st.wal_deleted_bytes + st.compacted_deleted_bytes + st.trimmed_files_deleted_bytes;
  if (n || st.records_hard_trimmed) {
    char a[24], b[24], c[24];
    snprintf(a, sizeof a, "%llu", (unsigned long long)n);
    snprintf(b, sizeof b, "%llu", (unsigned long long)bytes);
    snprintf(c, sizeof c, "%llu", (unsigned long long)st.records_hard_trimmed);
    tarn_srv_log(TARN_SRV_INFO, "reclaimed", "job", wal ? "wal-gc" : "reclaim", "objects", a,
                 "bytes", b, "records_hard_trimmed", c, NULL);
  }
  return rc;
}

static int reclaim_job(void *arg, atomic_int *stop) { return reclaim(arg, 0, stop); }

static int retention_job(void *arg, atomic_int *stop) {
  (void)stop; /* a pass is a few reads and at most one trim per log */
  cstate *s = arg;
  tarn_retention_stats st;
  int rc = tarn_retention_pass(s->d, &st);
  if (rc)
    tarn_srv_log(TARN_SRV_WARN, "retention: a stream was left for the next pass", "message",
                 tarn_errmsg(), NULL);
  if (st.trims) {
    char a[24], b[24];
    snprintf(a, sizeof a, "%zu", st.trims);
    snprintf(b, sizeof b, "%llu", (unsigned long long)st.bytes);
    tarn_srv_log(TARN_SRV_INFO, "retention trimmed", "logs", a, "bytes", b, NULL);
    tarn_metrics_inc("tarn_retention_trims_total", st.trims, NULL);
    tarn_metrics_inc("tarn_retention_bytes_total", st.bytes, NULL);
  }
  if (st.errors)
    tarn_metrics_inc("tarn_retention_errors_total", st.errors, NULL);
  tarn_metrics_inc("tarn_retention_passes_total", 1, NULL);
  return rc;
}

static int wal_gc_job(void *arg, atomic_int *stop) { return reclaim(arg, 1, stop); }

int tarn_srv_compaction_jobs(struct tarn_deployment *d, const tarn_srv_options *o,
                             struct tarn_srv_job *jobs, void **state) {
  *state = NULL;
  cstate *s = calloc(1, sizeof *s);
  if (!s)
    return TARN_ENOMEM;
  s->d = d;
  tarn_compactor_options co;
  tarn_compactor_options_default(&co);
  co.max_age_ms = o->compact_max_age_ms;
  co.max_range_bytes = o->compact_max_range_bytes;
  int rc = 0;
  if (o->compact_rate) { /* so that compaction does not starve appends */
    rc = tarn_token_bucket_open(o->compact_rate, o->compact_rate, &s->bucket);
    co.throttle = tarn_token_bucket_throttle;
    co.throttle_ctx = s->bucket;
  }
  if (!rc)
    rc = tarn_compactor_open(tarn_deployment_meta(d), tarn_deployment_wal(d),
                             tarn_deployment_compacted(d), &co, &s->c);
  if (rc) {
    tarn_token_bucket_close(s->bucket);
    free(s);
    return rc;
  }
  tarn_tasks_options_default(&s->to);
  char host[64] = "localhost";
  gethostname(host, sizeof host - 1);
  snprintf(s->owner, sizeof s->owner, "tarn-serve-%ld@%s", (long)getpid(), host);
  s->to.owner = s->owner;
  s->wal_grace_ms = o->wal_grace_ms;
  s->orphan_grace_ms = o->orphan_grace_ms;
  *state = s;
  int n = 0;
  if (o->compact) {
    jobs[n++] = (tarn_srv_job){"compact-plan", o->compact_interval_ms, 1, plan_job, s};
    jobs[n++] =
        (tarn_srv_job){"compact", o->compact_interval_ms, o->compact_workers, compact_job, s};
  }
  jobs[n++] = (tarn_srv_job){"stats", o->stats_interval_ms, 1, stats_job, s};
  if (o->reclaim)
    jobs[n++] = (tarn_srv_job){"reclaim", o->reclaim_interval_ms, 1, reclaim_job, s};
  if (o->wal_gc)
    jobs[n++] = (tarn_srv_job){"wal-gc", o->wal_gc_interval_ms, 1, wal_gc_job, s};
  if (o->retention)
    jobs[n++] = (tarn_srv_job){"retention", o->retention_check_ms, 1, retention_job, s};
  return n;
}

void tarn_srv_compaction_free(void *state) {
  cstate *s = state;
  if (!s)
    return;
  tarn_compactor_close(s->c);
  tarn_token_bucket_close(s->bucket);
  free(s);
}
