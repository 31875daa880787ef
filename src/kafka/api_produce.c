/* Produce (key 0): versions 0-8 answered. Each partition's records become one
 * entry of the partition's log, appended through the node's writer of the
 * topic's batch window, so the batches of many requests and partitions share
 * WAL objects; a partition is answered once its index record is committed
 * (A4), for acks=1 and acks=-1 alike (the stores replicate: there is no
 * follower to wait for). An express topic's partition is appended only by
 * its leader, through the node's express writer, and answered when its slot
 * is committed (W copies) and released; any other node answers
 * NOT_LEADER_OR_FOLLOWER (issue 15; kexpress.c). acks=0 gets no response,
 * and a closed connection when something failed (as Kafka). Versions 0-2
 * carry magic 0/1 message sets (issue 37): entries as the binding allows
 * them (LS-097), compressed wrappers whose inner offsets the reader cannot
 * assign stored as their inner messages (tarn_kafka_legacy_flatten). */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include <stdio.h>

#include "kafka/api.h"
#include "kafka/producer.h"
#include "kafka/proto/kproto.h"
#include "log/appender_impl.h"
#include "tarn/buf.h"
#include "tarn/kafka.h"
#include "tarn/kafka_topics.h"
#include "tarn/error.h"
#include "tarn/express.h"
#include "tarn/writer.h"
#include "util/clock.h"
#include "util/planted.h"

typedef struct pctx pctx;
/* One partition's append in flight. */
typedef struct pslot {
  pctx *ctx;
  tarn__k_produce_partition_produce_response *out;
  /* an idempotent producer's batch (pid >= 0): recorded after A4 */
  struct tarn__kprod *prod;
  int64_t pid;
  int16_t epoch;
  int32_t seq;
  uint32_t count;
  char key[24]; /* the partition: its log ID */
  tarn__knode *node;
  uint64_t log_id;
  int express;
} pslot;

struct pctx {
  tarn__kreq *req;
  tarn__k_produce_resp resp;
  int acks;
  atomic_int pending; /* appends not yet answered, + 1 while queuing */
  atomic_int failed;
};

static void ctx_release(pctx *c) {
  if (atomic_fetch_sub_explicit(&c->pending, 1, memory_order_acq_rel) != 1)
    return;
  /* The last one: every slot's answer is written (acq_rel orders them). */
  if (c->acks == 0) {
    if (atomic_load(&c->failed))
      tarn__kreq_close(c->req);
    else
      tarn__kreq_no_response(c->req);
  } else {
    tarn__kreq_respond(c->req, &c->resp);
  }
  free(c);
}

static int16_t append_error(int status) {
  switch (status) {
  case TARN_EFENCED: /* the topic was deleted under the produce */
  case TARN_ENOTFOUND: return TARN__KERR_UNKNOWN_TOPIC_OR_PARTITION;
  case TARN_ECORRUPT: return TARN__KERR_CORRUPT_MESSAGE;
  case TARN_ETIMEDOUT:
  /* an express append of unknown outcome (its slot halted with a copy
   * written: a fence may yet repair it, and settlement index it): Kafka
   * answers REQUEST_TIMED_OUT when acks=all could not be confirmed in time,
   * an outcome it does not know either. Retryable: the client retries (a
   * duplicate at worst, as after any timeout), where KAFKA_STORAGE_ERROR
   * would say the log's storage failed */
  case TARN_EUNKNOWN: return TARN__KERR_REQUEST_TIMED_OUT;
  case TARN_EBUSY:    /* an express log: the open gate defers (a predecessor lives or */
  case TARN_EUNAVAIL: /* is finishing), or this node is handing it over; retryable */
    return TARN__KERR_NOT_LEADER_OR_FOLLOWER;
  default: return TARN__KERR_KAFKA_STORAGE_ERROR;
  }
}

/* A produce to an express log that failed with anything but a retryable
 * refusal (NOT_LEADER_OR_FOLLOWER): the operator sees why, at most once a
 * second per node (a failed writer fails every append until it is reopened). */
