/* The Kafka listener of `tarn serve` (docs/kafka.md), driven over a socket
 * with raw frames built by tarn's codec (kafka/proto/kproto.h): one node
 * (TARN_BIN serve on a fresh sqlite: + file:// home) for the whole suite.
 *   - ApiVersions advertises exactly the dispatch table; an unknown version
 *     gets the KIP-511 v0 answer (error 35 and ApiVersions' own range)
 *   - pipelined requests are answered in request order: a Fetch that waits
 *     for data holds back the ApiVersions and Metadata sent after it
 *   - produce acks=0 sends no response (the next request's answer is the
 *     first frame), and the data is stored; acks=1 answers with the offset
 *     after the index record; Produce v7 of magic 0 messages gets
 *     UNSUPPORTED_FOR_MESSAGE_FORMAT
 *   - Produce v0/v1/v2 of magic 0/1 message sets (a bad CRC32 and an empty
 *     set refused), read back at their offsets by Fetch v0 (magic 0), v2
 *     (magic 1) and v11 (the entries as stored)
 *   - a frame over the maximum request size, a frame shorter than a header,
 *     a body that does not decode and an unknown API close the connection
 *     after the answers to the requests before them; the node serves on
 *   - an idle connection is closed after --kafka-idle-ms
 *   - CreateTopics, Fetch from an offset (the batch's base offset is the
 *     entry's), ListOffsets earliest/latest/by timestamp, DeleteTopics
 *   - a Fetch pipelined behind a produce (acks=-1) on one connection sees
 *     its records; a Fetch of two partitions waiting for data is answered
 *     when the second one gets some, not at max_wait_ms */
#include "testutil.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "kafka/api.h"
#include "kafka/proto/kproto.h"
#include "tarn/buf.h"
#include "tarn/kafka.h"
#include "tu_kafka.h"
#include "util/bytes.h"

static char *home;
static pid_t srv = -1;
static int kport;

#define IDLE_MS 800
#define MAX_REQUEST 65536

static int64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int start_node(void **state) {
  (void)state;
  const char *bin = getenv("TARN_BIN");
  if (!bin)
    return -1;
  home = tu_tmpdir("kafka-listen");
  char cmd[2048];
  snprintf(cmd, sizeof cmd, "'%s' init --home '%s/h' >/dev/null 2>&1", bin, home);
  if (system(cmd) != 0)
    return -1;
  char log[1024], hd[1024], idle[32], maxr[32];
  snprintf(log, sizeof log, "%s/serve.log", home);
  snprintf(hd, sizeof hd, "%s/h", home);
  snprintf(idle, sizeof idle, "%d", IDLE_MS);
  snprintf(maxr, sizeof maxr, "%d", MAX_REQUEST);
  srv = fork();
  if (srv == 0) {
    FILE *f = freopen(log, "w", stderr);
    (void)f;
    execl(bin, bin, "serve", "--home", hd, "--listen", "127.0.0.1:0", "--kafka-listen",
          "127.0.0.1:0", "--kafka-idle-ms", idle, "--kafka-max-request-bytes", maxr,
          "--kafka-batch-ms", "20", "--no-compact", "--no-reclaim", "--no-wal-gc", (char *)NULL);
    _exit(127);
  }
  for (int i = 0; i < 100 && !kport; i++) {
    usleep(100000);
    FILE *f = fopen(log, "r");
    char line[2048];
    while (f && fgets(line, sizeof line, f)) {
      const char *p = strstr(line, "kafka_port=");
      if (p)
        kport = atoi(p + 11);
    }
    if (f)
      fclose(f);
  }
  return kport ? 0 : -1;
}

static int stop_node(void **state) {
  (void)state;
  int status = -1;
  if (srv > 0) {
    kill(srv, SIGTERM);
    waitpid(srv, &status, 0);
  }
  tu_rmtree(home);
  free(home);
  /* a clean stop: exit 0 */
  return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

static int kconnect(void) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  assert_true(fd >= 0);
  struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)kport)};
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof sa), 0);
  return fd;
}

static void send_all(int fd, const void *p, size_t n) {
  const uint8_t *b = p;
  while (n) {
    ssize_t w = send(fd, b, n, MSG_NOSIGNAL);
    assert_true(w > 0);
    b += w;
    n -= (size_t)w;
  }
}

/* Appends one request frame to out. */
static void frame(tarn_buf *out, int16_t api, int16_t ver, int32_t corr, const void *req) {
  tarn__kreq_header h = {api, ver, corr, {"test", 4}};
  assert_int_equal(tarn__kreq_frame(&h, req, out), 0);
}

/* Reads n bytes within timeout_ms: 1, 0 at EOF, -1 on timeout. */
static int read_n(int fd, uint8_t *p, size_t n, int timeout_ms) {
  int64_t end = now_ms() + timeout_ms;
  while (n) {
    struct pollfd pf = {fd, POLLIN, 0};
    int left = (int)(end - now_ms());
    if (left <= 0 || poll(&pf, 1, left) <= 0)
      return -1;
    ssize_t r = recv(fd, p, n, 0);
    if (r <= 0)
      return 0;
    p += r;
    n -= (size_t)r;
  }
  return 1;
}

/* One response frame (malloc'd, without the size): its length, 0 at EOF. */
static size_t read_frame(int fd, uint8_t **out, int timeout_ms) {
  uint8_t sz[4];
  int r = read_n(fd, sz, 4, timeout_ms);
  assert_true(r >= 0); /* not a timeout */
  if (r == 0)
    return 0;
  size_t n = (size_t)sz[0] << 24 | (size_t)sz[1] << 16 | (size_t)sz[2] << 8 | sz[3];
  *out = malloc(n);
  assert_non_null(*out);
  assert_int_equal(read_n(fd, *out, n, timeout_ms), 1);
  return n;
}

/* Reads a response of (api, ver) and decodes it into resp; returns its correlation id. */
static int32_t read_resp(int fd, int16_t api, int16_t ver, tarn__karena *a, void *resp,
                         uint8_t **keep) {
  uint8_t *f = NULL;
  size_t n = read_frame(fd, &f, 5000);
  assert_true(n > 0);
  int32_t corr;
  size_t off;
  assert_int_equal(tarn__kresp_header_decode(api, ver, f, n, &corr, &off), 0);
  if (resp)
    assert_int_equal(tarn__kmsg_decode(api, ver, 1, f + off, n - off, a, resp), 0);
  *keep = f; /* the decoded struct points into it */
  return corr;
}

/* 1 when the peer closed the connection within timeout_ms. */
static int closed_within(int fd, int timeout_ms) {
  uint8_t b;
  return read_n(fd, &b, 1, timeout_ms) == 0;
}

static void api_versions_v(int fd, int16_t ver, int32_t corr) {
  tarn__k_api_versions_req q;
  tarn__kmsg_init(TARN__KAPI_API_VERSIONS, 0, &q);
  q.client_software_name = (tarn__kstr){"t", 1};
  q.client_software_version = (tarn__kstr){"1", 1};
  tarn_buf b = TARN_BUF_INIT;
  frame(&b, TARN__KAPI_API_VERSIONS, ver, corr, &q);
  send_all(fd, b.data, b.len);
  tarn_buf_free(&b);
}

static void create_topic_with(const char *name, int32_t parts, const char *key, const char *val);
static void create_topic(const char *name, int32_t parts) {
  create_topic_with(name, parts, NULL, NULL);
}

