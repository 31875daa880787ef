/* Fault injection and latency of the mem: object store. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tarn/error.h"
#include "tarn/objstore.h"
#include "tarn/testing.h"
#include "testutil.h"

static tarn_objstore *open_mem(const char *name) {
  tarn_objstore_mem_drop(name + 4);
  tarn_objstore *s;
  assert_int_equal(tarn_objstore_open(name, &s), 0);
  return s;
}

/* A fault before the effect: the put returns the code and nothing is stored;
 * the call after it works again. */
static void test_fault_before(void **st) {
  (void)st;
  tarn_objstore *s = open_mem("mem:fault-before");
  uint64_t size;
  assert_int_equal(
      tarn_objstore_mem_fault(s, TARN_MEM_OP_PUT, 2, 1, TARN_MEM_FAULT_BEFORE, TARN_ETIMEDOUT), 0);
  assert_int_equal(tarn_objstore_put(s, "a", "1", 1), 0);
  assert_int_equal(tarn_objstore_put(s, "b", "2", 1), TARN_ETIMEDOUT);
  assert_non_null(strstr(tarn_errmsg(), "injected"));
  assert_int_equal(tarn_objstore_head(s, "b", &size), TARN_ENOTFOUND);
  assert_int_equal(tarn_objstore_put(s, "b", "2", 1), 0);
  assert_int_equal(tarn_objstore_head(s, "b", &size), 0);
  assert_int_equal(tarn_objstore_mem_calls(s, TARN_MEM_OP_PUT), 3);
  assert_int_equal(tarn_objstore_mem_calls(s, TARN_MEM_OP_HEAD), 2);
  assert_int_equal(tarn_objstore_mem_calls(s, TARN_MEM_OP_ANY), 5);
  tarn_objstore_close(s);
}

/* A fault after the effect (a lost reply): the put reports TARN_EUNKNOWN, the
 * object exists, and a retry of the same create-only put finds TARN_EEXIST. */
static void test_fault_after(void **st) {
  (void)st;
  tarn_objstore *s = open_mem("mem:fault-after");
  assert_int_equal(
      tarn_objstore_mem_fault(s, TARN_MEM_OP_PUT, 1, 1, TARN_MEM_FAULT_AFTER, TARN_EUNKNOWN), 0);
  assert_int_equal(tarn_objstore_put(s, "a", "xyz", 3), TARN_EUNKNOWN);
  assert_int_equal(tarn_objstore_put(s, "a", "xyz", 3), TARN_EEXIST);
  tarn_buf b = TARN_BUF_INIT;
  assert_int_equal(tarn_objstore_get(s, "a", &b), 0);
  assert_memory_equal(b.data, "xyz", 3);
  /* a delete whose reply is lost still deleted */
  assert_int_equal(
      tarn_objstore_mem_fault(s, TARN_MEM_OP_DELETE, 1, 1, TARN_MEM_FAULT_AFTER, TARN_ETIMEDOUT),
      0);
  assert_int_equal(tarn_objstore_delete(s, "a"), TARN_ETIMEDOUT);
  assert_int_equal(tarn_objstore_get(s, "a", &b), TARN_ENOTFOUND);
  /* a streamed put counts as one PUT, at commit */
  assert_int_equal(
      tarn_objstore_mem_fault(s, TARN_MEM_OP_PUT, 1, 1, TARN_MEM_FAULT_BEFORE, TARN_EIO), 0);
  tarn_objstore_upload *u;
  assert_int_equal(tarn_objstore_put_begin(s, "s", &u), 0);
  assert_int_equal(tarn_objstore_put_write(u, "abc", 3), 0);
  assert_int_equal(tarn_objstore_put_commit(u), TARN_EIO);
  assert_int_equal(tarn_objstore_get(s, "s", &b), TARN_ENOTFOUND);
  tarn_buf_free(&b);
  tarn_objstore_close(s);
}