static void express_failed(tarn__knode *n, uint64_t log_id, int rc, const char *msg) {
  static _Atomic int64_t last_ms;
  if (!n->cfg.express_log || append_error(rc) == TARN__KERR_NOT_LEADER_OR_FOLLOWER)
    return;
  int64_t now = tarn__mono_ms();
  int64_t prev = atomic_load(&last_ms);
  if (now - prev < 1000 || !atomic_compare_exchange_strong(&last_ms, &prev, now))
    return;
  n->cfg.express_log(n, "express produce failed", log_id, rc, msg);
}

static void appended(void *arg, int status, uint64_t offset, int64_t timestamp_ms) {
  (void)timestamp_ms;
  pslot *s = arg;
  if (status && s->express)
    express_failed(s->node, s->log_id, status, NULL);
  if (s->pid >= 0 && status) /* an outcome unknown keeps the claim, to be settled */
    tarn__kprod_abandon(s->prod, s->key, s->pid, s->seq,
                        status == TARN_EUNKNOWN || status == TARN_ETIMEDOUT);
  else if (s->pid >= 0) /* a failed write of the state leaves this node's memory of it */
    tarn__kprod_record(s->prod, s->key, s->pid, s->epoch, s->seq, (int32_t)s->count,
                       (int64_t)offset);
  if (status) {
    s->out->error_code = append_error(status);
    atomic_store(&s->ctx->failed, 1);
  } else {
    s->out->error_code = 0;
    s->out->base_offset = (int64_t)offset; /* LS-099: the batch's offsets start at the entry's */
  }
  pctx *c = s->ctx;
  ctx_release(c);
}

/* Checks one partition's records as the binding and Kafka require: whole
 * batches (LS-095 ... LS-098 through tarn_kafka_check's rules: magic 2 with
 * base offset 0 and its CRC32C, no control or transactional batch; magic 0/1
 * messages with their CRC32, a compressed wrapper holding at least one
 * record), magic 2 only from version 3 on (as Kafka), none above the topic's
 * max.message.bytes. Returns 0 and the record count, or an error code. */
static int16_t check_records(const tarn__kbytes *rec, int16_t version, int32_t max_bytes,
                             uint32_t *count, tarn_kafka_batch *first) {
  if (rec->len <= 0)
    return TARN__KERR_CORRUPT_MESSAGE;
  tarn_kafka_iter it;
  tarn_kafka_iter_init(&it, rec->p, (size_t)rec->len, 0);
  tarn_kafka_batch b;
  int rc;
  while ((rc = tarn_kafka_iter_next(&it, &b)) == 1) {
    if (it.batches == 1)
      *first = b;
    if (b.magic != 2 && version >= 3)
      return TARN__KERR_UNSUPPORTED_FOR_MESSAGE_FORMAT;
    if (b.len > (size_t)max_bytes)
      return TARN__KERR_MESSAGE_TOO_LARGE;
  }
  if (rc < 0) {
    /* a batch too large for its frame is still the size rule's (Kafka
     * checks the size before the CRC) */
    return TARN__KERR_CORRUPT_MESSAGE;
  }
  if (it.records == 0 || it.records > UINT32_MAX)
    return TARN__KERR_CORRUPT_MESSAGE;
  *count = (uint32_t)it.records;
  return 0;
}

/* Whether payload's first batch is producer pid's with base sequence seq. */
static int batch_is(const void *payload, size_t len, int64_t pid, int32_t seq) {
  tarn_kafka_iter ki;
  tarn_kafka_batch b;
  tarn_kafka_iter_init(&ki, payload, len, 0);
  return tarn_kafka_iter_next(&ki, &b) == 1 && b.producer_id == pid && b.base_sequence == seq;
}

typedef struct xfind {
  int64_t pid;
  int32_t seq;
  int64_t at;
} xfind;

