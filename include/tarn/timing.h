/* tarn — a deployment's timing record: the WAL grace period and what it must
 * outlast (spec "Reclaiming WAL objects"; LS-085, LS-086; docs/compaction.md
 * "Grace arithmetic").
 *
 * A WAL object may be deleted once no record names it for wal_grace_ms on the
 * metadata store's clock. A writer publishes a section's record only if its
 * object's write began at most max_publish_delay_ms ago (monotonic clock),
 * and acknowledges it only if the index put returned at most max_put_ms
 * after that check. So the record of an acknowledged entry committed at most
 * max_publish_delay_ms + max_put_ms after the object could first be listed,
 * and the rule
 *
 *     wal_grace_ms > max_publish_delay_ms + max_put_ms + skew_allowance_ms
 *
 * keeps the object until the reclaimer's second look finds the record;
 * skew_allowance_ms covers the store's clock running fast against the
 * writer's monotonic clock (a forward step of the sqlite host's clock, etcd's
 * whole-second lease clock).
 *
 * The record lives at TARN_TIMING_PARTITION/TARN_TIMING_KEY ({"wal_grace_ms":
 * N, "max_publish_delay_ms": N, "max_put_ms": N, "skew_allowance_ms": N});
 * `tarn init` writes it; a deployment without one has the defaults. Every
 * process checks its own values against the record's others at start and
 * refuses a combination that breaks the rule. */
#ifndef TARN_TIMING_H
#define TARN_TIMING_H

#include <stdint.h>

#include "tarn/meta.h"

#ifdef __cplusplus
extern "C" {
#endif

#define TARN_TIMING_PARTITION "tarn-deployment"
#define TARN_TIMING_KEY "/timing"

typedef struct tarn_timing {
  int64_t wal_grace_ms;         /* 600000 */
  int64_t max_publish_delay_ms; /* 300000 */
  int64_t max_put_ms;           /* 60000 */
  int64_t skew_allowance_ms;    /* 60000 */
} tarn_timing;

void tarn_timing_default(tarn_timing *t);

/* 0 when the rule holds and every value is positive (the publish limit and
 * the put bound must be on); else TARN_EINVAL with the arithmetic, "WHO: ...". */
int tarn_timing_check(const tarn_timing *t, const char *who);

/* The deployment's record, or the defaults where there is none (*recorded,
 * may be NULL, says which). A record that is no such object: TARN_ECORRUPT. */
int tarn_timing_load(tarn_meta *m, tarn_timing *t, int *recorded);

/* Checks t, then writes it unless a record exists (*created, may be NULL,
 * says which; an existing record stays). */
int tarn_timing_record(tarn_meta *m, const tarn_timing *t, int *created);

/* What a process does at start: the record (or defaults) with the values the
 * process itself uses put in (a negative field of mine: the record's), then
 * tarn_timing_check. *out (may be NULL) gets the combination checked. */
int tarn_timing_check_process(tarn_meta *m, const tarn_timing *mine, const char *who,
                              tarn_timing *out);

#ifdef __cplusplus
}
#endif
#endif
