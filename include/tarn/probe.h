/* tarn — probing a store for what tarn relies on (issue 31, `tarn probe`).
 *
 * tarn's safety rests on a few properties of its stores (docs/objstore.md,
 * docs/meta.md): an object store must refuse a create-only PUT of a name that
 * exists, read back what was written, forget what was deleted, and list
 * names completely and in byte order; a metadata store must refuse
 * CreateIfAbsent of an existing key and CompareAndSet on another version,
 * honour guards, sequence keys and keep key order. Stores that claim S3
 * compatibility do not all do so (a store that ignores If-None-Match under
 * some conditions, unordered LIST on S3 Express directory buckets). A probe
 * tries each property in a scratch prefix (object store) or partition
 * (metadata store) of its own and removes what it wrote. */
#ifndef TARN_PROBE_H
#define TARN_PROBE_H

#include <stddef.h>

#include "tarn/meta.h"
#include "tarn/objstore.h"

#ifdef __cplusplus
extern "C" {
#endif

enum {
  TARN_PROBE_HOLDS = 0,
  TARN_PROBE_FAILS = 1,
  TARN_PROBE_NOT_CHECKED = 2 /* cannot be observed from here: the detail says why */
};

typedef struct tarn_probe_result {
  const char *name; /* "create_only", ... (static) */
  int safety;       /* 1: tarn's safety depends on it */
  int verdict;      /* TARN_PROBE_* */
  char detail[256];
} tarn_probe_result;

#define TARN_PROBE_MAX 16
typedef struct tarn_probe_report {
  tarn_probe_result r[TARN_PROBE_MAX];
  size_t n;
  int unsafe; /* a safety property fails */
} tarn_probe_report;

/* Probes an object store under the scratch prefix "tarn-probe-{random}/",
 * deleted afterwards. Returns 0 with the report filled, or an error code
 * when the store could not be used at all (TARN_EUNAVAIL: unreachable). */
int tarn_probe_objstore(tarn_objstore *s, tarn_probe_report *rep);
/* Probes a metadata store in the scratch partition "tarn-probe-{random}",
 * emptied afterwards. */
int tarn_probe_meta(tarn_meta *m, tarn_probe_report *rep);
/* Opens the metadata store uri twice (two sessions, as two tarn processes)
 * and probes it: tarn_probe_meta's checks on the first handle, then
 * cas_linearizable (the two sessions race CompareAndSet on one key: no update
 * lost) and ephemeral_session (one session's ephemeral record is seen by the
 * other, and gone when its session ends), in a scratch partition emptied
 * afterwards. Returns tarn_meta_open's error when the URI is bad or the store
 * unreachable, TARN_EUNAVAIL when it stops answering midway, else 0 with the
 * report filled. */
int tarn_probe_meta_uri(const char *uri, tarn_probe_report *rep);

#ifdef __cplusplus
}
#endif
#endif
