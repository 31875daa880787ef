/* The consumer-group coordinator (src/kafka/group.c) without the wire:
 * member IDs, join and sync phases, protocol selection, heartbeats, session
 * and rebalance timeouts, leaving, static members refused, committed
 * offsets, and the state kept in the metadata store across a restart and a
 * change of coordinator. Against mem:, sqlite: and etcd:.
 * ctest-variants: mem sqlite etcd */
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kafka/group.h"
#include "kafka/group_internal.h"
#include "util/clock.h"
#include "tarn/meta.h"
#include "tarn/testing.h"
#include "tu_log.h"

typedef struct jres {
  int called;
  int16_t error;
  int32_t gen;
  char member[256], leader[256], proto[64];
  size_t n_members;
  char members[4][256];
} jres;

typedef struct sres {
  int called;
  int16_t error;
  char assignment[64];
} sres;

static void on_join(void *arg, const tarn__kjoin_resp *r) {
  jres *j = arg;
  j->called++;
  j->error = r->error;
  j->gen = r->generation;
  snprintf(j->member, sizeof j->member, "%s", r->member_id);
  snprintf(j->leader, sizeof j->leader, "%s", r->leader);
  snprintf(j->proto, sizeof j->proto, "%s", r->protocol_name ? r->protocol_name : "");
  j->n_members = r->n_members;
  for (size_t i = 0; i < r->n_members && i < 4; i++)
    snprintf(j->members[i], sizeof j->members[i], "%s", r->members[i].member_id);
}

static void on_sync(void *arg, int16_t error, const uint8_t *a, size_t len) {
  sres *s = arg;
  s->called++;
  s->error = error;
  snprintf(s->assignment, sizeof s->assignment, "%.*s", (int)len, a ? (const char *)a : "");
}

typedef struct fx {
  tarn_meta *m;
  char *uri;
  tarn__kgroups *g;
} fx;

static fx open_fx(void **state) {
  fx f;
  f.m = tu_meta_open((const char *)*state, &f.uri);
  tarn__kgroups_options o = {.min_session_ms = 10};
  assert_int_equal(tarn__kgroups_open(f.m, &o, &f.g), 0);
  return f;
}

static void close_fx(fx *f) {
  tarn__kgroups_close(f->g);
  tu_meta_done(f->m, f->uri);
}

static const tarn__kg_protocol RANGE[] = {{"range", (const uint8_t *)"r-meta", 6}};

/* A JoinGroup of version v with the given protocols. */
static void join(tarn__kgroups *g, const char *group, const char *member, int16_t v,
                 const tarn__kg_protocol *p, size_t n, int64_t now, jres *out) {
  memset(out, 0, sizeof *out);
  tarn__kjoin_req r = {.group_id = group,
                       .member_id = member,
                       .client_id = "cl",
                       .client_host = "/127.0.0.1",
                       .protocol_type = "consumer",
                       .session_timeout_ms = 1000,
                       .rebalance_timeout_ms = 2000,
                       .version = v,
                       .protocols = p,
                       .n_protocols = n};
  tarn__kgroups_join(g, &r, now, on_join, out);
}

static void sync_(tarn__kgroups *g, const char *group, int32_t gen, const char *member,
                  const tarn__ksync_assignment *a, size_t n, int64_t now, sres *out) {
  memset(out, 0, sizeof *out);
  tarn__kgroups_sync(g, group, gen, member, a, n, now, on_sync, out);
}

/* A member of its own in a new group: MEMBER_ID_REQUIRED, rejoin, generation
 * 1 with itself as leader, its assignment back from SyncGroup. */
static char *single_member(tarn__kgroups *g, const char *group, int64_t now) {
  jres j;
  join(g, group, "", 5, RANGE, 1, now, &j);
  assert_int_equal(j.called, 1);
  assert_int_equal(j.error, TARN__KG_MEMBER_ID_REQUIRED);
  assert_true(strncmp(j.member, "cl-", 3) == 0);
  char *id = strdup(j.member);
  join(g, group, id, 5, RANGE, 1, now, &j);
  assert_int_equal(j.called, 1);
  assert_int_equal(j.error, 0);
  assert_string_equal(j.member, id);
  assert_string_equal(j.leader, id);
  assert_string_equal(j.proto, "range");
  assert_int_equal(j.n_members, 1);
  tarn__ksync_assignment a = {id, (const uint8_t *)"p0,p1", 5};
  sres s;
  sync_(g, group, j.gen, id, &a, 1, now, &s);
  assert_int_equal(s.called, 1);
  assert_int_equal(s.error, 0);
  assert_string_equal(s.assignment, "p0,p1");
  return id;
}

