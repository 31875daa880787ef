/* Absorb (issue 14, "Absorb", "Reclaiming slots"): off the acknowledgement
 * path, released slots are published to the format in slot order: their
 * entries go into ordinary WAL objects in the deployment's WAL root (many
 * slots per object) and are indexed with the A3 sequenced put, at exactly the
 * offsets they were acknowledged at. A put of unknown outcome is resolved by
 * reading the log's last record before anything is retried, and every put is
 * guarded by the absence of the key it is to create, so a slot is never
 * indexed twice even when a put lands late. Then the epoch's checkpoint
 * advances; flights below it are deleted from the buckets after a grace. */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "express/xwriter_internal.h"
#include "log/reclaim_wait.h"
#include "log/wal_name.h"
#include "log/wal_object.h"
#include "tarn/entryindex.h"
#include "tarn/key.h"
#include "tarn/timing.h"
#include "tarn/wal.h"
#include "util/clock.h"
#include "util/error.h"
#include "util/planted.h"

#define PUT_ATTEMPTS 8
#define OBJECT_ATTEMPTS 3

/* One entry to absorb, and one log's section of an absorbed object. */
typedef struct aent {
  uint64_t log_id;
  const uint8_t *p;
  size_t len;
  uint32_t records;
} aent;

typedef struct asec {
  uint64_t log_id;
  tarn_lease *lease;
  uint64_t start, end; /* offsets [start, end) */
  uint64_t cum0, cum1; /* cumulative size before and after */
  int done;
} asec;

typedef struct actx {
  tarn_meta *m;
  tarn_objstore *wal;
  int64_t max_publish_delay_ms;
  int64_t max_put_ms; /* LS-085's put-time bound, which the WAL grace allows for */
  tarn_xwriter *w;    /* the writer whose stats and logs to update, or NULL */
  /* what is being absorbed, for the refusal's message. The star is a copy:
   * the epoch record it came from is read again (freed, replaced) when a CAS
   * on it conflicts (epoch.c, update), and a refusal after that read freed
   * memory (CI's ASan, cli_test_kafka_express_failover: two settlers) */
  char star[TARN__X_STAR_MAX + 1];
  uint64_t epoch, slot_from, slot_to;
} actx;

static void count(actx *c, uint64_t *field) {
  if (!c->w)
    return;
  pthread_mutex_lock(&c->w->mu);
  (*field)++;
  pthread_mutex_unlock(&c->w->mu);
}

/* What the log's last record says about one section's put: 1 landed, 0 not
 * landed (the tail is where the section starts), or TARN_ECORRUPT. */
static int resolve(tarn_meta *m, const asec *s) {
  uint64_t end, cum;
  int rc = tarn__xlog_tail(m, s->log_id, &end, &cum);
  if (rc)
    return rc;
  if (end == s->end && cum == s->cum1)
    return 1;
  if (end == s->start && cum == s->cum0)
    return 0;
  return tarn__err(TARN_ECORRUPT,
                   "express absorb: log %" PRIu64 " ends at (%" PRIu64 ", %" PRIu64
                   "), expected (%" PRIu64 ", %" PRIu64 ") or (%" PRIu64 ", %" PRIu64
                   "): another writer changed the log, acknowledged offsets and "
                   "the index disagree",
                   s->log_id, end, cum, s->start, s->cum0, s->end, s->cum1);
}

/* The refusal of a section whose acknowledged start is not the log's end:
 * names the log, the epoch and slots, the offsets expected and found. */
static int refused(const actx *c, const asec *s, const char *why) {
  char msg[1024];
  snprintf(msg, sizeof msg, "%s", tarn_errmsg());
  uint64_t end = 0, cum = 0;
  if (tarn__xlog_tail(c->m, s->log_id, &end, &cum))
    end = cum = UINT64_MAX;
  return tarn__err(TARN_ECORRUPT,
                   "express absorb: log %" PRIu64 ", star %s epoch %" PRIu64 " slots [%" PRIu64
                   ", %" PRIu64 "): acknowledged at offsets [%" PRIu64 ", %" PRIu64
                   ") but the log ends at %" PRIu64 " (expected %" PRIu64
                   "); refusing to place it elsewhere, nothing indexed (%s; %s)",
                   s->log_id, c->star[0] ? c->star : "?", c->epoch, c->slot_from, c->slot_to,
                   s->start, s->end, end, s->start, msg, why);
}

/* A3 for one section, exactly once. *resolved is set when the section was
 * found indexed by reading the log (an earlier attempt, or another settler,
 * landed it at a time nobody measured). */
