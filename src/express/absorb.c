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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "express/xwriter_internal.h"
#include "log/wal_name.h"
#include "tarn/entryindex.h"
#include "tarn/key.h"
#include "tarn/wal.h"
#include "util/clock.h"
#include "util/error.h"
#include "util/planted.h"

#define PUT_ATTEMPTS 8
#define OBJECT_ATTEMPTS 3

typedef struct asec {
  xlog *log;
  uint64_t start, end;   /* offsets [start, end) */
  uint64_t cum0, cum1;   /* cumulative size before and after */
  int done;
} asec;

/* What the log's last record says about one section's put: 1 landed, 0 not
 * landed (the tail is where the section starts), or TARN_ECORRUPT. */
static int resolve(tarn_xwriter *w, const asec *s) {
  uint64_t end, cum;
  int rc = tarn__xlog_tail(w->meta, s->log->log_id, &end, &cum);
  if (rc)
    return rc;
  if (end == s->end && cum == s->cum1)
    return 1;
  if (end == s->start && cum == s->cum0)
    return 0;
  return tarn__err(TARN_ECORRUPT, "express absorb: log %" PRIu64 " ends at (%" PRIu64 ", %" PRIu64
                                  "), expected (%" PRIu64 ", %" PRIu64 ") or (%" PRIu64 ", %" PRIu64
                                  "): another writer changed the log, acknowledged offsets and "
                                  "the index disagree",
                   s->log->log_id, end, cum, s->start, s->cum0, s->end, s->cum1);
}

/* A3 for one section, exactly once. */
static int index_section(tarn_xwriter *w, asec *s, const tarn_buf *value) {
  char part[TARN_KEY_PARTITION_LEN + 1], prefix[TARN_KEY_FIELD_LEN + 1], want[TARN_KEY_LEN + 1];
  uint64_t log_id = s->log->log_id;
  tarn_key_partition(part, log_id);
  snprintf(prefix, sizeof prefix, "%020" PRIu64, log_id);
  int rc = tarn_key_format(want, log_id, s->end, s->cum1);
  if (rc)
    return rc;
  int blind = TARN__PLANTED(TARN__BUG_XABSORB_RETRIES_BLIND);
  for (int attempt = 0; attempt < PUT_ATTEMPTS; attempt++) {
    tarn_meta_guard g[TARN_LEASE_GUARDS + 1];
    size_t ng = tarn_lease_guards(s->log->lease, g);
    /* the key this put creates must not exist: a late landing of an earlier
     * attempt (or of anyone) makes this one write nothing */
    if (!blind)
      g[ng++] = (tarn_meta_guard){TARN_META_GUARD_ABSENT, want, 0};
    tarn_meta_rec out = {0};
    rc = tarn_meta_sequenced_put_if(w->meta, part, prefix, s->end - s->start, s->cum1 - s->cum0,
                                    value->data, value->len, g, ng, &out);
    if (rc == 0) {
      int same = out.key && !strcmp(out.key, want);
      tarn_meta_rec_free(&out);
      if (!same)
        return tarn__err(TARN_ECORRUPT, "express absorb: log %" PRIu64 " indexed at %s, not %s: "
                                        "acknowledged offsets and the index disagree",
                         log_id, out.key ? out.key : "?", want);
      return 0;
    }
    tarn_meta_rec_free(&out);
    if (rc != TARN_EUNKNOWN && rc != TARN_ETIMEDOUT && rc != TARN_EUNAVAIL && rc != TARN_EGUARD)
      return tarn__errctx(rc, "express absorb: indexing log %" PRIu64, log_id);
    char why[256];
    snprintf(why, sizeof why, "%s", tarn_errmsg());
    pthread_mutex_lock(&w->mu);
    w->st.absorb_unknown += rc != TARN_EGUARD;
    pthread_mutex_unlock(&w->mu);
    if (blind) {
      tarn__sleep_ms(5);
      continue; /* planted: retries without reading what the first put did */
    }
    /* never retry before knowing: read the log's last record */
    int r = resolve(w, s);
    if (r == 1)
      return 0;
    if (r < 0)
      return r;
    if (rc == TARN_EGUARD)
      return tarn__err(TARN_EGUARD, "express absorb: log %" PRIu64 ": %s", log_id, why);
    tarn__sleep_ms(10 * (attempt + 1));
  }
  return tarn__err(TARN_EUNAVAIL, "express absorb: log %" PRIu64 ": index put failed %d times",
                   log_id, PUT_ATTEMPTS);
}

