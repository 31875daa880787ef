/* The metadata-store backend interface behind include/tarn/meta.h.
 *
 * A backend is a table of functions, found by URI scheme
 * (src/store/meta.c); code above the store never knows which backend it
 * talks to. meta.c validates arguments before calling a backend, so a
 * backend may assume: part non-empty, keys without NUL, d1 > 0, at most
 * TARN_META_GUARDS_MAX well-formed guards (g may be NULL when ng is 0).
 *
 * Guards (include/tarn/meta.h) are evaluated in the write's atomic step,
 * before the write's own condition; a failed guard is TARN_EGUARD, made by
 * tarn__meta_guard_failed() so that every backend words it alike. */
#ifndef TARN_STORE_META_VFS_H
#define TARN_STORE_META_VFS_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "tarn/meta.h"

/* Lookup comparisons, as Oxia numbers them (tables-and-vectors §3.12). */
enum {
  TARN__META_EQUAL = 0,
  TARN__META_FLOOR = 1,
  TARN__META_CEILING = 2,
  TARN__META_LOWER = 3,
  TARN__META_HIGHER = 4
};
/* Write modes. */
enum { TARN__META_PUT = 0, TARN__META_CREATE = 1, TARN__META_CAS = 2 };

typedef struct tarn__meta_vfs tarn__meta_vfs;

struct tarn_meta {
  const tarn__meta_vfs *vfs;
  void *impl; /* the backend's state */
  int64_t session_timeout_ms;
  char *root_prefix;  /* the option prefix= (etcd only), or NULL */
  char *backend_opts; /* "a=b&c=d": options meta.c leaves to the backend, or NULL */
  atomic_int session_ended;
  atomic_uint_fast64_t session_gen; /* tarn_meta_session_gen() */
  pthread_mutex_t cb_mu;
  void (*on_end)(void *);
  void *on_end_arg;
  pthread_mutex_t ab_mu;                  /* guards abandoned */
  struct tarn__meta_abandoned *abandoned; /* store/meta_abandoned.h, or NULL */
};

struct tarn__meta_vfs {
  const char *scheme;
  /* target: the URI after "scheme:" without the "?options". */
  int (*open)(tarn_meta *m, const char *target);
  /* Ends the session and frees impl. */
  void (*close)(tarn_meta *m);
  int (*find)(tarn_meta *m, const char *part, const char *key, int cmp, tarn_meta_rec *out);
  int (*write)(tarn_meta *m, const char *part, const char *key, const void *val, size_t len,
               int mode, int flags, int64_t version, const tarn_meta_guard *g, size_t ng,
               tarn_meta_stat *st);
  /* version: TARN_META_ANY_VERSION or the version the record must have */
  int (*del)(tarn_meta *m, const char *part, const char *key, int64_t version,
             const tarn_meta_guard *g, size_t ng);
  int (*del_range)(tarn_meta *m, const char *part, const char *a, const char *b,
                   const tarn_meta_guard *g, size_t ng, size_t *count);
  int (*seq_put)(tarn_meta *m, const char *part, const char *prefix, uint64_t d1, uint64_t d2,
                 const void *val, size_t len, const tarn_meta_guard *g, size_t ng,
                 tarn_meta_rec *out);
  int (*range)(tarn_meta *m, const char *part, const char *a, const char *b, int flags,
               size_t limit, int values, tarn_meta_recs *out);
  int (*token)(tarn_meta *m, int64_t *token);
  int (*wait)(tarn_meta *m, const char *part, const char *a, const char *b, int64_t since,
              int timeout_ms);
  int (*fault)(tarn_meta *m, int fault, int skip, int count); /* NULL: unsupported */
  /* Opens a new session in place of the ended one (m->session_ended set). */
  int (*renew)(tarn_meta *m);
  int (*clock)(tarn_meta *m, int64_t *ms); /* NULL: the host's wall clock */
  /* The clock's tick beyond 1 ms (tarn_meta_clock_tick_ms): 0 for a clock
   * read in ms. */
  int64_t clock_tick_ms;
  /* wait over n >= 1 ranges (meta.c checked each) */
  int (*wait_any)(tarn_meta *m, const tarn_meta_range *r, size_t n, int64_t since, int timeout_ms);
};

extern const tarn__meta_vfs tarn__meta_vfs_mem;
extern const tarn__meta_vfs tarn__meta_vfs_sqlite;
extern const tarn__meta_vfs tarn__meta_vfs_etcd;
extern const tarn__meta_vfs tarn__meta_vfs_etcd_https;

/* Called by a backend when it learns its session ended: sets the flag and
 * runs the callback once. */
void tarn__meta_session_ended(tarn_meta *m);

/* The TARN_EGUARD error for guard g of a write of key in part; present: the
 * key exists (with version ver). */
int tarn__meta_guard_failed(const char *backend, const char *part, const char *key,
                            const tarn_meta_guard *g, int present, int64_t ver);
/* The sequenced put's TARN_META_GUARD_LAST conditions against the last key
 * it found below the bound (NULL: none): TARN_EGUARD naming the first that
 * fails, else 0. Each backend calls it in the same atomic step as the put. */
int tarn__meta_seq_last(const char *backend, const char *part, const char *prefix, const char *last,
                        const tarn_meta_guard *g, size_t n);
/* Whether guard g holds for a key that is present (with version ver) or not
 * (a TARN_META_GUARD_LAST always does: tarn__meta_seq_last checks it). */
int tarn__meta_guard_holds(const tarn_meta_guard *g, int present, int64_t ver);

/* Wall-clock time in ms since the Unix epoch (creation timestamps). */
int64_t tarn__meta_now_ms(void);

/* The bound of the sequenced put's search: prefix-18446744073709551615
 * (malloc'd, NULL on no memory). */
char *tarn__meta_seq_bound(const char *prefix);
/* The sequenced put's new key from the last key found below the bound
 * (NULL or not starting with prefix: start from 0, 0). Oxia's rules:
 * tables-and-vectors §3.3, §5. *out is malloc'd. */
int tarn__meta_seq_key(const char *prefix, const char *last, uint64_t d1, uint64_t d2, char **out);

/* Fills a record with copies; value may be NULL (key-only). */
int tarn__meta_rec_set(tarn_meta_rec *r, const char *key, const void *val, size_t len,
                       int64_t version, int64_t created_ms);
/* Appends an empty record to recs and returns it (NULL on no memory). */
tarn_meta_rec *tarn__meta_recs_push(tarn_meta_recs *recs);

#endif
