/* ListOffsets by timestamp (time_lookup.h). */
#include "kafka/time_lookup.h"

#include "tarn/error.h"
#include "tarn/kafka.h"

/* What one entry tells the search. */
typedef struct probe {
  uint64_t start, end; /* the entry's offsets [start, end) */
  int late;            /* a batch of it has max timestamp >= ts */
  int64_t offset, ts;  /* the first such batch: its first offset (>= first), max timestamp */
} probe;

/* Kafka answers with a record, not a batch (its LogSegment's
 * findOffsetByTimestamp walks the batch found for the first record at or
 * after the target): the first record of batch b at or after `first` whose
 * timestamp is >= ts. A LogAppendTime batch's records all carry its max
 * timestamp (kafka_records.c); the batch's max timestamp >= ts, so a record
 * is found unless the records' own timestamps disagree with the max (a
 * producer's inconsistent batch): then the batch's first offset, max
 * timestamp, as before. */
typedef struct refine {
  int64_t first, ts;
  int64_t offset, found_ts;
} refine;

static int refine_cb(void *arg, const tarn_kafka_record *r) {
  refine *f = arg;
  if (r->offset < f->first || r->timestamp < f->ts)
    return 0;
  f->offset = r->offset;
  f->found_ts = r->timestamp;
  return 1;
}

static int refine_in_batch(const uint8_t *payload, const tarn_kafka_batch *b, int64_t first,
                           int64_t ts, probe *pr) {
  refine f = {first, ts, -1, -1};
  int rc = tarn_kafka_records(payload + b->pos, b->len, b->first_offset, 0, refine_cb, &f);
  if (rc < 0)
    return rc;
  if (rc == 1) {
    pr->offset = f.offset;
    pr->ts = f.found_ts;
  }
  return 0;
}

/* Reads the entry holding offset `at` (or the first one after it, when the
 * log was trimmed above `at` meanwhile). */
static int read_probe(tarn_reader *r, uint64_t log_id, uint64_t at, uint64_t first, int64_t ts,
                      int records, probe *pr) {
  tarn_log_iter *it;
  int rc = tarn_log_iter_open(r, log_id, at, &it);
  if (rc)
    return rc;
  tarn_entry e;
  rc = tarn_log_iter_next(it, &e, 0);
  if (rc) {
    tarn_log_iter_close(it);
    return rc;
  }
  pr->start = e.offset;
  pr->end = e.offset + e.record_count;
  pr->late = 0;
  tarn_kafka_iter ki;
  tarn_kafka_iter_init(&ki, e.payload, e.payload_len, (int64_t)e.offset);
  tarn_kafka_batch kb;
  int k;
  while ((k = tarn_kafka_iter_next(&ki, &kb)) == 1) {
    if (kb.max_timestamp >= ts && kb.last_offset >= (int64_t)first) {
      pr->late = 1;
      pr->offset = kb.first_offset < (int64_t)first ? (int64_t)first : kb.first_offset;
      pr->ts = kb.max_timestamp;
      if (records)
        k = refine_in_batch(e.payload, &kb, (int64_t)first, ts, pr);
      break;
    }
  }
  tarn_log_iter_close(it);
  return k < 0 ? k : 0;
}

/* The search of both lookups; records: refine to the record (ListOffsets),
 * else the batch's first offset will do. *late: the start of the first late
 * entry (end when none). */
static int search(tarn_reader *r, uint64_t log_id, uint64_t first, uint64_t end, int64_t ts,
                  int records, int64_t *offset, int64_t *timestamp, uint64_t *late) {
  *offset = -1;
  *timestamp = -1;
  /* Invariant: every entry ending at or below lo is earlier than ts; the
   * first late entry found so far starts at hi (none yet: hi = end). Each
   * probe removes at least the entry it read from [lo, hi). */
  uint64_t lo = first, hi = end;
  while (lo < hi) {
    uint64_t mid = lo + (hi - lo) / 2;
    probe pr;
    int rc = read_probe(r, log_id, mid, first, ts, records, &pr);
    if (rc == TARN_EEND)
      break; /* trimmed meanwhile up to the end: nothing left to search */
    if (rc)
      return rc;
    if (pr.start > mid)
      lo = pr.start; /* the log was trimmed above mid: what was below is gone */
    if (pr.late) {
      *offset = pr.offset;
      *timestamp = pr.ts;
      hi = pr.start < lo ? lo : pr.start;
    } else {
      lo = pr.end > mid ? pr.end : mid + 1;
    }
  }
  *late = hi;
  return 0;
}

int tarn__kafka_offset_for_time(tarn_reader *r, uint64_t log_id, uint64_t first, uint64_t end,
                                int64_t ts, int64_t *offset, int64_t *timestamp) {
  uint64_t late;
  return search(r, log_id, first, end, ts, 1, offset, timestamp, &late);
}

int tarn__kafka_entry_for_time(tarn_reader *r, uint64_t log_id, uint64_t first, uint64_t end,
                               int64_t ts, uint64_t *start) {
  int64_t offset, timestamp;
  return search(r, log_id, first, end, ts, 0, &offset, &timestamp, start);
}