/* Writes the flights f[0..n) into one WAL object and indexes its sections. */
static int absorb_run(tarn_xwriter *w, xflight **f, size_t n, asec *secs, size_t nsecs) {
  tarn_wal_builder wb;
  tarn_wal_builder_init(&wb);
  tarn_buf obj, value;
  tarn_buf_init(&obj);
  tarn_buf_init(&value);
  int rc = 0;
  /* section by section, so a reader fetches a log's payloads with one range */
  for (size_t s = 0; s < nsecs && !rc; s++)
    for (size_t i = 0; i < n && !rc; i++)
      for (size_t k = 0; k < f[i]->n && !rc; k++)
        if (f[i]->ents[k].log_id == secs[s].log->log_id)
          rc = tarn_wal_builder_add(&wb, f[i]->ents[k].log_id, f[i]->ents[k].payload,
                                    f[i]->ents[k].len, f[i]->ents[k].records);
  if (!rc)
    rc = tarn_wal_builder_finish(&wb, &obj);
  for (int attempt = 0; !rc; attempt++) {
    char name[TARN__WAL_NAME_LEN + 1];
    if ((rc = tarn__wal_name(name, tarn__now_ms() / 1000)))
      break;
    int64_t written = tarn__mono_ms();
    rc = tarn_objstore_put(w->wal, name, obj.data, obj.len); /* LS-009: a new name each time */
    if (rc) {
      if (attempt + 1 >= OBJECT_ATTEMPTS)
        break;
      rc = 0;
      tarn__sleep_ms(20 * (attempt + 1));
      continue;
    }
    pthread_mutex_lock(&w->mu);
    w->st.absorb_objects++;
    pthread_mutex_unlock(&w->mu);
    int stale = 0;
    for (size_t s = 0; s < wb.section_count && !rc; s++) {
      const tarn_wal_built_section *bs = &wb.sections[s];
      asec *a = &secs[s];
      if (a->done)
        continue;
      /* LS-085: past the publish limit the reclaimer may take the object */
      if (tarn__mono_ms() - written > w->max_publish_delay_ms) {
        stale = 1;
        break;
      }
      uint32_t *bounds = malloc(bs->entry_count * sizeof *bounds);
      if (!bounds) {
        rc = tarn__err(TARN_ENOMEM, "out of memory");
        break;
      }
      for (size_t k = 0; k < bs->entry_count; k++)
        bounds[k] = (uint32_t)bs->bounds[k];
      tarn_raw_record r = {.location = name,
                           .single_section = wb.section_count == 1,
                           .message_count = (int64_t)bs->record_total,
                           .entry_size_bytes = (int64_t)bs->payload_total,
                           .file_size = (int64_t)wb.payload_region_size,
                           .boundaries = bounds,
                           .entry_count = bs->entry_count};
      tarn_buf_reset(&value);
      rc = tarn_entry_index_build_raw(&r, &value);
      free(bounds);
      if (!rc)
        rc = index_section(w, a, &value);
      if (!rc) {
        a->done = 1;
        pthread_mutex_lock(&w->mu);
        a->log->absorbed_end = a->end;
        a->log->absorbed_cum = a->cum1;
        pthread_mutex_unlock(&w->mu);
      }
    }
    if (!stale)
      break;
  }
  tarn_wal_builder_free(&wb);
  tarn_buf_free(&obj);
  tarn_buf_free(&value);
  if (rc)
    return rc;
  /* every slot of the run is indexed: the checkpoint moves past them */
  tarn__xepoch e;
  rc = tarn__xepoch_load(w->meta, w->star, TARN__X_CLASS_EXPRESS, f[0]->epoch, &e);
  if (!rc)
    rc = tarn__xepoch_advance(w->meta, &e, TARN__XCUR_CHECKPOINT, f[n - 1]->slot + 1);
  tarn__xepoch_free(&e);
  return rc;
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
  size_t n = 0, bytes = 0;
  for (xflight *f = first; f && f->released && f->epoch == first->epoch; f = f->next) {
    if (n && bytes + f->bytes > w->o.absorb_max_bytes)
      break;
    bytes += f->bytes;
    n++;
  }
  xflight **fl = malloc(n * sizeof *fl);
  size_t cap = 0;
  for (xflight *f = first; fl && cap < n; f = f->next)
    fl[cap++] = f;
  /* one section per log, in order of first appearance */
  asec *secs = NULL;
  size_t nsecs = 0;
  int rc = fl ? 0 : tarn__err(TARN_ENOMEM, "out of memory");
  for (size_t i = 0; i < n && !rc; i++)
    for (size_t k = 0; k < fl[i]->n && !rc; k++) {
      const xent *e = &fl[i]->ents[k];
      size_t s = 0;
      while (s < nsecs && secs[s].log->log_id != e->log_id)
        s++;
      if (s == nsecs) {
        asec *ns = realloc(secs, (nsecs + 1) * sizeof *ns);
        if (!ns) {
          rc = tarn__err(TARN_ENOMEM, "out of memory");
          break;
        }
        secs = ns;
        xlog *l = NULL;
        for (l = w->logs; l && l->log_id != e->log_id; l = l->next)
          ;
        secs[nsecs++] = (asec){l, e->offset, e->offset, l->absorbed_cum, l->absorbed_cum, 0};
        if (e->offset != l->absorbed_end)
          rc = tarn__err(TARN_ECORRUPT, "express absorb: log %" PRIu64 " entry at %" PRIu64
                                        " follows the index's end %" PRIu64,
                         e->log_id, e->offset, l->absorbed_end);
      }
      if (!rc && e->offset != secs[s].end)
        rc = tarn__err(TARN_ECORRUPT, "express absorb: log %" PRIu64 " entry at %" PRIu64
                                      ", expected %" PRIu64,
                       e->log_id, e->offset, secs[s].end);
      secs[s].end = e->offset + e->records;
      secs[s].cum1 += e->len;
    }
  if (!rc) {
    w->absorb_busy = 1;
    pthread_mutex_unlock(&w->mu);
    rc = absorb_run(w, fl, n, secs, nsecs);
    pthread_mutex_lock(&w->mu);
    w->absorb_busy = 0;
  }
  if (!rc) {
    xreclaim *q = calloc(1, sizeof *q);
    if (q) {
      *q = (xreclaim){first->epoch, fl[0]->slot, fl[n - 1]->slot + 1, tarn__mono_ms(), NULL};
      if (w->rq_tail)
        w->rq_tail->next = q;
      else
        w->rq_head = q;
      w->rq_tail = q;
    }
    for (size_t i = 0; i < n; i++) {
      w->head = fl[i]->next;
      w->bytes_in_flight -= fl[i]->bytes;
      tarn__xflight_free(fl[i]);
    }
    if (!w->head)
      w->tail = NULL;
    w->st.slots_absorbed += n;
    rc = 1;
  } else {
    w->absorb_rc = rc;
    tarn__xwriter_set_error(w, rc);
  }
  free(fl);
  free(secs);
  pthread_cond_broadcast(&w->cv);
  return rc;
}

