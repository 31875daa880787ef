#include "log/read_cache.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tarn/wal.h"
#include "util/clock.h"
#include "util/error.h"

static int64_t mono_ms(void) { return tarn__mono_ms(); }

/* ---- index records ------------------------------------------------------------ */

void tarn__rec_free(tarn__rec *r) {
  free(r->location);
  free(r->file_index);
  free(r->boundaries);
  memset(r, 0, sizeof *r);
}

int tarn__rec_copy(tarn__rec *dst, const tarn__rec *src) {
  *dst = *src;
  dst->location = NULL;
  dst->file_index = NULL;
  dst->boundaries = NULL;
  if ((src->location && !(dst->location = strdup(src->location))) ||
      (src->file_index && !(dst->file_index = strdup(src->file_index)))) {
    tarn__rec_free(dst);
    return tarn__err(TARN_ENOMEM, "out of memory");
  }
  if (src->boundaries) {
    size_t sz = (size_t)src->entry_count * sizeof *src->boundaries;
    if (!(dst->boundaries = malloc(sz))) {
      tarn__rec_free(dst);
      return tarn__err(TARN_ENOMEM, "out of memory");
    }
    memcpy(dst->boundaries, src->boundaries, sz);
  }
  return 0;
}

int tarn__rec_cache_init(tarn__rec_cache *c, size_t cap, int64_t ttl_ms) {
  memset(c, 0, sizeof *c);
  pthread_mutex_init(&c->mu, NULL);
  c->ttl_ms = ttl_ms;
  if (cap == 0 || ttl_ms <= 0)
    return 0;
  c->v = calloc(cap, sizeof *c->v);
  c->at_ms = calloc(cap, sizeof *c->at_ms);
  if (!c->v || !c->at_ms) {
    free(c->v);
    free(c->at_ms);
    return tarn__err(TARN_ENOMEM, "out of memory");
  }
  c->cap = cap;
  return 0;
}

void tarn__rec_cache_free(tarn__rec_cache *c) {
  for (size_t i = 0; i < c->cap; i++)
    tarn__rec_free(&c->v[i]);
  free(c->v);
  free(c->at_ms);
  pthread_mutex_destroy(&c->mu);
}

int tarn__rec_cache_get(tarn__rec_cache *c, uint64_t log_id, uint64_t o, tarn__rec *out) {
  if (!c->cap)
    return 0;
  int found = 0;
  int64_t now = mono_ms();
  pthread_mutex_lock(&c->mu);
  for (size_t k = 0; k < c->n && !found; k++) {
    size_t i = (c->head + c->n - 1 - k) % c->cap; /* newest first */
    tarn__rec *r = &c->v[i];
    if (r->log_id == log_id && r->start <= o && o < r->end && now - c->at_ms[i] < c->ttl_ms)
      found = tarn__rec_copy(out, r) == 0;
  }
  pthread_mutex_unlock(&c->mu);
  return found;
}

void tarn__rec_cache_put(tarn__rec_cache *c, const tarn__rec *r) {
  if (!c->cap)
    return;
  pthread_mutex_lock(&c->mu);
  size_t i;
  if (c->n == c->cap) {
    i = c->head;
    c->head = (c->head + 1) % c->cap;
    c->n--;
  } else {
    i = (c->head + c->n) % c->cap;
  }
  tarn__rec_free(&c->v[i]);
  /* on failure slot i stays the ring's uncounted tail */
  if (tarn__rec_copy(&c->v[i], r) == 0) {
    c->at_ms[i] = mono_ms();
    c->n++;
  }
  pthread_mutex_unlock(&c->mu);
}

void tarn__rec_cache_forget(tarn__rec_cache *c, uint64_t log_id) {
  if (!c->cap)
    return;
  pthread_mutex_lock(&c->mu);
  for (size_t k = 0; k < c->n; k++) {
    size_t i = (c->head + k) % c->cap;
    if (c->v[i].log_id == log_id)
      c->v[i].end = 0; /* holds no offset any more; leaves with the ring */
  }
  pthread_mutex_unlock(&c->mu);
}

/* ---- object heads ------------------------------------------------------------- */

typedef struct head_sec {
  uint64_t log_id;
  size_t first, n; /* into ents */
} head_sec;

struct tarn__head {
  tarn__head *prev, *next;
  char *name;
  uint64_t object_size;
  head_sec *secs;
  size_t nsecs;
  tarn__sec_ent *ents;
  size_t bytes;
};

void tarn__head_cache_init(tarn__head_cache *c, size_t max_bytes) {
  memset(c, 0, sizeof *c);
  pthread_mutex_init(&c->mu, NULL);
  c->max_bytes = max_bytes;
}

