/* The admin surface of issue 37 on in-process nodes (tarn/kafka_node.h),
 * driven over a socket with raw frames built by tarn's codec:
 *   - the cluster ID is the deployment's id in Kafka's Uuid form: Metadata
 *     v2+ and DescribeCluster answer it, the same on every node of one
 *     deployment and after a restart, another for another deployment; a
 *     deployment without an id record gets one at the first node's open
 *   - DescribeCluster v0/v1: the live nodes, the controller as Metadata
 *     names it, authorized operations only when asked (else INT32_MIN),
 *     endpoint type 1; asked for controllers, MISMATCHED_ENDPOINT_TYPE
 *   - DeleteGroups: an Empty group's record and offsets go; NON_EMPTY_GROUP
 *     with a member, GROUP_ID_NOT_FOUND for an unknown one, a name given
 *     twice answered once, NOT_COORDINATOR on the node that does not
 *     coordinate the group
 *   - OffsetDelete: the named partitions' offsets go and no other;
 *     UNKNOWN_TOPIC_OR_PARTITION for a missing topic or partition;
 *     GROUP_SUBSCRIBED_TO_TOPIC for a topic a member subscribes to;
 *     NON_EMPTY_GROUP for members of another protocol type;
 *     GROUP_ID_NOT_FOUND request-wide
 *   - DescribeLogDirs: one log dir named by the WAL root, each partition's
 *     live bytes (above the trim marker), every topic for a null list, an
 *     unknown topic or partition left out; with two nodes each reports the
 *     partitions it leads, every partition once
 *   - reserved names: Metadata with auto-creation does not create
 *     __consumer_offsets (UNKNOWN_TOPIC_OR_PARTITION, is_internal), and
 *     CreateTopics refuses it with INVALID_REQUEST */
#include "testutil.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "kafka/api.h"
#include "kafka/proto/kproto.h"
#include "tarn/catalog.h"
#include "tarn/deployment.h"
#include "tarn/error.h"
#include "tarn/kafka_node.h"
#include "tarn/kafka_topics.h"
#include "tarn/lease.h"
#include "tarn/meta.h"
#include "tarn/trim.h"
#include "tarn/writer.h"
#include "tu_kafka.h"

enum { NON_EMPTY_GROUP = 68, GROUP_ID_NOT_FOUND = 69, GROUP_SUBSCRIBED = 86, MISMATCHED = 114 };

static tarn_deployment *open_dep(const char *name) {
  char m[64], w[64], c[64];
  snprintf(m, sizeof m, "mem:%s", name);
  snprintf(w, sizeof w, "mem:%s-wal", name);
  snprintf(c, sizeof c, "mem:%s-c", name);
  tarn_deployment_config dc = {m, w, c, NULL};
  tarn_deployment *dep;
  assert_int_equal(tarn_deployment_open(&dc, 1, &dep), 0);
  tarn_catalog *cat;
  assert_int_equal(tarn_catalog_open(tarn_deployment_meta(dep), NULL, &cat), 0);
  int rc = tarn_catalog_init(cat, NULL);
  assert_true(rc == 0 || rc == TARN_EEXIST);
  tarn_catalog_close(cat);
  return dep;
}

static tarn_kafka_node *open_node(tarn_deployment *dep, int auto_create) {
  tarn_kafka_node_config c;
  tarn_kafka_node_config_default(&c);
  c.listen = "127.0.0.1:0";
  c.auto_create_topics = auto_create;
  tarn_kafka_node *n;
  assert_int_equal(tarn_kafka_node_open(dep, &c, &n), 0);
  return n;
}

static int kconnect(tarn_kafka_node *n) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  assert_true(fd >= 0);
  struct sockaddr_in sa = {.sin_family = AF_INET,
                           .sin_port = htons((uint16_t)tarn_kafka_node_port(n))};
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof sa), 0);
  return fd;
}

static void read_n(int fd, uint8_t *p, size_t n) {
  while (n) {
    struct pollfd pf = {fd, POLLIN, 0};
    assert_true(poll(&pf, 1, 10000) > 0);
    ssize_t r = recv(fd, p, n, 0);
    assert_true(r > 0);
    p += r;
    n -= (size_t)r;
  }
}

/* One call: the request req of (api, ver) out, its response decoded into
 * resp (pointing into *keep and a). */
static void call(int fd, int16_t api, int16_t ver, const void *req, tarn__karena *a, void *resp,
                 uint8_t **keep) {
  tarn__kreq_header h = {api, ver, 7, {"test", 4}};
  tarn_buf b = TARN_BUF_INIT;
  assert_int_equal(tarn__kreq_frame(&h, req, &b), 0);
  for (size_t off = 0; off < b.len;) {
    ssize_t w = send(fd, b.data + off, b.len - off, MSG_NOSIGNAL);
    assert_true(w > 0);
    off += (size_t)w;
  }
  tarn_buf_free(&b);
  uint8_t sz[4];
  read_n(fd, sz, 4);
  size_t n = (size_t)sz[0] << 24 | (size_t)sz[1] << 16 | (size_t)sz[2] << 8 | sz[3];
  uint8_t *f = malloc(n);
  assert_non_null(f);
  read_n(fd, f, n);
  int32_t corr;
  size_t off;
  assert_int_equal(tarn__kresp_header_decode(api, ver, f, n, &corr, &off), 0);
  assert_int_equal(corr, 7);
  assert_int_equal(tarn__kmsg_decode(api, ver, 1, f + off, n - off, a, resp), 0);
  *keep = f;
}

