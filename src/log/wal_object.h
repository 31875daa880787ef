/* One WAL object, built and written (spec step A2) — for both writers (issue
 * 32 item 1): the standard writer's upload (writer.c) and the express
 * writer's absorb (express/absorb.c) build their objects with the same
 * builder (tarn/wal.h, LS-017: so their bytes are the format's, the same for
 * the same entries) and write them the same way: create-only, under a fresh
 * name each attempt (LS-008, LS-009), then one RAW EntryIndex value per
 * section naming the object that was written (A3's values, LS-026). */
#ifndef TARN_LOG_WAL_OBJECT_H
#define TARN_LOG_WAL_OBJECT_H

#include <stddef.h>
#include <stdint.h>

#include "log/wal_name.h"
#include "tarn/buf.h"
#include "tarn/objstore.h"
#include "tarn/wal.h"

typedef struct tarn__wal_object {
  tarn_wal_builder wb;               /* the entries, section by section in the order added */
  tarn_buf obj;                      /* the object's bytes, after tarn__wal_object_build */
  char name[TARN__WAL_NAME_LEN + 1]; /* the last write's name ("" before one) */
  int64_t written_mono;              /* monotonic ms when the last write began: the object may
                                        be listed (and reclaimed) from then on (LS-085) */
  double put_started;                /* the same instant, tarn_metrics_now() */
} tarn__wal_object;

void tarn__wal_object_init(tarn__wal_object *o);
void tarn__wal_object_free(tarn__wal_object *o);
/* Forgets the entries and the bytes, keeping the memory. */
void tarn__wal_object_reset(tarn__wal_object *o);
/* tarn_wal_builder_add: entries of one log stay in the order added. */
int tarn__wal_object_add(tarn__wal_object *o, uint64_t log_id, const void *payload, size_t len,
                         uint32_t record_count);
/* The v3 object's bytes into o->obj (LS-001: version 3 only). */
int tarn__wal_object_build(tarn__wal_object *o);

/* How a write is attempted. */
typedef struct tarn__wal_write {
  int attempts;   /* writes in all, counting from attempt 0 */
  int backoff_ms; /* before a retry after attempt k: backoff_ms + k * backoff_step_ms */
  int backoff_step_ms;
  int einval_final; /* TARN_EINVAL is not retried (a new name cannot help) */
  /* Called after each put with its result (may be NULL): counts it (the
   * put began at o->put_started, tarn_metrics_now); returns the result to go
   * on with. */
  int (*after_put)(void *arg, int rc, const tarn__wal_object *o);
  void *arg;
} tarn__wal_write;

/* Writes o->obj into wal create-only under a new name (o->name) each attempt
 * (LS-009: a name is never reused, even after a failure), from attempt
 * *attempt on; *attempt is left at the last attempt made. 0, or the last
 * put's error (messages are the caller's). */
int tarn__wal_object_write(tarn__wal_object *o, tarn_objstore *wal, const tarn__wal_write *how,
                           int *attempt);

/* Section i's RAW EntryIndex value (LS-026) naming the object written. */
int tarn__wal_object_section_value(tarn__wal_object *o, size_t i, tarn_buf *v);

#endif