static int index_section(actx *c, asec *s, const tarn_buf *value, int *resolved) {
  char part[TARN_KEY_PARTITION_LEN + 1], prefix[TARN_KEY_FIELD_LEN + 1], want[TARN_KEY_LEN + 1];
  uint64_t log_id = s->log_id;
  tarn_key_partition(part, log_id);
  snprintf(prefix, sizeof prefix, "%020" PRIu64, log_id);
  int rc = tarn_key_format(want, log_id, s->end, s->cum1);
  if (rc)
    return rc;
  /* The positional put (issue 30 item 3): the section goes at exactly the
   * offsets it was acknowledged at, [start, end), so the log's last key must
   * be the one ending at start (none for start 0), checked by the store in
   * the same atomic step as the put (TARN_META_GUARD_LAST). Whatever else
   * the end is, nothing is written and the section is refused loudly below:
   * "whatever the end is" placed a rolled writer's epochs out of order. */
  char prev[TARN_KEY_LEN + 1] = "";
  if ((s->start || s->cum0) && (rc = tarn_key_format(prev, log_id, s->start, s->cum0)))
    return rc;
  int positional = !TARN__PLANTED(TARN__BUG_XABSORB_NOT_POSITIONAL);
  int blind = TARN__PLANTED(TARN__BUG_XABSORB_RETRIES_BLIND);
  for (int attempt = 0; attempt < PUT_ATTEMPTS; attempt++) {
    tarn_meta_guard g[TARN_LEASE_GUARDS + 2];
    size_t ng = tarn_lease_guards(s->lease, g);
    /* the key this put creates must not exist: a late landing of an earlier
     * attempt (or of anyone) makes this one write nothing */
    if (!blind)
      g[ng++] = (tarn_meta_guard){TARN_META_GUARD_ABSENT, want, 0};
    if (positional)
      g[ng++] = (tarn_meta_guard){TARN_META_GUARD_LAST, prev, 0};
    tarn_meta_rec out = {0};
    rc = tarn_meta_sequenced_put_if(c->m, part, prefix, s->end - s->start, s->cum1 - s->cum0,
                                    value->data, value->len, g, ng, &out);
    if (rc == 0) {
      int same = out.key && !strcmp(out.key, want);
      if (!same)
        rc = tarn__err(TARN_ECORRUPT,
                       "express absorb: log %" PRIu64 " indexed at %s, not %s: "
                       "acknowledged offsets and the index disagree",
                       log_id, out.key ? out.key : "?", want);
      tarn_meta_rec_free(&out);
      return rc;
    }
    tarn_meta_rec_free(&out);
    if (rc != TARN_EUNKNOWN && rc != TARN_ETIMEDOUT && rc != TARN_EUNAVAIL && rc != TARN_EGUARD)
      return tarn__errctx(rc, "express absorb: indexing log %" PRIu64, log_id);
    char why[256];
    snprintf(why, sizeof why, "%s", tarn_errmsg());
    if (rc != TARN_EGUARD && c->w)
      count(c, &c->w->st.absorb_unknown);
    if (blind) {
      tarn__sleep_ms(5);
      continue; /* planted: retries without reading what the first put did */
    }
    /* never retry before knowing: read the log's last record */
    int r = resolve(c->m, s);
    if (r == 1) {
      *resolved = 1;
      return 0;
    }
    if (r < 0)
      return r == TARN_ECORRUPT ? refused(c, s, why) : r;
    if (rc == TARN_EGUARD)
      return tarn__err(TARN_EGUARD, "express absorb: log %" PRIu64 ": %s", log_id, why);
    tarn__sleep_ms(10 * (attempt + 1));
  }
  return tarn__err(TARN_EUNAVAIL, "express absorb: log %" PRIu64 ": index put failed %d times",
                   log_id, PUT_ATTEMPTS);
}

/* The WAL object the log's record ending at s's end names, into out (at
 * least TARN__WAL_NAME_LEN + 1 bytes): a record resolved as landed may be
 * another settler's, or a crashed absorb's, naming another object. */
static int landed_location(actx *c, const asec *s, char *out, size_t n) {
  char part[TARN_KEY_PARTITION_LEN + 1], key[TARN_KEY_LEN + 1];
  tarn_key_partition(part, s->log_id);
  int rc = tarn_key_format(key, s->log_id, s->end, s->cum1);
  tarn_meta_rec r = {0};
  if (!rc)
    rc = tarn_meta_get(c->m, part, key, &r);
  tarn_entry_index ei;
  memset(&ei, 0, sizeof ei);
  if (!rc)
    rc = tarn_entry_index_decode(r.value, r.value_len, &ei);
  if (!rc && (!ei.location || ei.file_type != TARN_FILE_RAW || strlen(ei.location) >= n))
    rc = tarn__err(TARN_ECORRUPT, "express absorb: log %" PRIu64 " record %s names no WAL object",
                   s->log_id, key);
  if (!rc)
    snprintf(out, n, "%s", ei.location);
  tarn_entry_index_free(&ei);
  tarn_meta_rec_free(&r);
  return rc;
}

