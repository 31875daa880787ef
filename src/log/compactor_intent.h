/* Compaction intents (LS-084): a persistent record a compaction writes
 * before its first file, naming the files it may install, so that the
 * reclaimer does not take them for orphans while the compaction can still
 * install them (docs/compaction.md, "Intents"). */
#ifndef TARN_LOG_COMPACTOR_INTENT_H
#define TARN_LOG_COMPACTOR_INTENT_H

#include <stddef.h>
#include <stdint.h>

#include "tarn/meta.h"

/* An intent's ID: 16 lowercase hex digits, the first half of the random part
 * of every file name of its compaction ({L}-{first}-{id}{16 more}). */
#define TARN__INTENT_ID_LEN 16

typedef struct tarn__intent {
  char *key; /* /intents/{L:020d}-{id} in TARN_COMPACTION_PARTITION */
  uint64_t log_id;
  char id[TARN__INTENT_ID_LEN + 1];
  char *lock; /* the log's lock record value when written ("" for none) */
  int64_t created_ms;
} tarn__intent;

/* Writes a new intent for a compaction of log_id by the holder of the log's
 * lock as it is now, and returns its fresh ID. */
int tarn__intent_open(tarn_meta *m, uint64_t log_id, int64_t now_ms,
                      char id[TARN__INTENT_ID_LEN + 1]);
/* Before C3: makes the intent name the lock the caller holds now (a caller
 * that took the lock again after losing it, or an intent the reclaimer
 * reaped meanwhile), so that it lives while this install can happen. */
int tarn__intent_refresh(tarn_meta *m, uint64_t log_id, const char *id, int64_t now_ms);
/* Removes an intent (absent is fine). */
int tarn__intent_drop(tarn_meta *m, uint64_t log_id, const char *id);
int tarn__intents_list(tarn_meta *m, tarn__intent **v, size_t *n);
void tarn__intents_free(tarn__intent *v, size_t n);
/* *held = 1 while the lock the intent was written under still exists. */
int tarn__intent_lock_held(tarn_meta *m, const tarn__intent *in, int *held);
/* The tag "{L}-{id}" of an intent, and of a compacted file's base name
 * (0 when the name is not of tarn's form "{L}-{first}-{32 hex}.parquet"). */
void tarn__intent_tag(uint64_t log_id, const char *id, char *out, size_t n);
int tarn__intent_tag_of_file(const char *base, char *out, size_t n);

#endif
