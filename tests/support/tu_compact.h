/* Test helpers for compaction: a deployment with a catalog stream, appends,
 * and snapshots of a log's entries as the reader returns them. */
#ifndef TU_COMPACT_H
#define TU_COMPACT_H

#include <stddef.h>
#include <stdint.h>

#include "tarn/meta.h"
#include "tarn/objstore.h"
#include "tarn/reclaim.h"

typedef struct tu_cenv {
  char name[64]; /* the mem: store name, or the directory of file stores */
  char meta_uri[300], wal_uri[300], compacted_uri[300];
  tarn_meta *m;
  tarn_objstore *wal, *compacted;
  uint64_t log;     /* partition 0 of ns/s1 */
  uint64_t logs[4]; /* its partitions */
  size_t n_logs;
  int on_disk;
  int kafka; /* the stream is a Kafka topic's: tu_append writes record batches */
} tu_cenv;

/* Opens a deployment (mem: stores, or sqlite + file:// under a temporary
 * directory when on_disk, or mem: metadata + object stores under a fresh
 * prefix of $TARN_TEST_S3_URI when on_disk is TU_CENV_S3: the caller skips
 * when it is unset), inits the catalog and creates stream ns/s1 with
 * n_partitions partitions (props: NULL-terminated key, value pairs or NULL). */
#define TU_CENV_S3 2
void tu_cenv_open(tu_cenv *e, const char *tag, int on_disk, uint32_t n_partitions,
                  const char *const *props);
void tu_cenv_close(tu_cenv *e);

/* The default compactor options, with max_file_bytes and max_range_bytes
 * where not 0. */
struct tarn_compactor_options;
struct tarn_compactor;
void tu_compactor_options(struct tarn_compactor_options *o, uint64_t file_bytes,
                          uint64_t range_bytes);
/* A compactor on e's roots and metadata store m (NULL: e->m) with options o
 * (NULL: the defaults); fails the test when it cannot open. */
struct tarn_compactor *tu_compactor(tu_cenv *e, tarn_meta *m,
                                    const struct tarn_compactor_options *o);
/* tu_compactor with tu_compactor_options(file_bytes, range_bytes). */
struct tarn_compactor *tu_compactor_sized(tu_cenv *e, tarn_meta *m, uint64_t file_bytes,
                                          uint64_t range_bytes);

/* The deterministic payload of entry number j of a log (n bytes, from seed). */
size_t tu_payload(uint64_t seed, uint64_t j, uint8_t *out, size_t cap);

/* Appends n entries to log (entries numbered from first), record counts 1..3
 * and payloads of tu_payload(log, j) (a v2 record batch of that many records
 * on a Kafka stream), flushing every per_object entries so that
 * records get distinct creation times (sleeping 2 ms between objects). */
void tu_append(tu_cenv *e, uint64_t log, uint64_t first, size_t n, size_t per_object);
/* tarn_reclaim_pass with the wall clock, and so the mem: and sqlite: stores'
 * clock (tarn_meta_clock) that graces are measured by, stopped at now_ms. */
int tu_reclaim_pass_at(int64_t now_ms, tarn_meta *m, tarn_objstore *wal, tarn_objstore *compacted,
                       const tarn_reclaim_options *o, tarn_reclaim_stats *st);

typedef struct tu_snap_ent {
  uint64_t offset, cumulative;
  uint32_t count;
  int64_t ts;
  uint8_t *payload;
  size_t len;
} tu_snap_ent;
typedef struct tu_snap {
  tu_snap_ent *v;
  size_t n;
} tu_snap;

/* Reads every entry of log from offset 0 (B on) with a fresh reader. */
void tu_snapshot(tu_cenv *e, uint64_t log, tu_snap *out);
void tu_snap_free(tu_snap *s);
/* Asserts that every entry of b is in a, equal in all fields (b may start later). */
void tu_snap_assert_same(const tu_snap *a, const tu_snap *b);

#endif