static void head_free(tarn__head *h) {
  free(h->name);
  free(h->secs);
  free(h->ents);
  free(h);
}

void tarn__head_cache_free(tarn__head_cache *c) {
  for (tarn__head *h = c->first; h;) {
    tarn__head *n = h->next;
    head_free(h);
    h = n;
  }
  pthread_mutex_destroy(&c->mu);
}

static void unlink_head(tarn__head_cache *c, tarn__head *h) {
  if (h->prev)
    h->prev->next = h->next;
  else
    c->first = h->next;
  if (h->next)
    h->next->prev = h->prev;
  else
    c->last = h->prev;
  h->prev = h->next = NULL;
}

static void push_front(tarn__head_cache *c, tarn__head *h) {
  h->next = c->first;
  h->prev = NULL;
  if (c->first)
    c->first->prev = h;
  else
    c->last = h;
  c->first = h;
}

static int copy_section(const tarn__head *h, uint64_t log_id, tarn__sec_ent **ents, size_t *n) {
  *ents = NULL;
  *n = 0;
  for (size_t i = 0; i < h->nsecs; i++) {
    if (h->secs[i].log_id != log_id)
      continue;
    size_t k = h->secs[i].n;
    if (!(*ents = malloc(k * sizeof **ents)))
      return tarn__err(TARN_ENOMEM, "out of memory");
    memcpy(*ents, h->ents + h->secs[i].first, k * sizeof **ents);
    *n = k;
    break;
  }
  return 0;
}

int tarn__head_cache_get(tarn__head_cache *c, const char *name, uint64_t log_id,
                         tarn__sec_ent **ents, size_t *n, uint64_t *object_size) {
  int found = 0;
  pthread_mutex_lock(&c->mu);
  for (tarn__head *h = c->first; h; h = h->next) {
    if (strcmp(h->name, name) == 0) {
      unlink_head(c, h);
      push_front(c, h);
      found = copy_section(h, log_id, ents, n) == 0;
      *object_size = h->object_size;
      break;
    }
  }
  pthread_mutex_unlock(&c->mu);
  return found;
}

int tarn__head_cache_add(tarn__head_cache *c, const char *name, const uint8_t *head,
                         size_t head_len, uint64_t object_size, uint64_t log_id,
                         tarn__sec_ent **ents, size_t *n) {
  tarn_wal w;
  int rc = tarn_wal_decode_index(head, head_len, object_size, &w);
  if (rc)
    return tarn__errctx(rc, "WAL object %s", name);
  if (w.version != TARN_WAL_VERSION) {
    tarn_wal_free(&w);
    /* LS-001: a version 3 deployment holds only version 3 objects */
    return tarn__err(TARN_EVERSION, "WAL object %s has the legacy (v1/v2) layout", name);
  }
  tarn__head *h = calloc(1, sizeof *h);
  if (h) {
    h->name = strdup(name);
    h->secs = calloc(w.section_count ? w.section_count : 1, sizeof *h->secs);
    h->ents = calloc(w.entry_total ? w.entry_total : 1, sizeof *h->ents);
  }
  if (!h || !h->name || !h->secs || !h->ents) {
    if (h)
      head_free(h);
    tarn_wal_free(&w);
    return tarn__err(TARN_ENOMEM, "out of memory");
  }
  h->object_size = object_size;
  size_t k = 0;
  for (size_t i = 0; i < w.section_count; i++) {
    const tarn_wal_section *s = &w.sections[i];
    h->secs[i].log_id = s->log_id;
    h->secs[i].first = k;
    h->secs[i].n = s->entry_count;
    for (size_t j = 0; j < s->entry_count; j++, k++) {
      h->ents[k].pos = s->entries[j].payload_pos;
      h->ents[k].size = s->entries[j].payload_size;
      h->ents[k].records = s->entries[j].record_count;
    }
  }
  h->nsecs = w.section_count;
  h->bytes = sizeof *h + strlen(name) + 1 + w.section_count * sizeof *h->secs +
             w.entry_total * sizeof *h->ents;
  tarn_wal_free(&w);
  rc = copy_section(h, log_id, ents, n);
  pthread_mutex_lock(&c->mu);
  if (rc || h->bytes > c->max_bytes) {
    head_free(h);
  } else {
    push_front(c, h);
    c->bytes += h->bytes;
    while (c->bytes > c->max_bytes && c->last) {
      tarn__head *o = c->last;
      unlink_head(c, o);
      c->bytes -= o->bytes;
      head_free(o);
    }
  }
  pthread_mutex_unlock(&c->mu);
  return rc;
}
