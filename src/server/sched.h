/* The scheduler of `tarn serve`: named jobs, each run by its own threads on a
 * fixed interval until the scheduler stops. A job in progress when stop is
 * asked finishes its run (jobs are written so that one run is a bounded step:
 * a compaction task, a reclamation pass); the scheduler then joins it. */
#ifndef TARN_SERVER_SCHED_H
#define TARN_SERVER_SCHED_H

#include <stdatomic.h>

typedef struct tarn_srv_job {
  const char *name;
  int interval_ms; /* pause between the end of a run and the next */
  int threads;     /* runners of this job (>= 1) */
  /* One run: 0, a negative TARN_E* (logged, counted), or 1 when there was
   * more to do at once (the next run starts without the pause). `stop` is set
   * when the node is stopping: a long run may end early. */
  int (*run)(void *arg, atomic_int *stop);
  void *arg;
} tarn_srv_job;

typedef struct tarn_srv_sched tarn_srv_sched;

int tarn_srv_sched_start(const tarn_srv_job *jobs, int n, tarn_srv_sched **out);
/* Asks every job to stop, waits for runs in progress to end, frees. */
void tarn_srv_sched_stop(tarn_srv_sched *s);

#endif
