/* A node's express writer (issue 15; docs/express.md "Serving through Kafka";
 * api.h "Express topics"). One tarn_xwriter per node, star = the node's
 * (cfg.star), opened at the first produce to an express topic. The partition's
 * leader (tarn__kregistry_leader over the live nodes) is the only node that
 * appends to its log; every other one answers NOT_LEADER_OR_FOLLOWER. When the
 * live set moves a log this node holds to another node, or the node drains,
 * the log leaves through Finish (tarn_xwriter_finish: the release flush, then
 * the clean-release mark), retried every TARN_XWRITER_FINISH_RETRY_MS while it
 * cannot land; the successor's first append passes the open gate, which
 * consumes the mark (or fences and settles a predecessor that died).
 *
 * A writer that failed for good (tarn_xwriter_failed: a halted epoch it could
 * not fence, a new epoch it could not mint) would fail every later append, so
 * the next produce (or the handover job, whichever comes first) closes it
 * (retire: its logs stay unmarked, its leases go) and a later produce opens
 * a new one, at most one open per TARN__KEXPRESS_REOPEN_MS: its gates find
 * the failed writer's epoch below this star's head and settle it inline (the
 * restart verdict), as after a restart of the node. */
#include <pthread.h>
#include <stdio.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "kafka/api.h"
#include "kafka/registry.h"
#include "tarn/deployment.h"
#include "tarn/buf.h"
#include "tarn/error.h"
#include "tarn/kafka.h"
#include "tarn/express.h"
#include "tarn/express_fence.h"
#include "tarn/kafka_topics.h"
#include "util/clock.h"
#include "util/error.h"

/* A log this node's writer led at some time: a hint of what to Finish. An
 * entry is never removed (at most one per express partition the node ever
 * wrote): a Finish of a log the writer does not lead is TARN_ENOTFOUND at the
 * cost of a lookup, and a produce racing the handover job can never leave a
 * log held and unlisted. */
typedef struct xheld {
  uint64_t log_id;
  uint8_t topic_id[16];
  uint32_t partition;
  int finishing;    /* a Finish of it failed: retried, whoever leads now */
  int64_t next_try; /* monotonic ms */
} xheld;

/* A failed writer is reopened at most this often (no busy loop of opens
 * against a deployment that keeps failing them). */
#define TARN__KEXPRESS_REOPEN_MS 1000

struct tarn__kexpress {
  pthread_mutex_t mu;
  pthread_cond_t cv; /* users reached 0, or a retire ended */
  tarn_xwriter *w;
  /* callers between tarn__kexpress_writer (or the handover job's snapshot)
   * and their last call on w: a retired writer is closed only at 0 */
  int users;
  int retiring;      /* a failed writer is being closed (mu released meanwhile) */
  int64_t next_open; /* monotonic ms: no open of a writer before */
  int opens;
  tarn_xfence_opts fence; /* the roll's fence options (outlive the writers) */
  xheld *v;
  size_t n, cap;
  atomic_int draining;
};

int tarn__kexpress_open(tarn__knode *n) {
  n->express = calloc(1, sizeof *n->express);
  if (!n->express)
    return TARN_ENOMEM;
  pthread_mutex_init(&n->express->mu, NULL);
  pthread_cond_init(&n->express->cv, NULL);
  return 0;
}

int tarn__kexpress_is(const tarn_kafka_topic *t) {
  return strcmp(t->storage_class, TARN_STREAM_CLASS_EXPRESS) == 0;
}

int tarn__kexpress_leads(tarn__knode *n, const tarn_kafka_topic *t, uint32_t partition) {
  if (n->express && atomic_load(&n->express->draining))
    return 0; /* a draining node hands everything over */
  tarn__knode_info *live;
  size_t nlive;
  int rc = tarn__kregistry_live(n->registry, &live, &nlive);
  if (rc)
    return rc;
  int32_t id = live[tarn__kregistry_leader(live, nlive, t->uuid, partition)].node_id;
  free(live);
  return id == n->cfg.node_id;
}

/* A Finish of close that did not land (it is retried, then given up on). */
static void finish_note(void *arg, uint64_t log_id, int attempt, int rc, const char *msg) {
  tarn__knode *n = arg;
  char m[640];
  snprintf(m, sizeof m, "attempt=%d %s", attempt, msg);
  n->cfg.express_log(n, "express finish not landed", log_id, rc, m);
}

/* Closes w and logs what the gates of its tenures found (the failover test
 * sums these lines). */
static int close_logged(tarn__knode *n, tarn_xwriter *w) {
  tarn_xwriter_stats st;
  tarn_xwriter_stats_get(w, &st);
  int rc = tarn_xwriter_close(w);
  if (n->cfg.express_log) {
    char msg[512];
    snprintf(msg, sizeof msg,
             "star=%s gate_fresh=%llu gate_marked=%llu gate_restart=%llu "
             "gate_settled=%llu acked=%llu",
             n->cfg.star, (unsigned long long)st.gate_fresh, (unsigned long long)st.gate_marked,
             (unsigned long long)st.gate_restart, (unsigned long long)st.gate_settled,
             (unsigned long long)st.entries_acked);
    n->cfg.express_log(n, "express writer closed", 0, rc, msg);
  }
  return rc;
}

