/* Express epochs and slots (issue 14, "Star, chain, epoch", "Slots"): the
 * chain's CAS mint, a burned number, the epoch record's codec and CAS
 * updates (cursors only raised; a different cut is refused loudly), slot keys,
 * poison bytes, and the writer's create-only PUT that counts only its own
 * bytes (epochs-model §7.5). */
#include "testutil.h"

#include <stdio.h>
#include <string.h>

#include "express/express_internal.h"
#include "tarn/meta.h"
#include "tarn/objstore.h"
#include "tarn/testing.h"
#include "tarn/wal.h"

static void three(tarn__xbuckets *s, const char *pfx) {
  memset(s, 0, sizeof *s);
  char u[64];
  for (int i = 0; i < 3; i++) {
    snprintf(u, sizeof u, "mem:%s%d@zone-%c", pfx, i, 'a' + i);
    assert_int_equal(tarn__xbuckets_add(s, u), 0);
  }
  s->w = 2;
  s->win = 8;
}

static void bucket_set_parse_and_record(void **state) {
  tarn__xbuckets s = {0};
  assert_int_equal(tarn__xbuckets_add(&s, "file:///tmp/x@eu-1a"), 0);
  assert_int_equal(tarn__xbuckets_add(&s, "s3://user@host/b"), 0); /* no zone: '/' after '@' */
  assert_int_equal(tarn__xbuckets_add(&s, "mem:b3"), 0);
  assert_string_equal(s.b[0].uri, "file:///tmp/x");
  assert_string_equal(s.b[0].zone, "eu-1a");
  assert_string_equal(s.b[1].uri, "s3://user@host/b");
  assert_string_equal(s.b[1].zone, "");
  s.w = 4;
  s.win = 8;
  assert_int_equal(tarn__xbuckets_check(&s), TARN_EINVAL); /* W > K */
  s.w = 2;
  s.win = 0;
  assert_int_equal(tarn__xbuckets_check(&s), TARN_EINVAL);
  s.win = 8;
  assert_int_equal(tarn__xbuckets_check(&s), 0);
  tarn_meta *m;
  assert_int_equal(tarn_meta_open("mem:xep-deploy", &m), 0);
  tarn__xbuckets got;
  assert_int_equal(tarn__xbuckets_load(m, &got), TARN_ENOTFOUND);
  int created = 0;
  assert_int_equal(tarn__xbuckets_record(m, &s, &created), 0);
  assert_int_equal(created, 1);
  assert_int_equal(tarn__xbuckets_record(m, &s, &created), 0); /* the deployment's stays */
  assert_int_equal(created, 0);
  assert_int_equal(tarn__xbuckets_load(m, &got), 0);
  assert_int_equal(got.k, 3);
  assert_int_equal(got.w, 2);
  assert_int_equal(got.win, 8);
  assert_string_equal(got.b[2].uri, "mem:b3");
  assert_string_equal(got.b[0].zone, "eu-1a");
  tarn__xbuckets_free(&got);
  tarn__xbuckets_free(&s);
  tarn_meta_close(m);
}

static void mint_is_cas_and_records_constants(void **state) {
  tarn_meta *m;
  assert_int_equal(tarn_meta_open("mem:xep-mint", &m), 0);
  tarn__xbuckets s;
  three(&s, "xm");
  uint64_t head = 99;
  assert_int_equal(tarn__xchain_head(m, "node-1", "express", &head), 0);
  assert_int_equal(head, 0);
  tarn__xepoch a, b;
  assert_int_equal(tarn__xchain_mint(m, "node-1", "express", &s, &a), 0);
  assert_int_equal(tarn__xchain_mint(m, "node-1", "express", &s, &b), 0);
  assert_int_equal(a.epoch, 1);
  assert_int_equal(b.epoch, 2);
  assert_int_equal(b.state, TARN__XEPOCH_OPEN);
  /* one head per class: a standard chain on the same star is separate */
  tarn__xepoch c;
  assert_int_equal(tarn__xchain_mint(m, "node-1", "standard", &s, &c), 0);
  assert_int_equal(c.epoch, 1);
  tarn__xepoch l;
  assert_int_equal(tarn__xepoch_load(m, "node-1", "express", 2, &l), 0);
  assert_int_equal(l.buckets.k, 3);
  assert_int_equal(l.buckets.w, 2);
  assert_int_equal(l.buckets.win, 8);
  assert_string_equal(l.buckets.b[1].zone, "zone-b");
  assert_int_equal(l.checkpoint, 0);
  assert_int_equal(l.has_cut, 0);
  tarn__xepoch_free(&l);
  /* A crash between the increment and the record burns the number: the
   * create of the record fails (the write after the CAS), so no record of 3
   * exists and the next mint is 4, never 3 again. */
  assert_int_equal(tarn_meta_inject_fault_after(m, TARN_META_FAULT_FAIL, 1, 1), 0);
  tarn__xepoch burned;
  assert_int_not_equal(tarn__xchain_mint(m, "node-1", "express", &s, &burned), 0);
  assert_int_equal(tarn__xchain_head(m, "node-1", "express", &head), 0);
  assert_int_equal(head, 3);
  assert_int_equal(tarn__xepoch_load(m, "node-1", "express", 3, &l), TARN_ENOTFOUND);
  tarn__xepoch d;
  assert_int_equal(tarn__xchain_mint(m, "node-1", "express", &s, &d), 0);
  assert_int_equal(d.epoch, 4);
  tarn__xepoch_free(&a);
  tarn__xepoch_free(&b);
  tarn__xepoch_free(&c);
  tarn__xepoch_free(&d);
  tarn__xbuckets_free(&s);
  tarn_meta_close(m);
}