static int tail_match(void *arg, uint64_t offset, const void *payload, size_t len,
                      uint32_t records) {
  (void)records;
  xfind *f = arg;
  if (!batch_is(payload, len, f->pid, f->seq))
    return 0;
  f->at = (int64_t)offset;
  return 1;
}

int tarn__kproduce_find(void *arg, void *ctx, const char *key, int64_t pid, int32_t first_seq,
                        int64_t from, int64_t *offset) {
  tarn__knode *n = arg;
  tarn_xwriter *xw = ctx;
  uint64_t log_id = strtoull(key, NULL, 10);
  uint64_t start = from < 0 ? 0 : (uint64_t)from;
  int rc;
  if (xw && !TARN__PLANTED(TARN__BUG_KPROD_XFIND_INDEX_ONLY)) {
    /* An express log (issue 31): "not found" in its index alone is no
     * promise. A batch acknowledged by an earlier writer of the log may sit
     * in an epoch not yet settled (a node that died, before this writer's
     * first append passed the gate), and one this writer acknowledged may
     * not be absorbed yet. So the log is led first (the gate settles every
     * earlier writer into the index), then this writer's tail is read, then
     * the index: absorb moves entries from the tail into the index and never
     * back, so in this order none is missed. */
    if ((rc = tarn_xwriter_lead(xw, log_id)) != 0)
      return rc;
    xfind f = {pid, first_seq, -1};
    if (tarn_xwriter_read_tail(xw, log_id, start, tail_match, &f, NULL) == 1) {
      *offset = f.at;
      return 1;
    }
  }
  tarn_log_iter *it;
  if ((rc = tarn_log_iter_open(n->reader, log_id, start, &it)) != 0)
    return rc;
  tarn_entry e;
  while ((rc = tarn_log_iter_next(it, &e, 0)) == 0)
    if (batch_is(e.payload, e.payload_len, pid, first_seq)) {
      *offset = (int64_t)e.offset;
      tarn_log_iter_close(it);
      return 1;
    }
  tarn_log_iter_close(it);
  return rc == TARN_EEND ? 0 : rc;
}

/* The stages of a Produce (issue 32 item 3): the request-wide refusals
 * (produce_refusal), then per topic its resolution and writer (produce_topic),
 * then per partition its checks (produce_checks), the express leadership
 * (produce_express_lead), the idempotent producer's verdict (produce_verdict)
 * and the append (produce_append); produce_partition runs them in order. */

/* One topic of the request, as its partitions see it. */
typedef struct ptopic {
  tarn_kafka_topic t;
  int16_t err;      /* every partition's answer (a refusal, an unknown topic), or 0 */
  int express;      /* issue 15: written by the partition's leader's express writer */
  tarn_writer *w;   /* the standard writer of the topic's batch window, held */
  tarn_appender *a; /* w's appender */
} ptopic;

/* One partition of the request on its way to its append. */
typedef struct ppart {
  tarn__k_produce_partition_produce_data *in;
  tarn__k_produce_partition_produce_response *out;
  uint64_t log_id;
  uint32_t count;         /* the records' count (check_records) */
  tarn_kafka_batch first; /* the first batch: producer_id -1 unless idempotent */
  tarn_xwriter *xw;       /* an express partition's writer, held */
  tarn_appender *a;       /* the partition's appender: xw's, or the topic's */
  char key[24];           /* the partition: its log ID */
} ppart;

/* The request-wide refusals: one error for every partition, or 0. */
static int16_t produce_refusal(const tarn__kreq *req, const tarn__k_produce_req *b) {
  if (b->transactional_id.len >= 0) /* the binding forbids transactional batches */
    return TARN__KERR_TRANSACTIONAL_ID_AUTHORIZATION_FAILED;
  if (b->acks != 0 && b->acks != 1 && b->acks != -1)
    return TARN__KERR_INVALID_REQUIRED_ACKS;
  return 0;
}

/* Versions 0-2: the compressed wrappers whose inner offsets the reader
 * cannot assign become their inner messages (kafka_legacy.c says why), in
 * the request's arena: the records the append takes. */