static tarn__kstr ks(const char *s) { return (tarn__kstr){s, (int32_t)strlen(s)}; }

static int kseq(tarn__kstr k, const char *s) {
  return k.len == (int32_t)strlen(s) && memcmp(k.p, s, (size_t)k.len) == 0;
}

/* The cluster ID Metadata v(ver) answers, into out (23 bytes). */
static void metadata_cluster_id(tarn_kafka_node *n, int16_t ver, char *out) {
  int fd = kconnect(n);
  tarn__k_metadata_req q;
  tarn__kmsg_init(TARN__KAPI_METADATA, 0, &q);
  q.topics.n = 0;
  tarn__karena a;
  tarn__karena_init(&a);
  tarn__k_metadata_resp r;
  uint8_t *keep;
  call(fd, TARN__KAPI_METADATA, ver, &q, &a, &r, &keep);
  assert_true(r.cluster_id.len >= 0 && r.cluster_id.len < 23);
  memcpy(out, r.cluster_id.p, (size_t)r.cluster_id.len);
  out[r.cluster_id.len] = 0;
  free(keep);
  tarn__karena_free(&a);
  close(fd);
}

static void describe_cluster(tarn_kafka_node *n, int16_t ver, int ops, int8_t endpoint,
                             tarn__karena *a, tarn__k_describe_cluster_resp *r, uint8_t **keep) {
  int fd = kconnect(n);
  tarn__k_describe_cluster_req q;
  tarn__kmsg_init(TARN__KAPI_DESCRIBE_CLUSTER, 0, &q);
  q.include_cluster_authorized_operations = ops;
  q.endpoint_type = endpoint;
  call(fd, TARN__KAPI_DESCRIBE_CLUSTER, ver, &q, a, r, keep);
  close(fd);
}

/* The deployment's id record in Kafka's form (what the node must answer). */
static void expected_id(tarn_deployment *dep, char out[23]) {
  tarn_meta_rec rec = {0};
  assert_int_equal(tarn_meta_get(tarn_deployment_meta(dep), TARN_DEPLOYMENT_ID_PARTITION,
                                 TARN_DEPLOYMENT_ID_KEY, &rec),
                   0);
  assert_int_equal(rec.value_len, 32);
  uint8_t raw[16];
  for (int i = 0; i < 16; i++) {
    unsigned v;
    char hx[3] = {(char)rec.value[2 * i], (char)rec.value[2 * i + 1], 0};
    assert_int_equal(sscanf(hx, "%2x", &v), 1);
    raw[i] = (uint8_t)v;
  }
  tarn_meta_rec_free(&rec);
  tarn_kafka_topic_id_string(raw, out);
}

static void cluster_id(void **state) {
  (void)state;
  tarn_deployment *d1 = open_dep("ca"), *d2 = open_dep("cb");
  /* init claims the roots (the id record); this one never ran init */
  assert_int_equal(tarn_deployment_claim_roots(d1, 1), 0);
  char want1[23], got[23], again[23], other[23];
  expected_id(d1, want1);
  tarn_kafka_node *n1 = open_node(d1, 0), *n2 = open_node(d1, 0);
  for (int16_t v = 2; v <= 8; v++) {
    metadata_cluster_id(n1, v, got);
    assert_string_equal(got, want1);
  }
  metadata_cluster_id(n2, 8, got); /* the deployment's other node */
  assert_string_equal(got, want1);
  tarn_kafka_node_close(n2);
  tarn_kafka_node_close(n1);
  n1 = open_node(d1, 0); /* a restart */
  metadata_cluster_id(n1, 5, again);
  assert_string_equal(again, want1);

  /* d2 has no id record (a deployment from before ids): its first node
   * writes one, create-only, and answers it */
  tarn_kafka_node *m1 = open_node(d2, 0);
  metadata_cluster_id(m1, 8, other);
  char want2[23];
  expected_id(d2, want2);
  assert_string_equal(other, want2);
  assert_string_not_equal(other, want1);
  assert_int_equal(strlen(other), 22);

  /* DescribeCluster: the same ID, the live nodes, the controller */
  tarn__karena a;
  tarn__karena_init(&a);
  tarn__k_describe_cluster_resp r;
  uint8_t *keep;
  for (int16_t v = 0; v <= 1; v++) {
    describe_cluster(n1, v, 0, 1, &a, &r, &keep);
    assert_int_equal(r.error_code, 0);
    assert_true(kseq(r.cluster_id, want1));
    assert_int_equal(r.brokers.n, 1);
    assert_int_equal(r.brokers.v[0].broker_id, tarn_kafka_node_id(n1));
    assert_int_equal(r.brokers.v[0].port, tarn_kafka_node_port(n1));
    assert_true(kseq(r.brokers.v[0].host, "127.0.0.1"));
    assert_int_equal(r.controller_id, tarn_kafka_node_id(n1));
    assert_int_equal(r.cluster_authorized_operations, INT32_MIN);
    if (v == 1)
      assert_int_equal(r.endpoint_type, 1);
    free(keep);
  }
  describe_cluster(n1, 1, 1, 1, &a, &r, &keep);
  assert_true(r.cluster_authorized_operations > 0);
  free(keep);
  describe_cluster(n1, 1, 0, 2, &a, &r, &keep); /* controllers: not this endpoint */
  assert_int_equal(r.error_code, MISMATCHED);
  free(keep);
  tarn__karena_free(&a);
  tarn_kafka_node_close(m1);
  tarn_kafka_node_close(n1);
  tarn_deployment_close(d2);
  tarn_deployment_close(d1);
}