static void create_topic_with(const char *name, int32_t parts, const char *key, const char *val) {
  int fd = kconnect();
  tarn__k_create_topics_req q;
  tarn__kmsg_init(TARN__KAPI_CREATE_TOPICS, 0, &q);
  tarn__k_create_topics_creatable_topic t;
  memset(&t, 0, sizeof t);
  t.name = (tarn__kstr){name, (int32_t)strlen(name)};
  t.num_partitions = parts;
  t.replication_factor = 1;
  tarn__k_create_topics_creatable_topic_config cfg;
  if (key) {
    cfg.name = (tarn__kstr){key, (int32_t)strlen(key)};
    cfg.value = (tarn__kstr){val, (int32_t)strlen(val)};
    t.configs.n = 1;
    t.configs.v = &cfg;
  }
  q.topics.n = 1;
  q.topics.v = &t;
  tarn_buf b = TARN_BUF_INIT;
  frame(&b, TARN__KAPI_CREATE_TOPICS, 2, 7, &q);
  send_all(fd, b.data, b.len);
  tarn__karena a;
  tarn__karena_init(&a);
  tarn__k_create_topics_resp r;
  uint8_t *f;
  assert_int_equal(read_resp(fd, TARN__KAPI_CREATE_TOPICS, 2, &a, &r, &f), 7);
  assert_int_equal(r.topics.n, 1);
  assert_int_equal(r.topics.v[0].error_code, 0);
  tarn__karena_free(&a);
  free(f);
  tarn_buf_free(&b);
  close(fd);
}

/* A Produce v7 request of one batch (n records) to topic/partition 0. */
static void produce_frame(tarn_buf *out, int16_t ver, int32_t corr, const char *topic, int16_t acks,
                          const tarn_buf *batch) {
  tarn__k_produce_req q;
  tarn__kmsg_init(TARN__KAPI_PRODUCE, 0, &q);
  q.acks = acks;
  q.timeout_ms = 5000;
  tarn__k_produce_topic_produce_data td;
  tarn__k_produce_partition_produce_data pd;
  memset(&td, 0, sizeof td);
  memset(&pd, 0, sizeof pd);
  td.name = (tarn__kstr){topic, (int32_t)strlen(topic)};
  pd.index = 0;
  pd.records = (tarn__kbytes){batch->data, (int32_t)batch->len};
  td.partition_data.n = 1;
  td.partition_data.v = &pd;
  q.topic_data.n = 1;
  q.topic_data.v = &td;
  frame(out, TARN__KAPI_PRODUCE, ver, corr, &q);
}

static void fetch_frame_max(tarn_buf *out, int32_t corr, const char *topic, int64_t offset,
                            int32_t max_wait_ms, int32_t max_bytes);
static void fetch_frame(tarn_buf *out, int32_t corr, const char *topic, int64_t offset,
                        int32_t max_wait_ms) {
  fetch_frame_max(out, corr, topic, offset, max_wait_ms, 1 << 20);
}

static void fetch_frame_max(tarn_buf *out, int32_t corr, const char *topic, int64_t offset,
                            int32_t max_wait_ms, int32_t max_bytes) {
  tarn__k_fetch_req q;
  tarn__k_fetch_fetch_topic ft;
  tarn__k_fetch_fetch_partition fp;
  tu_kafka_fetch_req(&q, &ft, &fp, topic, offset, max_wait_ms, max_bytes);
  frame(out, TARN__KAPI_FETCH, 11, corr, &q);
}

static void api_versions_lists_the_table(void **state) {
  (void)state;
  int fd = kconnect();
  for (int16_t v = 0; v <= 3; v++) {
    api_versions_v(fd, v, 100 + v);
    tarn__karena a;
    tarn__karena_init(&a);
    tarn__k_api_versions_resp r;
    uint8_t *f;
    assert_int_equal(read_resp(fd, TARN__KAPI_API_VERSIONS, v, &a, &r, &f), 100 + v);
    assert_int_equal(r.error_code, 0);
    size_t n;
    const tarn__kapi *t = tarn__kapi_table(&n);
    /* SaslHandshake (17) and SaslAuthenticate (36) only where SASL is on */
    size_t j = 0;
    for (size_t i = 0; i < n; i++) {
      /* in key order: tarn__kapi_find searches the table by halves, and a
       * key out of order is never found (a request for it is refused) */
      assert_true(i == 0 || t[i - 1].api_key < t[i].api_key);
      assert_ptr_equal(tarn__kapi_find(t[i].api_key), &t[i]);
      if (t[i].api_key == 17 || t[i].api_key == 36)
        continue;
      assert_true(j < (size_t)r.api_keys.n);
      assert_int_equal(r.api_keys.v[j].api_key, t[i].api_key);
      assert_int_equal(r.api_keys.v[j].min_version, t[i].min_version);
      assert_int_equal(r.api_keys.v[j++].max_version, t[i].max_version);
      /* every advertised version has a declaration the codec serves */
      for (int16_t x = t[i].min_version; x <= t[i].max_version; x++)
        assert_true(tarn__kproto_supported(t[i].api_key, x));
    }
    assert_int_equal(r.api_keys.n, (int32_t)j);
    tarn__karena_free(&a);
    free(f);
  }
  close(fd);
}

/* KIP-511: ApiVersions at a version the node does not know. */
static void api_versions_unknown_version(void **state) {
  (void)state;
  int fd = kconnect();
  /* header v2 of ApiVersions v9: api 18, version 9, correlation 5, client id,
   * empty tagged fields; a body the node must not need to read */
  static const uint8_t req[] = {0, 0, 0, 14, 0, 18, 0, 9, 0, 0, 0, 5, 0, 1, 'x', 0, 0xde, 0xad};
  send_all(fd, req, sizeof req);
  tarn__karena a;
  tarn__karena_init(&a);
  tarn__k_api_versions_resp r;
  uint8_t *f;
  assert_int_equal(read_resp(fd, TARN__KAPI_API_VERSIONS, 0, &a, &r, &f), 5);
  assert_int_equal(r.error_code, 35);
  assert_int_equal(r.api_keys.n, 1);
  assert_int_equal(r.api_keys.v[0].api_key, 18);
  assert_int_equal(r.api_keys.v[0].min_version, 0);
  assert_int_equal(r.api_keys.v[0].max_version, 3);
  tarn__karena_free(&a);
  free(f);
  /* the connection serves on */
  api_versions_v(fd, 1, 6);
  assert_int_equal(read_resp(fd, TARN__KAPI_API_VERSIONS, 1, &a, NULL, &f), 6);
  free(f);
  close(fd);
}

/* A fetch waiting for data is answered before the requests sent after it,
 * though they complete first on other workers. */
static void pipelined_in_order(void **state) {
  (void)state;
  create_topic("pipe", 1);
  int fd = kconnect();
  tarn_buf b = TARN_BUF_INIT;
  fetch_frame(&b, 1, "pipe", 0, 700);
  tarn__k_api_versions_req av;
  tarn__kmsg_init(TARN__KAPI_API_VERSIONS, 0, &av);
  frame(&b, TARN__KAPI_API_VERSIONS, 2, 2, &av);
  tarn__k_metadata_req md;
  tarn__kmsg_init(TARN__KAPI_METADATA, 0, &md);
  md.topics.n = -1; /* all topics (v1+) */
  frame(&b, TARN__KAPI_METADATA, 1, 3, &md);
  int64_t t0 = now_ms();
  send_all(fd, b.data, b.len);
  tarn__karena a;
  tarn__karena_init(&a);
  tarn__k_fetch_resp fr;
  uint8_t *f1, *f2, *f3;
  assert_int_equal(read_resp(fd, TARN__KAPI_FETCH, 11, &a, &fr, &f1), 1);
  assert_true(now_ms() - t0 >= 600); /* it waited out max_wait_ms: nothing was there */
  assert_int_equal(fr.responses.v[0].partitions.v[0].error_code, 0);
  assert_int_equal(fr.responses.v[0].partitions.v[0].high_watermark, 0);
  assert_int_equal(read_resp(fd, TARN__KAPI_API_VERSIONS, 2, &a, NULL, &f2), 2);
  tarn__k_metadata_resp mr;
  assert_int_equal(read_resp(fd, TARN__KAPI_METADATA, 1, &a, &mr, &f3), 3);
  int found = 0;
  for (int32_t i = 0; i < mr.topics.n; i++)
    found |= mr.topics.v[i].name.len == 4 && !memcmp(mr.topics.v[i].name.p, "pipe", 4);
  assert_true(found);
  assert_int_equal(mr.brokers.n, 1);
  assert_int_equal(mr.brokers.v[0].port, kport);
  tarn__karena_free(&a);
  free(f1), free(f2), free(f3);
  tarn_buf_free(&b);
  close(fd);
}

