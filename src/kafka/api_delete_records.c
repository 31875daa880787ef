/* DeleteRecords (key 21), versions 0-2 (issue 37, "Retention and
 * DeleteRecords"; docs/kafka.md "Retention"): a soft trim of the partition's
 * log (spec "Soft trim", LS-080) so that it starts at the requested offset
 * (-1: the high watermark), then the usual reclamation. The answer's
 * low_watermark is the log start the store holds afterwards: the trim never
 * passes the start of the log's last index record (the spec keeps it), so a
 * request for the high watermark leaves that last entry readable. Errors as
 * Kafka's: OFFSET_OUT_OF_RANGE past the high watermark (or below -1),
 * UNKNOWN_TOPIC_OR_PARTITION, and NOT_LEADER_OR_FOLLOWER where Produce would
 * refuse (an express partition this node does not lead; a standard one is
 * written, so trimmed, through any node). */
#include <string.h>

#include "kafka/api.h"
#include "kafka/proto/kproto.h"
#include "kafka/retention.h"
#include "tarn/error.h"
#include "tarn/kafka_topics.h"
#include "tarn/metrics.h"
#include "tarn/reader.h"
#include "tarn/trim.h"

/* The partition's high watermark: the index's end, or an express leader's
 * acknowledged tail past it (as Fetch answers). */
static int high_watermark(tarn__knode *node, const tarn_kafka_topic *t, uint64_t log_id,
                          uint64_t *hwm) {
  int rc = tarn_reader_end_offset(node->reader, log_id, hwm, NULL);
  if (rc || !tarn__kexpress_is(t))
    return rc;
  uint64_t te = 0;
  if (!tarn__kexpress_tail(node, log_id, *hwm, 0, 0, NULL, &te) && te > *hwm)
    *hwm = te;
  return 0;
}

static int16_t delete_to(tarn__knode *node, const tarn_kafka_topic *t, uint32_t partition,
                         int64_t offset, int64_t *low) {
  uint64_t log_id, hwm;
  if (tarn_kafka_topic_log(t, partition, &log_id))
    return TARN__KERR_UNKNOWN_TOPIC_OR_PARTITION;
  if (tarn__kexpress_is(t) && tarn__kexpress_leads(node, t, partition) != 1)
    return TARN__KERR_NOT_LEADER_OR_FOLLOWER;
  int rc = high_watermark(node, t, log_id, &hwm);
  if (!rc && (offset < -1 || (offset >= 0 && (uint64_t)offset > hwm)))
    return TARN__KERR_OFFSET_OUT_OF_RANGE;
  tarn__kretention_trimmed tr;
  if (!rc)
    rc = tarn__kretention_trim(node, log_id, offset < 0 ? hwm : (uint64_t)offset, &tr);
  tarn_log_bounds b;
  if (!rc)
    rc = tarn_log_bounds_read(node->meta, log_id, &b);
  if (rc == TARN_EFENCED || rc == TARN_ENOTFOUND)
    return TARN__KERR_UNKNOWN_TOPIC_OR_PARTITION;
  if (rc)
    return tarn__kerr_of(rc);
  if (tr.stored > tr.before) {
    tarn_metrics_inc("tarn_kafka_retention_trims_total", 1, "cause", "delete_records", NULL);
    tarn_metrics_inc("tarn_kafka_retention_bytes_total", tr.bytes, "cause", "delete_records", NULL);
  }
  /* LS-054: the log starts at max(B, the first record above B) */
  *low = (int64_t)(b.first > hwm ? hwm : b.first);
  return 0;
}

void tarn__kapi_delete_records(tarn__knode *node, tarn__kreq *req) {
  tarn__k_delete_records_req b;
  if (tarn__kreq_body(req, &b))
    return;
  tarn__k_delete_records_resp r;
  tarn__kmsg_init(TARN__KAPI_DELETE_RECORDS, 1, &r);
  int32_t nt;
  tarn__k_delete_records_delete_records_topic_result *tr =
      tarn__kresp_entries(req, b.topics.n, sizeof *tr, &nt);
  if (!tr && nt == 0 && b.topics.n > 0) {
    tarn__kreq_close(req);
    return;
  }
  for (int32_t i = 0; i < nt; i++) {
    tarn__k_delete_records_delete_records_topic *it = &b.topics.v[i];
    tr[i].name = it->name;
    int32_t np;
    tarn__k_delete_records_delete_records_partition_result *pr =
        tarn__kresp_entries(req, it->partitions.n, sizeof *pr, &np);
    if (!pr && it->partitions.n > 0) {
      tarn__kreq_close(req);
      return;
    }
    tr[i].partitions.n = np;
    tr[i].partitions.v = pr;
    tarn_kafka_topic t;
    int trc = it->name.len > 0 ? tarn__knode_topic(node, it->name.p, (size_t)it->name.len, &t)
                               : TARN_ENOTFOUND;
    for (int32_t j = 0; j < np; j++) {
      tarn__k_delete_records_delete_records_partition *in = &it->partitions.v[j];
      pr[j].partition_index = in->partition_index;
      pr[j].low_watermark = -1;
      if (trc || in->partition_index < 0)
        pr[j].error_code = trc && trc != TARN_ENOTFOUND ? tarn__kerr_of(trc)
                                                        : TARN__KERR_UNKNOWN_TOPIC_OR_PARTITION;
      else
        pr[j].error_code =
            delete_to(node, &t, (uint32_t)in->partition_index, in->offset, &pr[j].low_watermark);
    }
    if (!trc)
      tarn_kafka_topic_free(&t);
  }
  r.topics.n = nt;
  r.topics.v = tr;
  tarn__kreq_respond(req, &r);
}
