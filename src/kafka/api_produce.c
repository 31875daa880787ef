/* Produce (key 0): versions 3-8 answered; 0-2 advertised and refused with
 * UNSUPPORTED_VERSION (api.c says why). Each partition's records become one
 * entry of the partition's log, appended through the node's writer of the
 * topic's batch window, so the batches of many requests and partitions share
 * WAL objects; a partition is answered once its index record is committed
 * (A4), for acks=1 and acks=-1 alike (the stores replicate: there is no
 * follower to wait for). An express topic's partition is appended only by
 * its leader, through the node's express writer, and answered when its slot
 * is committed (W copies) and released; any other node answers
 * NOT_LEADER_OR_FOLLOWER (issue 15; kexpress.c). acks=0 gets no response,
 * and a closed connection when something failed (as Kafka). */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include <stdio.h>

#include "kafka/api.h"
#include "kafka/producer.h"
#include "kafka/proto/kproto.h"
#include "log/writer_checked.h"
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
  n->cfg.express_log("express produce failed", log_id, rc, msg);
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
 * magic-2 batches (LS-095 ... LS-098 through tarn_kafka_check's rules: base
 * offset 0, CRC32C, no control or transactional batch), none above the
 * topic's max.message.bytes. Returns 0 and the record count, or an error code. */