/* ---- groups ------------------------------------------------------------------ */

static void create_topic(int fd, const char *name, int32_t parts) {
  tarn__k_create_topics_req q;
  tarn__kmsg_init(TARN__KAPI_CREATE_TOPICS, 0, &q);
  tarn__k_create_topics_creatable_topic t;
  memset(&t, 0, sizeof t);
  t.name = ks(name);
  t.num_partitions = parts;
  t.replication_factor = 1;
  q.topics.n = 1;
  q.topics.v = &t;
  q.timeout_ms = 5000;
  tarn__karena a;
  tarn__karena_init(&a);
  tarn__k_create_topics_resp r;
  uint8_t *keep;
  call(fd, TARN__KAPI_CREATE_TOPICS, 2, &q, &a, &r, &keep);
  assert_int_equal(r.topics.n, 1);
  assert_int_equal(r.topics.v[0].error_code, 0);
  free(keep);
  tarn__karena_free(&a);
}

static void delete_topic(int fd, const char *name) {
  tarn__k_delete_topics_req q;
  tarn__kmsg_init(TARN__KAPI_DELETE_TOPICS, 0, &q);
  tarn__kstr nm = ks(name);
  q.topic_names.n = 1;
  q.topic_names.v = &nm;
  q.timeout_ms = 5000;
  tarn__karena a;
  tarn__karena_init(&a);
  tarn__k_delete_topics_resp r;
  uint8_t *keep;
  call(fd, TARN__KAPI_DELETE_TOPICS, 1, &q, &a, &r, &keep);
  assert_int_equal(r.responses.n, 1);
  assert_int_equal(r.responses.v[0].error_code, 0);
  free(keep);
  tarn__karena_free(&a);
}

/* A plain commit (OffsetCommit v2, generation -1) of offset off on each of
 * parts partitions of topic; the first partition's error. */
static int16_t commit_e(int fd, const char *group, const char *topic, int32_t parts, int64_t off);

/* commit_e, every partition answered 0. */
static void commit(int fd, const char *group, const char *topic, int32_t parts, int64_t off) {
  assert_int_equal(commit_e(fd, group, topic, parts, off), 0);
}

static int16_t commit_e(int fd, const char *group, const char *topic, int32_t parts, int64_t off) {
  tarn__k_offset_commit_req q;
  tarn__kmsg_init(TARN__KAPI_OFFSET_COMMIT, 0, &q);
  q.group_id = ks(group);
  q.generation_id_or_member_epoch = -1;
  q.member_id = ks("");
  tarn__k_offset_commit_offset_commit_request_topic t;
  tarn__k_offset_commit_offset_commit_request_partition p[4];
  memset(p, 0, sizeof p);
  for (int32_t i = 0; i < parts; i++)
    p[i].partition_index = i, p[i].committed_offset = off, p[i].committed_metadata = ks("");
  t.name = ks(topic);
  t.partitions.n = parts;
  t.partitions.v = p;
  q.topics.n = 1;
  q.topics.v = &t;
  tarn__karena a;
  tarn__karena_init(&a);
  tarn__k_offset_commit_resp r;
  uint8_t *keep;
  call(fd, TARN__KAPI_OFFSET_COMMIT, 2, &q, &a, &r, &keep);
  int16_t e = r.topics.v[0].partitions.v[0].error_code;
  for (int32_t i = 0; i < parts; i++)
    assert_int_equal(r.topics.v[0].partitions.v[i].error_code, e);
  free(keep);
  tarn__karena_free(&a);
  return e;
}

/* The committed offset of group's topic/partition (-1: none). */
static int64_t committed(int fd, const char *group, const char *topic, int32_t partition) {
  tarn__k_offset_fetch_req q;
  tarn__kmsg_init(TARN__KAPI_OFFSET_FETCH, 0, &q);
  q.group_id = ks(group);
  tarn__k_offset_fetch_offset_fetch_request_topic t;
  t.name = ks(topic);
  t.partition_indexes.n = 1;
  t.partition_indexes.v = &partition;
  q.topics.n = 1;
  q.topics.v = &t;
  tarn__karena a;
  tarn__karena_init(&a);
  tarn__k_offset_fetch_resp r;
  uint8_t *keep;
  call(fd, TARN__KAPI_OFFSET_FETCH, 3, &q, &a, &r, &keep);
  assert_int_equal(r.topics.v[0].partitions.v[0].error_code, 0);
  int64_t o = r.topics.v[0].partitions.v[0].committed_offset;
  free(keep);
  tarn__karena_free(&a);
  return o;
}

/* A member joins group (JoinGroup v3: no second round) of protocol type
 * ptype with a consumer subscription to topic; its ID into member. */
static void join(int fd, const char *group, const char *ptype, const char *topic, char *member) {
  uint8_t sub[64];
  size_t tl = strlen(topic), n = 0;
  sub[n++] = 0, sub[n++] = 0;                             /* version 0 */
  sub[n++] = 0, sub[n++] = 0, sub[n++] = 0, sub[n++] = 1; /* one topic */
  sub[n++] = 0, sub[n++] = (uint8_t)tl;
  memcpy(sub + n, topic, tl), n += tl;
  sub[n++] = 0xff, sub[n++] = 0xff, sub[n++] = 0xff, sub[n++] = 0xff; /* user data null */
  tarn__k_join_group_req q;
  tarn__kmsg_init(TARN__KAPI_JOIN_GROUP, 0, &q);
  q.group_id = ks(group);
  q.session_timeout_ms = 30000;
  q.rebalance_timeout_ms = 30000;
  q.member_id = ks("");
  q.protocol_type = ks(ptype);
  tarn__k_join_group_join_group_request_protocol p = {ks("range"), {sub, (int32_t)n}};
  q.protocols.n = 1;
  q.protocols.v = &p;
  tarn__karena a;
  tarn__karena_init(&a);
  tarn__k_join_group_resp r;
  uint8_t *keep;
  call(fd, TARN__KAPI_JOIN_GROUP, 3, &q, &a, &r, &keep);
  assert_int_equal(r.error_code, 0);
  memcpy(member, r.member_id.p, (size_t)r.member_id.len);
  member[r.member_id.len] = 0;
  free(keep);
  tarn__karena_free(&a);
}

