/* Test helpers for logs in a metadata store: index records without a writer. */
#ifndef TU_LOG_H
#define TU_LOG_H

#include <stddef.h>
#include <stdint.h>

#include "tarn/catalog.h"
#include "tarn/meta.h"

/* Publishes one RAW index record of n records (n >= 1) and size payload bytes
 * on log_id with SequencedPut, as a writer's step A3 does; *end_out (may be
 * NULL) gets its end offset. Returns the libtarn code. */
int tu_publish(tarn_meta *m, uint64_t log_id, uint32_t n, uint32_t size, uint64_t *end_out);
/* The number of index records of log_id. */
size_t tu_count_index(tarn_meta *m, uint64_t log_id);
/* Opens a metadata store for a test: "mem" (a fresh mem:NAME store),
 * "sqlite" (a file in a fresh temporary directory, removed by tu_meta_done)
 * or "etcd" (TARN_TEST_ETCD under a fresh root; skips the test without it,
 * fails it in CI).
 * *uri gets the URI (malloc'd) so other handles can share the store. */
tarn_meta *tu_meta_open(const char *backend, char **uri);
void tu_meta_done(tarn_meta *m, char *uri);

/* A metadata store (tu_meta_open's backend) with an initialized catalog whose
 * drain timeout is drain_ms; the fixture of the catalog's tests. */
typedef struct tu_catalog_fx {
  tarn_meta *m;
  char *uri;
  tarn_catalog *c;
} tu_catalog_fx;
tu_catalog_fx tu_catalog_fx_open(const char *backend, int drain_ms);
void tu_catalog_fx_close(tu_catalog_fx *f);

#endif