static void cursors_and_cut_by_cas(void **state) {
  tarn_meta *m;
  assert_int_equal(tarn_meta_open("mem:xep-cas", &m), 0);
  tarn__xbuckets s;
  three(&s, "xc");
  tarn__xepoch e, other;
  assert_int_equal(tarn__xchain_mint(m, "n", "express", &s, &e), 0);
  assert_int_equal(tarn__xepoch_load(m, "n", "express", e.epoch, &other), 0);
  assert_int_equal(tarn__xepoch_advance(m, &e, TARN__XCUR_CHECKPOINT, 5), 0);
  /* a stale copy's CAS conflicts, re-reads, and never lowers the cursor */
  assert_int_equal(tarn__xepoch_advance(m, &other, TARN__XCUR_CHECKPOINT, 3), 0);
  assert_int_equal(other.checkpoint, 5);
  assert_int_equal(tarn__xepoch_advance(m, &other, TARN__XCUR_TRIMMED, 2), 0);
  assert_int_equal(tarn__xepoch_publish_cut(m, &e, 7), 0);
  assert_int_equal(e.state, TARN__XEPOCH_FENCED);
  assert_int_equal(e.trimmed, 2); /* the conflict re-read kept the other's change */
  assert_int_equal(tarn__xepoch_publish_cut(m, &other, 7), 0); /* the same cut: a read */
  assert_int_equal(tarn__xepoch_publish_cut(m, &other, 8), TARN_ECORRUPT); /* loud, no overwrite */
  assert_non_null(strstr(tarn_errmsg(), "disagreeing cut"));
  tarn__xepoch l;
  assert_int_equal(tarn__xepoch_load(m, "n", "express", e.epoch, &l), 0);
  assert_int_equal(l.cut, 7);
  assert_int_equal(l.checkpoint, 5);
  tarn__xepoch_free(&l);
  tarn__xepoch_free(&e);
  tarn__xepoch_free(&other);
  tarn__xbuckets_free(&s);
  tarn_meta_close(m);
}

/* Issue 30 item 6, confirmed: the end of an absorb cleared another settler's
 * pending intent. A begins [0, 1); B, from its own snapshot, resolves and
 * ends it and begins [1, 2); A's late end of [0, 1) found the checkpoint
 * past 1 and an intent not its own, and cleared it: B's puts then had no
 * intent for a crash to be resumed from. Now A's end leaves it standing. */
