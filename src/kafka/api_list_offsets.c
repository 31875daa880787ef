/* ListOffsets (key 2), versions 0-5: -1 latest (the high watermark), -2
 * earliest (the log start: the trim marker, or the first record above it),
 * and a timestamp: the first offset of the first batch whose max timestamp
 * is at or after it (batches, not records, are searched: a consumer then
 * reads that batch whole), or -1 with timestamp -1 when there is none: a
 * binary search over the entries (kafka/time_lookup.h), not a scan. */
#include <stdlib.h>
#include <string.h>

#include "kafka/api.h"
#include "kafka/proto/kproto.h"
#include "kafka/time_lookup.h"
#include "tarn/kafka.h"
#include "tarn/kafka_topics.h"
#include "tarn/reader.h"

#define LATEST (-1)
#define EARLIEST (-2)

static int first_offset(tarn__knode *node, uint64_t log_id, uint64_t end, uint64_t *out) {
  int rc = tarn_reader_first_offset(node->reader, log_id, out);
  if (rc == TARN_ENOTFOUND) {
    uint64_t b;
    if ((rc = tarn_reader_trim_offset(node->reader, log_id, &b)))
      return rc;
    *out = b > end ? end : b;
    return 0;
  }
  return rc;
}

static int16_t lookup(tarn__knode *node, uint64_t log_id, int64_t ts, int64_t *offset,
                      int64_t *timestamp) {
  uint64_t end, first;
  int rc = tarn_reader_end_offset(node->reader, log_id, &end, NULL);
  if (!rc)
    rc = first_offset(node, log_id, end, &first);
  *timestamp = -1;
  if (!rc && ts == LATEST)
    *offset = (int64_t)end;
  else if (!rc && ts == EARLIEST)
    *offset = (int64_t)first;
  else if (!rc && ts >= 0)
    rc = tarn__kafka_offset_for_time(node->reader, log_id, first, end, ts, offset, timestamp);
  else if (!rc)
    return TARN__KERR_INVALID_REQUEST; /* -3 and below are not served (max timestamp, KIP-734) */
  if (rc == TARN_EFENCED || rc == TARN_ENOTFOUND)
    return TARN__KERR_UNKNOWN_TOPIC_OR_PARTITION;
  return rc ? TARN__KERR_KAFKA_STORAGE_ERROR : 0;
}

void tarn__kapi_list_offsets(tarn__knode *node, tarn__kreq *req) {
  tarn__k_list_offsets_req b;
  if (tarn__kreq_body(req, &b))
    return;
  tarn__k_list_offsets_resp r;
  tarn__kmsg_init(TARN__KAPI_LIST_OFFSETS, 1, &r);
  int32_t nt = b.topics.n > 0 ? b.topics.n : 0;
  tarn__k_list_offsets_list_offsets_topic_response *tr =
      tarn__karena_alloc(req->arena, (nt ? (size_t)nt : 1) * sizeof *tr);
  if (!tr) {
    tarn__kreq_close(req);
    return;
  }
  for (int32_t i = 0; i < nt; i++) {
    tarn__k_list_offsets_list_offsets_topic *it = &b.topics.v[i];
    memset(&tr[i], 0, sizeof tr[i]);
    tr[i].name = it->name;
    int32_t np = it->partitions.n > 0 ? it->partitions.n : 0;
    tarn__k_list_offsets_list_offsets_partition_response *pr =
        tarn__karena_alloc(req->arena, (np ? (size_t)np : 1) * sizeof *pr);
    int64_t *olds = tarn__karena_alloc(req->arena, (np ? (size_t)np : 1) * sizeof *olds);
    if (!pr || !olds) {
      tarn__kreq_close(req);
      return;
    }
    tr[i].partitions.n = np;
    tr[i].partitions.v = pr;
    tarn_kafka_topic t;
    int trc = it->name.len > 0 ? tarn__knode_topic(node, it->name.p, (size_t)it->name.len, &t)
                               : TARN_ENOTFOUND;
    for (int32_t j = 0; j < np; j++) {
      tarn__k_list_offsets_list_offsets_partition *in = &it->partitions.v[j];
      tarn__k_list_offsets_list_offsets_partition_response *o = &pr[j];
      memset(o, 0, sizeof *o);
      o->partition_index = in->partition_index;
      o->timestamp = -1;
      o->offset = -1;
      o->leader_epoch = 0; /* constant (Metadata says 0) */
      uint64_t log_id;
      if (trc || in->partition_index < 0 ||
          tarn_kafka_topic_log(&t, (uint32_t)in->partition_index, &log_id)) {
        o->error_code = trc && trc != TARN_ENOTFOUND ? tarn__kerr_of(trc)
                                                     : TARN__KERR_UNKNOWN_TOPIC_OR_PARTITION;
        continue;
      }
      o->error_code = lookup(node, log_id, in->timestamp, &o->offset, &o->timestamp);
      if (req->api_version == 0 && o->error_code == 0) {
        /* v0 answers a list of offsets (at most max_num_offsets): the one found */
        olds[j] = o->offset;
        o->old_style_offsets.n = o->offset >= 0 && in->max_num_offsets > 0 ? 1 : 0;
        o->old_style_offsets.v = &olds[j];
      }
    }
    if (!trc)
      tarn_kafka_topic_free(&t);
  }
  r.topics.n = nt;
  r.topics.v = tr;
  tarn__kreq_respond(req, &r);
}