/* An index record of absorb that landed late (issue 30 item 6; LS-085;
 * docs/express.md "Absorb's late index put"). The WAL grace counts on every
 * record that names an object landing within max_publish_delay_ms +
 * max_put_ms of the object; past that a reclaim pass may have scanned the
 * index before the record landed, found the object unreferenced, and be
 * deleting it. The standard writer then refuses to acknowledge; absorb's
 * entries are acknowledged already, and the record, positional, cannot be
 * replaced, so absorb makes the object outlive the record instead: it waits
 * out every reclaim pass under way (any that scanned the index before the
 * record landed is one of them; every later pass sees the record and keeps
 * the object), then looks: the object is there and stays, or it was reclaimed
 * and, if it is this absorb's own (obj, named name), is written again, the
 * same bytes under the same name, the name the record holds (no pass to come
 * deletes it); another's object that is gone is TARN_ECORRUPT, loudly. Until
 * then the checkpoint does not move, so the flights stay in the buckets. */
static int late_put(actx *c, const asec *s, int resolved, const char *name, const tarn_buf *obj) {
  if (c->w)
    count(c, &c->w->st.absorb_late);
  char at[TARN__WAL_NAME_LEN + 64];
  snprintf(at, sizeof at, "%s", name);
  int rc = resolved ? landed_location(c, s, at, sizeof at) : 0;
  int own = !strcmp(at, name);
  if (!rc)
    rc = tarn__reclaim_wait_passes(c->m, c->max_put_ms);
  uint64_t size = 0;
  if (!rc)
    rc = tarn_objstore_head(c->wal, at, &size);
  if (rc == TARN_ENOTFOUND && own) {
    tarn_errclear();
    if (c->w)
      count(c, &c->w->st.absorb_rewritten);
    rc = tarn_objstore_put(c->wal, name, obj->data, obj->len);
    if (rc == TARN_EEXIST) { /* an earlier attempt of ours */
      tarn_errclear();
      rc = tarn_objstore_head(c->wal, name, &size);
    } else if (!rc) {
      size = obj->len;
    }
  } else if (rc == TARN_ENOTFOUND) {
    rc = tarn__err(TARN_ECORRUPT,
                   "express absorb: log %" PRIu64 " offsets [%" PRIu64 ", %" PRIu64
                   ") are indexed in WAL object %s, which was reclaimed: acknowledged entries "
                   "unreadable; the epoch's flights are kept",
                   s->log_id, s->start, s->end, at);
  }
  if (!rc && own && size != obj->len)
    rc = tarn__err(TARN_ECORRUPT,
                   "express absorb: WAL object %s holds %" PRIu64 " bytes, not the %zu indexed",
                   name, size, obj->len);
  if (rc)
    return tarn__errctx(rc,
                        "express absorb: WAL object %s, named by an index record that landed "
                        "past the %lld ms put bound",
                        at, (long long)c->max_put_ms);
  return 0;
}

/* After each object put (tarn__wal_object_write): counts a written one. */
static int after_put(void *arg, int rc, const tarn__wal_object *o) {
  (void)o;
  actx *c = arg;
  if (!rc && c->w)
    count(c, &c->w->st.absorb_objects);
  return rc;
}

/* Indexes o's sections not yet done (A3). *stale: the publish limit passed
 * first (LS-085): the object must be written again under a new name. */
static int index_sections(actx *c, tarn__wal_object *o, asec *secs, tarn_buf *value, int *stale) {
  int rc = 0;
  *stale = 0;
  for (size_t s = 0; s < o->wb.section_count && !rc; s++) {
    asec *a = &secs[s];
    if (a->done)
      continue;
    /* LS-085: past the publish limit the reclaimer may take the object */
    int64_t checked = tarn__mono_ms();
    if (checked - o->written_mono > c->max_publish_delay_ms) {
      *stale = 1;
      break;
    }
    tarn_buf_reset(value);
    int resolved = 0;
    rc = tarn__wal_object_section_value(o, s, value);
    if (!rc)
      rc = index_section(c, a, value, &resolved);
    /* LS-085's other half (issue 30 item 6): a record that landed past
     * max_put_ms, or at a time unknown, may name an object a reclaim pass
     * already found unreferenced */
    if (!rc && (resolved || tarn__mono_ms() - checked > c->max_put_ms) &&
        !TARN__PLANTED(TARN__BUG_XABSORB_NO_LATE_PUT_BOUND))
      rc = late_put(c, a, resolved, o->name, &o->obj);
    if (!rc)
      a->done = 1;
  }
  return rc;
}

/* Writes the entries (grouped by section) into one WAL object (A2, the
 * standard writer's way: log/wal_object.c) and indexes the sections not yet
 * done. */