static void end_absorb_leaves_anothers_intent(void **state) {
  tarn_meta *m;
  assert_int_equal(tarn_meta_open("mem:xep-end", &m), 0);
  tarn__xbuckets s;
  three(&s, "xe");
  tarn__xepoch a, b;
  assert_int_equal(tarn__xchain_mint(m, "n", "express", &s, &a), 0);
  tarn__xintent x = {5, 0, 0, 1, 1}, y = {5, 1, 1, 2, 2};
  assert_int_equal(tarn__xepoch_begin_absorb(m, &a, 1, &x, 1), 0);
  assert_int_equal(tarn__xepoch_load(m, "n", "express", a.epoch, &b), 0);
  assert_int_equal(tarn__xepoch_end_absorb(m, &b, 1), 0);
  assert_int_equal(tarn__xepoch_begin_absorb(m, &b, 2, &y, 1), 0);
  assert_int_equal(tarn__xepoch_end_absorb(m, &a, 1), 0); /* A's, late */
  tarn__xepoch l;
  assert_int_equal(tarn__xepoch_load(m, "n", "express", a.epoch, &l), 0);
  assert_int_equal(l.checkpoint, 1);
  assert_int_equal(l.absorbing_to, 2); /* B's intent stands */
  assert_int_equal(l.n_absorbing, 1);
  tarn__xepoch_free(&l);
  assert_int_equal(tarn__xepoch_end_absorb(m, &b, 2), 0);
  assert_int_equal(tarn__xepoch_load(m, "n", "express", a.epoch, &l), 0);
  assert_int_equal(l.checkpoint, 2);
  assert_int_equal(l.n_absorbed, 1); /* [0, 2) of log 5, both runs recorded */
  assert_int_equal(l.absorbed[0].end, 2);
  tarn__xepoch_free(&l);
  tarn__xepoch_free(&a);
  tarn__xepoch_free(&b);
  tarn__xbuckets_free(&s);
  tarn_meta_close(m);
}

/* Issue 30 item 6, confirmed: a cut could be published below the
 * checkpoint (a fencer whose walk started from a stale checkpoint sees
 * absorbed and reclaimed slots empty and poisons one). Slots below the
 * checkpoint are absorbed, so acknowledged: such a cut is refused loudly,
 * nothing published. */
static void cut_below_checkpoint_refused(void **state) {
  tarn_meta *m;
  assert_int_equal(tarn_meta_open("mem:xep-cutcp", &m), 0);
  tarn__xbuckets s;
  three(&s, "xk");
  tarn__xepoch e;
  assert_int_equal(tarn__xchain_mint(m, "n", "express", &s, &e), 0);
  assert_int_equal(tarn__xepoch_advance(m, &e, TARN__XCUR_CHECKPOINT, 5), 0);
  assert_int_equal(tarn__xepoch_publish_cut(m, &e, 4), TARN_ECORRUPT);
  assert_non_null(strstr(tarn_errmsg(), "below the checkpoint"));
  assert_int_equal(e.has_cut, 0);
  assert_int_equal(tarn__xepoch_publish_cut(m, &e, 5), 0); /* at the checkpoint: fine */
  tarn__xepoch_free(&e);
  tarn__xbuckets_free(&s);
  tarn_meta_close(m);
}