static void leave(int fd, const char *group, const char *member) {
  tarn__k_leave_group_req q;
  tarn__kmsg_init(TARN__KAPI_LEAVE_GROUP, 0, &q);
  q.group_id = ks(group);
  q.member_id = ks(member);
  tarn__karena a;
  tarn__karena_init(&a);
  tarn__k_leave_group_resp r;
  uint8_t *keep;
  call(fd, TARN__KAPI_LEAVE_GROUP, 1, &q, &a, &r, &keep);
  assert_int_equal(r.error_code, 0);
  free(keep);
  tarn__karena_free(&a);
}

/* DeleteGroups v(ver) of names (n of them): the errors by result, *count results. */
static void delete_groups(int fd, int16_t ver, const char *const *names, int32_t n, int16_t *errors,
                          int32_t *count) {
  tarn__k_delete_groups_req q;
  tarn__kmsg_init(TARN__KAPI_DELETE_GROUPS, 0, &q);
  tarn__kstr v[8];
  for (int32_t i = 0; i < n; i++)
    v[i] = ks(names[i]);
  q.groups_names.n = n;
  q.groups_names.v = v;
  tarn__karena a;
  tarn__karena_init(&a);
  tarn__k_delete_groups_resp r;
  uint8_t *keep;
  call(fd, TARN__KAPI_DELETE_GROUPS, ver, &q, &a, &r, &keep);
  *count = r.results.n;
  for (int32_t i = 0; i < r.results.n; i++) {
    assert_true(kseq(r.results.v[i].group_id, names[i]));
    errors[i] = r.results.v[i].error_code;
  }
  free(keep);
  tarn__karena_free(&a);
}

static int16_t delete_group(int fd, const char *group) {
  int16_t e;
  int32_t n;
  delete_groups(fd, 2, &group, 1, &e, &n);
  assert_int_equal(n, 1);
  return e;
}

/* OffsetDelete of (topic, partition) pairs; the request-wide error, the
 * partitions' into errors (in request order). */
static int16_t offset_delete(int fd, const char *group, const char *const *topics,
                             const int32_t *parts, int32_t n, int16_t *errors) {
  tarn__k_offset_delete_req q;
  tarn__kmsg_init(TARN__KAPI_OFFSET_DELETE, 0, &q);
  q.group_id = ks(group);
  tarn__k_offset_delete_offset_delete_request_topic t[8];
  tarn__k_offset_delete_offset_delete_request_partition p[8];
  for (int32_t i = 0; i < n; i++) {
    p[i].partition_index = parts[i];
    t[i].name = ks(topics[i]);
    t[i].partitions.n = 1;
    t[i].partitions.v = &p[i];
  }
  q.topics.n = n;
  q.topics.v = t;
  tarn__karena a;
  tarn__karena_init(&a);
  tarn__k_offset_delete_resp r;
  uint8_t *keep;
  call(fd, TARN__KAPI_OFFSET_DELETE, 0, &q, &a, &r, &keep);
  int16_t e = r.error_code;
  if (!e) {
    assert_int_equal(r.topics.n, n);
    for (int32_t i = 0; i < n; i++) {
      assert_true(kseq(r.topics.v[i].name, topics[i]));
      assert_int_equal(r.topics.v[i].partitions.v[0].partition_index, parts[i]);
      errors[i] = r.topics.v[i].partitions.v[0].error_code;
    }
  } else {
    assert_int_equal(r.topics.n, 0);
  }
  free(keep);
  tarn__karena_free(&a);
  return e;
}

