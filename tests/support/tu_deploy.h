/* Test helper: one deployment (a metadata store and a WAL root) per ctest
 * variant of the log-layer tests, so the same test runs on both kinds:
 *   "sqlite-file"  sqlite: + file:// in a fresh temporary directory;
 *   "etcd-s3"      etcd:// (TARN_TEST_ETCD) + s3:// (TARN_TEST_S3_URI), the
 *                  records under an etcd root (option prefix=) and the objects
 *                  under an S3 prefix, both unique to the run.
 * Log IDs differ per run too (belt and braces: the servers keep what earlier
 * runs wrote). meta_uri may hold options: add more with tu_deploy_meta_opt. */
#ifndef TU_DEPLOY_H
#define TU_DEPLOY_H

#include <stddef.h>
#include <stdint.h>

typedef struct tu_deploy {
  char variant[16];
  char meta_uri[600];
  char wal_uri[600];
  char *dir;         /* the temporary directory of sqlite-file, else NULL */
  uint64_t log_base; /* the first of 1000 log IDs this run may use */
  int remote;        /* 1 for etcd-s3 (slower: tests scale down) */
} tu_deploy;

/* Sets up the variant's deployment. Returns 0, or 1 when its servers are not
 * configured (the caller skips; in CI tu_env_required has failed the test).
 * Fails the test on an unknown variant. */
int tu_deploy_setup(tu_deploy *d, const char *variant, const char *tag);
/* meta_uri with one more option ("session_timeout_ms=1000") into buf. */
void tu_deploy_meta_opt(const tu_deploy *d, const char *opt, char *buf, size_t n);
/* Removes what setup created locally (objects on S3 stay, under the run's prefix). */
void tu_deploy_done(tu_deploy *d);

#endif