static int publish(actx *c, const aent *ents, size_t n, asec *secs, size_t nsecs) {
  tarn__wal_object o;
  tarn__wal_object_init(&o);
  tarn_buf value;
  tarn_buf_init(&value);
  int rc = 0;
  /* section by section, so a reader fetches a log's payloads with one range */
  for (size_t s = 0; s < nsecs && !rc; s++)
    for (size_t i = 0; i < n && !rc; i++)
      if (ents[i].log_id == secs[s].log_id)
        rc = tarn__wal_object_add(&o, ents[i].log_id, ents[i].p, ents[i].len, ents[i].records);
  if (!rc)
    rc = tarn__wal_object_build(&o);
  tarn__wal_write how = {OBJECT_ATTEMPTS, 20, 20, 0, after_put, c};
  for (int attempt = 0, stale = 1; !rc && stale; attempt++) {
    rc = tarn__wal_object_write(&o, c->wal, &how, &attempt); /* LS-009: a new name each time */
    if (!rc)
      rc = index_sections(c, &o, secs, &value, &stale);
  }
  tarn__wal_object_free(&o);
  tarn_buf_free(&value);
  return rc;
}

static int intents_of(const asec *secs, size_t n, tarn__xintent **out) {
  *out = malloc(n * sizeof **out);
  if (!*out)
    return tarn__err(TARN_ENOMEM, "out of memory");
  for (size_t i = 0; i < n; i++)
    (*out)[i] =
        (tarn__xintent){secs[i].log_id, secs[i].start, secs[i].cum0, secs[i].end, secs[i].cum1};
  return 0;
}

/* Intent, publish, checkpoint: slots [.., to) of epoch e are absorbed. */
static int absorb_with_intent(actx *c, tarn__xepoch *e, uint64_t to, const aent *ents, size_t n,
                              asec *secs, size_t nsecs) {
  tarn__xintent *iv;
  int rc = intents_of(secs, nsecs, &iv);
  if (rc)
    return rc;
  rc = tarn__xepoch_begin_absorb(c->m, e, to, iv, nsecs);
  free(iv);
  if (rc == 1)
    return 0; /* absorbed already */
  if (!rc)
    rc = publish(c, ents, n, secs, nsecs);
  if (!rc)
    rc = tarn__xepoch_end_absorb(c->m, e, to);
  return rc;
}

/* Groups entries into one section per log, in order of first appearance,
 * and adds each section's records and bytes to it. */
static int sections_of(const aent *ents, size_t n, asec **out, size_t *nout) {
  asec *secs = NULL;
  size_t ns = 0;
  for (size_t i = 0; i < n; i++) {
    size_t s = 0;
    while (s < ns && secs[s].log_id != ents[i].log_id)
      s++;
    if (s == ns) {
      asec *nv = realloc(secs, (ns + 1) * sizeof *nv);
      if (!nv) {
        free(secs);
        return tarn__err(TARN_ENOMEM, "out of memory");
      }
      secs = nv;
      secs[ns++] = (asec){.log_id = ents[i].log_id};
    }
    secs[s].end += ents[i].records;
    secs[s].cum1 += ents[i].len;
  }
  *out = secs;
  *nout = ns;
  return 0;
}

/* Under mu: each section's place in its log. The offsets acknowledged are
 * the ones the index gives: each log's section starts at the index's end
 * and its entries follow one another (TARN_ECORRUPT if not). */
static int place_sections(tarn_xwriter *w, xflight *const *fl, size_t n, asec *secs, size_t nsecs) {
  int rc = 0;
  for (size_t s = 0; !rc && s < nsecs; s++) {
    xlog *l = w->logs;
    while (l && l->log_id != secs[s].log_id)
      l = l->next;
    secs[s].lease = l->lease;
    secs[s].start = l->absorbed_end;
    secs[s].end += l->absorbed_end;
    secs[s].cum0 = l->absorbed_cum;
    secs[s].cum1 += l->absorbed_cum;
    uint64_t next = l->absorbed_end;
    for (size_t i = 0; !rc && i < n; i++)
      for (size_t j = 0; !rc && j < fl[i]->n; j++)
        if (fl[i]->ents[j].log_id == l->log_id) {
          if (fl[i]->ents[j].offset != next)
            rc = tarn__err(TARN_ECORRUPT,
                           "express absorb: log %" PRIu64 " entry acknowledged at "
                           "%" PRIu64 " where the index gives %" PRIu64,
                           l->log_id, fl[i]->ents[j].offset, next);
          next += fl[i]->ents[j].records;
        }
  }
  return rc;
}

/* Under mu, once the flights fl[0..n) of epoch (slots up to to) are in the
 * index: the logs' absorbed ends move, the slots wait out the reclaim grace,
 * and the flights leave the writer. */