int tarn__xabsorb_reclaim(tarn_xwriter *w, int force) {
  int did = 0;
  while (w->rq_head && !w->absorb_busy &&
         (force || tarn__mono_ms() - w->rq_head->absorbed_ms >= w->o.reclaim_grace_ms)) {
    xreclaim *q = w->rq_head;
    w->rq_head = q->next;
    if (!w->rq_head)
      w->rq_tail = NULL;
    w->absorb_busy = 1;
    pthread_mutex_unlock(&w->mu);
    int rc = 0;
    char key[TARN__X_SLOT_KEY_MAX];
    for (uint64_t s = q->from; s < q->to && !rc; s++) {
      rc = tarn__xslot_key(key, sizeof key, w->star, q->epoch, s);
      for (size_t b = 0; b < w->bs.k && !rc; b++)
        rc = tarn_objstore_delete(w->bs.b[b].store, key);
    }
    tarn__xepoch e;
    if (!rc)
      rc = tarn__xepoch_load(w->meta, w->star, TARN__X_CLASS_EXPRESS, q->epoch, &e);
    if (!rc) {
      rc = tarn__xepoch_advance(w->meta, &e, TARN__XCUR_TRIMMED, q->to);
      tarn__xepoch_free(&e);
    }
    pthread_mutex_lock(&w->mu);
    w->absorb_busy = 0;
    if (rc) {
      /* kept for the next pass: a bucket may be down for a while */
      q->next = w->rq_head;
      w->rq_head = q;
      if (!w->rq_tail)
        w->rq_tail = q;
      q->absorbed_ms = tarn__mono_ms();
      break;
    }
    w->st.flights_reclaimed += q->to - q->from;
    free(q);
    did = 1;
  }
  return did;
}
