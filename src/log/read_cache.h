/* The reader's two caches: resolved index records (with a TTL) and decoded
 * WAL object heads (bounded in bytes, least recently used out first). */
#ifndef TARN_LOG_READ_CACHE_H
#define TARN_LOG_READ_CACHE_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "tarn/key.h"

/* A resolved index record of a log. */
typedef struct tarn__rec {
  uint64_t log_id;
  uint64_t start, end;  /* [end - message_count, end) */
  uint64_t cumulative;  /* the key's cumulative size */
  int64_t timestamp_ms; /* the record's creation time */
  int64_t version;      /* the record's version: tells a replaced value apart */
  int file_type;
  int64_t entry_size_bytes;
  int32_t entry_count;
  uint32_t *boundaries; /* entry_count values, or NULL (one entry) */
  char *location;       /* malloc'd; NULL for PARQUET without one */
  char *file_index;     /* PARQUET: the CompactedObjectFileIndex (Base64), malloc'd */
  int legacy;           /* 1 or 2: a legacy string value (Appendix C), one RAW entry */
  uint64_t entry_id;    /* legacy: the entry's entry_id in its (legacy) object */
  char key[TARN_KEY_LEN + 1];
} tarn__rec;

void tarn__rec_free(tarn__rec *r);
int tarn__rec_copy(tarn__rec *dst, const tarn__rec *src);

typedef struct tarn__rec_cache {
  pthread_mutex_t mu;
  tarn__rec *v;   /* a ring of cap slots, oldest at head */
  int64_t *at_ms; /* when each slot was filled */
  size_t cap, n, head;
  int64_t ttl_ms;
} tarn__rec_cache;

int tarn__rec_cache_init(tarn__rec_cache *c, size_t cap, int64_t ttl_ms);
void tarn__rec_cache_free(tarn__rec_cache *c);
/* Copies into out a fresh cached record of log_id holding offset o; 1 if found. */
int tarn__rec_cache_get(tarn__rec_cache *c, uint64_t log_id, uint64_t o, tarn__rec *out);
void tarn__rec_cache_put(tarn__rec_cache *c, const tarn__rec *r);
/* Forgets every cached record of log_id (after a missing object, LS-055). */
void tarn__rec_cache_forget(tarn__rec_cache *c, uint64_t log_id);

/* One log section of an object, as a reader needs it. */
typedef struct tarn__sec_ent {
  uint64_t pos; /* absolute byte offset of the payload in the object */
  uint64_t size;
  uint32_t records;
} tarn__sec_ent;

typedef struct tarn__head tarn__head;

typedef struct tarn__head_cache {
  pthread_mutex_t mu;
  tarn__head *first, *last; /* most recently used first */
  size_t bytes, max_bytes;
} tarn__head_cache;

void tarn__head_cache_init(tarn__head_cache *c, size_t max_bytes);
void tarn__head_cache_free(tarn__head_cache *c);
/* Copies the section of log_id of the cached head of name into a malloc'd
 * array (*ents, *n; *n = 0 and *ents = NULL when the object has no such
 * section) and the object's size. Returns 1 when the head was cached. */
int tarn__head_cache_get(tarn__head_cache *c, const char *name, uint64_t log_id,
                         tarn__sec_ent **ents, size_t *n, uint64_t *object_size);
/* Decodes a head (TARN_WAL_VERSION objects), adds it, and copies out the
 * section as tarn__head_cache_get does. With max_bytes 0 nothing is kept. */
int tarn__head_cache_add(tarn__head_cache *c, const char *name, const uint8_t *head,
                         size_t head_len, uint64_t object_size, uint64_t log_id,
                         tarn__sec_ent **ents, size_t *n);

#endif