static int16_t check_records(const tarn__kbytes *rec, int32_t max_bytes, uint32_t *count,
                             tarn_kafka_batch *first) {
  if (rec->len <= 0)
    return TARN__KERR_CORRUPT_MESSAGE;
  tarn_kafka_iter it;
  tarn_kafka_iter_init(&it, rec->p, (size_t)rec->len, 0);
  tarn_kafka_batch b;
  int rc;
  while ((rc = tarn_kafka_iter_next(&it, &b)) == 1) {
    if (it.batches == 1)
      *first = b;
    if (b.magic != 2)
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

void tarn__kapi_produce(tarn__knode *node, tarn__kreq *req) {
  tarn__k_produce_req b;
  if (tarn__kreq_body(req, &b))
    return;
  pctx *c = calloc(1, sizeof *c);
  if (!c) {
    tarn__kreq_close(req);
    return;
  }
  c->req = req;
  c->acks = b.acks;
  tarn__kmsg_init(TARN__KAPI_PRODUCE, 1, &c->resp);
  atomic_init(&c->pending, 1);
  int32_t nt = b.topic_data.n > 0 ? b.topic_data.n : 0;
  tarn__k_produce_topic_produce_response *tr =
      tarn__karena_alloc(req->arena, (nt ? (size_t)nt : 1) * sizeof *tr);
  if (!tr) {
    free(c);
    tarn__kreq_close(req);
    return;
  }
  c->resp.responses.n = nt;
  c->resp.responses.v = tr;
  /* The request-wide refusals answer every partition with one error. */
  int16_t all_err = 0;
  if (req->api_version < 3)
    all_err = TARN__KERR_UNSUPPORTED_VERSION;
  else if (b.transactional_id.len >= 0) /* the binding forbids transactional batches */
    all_err = TARN__KERR_TRANSACTIONAL_ID_AUTHORIZATION_FAILED;
  else if (b.acks != 0 && b.acks != 1 && b.acks != -1)
    all_err = TARN__KERR_INVALID_REQUIRED_ACKS;
  for (int32_t i = 0; i < nt; i++) {
    tarn__k_produce_topic_produce_data *td = &b.topic_data.v[i];
    tarn__k_produce_topic_produce_response *o = &tr[i];
    memset(o, 0, sizeof *o);
    o->name = td->name;
    int32_t np = td->partition_data.n > 0 ? td->partition_data.n : 0;
    tarn__k_produce_partition_produce_response *pr =
        tarn__karena_alloc(req->arena, (np ? (size_t)np : 1) * sizeof *pr);
    if (!pr) {
      all_err = TARN__KERR_UNKNOWN_SERVER_ERROR;
      np = 0;
    }
    o->partition_responses.n = np;
    o->partition_responses.v = pr;
    tarn_kafka_topic t;
    memset(&t, 0, sizeof t);
    int trc = all_err            ? 0
              : td->name.len > 0 ? tarn__knode_topic(node, td->name.p, (size_t)td->name.len, &t)
                                 : TARN_ENOTFOUND;
    int have_t = !all_err && !trc;
    tarn_writer *w = NULL;
    int have_w = 0;
    /* issue 15: an express topic's partitions are written by their leader's
     * express writer only (kexpress.c) */
    int express = have_t && tarn__kexpress_is(&t);
    if (have_t && !express)
      have_w = (trc = tarn__knode_writer(node, t.batch_ms, &w)) == 0;
    for (int32_t j = 0; j < np; j++) {
      tarn__k_produce_partition_produce_data *pd = &td->partition_data.v[j];
      tarn__k_produce_partition_produce_response *po = &pr[j];
      memset(po, 0, sizeof *po);
      po->index = pd->index;
      po->base_offset = -1;
      po->log_append_time_ms = -1; /* CreateTime: the producer's timestamps stand */
      po->log_start_offset = -1;
      po->error_message = (tarn__kstr){NULL, -1};
      int16_t err = all_err ? all_err : trc ? tarn__kerr_of(trc) : 0;
      uint64_t log_id = 0;
      if (!err && (pd->index < 0 || tarn_kafka_topic_log(&t, (uint32_t)pd->index, &log_id)))
        err = TARN__KERR_UNKNOWN_TOPIC_OR_PARTITION;
      uint32_t count = 0;
      tarn_kafka_batch first = {.producer_id = -1};
      if (!err)
        err = check_records(&pd->records, t.max_message_bytes, &count, &first);
      tarn_xwriter *xw = NULL;
      if (!err && express) {
        /* not the leader (or draining): the client refreshes its metadata
         * and retries at the leader; nothing was appended */
        int lead = tarn__kexpress_leads(node, &t, (uint32_t)pd->index);
        err = lead < 0 ? TARN__KERR_LEADER_NOT_AVAILABLE /* who leads is unknown */
              : !lead  ? TARN__KERR_NOT_LEADER_OR_FOLLOWER
              : (lead = tarn__kexpress_writer(node, &t, (uint32_t)pd->index, log_id, &xw))
                  ? append_error(lead)
                  : 0;
        if (lead < 0) /* who leads unknown, or the writer would not open */
          express_failed(node, log_id, lead, tarn_errmsg());
      }
      char key[24];
      snprintf(key, sizeof key, "%llu", (unsigned long long)log_id);
      if (!err && first.producer_id >= 0 && node->producers) {
        /* an idempotent producer's batch (producer.h): its sequence is
         * checked before the append; a retry gets its original offset */
        tarn__kprod_verdict v;
        int prc =
            tarn__kprod_check_in(node->producers, xw, key, first.producer_id, first.producer_epoch,
                                 first.base_sequence, (int32_t)count, &v);
        if (prc) {
          err = TARN__KERR_KAFKA_STORAGE_ERROR;
        } else if (v.error) {
          err = v.error;
        } else if (v.dup) {
          po->base_offset = v.base_offset;
          if (xw)
            tarn__kexpress_writer_done(node);
          continue;
        }
      } else {
        first.producer_id = -1;
      }
      if (!err) {
        pslot *s = tarn__karena_alloc(req->arena, sizeof *s);
        if (!s) {
          err = TARN__KERR_UNKNOWN_SERVER_ERROR;
          if (first.producer_id >= 0)
            tarn__kprod_abandon(node->producers, key, first.producer_id, first.base_sequence, 0);
        } else {
          s->ctx = c;
          s->out = po;
          s->prod = node->producers;
          s->pid = first.producer_id;
          s->epoch = first.producer_epoch;
          s->seq = first.base_sequence;
          s->count = count;
          s->node = node;
          s->log_id = log_id;
          s->express = xw != NULL;
          memcpy(s->key, key, sizeof key);
          atomic_fetch_add(&c->pending, 1);
          /* the express writer answers once W copies hold the entry's slot
           * (and its predecessors'); the standard one after A4. check_records
           * ran the binding's checks (LS-095 ... LS-098, the CRC32C included)
           * over these bytes to their end, and count is their record count:
           * the standard writer need not check them again */
          /* issue 31 item 3: the index put is conditional on the producer's
           * record (its claim not revoked). An express append has no index
           * put of its own (its slot PUT is an object-store create): item 4,
           * the same compare right before it (docs/kafka.md, limits) */
          tarn__append_guard g = {0};
          int arc = s->pid < 0 ? 0
                    : xw       ? tarn__kprod_claim_current(s->prod, s->key, s->pid)
                               : tarn__kprod_guard(s->prod, s->key, s->pid, &g);
          if (!arc)
            arc = xw ? tarn_xwriter_append(xw, log_id, pd->records.p, (size_t)pd->records.len,
                                           count, appended, s)
                     : tarn__writer_append_kafka_guarded(w, log_id, pd->records.p,
                                                         (size_t)pd->records.len, count,
                                                         g.domain ? &g : NULL, appended, s);
          if (arc) {
            atomic_fetch_sub(&c->pending, 1);
            if (xw)
              express_failed(node, log_id, arc, tarn_errmsg());
            err = append_error(arc);
            if (s->pid >= 0)
              tarn__kprod_abandon(s->prod, s->key, s->pid, s->seq, 0);
          }
        }
      }
      if (xw) /* let go before the next partition's tarn__kexpress_writer */
        tarn__kexpress_writer_done(node);
      if (err) {
        po->error_code = err;
        atomic_store(&c->failed, 1);
      }
    }
    if (have_w)
      tarn__knode_writer_done(node);
    if (have_t)
      tarn_kafka_topic_free(&t);
  }
  ctx_release(c); /* the queuing's own count: answers now if nothing is in flight */
}