/* Reads the answer to a Produce v7 of one partition: no error. */
static void read_produce_ok(int fd, tarn__karena *a, int32_t corr, uint8_t **f) {
  tarn__k_produce_resp pr;
  assert_int_equal(read_resp(fd, TARN__KAPI_PRODUCE, 7, a, &pr, f), corr);
  assert_int_equal(pr.responses.v[0].partition_responses.v[0].error_code, 0);
}

/* Kafka mutes a connection until its produce is answered, so a fetch sent
 * right behind it sees the records: the listener holds a Fetch until the
 * requests before it on its connection are answered. */
static void fetch_behind_produce(void **state) {
  (void)state;
  create_topic("behind", 1);
  int fd = kconnect();
  tarn_buf batch = TARN_BUF_INIT, b = TARN_BUF_INIT;
  tu_kafka_v2_simple(&batch, 3);
  produce_frame(&b, 7, 20, "behind", -1, &batch);
  fetch_frame(&b, 21, "behind", 0, 0); /* max_wait 0: what is there when it runs */
  send_all(fd, b.data, b.len);
  tarn__karena a;
  tarn__karena_init(&a);
  uint8_t *f[2];
  read_produce_ok(fd, &a, 20, &f[0]);
  tarn__k_fetch_resp fr;
  assert_int_equal(read_resp(fd, TARN__KAPI_FETCH, 11, &a, &fr, &f[1]), 21);
  tarn__k_fetch_partition_data *p = &fr.responses.v[0].partitions.v[0];
  assert_int_equal(p->error_code, 0);
  assert_int_equal(p->high_watermark, 3);
  assert_int_equal(p->records.len, (int32_t)batch.len);
  free(f[0]), free(f[1]);
  tarn__karena_free(&a);
  tarn_buf_free(&b);
  tarn_buf_free(&batch);
  close(fd);
}

/* One wait on the store's change notification covers every partition of a
 * Fetch (api_fetch.c): data for the second partition ends it. */
static void fetch_waits_on_every_partition(void **state) {
  (void)state;
  create_topic("multi", 2);
  int fd = kconnect(), pfd = kconnect();
  tarn__k_fetch_req q;
  tarn__kmsg_init(TARN__KAPI_FETCH, 0, &q);
  q.max_wait_ms = 4000;
  q.min_bytes = 1;
  q.max_bytes = 1 << 20;
  tarn__k_fetch_fetch_topic ft;
  tarn__k_fetch_fetch_partition fp[2];
  memset(&ft, 0, sizeof ft);
  memset(fp, 0, sizeof fp);
  ft.topic = (tarn__kstr){"multi", 5};
  for (int i = 0; i < 2; i++) {
    fp[i].partition = i;
    fp[i].partition_max_bytes = 1 << 20;
    fp[i].log_start_offset = -1;
  }
  ft.partitions.n = 2;
  ft.partitions.v = fp;
  q.topics.n = 1;
  q.topics.v = &ft;
  tarn_buf b = TARN_BUF_INIT, pb = TARN_BUF_INIT, batch = TARN_BUF_INIT;
  frame(&b, TARN__KAPI_FETCH, 11, 30, &q);
  int64_t t0 = now_ms();
  send_all(fd, b.data, b.len);
  usleep(300000); /* the fetch is waiting */
  tu_kafka_v2_simple(&batch, 2);
  tarn__k_produce_req pq;
  tarn__kmsg_init(TARN__KAPI_PRODUCE, 0, &pq);
  pq.acks = 1;
  pq.timeout_ms = 5000;
  tarn__k_produce_topic_produce_data td;
  tarn__k_produce_partition_produce_data pd;
  memset(&td, 0, sizeof td);
  memset(&pd, 0, sizeof pd);
  td.name = (tarn__kstr){"multi", 5};
  pd.index = 1;
  pd.records = (tarn__kbytes){batch.data, (int32_t)batch.len};
  td.partition_data.n = 1;
  td.partition_data.v = &pd;
  pq.topic_data.n = 1;
  pq.topic_data.v = &td;
  frame(&pb, TARN__KAPI_PRODUCE, 7, 31, &pq);
  send_all(pfd, pb.data, pb.len);
  tarn__karena a;
  tarn__karena_init(&a);
  uint8_t *f[2];
  tarn__k_fetch_resp fr;
  assert_int_equal(read_resp(fd, TARN__KAPI_FETCH, 11, &a, &fr, &f[0]), 30);
  int64_t waited = now_ms() - t0;
  assert_true(waited < 3000); /* not max_wait_ms (4000) */
  assert_int_equal(fr.responses.v[0].partitions.n, 2);
  assert_int_equal(fr.responses.v[0].partitions.v[1].error_code, 0);
  assert_int_equal(fr.responses.v[0].partitions.v[1].records.len, (int32_t)batch.len);
  read_produce_ok(pfd, &a, 31, &f[1]);
  free(f[0]), free(f[1]);
  tarn__karena_free(&a);
  tarn_buf_free(&b);
  tarn_buf_free(&pb);
  tarn_buf_free(&batch);
  close(fd);
  close(pfd);
}

/* A Fetch of partition 0 of topic from offset, version ver: its answer. */
static tarn__k_fetch_partition_data *fetch_v(int fd, int16_t ver, int32_t corr, const char *topic,
                                             int64_t offset, tarn__karena *a,
                                             tarn__k_fetch_resp *fr, uint8_t **keep) {
  tarn__k_fetch_req q;
  tarn__k_fetch_fetch_topic ft;
  tarn__k_fetch_fetch_partition fp;
  tu_kafka_fetch_req(&q, &ft, &fp, topic, offset, 0, 1 << 20);
  tarn_buf b = TARN_BUF_INIT;
  frame(&b, TARN__KAPI_FETCH, ver, corr, &q);
  send_all(fd, b.data, b.len);
  tarn_buf_free(&b);
  assert_int_equal(read_resp(fd, TARN__KAPI_FETCH, ver, a, fr, keep), corr);
  assert_int_equal(fr->responses.n, 1);
  assert_int_equal(fr->responses.v[0].partitions.n, 1);
  return &fr->responses.v[0].partitions.v[0];
}

/* A Produce of one partition's records, version ver: the partition's answer. */
static tarn__k_produce_partition_produce_response *
produce_v(int fd, int16_t ver, int32_t corr, const char *topic, const tarn_buf *records,
          tarn__karena *a, tarn__k_produce_resp *pr, uint8_t **keep) {
  tarn_buf b = TARN_BUF_INIT;
  produce_frame(&b, ver, corr, topic, 1, records);
  send_all(fd, b.data, b.len);
  tarn_buf_free(&b);
  assert_int_equal(read_resp(fd, TARN__KAPI_PRODUCE, ver, a, pr, keep), corr);
  return &pr->responses.v[0].partition_responses.v[0];
}

/* A Fetch v0-3 message set: every message uncompressed, of magic `magic`,
 * its CRC32 right (zlib's), at offsets first, first + 1, ... with the values
 * want[i]; returns how many. */
