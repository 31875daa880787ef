/* The handle's memory of ephemeral creates of unknown outcome
 * (meta_abandoned.h). */
#include "store/meta_abandoned.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "store/meta_vfs.h"
#include "util/error.h"

typedef struct entry {
  char *part, *key;
  void *val;
  size_t len;
  uint64_t gen; /* the session it was abandoned in */
} entry;

struct tarn__meta_abandoned {
  entry v[TARN__META_ABANDONED_MAX];
  size_t next; /* the slot the next entry takes (the oldest once full) */
};

static void entry_free(entry *e) {
  free(e->part);
  free(e->key);
  free(e->val);
  memset(e, 0, sizeof *e);
}

int tarn__meta_abandon(tarn_meta *m, const char *part, const char *key, const void *val,
                       size_t len) {
  entry e = {strdup(part), strdup(key), malloc(len ? len : 1), len, tarn_meta_session_gen(m)};
  if (!e.part || !e.key || !e.val) {
    entry_free(&e);
    return tarn__err(TARN_ENOMEM, "out of memory");
  }
  memcpy(e.val, val, len);
  pthread_mutex_lock(&m->ab_mu);
  if (!m->abandoned && !(m->abandoned = calloc(1, sizeof *m->abandoned))) {
    pthread_mutex_unlock(&m->ab_mu);
    entry_free(&e);
    return tarn__err(TARN_ENOMEM, "out of memory");
  }
  entry *slot = &m->abandoned->v[m->abandoned->next];
  entry_free(slot);
  *slot = e;
  m->abandoned->next = (m->abandoned->next + 1) % TARN__META_ABANDONED_MAX;
  pthread_mutex_unlock(&m->ab_mu);
  return 0;
}

int tarn__meta_abandoned(tarn_meta *m, const char *part, const char *key, const void *val,
                         size_t len) {
  uint64_t gen = tarn_meta_session_gen(m);
  int found = 0;
  pthread_mutex_lock(&m->ab_mu);
  for (size_t i = 0; m->abandoned && i < TARN__META_ABANDONED_MAX && !found; i++) {
    const entry *e = &m->abandoned->v[i];
    found = e->key && e->gen == gen && e->len == len && strcmp(e->key, key) == 0 &&
            strcmp(e->part, part) == 0 && memcmp(e->val, val, len) == 0;
  }
  pthread_mutex_unlock(&m->ab_mu);
  return found;
}

int tarn__meta_abandoned_list(tarn_meta *m, const char *part, const char *prefix,
                              tarn_meta_recs *out) {
  memset(out, 0, sizeof *out);
  uint64_t gen = tarn_meta_session_gen(m);
  size_t pl = strlen(prefix);
  int rc = 0;
  pthread_mutex_lock(&m->ab_mu);
  for (size_t i = 0; m->abandoned && i < TARN__META_ABANDONED_MAX && !rc; i++) {
    const entry *e = &m->abandoned->v[i];
    if (!e->key || e->gen != gen || strcmp(e->part, part) != 0 || strncmp(e->key, prefix, pl) != 0)
      continue;
    tarn_meta_rec *r = tarn__meta_recs_push(out);
    rc = r ? tarn__meta_rec_set(r, e->key, e->val, e->len, 0, 0)
           : tarn__err(TARN_ENOMEM, "out of memory");
  }
  pthread_mutex_unlock(&m->ab_mu);
  if (rc)
    tarn_meta_recs_free(out);
  return rc;
}

void tarn__meta_abandoned_free(tarn_meta *m) {
  if (m->abandoned)
    for (size_t i = 0; i < TARN__META_ABANDONED_MAX; i++)
      entry_free(&m->abandoned->v[i]);
  free(m->abandoned);
  m->abandoned = NULL;
}