static void join_sync_heartbeat(void **state) {
  fx f = open_fx(state);
  char *a = single_member(f.g, "g1", 0);
  assert_int_equal(tarn__kgroups_heartbeat(f.g, "g1", 1, a, 10), 0);
  assert_int_equal(tarn__kgroups_heartbeat(f.g, "g1", 2, a, 10), TARN__KG_ILLEGAL_GENERATION);
  assert_int_equal(tarn__kgroups_heartbeat(f.g, "g1", 1, "nobody", 10), TARN__KG_UNKNOWN_MEMBER_ID);
  assert_int_equal(tarn__kgroups_heartbeat(f.g, "nogroup", 1, a, 10), TARN__KG_UNKNOWN_MEMBER_ID);
  /* an ID never handed out cannot join */
  jres j;
  join(f.g, "g1", "made-up", 5, RANGE, 1, 20, &j);
  assert_int_equal(j.error, TARN__KG_UNKNOWN_MEMBER_ID);
  /* before v4 a member without an ID is admitted at once */
  join(f.g, "g2", "", 3, RANGE, 1, 20, &j);
  assert_int_equal(j.called, 1);
  assert_int_equal(j.error, 0);
  assert_int_equal(j.gen, 1);
  free(a);
  close_fx(&f);
}

/* A second member makes a rebalance: the first learns it from its heartbeat,
 * rejoins, both get generation 2, the followers' SyncGroup waits for the
 * leader's. A leave makes the next one. */
static void rebalance_on_join_and_leave(void **state) {
  fx f = open_fx(state);
  char *a = single_member(f.g, "g", 0);
  jres jb, ja;
  join(f.g, "g", "", 5, RANGE, 1, 10, &jb);
  char *b = strdup(jb.member);
  join(f.g, "g", b, 5, RANGE, 1, 10, &jb);
  assert_int_equal(jb.called, 0); /* waits for a */
  assert_int_equal(tarn__kgroups_heartbeat(f.g, "g", 1, a, 20), TARN__KG_REBALANCE_IN_PROGRESS);
  /* a commit of the old generation is still taken while the group rebalances */
  tarn__koffset o = {.topic = "t", .partition = 0, .offset = 5, .leader_epoch = -1};
  assert_int_equal(tarn__kgroups_commit(f.g, "g", 1, a, &o, 1, 20), 0);
  assert_int_equal(o.error, 0);
  join(f.g, "g", a, 5, RANGE, 1, 30, &ja);
  assert_int_equal(ja.called, 1);
  assert_int_equal(jb.called, 1);
  assert_int_equal(ja.error, 0);
  assert_int_equal(jb.error, 0);
  assert_int_equal(ja.gen, 2);
  assert_int_equal(jb.gen, 2);
  assert_string_equal(ja.leader, a); /* the leader stays */
  assert_int_equal(ja.n_members, 2);
  assert_int_equal(jb.n_members, 0);
  sres sa, sb;
  sync_(f.g, "g", 2, b, NULL, 0, 40, &sb);
  assert_int_equal(sb.called, 0);
  assert_int_equal(tarn__kgroups_heartbeat(f.g, "g", 2, b, 40), 0);
  tarn__ksync_assignment as[] = {{a, (const uint8_t *)"A", 1}, {b, (const uint8_t *)"B", 1}};
  sync_(f.g, "g", 2, a, as, 2, 50, &sa);
  assert_int_equal(sa.called, 1);
  assert_int_equal(sb.called, 1);
  assert_string_equal(sa.assignment, "A");
  assert_string_equal(sb.assignment, "B");
  /* a sync of the old generation */
  sync_(f.g, "g", 1, b, NULL, 0, 50, &sb);
  assert_int_equal(sb.error, TARN__KG_ILLEGAL_GENERATION);
  assert_int_equal(tarn__kgroups_leave(f.g, "g", b, 60), 0);
  assert_int_equal(tarn__kgroups_leave(f.g, "g", b, 60), TARN__KG_UNKNOWN_MEMBER_ID);
  assert_int_equal(tarn__kgroups_heartbeat(f.g, "g", 2, a, 70), TARN__KG_REBALANCE_IN_PROGRESS);
  join(f.g, "g", a, 5, RANGE, 1, 80, &ja);
  assert_int_equal(ja.called, 1);
  assert_int_equal(ja.gen, 3);
  assert_int_equal(ja.n_members, 1);
  free(a), free(b);
  close_fx(&f);
}