/* TARN_MEM_OP_ANY counts every operation; count > 1 fails a run of calls;
 * faults act on every handle of the same name; reset disarms. */
static void test_fault_any_shared(void **st) {
  (void)st;
  tarn_objstore *s = open_mem("mem:fault-any"), *t;
  assert_int_equal(tarn_objstore_open("mem:fault-any", &t), 0);
  uint64_t size;
  tarn_buf b = TARN_BUF_INIT;
  tarn_objstore_listing l;
  assert_int_equal(
      tarn_objstore_mem_fault(s, TARN_MEM_OP_ANY, 2, 3, TARN_MEM_FAULT_BEFORE, TARN_EUNAVAIL), 0);
  assert_int_equal(tarn_objstore_put(t, "a", "1", 1), 0);
  assert_int_equal(tarn_objstore_get(t, "a", &b), TARN_EUNAVAIL);
  assert_int_equal(tarn_objstore_head(s, "a", &size), TARN_EUNAVAIL);
  assert_int_equal(tarn_objstore_list(t, "", NULL, 10, &l), TARN_EUNAVAIL);
  assert_int_equal(tarn_objstore_head(s, "a", &size), 0);
  assert_int_equal(
      tarn_objstore_mem_fault(s, TARN_MEM_OP_GET, 1, 100, TARN_MEM_FAULT_BEFORE, TARN_EIO), 0);
  assert_int_equal(tarn_objstore_get(t, "a", &b), TARN_EIO);
  assert_int_equal(tarn_objstore_mem_reset_faults(t), 0);
  assert_int_equal(tarn_objstore_get(t, "a", &b), 0);
  /* bad arguments; and these controls refuse a store that is not mem: */
  assert_int_equal(tarn_objstore_mem_fault(s, 99, 1, 1, 0, TARN_EIO), TARN_EINVAL);
  assert_int_equal(tarn_objstore_mem_fault(s, 1, 0, 1, 0, TARN_EIO), TARN_EINVAL);
  assert_int_equal(tarn_objstore_mem_fault(s, 1, 1, 1, 0, 0), TARN_EINVAL);
  char *dir = tu_tmpdir("objmem");
  char uri[4200];
  snprintf(uri, sizeof uri, "file://%s", dir);
  tarn_objstore *f;
  assert_int_equal(tarn_objstore_open(uri, &f), 0);
  assert_int_equal(tarn_objstore_mem_fault(f, 1, 1, 1, 0, TARN_EIO), TARN_EINVAL);
  assert_int_equal(tarn_objstore_mem_latency(f, 1, 1), TARN_EINVAL);
  tarn_objstore_close(f);
  tu_rmtree(dir);
  free(dir);
  tarn_buf_free(&b);
  tarn_objstore_close(t);
  tarn_objstore_close(s);
}

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void test_latency(void **st) {
  (void)st;
  tarn_objstore *s = open_mem("mem:latency");
  assert_int_equal(tarn_objstore_mem_latency(s, TARN_MEM_OP_PUT, 30000), 0);
  double t = now();
  assert_int_equal(tarn_objstore_put(s, "a", "1", 1), 0);
  assert_true(now() - t >= 0.029);
  uint64_t size;
  t = now();
  assert_int_equal(tarn_objstore_head(s, "a", &size), 0);
  assert_true(now() - t < 0.029);
  assert_int_equal(tarn_objstore_mem_reset_faults(s), 0);
  tarn_objstore_close(s);
}

