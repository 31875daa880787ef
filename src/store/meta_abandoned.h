/* Ephemeral creates whose outcome a handle never learned (the lock and lease
 * records of src/log).
 *
 * A create that reports TARN_EUNKNOWN may still land later (a request held
 * in flight, or one etcd applies after the client gave up): it then leaves
 * an ephemeral record of the caller's own live session that no one holds
 * and no one releases. The caller cannot delete what has not landed yet, so
 * it remembers the value (each acquisition's is unique: a random token), and
 * a later acquisition through the same handle that finds a record with that
 * value knows it for an orphan of its own and deletes it by version.
 *
 * Bounded: the oldest entries are forgotten first (such a record then stays
 * until the session ends, as before). An entry of an ended session is never
 * matched: that session's ephemeral records are gone and its late writes
 * fail. */
#ifndef TARN_STORE_META_ABANDONED_H
#define TARN_STORE_META_ABANDONED_H

#include <stddef.h>

#include "tarn/meta.h"

#define TARN__META_ABANDONED_MAX 64

/* Remembers (part, key, val). TARN_ENOMEM when it cannot. */
int tarn__meta_abandon(tarn_meta *m, const char *part, const char *key, const void *val,
                       size_t len);
/* 1 if (part, key, val) was abandoned through m in its current session. */
int tarn__meta_abandoned(tarn_meta *m, const char *part, const char *key, const void *val,
                         size_t len);
/* The abandoned (key, value) pairs of part in m's current session whose key
 * starts with prefix (key-order not kept; free with tarn_meta_recs_free). */
int tarn__meta_abandoned_list(tarn_meta *m, const char *part, const char *prefix,
                              tarn_meta_recs *out);
/* Frees what m remembers (tarn_meta_close). */
void tarn__meta_abandoned_free(tarn_meta *m);

#endif
