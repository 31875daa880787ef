/* Allocation failures, in the style of SQLite's and curl's OOM tests: each
 * operation runs once clean to count its allocations N, then once for every
 * k = 1..N with the k-th allocation failing. It must then fail with
 * TARN_ENOMEM (or an error the case allows and names) or succeed with the
 * right result — never crash, never claim success with a wrong result — and
 * leave its state usable. LeakSanitizer (the ASan build) checks that every
 * failure path frees what it allocated. */
/* ctest-wrap-alloc */
#include "testutil.h"
#include "tu_alloc_fail.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tarn/buf.h"
#include "tarn/error.h"
#include "tarn/wal.h"

/* One operation under test: 0 when it succeeded and its result was checked
 * (a wrong result fails the test inside), or the negative code it failed with. */
typedef int (*op_fn)(void *ctx);

/* Past this many allocations an operation is sampled: every stride-th k plus
 * the first and last MAX_K/4, so the whole test stays well under a minute in
 * the ASan build. */
#define MAX_K 400

/* Runs op clean (it must succeed), then with each allocation failing in turn.
 * also_ok: another code a failure may give (0 for none). Returns N. */
static uint64_t run_failing(const char *name, op_fn op, void *ctx, int also_ok) {
  tu_alloc_fail_at(0);
  int rc = op(ctx);
  uint64_t n = tu_alloc_calls();
  if (rc != 0) fail_msg("%s: clean run failed: %d %s", name, rc, tarn_errmsg());
  assert_true(n > 0);
  uint64_t stride = n > MAX_K ? (n + MAX_K - 1) / (MAX_K / 2) : 1;
  uint64_t failures = 0;
  for (uint64_t k = 1; k <= n; k++) {
    if (stride > 1 && k > MAX_K / 4 && k + MAX_K / 4 <= n && k % stride) continue;
    tu_alloc_fail_at(k);
    rc = op(ctx);
    int hit = tu_alloc_failed();
    tu_alloc_fail_at(0);
    if (rc == 0) continue; /* tolerated (or the k-th allocation never came) */
    if (!hit) fail_msg("%s: failed with %d (%s) without an allocation failure", name, rc,
                       tarn_errmsg());
    if (rc != TARN_ENOMEM && (also_ok == 0 || rc != also_ok))
      fail_msg("%s: allocation %llu of %llu failing gave %d (%s)", name, (unsigned long long)k,
               (unsigned long long)n, rc, tarn_errmsg());
    failures++;
  }
  printf("%s: %llu allocations, %llu failures reported\n", name, (unsigned long long)n,
         (unsigned long long)failures);
  return n;
}

/* ---- WAL objects ------------------------------------------------------- */

typedef struct wal_ctx {
  uint8_t payloads[6][40];
  uint64_t logs[6];
  tarn_buf ref;     /* the object built clean */
} wal_ctx;

static void wal_ctx_init(wal_ctx *c) {
  memset(c, 0, sizeof *c);
  for (int i = 0; i < 6; i++) {
    memset(c->payloads[i], 'a' + i, sizeof c->payloads[i]);
    c->logs[i] = (uint64_t)(7 + i % 3);
  }
}

static int wal_build(wal_ctx *c, tarn_buf *out) {
  tarn_wal_builder b;
  tarn_wal_builder_init(&b);
  int rc = 0;
  for (int i = 0; i < 6 && !rc; i++)
    rc = tarn_wal_builder_add(&b, c->logs[i], c->payloads[i], (size_t)(10 + i), (uint32_t)(i + 1));
  if (!rc) rc = tarn_wal_builder_finish(&b, out);
  if (!rc) {
    assert_int_equal(b.section_count, 3);
    assert_int_equal(b.sections[0].log_id, 7);
    assert_int_equal(b.sections[0].record_total, 1 + 4);
    assert_int_equal(b.sections[0].bounds[1], 5);
  }
  tarn_wal_builder_free(&b);
  return rc;
}

static int op_wal_builder(void *ctx) {
  wal_ctx *c = ctx;
  tarn_buf out = TARN_BUF_INIT;
  int rc = wal_build(c, &out);
  if (!rc) {
    assert_int_equal(out.len, c->ref.len);
    assert_memory_equal(out.data, c->ref.data, out.len);
  }
  tarn_buf_free(&out);
  return rc;
}

static void check_wal(const wal_ctx *c, const tarn_wal *w, int payloads) {
  assert_int_equal(w->section_count, 3);
  assert_int_equal(w->entry_total, 6);
  for (int i = 0; i < 6; i++) {
    const tarn_wal_section *s = tarn_wal_find(w, c->logs[i]);
    assert_non_null(s);
    const tarn_wal_entry *e = &s->entries[i / 3];
    assert_int_equal(e->payload_size, 10 + i);
    assert_int_equal(e->record_count, i + 1);
    if (payloads) assert_memory_equal(e->payload, c->payloads[i], 10 + i);
  }
}

static int op_wal_decode(void *ctx) {
  wal_ctx *c = ctx;
  tarn_wal w;
  int rc = tarn_wal_decode(c->ref.data, c->ref.len, &w);
  if (rc) {
    assert_int_equal(w.section_count, 0); /* left empty, needs no free */
    return rc;
  }
  check_wal(c, &w, 1);
  tarn_wal_free(&w);
  uint64_t head;
  assert_int_equal(tarn_wal_head_length(c->ref.data, c->ref.len, c->ref.len, &head), 0);
  rc = tarn_wal_decode_index(c->ref.data, (size_t)head, c->ref.len, &w);
  if (rc) return rc;
  check_wal(c, &w, 0);
  tarn_wal_free(&w);
  return 0;
}

static void wal_objects(void **state) {
  (void)state;
  wal_ctx c;
  wal_ctx_init(&c);
  assert_int_equal(wal_build(&c, &c.ref), 0);
  run_failing("wal builder", op_wal_builder, &c, 0);
  run_failing("wal decode", op_wal_decode, &c, 0);
  tarn_buf_free(&c.ref);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(wal_objects),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