/* The protocol is the first in the leader's order every member supports; a
 * member sharing none is refused. */
static void protocol_selection(void **state) {
  fx f = open_fx(state);
  const tarn__kg_protocol lead[] = {{"roundrobin", (const uint8_t *)"L1", 2},
                                    {"range", (const uint8_t *)"L2", 2}};
  const tarn__kg_protocol other[] = {{"range", (const uint8_t *)"O1", 2},
                                     {"roundrobin", (const uint8_t *)"O2", 2}};
  const tarn__kg_protocol sticky[] = {{"sticky", NULL, 0}};
  jres ja, jb, jc;
  join(f.g, "g", "", 3, lead, 2, 0, &ja);
  assert_int_equal(ja.gen, 1);
  assert_string_equal(ja.proto, "roundrobin");
  join(f.g, "g", "", 3, other, 2, 10, &jb);
  assert_int_equal(jb.called, 0);
  join(f.g, "g", "", 3, sticky, 1, 10, &jc);
  assert_int_equal(jc.called, 1);
  assert_int_equal(jc.error, TARN__KG_INCONSISTENT_GROUP_PROTOCOL);
  /* another protocol type is inconsistent too */
  tarn__kjoin_req r = {.group_id = "g",
                       .member_id = "",
                       .client_id = "x",
                       .protocol_type = "connect",
                       .session_timeout_ms = 1000,
                       .rebalance_timeout_ms = 1000,
                       .version = 3,
                       .protocols = lead,
                       .n_protocols = 2};
  tarn__kgroups_join(f.g, &r, 10, on_join, &jc);
  assert_int_equal(jc.error, TARN__KG_INCONSISTENT_GROUP_PROTOCOL);
  char *a = strdup(ja.member);
  join(f.g, "g", a, 3, lead, 2, 20, &ja);
  assert_int_equal(ja.gen, 2);
  assert_int_equal(jb.gen, 2);
  assert_string_equal(ja.proto, "roundrobin");
  assert_string_equal(jb.proto, "roundrobin");
  /* no protocols at all */
  r.protocol_type = "consumer", r.n_protocols = 0, r.group_id = "h";
  tarn__kgroups_join(f.g, &r, 10, on_join, &jc);
  assert_int_equal(jc.error, TARN__KG_INCONSISTENT_GROUP_PROTOCOL);
  free(a);
  close_fx(&f);
}

/* A member that does not rejoin by the rebalance deadline is removed and the
 * join phase ends without it, from the tick; a member whose session expires
 * leaves the group. */
static void timeouts(void **state) {
  fx f = open_fx(state);
  char *a = single_member(f.g, "g", 0);
  jres jb;
  join(f.g, "g", "", 3, RANGE, 1, 100, &jb);
  assert_int_equal(jb.called, 0);
  /* a keeps heartbeating but never rejoins */
  assert_int_equal(tarn__kgroups_heartbeat(f.g, "g", 1, a, 900), TARN__KG_REBALANCE_IN_PROGRESS);
  tarn__kgroups_tick(f.g, 1000);
  assert_int_equal(jb.called, 0);
  tarn__kgroups_tick(f.g, 2100); /* 100 + the rebalance timeout */
  assert_int_equal(jb.called, 1);
  assert_int_equal(jb.error, 0);
  assert_int_equal(jb.gen, 2);
  assert_int_equal(jb.n_members, 1);
  assert_string_equal(jb.leader, jb.member);
  assert_int_equal(tarn__kgroups_heartbeat(f.g, "g", 2, a, 2100), TARN__KG_UNKNOWN_MEMBER_ID);
  /* b syncs, then goes silent past its session timeout (1000 ms) */
  sres s;
  sync_(f.g, "g", 2, jb.member, NULL, 0, 2200, &s);
  assert_int_equal(s.error, 0);
  tarn__kgroups_tick(f.g, 3100);
  tarn__kgdesc d;
  tarn__kgroups_describe(f.g, "g", 3100, &d);
  assert_string_equal(d.state, "Stable");
  tarn__kgdesc_free(&d);
  tarn__kgroups_tick(f.g, 3300);
  tarn__kgroups_describe(f.g, "g", 3300, &d);
  assert_int_equal(d.error, 0);
  assert_string_equal(d.state, "Empty");
  assert_int_equal(d.n_members, 0);
  tarn__kgdesc_free(&d);
  assert_int_equal(tarn__kgroups_heartbeat(f.g, "g", 2, jb.member, 3300),
                   TARN__KG_UNKNOWN_MEMBER_ID);
  /* a session timeout out of bounds */
  tarn__kjoin_req r = {.group_id = "g",
                       .member_id = "",
                       .protocol_type = "consumer",
                       .session_timeout_ms = 5,
                       .version = 5,
                       .protocols = RANGE,
                       .n_protocols = 1};
  tarn__kgroups_join(f.g, &r, 3400, on_join, &jb);
  assert_int_equal(jb.error, TARN__KG_INVALID_SESSION_TIMEOUT);
  free(a);
  close_fx(&f);
}

