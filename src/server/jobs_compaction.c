/* Compaction, reclamation and WAL collection jobs of `tarn serve`: not wired
 * in this build (the compactor is not part of it yet). */
#include "server/node.h"
#include "server/sched.h"

int tarn_srv_compaction_jobs(struct tarn_deployment *d, const tarn_srv_options *o,
                             struct tarn_srv_job *jobs, void **state) {
  (void)d, (void)o, (void)jobs;
  *state = 0;
  return 0;
}

void tarn_srv_compaction_free(void *state) { (void)state; }