static int check_message_set(const tarn__kbytes *set, int magic, int64_t first,
                             const char *const *want) {
  int n = 0;
  for (size_t q = 0; q < (size_t)set->len; n++) {
    const uint8_t *m = set->p + q;
    size_t size = tarn__ld_be32(m + 8);
    assert_int_equal((int64_t)tarn__ld_be64(m), first + n);
    assert_int_equal(tarn__ld_be32(m + 12), (uint32_t)crc32(0, m + 16, (uInt)(size - 4)));
    assert_int_equal(m[16], magic);
    assert_int_equal(m[17], 0);
    size_t at = 18 + (magic ? 8 : 0);
    assert_int_equal((int32_t)tarn__ld_be32(m + at), -1); /* null keys here */
    int32_t vl = (int32_t)tarn__ld_be32(m + at + 4);
    assert_int_equal(vl, (int32_t)strlen(want[n]));
    assert_memory_equal(m + at + 8, want[n], (size_t)vl);
    q += 12 + size;
  }
  return n;
}

static void produce_legacy_down_converted(void **state) {
  (void)state;
  create_topic("old", 1);
  int fd = kconnect();
  tarn__karena a;
  tarn__karena_init(&a);
  uint8_t *f[12];
  int nf = 0;
  tarn__k_produce_resp pr;
  tarn__k_produce_partition_produce_response *r;
  tarn_buf set = TARN_BUF_INIT;
  /* v0: two magic-0 messages (their offset fields 0, as sarama sends
   * them): an entry of 2 records (LS-097) at 0 */
  tu_kafka_legacy_msg(&set, 0, 0, 0, "a", 1);
  tu_kafka_legacy_msg(&set, 0, 0, 0, "b", 1);
  r = produce_v(fd, 0, 1, "old", &set, &a, &pr, &f[nf++]);
  assert_int_equal(r->error_code, 0);
  assert_int_equal(r->base_offset, 0);
  /* v1: a gzip wrapper of magic 0 (absolute inner offsets): 3 records at 2 */
  tarn_buf_reset(&set);
  tu_kafka_wrapper(&set, 0, TARN_KAFKA_GZIP, 3);
  r = produce_v(fd, 1, 2, "old", &set, &a, &pr, &f[nf++]);
  assert_int_equal(r->error_code, 0);
  assert_int_equal(r->base_offset, 2);
  /* v2: a gzip wrapper of magic 1 (relative inner offsets 0, 1) at 5; the
   * v2 answer carries log_append_time -1 (CreateTime) */
  tarn_buf_reset(&set);
  tu_kafka_wrapper(&set, 1, TARN_KAFKA_GZIP, 2);
  r = produce_v(fd, 2, 3, "old", &set, &a, &pr, &f[nf++]);
  assert_int_equal(r->error_code, 0);
  assert_int_equal(r->base_offset, 5);
  assert_int_equal(r->log_append_time_ms, -1);
  /* v2 of a magic-2 batch (Kafka does not refuse it below v3) at 7 */
  tarn_buf_reset(&set);
  tu_kafka_v2_simple(&set, 2);
  r = produce_v(fd, 2, 4, "old", &set, &a, &pr, &f[nf++]);
  assert_int_equal(r->error_code, 0);
  assert_int_equal(r->base_offset, 7);
  /* a magic-0 message whose CRC32 is wrong: CORRUPT_MESSAGE (LS-095) */
  tarn_buf_reset(&set);
  tu_kafka_legacy_msg(&set, 0, 0, 0, "c", 1);
  set.data[set.len - 1] ^= 1;
  r = produce_v(fd, 0, 5, "old", &set, &a, &pr, &f[nf++]);
  assert_int_equal(r->error_code, 2);
  /* an empty message set: no record batch (LS-095), CORRUPT_MESSAGE */
  tarn_buf_reset(&set);
  r = produce_v(fd, 1, 6, "old", &set, &a, &pr, &f[nf++]);
  assert_int_equal(r->error_code, 2);
  /* Fetch v0: magic 0 messages at 0 ... 8, one record each (LS-099) */
  static const char *const vals[] = {"a", "b", "x", "x", "x", "x", "x", "v0", "v1"};
  tarn__k_fetch_resp fr;
  tarn__k_fetch_partition_data *p = fetch_v(fd, 0, 7, "old", 0, &a, &fr, &f[nf++]);
  assert_int_equal(p->error_code, 0);
  assert_int_equal(p->high_watermark, 9);
  assert_int_equal(check_message_set(&p->records, 0, 0, vals), 9);
  /* Fetch v2 from 3: magic 1, from the offset asked for */
  p = fetch_v(fd, 2, 8, "old", 3, &a, &fr, &f[nf++]);
  assert_int_equal(p->error_code, 0);
  assert_int_equal(check_message_set(&p->records, 1, 3, vals + 3), 6);
  /* Fetch v11: the entries as stored, their offset fields rewritten
   * (§3.11): five shallow magic-0 messages (the magic-0 wrapper's inner ones
   * among them), the magic-1 wrapper at its last offset, the v2 batch at
   * its first */
  p = fetch_v(fd, 11, 9, "old", 0, &a, &fr, &f[nf++]);
  assert_int_equal(p->error_code, 0);
  static const int magic[] = {0, 0, 0, 0, 0, 1, 2}, codec[] = {0, 0, 0, 0, 0, 1, 0};
  static const int64_t field[] = {0, 1, 2, 3, 4, 6, 7};
  size_t q = 0;
  for (int i = 0; i < 7; i++) {
    const uint8_t *m = p->records.p + q;
    assert_true(q + 17 <= (size_t)p->records.len);
    assert_int_equal(m[16], magic[i]);
    assert_int_equal((int64_t)tarn__ld_be64(m), field[i]);
    if (magic[i] < 2)
      assert_int_equal(m[17] & 7, codec[i]);
    q += 12 + tarn__ld_be32(m + 8);
  }
  assert_int_equal(q, (size_t)p->records.len);
  for (int i = 0; i < nf; i++)
    free(f[i]);
  tarn__karena_free(&a);
  tarn_buf_free(&set);
  close(fd);
}