static void absorbed(tarn_xwriter *w, xflight *const *fl, size_t n, const asec *secs, size_t nsecs,
                     uint64_t epoch, uint64_t to) {
  for (size_t s = 0; s < nsecs; s++) {
    xlog *l = w->logs;
    while (l->log_id != secs[s].log_id)
      l = l->next;
    l->absorbed_end = secs[s].end;
    l->absorbed_cum = secs[s].cum1;
  }
  xreclaim *q = calloc(1, sizeof *q);
  if (q) {
    *q = (xreclaim){epoch, fl[0]->slot, to, tarn__mono_ms(), NULL};
    if (w->rq_tail)
      w->rq_tail->next = q;
    else
      w->rq_head = q;
    w->rq_tail = q;
  }
  for (size_t i = 0; i < n; i++) {
    w->head = fl[i]->next;
    w->bytes_in_flight -= fl[i]->bytes;
    /* a PUT thread may still be writing a late copy (copies past W go on,
     * so a fence sees K) with the flight's key and bytes, without mu: that
     * thread frees it (put_copy). Waiting for it instead held absorb behind
     * the slowest bucket (tarn-bench express; one bucket timing out) */
    if (fl[i]->busy)
      fl[i]->orphaned = 1;
    else
      tarn__xflight_free(fl[i]);
  }
  if (!w->head)
    w->tail = NULL;
  w->st.slots_absorbed += n;
}

int tarn__xabsorb_batch(tarn_xwriter *w, int force) {
  if (w->absorb_busy)
    return 0;
  if (w->absorb_rc)
    return w->absorb_rc;
  xflight *first = w->head;
  if (!first || !first->released)
    return 0;
  if (!force && tarn__mono_ms() - first->released_ms < (int64_t)w->o.absorb_ms)
    return 0;
  size_t n = 0, bytes = 0, nents = 0;
  for (xflight *f = first; f && f->released && f->epoch == first->epoch; f = f->next) {
    if (n && bytes + f->bytes > w->o.absorb_max_bytes)
      break;
    bytes += f->bytes;
    nents += f->n;
    n++;
  }
  xflight **fl = malloc(n * sizeof *fl);
  aent *ents = calloc(nents ? nents : 1, sizeof *ents);
  asec *secs = NULL;
  size_t nsecs = 0, k = 0;
  int rc = fl && ents ? 0 : tarn__err(TARN_ENOMEM, "out of memory");
  xflight *f = first;
  for (size_t i = 0; !rc && i < n; i++, f = f->next) {
    fl[i] = f;
    for (size_t j = 0; j < f->n; j++)
      ents[k++] = (aent){f->ents[j].log_id, f->ents[j].payload, f->ents[j].len, f->ents[j].records};
  }
  if (!rc)
    rc = sections_of(ents, nents, &secs, &nsecs);
  if (!rc)
    rc = place_sections(w, fl, n, secs, nsecs);
  uint64_t epoch = first->epoch, to = n ? fl[n - 1]->slot + 1 : 0;
  if (!rc) {
    w->absorb_busy = 1;
    pthread_mutex_unlock(&w->mu);
    actx c = {w->meta,     w->wal, w->max_publish_delay_ms, w->max_put_ms, w, "", epoch,
              fl[0]->slot, to};
    snprintf(c.star, sizeof c.star, "%s", w->star);
    tarn__xepoch e;
    rc = tarn__xepoch_load(w->meta, w->star, TARN__X_CLASS_EXPRESS, epoch, &e);
    if (!rc) {
      rc = absorb_with_intent(&c, &e, to, ents, nents, secs, nsecs);
      tarn__xepoch_free(&e);
    }
    pthread_mutex_lock(&w->mu);
    w->absorb_busy = 0;
  }
  if (!rc) {
    absorbed(w, fl, n, secs, nsecs, epoch, to);
    rc = 1;
  } else {
    w->absorb_rc = rc;
    tarn__xwriter_set_error(w, rc);
  }
  free(fl);
  free(ents);
  free(secs);
  pthread_cond_broadcast(&w->cv);
  return rc;
}

/* ---- absorb for settlement ----------------------------------------------- */

/* Reads slot's flight from any bucket of e that holds it. */
static int fetch_flight(tarn__xbuckets *s, const tarn__xepoch *e, uint64_t slot, tarn_buf *out) {
  char key[TARN__X_SLOT_KEY_MAX];
  int rc = tarn__xslot_key(key, sizeof key, e->star, e->epoch, slot);
  for (size_t b = 0; !rc && b < s->k; b++)
    if (tarn__xslot_observe(s->b[b].store, key, e->star, e->epoch, slot, out) == TARN__XOBS_FLIGHT)
      return 0;
  return rc ? rc
            : tarn__err(TARN_EUNAVAIL, "express absorb: no bucket holds a flight of slot %s", key);
}

