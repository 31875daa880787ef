/* sqlite:PATH — the embedded metadata store (the default).
 *
 * Durable (WAL, synchronous=FULL) and shared by the processes of one machine:
 * every write is one BEGIN IMMEDIATE transaction, so writes to the file are
 * serialized and every read (one SELECT, a snapshot of the latest commit) is
 * linearizable with them. Records are keyed by (partition, encoded key) with
 * the key encoded by tarn_meta_key_encode, so SQLite's BLOB order (memcmp)
 * is the store's key order.
 *
 * Sessions are rows with a heartbeat that a thread per handle refreshes every
 * timeout/4, on a connection of its own: a thread of the handle waiting on
 * the database's lock (up to the busy timeout, longer than a session) holds
 * the handle's connection, and must not starve its own session. A session
 * whose heartbeat is older than its timeout has expired: every read ignores
 * its ephemeral records at once, and every write transaction first deletes
 * them and the session row (so whichever client comes next cleans up).
 * Heartbeats are CLOCK_MONOTONIC ms, one clock for every process of the
 * machine that no wall-clock step moves; a heartbeat more than a timeout in
 * the future is from before a reboot (or a wall-clock heartbeat of an older
 * tarn) and counts as expired too.
 * Versions come from one counter row, bumped by every write, so they grow
 * across processes; creation timestamps are the wall clock in ms. */
#include <fcntl.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "store/meta_vfs.h"
#include "util/clock.h"
#include "util/error.h"

/* SQLite's own busy handler (sqlite3_busy_timeout) sleeps 1, 2, 5, ... up
 * to 100 ms between tries, so a writer that meets another's transaction (a
 * few ms: one fsync) often sleeps on for tens of ms after the lock is free:
 * 8 clients wrote at 0.43x one raw writer's rate (issue 36, item 4). This
 * one tries again after 0.1 to 2 ms (doubling, with jitter so that waiters
 * do not wake together) until the same deadline. One per connection: a
 * connection is used by one thread at a time. */
typedef struct busy_wait {
  int64_t timeout_ms;
  struct timespec start;
  unsigned seed;
} busy_wait;

static int busy_retry(void *arg, int count) {
  busy_wait *w = arg;
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  if (count == 0)
    w->start = now;
  int64_t waited_ms =
      (int64_t)(now.tv_sec - w->start.tv_sec) * 1000 + (now.tv_nsec - w->start.tv_nsec) / 1000000;
  if (waited_ms >= w->timeout_ms)
    return 0; /* SQLITE_BUSY to the caller, as the timeout gave it */
  long us = 100L << (count < 4 ? count : 4);
  us += (long)(rand_r(&w->seed) % (unsigned)(us / 2 + 1));
  struct timespec d = {0, us * 1000L};
  nanosleep(&d, NULL);
  return 1;
}

static void busy_set(sqlite3 *db, busy_wait *w, int64_t timeout_ms) {
  w->timeout_ms = timeout_ms;
  w->seed = (unsigned)(uintptr_t)w ^ (unsigned)time(NULL);
  sqlite3_busy_handler(db, busy_retry, w);
}

typedef struct shandle {
  sqlite3 *db;
  busy_wait busy, hb_busy;
  pthread_mutex_t mu;      /* one connection per handle, used by one thread at a time */
  sqlite3 *hb_db;          /* the heartbeat thread's own connection */
  _Atomic int64_t session; /* replaced by a renewal */
  pthread_t hb;
  pthread_mutex_t hb_mu;
  pthread_cond_t hb_cv;
  int stop;
  char *path;
} shandle;

static const char schema[] =
    "CREATE TABLE IF NOT EXISTS kv(part TEXT NOT NULL, k BLOB NOT NULL, key TEXT NOT NULL,"
    " val BLOB NOT NULL, version INTEGER NOT NULL, created INTEGER NOT NULL,"
    " session INTEGER NOT NULL, PRIMARY KEY(part, k)) WITHOUT ROWID;"
    "CREATE INDEX IF NOT EXISTS kv_session ON kv(session) WHERE session != 0;"
    "CREATE TABLE IF NOT EXISTS counter(id INTEGER PRIMARY KEY CHECK(id = 0),"
    " v INTEGER NOT NULL);"
    "INSERT OR IGNORE INTO counter VALUES(0, 0);"
    "CREATE TABLE IF NOT EXISTS sessions(id INTEGER PRIMARY KEY AUTOINCREMENT,"
    " heartbeat INTEGER NOT NULL, timeout INTEGER NOT NULL);";

