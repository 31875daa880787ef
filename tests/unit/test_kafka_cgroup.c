/* KIP-848 consumer groups (src/kafka/cgroup.c, cassign.c; issue 37) without
 * the wire: the assignors as pure functions (deterministic, balanced within
 * one partition, sticky; range co-partitioned), and the coordinator over the
 * metadata store: epoch bumps, revocation before reassignment (the safety
 * rule: a partition is never held by two members; planted bug
 * kcgroup-double-assign), fencing of a stale epoch, OffsetCommit with the
 * member epoch, session expiry, classic/consumer mismatch, and a second
 * coordinator taking the group over from its record.
 * ctest-variants: mem sqlite etcd */
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kafka/group.h"
#include "kafka/group_internal.h"
#include "tarn/error.h"
#include "tarn/meta.h"
#include "tarn/testing.h"
#include "tu_log.h"

static const uint8_t T_ID[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1};
static const uint8_t U_ID[16] = {2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2};

/* The catalog: "t" and "u", six partitions each. */
static int resolve(void *arg, const char *topic, uint8_t id[16], int32_t *partitions) {
  (void)arg;
  if (strcmp(topic, "t") && strcmp(topic, "u"))
    return TARN_ENOTFOUND;
  memcpy(id, topic[0] == 't' ? T_ID : U_ID, 16);
  *partitions = 6;
  return 0;
}

/* ---- the assignors ------------------------------------------------------------ */

static char *TOPIC_T[] = {"t"};
static char *TOPIC_TU[] = {"t", "u"};

static size_t count_of(const tarn__kc_set *s) { return s->n; }

static int disjoint_cover(tarn__kc_amember *m, size_t n, size_t total) {
  size_t sum = 0;
  for (size_t i = 0; i < n; i++) {
    sum += m[i].out.n;
    for (size_t j = 0; j < m[i].out.n; j++)
      for (size_t k = i + 1; k < n; k++)
        if (tarn__kc_set_has(&m[k].out, m[i].out.v[j].id, m[i].out.v[j].partition))
          return 0;
  }
  return sum == total;
}