/* How far back older_unsettled looks (epoch records read). */
#define OLDER_EPOCHS_MAX 64

/* TARN_ECORRUPT when an epoch of e's star older than e, at or above the
 * epoch log_id's last-writer record names for that star, is not settled:
 * its entries of the log (if any) come before e's, so e's first section of
 * the log cannot be placed yet (settlement goes oldest first, issue 30 item
 * 3). A record naming another star, or an epoch at or past e, says nothing
 * here: the gate that moved it settled e's predecessors first. */
static int older_unsettled(tarn_meta *m, const tarn__xepoch *e, uint64_t log_id) {
  char ws[TARN__X_STAR_MAX + 1];
  uint64_t pe = 0;
  int rc = tarn__xwriter_rec_get(m, log_id, ws, &pe, NULL);
  if (rc == TARN_ENOTFOUND) {
    tarn_errclear();
    return 0;
  }
  if (rc)
    return rc;
  if (strcmp(ws, e->star) || pe >= e->epoch)
    return 0;
  if (e->epoch - pe > OLDER_EPOCHS_MAX)
    pe = e->epoch - OLDER_EPOCHS_MAX;
  for (uint64_t x = pe; x < e->epoch; x++) {
    tarn__xepoch o;
    rc = tarn__xepoch_load(m, e->star, e->cls, x, &o);
    if (rc == TARN_ENOTFOUND) {
      tarn_errclear();
      continue; /* a burned number */
    }
    if (rc)
      return rc;
    int settled = o.state == TARN__XEPOCH_FENCED && o.has_cut && o.checkpoint >= o.cut;
    uint64_t cp = o.checkpoint, cut = o.has_cut ? o.cut : 0;
    int fenced = o.has_cut;
    tarn__xepoch_free(&o);
    if (!settled)
      return tarn__err(TARN_ECORRUPT,
                       "express absorb: log %" PRIu64 ": epoch %" PRIu64 " of star %s is "
                       "absorbed before the older epoch %" PRIu64 " (%s, checkpoint %" PRIu64
                       ", cut %" PRIu64
                       "), whose entries of the log come first: settle oldest first; nothing "
                       "indexed",
                       log_id, e->epoch, e->star, x, fenced ? "fenced" : "open", cp, cut);
  }
  return 0;
}

/* The offset (and cumulative size) where log_id's entries in e's next slot
 * were acknowledged (issue 30 item 3). A flight carries no offsets, so a
 * settler derives them: the star's count of the log stood at the index's end
 * once every older epoch of the star that may hold the log's entries is
 * settled (older_unsettled; the gate settled the log's previous writers
 * before the star counted), and the positional put holds the index to it.
 * Not "where the epoch's last absorbed range of the log ends": a tenure that
 * left the log through Finish and came back in the same epoch counted on
 * from another star's entries (tarn-sim --express --race --seed 1). */
static int acked_start(tarn_meta *m, const tarn__xepoch *e, uint64_t log_id, uint64_t *end,
                       uint64_t *cum) {
  if (!TARN__PLANTED(TARN__BUG_XABSORB_NOT_POSITIONAL)) {
    int rc = older_unsettled(m, e, log_id);
    if (rc)
      return rc;
  }
  return tarn__xlog_tail(m, log_id, end, cum);
}

