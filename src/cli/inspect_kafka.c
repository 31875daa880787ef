/* tarn inspect kafka: the record batches of one Kafka entry payload. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "cli/inspect.h"
#include "tarn/error.h"
#include "tarn/kafka.h"

static const char usage[] =
    "usage: tarn inspect kafka FILE [--offset N] [--records N] [--json]\n"
    "\n"
    "Decodes a Kafka entry payload (Appendix A): record batches of magic 2, or\n"
    "magic 0/1 messages and compressed wrappers. Checks every CRC and the binding's\n"
    "rules, and shows each batch with the offsets a reader assigns to it.\n"
    "FILE '-' is stdin.\n"
    "\n"
    "  --offset N   the entry's offset: the first batch's first offset (default 0)\n"
    "  --records N  the entry's record count, checked against the batches\n"
    "  --json       JSON\n";

static const char *codec_name(int c) {
  static const char *const names[] = {"none", "gzip", "snappy", "lz4", "zstd"};
  return c >= 0 && c <= 4 ? names[c] : "?";
}

int tarn_inspect_kafka(int argc, char **argv) {
  int json = 0, nargs;
  int64_t entry = 0, records = -1;
  const tarn_cli_opt opts[] = {
      TARN_CLI_OPT_UINT("--offset", &entry, 0, INT64_MAX, "a non-negative offset", NULL),
      TARN_CLI_OPT_UINT("--records", &records, 0, INT64_MAX, "a non-negative count", NULL),
      {0}};
  const tarn_cli_verb v = {"inspect kafka", NULL, opts, NULL, &json, 1, usage};
  int ex = tarn_cli_parse(&v, argc, argv, &nargs);
  if (ex != TARN_CLI_GO_ON)
    return ex;
  const char *path = nargs ? argv[1] : NULL;
  if (!path)
    return tarn_cli_usage_error("inspect kafka", "FILE is missing");
  uint8_t *data;
  size_t len;
  if (tarn_cli_read_file(path, &data, &len))
    return tarn_cli_fail("inspect kafka");
  /* Check the whole payload first, so nothing is printed for a bad one. */
  uint64_t total;
  if (tarn_kafka_check(data, len, records, &total)) {
    free(data);
    return tarn_cli_fail("inspect kafka");
  }
  tarn_kafka_iter it;
  tarn_kafka_batch b;
  tarn_kafka_iter_init(&it, data, len, entry);
  json_t *o = json ? json_object() : NULL, *arr = json ? json_array() : NULL;
  if (!json)
    printf("kafka entry payload: %zu bytes, %" PRIu64 " records, entry offset %" PRId64 "\n\n"
           "%-5s %8s %8s %5s %10s %21s %8s %6s %7s %s\n",
           len, total, entry, "batch", "position", "bytes", "magic", "baseOffset",
           "assigned offsets", "records", "attrs", "codec", "crc");
  int rc;
  while ((rc = tarn_kafka_iter_next(&it, &b)) == 1) {
    if (json) {
      json_t *j = json_pack(
          "{s:I,s:I,s:i,s:I,s:I,s:I,s:I,s:i,s:s,s:b,s:i,s:I,s:I}", "position", (json_int_t)b.pos,
          "length", (json_int_t)b.len, "magic", b.magic, "baseOffset", (json_int_t)b.base_offset,
          "firstOffset", (json_int_t)b.first_offset, "lastOffset", (json_int_t)b.last_offset,
          "recordCount", (json_int_t)b.record_count, "attributes", (int)b.attributes, "compression",
          codec_name(b.compression), "crcOk", 1, "lastOffsetDelta", (int)b.last_offset_delta,
          "baseTimestamp", (json_int_t)b.base_timestamp, "maxTimestamp",
          (json_int_t)b.max_timestamp);
      char crc[9];
      snprintf(crc, sizeof crc, "%08x", b.crc);
      json_object_set_new(j, "crc", json_string(crc));
      if (b.magic >= 2) {
        json_object_set_new(j, "partitionLeaderEpoch", json_integer(b.partition_leader_epoch));
        json_object_set_new(j, "producerId", json_integer(b.producer_id));
        json_object_set_new(j, "producerEpoch", json_integer(b.producer_epoch));
        json_object_set_new(j, "baseSequence", json_integer(b.base_sequence));
      }
      json_array_append_new(arr, j);
    } else {
      char range[48];
      snprintf(range, sizeof range, "%" PRId64 "-%" PRId64, b.first_offset, b.last_offset);
      printf("%-5zu %8zu %8zu %5d %10" PRId64 " %21s %8u 0x%04x %7s %08x ok\n", it.batches - 1,
             b.pos, b.len, b.magic, b.base_offset, range, b.record_count, b.attributes,
             codec_name(b.compression), b.crc);
    }
  }
  free(data);
  if (rc) {
    json_decref(o), json_decref(arr);
    return tarn_cli_fail("inspect kafka");
  }
  if (!json)
    return TARN_EXIT_OK;
  json_object_set_new(o, "entryOffset", json_integer(entry));
  json_object_set_new(o, "records", json_integer((json_int_t)total));
  json_object_set_new(o, "batches", arr);
  return tarn_cli_print_json(o);
}