static void assignors(void **state) {
  (void)state;
  tarn__kc_topic t[2] = {{"t", {0}, 6}, {"u", {0}, 7}};
  memcpy(t[0].id, T_ID, 16), memcpy(t[1].id, U_ID, 16);
  /* uniform: 13 partitions over 3 members, balanced within one */
  tarn__kc_amember m[3] = {
      {"c", TOPIC_TU, 2, NULL, {0}}, {"a", TOPIC_TU, 2, NULL, {0}}, {"b", TOPIC_TU, 2, NULL, {0}}};
  assert_int_equal(tarn__kc_assign("uniform", t, 2, m, 3), 0);
  assert_true(disjoint_cover(m, 3, 13));
  for (int i = 0; i < 3; i++)
    assert_true(count_of(&m[i].out) == 4 || count_of(&m[i].out) == 5);
  /* deterministic: the same members in another order get the same */
  tarn__kc_amember r[3] = {m[1], m[2], m[0]};
  for (int i = 0; i < 3; i++)
    r[i].out = (tarn__kc_set){0};
  assert_int_equal(tarn__kc_assign("uniform", t, 2, r, 3), 0);
  for (int i = 0; i < 3; i++) {
    assert_int_equal(r[i].out.n, m[(i + 1) % 3].out.n);
    assert_memory_equal(r[i].out.v, m[(i + 1) % 3].out.v, r[i].out.n * sizeof *r[i].out.v);
  }
  /* sticky: a fourth member takes partitions, the others keep the rest */
  tarn__kc_amember s[4] = {{"a", TOPIC_TU, 2, &m[1].out, {0}},
                           {"b", TOPIC_TU, 2, &m[2].out, {0}},
                           {"c", TOPIC_TU, 2, &m[0].out, {0}},
                           {"d", TOPIC_TU, 2, NULL, {0}}};
  assert_int_equal(tarn__kc_assign("uniform", t, 2, s, 4), 0);
  assert_true(disjoint_cover(s, 4, 13));
  size_t moved = 0;
  for (int i = 0; i < 3; i++) {
    assert_true(s[i].out.n == 3 || s[i].out.n == 4);
    for (size_t j = 0; j < s[i].out.n; j++)
      moved += !tarn__kc_set_has(s[i].current, s[i].out.v[j].id, s[i].out.v[j].partition);
  }
  assert_int_equal(moved, 0); /* only the new member's partitions changed hands */
  assert_int_equal(s[3].out.n, 13 - s[0].out.n - s[1].out.n - s[2].out.n);
  /* range: co-partitioned topics assigned alike, by member ID */
  tarn__kc_topic cp[2] = {{"t", {0}, 6}, {"u", {0}, 6}};
  memcpy(cp[0].id, T_ID, 16), memcpy(cp[1].id, U_ID, 16);
  tarn__kc_amember g[2] = {{"y", TOPIC_TU, 2, NULL, {0}}, {"x", TOPIC_TU, 2, NULL, {0}}};
  assert_int_equal(tarn__kc_assign("range", cp, 2, g, 2), 0);
  assert_true(disjoint_cover(g, 2, 12));
  for (int p = 0; p < 6; p++) {
    tarn__kc_amember *o = p < 3 ? &g[1] : &g[0];
    assert_true(tarn__kc_set_has(&o->out, T_ID, p) && tarn__kc_set_has(&o->out, U_ID, p));
  }
  /* a member subscribing to "t" only gets none of "u" */
  tarn__kc_amember h[2] = {{"a", TOPIC_T, 1, NULL, {0}}, {"b", TOPIC_TU, 2, NULL, {0}}};
  assert_int_equal(tarn__kc_assign("uniform", cp, 2, h, 2), 0);
  assert_true(disjoint_cover(h, 2, 12));
  for (size_t j = 0; j < h[0].out.n; j++)
    assert_memory_equal(h[0].out.v[j].id, T_ID, 16);
  assert_int_equal(tarn__kc_assign("sticky", cp, 2, h, 0), TARN_EINVAL);
  for (int i = 0; i < 3; i++)
    tarn__kc_set_free(&m[i].out), tarn__kc_set_free(&r[i].out);
  for (int i = 0; i < 4; i++)
    tarn__kc_set_free(&s[i].out);
  for (int i = 0; i < 2; i++)
    tarn__kc_set_free(&g[i].out), tarn__kc_set_free(&h[i].out);
}

/* ---- the coordinator ------------------------------------------------------------ */

typedef struct fx {
  tarn_meta *m;
  char *uri;
  tarn__kgroups *g;
} fx;

static fx open_fx(void **state) {
  fx f;
  f.m = tu_meta_open((const char *)*state, &f.uri);
  tarn__kgroups_options o = {.min_session_ms = 10, .consumer_session_ms = 1000};
  assert_int_equal(tarn__kgroups_open(f.m, &o, &f.g), 0);
  return f;
}

static void close_fx(fx *f) {
  tarn__kgroups_close(f->g);
  tu_meta_done(f->m, f->uri);
}

static const char *const SUB[] = {"t"};

/* One heartbeat; owned: the partitions of "t" it reports (NULL: unchanged). */
static int16_t hb(tarn__kgroups *g, const char *member, int32_t epoch, const tarn__kc_set *owned,
                  int64_t now, tarn__kc_hb_resp *r) {
  tarn__kc_hb_req q = {.group_id = "cg",
                       .member_id = member,
                       .client_id = "c",
                       .client_host = "/127.0.0.1",
                       .member_epoch = epoch,
                       .rebalance_timeout_ms = epoch == 0 ? 5000 : -1,
                       .topics = epoch == 0 ? SUB : NULL,
                       .n_topics = epoch == 0 ? 1 : 0,
                       .owned = owned ? owned->v : NULL,
                       .n_owned = owned ? owned->n : 0,
                       .has_owned = epoch == 0 || owned != NULL,
                       .version = 1};
  tarn__kgroups_cheartbeat(g, &q, resolve, NULL, now, r);
  return r->error;
}

/* No partition in two members' answers. */
static void assert_disjoint(const tarn__kc_set *a, const tarn__kc_set *b) {
  for (size_t i = 0; i < a->n; i++)
    assert_false(tarn__kc_set_has(b, a->v[i].id, a->v[i].partition));
}

