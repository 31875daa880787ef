/* tarn_writer_seal: the open batch is sealed at once, without waiting for its
 * window or its outcomes (what `tarn append` uses when its ring of records in
 * flight is full, and when it drains). */
#include "testutil.h"

#include <pthread.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include "tarn/meta.h"
#include "tarn/objstore.h"
#include "tarn/testing.h"
#include "tarn/writer.h"

typedef struct ack {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int done, status;
  uint64_t offset;
} ack;

static void ack_cb(void *arg, int status, uint64_t offset, int64_t ts) {
  (void)ts;
  ack *a = arg;
  pthread_mutex_lock(&a->mu);
  a->done++;
  a->status = status;
  a->offset = offset;
  pthread_cond_broadcast(&a->cv);
  pthread_mutex_unlock(&a->mu);
}

/* Waits up to ms for the outcome: 1 when it came. */
static int wait_ack(ack *a, int ms) {
  struct timespec dl;
  clock_gettime(CLOCK_REALTIME, &dl);
  dl.tv_sec += ms / 1000;
  dl.tv_nsec += (long)(ms % 1000) * 1000000L;
  if (dl.tv_nsec >= 1000000000L)
    dl.tv_sec++, dl.tv_nsec -= 1000000000L;
  pthread_mutex_lock(&a->mu);
  while (!a->done && pthread_cond_timedwait(&a->cv, &a->mu, &dl) == 0)
    ;
  int r = a->done;
  pthread_mutex_unlock(&a->mu);
  return r;
}

static void seal_without_waiting(void **state) {
  (void)state;
  char name[64], uri[80];
  snprintf(name, sizeof name, "seal-%d", (int)getpid());
  snprintf(uri, sizeof uri, "mem:%s", name);
  tarn_meta *m;
  tarn_objstore *wal;
  assert_int_equal(tarn_meta_open(uri, &m), 0);
  assert_int_equal(tarn_objstore_open(uri, &wal), 0);
  tarn_writer_options o;
  tarn_writer_options_default(&o);
  o.batch_ms = 3600000; /* the window would never seal it within the test */
  tarn_writer *w;
  assert_int_equal(tarn_writer_open(m, wal, &o, &w), 0);
  ack a = {.done = 0};
  pthread_mutex_init(&a.mu, NULL);
  pthread_cond_init(&a.cv, NULL);
  assert_int_equal(tarn_writer_append(w, 3, "x", 1, 1, ack_cb, &a), 0);
  assert_int_equal(wait_ack(&a, 300), 0); /* waits in the open batch */
  assert_int_equal(tarn_writer_seal(w), 0);
  assert_int_equal(wait_ack(&a, 20000), 1);
  assert_int_equal(a.status, 0);
  assert_int_equal(a.offset, 0);
  assert_int_equal(tarn_writer_seal(w), 0); /* no open batch: nothing to do */
  assert_int_equal(tarn_writer_close(w), 0);
  assert_int_equal(a.done, 1);
  pthread_cond_destroy(&a.cv);
  pthread_mutex_destroy(&a.mu);
  tarn_objstore_close(wal);
  tarn_meta_close(m);
  tarn_objstore_mem_drop(name);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(seal_without_waiting)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
