/* Fetch (key 1), versions 0-11: whole entries of each partition's log from
 * the entry that holds the fetch offset (a client drops the records below
 * the offset it asked for), the batches' base offsets rewritten to the
 * offsets the entry assigns (LS-099: outside the CRC, so no re-checksum).
 * Versions 0-3 answer message sets (magic 0 for v0/v1, 1 for v2/v3): the
 * entries' records from the fetch offset down-converted, as Kafka does
 * (tarn_kafka_down_convert; issue 37). No fetch sessions (session id 0,
 * KIP-227 not served). */
#include <stdlib.h>
#include <string.h>

#include "kafka/api.h"
#include "kafka/proto/kproto.h"
#include "tarn/buf.h"
#include "tarn/kafka.h"
#include "tarn/kafka_topics.h"
#include "tarn/key.h"
#include "tarn/meta.h"
#include "tarn/reader.h"
#include "util/clock.h"
#include "util/planted.h"

/* How long a Fetch reads (docs/kafka.md "Failover"): its max_wait_ms within
 * these bounds, then one entry more at most (the first of a response). */
#define TARN__KFETCH_READ_MIN_MS 100
#define TARN__KFETCH_READ_MAX_MS 1000

typedef struct fpart {
  tarn__k_fetch_partition_data *out;
  uint64_t log_id;
  int64_t offset;     /* where the next entry read starts */
  int64_t from;       /* the fetch offset asked for */
  int32_t max_bytes;  /* the partition's budget */
  int error;          /* an answer is decided: no more reading */
  tarn__kcursor *cur; /* the log's reading position, taken from the node */
  int express;        /* an express topic's: the leader serves its tail too */
  uint64_t idx_end;   /* the index's end when the Fetch began */
  /* The entries taken, offsets assigned by the reader (LS-099): the last one
   * by reference into the cursor's window (valid until its next read), those
   * before it copied into data. A partition answered with one entry, the
   * common case for large produce batches, is copied once: into the frame. */
  const uint8_t *ref;
  size_t ref_len;
  tarn_buf data;
} fpart;

static size_t part_len(const fpart *p) { return p->data.len + p->ref_len; }

/* The reference goes into data before the cursor reads on. */
static int settle_ref(fpart *p) {
  if (!p->ref_len)
    return 0;
  int rc = tarn_buf_append(&p->data, p->ref, p->ref_len);
  if (rc == 0)
    p->ref_len = 0;
  return rc;
}

/* The log's range: log start offset and high watermark (= last stable
 * offset: no transactions). */
static int log_range(tarn__knode *node, uint64_t log_id, int64_t *start, int64_t *hwm) {
  uint64_t end = 0, first = 0, b = 0;
  int rc = tarn_reader_end_offset(node->reader, log_id, &end, NULL);
  if (rc)
    return rc;
  rc = tarn_reader_first_offset(node->reader, log_id, &first);
  if (rc == TARN_ENOTFOUND) { /* nothing above B: the log starts at B (or is empty) */
    if ((rc = tarn_reader_trim_offset(node->reader, log_id, &b)))
      return rc;
    first = b > end ? end : b;
  } else if (rc) {
    return rc;
  }
  *start = (int64_t)first;
  *hwm = (int64_t)end;
  return 0;
}

/* Whether an entry of len bytes fits the partition's and the response's
 * budgets. */
static int fits(const fpart *p, int64_t len, int64_t left) {
  return len <= left && (int64_t)part_len(p) + len <= p->max_bytes;
}

/* An express partition past the index's end (item 4 of issue 15; docs/kafka.md
 * "Express topics"): the acknowledged tail this node's writer holds, so a
 * consumer sees an acknowledged record within the batch window, not only
 * after absorb. After it the cursor (at the index's end) is no position to
 * read on from: the partition is done for this Fetch. */
static int read_tail_part(tarn__knode *node, fpart *p, int64_t *left, int *first_of_resp) {
  int rc = settle_ref(p);
  if (rc)
    return rc;
  int64_t room = p->max_bytes - (int64_t)part_len(p);
  if (room > *left)
    room = *left;
  size_t have = p->data.len;
  uint64_t next;
  rc = tarn__kexpress_tail(node, p->log_id, (uint64_t)p->offset, room > 0 ? (size_t)room : 0,
                           *first_of_resp, &p->data, &next);
  if (rc || next == (uint64_t)p->offset)
    return rc; /* nothing there yet: the wait below, as for the index */
  *left -= (int64_t)(p->data.len - have);
  p->offset = (int64_t)next;
  *first_of_resp = 0;
  p->error = -1;
  tarn__kcursor_free(p->cur);
  p->cur = NULL;
  return 0;
}