static void produce_acks_and_fetch(void **state) {
  (void)state;
  create_topic("acks", 1);
  int fd = kconnect();
  tarn_buf batch = TARN_BUF_INIT, b = TARN_BUF_INIT;
  tu_kafka_v2_simple(&batch, 3);
  /* acks=0: no response; the ApiVersions after it is the first frame */
  produce_frame(&b, 7, 10, "acks", 0, &batch);
  tarn__k_api_versions_req av;
  tarn__kmsg_init(TARN__KAPI_API_VERSIONS, 0, &av);
  frame(&b, TARN__KAPI_API_VERSIONS, 2, 11, &av);
  send_all(fd, b.data, b.len);
  tarn__karena a;
  tarn__karena_init(&a);
  uint8_t *f[6];
  assert_int_equal(read_resp(fd, TARN__KAPI_API_VERSIONS, 2, &a, NULL, &f[0]), 11);
  /* acks=1: answered after the index record, with the entry's offset */
  tarn_buf_reset(&b);
  produce_frame(&b, 7, 12, "acks", 1, &batch);
  send_all(fd, b.data, b.len);
  tarn__k_produce_resp pr;
  assert_int_equal(read_resp(fd, TARN__KAPI_PRODUCE, 7, &a, &pr, &f[1]), 12);
  assert_int_equal(pr.responses.v[0].partition_responses.v[0].error_code, 0);
  /* the acks=0 batch came first: 3 records at 0, this one at 3 */
  assert_int_equal(pr.responses.v[0].partition_responses.v[0].base_offset, 3);
  /* Produce v7 of magic-0 messages: refused as Kafka does from v3 on,
   * nothing stored (v0-2: produce_legacy_down_converted) */
  tarn_buf old = TARN_BUF_INIT;
  tu_kafka_legacy_msg(&old, 0, 0, 0, "a", 1);
  tarn_buf_reset(&b);
  produce_frame(&b, 7, 13, "acks", 1, &old);
  tarn_buf_free(&old);
  send_all(fd, b.data, b.len);
  assert_int_equal(read_resp(fd, TARN__KAPI_PRODUCE, 7, &a, &pr, &f[2]), 13);
  assert_int_equal(pr.responses.v[0].partition_responses.v[0].error_code, 43);
  /* a bad CRC: CORRUPT_MESSAGE, nothing stored */
  batch.data[batch.len - 1] ^= 1;
  tarn_buf_reset(&b);
  produce_frame(&b, 7, 14, "acks", 1, &batch);
  send_all(fd, b.data, b.len);
  assert_int_equal(read_resp(fd, TARN__KAPI_PRODUCE, 7, &a, &pr, &f[3]), 14);
  assert_int_equal(pr.responses.v[0].partition_responses.v[0].error_code, 2);
  batch.data[batch.len - 1] ^= 1;
  /* fetch from offset 4: the entry holding it (3..5) comes whole, its base offset 3 */
  tarn_buf_reset(&b);
  fetch_frame(&b, 15, "acks", 4, 0);
  send_all(fd, b.data, b.len);
  tarn__k_fetch_resp fr;
  assert_int_equal(read_resp(fd, TARN__KAPI_FETCH, 11, &a, &fr, &f[4]), 15);
  tarn__k_fetch_partition_data *p = &fr.responses.v[0].partitions.v[0];
  assert_int_equal(p->error_code, 0);
  assert_int_equal(p->high_watermark, 6);
  assert_int_equal(p->last_stable_offset, 6);
  assert_int_equal(p->log_start_offset, 0);
  assert_int_equal(p->records.len, (int32_t)batch.len);
  uint64_t base = 0; /* the batch's baseOffset, the first 8 bytes, big-endian */
  for (int i = 0; i < 8; i++)
    base = base << 8 | p->records.p[i];
  assert_int_equal(base, 3); /* LS-099: stored as 0, read as the entry's offset */
  assert_memory_equal(p->records.p + 8, batch.data + 8, batch.len - 8);
  /* past the end: OFFSET_OUT_OF_RANGE */
  tarn_buf_reset(&b);
  fetch_frame(&b, 16, "acks", 7, 0);
  send_all(fd, b.data, b.len);
  assert_int_equal(read_resp(fd, TARN__KAPI_FETCH, 11, &a, &fr, &f[5]), 16);
  assert_int_equal(fr.responses.v[0].partitions.v[0].error_code, 1);
  for (int i = 0; i < 6; i++)
    free(f[i]);
  tarn__karena_free(&a);
  tarn_buf_free(&b);
  tarn_buf_free(&batch);
  close(fd);
}

/* A batch above the topic's max.message.bytes: MESSAGE_TOO_LARGE, nothing
 * stored. A fetch whose max_bytes is below the first entry gets that entry
 * whole (KIP-74), and only it. */
/* The answer to Produce corr (version ver) for its one partition; it points
 * into a and *f, which the caller frees. */
static tarn__k_produce_partition_produce_response
produce_answer(int fd, tarn__karena *a, int16_t ver, int32_t corr, uint8_t **f) {
  tarn__k_produce_resp pr;
  assert_int_equal(read_resp(fd, TARN__KAPI_PRODUCE, ver, a, &pr, f), corr);
  assert_int_equal(pr.responses.n, 1);
  return pr.responses.v[0].partition_responses.v[0];
}

/* Issue 35: a compacted topic refuses a record without a key, as Kafka: from
 * Produce v8 INVALID_RECORD with the record's index and Kafka's message,
 * before v8 CORRUPT_MESSAGE; records with keys are appended; a topic that
 * is not compacted takes keyless records. */
static void compacted_refuses_keyless(void **state) {
  (void)state;
  create_topic_with("cmp", 1, "cleanup.policy", "compact,delete");
  int fd = kconnect();
  tarn_buf keyed = TARN_BUF_INIT, third = TARN_BUF_INIT, b = TARN_BUF_INIT;
  tu_kafka_v2_keyed(&keyed, 3, 3);
  tu_kafka_v2_keyed(&third, 3, 2); /* record 2 has no key */
  produce_frame(&b, 8, 1, "cmp", 1, &third);
  produce_frame(&b, 7, 2, "cmp", 1, &third);
  produce_frame(&b, 8, 3, "cmp", 1, &keyed);
  send_all(fd, b.data, b.len);
  tarn__karena a;
  tarn__karena_init(&a);
  uint8_t *f[4];
  tarn__k_produce_partition_produce_response p = produce_answer(fd, &a, 8, 1, &f[0]);
  assert_int_equal(p.error_code, 87);
  assert_int_equal(p.record_errors.n, 1);
  assert_int_equal(p.record_errors.v[0].batch_index, 2);
  assert_true(p.error_message.len > 0);
  assert_non_null(strstr(p.error_message.p, "without key in topic partition cmp-0"));
  assert_int_equal(produce_answer(fd, &a, 7, 2, &f[1]).error_code, 2);
  p = produce_answer(fd, &a, 8, 3, &f[2]);
  assert_int_equal(p.error_code, 0);
  assert_int_equal(p.base_offset, 0);
  create_topic("plain", 1);
  tarn_buf_reset(&b);
  produce_frame(&b, 8, 4, "plain", 1, &third);
  send_all(fd, b.data, b.len);
  assert_int_equal(produce_answer(fd, &a, 8, 4, &f[3]).error_code, 0);
  for (int i = 0; i < 4; i++)
    free(f[i]);
  tarn__karena_free(&a);
  tarn_buf_free(&b);
  tarn_buf_free(&keyed);
  tarn_buf_free(&third);
  close(fd);
}

static void batch_limits(void **state) {
  (void)state;
  create_topic_with("small", 1, "max.message.bytes", "120");
  int fd = kconnect();
  tarn_buf small = TARN_BUF_INIT, big = TARN_BUF_INIT, b = TARN_BUF_INIT;
  tu_kafka_v2_simple(&small, 1);
  tu_kafka_v2_simple(&big, 20);
  assert_true(small.len <= 120 && big.len > 120);
  produce_frame(&b, 7, 1, "small", 1, &big);
  produce_frame(&b, 7, 2, "small", 1, &small);
  produce_frame(&b, 7, 3, "small", 1, &small);
  send_all(fd, b.data, b.len);
  tarn__karena a;
  tarn__karena_init(&a);
  uint8_t *f[4];
  tarn__k_produce_resp pr;
  assert_int_equal(read_resp(fd, TARN__KAPI_PRODUCE, 7, &a, &pr, &f[0]), 1);
  assert_int_equal(pr.responses.v[0].partition_responses.v[0].error_code, 10);
  assert_int_equal(read_resp(fd, TARN__KAPI_PRODUCE, 7, &a, &pr, &f[1]), 2);
  assert_int_equal(pr.responses.v[0].partition_responses.v[0].error_code, 0);
  assert_int_equal(pr.responses.v[0].partition_responses.v[0].base_offset, 0);
  assert_int_equal(read_resp(fd, TARN__KAPI_PRODUCE, 7, &a, &pr, &f[2]), 3);
  assert_int_equal(pr.responses.v[0].partition_responses.v[0].base_offset, 1);
  /* (after the acknowledgements: a request pipelined behind a produce runs once
   * the produce is queued, not answered) */
  tarn_buf_reset(&b);
  fetch_frame_max(&b, 4, "small", 0, 0, 1);
  send_all(fd, b.data, b.len);
  tarn__k_fetch_resp fr;
  assert_int_equal(read_resp(fd, TARN__KAPI_FETCH, 11, &a, &fr, &f[3]), 4);
  tarn__k_fetch_partition_data *p = &fr.responses.v[0].partitions.v[0];
  assert_int_equal(p->error_code, 0);
  assert_int_equal(p->high_watermark, 2);
  assert_int_equal(p->records.len, (int32_t)small.len); /* the first entry, whole, alone */
  for (int i = 0; i < 4; i++)
    free(f[i]);
  tarn__karena_free(&a);
  tarn_buf_free(&b);
  tarn_buf_free(&small);
  tarn_buf_free(&big);
  close(fd);
}