static int16_t produce_flatten(tarn__kreq *req, tarn__kbytes *rec) {
  tarn_buf out = TARN_BUF_INIT;
  int changed = 0;
  int rc = tarn_kafka_legacy_flatten(rec->p, (size_t)rec->len, &out, &changed);
  uint8_t *p =
      !rc && changed && out.len <= INT32_MAX ? tarn__karena_alloc(req->arena, out.len) : NULL;
  if (p) {
    memcpy(p, out.data, out.len);
    *rec = (tarn__kbytes){p, (int32_t)out.len};
  }
  tarn_buf_free(&out);
  return rc || (changed && !p) ? TARN__KERR_UNKNOWN_SERVER_ERROR : 0;
}

/* Issue 35: a compacted topic keeps the latest record of each key, so a
 * record without a key is refused, as Kafka's LogValidator does: from v8
 * INVALID_RECORD naming the record (its index in the partition's records)
 * with Kafka's message; before v8, which has no such code, CORRUPT_MESSAGE
 * (Kafka answers old versions so). */
typedef struct keyless {
  int32_t index, found;
} keyless;

static int keyless_cb(void *arg, const tarn_kafka_record *r) {
  keyless *k = arg;
  if (r->key_len < 0) {
    k->found = k->index;
    return 1;
  }
  k->index++;
  return 0;
}

static int16_t produce_keys(tarn__kreq *req, const ptopic *tp, ppart *pp) {
  keyless k = {0, -1};
  const tarn__kbytes *rec = &pp->in->records;
  int rc = tarn_kafka_records(rec->p, (size_t)rec->len, 0, 0, keyless_cb, &k);
  if (rc < 0)
    return TARN__KERR_CORRUPT_MESSAGE;
  if (k.found < 0)
    return 0;
  if (req->api_version < 8)
    return TARN__KERR_CORRUPT_MESSAGE;
  char msg[TARN_KAFKA_TOPIC_NAME_MAX + 96];
  snprintf(msg, sizeof msg,
           "Compacted topic cannot accept message without key in topic partition %s-%d.",
           tp->t.name, (int)pp->in->index);
  tarn__k_produce_batch_index_and_error_message *e =
      tarn__kresp_entries(req, 1, sizeof *e, &pp->out->record_errors.n);
  if (e) {
    e->batch_index = k.found;
    e->batch_index_error_message = (tarn__kstr){NULL, -1};
    pp->out->record_errors.v = e;
  }
  pp->out->error_message = tarn__kresp_str(req, msg);
  return TARN__KERR_INVALID_RECORD;
}

/* The partition's log and its records' checks. */
static int16_t produce_checks(tarn__kreq *req, const ptopic *tp, ppart *pp) {
  if (tp->err)
    return tp->err;
  if (pp->in->index < 0 || tarn_kafka_topic_log(&tp->t, (uint32_t)pp->in->index, &pp->log_id))
    return TARN__KERR_UNKNOWN_TOPIC_OR_PARTITION;
  int16_t err = check_records(&pp->in->records, req->api_version, tp->t.max_message_bytes,
                              &pp->count, &pp->first);
  if (!err && tp->t.compacted)
    err = produce_keys(req, tp, pp);
  if (!err && req->api_version < 3)
    err = produce_flatten(req, &pp->in->records);
  return err;
}

/* An express partition: this node's leadership, then its express writer
 * (held in pp->xw on success). */
static int16_t produce_express_lead(tarn__knode *node, const ptopic *tp, ppart *pp) {
  /* not the leader (or draining): the client refreshes its metadata
   * and retries at the leader; nothing was appended */
  uint32_t part = (uint32_t)pp->in->index;
  int lead = tarn__kexpress_leads(node, &tp->t, part);
  int16_t err = lead < 0 ? TARN__KERR_LEADER_NOT_AVAILABLE /* who leads is unknown */
                : !lead  ? TARN__KERR_NOT_LEADER_OR_FOLLOWER
                : (lead = tarn__kexpress_writer(node, &tp->t, part, pp->log_id, &pp->xw))
                    ? append_error(lead)
                    : 0;
  pp->a = tarn_xwriter_appender(pp->xw);
  if (lead < 0) /* who leads unknown, or the writer would not open */
    express_failed(node, pp->log_id, lead, tarn_errmsg());
  return err;
}

