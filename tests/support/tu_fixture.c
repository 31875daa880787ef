/* The unit tests' deployment fixture (tu_fixture.h). */
#include "tu_fixture.h"

#include "testutil.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "tarn/express.h"
#include "tarn/testing.h"

static tarn_objstore *open_store(const tu_fixture *f, const char *suffix) {
  char uri[128];
  snprintf(uri, sizeof uri, "mem:%s%s", f->name, suffix);
  tarn_objstore *s = NULL;
  assert_int_equal(tarn_objstore_open(uri, &s), 0);
  return s;
}

void tu_fixture_open(tu_fixture *f, const char *name) {
  memset(f, 0, sizeof *f);
  snprintf(f->name, sizeof f->name, "%s", name);
  snprintf(f->meta_uri, sizeof f->meta_uri, "mem:%s", name);
  assert_int_equal(tarn_meta_open(f->meta_uri, &f->m), 0);
  f->wal = open_store(f, "-wal");
  f->compacted = open_store(f, "-c");
}

void tu_fixture_open_unique(tu_fixture *f, const char *tag) {
  static int n;
  char name[64];
  snprintf(name, sizeof name, "%s-%d-%d", tag, (int)getpid(), n++);
  tu_fixture_open(f, name);
}

void tu_fixture_catalog(tu_fixture *f, int init) {
  assert_int_equal(tarn_catalog_open(f->m, NULL, &f->cat), 0);
  if (init)
    assert_int_equal(tarn_catalog_init(f->cat, NULL), 0);
}

void tu_fixture_express(tu_fixture *f, size_t k, uint32_t w, uint32_t win, int lat,
                        int open_buckets) {
  assert_true(k <= TU_FIXTURE_BUCKETS);
  char bk[TU_FIXTURE_BUCKETS][256];
  const char *bp[TU_FIXTURE_BUCKETS];
  for (size_t i = 0; i < k; i++) {
    if (lat)
      snprintf(bk[i], sizeof bk[i], "lat:name=%s-b%zu;mem:%s-b%zu@z%zu", f->name, i, f->name, i, i);
    else
      snprintf(bk[i], sizeof bk[i], "mem:%s-b%zu@z%zu", f->name, i, i);
    bp[i] = bk[i];
    if (open_buckets) {
      char suffix[32];
      snprintf(suffix, sizeof suffix, "-b%zu", i);
      f->b[i] = open_store(f, suffix);
    }
  }
  f->k = k;
  assert_int_equal(tarn_express_deploy(f->m, bp, k, w, win, NULL), 0);
}

void tu_fixture_close(tu_fixture *f) {
  tarn_catalog_close(f->cat);
  for (size_t i = 0; i < TU_FIXTURE_BUCKETS; i++)
    tarn_objstore_close(f->b[i]);
  tarn_objstore_close(f->wal);
  tarn_objstore_close(f->compacted);
  if (f->m)
    tarn_meta_close(f->m);
  char n[96];
  snprintf(n, sizeof n, "%s-wal", f->name);
  tarn_objstore_mem_drop(n);
  snprintf(n, sizeof n, "%s-c", f->name);
  tarn_objstore_mem_drop(n);
  memset(f, 0, sizeof *f);
}