static void list_offsets(void **state) {
  (void)state;
  create_topic("lo", 1);
  int fd = kconnect();
  tarn_buf batch = TARN_BUF_INIT, b = TARN_BUF_INIT;
  tu_kafka_v2_simple(&batch, 2);
  produce_frame(&b, 7, 1, "lo", -1, &batch);
  send_all(fd, b.data, b.len);
  tarn__karena a;
  tarn__karena_init(&a);
  uint8_t *f[4];
  assert_int_equal(read_resp(fd, TARN__KAPI_PRODUCE, 7, &a, NULL, &f[0]), 1);
  int64_t ts[] = {-1, -2, 0, INT64_MAX};
  int64_t want[] = {2, 0, 0, -1};
  for (int i = 0; i < 4; i++) {
    tarn__k_list_offsets_req q;
    tarn__kmsg_init(TARN__KAPI_LIST_OFFSETS, 0, &q);
    q.replica_id = -1;
    tarn__k_list_offsets_list_offsets_topic t;
    tarn__k_list_offsets_list_offsets_partition p;
    memset(&t, 0, sizeof t);
    memset(&p, 0, sizeof p);
    t.name = (tarn__kstr){"lo", 2};
    p.partition_index = 0;
    p.timestamp = ts[i];
    t.partitions.n = 1;
    t.partitions.v = &p;
    q.topics.n = 1;
    q.topics.v = &t;
    tarn_buf_reset(&b);
    frame(&b, TARN__KAPI_LIST_OFFSETS, 2, 20 + i, &q);
    send_all(fd, b.data, b.len);
    tarn__k_list_offsets_resp r;
    uint8_t *g;
    assert_int_equal(read_resp(fd, TARN__KAPI_LIST_OFFSETS, 2, &a, &r, &g), 20 + i);
    assert_int_equal(r.topics.v[0].partitions.v[0].error_code, 0);
    assert_int_equal(r.topics.v[0].partitions.v[0].offset, want[i]);
    free(g);
  }
  free(f[0]);
  tarn__karena_free(&a);
  tarn_buf_free(&b);
  tarn_buf_free(&batch);
  close(fd);
}

static void oversized_request_closes(void **state) {
  (void)state;
  int fd = kconnect();
  tarn_buf b = TARN_BUF_INIT;
  tarn__k_api_versions_req av;
  tarn__kmsg_init(TARN__KAPI_API_VERSIONS, 0, &av);
  frame(&b, TARN__KAPI_API_VERSIONS, 1, 1, &av);
  /* then a frame announcing one byte more than the node takes */
  uint8_t big[4] = {(MAX_REQUEST + 1) >> 24, (MAX_REQUEST + 1) >> 16 & 0xff,
                    (MAX_REQUEST + 1) >> 8 & 0xff, (MAX_REQUEST + 1) & 0xff};
  tarn_buf_append(&b, big, 4);
  send_all(fd, b.data, b.len);
  tarn__karena a;
  tarn__karena_init(&a);
  uint8_t *f;
  assert_int_equal(read_resp(fd, TARN__KAPI_API_VERSIONS, 1, &a, NULL, &f), 1);
  free(f);
  assert_true(closed_within(fd, 3000));
  close(fd);
  tarn_buf_free(&b);
  tarn__karena_free(&a);
}

static void malformed_frames_close(void **state) {
  (void)state;
  /* shorter than a request header */
  int fd = kconnect();
  static const uint8_t tiny[] = {0, 0, 0, 4, 0, 3, 0, 1};
  send_all(fd, tiny, sizeof tiny);
  assert_true(closed_within(fd, 3000));
  close(fd);
  /* Metadata v1 whose topic array claims 1000 topics and holds none */
  fd = kconnect();
  static const uint8_t md[] = {0, 0, 0, 14, 0, 3, 0, 1, 0, 0, 0, 9, 0, 0, 0, 0, 0x03, 0xe8};
  send_all(fd, md, sizeof md);
  assert_true(closed_within(fd, 3000));
  close(fd);
  /* an API the node does not serve */
  fd = kconnect();
  static const uint8_t unk[] = {0, 0, 0, 10, 0x03, 0xe7, 0, 0, 0, 0, 0, 1, 0, 0};
  send_all(fd, unk, sizeof unk);
  assert_true(closed_within(fd, 3000));
  close(fd);
  /* Fetch v12, a version not served (every declared one is since issue 37) */
  fd = kconnect();
  static const uint8_t f12[] = {0, 0, 0, 10, 0, 1, 0, 12, 0, 0, 0, 1, 0, 0};
  send_all(fd, f12, sizeof f12);
  assert_true(closed_within(fd, 3000));
  close(fd);
  /* random bytes after a valid size: never a crash */
  uint64_t seed = 11;
  for (int i = 0; i < 50; i++) {
    fd = kconnect();
    uint8_t junk[64];
    size_t n = 8 + tu_rand(&seed) % 56;
    junk[0] = 0, junk[1] = 0, junk[2] = 0, junk[3] = (uint8_t)(n - 4);
    for (size_t j = 4; j < n; j++)
      junk[j] = (uint8_t)tu_rand(&seed);
    junk[4] = 0; /* an api key of the table's range */
    junk[5] = (uint8_t)(tu_rand(&seed) % 21);
    junk[6] = 0;
    send_all(fd, junk, n);
    uint8_t *f = NULL;
    /* an answer or a close, either within the timeout */
    struct pollfd pf = {fd, POLLIN, 0};
    assert_int_equal(poll(&pf, 1, 3000), 1);
    (void)f;
    close(fd);
  }
  /* the node serves on */
  fd = kconnect();
  api_versions_v(fd, 3, 77);
  tarn__karena a;
  tarn__karena_init(&a);
  uint8_t *f;
  assert_int_equal(read_resp(fd, TARN__KAPI_API_VERSIONS, 3, &a, NULL, &f), 77);
  free(f);
  tarn__karena_free(&a);
  close(fd);
}

static void idle_connection_closes(void **state) {
  (void)state;
  int fd = kconnect();
  int64_t t0 = now_ms();
  assert_true(closed_within(fd, IDLE_MS + 3000));
  assert_true(now_ms() - t0 >= IDLE_MS - 50);
  close(fd);
}

/* Pipelined on one connection, the DeleteTopics runs after the produce
 * before it and the Metadata after it (one request of a connection at a time). */
/* A DeleteTopics v3 request of one topic. */
static void delete_topics_frame(tarn_buf *out, int32_t corr, const char *topic) {
  tarn__k_delete_topics_req q;
  tarn__kmsg_init(TARN__KAPI_DELETE_TOPICS, 0, &q);
  tarn__kstr nm = {topic, (int32_t)strlen(topic)};
  q.topic_names.n = 1;
  q.topic_names.v = &nm;
  q.timeout_ms = 5000;
  frame(out, TARN__KAPI_DELETE_TOPICS, 3, corr, &q);
}

static void delete_topic(void **state) {
  (void)state;
  create_topic("gone", 2);
  int fd = kconnect();
  tarn_buf b = TARN_BUF_INIT, batch = TARN_BUF_INIT;
  tu_kafka_v2_simple(&batch, 1);
  produce_frame(&b, 7, 1, "gone", 1, &batch); /* this node's writer now holds a lease */
  delete_topics_frame(&b, 2, "gone");
  tarn__k_metadata_req md;
  tarn__kmsg_init(TARN__KAPI_METADATA, 0, &md);
  md.topics.n = 1;
  tarn__k_metadata_metadata_request_topic mt = {.name = {"gone", 4}};
  md.topics.v = &mt;
  md.allow_auto_topic_creation = false;
  frame(&b, TARN__KAPI_METADATA, 4, 3, &md);
  send_all(fd, b.data, b.len);
  tarn__karena a;
  tarn__karena_init(&a);
  uint8_t *f[3];
  tarn__k_produce_resp pr;
  assert_int_equal(read_resp(fd, TARN__KAPI_PRODUCE, 7, &a, &pr, &f[0]), 1);
  assert_int_equal(pr.responses.v[0].partition_responses.v[0].error_code, 0);
  tarn__k_delete_topics_resp dr;
  assert_int_equal(read_resp(fd, TARN__KAPI_DELETE_TOPICS, 3, &a, &dr, &f[1]), 2);
  assert_int_equal(dr.responses.v[0].error_code, 0);
  tarn__k_metadata_resp mr;
  assert_int_equal(read_resp(fd, TARN__KAPI_METADATA, 4, &a, &mr, &f[2]), 3);
  assert_int_equal(mr.topics.n, 1);
  assert_int_equal(mr.topics.v[0].error_code, 3);
  for (int i = 0; i < 3; i++)
    free(f[i]);
  tarn__karena_free(&a);
  tarn_buf_free(&b);
  tarn_buf_free(&batch);
  close(fd);
}