/* An idempotent producer's batch (producer.h): its sequence is checked
 * before the append; a retry gets its original offset (*dup: answered). */
static int16_t produce_verdict(tarn__knode *node, ppart *pp, int *dup) {
  tarn__kprod_verdict v;
  int prc = tarn__kprod_check_in(node->producers, pp->xw, pp->key, pp->first.producer_id,
                                 pp->first.producer_epoch, pp->first.base_sequence,
                                 (int32_t)pp->count, &v);
  if (prc)
    return TARN__KERR_KAFKA_STORAGE_ERROR;
  if (v.error)
    return v.error;
  if (v.dup) {
    pp->out->base_offset = v.base_offset;
    *dup = 1;
  }
  return 0;
}

/* Queues the partition's append; appended answers it. */
static int16_t produce_append(tarn__knode *node, pctx *c, int express, ppart *pp) {
  pslot *s = tarn__karena_alloc(c->req->arena, sizeof *s);
  if (!s) {
    if (pp->first.producer_id >= 0)
      tarn__kprod_abandon(node->producers, pp->key, pp->first.producer_id, pp->first.base_sequence,
                          0);
    return TARN__KERR_UNKNOWN_SERVER_ERROR;
  }
  s->ctx = c;
  s->out = pp->out;
  s->prod = node->producers;
  s->pid = pp->first.producer_id;
  s->epoch = pp->first.producer_epoch;
  s->seq = pp->first.base_sequence;
  s->count = pp->count;
  s->node = node;
  s->log_id = pp->log_id;
  s->express = express;
  memcpy(s->key, pp->key, sizeof pp->key);
  atomic_fetch_add(&c->pending, 1);
  /* the appender (issue 32 item 1): an express writer answers once W copies
   * hold the entry's slot (and its predecessors'); a standard one after A4.
   * check_records ran the binding's checks (LS-095 ... LS-098, the CRC32C
   * included) over these bytes to their end, and count is their record
   * count: neither writer checks them again (kafka_checked). Issue 31 items
   * 3 and 4: the append is conditional on the producer's record (its claim
   * not revoked): the guard, met with a standard writer's index put, or
   * compared right before an express writer's append, which has no index
   * put of its own (docs/kafka.md, limits) */
  const tarn__kbytes *rec = &pp->in->records;
  tarn__append_guard g = {0};
  int arc = s->pid < 0 ? 0 : tarn__kprod_guard(s->prod, s->key, s->pid, &g);
  tarn__append_opts o = {.kafka_checked = 1, .guard = g.domain ? &g : NULL};
  if (!arc)
    arc = tarn__appender_append(pp->a, pp->log_id, rec->p, (size_t)rec->len, pp->count, &o,
                                appended, s);
  if (!arc)
    return 0;
  atomic_fetch_sub(&c->pending, 1);
  if (express)
    express_failed(node, pp->log_id, arc, tarn_errmsg());
  if (s->pid >= 0)
    tarn__kprod_abandon(s->prod, s->key, s->pid, s->seq, 0);
  return append_error(arc);
}

/* The partition's answer, before anything is known. */
static void produce_part_init(tarn__k_produce_partition_produce_response *po, int32_t index) {
  memset(po, 0, sizeof *po);
  po->index = index;
  po->base_offset = -1;
  po->log_append_time_ms = -1; /* CreateTime: the producer's timestamps stand */
  po->log_start_offset = -1;
  po->error_message = (tarn__kstr){NULL, -1};
}

