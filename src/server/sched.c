/* The job scheduler of `tarn serve` (sched.h). */
#include "server/sched.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "server/srvlog.h"
#include "tarn/error.h"
#include "tarn/metrics.h"

typedef struct runner {
  struct tarn_srv_sched *s;
  const tarn_srv_job *job;
  pthread_t th;
  int started;
} runner;

struct tarn_srv_sched {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  atomic_int stop;
  tarn_srv_job *jobs;
  runner *r;
  int nr;
};

/* Waits ms or until stop; returns nonzero when stopping. */
static int pause_ms(tarn_srv_sched *s, int ms) {
  /* pthread_cond_timedwait's absolute deadline, on its CLOCK_REALTIME: the
   * pause is real time (the server is never run under a fake clock) */
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  ts.tv_sec += ms / 1000;
  ts.tv_nsec += (long)(ms % 1000) * 1000000L;
  if (ts.tv_nsec >= 1000000000L) {
    ts.tv_sec++;
    ts.tv_nsec -= 1000000000L;
  }
  pthread_mutex_lock(&s->mu);
  while (!atomic_load(&s->stop))
    if (pthread_cond_timedwait(&s->cv, &s->mu, &ts) == ETIMEDOUT)
      break;
  pthread_mutex_unlock(&s->mu);
  return atomic_load(&s->stop);
}

static void *runner_main(void *arg) {
  runner *r = arg;
  const tarn_srv_job *j = r->job;
  while (!atomic_load(&r->s->stop)) {
    double t0 = tarn_metrics_now();
    int rc = j->run(j->arg, &r->s->stop);
    double dt = tarn_metrics_now() - t0;
    tarn_metrics_observe("tarn_serve_job_seconds", dt, "job", j->name, NULL);
    tarn_metrics_inc("tarn_serve_job_runs_total", 1, "job", j->name, "result",
                     rc < 0 ? "error" : "ok", NULL);
    if (rc < 0) {
      char secs[32];
      snprintf(secs, sizeof secs, "%.3f", dt);
      tarn_srv_log(TARN_SRV_WARN, "job failed", "job", j->name, "error", tarn_errname(rc), "detail",
                   tarn_errmsg(), "seconds", secs, NULL);
    }
    if (rc == 1)
      continue;
    if (pause_ms(r->s, j->interval_ms))
      break;
  }
  return NULL;
}

int tarn_srv_sched_start(const tarn_srv_job *jobs, int n, tarn_srv_sched **out) {
  tarn_srv_sched *s = calloc(1, sizeof *s);
  int nr = 0;
  for (int i = 0; i < n; i++)
    nr += jobs[i].threads > 0 ? jobs[i].threads : 1;
  if (!s || !(s->jobs = calloc((size_t)n + 1, sizeof *s->jobs)) ||
      !(s->r = calloc((size_t)nr + 1, sizeof *s->r))) {
    if (s)
      free(s->jobs);
    free(s);
    return TARN_ENOMEM;
  }
  memcpy(s->jobs, jobs, (size_t)n * sizeof *jobs);
  pthread_mutex_init(&s->mu, NULL);
  pthread_cond_init(&s->cv, NULL);
  atomic_init(&s->stop, 0);
  for (int i = 0; i < n; i++)
    for (int t = 0; t < (jobs[i].threads > 0 ? jobs[i].threads : 1); t++) {
      runner *r = &s->r[s->nr];
      r->s = s;
      r->job = &s->jobs[i];
      if (pthread_create(&r->th, NULL, runner_main, r) == 0) {
        r->started = 1;
        s->nr++;
      }
    }
  *out = s;
  return 0;
}

void tarn_srv_sched_stop(tarn_srv_sched *s) {
  if (!s)
    return;
  pthread_mutex_lock(&s->mu);
  atomic_store(&s->stop, 1);
  pthread_cond_broadcast(&s->cv);
  pthread_mutex_unlock(&s->mu);
  for (int i = 0; i < s->nr; i++)
    if (s->r[i].started)
      pthread_join(s->r[i].th, NULL);
  pthread_cond_destroy(&s->cv);
  pthread_mutex_destroy(&s->mu);
  free(s->r);
  free(s->jobs);
  free(s);
}