/* A static member (group.instance.id) gets an error at once, never a wait. */
static void static_member_refused(void **state) {
  fx f = open_fx(state);
  jres j = {0};
  tarn__kjoin_req r = {.group_id = "g",
                       .member_id = "",
                       .group_instance_id = "i-1",
                       .client_id = "cl",
                       .protocol_type = "consumer",
                       .session_timeout_ms = 1000,
                       .rebalance_timeout_ms = 1000,
                       .version = 5,
                       .protocols = RANGE,
                       .n_protocols = 1};
  tarn__kgroups_join(f.g, &r, 0, on_join, &j);
  assert_int_equal(j.called, 1);
  assert_int_equal(j.error, TARN__KG_INVALID_REQUEST);
  tarn__kgdesc d;
  tarn__kgroups_describe(f.g, "g", 0, &d);
  assert_string_equal(d.state, "Dead");
  tarn__kgdesc_free(&d);
  close_fx(&f);
}

/* ---- offsets expiry (issue 37 "Lifecycle") ---- */

static int64_t skew_ms; /* added to the wall clock */
static int64_t skewed_now(void *arg) {
  (void)arg;
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000 + skew_ms;
}
static int64_t real_mono(void *arg) {
  (void)arg;
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}
static void real_sleep(void *arg, int64_t ms) {
  (void)arg;
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000};
  nanosleep(&ts, NULL);
}

/* the expiry's callbacks: every group is this node's but "theirs"; topic
 * "gone" has no live incarnation */
static int mine_cb(void *arg, const char *group) {
  (void)arg;
  return strcmp(group, "theirs") != 0;
}
static int live_cb(void *arg, const char *topic, const uint8_t id[16]) {
  (void)arg, (void)id;
  return strcmp(topic, "gone") != 0;
}

static void commit1(tarn__kgroups *g, const char *group, const char *topic, int32_t gen,
                    const char *member, int64_t off) {
  tarn__koffset o = {.topic = topic, .offset = off, .leader_epoch = -1};
  assert_int_equal(tarn__kgroups_commit(g, group, gen, member, &o, 1, 0), 0);
  assert_int_equal(o.error, 0);
}

static size_t n_offsets(tarn__kgroups *g, const char *group) {
  tarn__koffset *all;
  size_t n;
  assert_int_equal(tarn__kgroups_fetch_all(g, group, &all, &n), 0);
  tarn__koffsets_free(all, n, 1);
  return n;
}

/* Kafka's rules since 2.1 (KIP-211), on a wall clock moved by hand
 * (retention 60 s): plain commits expire 60 s after each commit, an Empty
 * group's offsets 60 s after it became Empty (then the group goes: Dead), a
 * Stable group with members keeps its offsets, offsets of a topic that is no
 * longer live go at once, a group another node coordinates is not touched;
 * and a commit that lands between the sweep's read and its delete stays
 * (planted bug koffset-expiry-unguarded). */