static void delete_groups_and_offsets(void **state) {
  (void)state;
  tarn_deployment *d = open_dep("dg");
  tarn_kafka_node *n = open_node(d, 0);
  int fd = kconnect(n);
  create_topic(fd, "t", 2);
  create_topic(fd, "u", 1);

  /* DeleteGroups: a group of plain commits (Empty) goes with its offsets */
  commit(fd, "plain", "t", 2, 10);
  assert_int_equal(committed(fd, "plain", "t", 1), 10);
  const char *names[] = {"plain", "nope", "plain"};
  int16_t e[8];
  int32_t cnt;
  for (int16_t v = 0; v <= 2; v++) {
    commit(fd, "plain", "t", 2, 10);
    delete_groups(fd, v, names, 3, e, &cnt);
    assert_int_equal(cnt, 2); /* "plain" twice: answered once */
    assert_int_equal(e[0], 0);
    assert_int_equal(e[1], GROUP_ID_NOT_FOUND);
    assert_int_equal(committed(fd, "plain", "t", 0), -1);
    assert_int_equal(committed(fd, "plain", "t", 1), -1);
    assert_int_equal(delete_group(fd, "plain"), GROUP_ID_NOT_FOUND);
  }

  /* a group with a member: NON_EMPTY_GROUP, its offsets kept; once the
   * member left (Empty, its record stays) it goes */
  char member[128];
  join(fd, "g", "consumer", "t", member);
  commit(fd, "other", "t", 1, 3);
  assert_int_equal(delete_group(fd, "g"), NON_EMPTY_GROUP);
  leave(fd, "g", member);
  assert_int_equal(delete_group(fd, "g"), 0);
  assert_int_equal(delete_group(fd, "g"), GROUP_ID_NOT_FOUND);
  assert_int_equal(committed(fd, "other", "t", 0), 3); /* another group's: kept */

  /* OffsetDelete: only the named partitions; a missing topic or partition
   * is UNKNOWN_TOPIC_OR_PARTITION */
  commit(fd, "od", "t", 2, 5);
  commit(fd, "od", "u", 1, 6);
  const char *tp[] = {"t", "t", "x"};
  int32_t pp[] = {0, 7, 0};
  assert_int_equal(offset_delete(fd, "od", tp, pp, 3, e), 0);
  assert_int_equal(e[0], 0);
  assert_int_equal(e[1], TARN__KERR_UNKNOWN_TOPIC_OR_PARTITION);
  assert_int_equal(e[2], TARN__KERR_UNKNOWN_TOPIC_OR_PARTITION);
  assert_int_equal(committed(fd, "od", "t", 0), -1);
  assert_int_equal(committed(fd, "od", "t", 1), 5);
  assert_int_equal(committed(fd, "od", "u", 0), 6);
  assert_int_equal(offset_delete(fd, "unknown-group", tp, pp, 1, e), GROUP_ID_NOT_FOUND);

  /* a member subscribed to t: t's offsets stay (GROUP_SUBSCRIBED_TO_TOPIC),
   * u's go */
  join(fd, "od", "consumer", "t", member);
  const char *tu[] = {"t", "u"};
  int32_t p0[] = {1, 0};
  assert_int_equal(offset_delete(fd, "od", tu, p0, 2, e), 0);
  assert_int_equal(e[0], GROUP_SUBSCRIBED);
  assert_int_equal(e[1], 0);
  assert_int_equal(committed(fd, "od", "t", 1), 5);
  assert_int_equal(committed(fd, "od", "u", 0), -1);
  leave(fd, "od", member);

  /* members of another protocol type: NON_EMPTY_GROUP for the request */
  join(fd, "conn", "connect", "t", member);
  assert_int_equal(offset_delete(fd, "conn", tu, p0, 1, e), NON_EMPTY_GROUP);
  leave(fd, "conn", member);
  close(fd);
  tarn_kafka_node_close(n);
  tarn_deployment_close(d);
}

/* The committed-offset records in the store (every group's). */
static size_t offset_records(tarn_deployment *d) {
  tarn_meta_recs rs = {0};
  assert_int_equal(tarn_meta_list(tarn_deployment_meta(d), TARN_KAFKA_GROUPS_PARTITION,
                                  TARN_KAFKA_OFFSETS_PREFIX, TARN_KAFKA_OFFSETS_PREFIX "\xff/", 0,
                                  0, &rs),
                   0);
  size_t n = rs.n;
  tarn_meta_recs_free(&rs);
  return n;
}

/* Issue 37 "Lifecycle": deleting a topic removes every group's committed
 * offsets of it, and a topic created again under its name starts without
 * them, also when a record of the old incarnation is left (a deletion that
 * stopped before its removal, a commit through a node's stale cache): it
 * carries the old topic's ID. Kafka refuses a commit on a missing topic
 * (UNKNOWN_TOPIC_OR_PARTITION). Before: the group read 100 on the new topic. */
static void offsets_go_with_topic(void **state) {
  (void)state;
  tarn_deployment *d = open_dep("og");
  tarn_meta *m = tarn_deployment_meta(d);
  tarn_kafka_node *n = open_node(d, 0);
  int fd = kconnect(n);
  create_topic(fd, "t", 2);
  create_topic(fd, "u", 1);
  commit(fd, "g", "t", 2, 100);
  commit(fd, "h", "t", 1, 50);
  commit(fd, "g", "u", 1, 5);
  assert_int_equal(committed(fd, "g", "t", 1), 100);
  assert_int_equal(offset_records(d), 4);
  tarn_meta_rec old = {0};
  assert_int_equal(tarn_meta_get(m, TARN_KAFKA_GROUPS_PARTITION, "/offsets/g/t:0000000000", &old),
                   0);

  delete_topic(fd, "t");
  assert_int_equal(offset_records(d), 1); /* u's */
  assert_int_equal(commit_e(fd, "g", "t", 1, 1), TARN__KERR_UNKNOWN_TOPIC_OR_PARTITION);
  assert_int_equal(commit_e(fd, "g", "nope", 1, 1), TARN__KERR_UNKNOWN_TOPIC_OR_PARTITION);
  create_topic(fd, "t", 2);
  assert_int_equal(committed(fd, "g", "t", 0), -1);
  assert_int_equal(committed(fd, "h", "t", 0), -1);
  assert_int_equal(committed(fd, "g", "u", 0), 5);

  /* the old incarnation's record back: not the new topic's */
  assert_int_equal(
      tarn_meta_put(m, TARN_KAFKA_GROUPS_PARTITION, old.key, old.value, old.value_len, NULL), 0);
  assert_int_equal(committed(fd, "g", "t", 0), -1);
  commit(fd, "g", "t", 1, 7);
  assert_int_equal(committed(fd, "g", "t", 0), 7);
  tarn_meta_rec_free(&old);
  close(fd);
  tarn_kafka_node_close(n);
  tarn_deployment_close(d);
}