/* Runs the tarn command on the node's deployment: `tarn ARGS` with STREAM
 * in args replaced by the topic's stream (default/NAME-topic-id-ID). */
static void tarn_on_topic(const char *topic, const char *args) {
  char cmd[4096];
  snprintf(cmd, sizeof cmd,
           "s=$('%s' topic describe %s --home '%s/h' --json | sed -n 's/.*\"stream\": "
           "\"\\(.*\\)\".*/\\1/p') "
           "&& STREAM=default/$s && '%s' %s --home '%s/h' >'%s/cmd.log' 2>&1 || { cat '%s/cmd.log' "
           ">&2; false; }",
           getenv("TARN_BIN"), topic, home, getenv("TARN_BIN"), args, home, home, home);
  assert_int_equal(system(cmd), 0);
}

/* Produces batches of 3 records, entries from offset 3 * first: n
 * requests sent at once (within one batch window: one WAL object, one
 * index record of n entries), or one after another (one record each). */
static void produce_entries(int fd, const char *topic, int first, int n, int at_once,
                            tarn_buf *batch) {
  tarn__karena a;
  tarn__karena_init(&a);
  tarn_buf b = TARN_BUF_INIT;
  for (int i = first; at_once && i < first + n; i++)
    produce_frame(&b, 7, 100 + i, topic, 1, batch);
  if (at_once)
    send_all(fd, b.data, b.len);
  for (int i = first; i < first + n; i++) {
    tarn_buf_reset(&b);
    if (!at_once) {
      produce_frame(&b, 7, 100 + i, topic, 1, batch);
      send_all(fd, b.data, b.len);
    }
    uint8_t *f;
    tarn__k_produce_resp pr;
    assert_int_equal(read_resp(fd, TARN__KAPI_PRODUCE, 7, &a, &pr, &f), 100 + i);
    assert_int_equal(pr.responses.v[0].partition_responses.v[0].error_code, 0);
    assert_int_equal(pr.responses.v[0].partition_responses.v[0].base_offset, 3 * i);
    free(f);
  }
  tarn__karena_free(&a);
  tarn_buf_free(&b);
}

/* One Fetch of at most max_bytes from offset: its partition's error code;
 * *base the first batch's base offset (-1: no records). */
static int fetch_one(int fd, int32_t corr, const char *topic, int64_t offset, int32_t max_bytes,
                     int64_t *base) {
  tarn__karena a;
  tarn__karena_init(&a);
  tarn_buf b = TARN_BUF_INIT;
  fetch_frame_max(&b, corr, topic, offset, 0, max_bytes);
  send_all(fd, b.data, b.len);
  uint8_t *f;
  tarn__k_fetch_resp fr;
  assert_int_equal(read_resp(fd, TARN__KAPI_FETCH, 11, &a, &fr, &f), corr);
  const tarn__k_fetch_partition_data *p = &fr.responses.v[0].partitions.v[0];
  int err = p->error_code;
  *base = -1;
  if (p->records.len >= 8) {
    *base = 0;
    for (int i = 0; i < 8; i++)
      *base = *base << 8 | p->records.p[i];
  }
  free(f);
  tarn__karena_free(&a);
  tarn_buf_free(&b);
  return err;
}

/* The node keeps a consumer's reading position (its fetch cursor, read
 * ahead) between Fetches; what changed in the log since must win over
 * what the cursor holds. A trim past the cursor (LS-053): the next Fetch
 * at the cursor's offset is OFFSET_OUT_OF_RANGE, never the trimmed entry.
 * A compaction that replaced the records and a reclamation that deleted
 * the WAL objects under the cursor: the entries read the same (LS-055). A
 * deleted topic: UNKNOWN_TOPIC_OR_PARTITION, none of its data. */
static void fetch_cursor_invalidation(void **state) {
  (void)state;
  create_topic("cur", 1);
  int fd = kconnect();
  tarn_buf batch = TARN_BUF_INIT;
  tu_kafka_v2_simple(&batch, 3);
  produce_entries(fd, "cur", 0, 4, 1, &batch); /* 0..11, one record */
  produce_entries(fd, "cur", 4, 2, 0, &batch); /* 12..14, 15..17 */
  int32_t one = (int32_t)batch.len; /* a response of one entry: the cursor stays at the next */
  int64_t base;
  assert_int_equal(fetch_one(fd, 1, "cur", 0, one, &base), 0);
  assert_int_equal(base, 0);
  assert_int_equal(fetch_one(fd, 2, "cur", 3, one, &base), 0);
  assert_int_equal(base, 3);
  /* the cursor is at 6, entries 6..11 read ahead in its window; the log is
   * trimmed through 8 */
  tarn_on_topic("cur", "trim $STREAM --through 8");
  close(fd); /* idle past --kafka-idle-ms meanwhile: the node's cursors outlive it */
  fd = kconnect();
  assert_int_equal(fetch_one(fd, 3, "cur", 6, one, &base), 1); /* LS-053 */
  assert_int_equal(base, -1);
  assert_int_equal(fetch_one(fd, 4, "cur", 9, one, &base), 0);
  assert_int_equal(base, 9);
  /* the cursor is at 12; the records are compacted and their WAL objects
   * reclaimed: the same entries come from the compacted files (LS-055) */
  tarn_on_topic("cur", "compact --all");
  /* what reclamation does past its grace (minutes): every WAL object goes,
   * none is named by an index record now */
  char cmd[2048];
  snprintf(cmd, sizeof cmd, "find '%s/h' -name '*.wal' -delete", home);
  assert_int_equal(system(cmd), 0);
  close(fd);
  fd = kconnect();
  assert_int_equal(fetch_one(fd, 5, "cur", 12, one, &base), 0);
  assert_int_equal(base, 12);
  assert_int_equal(fetch_one(fd, 6, "cur", 15, one, &base), 0);
  assert_int_equal(base, 15);
  /* a cursor at 12 again, then the topic is deleted */
  assert_int_equal(fetch_one(fd, 7, "cur", 9, one, &base), 0);
  tarn_buf b = TARN_BUF_INIT;
  delete_topics_frame(&b, 8, "cur");
  send_all(fd, b.data, b.len);
  tarn__karena a;
  tarn__karena_init(&a);
  uint8_t *f;
  tarn__k_delete_topics_resp dr;
  assert_int_equal(read_resp(fd, TARN__KAPI_DELETE_TOPICS, 3, &a, &dr, &f), 8);
  assert_int_equal(dr.responses.v[0].error_code, 0);
  free(f);
  assert_int_equal(fetch_one(fd, 9, "cur", 12, one, &base), 3);
  assert_int_equal(base, -1);
  tarn__karena_free(&a);
  tarn_buf_free(&b);
  tarn_buf_free(&batch);
  close(fd);
}

/* Every partition of a Produce and of a Fetch gets its own answer, whatever
 * stage refused it (issue 32 item 3: the handlers' stages, api_produce.c and
 * api_fetch.c): the request-wide refusals answer every partition of every
 * topic with one error; an unknown topic, an unknown or negative partition
 * answer only theirs, with the skeleton's defaults (offsets -1), while a good
 * partition of the same request is appended and read. Written before the
 * handlers were split into stages, and passing on both. */