/* The partition's reading position at p->offset: the cursor a consumer
 * reading on left (its cursor is where this Fetch starts), or a new one. */
static int part_cursor(tarn__knode *node, fpart *p) {
  p->cur = tarn__knode_cursor_take(node, p->log_id, (uint64_t)p->offset);
  if (p->cur) {
    /* each Fetch is a read of its own: B once for it, records looked up a
     * Scan at a time (docs/kafka.md "Failover": a backlog read cold) */
    tarn_log_iter_begin_read(p->cur->it);
    return 0;
  }
  tarn__kcursor *c = calloc(1, sizeof *c);
  if (!c)
    return TARN_ENOMEM;
  c->log_id = p->log_id;
  int rc = tarn_log_iter_open(node->reader, p->log_id, (uint64_t)p->offset, &c->it);
  if (rc) {
    free(c);
    return rc;
  }
  tarn_log_iter_kafka_offsets(c->it); /* LS-099, in the window: no copy */
  tarn_log_iter_begin_read(c->it);
  p->cur = c;
  return 0;
}

/* Reads the entries available now into p, within its budget and the
 * response's (*left) and, once the response holds an entry, until the
 * reading deadline read_by (issue 37, coordinator change: a cold read of a
 * long backlog, a GET per WAL object, must not hold the connection for
 * seconds; what is not read now is the client's next Fetch); the first entry
 * of the whole response is taken even when larger (KIP-74) or late (one
 * bounded read: progress), never a part of one. Returns 0 or a tarn error
 * (the partition's answer). */
static int read_part(tarn__knode *node, fpart *p, int64_t *left, int *first_of_resp,
                     int64_t read_by, int *late) {
  if (p->express && !p->cur && (uint64_t)p->offset >= p->idx_end)
    return read_tail_part(node, p, left, first_of_resp);
  int rc = p->cur ? 0 : part_cursor(node, p);
  if (rc)
    return rc;
  tarn__kcursor *c = p->cur;
  for (;;) {
    tarn_entry e;
    if (c->held) {
      e = c->e;
    } else {
      /* An entry that will not fit is not read, so the reference stays
       * valid. Its size is unknown when the next entry is in the next
       * record: then one as large as the last is taken not to fit (the
       * client's next Fetch reads it; entries of a log are alike). */
      size_t next = p->ref_len;
      if (p->ref_len && !*first_of_resp) {
        tarn_log_iter_next_size(c->it, &next);
        if (!fits(p, (int64_t)next, *left)) {
          p->error = -1; /* full: stop reading this partition */
          return 0;
        }
      }
      if (!*first_of_resp && !TARN__PLANTED(TARN__BUG_KFETCH_READS_PAST_DEADLINE) &&
          tarn__mono_ms() >= read_by) {
        *late = 1; /* answer with what the response has */
        return 0;
      }
      rc = settle_ref(p);
      if (rc)
        return rc;
      rc = tarn_log_iter_next(c->it, &e, 0);
      if (rc == TARN_EEND)
        return p->express ? read_tail_part(node, p, left, first_of_resp) : 0;
      if (rc)
        return rc;
    }
    int64_t len = (int64_t)e.payload_len;
    if (!fits(p, len, *left) && !*first_of_resp) {
      /* the entry starts the next fetch: the cursor holds it */
      c->held = 1;
      c->e = e;
      p->error = -1; /* full: stop reading this partition */
      return 0;
    }
    c->held = 0;
    rc = settle_ref(p); /* a held entry after a reference (not read on since) */
    if (rc)
      return rc;
    p->ref = e.payload;
    p->ref_len = e.payload_len;
    p->offset = (int64_t)(e.offset + e.record_count);
    *first_of_resp = 0;
    *left -= len;
  }
}

static int16_t fetch_error(int rc) {
  switch (rc) {
  case TARN_ETRIMMED:
  case TARN_EEND: return TARN__KERR_OFFSET_OUT_OF_RANGE;
  case TARN_EFENCED:
  case TARN_ENOTFOUND: return TARN__KERR_UNKNOWN_TOPIC_OR_PARTITION;
  default: return TARN__KERR_KAFKA_STORAGE_ERROR;
  }
}