/* DescribeProducers v0 (issue 37, KIP-664): the producers with state on a
 * partition, as the store holds them (a format 3 record put by hand: epoch 3,
 * last batch's sequences 0-4, written at 1234 ms); a partition without any
 * answers none; a missing partition or topic UNKNOWN_TOPIC_OR_PARTITION. */
static void describe_producers(void **state) {
  (void)state;
  tarn_deployment *d = open_dep("dp");
  tarn_kafka_node *n = open_node(d, 0);
  int fd = kconnect(n);
  create_topic(fd, "p", 2);
  tarn_catalog *cat;
  assert_int_equal(tarn_catalog_open(tarn_deployment_meta(d), NULL, &cat), 0);
  tarn_kafka_topic t;
  assert_int_equal(tarn_kafka_topic_lookup(cat, "p", &t), 0);
  char part[24], key[96];
  snprintf(part, sizeof part, "%llu", (unsigned long long)t.logs[1]);
  snprintf(key, sizeof key, TARN_KAFKA_PRODUCER_STATE_PREFIX "%s/%020lld", part, 77LL);
  tarn_kafka_topic_free(&t);
  tarn_catalog_close(cat);
  static const uint8_t v[] = {'K', 'P', 3, 0, 0, 0, 3, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 4,   0,
                              0,   0,   0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 4, 0xd2};
  assert_int_equal(
      tarn_meta_create(tarn_deployment_meta(d), part, key, v, sizeof v, TARN_META_PERSISTENT, NULL),
      0);
  tarn__k_describe_producers_req q;
  tarn__kmsg_init(TARN__KAPI_DESCRIBE_PRODUCERS, 0, &q);
  int32_t pp[] = {0, 1, 9}, pn[] = {0};
  tarn__k_describe_producers_topic_request tq[2] = {{ks("p"), {3, pp}}, {ks("nope"), {1, pn}}};
  q.topics.n = 2;
  q.topics.v = tq;
  tarn__karena a;
  tarn__karena_init(&a);
  tarn__k_describe_producers_resp r;
  uint8_t *keep;
  call(fd, TARN__KAPI_DESCRIBE_PRODUCERS, 0, &q, &a, &r, &keep);
  assert_int_equal(r.topics.n, 2);
  const tarn__k_describe_producers_partition_response *rp = r.topics.v[0].partitions.v;
  assert_int_equal(r.topics.v[0].partitions.n, 3);
  assert_int_equal(rp[0].error_code, 0);
  assert_int_equal(rp[0].active_producers.n, 0);
  assert_int_equal(rp[1].error_code, 0);
  assert_int_equal(rp[1].active_producers.n, 1);
  const tarn__k_describe_producers_producer_state *ps = rp[1].active_producers.v;
  assert_int_equal(ps->producer_id, 77);
  assert_int_equal(ps->producer_epoch, 3);
  assert_int_equal(ps->last_sequence, 4);
  assert_int_equal(ps->last_timestamp, 1234);
  assert_int_equal(ps->coordinator_epoch, -1);
  assert_int_equal(ps->current_txn_start_offset, -1);
  assert_int_equal(rp[2].partition_index, 9);
  assert_int_equal(rp[2].error_code, TARN__KERR_UNKNOWN_TOPIC_OR_PARTITION);
  assert_int_equal(r.topics.v[1].partitions.v[0].error_code, TARN__KERR_UNKNOWN_TOPIC_OR_PARTITION);
  free(keep);
  tarn__karena_free(&a);
  close(fd);
  tarn_kafka_node_close(n);
  tarn_deployment_close(d);
}

/* DescribeLogDirs (issue 37): one log dir per node, named by the WAL root
 * URI; each partition's size is the bytes of its live entries (those above
 * the trim marker); a null topic list is every topic; a topic or partition
 * the node does not hold is left out, as Kafka does. */
static const tarn__k_describe_log_dirs_describe_log_dirs_topic *
log_dirs(int fd, int16_t ver, const tarn__k_describe_log_dirs_req *q, tarn__karena *a,
         uint8_t **keep, int32_t *nt) {
  tarn__k_describe_log_dirs_resp r;
  call(fd, TARN__KAPI_DESCRIBE_LOG_DIRS, ver, q, a, &r, keep);
  assert_int_equal(r.error_code, 0);
  assert_int_equal(r.results.n, 1);
  assert_int_equal(r.results.v[0].error_code, 0);
  assert_true(kseq(r.results.v[0].log_dir, "mem:dl-wal"));
  assert_int_equal(r.results.v[0].total_bytes, -1);
  assert_int_equal(r.results.v[0].usable_bytes, -1);
  *nt = r.results.v[0].topics.n;
  return r.results.v[0].topics.v;
}

