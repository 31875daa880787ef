/* The unit tests' deployment fixture (issue 32: one fixture, not one per
 * file): a metadata store, a WAL root and a compacted root on mem: stores of
 * one name, and on request a catalog and express buckets. Its stores are
 *   meta       mem:NAME          (meta_uri: open more handles on it)
 *   WAL root   mem:NAME-wal
 *   compacted  mem:NAME-c
 *   bucket i   mem:NAME-b<i>, in zone z<i> (lat:-wrapped when asked)
 * NAME is the caller's (tests that run a case twice, or more than once in a
 * process, make it unique: tu_fixture_open_unique). Tests of the log layer
 * that run on several backends use tu_deploy.h's ctest variants; tests of
 * compaction tu_compact.h's tu_cenv. */
#ifndef TU_FIXTURE_H
#define TU_FIXTURE_H

#include <stddef.h>
#include <stdint.h>

#include "tarn/catalog.h"
#include "tarn/meta.h"
#include "tarn/objstore.h"

#define TU_FIXTURE_BUCKETS 3

typedef struct tu_fixture {
  char name[64];
  char meta_uri[96];
  tarn_meta *m; /* NULL once the test closed it itself */
  tarn_objstore *wal, *compacted;
  tarn_catalog *cat;                    /* tu_fixture_catalog */
  tarn_objstore *b[TU_FIXTURE_BUCKETS]; /* tu_fixture_express with open_buckets */
  size_t k;                             /* buckets deployed */
} tu_fixture;

/* Opens the metadata store and both roots of deployment NAME. */
void tu_fixture_open(tu_fixture *f, const char *name);
/* As tu_fixture_open, NAME being "TAG-PID-N" with N counting the calls. */
void tu_fixture_open_unique(tu_fixture *f, const char *tag);
/* Opens the catalog on f's metadata store (f->cat); init: and writes the
 * deployment record, as `tarn init` does. */
void tu_fixture_catalog(tu_fixture *f, int init);
/* Deploys express on f (tarn_express_deploy): k buckets (at most
 * TU_FIXTURE_BUCKETS), write quorum w, window win; each bucket wrapped in a
 * lat: store named NAME-b<i> when lat; the buckets also opened into f->b
 * when open_buckets (a test's direct look at them). */
void tu_fixture_express(tu_fixture *f, size_t k, uint32_t w, uint32_t win, int lat,
                        int open_buckets);
/* Closes what is open and drops the mem: object stores. */
void tu_fixture_close(tu_fixture *f);

#endif