/* The stages of a Fetch (issue 32 item 3): per topic its resolution
 * (fetch_topic), per partition where its reading starts (fetch_start), then
 * the reading of every partition with the wait for appends (fetch_read,
 * fetch_pass), then the records into the answers (fetch_records) and one
 * frame (fetch_respond). A Fetch has no request-wide refusal: the versions
 * it refuses are not advertised (api.c). */

/* The partition's answer, before anything is known. */
static void fetch_part_init(tarn__k_fetch_partition_data *out, int32_t index) {
  memset(out, 0, sizeof *out);
  out->partition_index = index;
  out->high_watermark = -1;
  out->last_stable_offset = -1;
  out->log_start_offset = -1;
  out->aborted_transactions.n = -1; /* none: no transactions */
  out->preferred_read_replica = -1;
  /* empty, never null, also with an error: as Kafka answers (its empty
   * MemoryRecords); librdkafka 1.7 fails the whole response on a null one
   * ("invalid MessageSetSize -1"), so a consumer never saw the error
   * (OFFSET_OUT_OF_RANGE below a DeleteRecords, issue 37) */
  out->records = (tarn__kbytes){(const uint8_t *)"", 0};
}

/* Where partition `in` of topic t (trc: its lookup's result) is read from:
 * its log, its range and the express leader's tail; p->error when it is
 * answered without reading. */
static void fetch_start(tarn__knode *node, const tarn_kafka_topic *t, int trc,
                        const tarn__k_fetch_fetch_partition *in, fpart *p) {
  fetch_part_init(p->out, in->partition);
  p->offset = p->from = in->fetch_offset;
  p->max_bytes = in->partition_max_bytes;
  if (trc || in->partition < 0 || tarn_kafka_topic_log(t, (uint32_t)in->partition, &p->log_id)) {
    p->out->error_code =
        trc && trc != TARN_ENOTFOUND ? tarn__kerr_of(trc) : TARN__KERR_UNKNOWN_TOPIC_OR_PARTITION;
    p->error = 1;
    return;
  }
  int64_t start, hwm;
  int rc = log_range(node, p->log_id, &start, &hwm);
  if (rc == 0 && (p->offset < start || p->offset > hwm))
    rc = log_range(node, p->log_id, &start, &hwm); /* re-read before refusing */
  if (rc) {
    p->out->error_code = fetch_error(rc);
    p->error = 1;
    return;
  }
  p->express = tarn__kexpress_is(t);
  p->idx_end = (uint64_t)hwm;
  if (p->express) { /* the leader's watermark: its acknowledged tail's end */
    uint64_t te = 0;
    if (!tarn__kexpress_tail(node, p->log_id, (uint64_t)hwm, 0, 0, NULL, &te) && te > (uint64_t)hwm)
      hwm = (int64_t)te;
  }
  p->out->high_watermark = hwm;
  p->out->last_stable_offset = hwm;
  p->out->log_start_offset = start;
  if (p->offset < start || p->offset > hwm) {
    /* an express offset past what this node has was acknowledged by the
     * leader (this node is not, or no longer): the client asks Metadata
     * again rather than resetting its position */
    p->out->error_code = p->express && p->offset > hwm ? TARN__KERR_NOT_LEADER_OR_FOLLOWER
                                                       : TARN__KERR_OFFSET_OUT_OF_RANGE;
    p->error = 1;
  }
}

/* One topic: its answer o and its partitions' reading states, parts[*k]
 * on (*k advanced past them). */
static void fetch_topic(tarn__knode *node, tarn__kreq *req, const tarn__k_fetch_fetch_topic *ft,
                        tarn__k_fetch_fetchable_topic_response *o, fpart *parts, size_t *k) {
  o->topic = ft->topic;
  int32_t np;
  tarn__k_fetch_partition_data *pd = tarn__kresp_entries(req, ft->partitions.n, sizeof *pd, &np);
  o->partitions.n = np;
  o->partitions.v = pd;
  tarn_kafka_topic t;
  int trc = ft->topic.len > 0 ? tarn__knode_topic(node, ft->topic.p, (size_t)ft->topic.len, &t)
                              : TARN_ENOTFOUND;
  for (int32_t j = 0; j < np; j++) {
    fpart *p = &parts[(*k)++];
    p->out = &pd[j];
    fetch_start(node, &t, trc, &ft->partitions.v[j], p);
  }
  if (!trc)
    tarn_kafka_topic_free(&t);
}