static void describe_log_dirs(void **state) {
  (void)state;
  tarn_deployment *d = open_dep("dl");
  tarn_kafka_node *n = open_node(d, 0);
  int fd = kconnect(n);
  create_topic(fd, "s", 2);
  create_topic(fd, "u", 1);
  tarn_catalog *cat;
  assert_int_equal(tarn_catalog_open(tarn_deployment_meta(d), NULL, &cat), 0);
  tarn_kafka_topic s, u;
  assert_int_equal(tarn_kafka_topic_lookup(cat, "s", &s), 0);
  assert_int_equal(tarn_kafka_topic_lookup(cat, "u", &u), 0);
  tarn_catalog_close(cat);
  /* s/0: three entries of 1, 5 and 2 records; s/1 none; u/0 one of 3 */
  tarn_writer *w;
  assert_int_equal(tarn_writer_open(tarn_deployment_meta(d), tarn_deployment_wal(d), NULL, &w), 0);
  const int32_t counts[] = {1, 5, 2, 3};
  size_t len[4];
  for (int i = 0; i < 4; i++) {
    tarn_buf b = TARN_BUF_INIT;
    tu_kafka_v2_simple(&b, counts[i]);
    len[i] = b.len;
    assert_int_equal(tarn_writer_append(w, i < 3 ? s.logs[0] : u.logs[0], b.data, b.len,
                                        (uint32_t)counts[i], NULL, NULL),
                     0);
    assert_int_equal(tarn_writer_flush(w), 0); /* an index record each */
    tarn_buf_free(&b);
  }
  assert_int_equal(tarn_writer_flush(w), 0);
  assert_int_equal(tarn_writer_close(w), 0);

  tarn__karena a;
  tarn__karena_init(&a);
  uint8_t *keep;
  int32_t nt;
  tarn__k_describe_log_dirs_req q;
  tarn__kmsg_init(TARN__KAPI_DESCRIBE_LOG_DIRS, 0, &q);
  q.topics.n = -1; /* null: every topic */
  for (int16_t ver = 0; ver <= 4; ver += 4) {
    const tarn__k_describe_log_dirs_describe_log_dirs_topic *t =
        log_dirs(fd, ver, &q, &a, &keep, &nt);
    assert_int_equal(nt, 2);
    assert_true(kseq(t[0].name, "s"));
    assert_int_equal(t[0].partitions.n, 2);
    assert_int_equal(t[0].partitions.v[0].partition_index, 0);
    assert_int_equal(t[0].partitions.v[0].partition_size, (int64_t)(len[0] + len[1] + len[2]));
    assert_int_equal(t[0].partitions.v[0].offset_lag, 0);
    assert_false(t[0].partitions.v[0].is_future_key);
    assert_int_equal(t[0].partitions.v[1].partition_index, 1);
    assert_int_equal(t[0].partitions.v[1].partition_size, 0);
    assert_true(kseq(t[1].name, "u"));
    assert_int_equal(t[1].partitions.n, 1);
    assert_int_equal(t[1].partitions.v[0].partition_size, (int64_t)len[3]);
    free(keep);
  }

  /* the first entry trimmed (B = 1): only what is above the marker counts */
  tarn_lease *l;
  uint64_t stored;
  assert_int_equal(tarn_lease_acquire(tarn_deployment_meta(d), s.logs[0], &l), 0);
  assert_int_equal(tarn_soft_trim(tarn_deployment_meta(d), l, 0, &stored), 0);
  assert_int_equal(stored, 1);
  assert_int_equal(tarn_lease_release(l), 0);
  int32_t p0[] = {0, 5}, pn[] = {0};
  tarn__k_describe_log_dirs_describable_log_dir_topic tq[3] = {
      {ks("s"), {2, p0}}, {ks("nope"), {1, pn}}, {ks("u"), {0, NULL}}};
  q.topics.n = 3;
  q.topics.v = tq;
  const tarn__k_describe_log_dirs_describe_log_dirs_topic *t = log_dirs(fd, 2, &q, &a, &keep, &nt);
  assert_int_equal(nt, 1); /* nope unknown, u asked for no partition: left out */
  assert_true(kseq(t[0].name, "s"));
  assert_int_equal(t[0].partitions.n, 1); /* partition 5 does not exist */
  assert_int_equal(t[0].partitions.v[0].partition_size, (int64_t)(len[1] + len[2]));
  free(keep);
  tarn__karena_free(&a);
  tarn_kafka_topic_free(&s);
  tarn_kafka_topic_free(&u);
  close(fd);
  tarn_kafka_node_close(n);
  tarn_deployment_close(d);
}

/* Two nodes: each reports the partitions it leads in Metadata (its
 * replicas), so that every partition is counted by exactly one node. */
static void log_dirs_two_nodes(void **state) {
  (void)state;
  tarn_deployment *d = open_dep("dl2");
  tarn_kafka_node *n1 = open_node(d, 0), *n2 = open_node(d, 0);
  sleep(2); /* each node's view of the live nodes is at most a second old */
  int f[2] = {kconnect(n1), kconnect(n2)};
  create_topic(f[0], "m", 16);
  tarn__k_describe_log_dirs_req q;
  tarn__kmsg_init(TARN__KAPI_DESCRIBE_LOG_DIRS, 0, &q);
  q.topics.n = -1;
  tarn__karena a;
  tarn__karena_init(&a);
  int seen[16] = {0}, each[2] = {0};
  for (int i = 0; i < 2; i++) {
    tarn__k_describe_log_dirs_resp r;
    uint8_t *keep;
    call(f[i], TARN__KAPI_DESCRIBE_LOG_DIRS, 1, &q, &a, &r, &keep);
    assert_int_equal(r.results.n, 1);
    for (int32_t t = 0; t < r.results.v[0].topics.n; t++)
      for (int32_t p = 0; p < r.results.v[0].topics.v[t].partitions.n; p++) {
        int32_t ix = r.results.v[0].topics.v[t].partitions.v[p].partition_index;
        assert_true(ix >= 0 && ix < 16);
        seen[ix]++;
        each[i]++;
      }
    free(keep);
  }
  for (int p = 0; p < 16; p++)
    assert_int_equal(seen[p], 1);
  assert_true(each[0] > 0 && each[1] > 0); /* rendezvous hashing spreads 16 over both */
  tarn__karena_free(&a);
  close(f[0]);
  close(f[1]);
  tarn_kafka_node_close(n2);
  tarn_kafka_node_close(n1);
  tarn_deployment_close(d);
}