/* Under mu, x->w failed for good with frc: it leaves x->w at once (nobody
 * new gets it), is closed once its last user let go (mu released for the
 * close) and logged once, here. Its close releases its leases with the logs
 * unmarked (a failed writer certifies no coverage): the next writer's gates,
 * or another node's, settle them. Its Finishes that did not land are moot. */
static void retire(tarn__knode *n, struct tarn__kexpress *x, int frc) {
  tarn_xwriter *w = x->w;
  char why[512];
  tarn_xwriter_last_error(w, why, sizeof why);
  if (n->cfg.express_log)
    n->cfg.express_log(n, "express writer failed", 0, frc, why);
  x->w = NULL;
  x->retiring = 1;
  while (x->users)
    pthread_cond_wait(&x->cv, &x->mu);
  pthread_mutex_unlock(&x->mu);
  close_logged(n, w); /* its error is the failure logged above */
  tarn_errclear();
  pthread_mutex_lock(&x->mu);
  x->retiring = 0;
  for (size_t i = 0; i < x->n; i++)
    x->v[i].finishing = 0;
  pthread_cond_broadcast(&x->cv);
}

int tarn__kexpress_writer(tarn__knode *n, const tarn_kafka_topic *t, uint32_t partition,
                          uint64_t log_id, tarn_xwriter **out) {
  struct tarn__kexpress *x = n->express;
  int rc = 0;
  pthread_mutex_lock(&x->mu);
  int frc = x->w ? tarn_xwriter_failed(x->w) : 0;
  if (frc)
    retire(n, x, frc);
  int64_t now = tarn__mono_ms();
  if (x->retiring) /* another thread closes the failed writer */
    rc = tarn__err(TARN_EUNAVAIL, "the node's express writer failed and is being closed; retry");
  else if (!x->w && now < x->next_open)
    rc = tarn__err(TARN_EUNAVAIL, "the node's express writer failed; it is reopened at most once a "
                                  "second; retry");
  else if (!x->w) {
    x->next_open = now + TARN__KEXPRESS_REOPEN_MS;
    tarn_xwriter_options o;
    tarn_xwriter_options_default(&o);
    o.star = n->cfg.star;
    if (n->cfg.express_absorb_ms)
      o.absorb_ms = n->cfg.express_absorb_ms;
    o.latency_budget_ms = n->cfg.express_latency_budget_ms;
    /* an in-process roll fences the writer's own halted epoch (as tarn append) */
    o.fence = tarn_express_fence_cut;
    if (n->cfg.express_log) {
      o.finish_note = finish_note;
      o.finish_note_arg = n;
    }
    if (n->cfg.express_fence_ms) {
      x->fence.timeout_ms = n->cfg.express_fence_ms;
      o.fence_arg = &x->fence;
    }
    rc = tarn_xwriter_open(n->meta, tarn_deployment_wal(n->dep), &o, &x->w);
    if (!rc && x->opens++ && n->cfg.express_log) {
      char msg[64];
      snprintf(msg, sizeof msg, "epoch=%llu", (unsigned long long)tarn_xwriter_epoch(x->w));
      n->cfg.express_log(n, "express writer reopened", log_id, 0, msg);
    }
  }
  size_t i = 0;
  while (!rc && i < x->n && x->v[i].log_id != log_id)
    i++;
  if (!rc && i == x->n) { /* listed before the append: the handover job sees it */
    if (x->n == x->cap) {
      size_t cap = x->cap ? 2 * x->cap : 16;
      xheld *v = realloc(x->v, cap * sizeof *v);
      if (!v)
        rc = tarn__err(TARN_ENOMEM, "out of memory");
      else
        x->v = v, x->cap = cap;
    }
    if (!rc) {
      xheld *e = &x->v[x->n++];
      memset(e, 0, sizeof *e);
      e->log_id = log_id;
      memcpy(e->topic_id, t->uuid, 16);
      e->partition = partition;
    }
  }
  *out = rc ? NULL : x->w;
  x->users += !rc;
  pthread_mutex_unlock(&x->mu);
  return rc;
}

void tarn__kexpress_writer_done(tarn__knode *n) {
  struct tarn__kexpress *x = n->express;
  pthread_mutex_lock(&x->mu);
  if (--x->users == 0)
    pthread_cond_broadcast(&x->cv);
  pthread_mutex_unlock(&x->mu);
}