static void offsets_expire(void **state) {
  fx f = open_fx(state);
  tarn__clock_hooks h = {skewed_now, real_mono, real_sleep, NULL};
  skew_ms = 0;
  tarn__clock_set(&h);
  const int64_t ret = 60000;
  tarn__kg_expiry x = {mine_cb, live_cb, NULL};
  tarn__kg_expired out;
  commit1(f.g, "plain", "t", -1, "", 10);
  commit1(f.g, "theirs", "t", -1, "", 10);
  commit1(f.g, "orphan", "gone", -1, "", 10);
  commit1(f.g, "orphan", "t", -1, "", 10);
  char *a = single_member(f.g, "stable", 0);
  commit1(f.g, "stable", "t", 1, a, 5);
  /* a record of format 1 (before issue 37: a monotonic commit time) */
  static const uint8_t v1[] = {'K',  'O',  1,    0, 0, 0, 0, 0,   0, 0, 9, 0xff,
                               0xff, 0xff, 0xff, 0, 0, 0, 0, 0,   0, 0, 0, 0,
                               0,    0,    0,    0, 0, 0, 1, 't', 0, 0, 0, 0};
  assert_int_equal(
      tarn_meta_put(f.m, TARN__KG_PARTITION, "/offsets/legacy/t:0000000000", v1, sizeof v1, NULL),
      0);
  char *b = single_member(f.g, "empty", 0);
  commit1(f.g, "empty", "t", 1, b, 6);
  assert_int_equal(tarn__kgroups_leave(f.g, "empty", b, 0), 0);

  /* at 30 s: only the offset of the topic that is gone */
  skew_ms = 30000;
  assert_int_equal(tarn__kgroups_expire(f.g, ret, &x, &out), 0);
  assert_int_equal(out.offsets, 1);
  assert_int_equal(out.groups, 0);
  assert_int_equal(n_offsets(f.g, "orphan"), 1);
  /* the format 1 record is stamped with the sweep's time, not removed */
  tarn_meta_rec lr = {0};
  assert_int_equal(tarn_meta_get(f.m, TARN__KG_PARTITION, "/offsets/legacy/t:0000000000", &lr), 0);
  assert_int_equal(lr.value[2], 2);
  tarn_meta_rec_free(&lr);

  /* the sweep reads plain's offset, a commit lands, the sweep deletes on
   * what it read: the commit stays */
  tarn__kg_offrec *v;
  size_t n;
  assert_int_equal(tarn__kg_scan_offrecs(f.m, "plain", &v, &n), 0);
  assert_int_equal(n, 1);
  commit1(f.g, "plain", "t", -1, "", 11); /* at 30 s */
  assert_int_not_equal(tarn__kg_expire_offset(f.m, "plain", 0, &v[0]), 0);
  tarn__kg_offrecs_free(v, n);
  assert_int_equal(n_offsets(f.g, "plain"), 1);

  /* at 61 s: the Empty group's (Empty since 0 s) and the group with it;
   * orphan's t (committed at 0 s); plain's commit of 30 s stays */
  skew_ms = 61000;
  assert_int_equal(tarn__kgroups_expire(f.g, ret, &x, &out), 0);
  assert_int_equal(out.offsets, 2);
  assert_int_equal(out.groups, 1);
  tarn__kgdesc d;
  tarn__kgroups_describe(f.g, "empty", 0, &d);
  assert_string_equal(d.state, "Dead");
  tarn__kgdesc_free(&d);
  assert_int_equal(n_offsets(f.g, "plain"), 1);
  assert_int_equal(n_offsets(f.g, "orphan"), 0);

  /* at 91 s: plain's and the format 1 record (stamped at 30 s); the Stable
   * group keeps its offset, theirs untouched */
  skew_ms = 91000;
  assert_int_equal(tarn__kgroups_expire(f.g, ret, &x, &out), 0);
  assert_int_equal(out.offsets, 2);
  assert_int_equal(n_offsets(f.g, "plain"), 0);
  assert_int_equal(n_offsets(f.g, "legacy"), 0);
  assert_int_equal(n_offsets(f.g, "stable"), 1);
  assert_int_equal(n_offsets(f.g, "theirs"), 1);
  tarn__clock_set(NULL);
  skew_ms = 0;
  free(a), free(b);
  close_fx(&f);
}

static void fetch1(tarn__kgroups *g, const char *group, const char *topic, int32_t p, int64_t *off,
                   char *meta, size_t cap) {
  tarn__koffset o = {.topic = topic, .partition = p};
  assert_int_equal(tarn__kgroups_fetch(g, group, &o, 1), 0);
  assert_int_equal(o.error, 0);
  *off = o.offset;
  snprintf(meta, cap, "%s", o.metadata);
  tarn__koffsets_free(&o, 1, 0);
}

/* Plain commits (generation -1, no member), fetches of partitions without a
 * commit, and the checks on a member's commit. */