/* Two nodes: each group is answered by its coordinator only (the rule of
 * FindCoordinator); the other node says NOT_COORDINATOR and deletes nothing. */
static void not_coordinator(void **state) {
  (void)state;
  tarn_deployment *d = open_dep("nc");
  tarn_kafka_node *n1 = open_node(d, 0), *n2 = open_node(d, 0);
  sleep(2); /* each node's view of the live nodes is at most a second old */
  int f1 = kconnect(n1), f2 = kconnect(n2);
  create_topic(f1, "t", 1);
  int checked = 0;
  for (int i = 0; i < 16; i++) {
    char g[16];
    snprintf(g, sizeof g, "grp-%d", i);
    const char *gp = g;
    int16_t e1[1], e2[1];
    int32_t c;
    delete_groups(f1, 2, &gp, 1, e1, &c);
    delete_groups(f2, 2, &gp, 1, e2, &c);
    /* unknown to its coordinator, refused by the other */
    assert_true((e1[0] == GROUP_ID_NOT_FOUND && e2[0] == TARN__KERR_NOT_COORDINATOR) ||
                (e2[0] == GROUP_ID_NOT_FOUND && e1[0] == TARN__KERR_NOT_COORDINATOR));
    int coord = e1[0] == GROUP_ID_NOT_FOUND ? f1 : f2, other = coord == f1 ? f2 : f1;
    if (!checked++) {
      commit(coord, g, "t", 1, 4);
      assert_int_equal(delete_group(other, g), TARN__KERR_NOT_COORDINATOR);
      assert_int_equal(committed(coord, g, "t", 0), 4);
      const char *t1[] = {"t"};
      int32_t p1[] = {0};
      int16_t pe[1];
      assert_int_equal(offset_delete(other, g, t1, p1, 1, pe), TARN__KERR_NOT_COORDINATOR);
      assert_int_equal(committed(coord, g, "t", 0), 4);
      assert_int_equal(delete_group(coord, g), 0);
    }
  }
  close(f1);
  close(f2);
  tarn_kafka_node_close(n2);
  tarn_kafka_node_close(n1);
  tarn_deployment_close(d);
}

/* ---- reserved names ---------------------------------------------------------- */

static void reserved_names(void **state) {
  (void)state;
  tarn_deployment *d = open_dep("rn");
  tarn_kafka_node *n = open_node(d, 1);
  int fd = kconnect(n);
  tarn__k_metadata_req q;
  tarn__kmsg_init(TARN__KAPI_METADATA, 0, &q);
  tarn__k_metadata_metadata_request_topic t[2] = {{.name = ks("__consumer_offsets")},
                                                  {.name = ks("plain")}};
  q.topics.n = 2;
  q.topics.v = t;
  q.allow_auto_topic_creation = true;
  tarn__karena a;
  tarn__karena_init(&a);
  tarn__k_metadata_resp r;
  uint8_t *keep;
  call(fd, TARN__KAPI_METADATA, 4, &q, &a, &r, &keep);
  assert_int_equal(r.topics.n, 2);
  assert_int_equal(r.topics.v[0].error_code, TARN__KERR_UNKNOWN_TOPIC_OR_PARTITION);
  assert_true(r.topics.v[0].is_internal);
  assert_int_equal(r.topics.v[1].error_code, 0); /* an ordinary name is auto-created */
  assert_false(r.topics.v[1].is_internal);
  free(keep);
  tarn_catalog *cat;
  assert_int_equal(tarn_catalog_open(tarn_deployment_meta(d), NULL, &cat), 0);
  tarn_kafka_topic kt;
  assert_int_equal(tarn_kafka_topic_lookup(cat, "__consumer_offsets", &kt), TARN_ENOTFOUND);
  /* the catalog refuses it too, whoever asks */
  assert_int_equal(tarn_kafka_topic_create(cat, "__transaction_state", 1, NULL, 0, NULL),
                   TARN_EINVAL);
  tarn_catalog_close(cat);

  /* CreateTopics: INVALID_REQUEST, as Kafka refuses __cluster_metadata */
  const char *refused[] = {"__consumer_offsets", "__transaction_state", "__cluster_metadata"};
  for (int i = 0; i < 3; i++) {
    tarn__k_create_topics_req c;
    tarn__kmsg_init(TARN__KAPI_CREATE_TOPICS, 0, &c);
    tarn__k_create_topics_creatable_topic ct;
    memset(&ct, 0, sizeof ct);
    ct.name = ks(refused[i]);
    ct.num_partitions = 1;
    ct.replication_factor = 1;
    c.topics.n = 1;
    c.topics.v = &ct;
    tarn__k_create_topics_resp cr;
    call(fd, TARN__KAPI_CREATE_TOPICS, 4, &c, &a, &cr, &keep);
    assert_int_equal(cr.topics.v[0].error_code, TARN__KERR_INVALID_REQUEST);
    free(keep);
  }
  tarn__karena_free(&a);
  close(fd);
  tarn_kafka_node_close(n);
  tarn_deployment_close(d);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(cluster_id),        cmocka_unit_test(delete_groups_and_offsets),
      cmocka_unit_test(not_coordinator),   cmocka_unit_test(offsets_go_with_topic),
      cmocka_unit_test(reserved_names),    cmocka_unit_test(describe_producers),
      cmocka_unit_test(describe_log_dirs), cmocka_unit_test(log_dirs_two_nodes),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