static int absorb_flight_once(void *arg, tarn_meta *m, tarn__xepoch *e, uint64_t slot,
                              const uint8_t *flight, size_t n) {
  if (slot < e->checkpoint)
    return 0;
  if (slot > e->checkpoint)
    return tarn__err(TARN_EINVAL,
                     "express absorb: slot %" PRIu64 " is above the checkpoint %" PRIu64
                     ": slots are absorbed in order",
                     slot, e->checkpoint);
  /* a crashed absorb's intent covers [checkpoint, to): all of it at once */
  uint64_t to = e->absorbing_to > slot ? e->absorbing_to : slot + 1;
  actx c = {m, arg, 0, 0, NULL, "", e->epoch, slot, to};
  snprintf(c.star, sizeof c.star, "%s", e->star);
  tarn_timing t;
  int rc = tarn_timing_load(m, &t, NULL);
  c.max_publish_delay_ms = t.max_publish_delay_ms;
  c.max_put_ms = t.max_put_ms;
  size_t nf = (size_t)(to - slot);
  tarn_buf *bufs = calloc(nf, sizeof *bufs);
  tarn_wal *wals = calloc(nf, sizeof *wals);
  size_t decoded = 0, nents = 0;
  tarn__xbuckets s = {0};
  if (!bufs || !wals)
    rc = tarn__err(TARN_ENOMEM, "out of memory");
  if (!rc && nf > 1 && !(rc = tarn__xbuckets_copy(&e->buckets, &s)))
    rc = tarn__xbuckets_open(&s);
  for (size_t i = 0; !rc && i < nf; i++) {
    tarn_buf_init(&bufs[i]);
    rc = i == 0 ? tarn_buf_append(&bufs[i], flight, n) : fetch_flight(&s, e, slot + i, &bufs[i]);
    if (!rc)
      rc = tarn_wal_decode(bufs[i].data, bufs[i].len, &wals[i]);
    if (!rc) {
      decoded++;
      nents += wals[i].entry_total;
    }
  }
  aent *ents = rc ? NULL : calloc(nents ? nents : 1, sizeof *ents);
  size_t k = 0;
  if (!rc && !ents)
    rc = tarn__err(TARN_ENOMEM, "out of memory");
  for (size_t i = 0; !rc && i < nf; i++)
    for (size_t j = 0; j < wals[i].section_count; j++)
      for (size_t q = 0; q < wals[i].sections[j].entry_count; q++) {
        const tarn_wal_entry *en = &wals[i].sections[j].entries[q];
        ents[k++] = (aent){wals[i].sections[j].log_id, en->payload, (size_t)en->payload_size,
                           en->record_count};
      }
  asec *secs = NULL;
  size_t nsecs = 0;
  if (!rc)
    rc = sections_of(ents, nents, &secs, &nsecs);
  for (size_t i = 0; !rc && i < nsecs; i++)
    rc = tarn_lease_acquire(m, secs[i].log_id, &secs[i].lease);
  for (size_t i = 0; !rc && i < nsecs; i++) {
    asec *a = &secs[i];
    if (e->absorbing_to) {
      /* resume: the intent says where each section was to go */
      size_t x = 0;
      while (x < e->n_absorbing && e->absorbing[x].log_id != a->log_id)
        x++;
      if (x == e->n_absorbing || e->absorbing[x].end - e->absorbing[x].start != a->end ||
          e->absorbing[x].cum1 - e->absorbing[x].cum0 != a->cum1) {
        rc = tarn__err(TARN_ECORRUPT,
                       "express absorb: the intent of epoch %" PRIu64 " does not "
                       "match its flights (log %" PRIu64 ")",
                       e->epoch, a->log_id);
        break;
      }
      a->start = e->absorbing[x].start;
      a->cum0 = e->absorbing[x].cum0;
      a->end = e->absorbing[x].end;
      a->cum1 = e->absorbing[x].cum1;
      int r = resolve(m, a);
      if (r < 0)
        rc = r;
      else
        a->done = r;
    } else {
      uint64_t end, cum;
      rc = acked_start(m, e, a->log_id, &end, &cum);
      a->start = end;
      a->cum0 = cum;
      a->end += end;
      a->cum1 += cum;
    }
  }
  if (!rc)
    rc = absorb_with_intent(&c, e, to, ents, nents, secs, nsecs);
  for (size_t i = 0; i < nsecs; i++)
    if (secs[i].lease)
      tarn_lease_release(secs[i].lease);
  free(secs);
  free(ents);
  for (size_t i = 0; i < decoded; i++)
    tarn_wal_free(&wals[i]);
  for (size_t i = 0; bufs && i < nf; i++)
    tarn_buf_free(&bufs[i]);
  free(bufs);
  free(wals);
  tarn__xbuckets_free(&s);
  return rc;
}

/* Several settlers may absorb one fenced epoch at once: the gates of the
 * nodes its logs move to, the takeover jobs of every node, the restarted
 * star's own gate. Each works from its snapshot of the epoch record, and
 * another's progress moves the index and the record under it: an intent
 * pending that this one did not see, a log's end past both ends of the
 * intent it resumes (the other finished the slot and went on). Those look
 * like the disagreements the checks exist for, and were answered as
 * corruption (cli_test_kafka_express_failover: CORRUPT_MESSAGE to the
 * producer, under load). So a disagreement is judged again on the record as
 * it is now: a checkpoint moved past the slot means it was absorbed (the
 * checkpoint moves only after the publish), a record that changed otherwise
 * means start over from it; only one that persists on an unchanged record
 * is corruption. Every publish stays guarded by its key's absence and every
 * intent by the record's CAS, so a retry can never index a slot twice. */
#define RACE_ATTEMPTS 8