static void revoke_before_reassign(void **state) {
  fx f = open_fx(state);
  tarn__kc_hb_resp a, b;
  /* a joins: the group epoch is bumped and it gets all six at once */
  assert_int_equal(hb(f.g, "a", 0, NULL, 0, &a), 0);
  int32_t ea = a.member_epoch;
  assert_true(ea >= 1);
  assert_int_equal(a.assignment.n, 6);
  assert_int_equal(a.heartbeat_ms, 5000);
  tarn__kc_set owned_a = {0};
  tarn__kc_set_copy(&owned_a, &a.assignment);
  tarn__kc_hb_resp_free(&a);
  /* b joins: a new group epoch; its target's partitions are still a's */
  assert_int_equal(hb(f.g, "b", 0, NULL, 10, &b), 0);
  int32_t eb = b.member_epoch;
  assert_true(eb > ea);
  assert_int_equal(b.assignment.n, 0); /* planted kcgroup-double-assign: 3 */
  tarn__kc_hb_resp_free(&b);
  /* a is told to revoke three (its epoch stays until it has) */
  assert_int_equal(hb(f.g, "a", ea, &owned_a, 20, &a), 0);
  assert_int_equal(a.member_epoch, ea);
  assert_int_equal(a.assignment.n, 3);
  tarn__kc_set kept = {0};
  tarn__kc_set_copy(&kept, &a.assignment);
  tarn__kc_hb_resp_free(&a);
  /* b asks again before a reported the revocation: still nothing */
  assert_int_equal(hb(f.g, "b", eb, NULL, 30, &b), 0);
  assert_int_equal(b.assignment.n, 0);
  tarn__kc_hb_resp_free(&b);
  /* a reports only what it kept: the new epoch; then b gets the other three */
  assert_int_equal(hb(f.g, "a", ea, &kept, 40, &a), 0);
  assert_int_equal(a.member_epoch, eb);
  assert_int_equal(a.assignment.n, 3);
  assert_int_equal(hb(f.g, "b", eb, NULL, 50, &b), 0);
  assert_int_equal(b.assignment.n, 3);
  assert_disjoint(&a.assignment, &b.assignment);
  tarn__kc_desc d;
  tarn__kgroups_cdescribe(f.g, "cg", 60, &d);
  assert_int_equal(d.error, 0);
  assert_string_equal(d.state, "Stable");
  assert_int_equal(d.n_members, 2);
  assert_int_equal(d.group_epoch, eb);
  assert_string_equal(d.assignor, "uniform");
  tarn__kc_desc_free(&d);
  tarn__kc_hb_resp_free(&a);
  tarn__kc_hb_resp_free(&b);
  /* b leaves: its partitions are free at once, a gets all six */
  assert_int_equal(hb(f.g, "b", -1, NULL, 70, &b), 0);
  assert_int_equal(b.member_epoch, -1);
  tarn__kc_hb_resp_free(&b);
  assert_int_equal(hb(f.g, "a", eb, &kept, 80, &a), 0);
  assert_true(a.member_epoch > eb);
  assert_int_equal(a.assignment.n, 6);
  tarn__kc_hb_resp_free(&a);
  tarn__kc_set_free(&owned_a), tarn__kc_set_free(&kept);
  close_fx(&f);
}