/* A named store outlives its handles until dropped. */
static void test_named_lifetime(void **st) {
  (void)st;
  tarn_objstore *s = open_mem("mem:life");
  assert_int_equal(tarn_objstore_put(s, "a", "1", 1), 0);
  tarn_objstore_close(s);
  assert_int_equal(tarn_objstore_open("mem:life", &s), 0);
  uint64_t size;
  assert_int_equal(tarn_objstore_head(s, "a", &size), 0);
  tarn_objstore_mem_drop("life");
  assert_int_equal(tarn_objstore_head(s, "a", &size), 0); /* this handle keeps the old one */
  tarn_objstore_close(s);
  assert_int_equal(tarn_objstore_open("mem:life", &s), 0);
  assert_int_equal(tarn_objstore_head(s, "a", &size), TARN_ENOTFOUND);
  tarn_objstore_close(s);
  tarn_objstore_mem_drop("life");
}

/* Damaged reads: a GET cut short still reports the whole size, so the
 * dispatcher's size check turns it into an error; a damaged first byte
 * arrives as it is (the reader's decoder must refuse it). Only GET, code 0. */
static void test_damaged_reads(void **st) {
  (void)st;
  tarn_objstore *s = open_mem("mem:damaged");
  assert_int_equal(tarn_objstore_put(s, "a",
                                     "\x01"
                                     "23456789",
                                     9),
                   0);
  tarn_buf b = TARN_BUF_INIT;
  assert_int_equal(tarn_objstore_mem_fault(s, TARN_MEM_OP_GET, 1, 1, TARN_MEM_FAULT_TRUNCATE, 0),
                   0);
  assert_int_equal(tarn_objstore_get(s, "a", &b), TARN_EIO);
  assert_int_equal(b.len, 0);
  assert_int_equal(tarn_objstore_mem_fault(s, TARN_MEM_OP_GET, 1, 1, TARN_MEM_FAULT_TRUNCATE, 0),
                   0);
  char raw[9];
  size_t got = 0;
  assert_int_equal(tarn_objstore_read(s, "a", 0, raw, sizeof raw, &got), 0);
  assert_int_equal(got, 4);
  assert_int_equal(tarn_objstore_mem_fault(s, TARN_MEM_OP_GET, 1, 2, TARN_MEM_FAULT_CORRUPT, 0), 0);
  assert_int_equal(tarn_objstore_get(s, "a", &b), 0);
  assert_int_equal(b.len, 9);
  assert_int_equal(b.data[0], 0xfe);
  assert_memory_equal(b.data + 1, "23456789", 8);
  /* only a read that covers byte 0 sees the damage */
  assert_int_equal(tarn_objstore_get_range(s, "a", 1, 3, &b), 0);
  assert_memory_equal(b.data, "234", 3);
  assert_int_equal(tarn_objstore_get(s, "a", &b), 0);
  assert_int_equal(b.data[0], 0x01);
  /* a throttling burst on every operation */
  assert_int_equal(
      tarn_objstore_mem_fault(s, TARN_MEM_OP_ANY, 1, 2, TARN_MEM_FAULT_BEFORE, TARN_EUNAVAIL), 0);
  uint64_t size;
  assert_int_equal(tarn_objstore_head(s, "a", &size), TARN_EUNAVAIL);
  assert_int_equal(tarn_objstore_get(s, "a", &b), TARN_EUNAVAIL);
  assert_int_equal(tarn_objstore_get(s, "a", &b), 0);
  assert_int_equal(tarn_objstore_mem_fault(s, TARN_MEM_OP_PUT, 1, 1, TARN_MEM_FAULT_TRUNCATE, 0),
                   TARN_EINVAL);
  assert_int_equal(
      tarn_objstore_mem_fault(s, TARN_MEM_OP_GET, 1, 1, TARN_MEM_FAULT_CORRUPT, TARN_EIO),
      TARN_EINVAL);
  tarn_buf_free(&b);
  tarn_objstore_close(s);
  tarn_objstore_mem_drop("damaged");
}

/* A held PUT (a delayed request): the caller is told the code, nothing is
 * there until it lands; its create-only condition is judged when it lands
 * (a key taken meanwhile: TARN_EEXIST, the request gone); a dropped one
 * never lands. */