int tarn__kexpress_handover(tarn__knode *n, int all) {
  struct tarn__kexpress *x = n->express;
  if (!x)
    return 0;
  pthread_mutex_lock(&x->mu);
  /* a failed writer's leases would keep the logs it held from their new
   * leaders (their gates defer while a lease lives): closed here too */
  int wrc = x->w ? tarn_xwriter_failed(x->w) : 0;
  if (wrc)
    retire(n, x, wrc);
  tarn_xwriter *w = x->w;
  size_t nh = x->n;
  xheld *snap = nh ? malloc(nh * sizeof *snap) : NULL;
  if (snap)
    memcpy(snap, x->v, nh * sizeof *snap);
  x->users += w && nh && snap;
  pthread_mutex_unlock(&x->mu);
  if (!w || !nh) {
    free(snap);
    return 0;
  }
  if (!snap)
    return TARN_ENOMEM;
  tarn__knode_info *live = NULL;
  size_t nlive = 0;
  int rc = all ? 0 : tarn__kregistry_live(n->registry, &live, &nlive);
  if (rc) {
    free(snap);
    tarn__kexpress_writer_done(n);
    return rc; /* who leads is unknown: nothing moves until it is */
  }
  int64_t now = tarn__mono_ms();
  int left = 0;
  for (size_t i = 0; i < nh; i++) {
    xheld *e = &snap[i];
    int mine = !all && !atomic_load(&x->draining) &&
               live[tarn__kregistry_leader(live, nlive, e->topic_id, e->partition)].node_id ==
                   n->cfg.node_id;
    /* a Finish once begun runs to its end even if the log came back: its
     * appends bounce until then, and the next one passes the gate again */
    if ((mine && !e->finishing) || (!all && e->finishing && now < e->next_try))
      continue;
    int frc = tarn_xwriter_finish(w, e->log_id);
    int finishing = frc && frc != TARN_ENOTFOUND;
    if (!frc && n->cfg.express_log)
      n->cfg.express_log(n, "express handover", e->log_id, 0, NULL);
    else if (finishing && n->cfg.express_log)
      n->cfg.express_log(n, "express finish failed", e->log_id, frc, tarn_errmsg());
    left += finishing;
    pthread_mutex_lock(&x->mu);
    for (size_t j = 0; j < x->n; j++)
      if (x->v[j].log_id == e->log_id) {
        x->v[j].finishing = finishing;
        x->v[j].next_try = now + TARN_XWRITER_FINISH_RETRY_MS;
      }
    pthread_mutex_unlock(&x->mu);
  }
  free(live);
  free(snap);
  tarn__kexpress_writer_done(n);
  return left;
}

void tarn__kexpress_drain(tarn__knode *n) {
  if (n->express)
    atomic_store(&n->express->draining, 1);
}

int tarn__kexpress_close(tarn__knode *n) {
  struct tarn__kexpress *x = n->express;
  if (!x)
    return 0;
  atomic_store(&x->draining, 1);
  /* close runs Finish for every log still led, retried every 5 s (12 times),
   * then releases what could not land unmarked: the successor settles it */
  pthread_mutex_lock(&x->mu);
  while (x->retiring || x->users) /* a retire's close, or a produce's append */
    pthread_cond_wait(&x->cv, &x->mu);
  pthread_mutex_unlock(&x->mu);
  int rc = x->w ? close_logged(n, x->w) : 0;
  pthread_cond_destroy(&x->cv);
  pthread_mutex_destroy(&x->mu);
  free(x->v);
  free(x);
  n->express = NULL;
  return rc;
}

typedef struct tailw {
  uint64_t next;
  tarn_buf *out;
  size_t max;
  int first;
  int rc;
} tailw;

static int tail_entry(void *arg, uint64_t offset, const void *payload, size_t len,
                      uint32_t records) {
  tailw *t = arg;
  if (offset > t->next || offset + records <= t->next)
    return 1; /* a gap below it (absorbed meanwhile: the index has it) */
  if (t->out) {
    size_t have = t->out->len;
    if (len > t->max && !t->first)
      return 1;
    if ((t->rc = tarn_buf_append(t->out, payload, len)) ||
        (t->rc = tarn_kafka_rewrite_offsets(t->out->data + have, len, (int64_t)offset, records)))
      return 1;
    t->max = len > t->max ? 0 : t->max - len;
    t->first = 0;
  }
  t->next = offset + records;
  return 0;
}

int tarn__kexpress_tail(tarn__knode *n, uint64_t log_id, uint64_t from, size_t max, int first,
                        tarn_buf *out, uint64_t *next) {
  struct tarn__kexpress *x = n->express;
  *next = from;
  if (!x)
    return 0;
  tailw t = {from, out, max, first, 0};
  pthread_mutex_lock(&x->mu);
  /* read_tail finds nothing for a log the writer does not lead (never
   * opened, or finished: handed over) */
  if (x->w)
    tarn_xwriter_read_tail(x->w, log_id, from, tail_entry, &t, NULL);
  pthread_mutex_unlock(&x->mu);
  *next = t.next;
  return t.rc;
}