static void committed_offsets(void **state) {
  fx f = open_fx(state);
  tarn__koffset o[2] = {
      {.topic = "t", .partition = 0, .offset = 42, .leader_epoch = -1, .metadata = "m0"},
      {.topic = "t", .partition = 1, .offset = 7, .leader_epoch = -1}};
  assert_int_equal(tarn__kgroups_commit(f.g, "plain", -1, "", o, 2, 0), 0);
  assert_int_equal(o[0].error, 0);
  assert_int_equal(o[1].error, 0);
  int64_t off;
  char meta[64];
  fetch1(f.g, "plain", "t", 0, &off, meta, sizeof meta);
  assert_int_equal(off, 42);
  assert_string_equal(meta, "m0");
  fetch1(f.g, "plain", "t", 2, &off, meta, sizeof meta);
  assert_int_equal(off, -1);
  assert_string_equal(meta, "");
  fetch1(f.g, "other", "t", 0, &off, meta, sizeof meta);
  assert_int_equal(off, -1);
  o[0].offset = 43;
  assert_int_equal(tarn__kgroups_commit(f.g, "plain", -1, "", o, 1, 0), 0);
  fetch1(f.g, "plain", "t", 0, &off, meta, sizeof meta);
  assert_int_equal(off, 43);
  tarn__koffset *all;
  size_t n;
  assert_int_equal(tarn__kgroups_fetch_all(f.g, "plain", &all, &n), 0);
  assert_int_equal(n, 2);
  assert_string_equal(all[0].topic, "t");
  assert_int_equal(all[0].partition, 0);
  assert_int_equal(all[0].offset, 43);
  assert_int_equal(all[1].partition, 1);
  assert_int_equal(all[1].offset, 7);
  tarn__koffsets_free(all, n, 1);
  /* a group with members takes commits only from its members of the
   * current generation */
  char *a = single_member(f.g, "g", 0);
  o[0].offset = 1;
  assert_int_equal(tarn__kgroups_commit(f.g, "g", -1, "", o, 1, 0), TARN__KG_UNKNOWN_MEMBER_ID);
  assert_int_equal(o[0].error, TARN__KG_UNKNOWN_MEMBER_ID);
  assert_int_equal(tarn__kgroups_commit(f.g, "g", 9, a, o, 1, 0), TARN__KG_ILLEGAL_GENERATION);
  assert_int_equal(tarn__kgroups_commit(f.g, "g", 1, a, o, 1, 0), 0);
  assert_int_equal(o[0].error, 0);
  fetch1(f.g, "g", "t", 0, &off, meta, sizeof meta);
  assert_int_equal(off, 1);
  /* a generation with no group */
  assert_int_equal(tarn__kgroups_commit(f.g, "none", 3, "x", o, 1, 0), TARN__KG_ILLEGAL_GENERATION);
  /* metadata above offset.metadata.max.bytes */
  char *big = malloc(TARN__KG_OFFSET_METADATA_MAX + 2);
  memset(big, 'x', TARN__KG_OFFSET_METADATA_MAX + 1);
  big[TARN__KG_OFFSET_METADATA_MAX + 1] = 0;
  o[1].metadata = big;
  assert_int_equal(tarn__kgroups_commit(f.g, "plain", -1, "", o, 2, 0), 0);
  assert_int_equal(o[0].error, 0);
  assert_int_equal(o[1].error, TARN__KG_OFFSET_METADATA_TOO_LARGE);
  free(big);
  free(a);
  close_fx(&f);
}

/* A restarted node (a new coordinator and store handle) keeps the offsets
 * and the group: its member heartbeats on in its generation. */