static void produce_stages(tarn_buf *out, int32_t corr, int16_t acks, int transactional,
                           const tarn_buf *batch) {
  tarn__k_produce_req q;
  tarn__kmsg_init(TARN__KAPI_PRODUCE, 0, &q);
  q.acks = acks;
  q.timeout_ms = 5000;
  if (transactional)
    q.transactional_id = (tarn__kstr){"tx", 2};
  static tarn__k_produce_topic_produce_data td[3];
  static tarn__k_produce_partition_produce_data pd[5];
  memset(td, 0, sizeof td);
  memset(pd, 0, sizeof pd);
  const int32_t index[5] = {0, 7, -1, 0, 0};
  for (int i = 0; i < 5; i++)
    pd[i] = (tarn__k_produce_partition_produce_data){.index = index[i],
                                                     .records = {batch->data, (int32_t)batch->len}};
  td[0] =
      (tarn__k_produce_topic_produce_data){.name = {"stages", 6}, .partition_data = {3, &pd[0]}};
  td[1] =
      (tarn__k_produce_topic_produce_data){.name = {"nosuch", 6}, .partition_data = {1, &pd[3]}};
  td[2] = (tarn__k_produce_topic_produce_data){.name = {"", 0}, .partition_data = {1, &pd[4]}};
  q.topic_data.n = 3;
  q.topic_data.v = td;
  frame(out, TARN__KAPI_PRODUCE, 7, corr, &q);
}

/* Checks a Produce answer to produce_stages: expect[i] the i-th partition's
 * error (the first's base offset is base when it is 0). */
static void check_stages(const tarn__k_produce_resp *pr, const int16_t expect[5], int64_t base) {
  const char *names[3] = {"stages", "nosuch", ""};
  const int32_t index[5] = {0, 7, -1, 0, 0}, nparts[3] = {3, 1, 1};
  assert_int_equal(pr->responses.n, 3);
  int k = 0;
  for (int t = 0; t < 3; t++) {
    const tarn__k_produce_topic_produce_response *o = &pr->responses.v[t];
    assert_int_equal(o->name.len, (int32_t)strlen(names[t]));
    assert_memory_equal(o->name.p, names[t], strlen(names[t]));
    assert_int_equal(o->partition_responses.n, nparts[t]);
    for (int j = 0; j < nparts[t]; j++, k++) {
      const tarn__k_produce_partition_produce_response *po = &o->partition_responses.v[j];
      assert_int_equal(po->index, index[k]);
      assert_int_equal(po->error_code, expect[k]);
      assert_int_equal(po->base_offset, expect[k] ? -1 : base);
      assert_int_equal(po->log_append_time_ms, -1);
      assert_int_equal(po->log_start_offset, -1);
    }
  }
}

static void stages_answer_every_partition(void **state) {
  (void)state;
  create_topic("stages", 2);
  int fd = kconnect();
  tarn_buf batch = TARN_BUF_INIT, b = TARN_BUF_INIT;
  tu_kafka_v2_simple(&batch, 2);
  produce_stages(&b, 1, 1, 1, &batch); /* transactional: every partition refused */
  produce_stages(&b, 2, 2, 0, &batch); /* acks 2: every partition refused */
  produce_stages(&b, 3, 1, 0, &batch); /* only stages/0 is appended */
  send_all(fd, b.data, b.len);
  tarn__karena a;
  tarn__karena_init(&a);
  uint8_t *f[4];
  tarn__k_produce_resp pr;
  assert_int_equal(read_resp(fd, TARN__KAPI_PRODUCE, 7, &a, &pr, &f[0]), 1);
  check_stages(&pr, (const int16_t[5]){53, 53, 53, 53, 53}, 0);
  assert_int_equal(read_resp(fd, TARN__KAPI_PRODUCE, 7, &a, &pr, &f[1]), 2);
  check_stages(&pr, (const int16_t[5]){21, 21, 21, 21, 21}, 0);
  assert_int_equal(read_resp(fd, TARN__KAPI_PRODUCE, 7, &a, &pr, &f[2]), 3);
  check_stages(&pr, (const int16_t[5]){0, 3, 3, 3, 3}, 0);
  /* Fetch: stages/0 reads the entry; stages/7 and nosuch/0 keep the defaults */
  tarn__k_fetch_req q;
  tarn__kmsg_init(TARN__KAPI_FETCH, 0, &q);
  q.max_wait_ms = 0;
  q.min_bytes = 1;
  q.max_bytes = 1 << 20;
  tarn__k_fetch_fetch_partition fp[3] = {{.partition = 0, .partition_max_bytes = 1 << 20},
                                         {.partition = 7, .partition_max_bytes = 1 << 20},
                                         {.partition = 0, .partition_max_bytes = 1 << 20}};
  tarn__k_fetch_fetch_topic ft[2] = {{.topic = {"stages", 6}, .partitions = {2, &fp[0]}},
                                     {.topic = {"nosuch", 6}, .partitions = {1, &fp[2]}}};
  q.topics.n = 2;
  q.topics.v = ft;
  tarn_buf_reset(&b);
  frame(&b, TARN__KAPI_FETCH, 11, 4, &q);
  send_all(fd, b.data, b.len);
  tarn__k_fetch_resp fr;
  assert_int_equal(read_resp(fd, TARN__KAPI_FETCH, 11, &a, &fr, &f[3]), 4);
  assert_int_equal(fr.responses.n, 2);
  assert_int_equal(fr.responses.v[0].partitions.n, 2);
  assert_int_equal(fr.responses.v[1].partitions.n, 1);
  tarn__k_fetch_partition_data *p = &fr.responses.v[0].partitions.v[0];
  assert_int_equal(p->error_code, 0);
  assert_int_equal(p->high_watermark, 2);
  assert_int_equal(p->log_start_offset, 0);
  assert_int_equal(p->records.len, (int32_t)batch.len);
  tarn__k_fetch_partition_data *bad[2] = {&fr.responses.v[0].partitions.v[1],
                                          &fr.responses.v[1].partitions.v[0]};
  for (int i = 0; i < 2; i++) {
    assert_int_equal(bad[i]->partition_index, i ? 0 : 7);
    assert_int_equal(bad[i]->error_code, 3);
    assert_int_equal(bad[i]->high_watermark, -1);
    assert_int_equal(bad[i]->last_stable_offset, -1);
    assert_int_equal(bad[i]->log_start_offset, -1);
    assert_int_equal(bad[i]->preferred_read_replica, -1);
    assert_true(bad[i]->records.len <= 0);
  }
  for (int i = 0; i < 4; i++)
    free(f[i]);
  tarn__karena_free(&a);
  tarn_buf_free(&b);
  tarn_buf_free(&batch);
  close(fd);
}

int main(void) {
  signal(SIGPIPE, SIG_IGN);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(api_versions_lists_the_table),
      cmocka_unit_test(api_versions_unknown_version),
      cmocka_unit_test(pipelined_in_order),
      cmocka_unit_test(produce_acks_and_fetch),
      cmocka_unit_test(produce_legacy_down_converted),
      cmocka_unit_test(fetch_behind_produce),
      cmocka_unit_test(fetch_waits_on_every_partition),
      cmocka_unit_test(batch_limits),
      cmocka_unit_test(compacted_refuses_keyless),
      cmocka_unit_test(list_offsets),
      cmocka_unit_test(oversized_request_closes),
      cmocka_unit_test(malformed_frames_close),
      cmocka_unit_test(idle_connection_closes),
      cmocka_unit_test(delete_topic),
      cmocka_unit_test(fetch_cursor_invalidation),
      cmocka_unit_test(stages_answer_every_partition),
  };
  return cmocka_run_group_tests(tests, start_node, stop_node);
}