int tarn__xabsorb_flight(void *arg, tarn_meta *m, tarn__xepoch *e, uint64_t slot,
                         const uint8_t *flight, size_t n) {
  for (int attempt = 0;; attempt++) {
    int64_t seen = e->version; /* the once may re-read e itself (a CAS) */
    int rc = absorb_flight_once(arg, m, e, slot, flight, n);
    if (rc != TARN_ECORRUPT || attempt + 1 >= RACE_ATTEMPTS ||
        TARN__PLANTED(TARN__BUG_XABSORB_RACE_IS_CORRUPT))
      return rc;
    char why[512];
    snprintf(why, sizeof why, "%s", tarn_errmsg());
    char *star = strdup(e->star), *cls = strdup(e->cls);
    tarn__xepoch fresh;
    int lrc = star && cls ? tarn__xepoch_load(m, star, cls, e->epoch, &fresh)
                          : tarn__err(TARN_ENOMEM, "out of memory");
    free(star);
    free(cls);
    if (lrc)
      return tarn__err(rc, "%s (and re-reading the epoch record: %s)", why, tarn_errmsg());
    int moved = fresh.version != seen;
    tarn__xepoch_free(e);
    *e = fresh;
    if (!moved)
      return tarn__err(rc, "%s", why);
    tarn__sleep_ms(5 * (attempt + 1));
  }
}

/* One bucket's deletions of a run of slots (a thread of reclaim_run). */
typedef struct rdel {
  tarn_objstore *store;
  const char *star;
  uint64_t epoch, from, to;
  int rc;
} rdel;

static void *rdel_main(void *p) {
  rdel *d = p;
  char key[TARN__X_SLOT_KEY_MAX];
  for (uint64_t s = d->from; s < d->to && !d->rc; s++)
    if (!(d->rc = tarn__xslot_key(key, sizeof key, d->star, d->epoch, s)))
      d->rc = tarn_objstore_delete(d->store, key);
  return NULL;
}

/* Deletes slots [from, to) of epoch from every bucket: one thread per bucket
 * but the first (a threaded writer), so a run costs one bucket's round trips,
 * not K's; in order on the caller's thread in stepped mode (the simulator's
 * schedule is the caller's). */
static int reclaim_run(tarn_xwriter *w, uint64_t epoch, uint64_t from, uint64_t to) {
  size_t k = w->bs.k;
  rdel d[TARN__X_K_MAX];
  pthread_t th[TARN__X_K_MAX];
  int started[TARN__X_K_MAX] = {0};
  for (size_t b = 0; b < k; b++)
    d[b] = (rdel){w->bs.b[b].store, w->star, epoch, from, to, 0};
  for (size_t b = 1; b < k && !w->o.stepped; b++)
    started[b] = pthread_create(&th[b], NULL, rdel_main, &d[b]) == 0;
  int rc = 0;
  for (size_t b = 0; b < k; b++) {
    if (started[b])
      pthread_join(th[b], NULL);
    else
      rdel_main(&d[b]);
    if (!rc)
      rc = d[b].rc;
  }
  return rc;
}

/* Slots a threaded writer's reclaim deletes at a time: absorb (which shares
 * absorb_busy) runs between runs. Thousands of small slots were deleted in
 * one go, K deletions each, one after another: absorb stood still meanwhile,
 * the flights it frees piled up to max_bytes_in_flight, and appends blocked,
 * every listener worker with them (cli_test_kafka_express_failover, under
 * load: the node answered nothing, not even ApiVersions, for a minute). */
#define RECLAIM_RUN_SLOTS 64

int tarn__xabsorb_reclaim(tarn_xwriter *w, int force) {
  int did = 0;
  while (w->rq_head && !w->absorb_busy &&
         (force || tarn__mono_ms() - w->rq_head->absorbed_ms >= w->o.reclaim_grace_ms)) {
    xreclaim *q = w->rq_head;
    uint64_t to = q->to;
    if (!w->o.stepped && !force && to - q->from > RECLAIM_RUN_SLOTS)
      to = q->from + RECLAIM_RUN_SLOTS; /* the rest stays queued, as due */
    int whole = to == q->to;
    if (whole) {
      w->rq_head = q->next;
      if (!w->rq_head)
        w->rq_tail = NULL;
    }
    w->absorb_busy = 1;
    pthread_mutex_unlock(&w->mu);
    int rc = reclaim_run(w, q->epoch, q->from, to);
    tarn__xepoch e;
    if (!rc)
      rc = tarn__xepoch_load(w->meta, w->star, TARN__X_CLASS_EXPRESS, q->epoch, &e);
    if (!rc) {
      rc = tarn__xepoch_advance(w->meta, &e, TARN__XCUR_TRIMMED, to);
      tarn__xepoch_free(&e);
    }
    pthread_mutex_lock(&w->mu);
    w->absorb_busy = 0;
    if (rc) {
      /* kept for the next pass: a bucket may be down for a while */
      if (whole) {
        q->next = w->rq_head;
        w->rq_head = q;
        if (!w->rq_tail)
          w->rq_tail = q;
      }
      q->absorbed_ms = tarn__mono_ms();
      break;
    }
    w->st.flights_reclaimed += to - q->from;
    if (whole)
      free(q);
    else
      q->from = to;
    did = 1;
    if (!whole)
      break; /* absorb's turn */
  }
  return did;
}