static void fencing_and_commits(void **state) {
  fx f = open_fx(state);
  tarn__kc_hb_resp a;
  assert_int_equal(hb(f.g, "zz", 3, NULL, 0, &a), TARN__KG_GROUP_ID_NOT_FOUND);
  assert_int_equal(hb(f.g, "a", 0, NULL, 0, &a), 0);
  int32_t e = a.member_epoch;
  tarn__kc_hb_resp_free(&a);
  assert_int_equal(hb(f.g, "a", e + 1, NULL, 10, &a), TARN__KG_FENCED_MEMBER_EPOCH);
  assert_int_equal(a.member_epoch, -1);
  assert_int_equal(hb(f.g, "zz", e, NULL, 10, &a), TARN__KG_UNKNOWN_MEMBER_ID);
  /* an unknown assignor, a regex */
  tarn__kc_hb_req q = {.group_id = "cg",
                       .member_id = "a",
                       .member_epoch = e,
                       .rebalance_timeout_ms = -1,
                       .assignor = "sticky",
                       .version = 1};
  tarn__kgroups_cheartbeat(f.g, &q, resolve, NULL, 10, &a);
  assert_int_equal(a.error, TARN__KG_UNSUPPORTED_ASSIGNOR);
  q.assignor = NULL, q.regex = "t.*";
  tarn__kgroups_cheartbeat(f.g, &q, resolve, NULL, 10, &a);
  assert_int_equal(a.error, TARN__KG_INVALID_REQUEST);
  /* OffsetCommit with the member epoch as the generation */
  tarn__koffset o = {.topic = "t", .partition = 0, .offset = 7, .leader_epoch = -1};
  assert_int_equal(tarn__kgroups_commit(f.g, "cg", e, "a", NULL, &o, 1, 20), 0);
  assert_int_equal(tarn__kgroups_commit(f.g, "cg", e + 5, "a", NULL, &o, 1, 20),
                   TARN__KG_STALE_MEMBER_EPOCH);
  assert_int_equal(tarn__kgroups_commit(f.g, "cg", e, "zz", NULL, &o, 1, 20),
                   TARN__KG_UNKNOWN_MEMBER_ID);
  assert_int_equal(tarn__kgroups_commit(f.g, "cg", -1, "", NULL, &o, 1, 20),
                   TARN__KG_UNKNOWN_MEMBER_ID);
  /* a second member bumps a's epoch; a commit of the previous epoch is
   * still a's (sent before the heartbeat came back) */
  tarn__kc_hb_resp b;
  assert_int_equal(hb(f.g, "b", 0, NULL, 30, &b), 0);
  tarn__kc_set all = {0};
  for (int p = 0; p < 6; p++)
    tarn__kc_set_add(&all, T_ID, p);
  assert_int_equal(hb(f.g, "a", e, &all, 40, &a), 0); /* revoke 3 */
  tarn__kc_set_copy(&all, &a.assignment);
  tarn__kc_hb_resp_free(&a);
  assert_int_equal(hb(f.g, "a", e, &all, 50, &a), 0); /* the new epoch */
  assert_true(a.member_epoch > e);
  assert_int_equal(tarn__kgroups_commit(f.g, "cg", e, "a", NULL, &o, 1, 60), 0);
  assert_int_equal(tarn__kgroups_commit(f.g, "cg", a.member_epoch, "a", NULL, &o, 1, 60), 0);
  /* the previous epoch is accepted in a heartbeat only with partitions it has */
  tarn__kc_hb_resp x;
  assert_int_equal(hb(f.g, "a", e, &all, 70, &x), 0);
  tarn__kc_hb_resp_free(&x);
  tarn__kc_hb_resp_free(&a), tarn__kc_hb_resp_free(&b);
  tarn__kc_set_free(&all);
  close_fx(&f);
}

static void session_expiry(void **state) {
  fx f = open_fx(state);
  tarn__kc_hb_resp a, b;
  assert_int_equal(hb(f.g, "a", 0, NULL, 0, &a), 0);
  assert_int_equal(hb(f.g, "b", 0, NULL, 0, &b), 0);
  int32_t eb = b.member_epoch;
  tarn__kc_hb_resp_free(&a), tarn__kc_hb_resp_free(&b);
  /* b keeps heartbeating, a is silent past its session (1000 ms here) */
  assert_int_equal(hb(f.g, "b", eb, NULL, 900, &b), 0);
  tarn__kc_hb_resp_free(&b);
  tarn__kgroups_tick(f.g, 800);
  tarn__kc_desc d;
  tarn__kgroups_cdescribe(f.g, "cg", 800, &d);
  assert_int_equal(d.n_members, 2);
  tarn__kc_desc_free(&d);
  tarn__kgroups_tick(f.g, 1500);
  tarn__kgroups_cdescribe(f.g, "cg", 1500, &d);
  assert_int_equal(d.n_members, 1);
  assert_string_equal(d.members[0].member_id, "b");
  tarn__kc_desc_free(&d);
  assert_int_equal(hb(f.g, "a", 1, NULL, 1500, &a), TARN__KG_UNKNOWN_MEMBER_ID);
  /* b gets all six: a's are free */
  assert_int_equal(hb(f.g, "b", eb, NULL, 1600, &b), 0);
  assert_int_equal(b.assignment.n, 6);
  tarn__kc_hb_resp_free(&b);
  close_fx(&f);
}

