/* One WAL object, built and written (spec step A2; issue 32 item 1): see
 * wal_object.h. */
#include "log/wal_object.h"

#include "tarn/entryindex.h"
#include "tarn/error.h"
#include "tarn/metrics.h"
#include "util/clock.h"

void tarn__wal_object_init(tarn__wal_object *o) {
  tarn_wal_builder_init(&o->wb);
  tarn_buf_init(&o->obj);
  o->name[0] = 0;
  o->written_mono = 0;
}

void tarn__wal_object_free(tarn__wal_object *o) {
  tarn_wal_builder_free(&o->wb);
  tarn_buf_free(&o->obj);
}

void tarn__wal_object_reset(tarn__wal_object *o) {
  tarn_wal_builder_reset(&o->wb);
  tarn_buf_reset(&o->obj);
  o->name[0] = 0;
}

int tarn__wal_object_add(tarn__wal_object *o, uint64_t log_id, const void *payload, size_t len,
                         uint32_t record_count) {
  return tarn_wal_builder_add(&o->wb, log_id, payload, len, record_count);
}

int tarn__wal_object_build(tarn__wal_object *o) {
  return tarn_wal_builder_finish(&o->wb, &o->obj); /* LS-001: version 3 only */
}

int tarn__wal_object_write(tarn__wal_object *o, tarn_objstore *wal, const tarn__wal_write *how,
                           int *attempt) {
  int rc = 0;
  for (;; (*attempt)++) {
    if ((rc = tarn__wal_name(o->name, tarn__now_ms() / 1000)))
      return rc;
    /* the object may be listed from the moment its write begins: its age
     * for the publish limit counts from here (a retry is a new object) */
    o->put_started = tarn_metrics_now();
    o->written_mono = tarn__mono_ms();
    rc = tarn_objstore_put(wal, o->name, o->obj.data, o->obj.len); /* LS-009: create-only */
    if (how->after_put)
      rc = how->after_put(how->arg, rc, o);
    if (rc == 0 || *attempt + 1 >= how->attempts || (rc == TARN_EINVAL && how->einval_final))
      return rc;
    tarn__sleep_ms(how->backoff_ms + how->backoff_step_ms * *attempt); /* then a new name */
  }
}

int tarn__wal_object_section_value(tarn__wal_object *o, size_t i, tarn_buf *v) {
  return tarn_entry_index_build_raw_section(&o->wb, i, o->name, v);
}