static void restart_keeps_group_and_offsets(void **state) {
  fx f = open_fx(state);
  char *a = single_member(f.g, "g", 0);
  tarn__koffset o = {.topic = "t", .partition = 3, .offset = 99, .leader_epoch = -1};
  assert_int_equal(tarn__kgroups_commit(f.g, "g", 1, a, &o, 1, 0), 0);
  tarn__kgroups_close(f.g);
  tarn_meta_close(f.m);
  assert_int_equal(tarn_meta_open(f.uri, &f.m), 0);
  tarn__kgroups_options opt = {.min_session_ms = 10};
  assert_int_equal(tarn__kgroups_open(f.m, &opt, &f.g), 0);
  int64_t off;
  char meta[8];
  fetch1(f.g, "g", "t", 3, &off, meta, sizeof meta);
  assert_int_equal(off, 99);
  tarn__kgdesc d;
  tarn__kgroups_describe(f.g, "g", 0, &d);
  assert_string_equal(d.state, "Stable");
  assert_string_equal(d.protocol_type, "consumer");
  assert_string_equal(d.protocol, "range");
  assert_int_equal(d.n_members, 1);
  assert_string_equal(d.members[0].member_id, a);
  assert_int_equal(d.members[0].assignment_len, 5);
  assert_memory_equal(d.members[0].assignment, "p0,p1", 5);
  assert_int_equal(d.members[0].meta_len, 6);
  tarn__kgdesc_free(&d);
  assert_int_equal(tarn__kgroups_heartbeat(f.g, "g", 1, a, 0), 0);
  sres s;
  sync_(f.g, "g", 1, a, NULL, 0, 0, &s);
  assert_string_equal(s.assignment, "p0,p1");
  tarn__kglisted *l;
  size_t n;
  assert_int_equal(tarn__kgroups_list(f.g, &l, &n), 0);
  assert_int_equal(n, 1);
  assert_string_equal(l[0].group_id, "g");
  assert_string_equal(l[0].protocol_type, "consumer");
  assert_string_equal(l[0].state, "Stable");
  tarn__kglisted_free(l, n);
  free(a);
  close_fx(&f);
}

/* Two nodes on one store: the group moves to node 2, which starts a new
 * generation; node 1, still holding the old one, notices the store's record
 * changed and refuses the old generation's commit. */
static void coordinator_change(void **state) {
  fx f = open_fx(state);
  tarn__kgroups *g2;
  tarn__kgroups_options opt = {.min_session_ms = 10};
  assert_int_equal(tarn__kgroups_open(f.m, &opt, &g2), 0);
  char *a = single_member(f.g, "grp/with space", 0);
  jres j;
  join(g2, "grp/with space", a, 5, RANGE, 1, 10, &j);
  assert_int_equal(j.called, 1);
  assert_int_equal(j.error, 0);
  assert_int_equal(j.gen, 2);
  /* node 1 reads generation 2 back, in its sync phase */
  tarn__koffset o = {.topic = "t", .partition = 0, .offset = 5, .leader_epoch = -1};
  assert_int_equal(tarn__kgroups_commit(f.g, "grp/with space", 1, a, &o, 1, 20),
                   TARN__KG_REBALANCE_IN_PROGRESS);
  tarn__ksync_assignment as = {a, (const uint8_t *)"x", 1};
  sres s;
  sync_(g2, "grp/with space", 2, a, &as, 1, 30, &s);
  assert_int_equal(s.error, 0);
  assert_string_equal(s.assignment, "x");
  assert_int_equal(tarn__kgroups_commit(f.g, "grp/with space", 1, a, &o, 1, 40),
                   TARN__KG_ILLEGAL_GENERATION);
  assert_int_equal(tarn__kgroups_commit(g2, "grp/with space", 2, a, &o, 1, 40), 0);
  int64_t off;
  char meta[8];
  fetch1(f.g, "grp/with space", "t", 0, &off, meta, sizeof meta);
  assert_int_equal(off, 5);
  /* a group ID that is a prefix of another keeps its offsets apart */
  fetch1(f.g, "grp", "t", 0, &off, meta, sizeof meta);
  assert_int_equal(off, -1);
  tarn__kgroups_close(g2);
  free(a);
  close_fx(&f);
}

/* OffsetFetch when the store cannot be read: COORDINATOR_LOAD_IN_PROGRESS per
 * partition, never offset -1 with no error (mem: injects the fault). */
static void fetch_on_store_failure(void **state) {
  if (strcmp((const char *)*state, "mem"))
    skip();
  fx f = open_fx(state);
  tarn__koffset c = {.topic = "t", .partition = 0, .offset = 8, .leader_epoch = -1};
  assert_int_equal(tarn__kgroups_commit(f.g, "g", -1, "", &c, 1, 0), 0);
  assert_int_equal(tarn_meta_inject_fault(f.m, TARN_META_FAULT_READ_FAIL, 2), 0);
  tarn__koffset o[2] = {{.topic = "t", .partition = 0}, {.topic = "t", .partition = 1}};
  assert_true(tarn__kgroups_fetch(f.g, "g", o, 2) < 0);
  for (int i = 0; i < 2; i++) {
    assert_int_equal(o[i].error, TARN__KG_COORDINATOR_LOAD_IN_PROGRESS);
    assert_true(o[i].rc < 0);
  }
  tarn__koffsets_free(o, 2, 0);
  int64_t off;
  char meta[8];
  fetch1(f.g, "g", "t", 0, &off, meta, sizeof meta);
  assert_int_equal(off, 8);
  close_fx(&f);
}