static void on_join(void *arg, const tarn__kjoin_resp *r) { *(int16_t *)arg = r->error; }

static void protocol_mismatch(void **state) {
  fx f = open_fx(state);
  tarn__kc_hb_resp a;
  assert_int_equal(hb(f.g, "a", 0, NULL, 0, &a), 0);
  tarn__kc_hb_resp_free(&a);
  static const tarn__kg_protocol P[] = {{"range", (const uint8_t *)"m", 1}};
  tarn__kjoin_req j = {.group_id = "cg",
                       .member_id = "",
                       .client_id = "c",
                       .client_host = "h",
                       .protocol_type = "consumer",
                       .session_timeout_ms = 10000,
                       .rebalance_timeout_ms = 10000,
                       .version = 3,
                       .protocols = P,
                       .n_protocols = 1};
  int16_t e = -99;
  tarn__kgroups_join(f.g, &j, 10, on_join, &e);
  assert_int_equal(e, TARN__KG_INCONSISTENT_GROUP_PROTOCOL);
  /* a classic group with members refuses the consumer protocol */
  j.group_id = "classic";
  tarn__kgroups_join(f.g, &j, 10, on_join, &e);
  assert_int_equal(e, 0);
  tarn__kc_hb_req q = {.group_id = "classic",
                       .member_id = "a",
                       .member_epoch = 0,
                       .rebalance_timeout_ms = 5000,
                       .topics = SUB,
                       .n_topics = 1,
                       .has_owned = 1,
                       .version = 1};
  tarn__kgroups_cheartbeat(f.g, &q, resolve, NULL, 20, &a);
  assert_int_equal(a.error, TARN__KG_INCONSISTENT_GROUP_PROTOCOL);
  /* once the consumer group is empty, a classic member may take it */
  assert_int_equal(hb(f.g, "a", -1, NULL, 30, &a), 0);
  tarn__kc_hb_resp_free(&a);
  j.group_id = "cg";
  tarn__kgroups_join(f.g, &j, 40, on_join, &e);
  assert_int_equal(e, 0);
  close_fx(&f);
}

static void takeover(void **state) {
  fx f = open_fx(state);
  tarn__kc_hb_resp a, b;
  assert_int_equal(hb(f.g, "a", 0, NULL, 0, &a), 0);
  tarn__kc_set owned = {0};
  tarn__kc_set_copy(&owned, &a.assignment);
  int32_t ea = a.member_epoch;
  tarn__kc_hb_resp_free(&a);
  assert_int_equal(hb(f.g, "b", 0, NULL, 10, &b), 0);
  int32_t eb = b.member_epoch;
  tarn__kc_hb_resp_free(&b);
  assert_int_equal(hb(f.g, "a", ea, &owned, 20, &a), 0); /* revoking 3 */
  tarn__kc_set_copy(&owned, &a.assignment);
  tarn__kc_hb_resp_free(&a);
  /* another node takes the group over from its record: the members, their
   * epochs, a's revocation in progress */
  tarn__kgroups *g2;
  tarn__kgroups_options o = {.min_session_ms = 10, .consumer_session_ms = 1000};
  assert_int_equal(tarn__kgroups_open(f.m, &o, &g2), 0);
  tarn__kc_desc d;
  tarn__kgroups_cdescribe(g2, "cg", 0, &d);
  assert_int_equal(d.error, 0);
  assert_int_equal(d.n_members, 2);
  assert_int_equal(d.group_epoch, eb);
  assert_string_equal(d.state, "Reconciling");
  tarn__kc_desc_free(&d);
  assert_int_equal(hb(g2, "b", eb, NULL, 30, &b), 0);
  assert_int_equal(b.assignment.n, 0); /* a has not revoked yet */
  tarn__kc_hb_resp_free(&b);
  assert_int_equal(hb(g2, "a", ea, &owned, 40, &a), 0);
  assert_int_equal(a.member_epoch, eb);
  assert_int_equal(hb(g2, "b", eb, NULL, 50, &b), 0);
  assert_int_equal(b.assignment.n, 3);
  assert_disjoint(&a.assignment, &b.assignment);
  tarn__kc_hb_resp_free(&a), tarn__kc_hb_resp_free(&b);
  /* the old node reads the newer record back at its next request */
  assert_int_equal(hb(f.g, "a", eb, NULL, 60, &a), 0);
  assert_int_equal(a.assignment.n, 3);
  tarn__kc_hb_resp_free(&a);
  tarn__kgroups_close(g2);
  tarn__kc_set_free(&owned);
  close_fx(&f);
}