static void test_held_puts(void **st) {
  (void)st;
  tarn_objstore *s = open_mem("mem:held");
  uint64_t size;
  assert_int_equal(
      tarn_objstore_mem_fault(s, TARN_MEM_OP_PUT, 1, 3, TARN_MEM_FAULT_HOLD, TARN_ETIMEDOUT), 0);
  assert_int_equal(
      tarn_objstore_mem_fault(s, TARN_MEM_OP_GET, 1, 1, TARN_MEM_FAULT_HOLD, TARN_ETIMEDOUT),
      TARN_EINVAL);
  assert_int_equal(tarn_objstore_put(s, "a", "1", 1), TARN_ETIMEDOUT);
  assert_int_equal(tarn_objstore_put(s, "b", "2", 1), TARN_ETIMEDOUT);
  assert_int_equal(tarn_objstore_put(s, "c", "3", 1), TARN_ETIMEDOUT);
  assert_int_equal(tarn_objstore_mem_held(s), 3);
  assert_int_equal(tarn_objstore_head(s, "a", &size), TARN_ENOTFOUND);
  assert_int_equal(tarn_objstore_mem_land(s, 0), 1);
  assert_int_equal(tarn_objstore_head(s, "a", &size), 0);
  assert_int_equal(tarn_objstore_put(s, "b", "X", 1), 0);
  assert_int_equal(tarn_objstore_mem_land(s, 0), TARN_EEXIST);
  tarn_buf got;
  tarn_buf_init(&got);
  assert_int_equal(tarn_objstore_get(s, "b", &got), 0);
  assert_memory_equal(got.data, "X", 1);
  tarn_buf_free(&got);
  assert_int_equal(tarn_objstore_mem_land(s, 1), 1);
  assert_int_equal(tarn_objstore_head(s, "c", &size), TARN_ENOTFOUND);
  assert_int_equal(tarn_objstore_mem_land(s, 0), 0);
  tarn_objstore_close(s);
  tarn_objstore_mem_drop("held");
}

typedef struct seen {
  int n, ops[8];
  tarn_objstore *s;
} seen;

static void hook(void *arg, int op, const char *name) {
  seen *v = arg;
  if (v->n < 8)
    v->ops[v->n++] = op;
  /* the hook may call the store itself (it runs unlocked) */
  if (!strcmp(name, "k")) {
    uint64_t size;
    tarn_objstore_head(v->s, "other", &size);
  }
}

/* The hook sees every call, before it strikes, and may call the store. */
static void test_hook(void **st) {
  (void)st;
  tarn_objstore *s = open_mem("mem:hook");
  seen v = {0};
  v.s = s;
  assert_int_equal(tarn_objstore_mem_hook(s, hook, &v), 0);
  assert_int_equal(tarn_objstore_put(s, "k", "1", 1), 0);
  assert_int_equal(tarn_objstore_delete(s, "j"), 0);
  assert_int_equal(v.n, 3);
  assert_int_equal(v.ops[0], TARN_MEM_OP_PUT);
  assert_int_equal(v.ops[1], TARN_MEM_OP_HEAD);
  assert_int_equal(v.ops[2], TARN_MEM_OP_DELETE);
  assert_int_equal(tarn_objstore_mem_hook(s, NULL, NULL), 0);
  assert_int_equal(tarn_objstore_delete(s, "k"), 0);
  assert_int_equal(v.n, 3);
  tarn_objstore_close(s);
  tarn_objstore_mem_drop("hook");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_fault_before),     cmocka_unit_test(test_fault_after),
      cmocka_unit_test(test_fault_any_shared), cmocka_unit_test(test_latency),
      cmocka_unit_test(test_named_lifetime),   cmocka_unit_test(test_damaged_reads),
      cmocka_unit_test(test_held_puts),        cmocka_unit_test(test_hook),
  };
  return cmocka_run_group_tests_name("objstore mem: faults", tests, NULL, NULL);
}