/* A group of plain commits only (no member ever joined) is, as in Kafka, an
 * Empty group of protocol type "": ListGroups lists it once and
 * DescribeGroups answers Empty with no members, until DeleteGroups or
 * OffsetDelete removes its last offset (then Dead, not listed; issue 37). */
static void plain_commit_group_listed(void **state) {
  fx f = open_fx(state);
  tarn__koffset o[2] = {{.topic = "t", .partition = 0, .offset = 4, .leader_epoch = -1},
                        {.topic = "t", .partition = 1, .offset = 5, .leader_epoch = -1}};
  /* "p" and "p q/r" share a prefix; each has two offsets but is listed once */
  assert_int_equal(tarn__kgroups_commit(f.g, "p", -1, "", o, 2, 0), 0);
  assert_int_equal(tarn__kgroups_commit(f.g, "p q/r", -1, "", o, 2, 0), 0);
  char *a = single_member(f.g, "g", 0);
  assert_int_equal(tarn__kgroups_commit(f.g, "g", 1, a, o, 1, 0), 0);
  tarn__kglisted *l;
  size_t n;
  assert_int_equal(tarn__kgroups_list(f.g, &l, &n), 0);
  assert_int_equal(n, 3);
  const char *want[3][3] = {
      {"g", "consumer", "Stable"}, {"p", "", "Empty"}, {"p q/r", "", "Empty"}};
  for (size_t i = 0; i < 3; i++) {
    assert_string_equal(l[i].group_id, want[i][0]);
    assert_string_equal(l[i].protocol_type, want[i][1]);
    assert_string_equal(l[i].state, want[i][2]);
  }
  tarn__kglisted_free(l, n);
  tarn__kgdesc d;
  tarn__kgroups_describe(f.g, "p q/r", 0, &d);
  assert_int_equal(d.error, 0);
  assert_string_equal(d.state, "Empty");
  assert_string_equal(d.protocol_type, "");
  assert_int_equal(d.n_members, 0);
  tarn__kgdesc_free(&d);
  /* DeleteGroups: gone */
  assert_int_equal(tarn__kgroups_delete(f.g, "p", 0), 0);
  tarn__kgroups_describe(f.g, "p", 0, &d);
  assert_string_equal(d.state, "Dead");
  tarn__kgdesc_free(&d);
  assert_int_equal(tarn__kgroups_delete(f.g, "p", 0), TARN__KG_GROUP_ID_NOT_FOUND);
  /* OffsetDelete of its last offsets: gone too */
  tarn__koffset del[2] = {{.topic = "t", .partition = 0}, {.topic = "t", .partition = 1}};
  assert_int_equal(tarn__kgroups_delete_offsets(f.g, "p q/r", del, 2, 0), 0);
  assert_int_equal(tarn__kgroups_list(f.g, &l, &n), 0);
  assert_int_equal(n, 1);
  assert_string_equal(l[0].group_id, "g");
  tarn__kglisted_free(l, n);
  tarn__kgroups_describe(f.g, "p q/r", 0, &d);
  assert_string_equal(d.state, "Dead");
  tarn__kgdesc_free(&d);
  free(a);
  close_fx(&f);
}

int main(int argc, char **argv) {
  const char *v = argc > 1 ? argv[1] : "mem";
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_prestate(join_sync_heartbeat, (void *)v),
      cmocka_unit_test_prestate(rebalance_on_join_and_leave, (void *)v),
      cmocka_unit_test_prestate(protocol_selection, (void *)v),
      cmocka_unit_test_prestate(timeouts, (void *)v),
      cmocka_unit_test_prestate(static_member_refused, (void *)v),
      cmocka_unit_test_prestate(committed_offsets, (void *)v),
      cmocka_unit_test_prestate(restart_keeps_group_and_offsets, (void *)v),
      cmocka_unit_test_prestate(coordinator_change, (void *)v),
      cmocka_unit_test_prestate(fetch_on_store_failure, (void *)v),
      cmocka_unit_test_prestate(plain_commit_group_listed, (void *)v),
      cmocka_unit_test_prestate(offsets_expire, (void *)v),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
