/* The express fence side through the command (TARN_BIN) on the embedded
 * layout (sqlite metadata, three file:// buckets): `tarn inspect slot` and
 * `tarn inspect poison` decode a flight and a poison object; `tarn express
 * fence` publishes the cut, `tarn express settle` absorbs the slots below it
 * into the WAL root (once), deletes only the straggler and keeps the poison; `tarn fsck
 * --express-star` passes, then finds a hole planted below the cut. Also tarn_express_fsck's cursor
 * and cut checks. */
#include "testutil.h"
#include "tu_express.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "express/fence.h"
#include "tarn/error.h"
#include "tarn/express_fence.h"
#include "tarn/meta.h"
#include "tarn/objstore.h"
#include "tarn/wal.h"

static char *dir;
static const char *bin;

/* Runs a command line; its stdout in out (n bytes), the exit status back. */
static int run(char *out, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int run(char *out, size_t n, const char *fmt, ...) {
  char cmd[4096];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(cmd, sizeof cmd, fmt, ap);
  va_end(ap);
  FILE *p = popen(cmd, "r");
  assert_non_null(p);
  size_t k = fread(out, 1, n - 1, p);
  out[k] = 0;
  int st = pclose(p);
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void write_file(const char *path, const void *p, size_t n) {
  FILE *f = fopen(path, "wb");
  assert_non_null(f);
  assert_int_equal(fwrite(p, 1, n, f), n);
  fclose(f);
}

static void flight(uint64_t slot, tarn_buf *out) { tu_xflight(slot, 3, 2, out); }

static void inspect_slot_and_poison(void **state) {
  (void)state;
  char path[4200], out[8192];
  tarn_buf p;
  tarn_buf_init(&p);
  assert_int_equal(tarn__xpoison(&p, "node-7", 12, 345), 0);
  snprintf(path, sizeof path, "%s/poison", dir);
  write_file(path, p.data, p.len);
  assert_int_equal(run(out, sizeof out, "'%s' inspect poison '%s' --json", bin, path), 0);
  assert_non_null(strstr(out, "\"star\": \"node-7\""));
  assert_non_null(strstr(out, "\"epoch\": 12"));
  assert_non_null(strstr(out, "\"slot\": 345"));
  assert_non_null(strstr(out, "node-7/00000000000000000012/00000000000000000345"));
  assert_int_equal(run(out, sizeof out, "'%s' inspect slot '%s'", bin, path), 0);
  assert_non_null(strstr(out, "express poison"));
  tarn_buf f;
  flight(4, &f);
  snprintf(path, sizeof path, "%s/flight", dir);
  write_file(path, f.data, f.len);
  assert_int_equal(run(out, sizeof out, "'%s' inspect slot '%s'", bin, path), 0);
  assert_non_null(strstr(out, "express flight"));
  assert_non_null(strstr(out, "log_id 3"));
  assert_int_equal(run(out, sizeof out, "'%s' inspect slot '%s' --json", bin, path), 0);
  assert_non_null(strstr(out, "\"record_count\": 2"));
  /* a flight is not poison; a poison with a byte changed is not poison */
  assert_int_equal(run(out, sizeof out, "'%s' inspect poison '%s' 2>/dev/null", bin, path), 1);
  p.data[p.len - 2] = '9';
  snprintf(path, sizeof path, "%s/poison2", dir);
  write_file(path, p.data, p.len - 1); /* no newline */
  assert_int_equal(run(out, sizeof out, "'%s' inspect poison '%s' 2>/dev/null", bin, path), 1);
  tarn_buf_free(&f);
  tarn_buf_free(&p);
}

/* `tarn express settle` of node-c's epoch 1, which must succeed. */
static void settle(char *out, size_t n) {
  assert_int_equal(
      run(out, n, "'%s' express settle --home '%s/home' --star node-c --epoch 1 --json", bin, dir),
      0);
}

static void fence_settle_fsck_through_the_command(void **state) {
  (void)state;
  char out[8192], uri[4300];
  assert_int_equal(run(out, sizeof out, "'%s' init --home '%s/home' >/dev/null", bin, dir), 0);
  snprintf(uri, sizeof uri, "sqlite:%s/home/meta.db", dir);
  tarn_meta *m;
  assert_int_equal(tarn_meta_open(uri, &m), 0);
  tarn__xbuckets s;
  memset(&s, 0, sizeof s);
  for (int i = 0; i < 3; i++) {
    snprintf(uri, sizeof uri, "file://%s/xb%d@zone-%d", dir, i, i);
    assert_int_equal(tarn__xbuckets_add(&s, uri), 0);
  }
  s.w = 2, s.win = 2;
  assert_int_equal(tarn__xbuckets_open(&s), 0);
  tarn__xepoch e;
  assert_int_equal(tarn__xchain_mint(m, "node-c", TARN__X_CLASS_EXPRESS, &s, &e), 0);
  char key[TARN__X_SLOT_KEY_MAX + 1];
  tarn_buf f;
  for (uint64_t slot = 0; slot < 3; slot++) {
    assert_int_equal(tarn__xslot_key(key, sizeof key, "node-c", e.epoch, slot), 0);
    flight(slot, &f);
    for (size_t b = 0; b < (slot < 2 ? 2u : 1u); b++)
      assert_int_equal(tarn_objstore_put(s.b[b].store, key, f.data, f.len), 0);
    tarn_buf_free(&f);
  }
  /* slots 0 and 1 committed, one copy of slot 2: repaired, cut 3 */
  assert_int_equal(run(out, sizeof out,
                       "'%s' express fence --home '%s/home' --star node-c --timeout-ms 0 --json",
                       bin, dir),
                   0);
  assert_non_null(strstr(out, "\"cut\": 3"));
  assert_int_equal(
      run(out, sizeof out, "'%s' express fence --home '%s/home' --star node-c", bin, dir), 0);
  assert_non_null(strstr(out, "already fenced"));
  /* a straggler at cut + 1; the writer "crashed" before absorbing anything */
  assert_int_equal(tarn__xslot_key(key, sizeof key, "node-c", e.epoch, 4), 0);
  flight(4, &f);
  assert_int_equal(tarn_objstore_put(s.b[2].store, key, f.data, f.len), 0);
  tarn_buf_free(&f);
  settle(out, sizeof out);
  assert_non_null(strstr(out, "\"absorbed\": 3"));
  assert_non_null(strstr(out, "\"deleted\": 1"));
  assert_non_null(strstr(out, "\"poison_kept\": 2"));
  assert_int_equal(tarn_objstore_head(s.b[2].store, key, NULL), TARN_ENOTFOUND);
  /* absorbed into the WAL root, the checkpoint at the cut */
  snprintf(uri, sizeof uri, "file://%s/home/wal", dir);
  tarn_objstore *wal;
  assert_int_equal(tarn_objstore_open(uri, &wal), 0);
  tarn_objstore_listing l;
  assert_int_equal(tarn_objstore_list(wal, "", NULL, 10, &l), 0);
  assert_true(l.n >= 1);
  tarn_objstore_listing_free(&l);
  tarn_objstore_close(wal);
  tarn__xepoch_free(&e);
  assert_int_equal(tarn__xepoch_load(m, "node-c", TARN__X_CLASS_EXPRESS, 1, &e), 0);
  assert_int_equal(e.checkpoint, 3);
  /* settling again absorbs nothing twice and finds nothing to delete */
  settle(out, sizeof out);
  assert_non_null(strstr(out, "\"absorbed\": 0"));
  assert_non_null(strstr(out, "\"deleted\": 0"));
  assert_int_equal(
      run(out, sizeof out, "'%s' fsck --home '%s/home' --express-star node-c", bin, dir), 0);
  /* a hole below the cut: slot 1 loses a copy */
  assert_int_equal(tarn__xslot_key(key, sizeof key, "node-c", e.epoch, 1), 0);
  assert_int_equal(tarn_objstore_delete(s.b[0].store, key), 0);
  assert_int_equal(tarn_objstore_delete(s.b[1].store, key), 0);
  assert_int_equal(tarn_objstore_delete(s.b[2].store, key), 0);
  assert_int_equal(tarn_objstore_put(s.b[2].store, key, "x", 0), 0); /* foreign, not a flight */
  assert_int_equal(
      run(out, sizeof out, "'%s' fsck --home '%s/home' --express-star node-c --json", bin, dir), 1);
  assert_non_null(strstr(out, "express-hole"));
  /* the library check: a checkpoint past the cut, a cut that is not dead */
  tarn_fsck_report r = {0};
  assert_int_equal(tarn__xepoch_advance(m, &e, TARN__XCUR_CHECKPOINT, 5), 0);
  assert_int_equal(tarn__xslot_key(key, sizeof key, "node-c", e.epoch, 3), 0);
  assert_int_equal(tarn_objstore_delete(s.b[0].store, key), 0); /* (never in real life) */
  assert_int_equal(tarn_express_fsck(m, "node-c", &r), 0);
  int cursor = 0, cut = 0, hole = 0;
  for (size_t i = 0; i < r.n_faults; i++) {
    cursor += strcmp(r.faults[i].kind, "express-cursor") == 0;
    cut += strcmp(r.faults[i].kind, "express-cut") == 0;
    hole += strcmp(r.faults[i].kind, "express-hole") == 0;
  }
  assert_int_equal(cursor, 1);
  assert_int_equal(cut, 1);
  assert_int_equal(hole, 1);
  tarn_fsck_report_free(&r);
  tarn__xepoch_free(&e);
  tarn__xbuckets_free(&s);
  tarn_meta_close(m);
}

int main(void) {
  bin = getenv("TARN_BIN");
  if (!bin) {
    fprintf(stderr, "TARN_BIN is not set (run through ctest)\n");
    return 1;
  }
  dir = tu_tmpdir("xcli");
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(inspect_slot_and_poison),
      cmocka_unit_test(fence_settle_fsck_through_the_command),
  };
  int rc = cmocka_run_group_tests(tests, NULL, NULL);
  tu_rmtree(dir);
  free(dir);
  return rc;
}
