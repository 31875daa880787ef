/* One deployment per root (issue 31 item 5; docs/deployment.md "One
 * deployment per root"): the deployment's id in its metadata store, and a
 * marker object holding it in each root. */
#ifndef TARN_LOG_ROOT_MARK_H
#define TARN_LOG_ROOT_MARK_H

#include "tarn/meta.h"
#include "tarn/objstore.h"

/* Every process that deletes from a root calls this before its first
 * deletion. 0 when each non-NULL root may be deleted from by the deployment
 * whose metadata store is m: the store holds an id and each root a marker
 * equal to it, or (a deployment from before markers, or a raw library user)
 * the store holds no id and no root a marker. TARN_EBUSY, saying which root
 * belongs to whom, otherwise — nothing may be deleted then. */
int tarn__roots_check(tarn_meta *m, tarn_objstore *wal, tarn_objstore *compacted);

#endif
