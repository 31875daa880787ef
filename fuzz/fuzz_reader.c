/* The reader on hostile stores: input = [u16 BE n][n bytes: an index value]
 * [the rest: a WAL object]. The value is published for log 7 (under the
 * object's name "o.wal" when it names no valid other) and the reader reads
 * the log from 0. Whatever the bytes, reading ends in entries or an error —
 * and every entry returned lies within the object and carries contiguous
 * offsets (R4). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tarn/entryindex.h"
#include "tarn/meta.h"
#include "tarn/objstore.h"
#include "tarn/reader.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 2)
    return 0;
  size_t vlen = (size_t)data[0] << 8 | data[1];
  if (vlen > size - 2)
    return 0;
  const uint8_t *val = data + 2, *obj = val + vlen;
  size_t olen = size - 2 - vlen;
  tarn_meta *m;
  tarn_objstore *wal;
  if (tarn_meta_open("mem:", &m) || tarn_objstore_open("mem:", &wal))
    abort();
  uint64_t d1 = 1, d2 = 0;
  tarn_entry_index ei;
  const char *name = "o.wal";
  int decoded = tarn_entry_index_decode(val, vlen, &ei) == 0;
  if (decoded) {
    d1 = (uint64_t)ei.message_count;
    d2 = (uint64_t)ei.entry_size_bytes;
    if (ei.location && tarn_objstore_check_name(ei.location, strlen(ei.location)) == 0)
      name = ei.location;
  }
  tarn_objstore_put(wal, name, obj, olen);
  if (tarn_meta_sequenced_put(m, "7", "00000000000000000007", d1, d2, val, vlen, NULL) == 0) {
    tarn_reader *r;
    if (tarn_reader_open(m, wal, NULL, NULL, &r))
      abort();
    tarn_log_iter *it;
    if (tarn_log_iter_open(r, 7, 0, &it))
      abort();
    tarn_entry e;
    uint64_t next = 0;
    int first = 1;
    while (tarn_log_iter_next(it, &e, 0) == 0) {
      if (!first && e.offset != next)
        abort();
      if (e.payload_len > olen || e.record_count == 0)
        abort();
      first = 0;
      next = e.offset + e.record_count;
    }
    tarn_log_iter_close(it);
    tarn_reader_close(r);
  }
  if (decoded)
    tarn_entry_index_free(&ei);
  tarn_objstore_close(wal);
  tarn_meta_close(m);
  return 0;
}