static void record_codec_is_total(void **state) {
  tarn__xepoch e;
  const char *bad[] = {"", "[]", "{\"star\":\"n\"}",
                       "{\"star\":\"n\",\"class\":\"express\",\"epoch\":1,\"state\":\"fenced\","
                       "\"buckets\":[{\"uri\":\"mem:a\",\"zone\":\"\"}],\"w\":1,\"win\":1,"
                       "\"checkpoint\":0,\"trimmed\":0,\"rewritten\":0,\"created_ms\":0}"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
    assert_int_equal(tarn__xepoch_decode((const uint8_t *)bad[i], strlen(bad[i]), &e),
                     TARN_ECORRUPT);
  const char *good = "{\"star\":\"n\",\"class\":\"express\",\"epoch\":1,\"state\":\"fenced\","
                     "\"buckets\":[{\"uri\":\"mem:a\",\"zone\":\"\"}],\"w\":1,\"win\":1,"
                     "\"checkpoint\":0,\"trimmed\":0,\"rewritten\":0,\"created_ms\":0,\"cut\":3}";
  assert_int_equal(tarn__xepoch_decode((const uint8_t *)good, strlen(good), &e), 0);
  assert_int_equal(e.cut, 3);
  tarn_buf b;
  tarn_buf_init(&b);
  assert_int_equal(tarn__xepoch_encode(&e, &b), 0);
  assert_int_equal(b.len, strlen(good));
  assert_memory_equal(b.data, good, b.len);
  tarn_buf_free(&b);
  tarn__xepoch_free(&e);
}

static void slot_keys_and_poison(void **state) {
  char key[TARN__X_SLOT_KEY_MAX], star[TARN__X_STAR_MAX + 1];
  assert_int_equal(tarn__xslot_key(key, sizeof key, "node-1", 3, 42), 0);
  assert_string_equal(key, "node-1/00000000000000000003/00000000000000000042");
  uint64_t e, s;
  assert_int_equal(tarn__xslot_key_parse(key, star, &e, &s), 0);
  assert_string_equal(star, "node-1");
  assert_int_equal(e, 3);
  assert_int_equal(s, 42);
  assert_int_equal(tarn__xslot_key(key, sizeof key, "a/b", 1, 1), TARN_EINVAL);
  tarn_buf p;
  tarn_buf_init(&p);
  assert_int_equal(tarn__xpoison(&p, "node-1", 3, 42), 0);
  const char *want = "tarn-express-poison v1 node-1/3/42\n";
  assert_int_equal(p.len, strlen(want));
  assert_memory_equal(p.data, want, p.len);
  assert_int_equal(tarn__xslot_classify(p.data, p.len, "node-1", 3, 42), TARN__XOBS_POISON);
  /* another slot's poison is not this slot's */
  assert_int_equal(tarn__xslot_classify(p.data, p.len, "node-1", 3, 41), TARN__XOBS_FOREIGN);
  /* poison is never a WAL object */
  assert_true(tarn_wal_detect_version(p.data, p.len) < 0);
  tarn_buf_free(&p);
  tarn_wal_builder wb;
  tarn_wal_builder_init(&wb);
  assert_int_equal(tarn_wal_builder_add(&wb, 5, "abc", 3, 1), 0);
  tarn_buf f;
  tarn_buf_init(&f);
  assert_int_equal(tarn_wal_builder_finish(&wb, &f), 0);
  assert_int_equal(tarn__xslot_classify(f.data, f.len, "node-1", 3, 42), TARN__XOBS_FLIGHT);
  assert_int_equal(tarn__xslot_classify((const uint8_t *)"junk", 4, "n", 1, 1), TARN__XOBS_FOREIGN);
  tarn_buf_free(&f);
  tarn_wal_builder_free(&wb);
}

/* epochs-model §6 "writer trusts 412": a 412 on one's own create-only PUT is
 * counted only when the bucket holds one's own bytes. */
static void put_counts_only_own_bytes(void **state) {
  tarn_objstore *b;
  assert_int_equal(tarn_objstore_open("mem:xep-put", &b), 0);
  const char *key = "n/00000000000000000001/00000000000000000000";
  assert_int_equal(tarn__xslot_put(b, key, "flight", 6), 0);
  /* a retry of the same bytes: 412, read back, ours */
  assert_int_equal(tarn__xslot_put(b, key, "flight", 6), 0);
  /* a fencer's poison at the key: 412, read back, not ours */
  const char *k2 = "n/00000000000000000001/00000000000000000001";
  tarn_buf p;
  tarn_buf_init(&p);
  assert_int_equal(tarn__xpoison(&p, "n", 1, 1), 0);
  assert_int_equal(tarn_objstore_put(b, k2, p.data, p.len), 0);
  assert_int_equal(tarn__xslot_put(b, k2, "flight", 6), TARN_EEXIST);
  assert_non_null(strstr(tarn_errmsg(), "poison"));
  /* a reply lost after the object landed: read back, ours */
  const char *k3 = "n/00000000000000000001/00000000000000000002";
  assert_int_equal(
      tarn_objstore_mem_fault(b, TARN_MEM_OP_PUT, 1, 1, TARN_MEM_FAULT_AFTER, TARN_EUNKNOWN), 0);
  assert_int_equal(tarn__xslot_put(b, k3, "flight", 6), 0);
  /* a lost PUT that never landed: unknown, not a copy */
  const char *k4 = "n/00000000000000000001/00000000000000000003";
  assert_int_equal(
      tarn_objstore_mem_fault(b, TARN_MEM_OP_PUT, 1, 1, TARN_MEM_FAULT_BEFORE, TARN_EUNKNOWN), 0);
  assert_int_equal(tarn__xslot_put(b, k4, "flight", 6), TARN_EUNKNOWN);
  tarn_buf_free(&p);
  tarn_objstore_close(b);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(bucket_set_parse_and_record),
      cmocka_unit_test(mint_is_cas_and_records_constants),
      cmocka_unit_test(cursors_and_cut_by_cas),
      cmocka_unit_test(record_codec_is_total),
      cmocka_unit_test(end_absorb_leaves_anothers_intent),
      cmocka_unit_test(cut_below_checkpoint_refused),
      cmocka_unit_test(slot_keys_and_poison),
      cmocka_unit_test(put_counts_only_own_bytes),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