typedef char fetch_wait_keys[3][TARN_KEY_LEN + 1];

/* One reading of every partition still reading (read_part), within the
 * response's budget *left and until read_by (*late set when a partition
 * stopped there). Those still reading after it get their log's range in
 * ranges (the first nw of them); returns how many got one. */
static size_t fetch_pass(tarn__knode *node, fpart *parts, size_t k, int64_t *left, int *first,
                         int64_t read_by, int *late, tarn_meta_range *ranges, fetch_wait_keys *keys,
                         size_t nw) {
  size_t live = 0;
  for (size_t i = 0; i < k; i++) {
    fpart *p = &parts[i];
    if (p->error)
      continue;
    int rc = read_part(node, p, left, first, read_by, late);
    if (rc) {
      p->out->error_code = fetch_error(rc);
      p->error = 1;
      if (settle_ref(p)) /* what was read stays: the reference must not */
        p->ref_len = 0;
      tarn__kcursor_free(p->cur); /* not a position to read on from */
      p->cur = NULL;
    } else if (!p->error && live < nw) {
      /* new index records of its log: keys above where it stopped (R2) */
      tarn_key_partition(keys[live][0], p->log_id);
      tarn_key_format(keys[live][1], p->log_id, (uint64_t)p->offset, 0);
      tarn_key_format(keys[live][2], p->log_id, TARN_KEY_MAX, TARN_KEY_MAX);
      ranges[live] = (tarn_meta_range){keys[live][0], keys[live][1], keys[live][2]};
      live++;
    }
  }
  return live;
}

/* Read what is there (up to the reading deadline, then answer at once);
 * then, short of min_bytes, wait for appends until max_wait_ms has passed:
 * one wait on the metadata store's change notification over the index
 * ranges of every partition still reading (issue 13 §2 Fetch), from a token
 * taken before the read, so a record committed between the read and the
 * wait ends the wait at once. */
static void fetch_read(tarn__knode *node, int16_t version, const tarn__k_fetch_req *b, fpart *parts,
                       size_t k) {
  int64_t left = version >= 3 && b->max_bytes > 0 ? b->max_bytes : INT32_MAX;
  int64_t budget = left, min_bytes = b->min_bytes > 0 ? b->min_bytes : 1;
  int first = 1;
  int64_t now = tarn__mono_ms();
  int64_t deadline = now + (b->max_wait_ms > 0 ? b->max_wait_ms : 0);
  /* reading stops at max_wait_ms, within [TARN__KFETCH_READ_MIN_MS,
   * TARN__KFETCH_READ_MAX_MS]: a client that waits 0 ms still gets more than
   * one entry of a backlog; one that waits long does not hold its
   * connection (and the FindCoordinator or Heartbeat behind it) in reads */
  int64_t read_ms =
      b->max_wait_ms > TARN__KFETCH_READ_MIN_MS ? b->max_wait_ms : TARN__KFETCH_READ_MIN_MS;
  int64_t read_by = now + (read_ms < TARN__KFETCH_READ_MAX_MS ? read_ms : TARN__KFETCH_READ_MAX_MS);
  size_t nw = k < TARN_META_WAIT_RANGES_MAX ? k : TARN_META_WAIT_RANGES_MAX;
  tarn_meta_range *ranges = calloc(nw ? nw : 1, sizeof *ranges);
  fetch_wait_keys *keys = calloc(nw ? nw : 1, sizeof *keys);
  if (!ranges || !keys)
    nw = 0; /* no memory to wait with: one reading, answered with what it found */
  for (int waited = 0;;) {
    int64_t token = 0;
    int tok_rc = ranges && keys ? tarn_meta_change_token(node->meta, &token) : -1;
    if (waited) /* a pass after a wait reads what was appended meanwhile */
      read_by = tarn__mono_ms() + TARN__KFETCH_READ_MIN_MS;
    int late = 0; /* a partition's reading stopped at read_by: no waiting */
    size_t live = fetch_pass(node, parts, k, &left, &first, read_by, &late, ranges, keys, nw);
    int64_t remain = deadline - tarn__mono_ms();
    if (budget - left >= min_bytes || remain <= 0 || live == 0 || left <= 0 || tok_rc || late)
      break;
    int wrc = tarn_meta_wait_for_any_change(node->meta, ranges, live, token,
                                            remain > INT32_MAX ? INT32_MAX : (int)remain);
    if (wrc && wrc != TARN_ETIMEDOUT)
      break; /* the store failed: answer with what was read */
    waited = 1;
  }
  free(ranges);
  free(keys);
}