/* An ephemeral record is visible while its session's heartbeat is fresh. */
#define VISIBLE                                                                                    \
  " AND (session = 0 OR EXISTS(SELECT 1 FROM sessions s WHERE s.id = kv.session"                   \
  " AND s.heartbeat > ?9 - s.timeout AND s.heartbeat <= ?9 + s.timeout))"

/* The clock of heartbeats (see the top). */
static int64_t session_clock(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int db_err(shandle *h, const char *what) {
  int code = sqlite3_extended_errcode(h->db);
  int rc = (code & 0xff) == SQLITE_BUSY || (code & 0xff) == SQLITE_LOCKED ? TARN_EBUSY
           : (code & 0xff) == SQLITE_NOMEM                                ? TARN_ENOMEM
                                                                          : TARN_EIO;
  return tarn__err(rc, "sqlite %s: %s: %s", h->path, what, sqlite3_errmsg(h->db));
}

static int exec(shandle *h, const char *sql) {
  if (sqlite3_exec(h->db, sql, NULL, NULL, NULL) != SQLITE_OK)
    return db_err(h, sql);
  return 0;
}

static int prep(shandle *h, const char *sql, sqlite3_stmt **st) {
  if (sqlite3_prepare_v2(h->db, sql, -1, st, NULL) != SQLITE_OK)
    return db_err(h, "prepare");
  return 0;
}

/* Binds the encoded key to parameter i; *buf must be freed. */
static int bind_key(shandle *h, sqlite3_stmt *st, int i, const char *key, uint8_t **buf) {
  size_t n = tarn_meta_key_encode(key, NULL);
  *buf = malloc(n);
  if (!*buf)
    return tarn__err(TARN_ENOMEM, "sqlite: out of memory");
  tarn_meta_key_encode(key, *buf);
  if (sqlite3_bind_blob(st, i, *buf, (int)n, SQLITE_STATIC) != SQLITE_OK)
    return db_err(h, "bind");
  return 0;
}

/* ---- transactions ---------------------------------------------------------- */

/* Ends a transaction that failed, keeping the error that made it fail (issue
 * 31 item 10: ROLLBACK's own error — "no transaction is active" after SQLite
 * rolled back by itself, as on a full disk — used to replace it). */
static void rollback(shandle *h) {
  if (!sqlite3_get_autocommit(h->db))
    sqlite3_exec(h->db, "ROLLBACK", NULL, NULL, NULL);
}

static int begin_write(shandle *h) {
  int rc = exec(h, "BEGIN IMMEDIATE");
  if (rc)
    return rc;
  /* Expired sessions: remove their ephemeral records and the sessions. */
  sqlite3_stmt *st;
  rc = prep(h,
            "DELETE FROM kv WHERE session IN (SELECT id FROM sessions"
            " WHERE heartbeat <= ?1 - timeout OR heartbeat > ?1 + timeout)",
            &st);
  if (rc == 0) {
    sqlite3_bind_int64(st, 1, session_clock());
    if (sqlite3_step(st) != SQLITE_DONE)
      rc = db_err(h, "expire ephemerals");
    sqlite3_finalize(st);
  }
  if (rc == 0) {
    rc = prep(h, "DELETE FROM sessions WHERE heartbeat <= ?1 - timeout OR heartbeat > ?1 + timeout",
              &st);
    if (rc == 0) {
      sqlite3_bind_int64(st, 1, session_clock());
      if (sqlite3_step(st) != SQLITE_DONE)
        rc = db_err(h, "expire sessions");
      sqlite3_finalize(st);
    }
  }
  if (rc)
    rollback(h);
  return rc;
}

/* Commits (rc == 0) or rolls back; returns rc or the commit's error. */
static int end_write(shandle *h, int rc) {
  if (rc) {
    rollback(h);
    return rc;
  }
  rc = exec(h, "COMMIT");
  if (rc) {
    int code = sqlite3_extended_errcode(h->db) & 0xff;
    int ended = sqlite3_get_autocommit(h->db); /* SQLite rolled back by itself */
    rollback(h);
    /* Issue 31 item 10: a COMMIT that found the disk full (or the lock
     * busy) and was rolled back wrote nothing — the WAL's commit frame is
     * its last write — so the failure is definite, and says why. Any other
     * failed COMMIT under synchronous=FULL may or may not have reached the
     * disk. */
    if (code == SQLITE_FULL && ended)
      return tarn__errctx(rc, "commit (rolled back: nothing was written)");
    if (code == SQLITE_BUSY && !ended)
      return tarn__errctx(TARN_EBUSY, "commit (rolled back: nothing was written)");
    return tarn__errctx(TARN_EUNKNOWN, "commit");
  }
  return 0;
}

static int next_version(shandle *h, int64_t *v) {
  sqlite3_stmt *st;
  int rc = prep(h, "UPDATE counter SET v = v + 1 WHERE id = 0 RETURNING v", &st);
  if (rc)
    return rc;
  if (sqlite3_step(st) == SQLITE_ROW)
    *v = sqlite3_column_int64(st, 0);
  else
    rc = db_err(h, "version counter");
  sqlite3_finalize(st);
  return rc;
}

/* ---- sessions ---------------------------------------------------------------- */

/* Session sid was found expired. It is the handle's session only if no
 * renewal replaced it meanwhile: the check and the marking hold h->mu, which
 * sq_renew holds while it replaces h->session, so a late verdict on the old
 * session never ends the new one (issue 31 item 6: a heartbeat or a write
 * that read the old id before a renewal ended the fresh session, and the
 * node renewed twice, 5 s apart). */
static void session_gone(tarn_meta *m, int64_t sid) {
  shandle *h = m->impl;
  pthread_mutex_lock(&h->mu);
  if (h->session != sid) {
    pthread_mutex_unlock(&h->mu);
    return;
  }
  tarn__meta_session_ended(m);
  pthread_mutex_unlock(&h->mu);
}

static void *heartbeat(void *arg) {
  tarn_meta *m = arg;
  shandle *h = m->impl;
  int64_t period = m->session_timeout_ms / 4;
  pthread_mutex_lock(&h->hb_mu);
  while (!h->stop) {
    struct timespec dl;
    clock_gettime(CLOCK_REALTIME, &dl);
    dl.tv_sec += period / 1000;
    dl.tv_nsec += (long)(period % 1000) * 1000000;
    if (dl.tv_nsec >= 1000000000)
      dl.tv_sec++, dl.tv_nsec -= 1000000000;
    pthread_cond_timedwait(&h->hb_cv, &h->hb_mu, &dl);
    if (h->stop)
      break;
    pthread_mutex_unlock(&h->hb_mu);
    sqlite3_stmt *st;
    int gone = 0;
    int64_t sid = h->session;
    /* An expired session stays ended: other clients already hide its
     * ephemeral records, so a late heartbeat must not bring them back. */
    if (sid && sqlite3_prepare_v2(h->hb_db,
                                  "UPDATE sessions SET heartbeat = ?1 WHERE id = ?2 AND"
                                  " heartbeat + timeout > ?1 AND heartbeat <= ?1 + timeout",
                                  -1, &st, NULL) == SQLITE_OK) {
      sqlite3_bind_int64(st, 1, session_clock());
      sqlite3_bind_int64(st, 2, sid);
      if (sqlite3_step(st) == SQLITE_DONE && sqlite3_changes(h->hb_db) == 0)
        gone = 1;
      sqlite3_finalize(st);
    }
    if (gone)
      session_gone(m, sid); /* another client expired us */
    pthread_mutex_lock(&h->hb_mu);
  }
  pthread_mutex_unlock(&h->hb_mu);
  return NULL;
}

static void free_handle(shandle *h) {
  if (h->db)
    sqlite3_close(h->db);
  if (h->hb_db)
    sqlite3_close(h->hb_db);
  pthread_mutex_destroy(&h->mu);
  pthread_mutex_destroy(&h->hb_mu);
  pthread_cond_destroy(&h->hb_cv);
  free(h->path);
  free(h);
}

/* Inserts a session row inside a write transaction. */
static int insert_session(shandle *h, int64_t timeout_ms, int64_t *id) {
  sqlite3_stmt *st;
  int rc = prep(h, "INSERT INTO sessions(heartbeat, timeout) VALUES(?1, ?2)", &st);
  if (rc)
    return rc;
  sqlite3_bind_int64(st, 1, session_clock());
  sqlite3_bind_int64(st, 2, timeout_ms);
  if (sqlite3_step(st) != SQLITE_DONE)
    rc = db_err(h, "create session");
  sqlite3_finalize(st);
  *id = sqlite3_last_insert_rowid(h->db);
  return rc;
}

/* Switches to WAL, creates the schema and this handle's session row. */
static int open_setup(shandle *h, int64_t timeout_ms) {
  int rc;
  if ((rc = exec(h, "PRAGMA journal_mode=WAL")) || (rc = exec(h, "PRAGMA synchronous=FULL")))
    return rc;
  if ((rc = exec(h, "BEGIN IMMEDIATE")))
    return rc;
  if ((rc = exec(h, schema))) {
    rollback(h);
    return rc;
  }
  /* Issue 31 item 8: no session row yet — it is made by the first write that
   * needs one (an ephemeral record), so read-only work (read, offsets, fsck)
   * writes nothing and works on a full disk */
  (void)timeout_ms;
  return end_write(h, 0);
}

/* A new session: for a handle whose session ended (tarn_meta_session_renew). */
static int sq_renew(tarn_meta *m) {
  shandle *h = m->impl;
  int64_t id = 0;
  pthread_mutex_lock(&h->mu);
  int rc = begin_write(h);
  if (rc == 0)
    rc = end_write(h, insert_session(h, m->session_timeout_ms, &id));
  if (rc == 0)
    h->session = id;
  pthread_mutex_unlock(&h->mu);
  return rc;
}

static int sq_open(tarn_meta *m, const char *target) {
  if (!*target)
    return tarn__err(TARN_EINVAL, "sqlite: URI names no file (sqlite:PATH)");
  shandle *h = calloc(1, sizeof *h);
  if (!h)
    return tarn__err(TARN_ENOMEM, "sqlite: out of memory");
  pthread_mutex_init(&h->mu, NULL);
  pthread_mutex_init(&h->hb_mu, NULL);
  pthread_cond_init(&h->hb_cv, NULL);
  h->path = strdup(target);
  int rc;
  if (!h->path) {
    rc = tarn__err(TARN_ENOMEM, "sqlite: out of memory");
    goto fail;
  }
  /* The file holds SCRAM keys and producer state (issue 33: it was created
   * 0644): a new one is created 0600 here, before SQLite would create it with
   * 0644, and SQLite gives its -wal and -shm files the database's mode. An
   * existing file keeps the mode its operator gave it. */
  if (strcmp(target, ":memory:") != 0) {
    int fd = open(target, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd >= 0)
      close(fd); /* else: SQLite's open names the fault */
  }
  if (sqlite3_open_v2(target, &h->db,
                      SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
                      NULL) != SQLITE_OK) {
    rc = tarn__err(TARN_EUNAVAIL, "sqlite %s: open: %s", target,
                   h->db ? sqlite3_errmsg(h->db) : "out of memory");
    goto fail;
  }
  busy_set(h->db, &h->busy, 30000);
  /* Several processes opening one new file at once can meet SQLITE_BUSY that
   * the busy handler does not wait out (switching to WAL, creating the
   * schema): the set-up is idempotent, so it is tried again. */
  for (int attempt = 0;; attempt++) {
    rc = open_setup(h, m->session_timeout_ms);
    /* a set-up whose COMMIT failed left at most an orphan session row, which expires */
    if ((rc != TARN_EBUSY && rc != TARN_EUNKNOWN) || attempt == 50)
      break;
    tarn__sleep_ms(20 + 10 * (attempt % 5));
  }
  if (rc)
    goto fail;
  if (sqlite3_open_v2(target, &h->hb_db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL) !=
      SQLITE_OK) {
    rc = tarn__err(TARN_EUNAVAIL, "sqlite %s: open: %s", target,
                   h->hb_db ? sqlite3_errmsg(h->hb_db) : "out of memory");
    goto fail;
  }
  /* A heartbeat that waits on another process's lock gives up in time to
   * try again before the session runs out. */
  busy_set(h->hb_db, &h->hb_busy, m->session_timeout_ms / 4);
  m->impl = h;
  if (pthread_create(&h->hb, NULL, heartbeat, m) != 0) {
    rc = tarn__err(TARN_ENOMEM, "sqlite: cannot start the heartbeat thread");
    goto fail;
  }
  return 0;
fail:
  m->impl = NULL;
  free_handle(h);
  return rc;
}

static void sq_close(tarn_meta *m) {
  shandle *h = m->impl;
  pthread_mutex_lock(&h->hb_mu);
  h->stop = 1;
  pthread_cond_signal(&h->hb_cv);
  pthread_mutex_unlock(&h->hb_mu);
  pthread_join(h->hb, NULL);
  /* Ending the session removes its ephemeral records (none without one:
   * a read-only handle writes nothing, issue 31 item 8). */
  if (h->session && begin_write(h) == 0) {
    sqlite3_stmt *st;
    int rc = prep(h, "DELETE FROM kv WHERE session = ?1", &st);
    if (rc == 0) {
      sqlite3_bind_int64(st, 1, h->session);
      if (sqlite3_step(st) != SQLITE_DONE)
        rc = db_err(h, "end session");
      sqlite3_finalize(st);
    }
    if (rc == 0 && (rc = prep(h, "DELETE FROM sessions WHERE id = ?1", &st)) == 0) {
      sqlite3_bind_int64(st, 1, h->session);
      if (sqlite3_step(st) != SQLITE_DONE)
        rc = db_err(h, "end session");
      sqlite3_finalize(st);
    }
    int64_t v;
    if (rc == 0)
      rc = next_version(h, &v);
    end_write(h, rc);
  }
  free_handle(h);
}

/* ---- reads -------------------------------------------------------------------- */

static int row_to_rec(sqlite3_stmt *st, int values, tarn_meta_rec *r) {
  /* columns: key, val, version, created */
  const void *v = sqlite3_column_blob(st, 1);
  size_t n = (size_t)sqlite3_column_bytes(st, 1);
  return tarn__meta_rec_set(r, (const char *)sqlite3_column_text(st, 0),
                            values ? (v ? v : "") : NULL, n, sqlite3_column_int64(st, 2),
                            sqlite3_column_int64(st, 3));
}

static int sq_find(tarn_meta *m, const char *part, const char *key, int cmp, tarn_meta_rec *out) {
  shandle *h = m->impl;
  static const char *const sql[] = {
      [TARN__META_EQUAL] = "k = ?2" VISIBLE,
      [TARN__META_FLOOR] = "k <= ?2" VISIBLE " ORDER BY k DESC",
      [TARN__META_CEILING] = "k >= ?2" VISIBLE " ORDER BY k",
      [TARN__META_LOWER] = "k < ?2" VISIBLE " ORDER BY k DESC",
      [TARN__META_HIGHER] = "k > ?2" VISIBLE " ORDER BY k",
  };
  char q[512];
  snprintf(q, sizeof q, "SELECT key, val, version, created FROM kv WHERE part = ?1 AND %s LIMIT 1",
           sql[cmp]);
  uint8_t *kb = NULL;
  sqlite3_stmt *st = NULL;
  pthread_mutex_lock(&h->mu);
  int rc = prep(h, q, &st);
  if (rc == 0) {
    sqlite3_bind_text(st, 1, part, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 9, session_clock());
    rc = bind_key(h, st, 2, key, &kb);
  }
  if (rc == 0) {
    int s = sqlite3_step(st);
    if (s == SQLITE_ROW)
      rc = row_to_rec(st, 1, out);
    else if (s == SQLITE_DONE)
      rc = tarn__err(TARN_ENOTFOUND, "sqlite: no key for \"%s\" in partition %s", key, part);
    else
      rc = db_err(h, "lookup");
  }
  sqlite3_finalize(st);
  pthread_mutex_unlock(&h->mu);
  free(kb);
  return rc;
}

static int sq_range(tarn_meta *m, const char *part, const char *a, const char *b, int flags,
                    size_t limit, int values, tarn_meta_recs *out) {
  shandle *h = m->impl;
  char q[512];
  snprintf(q, sizeof q,
           "SELECT key, %s, version, created FROM kv WHERE part = ?1 AND k %s ?2 AND k < ?3" VISIBLE
           " ORDER BY k LIMIT ?4",
           values ? "val" : "NULL", (flags & TARN_META_AFTER) ? ">" : ">=");
  uint8_t *ka = NULL, *kb = NULL;
  sqlite3_stmt *st = NULL;
  pthread_mutex_lock(&h->mu);
  int rc = prep(h, q, &st);
  if (rc == 0) {
    sqlite3_bind_text(st, 1, part, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 4, limit ? (int64_t)limit + 1 : -1);
    sqlite3_bind_int64(st, 9, session_clock());
    rc = bind_key(h, st, 2, a, &ka);
  }
  if (rc == 0)
    rc = bind_key(h, st, 3, b, &kb);
  while (rc == 0) {
    int s = sqlite3_step(st);
    if (s == SQLITE_DONE)
      break;
    if (s != SQLITE_ROW) {
      rc = db_err(h, "range");
      break;
    }
    if (limit && out->n == limit) {
      out->more = 1;
      break;
    }
    tarn_meta_rec *r = tarn__meta_recs_push(out);
    rc = r ? row_to_rec(st, values, r) : tarn__err(TARN_ENOMEM, "sqlite: out of memory");
  }
  sqlite3_finalize(st);
  pthread_mutex_unlock(&h->mu);
  free(ka);
  free(kb);
  return rc;
}

/* ---- writes ------------------------------------------------------------------- */

/* Inserts or replaces (keeping created and the kind) inside a transaction. */
static int upsert(shandle *h, const char *part, const char *key, const void *val, size_t len,
                  int64_t session, int exists, int64_t created, tarn_meta_stat *stat) {
  int64_t v;
  int rc = next_version(h, &v);
  if (rc)
    return rc;
  sqlite3_stmt *st;
  rc = prep(h,
            exists ? "UPDATE kv SET val = ?3, version = ?4 WHERE part = ?1 AND k = ?2"
                   : "INSERT INTO kv(part, k, key, val, version, created, session)"
                     " VALUES(?1, ?2, ?5, ?3, ?4, ?6, ?7)",
            &st);
  if (rc)
    return rc;
  uint8_t *kb = NULL;
  if (!exists)
    created = tarn__meta_now_ms();
  sqlite3_bind_text(st, 1, part, -1, SQLITE_STATIC);
  sqlite3_bind_blob(st, 3, len ? val : "", (int)len, SQLITE_STATIC);
  sqlite3_bind_int64(st, 4, v);
  if (!exists) {
    sqlite3_bind_text(st, 5, key, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 6, created);
    sqlite3_bind_int64(st, 7, session);
  }
  rc = bind_key(h, st, 2, key, &kb);
  if (rc == 0 && sqlite3_step(st) != SQLITE_DONE)
    rc = db_err(h, "write");
  sqlite3_finalize(st);
  free(kb);
  stat->version = v;
  stat->created_ms = created;
  return rc;
}

/* Reads the current (visible: expired sessions were just removed) record. */
static int current(shandle *h, const char *part, const char *key, int *exists, int64_t *version,
                   int64_t *created) {
  sqlite3_stmt *st;
  uint8_t *kb = NULL;
  int rc = prep(h, "SELECT version, created FROM kv WHERE part = ?1 AND k = ?2", &st);
  if (rc)
    return rc;
  sqlite3_bind_text(st, 1, part, -1, SQLITE_STATIC);
  rc = bind_key(h, st, 2, key, &kb);
  *exists = 0;
  if (rc == 0) {
    int s = sqlite3_step(st);
    if (s == SQLITE_ROW) {
      *exists = 1;
      *version = sqlite3_column_int64(st, 0);
      *created = sqlite3_column_int64(st, 1);
    } else if (s != SQLITE_DONE) {
      rc = db_err(h, "read");
    }
  }
  sqlite3_finalize(st);
  free(kb);
  return rc;
}

/* 0 when every guard of a write of key holds, else TARN_EGUARD for the
 * first that fails; inside the write's transaction, after begin_write removed
 * the expired sessions' records. */
static int check_guards(shandle *h, const char *part, const char *key, const tarn_meta_guard *g,
                        size_t ng) {
  for (size_t i = 0; i < ng; i++) {
    int exists;
    int64_t ver = 0, created;
    int rc = current(h, part, g[i].key, &exists, &ver, &created);
    if (rc)
      return rc;
    if (!tarn__meta_guard_holds(&g[i], exists, ver))
      return tarn__meta_guard_failed("sqlite", part, key, &g[i], exists, ver);
  }
  return 0;
}

static int sq_write(tarn_meta *m, const char *part, const char *key, const void *val, size_t len,
                    int mode, int flags, int64_t version, const tarn_meta_guard *g, size_t ng,
                    tarn_meta_stat *stat) {
  shandle *h = m->impl;
  int ended = 0;
  pthread_mutex_lock(&h->mu);
  int64_t sid = h->session;
  int rc = begin_write(h);
  if (rc)
    goto out;
  int exists, fresh = 0;
  int64_t cur = 0, created = 0, sess = h->session;
  if ((flags & TARN_META_EPHEMERAL) && !sess) {
    /* Issue 31 item 8: the handle's first ephemeral record makes its
     * session, in the same transaction */
    rc = insert_session(h, m->session_timeout_ms, &sess);
    fresh = 1;
  } else if (flags & TARN_META_EPHEMERAL) {
    /* begin_write may just have expired this very session (its heartbeat
     * was late): an ephemeral record must not outlive its session's row,
     * where no expiry would ever find it. */
    sqlite3_stmt *st;
    rc = prep(h, "SELECT 1 FROM sessions WHERE id = ?1", &st);
    if (rc == 0) {
      sqlite3_bind_int64(st, 1, h->session);
      int step = sqlite3_step(st);
      if (step == SQLITE_DONE)
        ended = 1;
      else if (step != SQLITE_ROW)
        rc = db_err(h, "session check");
      sqlite3_finalize(st);
    }
    if (rc == 0 && ended)
      rc = tarn__err(TARN_ESESSION, "sqlite: the session ended: no ephemeral \"%s\"", key);
  }
  if (rc == 0)
    rc = check_guards(h, part, key, g, ng);
  if (rc == 0)
    rc = current(h, part, key, &exists, &cur, &created);
  if (rc == 0) {
    if (mode == TARN__META_CREATE && exists)
      rc = tarn__err(TARN_EEXIST, "sqlite: \"%s\" exists in partition %s", key, part);
    else if (mode == TARN__META_CAS && !exists)
      rc = tarn__err(TARN_ENOTFOUND, "sqlite: compare-and-set of absent \"%s\"", key);
    else if (mode == TARN__META_CAS && cur != version)
      rc = tarn__err(TARN_ECONFLICT, "sqlite: \"%s\" has version %lld, not %lld", key,
                     (long long)cur, (long long)version);
    else
      rc = upsert(h, part, key, val, len, (flags & TARN_META_EPHEMERAL) ? sess : 0, exists, created,
                  stat);
  }
  rc = end_write(h, rc);
  if (rc == 0 && fresh)
    h->session = sess;
out:
  pthread_mutex_unlock(&h->mu);
  if (ended)
    session_gone(m, sid);
  return rc;
}

/* Deletes key a (b NULL; of that version unless TARN_META_ANY_VERSION) or
 * the range [a, b), if the guards hold. */
static int delete_where(tarn_meta *m, const char *part, const char *a, const char *b,
                        int64_t version, const tarn_meta_guard *g, size_t ng, size_t *count) {
  shandle *h = m->impl;
  pthread_mutex_lock(&h->mu);
  int rc = begin_write(h);
  if (rc)
    goto out;
  sqlite3_stmt *st;
  uint8_t *ka = NULL, *kb = NULL;
  *count = 0;
  rc = check_guards(h, part, a, g, ng);
  if (rc == 0 && !b && version != TARN_META_ANY_VERSION) {
    int exists;
    int64_t cur = 0, created;
    rc = current(h, part, a, &exists, &cur, &created);
    if (rc == 0 && exists && cur != version)
      rc = tarn__err(TARN_ECONFLICT, "sqlite: delete of \"%s\": version %lld, not %lld", a,
                     (long long)cur, (long long)version);
  }
  if (rc == 0)
    rc = prep(h,
              b ? "DELETE FROM kv WHERE part = ?1 AND k >= ?2 AND k < ?3"
                : "DELETE FROM kv WHERE part = ?1 AND k = ?2",
              &st);
  if (rc == 0) {
    sqlite3_bind_text(st, 1, part, -1, SQLITE_STATIC);
    rc = bind_key(h, st, 2, a, &ka);
    if (rc == 0 && b)
      rc = bind_key(h, st, 3, b, &kb);
    if (rc == 0 && sqlite3_step(st) != SQLITE_DONE)
      rc = db_err(h, "delete");
    sqlite3_finalize(st);
    *count = (size_t)sqlite3_changes(h->db);
  }
  int64_t v;
  if (rc == 0 && *count)
    rc = next_version(h, &v);
  free(ka);
  free(kb);
  rc = end_write(h, rc);
out:
  pthread_mutex_unlock(&h->mu);
  return rc;
}

static int sq_del(tarn_meta *m, const char *part, const char *key, int64_t version,
                  const tarn_meta_guard *g, size_t ng) {
  size_t n = 0;
  int rc = delete_where(m, part, key, NULL, version, g, ng, &n);
  if (rc == 0 && n == 0)
    return tarn__err(TARN_ENOTFOUND, "sqlite: delete of absent \"%s\"", key);
  return rc;
}

static int sq_del_range(tarn_meta *m, const char *part, const char *a, const char *b,
                        const tarn_meta_guard *g, size_t ng, size_t *count) {
  return delete_where(m, part, a, b, TARN_META_ANY_VERSION, g, ng, count);
}

static int sq_seq_put(tarn_meta *m, const char *part, const char *prefix, uint64_t d1, uint64_t d2,
                      const void *val, size_t len, const tarn_meta_guard *g, size_t ng,
                      tarn_meta_rec *out) {
  shandle *h = m->impl;
  char *bound = tarn__meta_seq_bound(prefix), *key = NULL, *last = NULL;
  if (!bound)
    return tarn__err(TARN_ENOMEM, "sqlite: out of memory");
  pthread_mutex_lock(&h->mu);
  int rc = begin_write(h);
  if (rc)
    goto out;
  sqlite3_stmt *st;
  uint8_t *kb = NULL;
  if ((rc = check_guards(h, part, prefix, g, ng))) {
    end_write(h, rc);
    goto out;
  }
  rc = prep(h, "SELECT key FROM kv WHERE part = ?1 AND k < ?2 ORDER BY k DESC LIMIT 1", &st);
  if (rc == 0) {
    sqlite3_bind_text(st, 1, part, -1, SQLITE_STATIC);
    rc = bind_key(h, st, 2, bound, &kb);
    int s = rc ? SQLITE_DONE : sqlite3_step(st);
    if (s == SQLITE_ROW) {
      last = strdup((const char *)sqlite3_column_text(st, 0));
      if (!last)
        rc = tarn__err(TARN_ENOMEM, "sqlite: out of memory");
    } else if (s != SQLITE_DONE) {
      rc = db_err(h, "sequenced put lookup");
    }
    sqlite3_finalize(st);
    free(kb);
  }
  if (rc == 0)
    rc = tarn__meta_seq_last("sqlite", part, prefix, last, g, ng);
  if (rc == 0)
    rc = tarn__meta_seq_key(prefix, last, d1, d2, &key);
  int exists = 0;
  int64_t cur, created = 0;
  if (rc == 0)
    rc = current(h, part, key, &exists, &cur, &created);
  tarn_meta_stat stat;
  /* The result's key is allocated before the commit: an allocation failing
   * after it would report a put that took effect as failed. */
  int have_out = 0;
  if (rc == 0 && (rc = tarn__meta_rec_set(out, key, NULL, 0, 0, 0)) == 0)
    have_out = 1;
  if (rc == 0)
    rc = upsert(h, part, key, val, len, 0, exists, created, &stat);
  rc = end_write(h, rc);
  if (rc == 0) {
    out->stat.version = stat.version;
    out->stat.created_ms = stat.created_ms;
  } else if (have_out) {
    tarn_meta_rec_free(out);
  }
out:
  pthread_mutex_unlock(&h->mu);
  free(bound);
  free(key);
  free(last);
  return rc;
}

static int sq_token(tarn_meta *m, int64_t *token) {
  shandle *h = m->impl;
  sqlite3_stmt *st;
  pthread_mutex_lock(&h->mu);
  int rc = prep(h, "SELECT v FROM counter WHERE id = 0", &st);
  if (rc == 0) {
    if (sqlite3_step(st) == SQLITE_ROW)
      *token = sqlite3_column_int64(st, 0);
    else
      rc = db_err(h, "change token");
    sqlite3_finalize(st);
  }
  pthread_mutex_unlock(&h->mu);
  return rc;
}

/* Polls every 5 ms: SQLite has no cross-process notification. Deletions are
 * not seen (the caller's timeout covers them). */
static int sq_wait_any(tarn_meta *m, const tarn_meta_range *r, size_t n, int64_t since,
                       int timeout_ms) {
  shandle *h = m->impl;
  struct timespec t0, now;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  for (;;) {
    int64_t maxv = 0;
    for (size_t i = 0; i < n && maxv <= since; i++) {
      sqlite3_stmt *st;
      uint8_t *ka = NULL, *kb = NULL;
      pthread_mutex_lock(&h->mu);
      int rc = prep(h, "SELECT max(version) FROM kv WHERE part = ?1 AND k >= ?2 AND k < ?3", &st);
      if (rc == 0) {
        sqlite3_bind_text(st, 1, r[i].part, -1, SQLITE_STATIC);
        rc = bind_key(h, st, 2, r[i].a, &ka);
        if (rc == 0)
          rc = bind_key(h, st, 3, r[i].b, &kb);
        if (rc == 0) {
          if (sqlite3_step(st) == SQLITE_ROW)
            maxv = sqlite3_column_int64(st, 0);
          else
            rc = db_err(h, "wait");
        }
        sqlite3_finalize(st);
      }
      pthread_mutex_unlock(&h->mu);
      free(ka);
      free(kb);
      if (rc)
        return rc;
    }
    if (maxv > since)
      return 0;
    clock_gettime(CLOCK_MONOTONIC, &now);
    int64_t el = (now.tv_sec - t0.tv_sec) * 1000 + (now.tv_nsec - t0.tv_nsec) / 1000000;
    if (el >= timeout_ms)
      return tarn__err(TARN_ETIMEDOUT, "sqlite: no change in %d ms", timeout_ms);
    struct timespec d = {0, 5000000};
    nanosleep(&d, NULL);
  }
}

static int sq_wait(tarn_meta *m, const char *part, const char *a, const char *b, int64_t since,
                   int timeout_ms) {
  tarn_meta_range r = {part, a, b};
  return sq_wait_any(m, &r, 1, since, timeout_ms);
}

const tarn__meta_vfs tarn__meta_vfs_sqlite = {
    .scheme = "sqlite",
    .open = sq_open,
    .close = sq_close,
    .find = sq_find,
    .write = sq_write,
    .del = sq_del,
    .del_range = sq_del_range,
    .seq_put = sq_seq_put,
    .range = sq_range,
    .token = sq_token,
    .wait = sq_wait,
    .renew = sq_renew,
    .wait_any = sq_wait_any,
};