/* A member asking for the range assignor makes it the group's; a member that
 * does not revoke within its rebalance timeout is removed (Kafka fences it)
 * and its partitions go to the other. */
static void range_and_revocation_timeout(void **state) {
  fx f = open_fx(state);
  tarn__kc_hb_req q = {.group_id = "cg",
                       .member_id = "a",
                       .client_id = "c",
                       .client_host = "h",
                       .member_epoch = 0,
                       .rebalance_timeout_ms = 300,
                       .topics = SUB,
                       .n_topics = 1,
                       .assignor = "range",
                       .has_owned = 1,
                       .version = 1};
  tarn__kc_hb_resp a, b;
  tarn__kgroups_cheartbeat(f.g, &q, resolve, NULL, 0, &a);
  assert_int_equal(a.error, 0);
  assert_int_equal(a.assignment.n, 6);
  int32_t ea = a.member_epoch;
  tarn__kc_set all = {0};
  tarn__kc_set_copy(&all, &a.assignment);
  tarn__kc_hb_resp_free(&a);
  q.member_id = "b";
  tarn__kgroups_cheartbeat(f.g, &q, resolve, NULL, 10, &b);
  assert_int_equal(b.error, 0);
  tarn__kc_hb_resp_free(&b);
  /* range: a (first by ID) keeps 0-2 and revokes 3-5 */
  assert_int_equal(hb(f.g, "a", ea, &all, 20, &a), 0);
  assert_int_equal(a.assignment.n, 3);
  for (int p = 0; p < 3; p++)
    assert_true(tarn__kc_set_has(&a.assignment, T_ID, p));
  tarn__kc_hb_resp_free(&a);
  tarn__kc_desc d;
  tarn__kgroups_cdescribe(f.g, "cg", 30, &d);
  assert_string_equal(d.assignor, "range");
  assert_string_equal(d.state, "Reconciling");
  tarn__kc_desc_free(&d);
  /* a never reports the revocation: past its rebalance timeout it is gone */
  tarn__kgroups_tick(f.g, 200);
  tarn__kgroups_cdescribe(f.g, "cg", 200, &d);
  assert_int_equal(d.n_members, 2);
  tarn__kc_desc_free(&d);
  tarn__kgroups_tick(f.g, 400);
  tarn__kgroups_cdescribe(f.g, "cg", 400, &d);
  assert_int_equal(d.n_members, 1);
  tarn__kc_desc_free(&d);
  assert_int_equal(hb(f.g, "b", ea + 1, NULL, 410, &b), 0);
  assert_int_equal(b.assignment.n, 6);
  tarn__kc_hb_resp_free(&b);
  tarn__kc_set_free(&all);
  close_fx(&f);
}

int main(int argc, char **argv) {
  const char *v = argc > 1 ? argv[1] : "mem";
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(assignors),
      cmocka_unit_test_prestate(revoke_before_reassign, (void *)v),
      cmocka_unit_test_prestate(fencing_and_commits, (void *)v),
      cmocka_unit_test_prestate(session_expiry, (void *)v),
      cmocka_unit_test_prestate(protocol_mismatch, (void *)v),
      cmocka_unit_test_prestate(takeover, (void *)v),
      cmocka_unit_test_prestate(range_and_revocation_timeout, (void *)v),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