/* Versions 0-3: the partition's batches as a message set of the version's
 * magic (0 for v0/v1, 1 for v2/v3, as Kafka's down-conversion), from the
 * fetch offset, within the partition's max bytes (its first record always:
 * a client that asked for less grows its fetch size on a partial message,
 * so a whole one serves it better). */
static int down_convert(fpart *p, int16_t version) {
  tarn_buf conv = TARN_BUF_INIT;
  const uint8_t *d = p->data.len ? p->data.data : p->ref;
  size_t n = part_len(p);
  int rc = tarn_kafka_down_convert(d, n, version >= 2, p->from,
                                   p->max_bytes > 0 ? (size_t)p->max_bytes : 1, &conv);
  tarn_buf_free(&p->data);
  p->ref_len = 0;
  if (rc)
    tarn_buf_free(&conv);
  else
    p->data = conv;
  return rc;
}

/* Each partition's entries into its answer; returns their bytes in all. */
static size_t fetch_records(fpart *parts, size_t k, int16_t version) {
  size_t total = 0;
  for (size_t i = 0; i < k; i++) {
    fpart *p = &parts[i];
    if (p->data.len && settle_ref(p)) { /* two pieces: one buffer, or none */
      p->out->error_code = TARN__KERR_KAFKA_STORAGE_ERROR;
      tarn_buf_free(&p->data);
      p->ref_len = 0;
    }
    if (version < 4 && part_len(p) && down_convert(p, version))
      p->out->error_code = TARN__KERR_KAFKA_STORAGE_ERROR;
    if (part_len(p)) {
      total += part_len(p);
      p->out->records = p->data.len ? (tarn__kbytes){p->data.data, (int32_t)p->data.len}
                                    : (tarn__kbytes){p->ref, (int32_t)p->ref_len};
      /* what was read past the range first seen moves the watermark on */
      if (p->offset > p->out->high_watermark) {
        p->out->high_watermark = p->offset;
        p->out->last_stable_offset = p->offset;
      }
    } else {
      p->out->records = (tarn__kbytes){(const uint8_t *)"", 0};
    }
  }
  return total;
}

/* The frame sized once for the records (total bytes, k partitions): no
 * regrowth copying them again. */
static void fetch_respond(tarn__kreq *req, const tarn__k_fetch_resp *r, size_t total, size_t k) {
  tarn_buf f = TARN_BUF_INIT;
  if (tarn_buf_reserve(&f, total + 256 + 64 * k) == 0 &&
      tarn__kresp_frame(req->api_key, req->api_version, req->correlation_id, r, &f) == 0) {
    tarn__kreq_respond_frame(req, &f);
  } else {
    tarn_buf_free(&f);
    tarn__kreq_respond(req, r); /* its error path: logged, the connection closed */
  }
}

void tarn__kapi_fetch(tarn__knode *node, tarn__kreq *req) {
  tarn__k_fetch_req b;
  if (tarn__kreq_body(req, &b))
    return;
  tarn__k_fetch_resp r;
  tarn__kmsg_init(TARN__KAPI_FETCH, 1, &r);
  r.error_code = 0;
  r.session_id = 0;
  int32_t nt = b.topics.n > 0 ? b.topics.n : 0;
  size_t np_all = 0;
  for (int32_t i = 0; i < nt; i++)
    np_all += b.topics.v[i].partitions.n > 0 ? (size_t)b.topics.v[i].partitions.n : 0;
  tarn__k_fetch_fetchable_topic_response *tr = tarn__kresp_entries(req, nt, sizeof *tr, &nt);
  fpart *parts = calloc(np_all ? np_all : 1, sizeof *parts);
  if (!tr || !parts) {
    free(parts);
    tarn__kreq_close(req);
    return;
  }
  size_t k = 0;
  for (int32_t i = 0; i < nt; i++)
    fetch_topic(node, req, &b.topics.v[i], &tr[i], parts, &k);
  fetch_read(node, req->api_version, &b, parts, k);
  size_t total = fetch_records(parts, k, req->api_version);
  r.responses.n = nt;
  r.responses.v = tr;
  fetch_respond(req, &r, total, k);
  for (size_t i = 0; i < k; i++) {
    tarn__knode_cursor_put(node, parts[i].cur);
    tarn_buf_free(&parts[i].data);
  }
  free(parts);
}