/* One partition: its checks, its writer, its producer's verdict, its append. */
static void produce_partition(tarn__knode *node, pctx *c, const ptopic *tp, ppart *pp) {
  produce_part_init(pp->out, pp->in->index);
  pp->first.producer_id = -1;
  int16_t err = produce_checks(c->req, tp, pp);
  if (!err && tp->express)
    err = produce_express_lead(node, tp, pp);
  snprintf(pp->key, sizeof pp->key, "%llu", (unsigned long long)pp->log_id);
  if (!err && pp->first.producer_id >= 0 && node->producers) {
    int dup = 0;
    err = produce_verdict(node, pp, &dup);
    if (dup) {
      if (pp->xw)
        tarn__kexpress_writer_done(node);
      return;
    }
  } else {
    pp->first.producer_id = -1;
  }
  if (!err) {
    if (!tp->express)
      pp->a = tp->a;
    err = produce_append(node, c, tp->express, pp);
  }
  if (pp->xw) /* let go before the next partition's tarn__kexpress_writer */
    tarn__kexpress_writer_done(node);
  if (err) {
    pp->out->error_code = err;
    atomic_store(&c->failed, 1);
  }
}

/* One topic: its partitions' answers, the topic and its writer (a standard
 * topic's) held while they are appended. *all_err: the request-wide refusal,
 * set here when the topic's answers cannot be allocated. */
static void produce_topic(tarn__knode *node, pctx *c, tarn__k_produce_topic_produce_data *td,
                          tarn__k_produce_topic_produce_response *o, int16_t *all_err) {
  o->name = td->name;
  int32_t np;
  tarn__k_produce_partition_produce_response *pr =
      tarn__kresp_entries(c->req, td->partition_data.n, sizeof *pr, &np);
  if (!pr)
    *all_err = TARN__KERR_UNKNOWN_SERVER_ERROR;
  o->partition_responses.n = np;
  o->partition_responses.v = pr;
  ptopic tp;
  memset(&tp, 0, sizeof tp);
  int trc = *all_err           ? 0
            : td->name.len > 0 ? tarn__knode_topic(node, td->name.p, (size_t)td->name.len, &tp.t)
                               : TARN_ENOTFOUND;
  int have_t = !*all_err && !trc, have_w = 0;
  /* issue 15: an express topic's partitions are written by their leader's
   * express writer only (kexpress.c) */
  tp.express = have_t && tarn__kexpress_is(&tp.t);
  if (have_t && !tp.express)
    have_w = (trc = tarn__knode_writer(node, tp.t.batch_ms, &tp.w)) == 0;
  tp.a = tarn_writer_appender(tp.w);
  tp.err = *all_err ? *all_err : trc ? tarn__kerr_of(trc) : 0;
  for (int32_t j = 0; j < np; j++) {
    ppart pp = {.in = &td->partition_data.v[j], .out = &pr[j]};
    produce_partition(node, c, &tp, &pp);
  }
  if (have_w)
    tarn__knode_writer_done(node);
  if (have_t)
    tarn_kafka_topic_free(&tp.t);
}

void tarn__kapi_produce(tarn__knode *node, tarn__kreq *req) {
  tarn__k_produce_req b;
  if (tarn__kreq_body(req, &b))
    return;
  pctx *c = calloc(1, sizeof *c);
  int32_t nt;
  tarn__k_produce_topic_produce_response *tr =
      c ? tarn__kresp_entries(req, b.topic_data.n, sizeof *tr, &nt) : NULL;
  if (!tr) {
    free(c);
    tarn__kreq_close(req);
    return;
  }
  c->req = req;
  c->acks = b.acks;
  tarn__kmsg_init(TARN__KAPI_PRODUCE, 1, &c->resp);
  atomic_init(&c->pending, 1);
  c->resp.responses.n = nt;
  c->resp.responses.v = tr;
  /* The request-wide refusals answer every partition with one error. */
  int16_t all_err = produce_refusal(req, &b);
  for (int32_t i = 0; i < nt; i++)
    produce_topic(node, c, &b.topic_data.v[i], &tr[i], &all_err);
  ctx_release(c); /* the queuing's own count: answers now if nothing is in flight */
}
