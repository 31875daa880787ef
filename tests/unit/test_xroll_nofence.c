/* The express writer's roll without a fence (issue 14, "the roll-without-fence
 * hazard"). Reproduction: a writer without options.fence whose slot halted
 * with one copy written counted on from the released offsets, so the next
 * entry was acknowledged at offset 0, the offset the halted slot's entry
 * held; a later fence repairs that slot from its copy and settlement absorbs
 * it at offset 0 too (this test failed: the append after the halt succeeded
 * and was acknowledged at 0). Now the writer stops with TARN_EUNKNOWN until
 * the epoch is fenced and settled; a new writer then counts on from the index.
 * A halted slot the writer saw dead (K-W+1 buckets answered with its poison)
 * cannot be repaired, and there the writer rolls on (test_express_writer
 * foreign_object_not_counted). */
#include "testutil.h"

#include <stdio.h>
#include <string.h>

#include "tarn/express.h"
#include "tarn/express_fence.h"
#include "tarn/meta.h"
#include "tarn/objstore.h"
#include "tarn/testing.h"
#include "tarn/reader.h"

typedef struct acks {
  int n;
  int rc[8];
  uint64_t off[8];
} acks;

static acks a;

static void on_ack(void *arg, int status, uint64_t offset, int64_t ts) {
  (void)ts;
  int id = (int)(intptr_t)arg;
  a.rc[id] = status;
  a.off[id] = offset;
  a.n++;
}

static void roll_without_fence_stops_writer(void **state) {
  (void)state;
  memset(&a, 0, sizeof a);
  tarn_meta *m;
  tarn_objstore *wal, *b[3];
  assert_int_equal(tarn_meta_open("mem:xnf", &m), 0);
  assert_int_equal(tarn_objstore_open("mem:xnf-wal", &wal), 0);
  const char *bp[3] = {"mem:xnf-b0@z0", "mem:xnf-b1@z1", "mem:xnf-b2@z2"};
  char uri[32];
  for (int i = 0; i < 3; i++) {
    snprintf(uri, sizeof uri, "mem:xnf-b%d", i);
    assert_int_equal(tarn_objstore_open(uri, &b[i]), 0);
  }
  assert_int_equal(tarn_express_deploy(m, bp, 3, 2, 8, NULL), 0);
  tarn_xwriter_options o;
  tarn_xwriter_options_default(&o);
  o.star = "star-nf";
  o.stepped = 1; /* and no fence */
  tarn_xwriter *w;
  assert_int_equal(tarn_xwriter_open(m, wal, &o, &w), 0);
  uint64_t epoch = tarn_xwriter_epoch(w);
  /* buckets 1 and 2 refuse every PUT: slot 0 gets bucket 0's copy only */
  for (int i = 1; i < 3; i++)
    assert_int_equal(tarn_objstore_mem_fault(b[i], TARN_MEM_OP_PUT, 1, 1000000,
                                             TARN_MEM_FAULT_BEFORE, TARN_EUNAVAIL),
                     0);
  assert_int_equal(tarn_xwriter_append(w, 5, "e0", 2, 1, on_ack, (void *)(intptr_t)0), 0);
  assert_int_equal(tarn_xwriter_step(w, TARN_XSTEP_SEAL, 0, 0), 1);
  assert_int_equal(tarn_xwriter_step(w, TARN_XSTEP_PUT, 0, 0), 1);
  for (int t = 0; t < o.put_attempts; t++)
    for (size_t i = 1; i < 3; i++)
      assert_int_equal(tarn_xwriter_step(w, TARN_XSTEP_PUT, 0, i), 1);
  tarn_xwriter_step(w, TARN_XSTEP_RELEASE, 0, 0); /* slot 0 halts the epoch */
  assert_int_equal(a.n, 1);
  assert_int_equal(a.rc[0], TARN_EUNKNOWN); /* a copy exists: a fence may repair it */
  for (int i = 1; i < 3; i++)
    tarn_objstore_mem_reset_faults(b[i]);

  /* offset 0 must not be handed out again: the writer takes nothing more */
  int rc = tarn_xwriter_append(w, 5, "e1", 2, 1, on_ack, (void *)(intptr_t)1);
  if (rc == 0) { /* the hazard: drive it to its acknowledgement to show the offset */
    tarn_xwriter_step(w, TARN_XSTEP_SEAL, 0, 0);
    for (size_t i = 0; i < 3; i++)
      tarn_xwriter_step(w, TARN_XSTEP_PUT, 0, i);
    tarn_xwriter_step(w, TARN_XSTEP_RELEASE, 0, 0);
    print_message("append after the halt acknowledged: rc %d offset %llu\n", a.rc[1],
                  (unsigned long long)a.off[1]);
  }
  assert_int_equal(rc, TARN_EUNKNOWN);
  assert_non_null(strstr(tarn_errmsg(), "fence and settle"));
  assert_true(tarn_xwriter_close(w) < 0);

  /* what the stop protects: the fence repairs slot 0 from bucket 0's copy
   * (cut 1) and settlement absorbs e0 at offset 0, the offset it was given */
  tarn_xfence_opts fo = {.timeout_ms = 5000, .retry_ms = 5};
  tarn_xfence_report fr;
  assert_int_equal(tarn_express_fence(m, "star-nf", epoch, &fo, &fr), 0);
  assert_int_equal(fr.cut, 1);
  tarn_xsettle_report sr;
  assert_int_equal(tarn_express_settle(m, wal, "star-nf", epoch, &fo, &sr), 0);
  assert_int_equal(sr.absorbed, 1);
  /* a new writer counts on from the index: e1 at 1 */
  assert_int_equal(tarn_xwriter_open(m, wal, &o, &w), 0);
  assert_int_equal(tarn_xwriter_append(w, 5, "e1", 2, 1, on_ack, (void *)(intptr_t)2), 0);
  assert_int_equal(tarn_xwriter_flush(w), 0);
  assert_int_equal(a.rc[2], 0);
  assert_int_equal(a.off[2], 1);
  assert_int_equal(tarn_xwriter_close(w), 0);

  tarn_reader *r;
  assert_int_equal(tarn_reader_open(m, wal, NULL, NULL, &r), 0);
  tarn_log_iter *it;
  assert_int_equal(tarn_log_iter_open(r, 5, 0, &it), 0);
  tarn_entry en;
  for (int i = 0; i < 2; i++) {
    assert_int_equal(tarn_log_iter_next(it, &en, 0), 0);
    assert_int_equal(en.offset, (uint64_t)i);
    char want[4];
    snprintf(want, sizeof want, "e%d", i);
    assert_memory_equal(en.payload, want, 2);
  }
  assert_int_equal(tarn_log_iter_next(it, &en, 0), TARN_EEND);
  tarn_log_iter_close(it);
  tarn_reader_close(r);
  for (int i = 0; i < 3; i++)
    tarn_objstore_close(b[i]);
  tarn_objstore_close(wal);
  tarn_meta_close(m);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(roll_without_fence_stops_writer),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
