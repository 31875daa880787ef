/* One deployment per root (issue 31 item 5; docs/deployment.md "One
 * deployment per root"): the deployment's id in its metadata store, and a
 * marker object holding it in each root. */
#ifndef TARN_LOG_ROOT_MARK_H
#define TARN_LOG_ROOT_MARK_H

#include <stdint.h>

#include "tarn/meta.h"
#include "tarn/objstore.h"

/* Every process that deletes from a root calls this before its first
 * deletion. 0 when each non-NULL root may be deleted from by the deployment
 * whose metadata store is m: the store holds an id and each root a marker
 * equal to it, or (a deployment from before markers, or a raw library user)
 * the store holds no id and no root a marker. TARN_EBUSY, saying which root
 * belongs to whom, otherwise — nothing may be deleted then. */
int tarn__roots_check(tarn_meta *m, tarn_objstore *wal, tarn_objstore *compacted);

/* The deployment's id (TARN_DEPLOYMENT_ID_KEY: 32 hex digits) as 16 bytes.
 * A store without one (a deployment from before ids) gets one with create:
 * random, written create-only, so every process of the deployment reads the
 * one that landed first (issue 37: the Kafka cluster ID is derived from it;
 * the next claim of the roots marks them with it). TARN_ENOTFOUND without
 * create and no id; TARN_ECORRUPT for a record that is not 32 hex digits. */
int tarn__deployment_id(tarn_meta *m, int create, uint8_t out[16]);

#endif
