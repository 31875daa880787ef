#include "tu_deploy.h"

#include <stdarg.h>
#include <setjmp.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "testutil.h"

int tu_deploy_setup(tu_deploy *d, const char *variant, const char *tag) {
  memset(d, 0, sizeof *d);
  snprintf(d->variant, sizeof d->variant, "%s", variant);
  /* A run id from the clock and the pid: distinct log IDs and S3 prefixes per
   * run, below 2^63 and far above the small IDs other tests use. */
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  uint64_t run = ((uint64_t)ts.tv_sec % 100000000u) * 100000u +
                 (uint64_t)(ts.tv_nsec / 10000) % 100u * 1000u + (uint64_t)getpid() % 1000u;
  if (strcmp(variant, "sqlite-file") == 0) {
    d->dir = tu_tmpdir(tag);
    snprintf(d->meta_uri, sizeof d->meta_uri, "sqlite:%s/meta.db", d->dir);
    snprintf(d->wal_uri, sizeof d->wal_uri, "file://%s/wal", d->dir);
    char wal[640];
    snprintf(wal, sizeof wal, "%s/wal", d->dir);
    mkdir(wal, 0755);
    d->log_base = 1000;
    return 0;
  }
  if (strcmp(variant, "etcd-s3") == 0) {
    const char *etcd = tu_env_required("TARN_TEST_ETCD");
    const char *s3 = tu_env_required("TARN_TEST_S3_URI");
    if (!etcd || !s3)
      return 1;
    snprintf(d->meta_uri, sizeof d->meta_uri, "etcd://%s?prefix=tarn-test/%s-%llu", etcd, tag,
             (unsigned long long)run);
    snprintf(d->wal_uri, sizeof d->wal_uri, "%s/%s-%llu/wal", s3, tag, (unsigned long long)run);
    d->log_base = 1000000000000ull + run * 1000u;
    d->remote = 1;
    return 0;
  }
  fail_msg("unknown variant \"%s\" (want sqlite-file or etcd-s3)", variant);
  return 1;
}

void tu_deploy_done(tu_deploy *d) {
  if (d->dir) {
    tu_rmtree(d->dir);
    free(d->dir);
    d->dir = NULL;
  }
}

void tu_deploy_meta_opt(const tu_deploy *d, const char *opt, char *buf, size_t n) {
  snprintf(buf, n, "%s%c%s", d->meta_uri, strchr(d->meta_uri, '?') ? '&' : '?', opt);
}
