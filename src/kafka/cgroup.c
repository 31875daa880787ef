/* Consumer groups (KIP-848, issue 37): ConsumerGroupHeartbeat's coordinator
 * over the classic groups' store and lock (group.h; docs/kafka.md "Consumer
 * groups (KIP-848)").
 *
 * The group epoch is bumped by every change of membership, subscription,
 * assignor or of the subscribed topics' partitions; at the next heartbeat the
 * server-side assignor (cassign.c) computes the target assignment of that
 * epoch. Each member is reconciled towards its target at its own heartbeats,
 * incrementally: first the partitions it must give up are taken from its
 * assignment and held as "revoking" until a heartbeat of its reports them no
 * longer owned; only then does it get its new epoch and the target's
 * partitions that no other member holds (assigned or revoking). So a
 * partition is never handed to two members at once: the safety rule,
 * planted as kcgroup-double-assign. A member that does not revoke within its
 * rebalance timeout, or is not heard from within the session timeout, is
 * removed and its partitions are free.
 *
 * Every change is written to the group's record (CompareAndSet on its
 * version, format 3 with the type, group_store.c), so another node that
 * takes the group over reads members, epochs and assignments back; a write
 * that loses means another node took over: NOT_COORDINATOR. */
#include <stdlib.h>
#include <string.h>

#include "kafka/group_internal.h"
#include "tarn/error.h"
#include "util/error.h"
#include "util/planted.h"
#include "util/random.h"

void tarn__kc_member_free(tarn__kc_member *m) {
  if (!m)
    return;
  free(m->id), free(m->instance_id), free(m->client_id), free(m->client_host);
  free(m->assignor);
  for (size_t i = 0; i < m->n_topics; i++)
    free(m->topics[i]);
  free(m->topics);
  tarn__kc_set_free(&m->assigned), tarn__kc_set_free(&m->revoking), tarn__kc_set_free(&m->target);
  free(m);
}

void tarn__kc_topics_free(tarn__kc_topic *t, size_t n) {
  for (size_t i = 0; t && i < n; i++)
    free(t[i].name);
  free(t);
}

static int set_eq(const tarn__kc_set *a, const tarn__kc_set *b) {
  return a->n == b->n && (!a->n || !memcmp(a->v, b->v, a->n * sizeof *a->v));
}

static tarn__kc_member *cfind(tarn__kg_group *gr, const char *id) {
  for (tarn__kc_member *m = gr->cmembers; m; m = m->next)
    if (!strcmp(m->id, id))
      return m;
  return NULL;
}

static void cremove(tarn__kg_group *gr, tarn__kc_member *mb) {
  for (tarn__kc_member **p = &gr->cmembers; *p; p = &(*p)->next)
    if (*p == mb) {
      *p = mb->next;
      break;
    }
  tarn__kc_member_free(mb);
  gr->group_epoch++;
  gr->state = gr->cmembers ? KG_STABLE : KG_EMPTY;
}

/* Whether another member than self holds the partition (assigned, or
 * revoking: it may still be fetching it). */
static int held_by_other(const tarn__kg_group *gr, const tarn__kc_member *self,
                         const tarn__kc_tp *tp) {
  for (const tarn__kc_member *m = gr->cmembers; m; m = m->next)
    if (m != self && (tarn__kc_set_has(&m->assigned, tp->id, tp->partition) ||
                      tarn__kc_set_has(&m->revoking, tp->id, tp->partition)))
      return 1;
  return 0;
}

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Sets the member's subscription (sorted, no duplicates); 1 when it changed. */
static int set_topics(tarn__kc_member *m, const char *const *t, size_t n, int *changed) {
  char **v = calloc(n ? n : 1, sizeof *v);
  size_t k = 0;
  int rc = v ? 0 : TARN_ENOMEM;
  for (size_t i = 0; !rc && i < n; i++)
    if (!(v[k++] = strdup(t[i])))
      rc = TARN_ENOMEM;
  if (!rc)
    qsort(v, k, sizeof *v, cmp_str);
  size_t u = 0;
  for (size_t i = 0; !rc && i < k; i++) {
    if (u && !strcmp(v[u - 1], v[i]))
      free(v[i]);
    else
      v[u++] = v[i];
  }
  if (rc) {
    for (size_t i = 0; i < k; i++)
      free(v[i]);
    free(v);
    return tarn__err(TARN_ENOMEM, "consumer group: out of memory");
  }
  int same = u == m->n_topics;
  for (size_t i = 0; same && i < u; i++)
    same = !strcmp(v[i], m->topics[i]);
  *changed = !same;
  for (size_t i = 0; i < m->n_topics; i++)
    free(m->topics[i]);
  free(m->topics);
  m->topics = v, m->n_topics = u;
  return 0;
}

/* The subscribed topics as the catalog has them now; *changed when they
 * differ from what the target was computed on. */
static int refresh_topics(tarn__kg_group *gr, tarn__kc_resolve_fn resolve, void *arg,
                          int *changed) {
  size_t cap = 0;
  for (const tarn__kc_member *m = gr->cmembers; m; m = m->next)
    cap += m->n_topics;
  tarn__kc_topic *t = calloc(cap ? cap : 1, sizeof *t);
  if (!t)
    return tarn__err(TARN_ENOMEM, "consumer group: out of memory");
  size_t n = 0;
  int rc = 0;
  for (const tarn__kc_member *m = gr->cmembers; !rc && m; m = m->next)
    for (size_t i = 0; !rc && i < m->n_topics; i++) {
      size_t j = 0;
      while (j < n && strcmp(t[j].name, m->topics[i]))
        j++;
      if (j < n)
        continue;
      int e = resolve(arg, m->topics[i], t[n].id, &t[n].partitions);
      if (e == TARN_ENOTFOUND)
        continue; /* not (yet) a topic: not assigned */
      if (e)
        rc = e;
      else if (!(t[n++].name = strdup(m->topics[i])))
        rc = tarn__err(TARN_ENOMEM, "consumer group: out of memory");
    }
  if (rc) {
    tarn__kc_topics_free(t, n);
    return rc;
  }
  /* sorted by name: the assignors' input is the same whoever joined first */
  for (size_t i = 1; i < n; i++)
    for (size_t j = i; j > 0 && strcmp(t[j - 1].name, t[j].name) > 0; j--) {
      tarn__kc_topic x = t[j];
      t[j] = t[j - 1], t[j - 1] = x;
    }
  int same = n == gr->n_ctopics;
  for (size_t i = 0; same && i < n; i++)
    same = !strcmp(t[i].name, gr->ctopics[i].name) && !memcmp(t[i].id, gr->ctopics[i].id, 16) &&
           t[i].partitions == gr->ctopics[i].partitions;
  *changed = !same;
  tarn__kc_topics_free(gr->ctopics, gr->n_ctopics);
  gr->ctopics = t, gr->n_ctopics = n;
  return 0;
}

/* The group's assignor: the one most members ask for (ties: by name), else
 * Kafka's default, "uniform". */
static const char *group_assignor(const tarn__kg_group *gr) {
  const char *best = NULL;
  size_t best_n = 0;
  for (const tarn__kc_member *m = gr->cmembers; m; m = m->next) {
    if (!m->assignor)
      continue;
    size_t n = 0;
    for (const tarn__kc_member *o = gr->cmembers; o; o = o->next)
      n += o->assignor && !strcmp(o->assignor, m->assignor);
    if (n > best_n || (n == best_n && strcmp(m->assignor, best) < 0))
      best = m->assignor, best_n = n;
  }
  return best ? best : "uniform";
}

/* The target assignment of the group epoch. */
static int compute_target(tarn__kg_group *gr) {
  size_t n = 0;
  for (const tarn__kc_member *m = gr->cmembers; m; m = m->next)
    n++;
  tarn__kc_amember *a = calloc(n ? n : 1, sizeof *a);
  if (!a)
    return tarn__err(TARN_ENOMEM, "consumer group: out of memory");
  size_t i = 0;
  for (tarn__kc_member *m = gr->cmembers; m; m = m->next, i++)
    a[i].id = m->id, a[i].topics = m->topics, a[i].n_topics = m->n_topics,
    a[i].current = &m->target;
  int rc = tarn__kc_assign(group_assignor(gr), gr->ctopics, gr->n_ctopics, a, n);
  i = 0;
  for (tarn__kc_member *m = gr->cmembers; !rc && m; m = m->next, i++) {
    tarn__kc_set_free(&m->target);
    m->target = a[i].out;
  }
  free(a);
  if (!rc)
    gr->target_epoch = gr->group_epoch;
  return rc;
}

/* One member's step towards its target (the file's comment); *dirty when
 * something changed. */
static int reconcile(tarn__kg_group *gr, tarn__kc_member *m, const tarn__kc_hb_req *q,
                     int64_t now_ms, int *dirty) {
  int rc = 0;
  if (q && q->has_owned && m->revoking.n) {
    /* the revoking partitions it no longer reports are released */
    tarn__kc_set still = {0};
    for (size_t i = 0; !rc && i < m->revoking.n; i++) {
      int owned = 0;
      for (size_t j = 0; j < q->n_owned && !owned; j++)
        owned = !memcmp(q->owned[j].id, m->revoking.v[i].id, 16) &&
                q->owned[j].partition == m->revoking.v[i].partition;
      if (owned)
        rc = tarn__kc_set_add(&still, m->revoking.v[i].id, m->revoking.v[i].partition);
    }
    if (rc) {
      tarn__kc_set_free(&still);
      return rc;
    }
    *dirty |= still.n != m->revoking.n;
    tarn__kc_set_free(&m->revoking);
    m->revoking = still;
  }
  if (m->revoking.n)
    return 0; /* nothing more until they are released */
  if (m->epoch == gr->target_epoch && set_eq(&m->assigned, &m->target))
    return 0;
  tarn__kc_set keep = {0}, revoke = {0};
  for (size_t i = 0; !rc && i < m->assigned.n; i++) {
    const tarn__kc_tp *tp = &m->assigned.v[i];
    rc = tarn__kc_set_add(tarn__kc_set_has(&m->target, tp->id, tp->partition) ? &keep : &revoke,
                          tp->id, tp->partition);
  }
  if (!rc && revoke.n) {
    /* first revoke, under the epoch it has */
    tarn__kc_set_free(&m->assigned), tarn__kc_set_free(&m->revoking);
    m->assigned = keep, m->revoking = revoke;
    m->revoke_deadline = now_ms + (m->rebalance_ms > 0 ? m->rebalance_ms : 60000);
    *dirty = 1;
    return 0;
  }
  tarn__kc_set_free(&revoke);
  /* then the target's partitions that nobody else holds */
  for (size_t i = 0; !rc && i < m->target.n; i++) {
    const tarn__kc_tp *tp = &m->target.v[i];
    if (tarn__kc_set_has(&keep, tp->id, tp->partition))
      continue;
    /* planted: handed out while its previous owner may still fetch it */
    if (!TARN__PLANTED(TARN__BUG_KCGROUP_DOUBLE_ASSIGN) && held_by_other(gr, m, tp))
      continue;
    rc = tarn__kc_set_add(&keep, tp->id, tp->partition);
    *dirty = 1;
  }
  if (rc) {
    tarn__kc_set_free(&keep);
    return rc;
  }
  tarn__kc_set_free(&m->assigned);
  m->assigned = keep;
  if (m->epoch != gr->target_epoch) {
    m->prev_epoch = m->epoch, m->epoch = gr->target_epoch;
    *dirty = 1;
  }
  return 0;
}

/* Kafka's member IDs of KIP-848 are UUIDs (v1: the client makes it). */
static char *new_id(void) {
  uint8_t u[16];
  if (tarn__random(u, sizeof u, "kafka member id"))
    return NULL;
  static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  char *s = malloc(23);
  if (!s)
    return NULL;
  for (int i = 0; i < 22; i++) {
    int bit = i * 6, byte = bit / 8, off = bit % 8;
    unsigned v = (unsigned)u[byte] << 8 | (byte + 1 < 16 ? u[byte + 1] : 0);
    s[i] = b64[(v >> (10 - off)) & 63];
  }
  s[22] = 0;
  return s;
}

static int16_t store_error(int rc) {
  return rc == TARN_ECONFLICT || rc == TARN_EGUARD ? TARN__KG_NOT_COORDINATOR
                                                   : TARN__KG_COORDINATOR_NOT_AVAILABLE;
}

static int16_t invalid(tarn__kc_hb_resp *out, const char *why) {
  out->message = why;
  return TARN__KG_INVALID_REQUEST;
}

/* Kafka's checks of the request before the group is looked at. */
static int16_t check_request(const tarn__kc_hb_req *q, tarn__kc_hb_resp *out) {
  if (!q->group_id || !*q->group_id)
    return invalid(out, "GroupId can't be empty.");
  if (q->version >= 1 && (!q->member_id || !*q->member_id))
    return invalid(out, "MemberId can't be empty.");
  if (q->instance_id && !*q->instance_id)
    return invalid(out, "InstanceId can't be empty.");
  if (q->member_epoch < -2)
    return invalid(out, "MemberEpoch is invalid.");
  if (q->member_epoch == -2 && !q->instance_id)
    return invalid(out, "InstanceId can't be null when MemberEpoch is -2.");
  if (q->regex)
    /* tarn: regular-expression subscriptions are not served (docs) */
    return invalid(out, "SubscribedTopicRegex is not supported by tarn.");
  if (q->member_epoch == 0) {
    if (q->rebalance_timeout_ms == -1)
      return invalid(out, "RebalanceTimeoutMs must be provided in first request.");
    if (!q->has_owned || q->n_owned)
      return invalid(out, "TopicPartitions must be empty when (re-)joining.");
    if (!q->topics)
      return invalid(out, "SubscribedTopicNames must be set in first request.");
  }
  if (q->assignor && !tarn__kc_assignor_known(q->assignor))
    return TARN__KG_UNSUPPORTED_ASSIGNOR;
  return 0;
}

static int set_str(char **dst, const char *s) {
  char *c = s ? strdup(s) : NULL;
  if (s && !c)
    return tarn__err(TARN_ENOMEM, "consumer group: out of memory");
  free(*dst);
  *dst = c;
  return 0;
}

/* A consumer heartbeat to a group of the classic type: a classic group with
 * members is not taken over; an empty one switches (Kafka's upgrade of an
 * empty classic group). 0 or the error to answer. */
static int16_t adopt_group(tarn__kg_group *gr, int32_t member_epoch) {
  if (tarn__kg_classic_busy(gr))
    return TARN__KG_INCONSISTENT_GROUP_PROTOCOL;
  if (member_epoch != 0)
    return TARN__KG_GROUP_ID_NOT_FOUND;
  if (set_str(&gr->protocol_type, "consumer"))
    return TARN__KG_UNKNOWN_SERVER_ERROR;
  free(gr->protocol), free(gr->leader);
  gr->protocol = gr->leader = NULL;
  gr->type = KG_CONSUMER;
  return 0;
}

/* A join (member epoch 0): the new member, appended to the group, whose
 * epoch is bumped; old, the same member's earlier self, has given up what it
 * had. NULL: out of memory. */
static tarn__kc_member *join_member(tarn__kgroups *g, tarn__kg_group *gr, tarn__kc_member *old,
                                    const char *mid, const tarn__kc_hb_req *q) {
  if (old)
    cremove(gr, old);
  tarn__kc_member *m = calloc(1, sizeof *m);
  if (!m || !(m->id = *mid ? strdup(mid) : new_id()) || set_str(&m->instance_id, q->instance_id) ||
      set_str(&m->client_id, q->client_id ? q->client_id : "") ||
      set_str(&m->client_host, q->client_host ? q->client_host : "")) {
    tarn__kc_member_free(m);
    return NULL;
  }
  m->session_ms = tarn__kg_options(g)->consumer_session_ms;
  tarn__kc_member **tail = &gr->cmembers;
  while (*tail)
    tail = &(*tail)->next;
  *tail = m;
  gr->group_epoch++;
  gr->state = KG_STABLE;
  return m;
}

static int16_t heartbeat_locked(tarn__kgroups *g, const tarn__kc_hb_req *q,
                                tarn__kc_resolve_fn resolve, void *arg, int64_t now_ms,
                                tarn__kc_hb_resp *out) {
  tarn__kg_group *gr;
  if (tarn__kg_find(g, q->group_id, now_ms, q->member_epoch == 0, &gr))
    return TARN__KG_COORDINATOR_NOT_AVAILABLE;
  if (!gr)
    return TARN__KG_GROUP_ID_NOT_FOUND;
  int16_t err = gr->type != KG_CONSUMER ? adopt_group(gr, q->member_epoch) : 0;
  if (err)
    return err;
  const char *mid = q->member_id ? q->member_id : "";
  tarn__kc_member *m = *mid ? cfind(gr, mid) : NULL;
  int dirty = 0, rc = 0;
  if (q->member_epoch < 0) {
    if (!m)
      return TARN__KG_UNKNOWN_MEMBER_ID;
    /* tarn: a static member's leave (-2) is a leave too: its partitions go
     * to the others at once (docs) */
    out->member_id = strdup(m->id);
    out->member_epoch = q->member_epoch;
    cremove(gr, m);
    rc = tarn__kg_save(tarn__kg_meta(g), gr);
    if (rc) {
      tarn__kg_drop(g, gr, store_error(rc));
      return store_error(rc);
    }
    return out->member_id ? 0 : TARN__KG_UNKNOWN_SERVER_ERROR;
  }
  if (q->instance_id) {
    for (tarn__kc_member *o = gr->cmembers; o; o = o->next)
      if (o != m && o->instance_id && !strcmp(o->instance_id, q->instance_id))
        return TARN__KG_UNRELEASED_INSTANCE_ID;
  }
  if (q->member_epoch == 0) {
    if (!(m = join_member(g, gr, m, mid, q)))
      return TARN__KG_UNKNOWN_SERVER_ERROR;
    dirty = 1;
  } else {
    if (!m)
      return TARN__KG_UNKNOWN_MEMBER_ID;
    /* Kafka's fencing: a newer epoch than the member's, or an older one that
     * is not its previous epoch with partitions it still has */
    int ok = q->member_epoch == m->epoch;
    if (!ok && q->member_epoch == m->prev_epoch && q->member_epoch < m->epoch) {
      ok = 1;
      for (size_t i = 0; ok && q->has_owned && i < q->n_owned; i++)
        ok = tarn__kc_set_has(&m->assigned, q->owned[i].id, q->owned[i].partition);
    }
    if (!ok)
      return TARN__KG_FENCED_MEMBER_EPOCH;
  }
  m->last_seen = now_ms;
  if (q->rebalance_timeout_ms > 0 && q->rebalance_timeout_ms != m->rebalance_ms)
    m->rebalance_ms = q->rebalance_timeout_ms, dirty = 1;
  if (q->topics) {
    int changed = 0;
    if (set_topics(m, q->topics, q->n_topics, &changed))
      return TARN__KG_UNKNOWN_SERVER_ERROR;
    if (changed && q->member_epoch != 0) /* a join has bumped it already */
      gr->group_epoch++, dirty = 1;
  }
  if (q->assignor && (!m->assignor || strcmp(m->assignor, q->assignor))) {
    if (set_str(&m->assignor, q->assignor))
      return TARN__KG_UNKNOWN_SERVER_ERROR;
    if (q->member_epoch != 0)
      gr->group_epoch++;
    dirty = 1;
  }
  int changed = 0;
  rc = refresh_topics(gr, resolve, arg, &changed);
  if (!rc && changed)
    gr->group_epoch++, dirty = 1;
  if (!rc && gr->group_epoch > gr->target_epoch)
    rc = compute_target(gr), dirty = 1;
  rc = rc ? rc : reconcile(gr, m, q, now_ms, &dirty);
  if (rc) {
    tarn__kg_drop(g, gr, TARN__KG_COORDINATOR_NOT_AVAILABLE);
    return rc == TARN_ENOMEM ? TARN__KG_UNKNOWN_SERVER_ERROR : TARN__KG_COORDINATOR_NOT_AVAILABLE;
  }
  if (dirty && (rc = tarn__kg_save(tarn__kg_meta(g), gr))) {
    tarn__kg_drop(g, gr, store_error(rc));
    return store_error(rc);
  }
  out->member_id = strdup(m->id);
  out->member_epoch = m->epoch;
  if (!out->member_id || tarn__kc_set_copy(&out->assignment, &m->assigned))
    return TARN__KG_UNKNOWN_SERVER_ERROR;
  return 0;
}

void tarn__kgroups_cheartbeat(tarn__kgroups *g, const tarn__kc_hb_req *q,
                              tarn__kc_resolve_fn resolve, void *arg, int64_t now_ms,
                              tarn__kc_hb_resp *out) {
  memset(out, 0, sizeof *out);
  out->heartbeat_ms = tarn__kg_options(g)->consumer_heartbeat_ms;
  out->member_epoch = -1;
  int16_t e = check_request(q, out);
  if (!e) {
    tarn__kg_lock(g);
    e = heartbeat_locked(g, q, resolve, arg, now_ms, out);
    tarn__kg_unlock(g);
  }
  if (e) {
    free(out->member_id);
    out->member_id = NULL;
    tarn__kc_set_free(&out->assignment);
    out->member_epoch = -1;
  }
  out->error = e;
}

void tarn__kc_hb_resp_free(tarn__kc_hb_resp *r) {
  free(r->member_id);
  r->member_id = NULL;
  tarn__kc_set_free(&r->assignment);
}

int16_t tarn__kc_check_commit(tarn__kg_group *gr, const char *member_id, int32_t epoch,
                              int64_t now_ms) {
  tarn__kc_member *m = member_id && *member_id ? cfind(gr, member_id) : NULL;
  if (!m)
    return TARN__KG_UNKNOWN_MEMBER_ID;
  /* the member's epoch, or its previous one (a commit sent before the
   * heartbeat that bumped it came back) */
  if (epoch != m->epoch && epoch != m->prev_epoch)
    return TARN__KG_STALE_MEMBER_EPOCH;
  m->last_seen = now_ms;
  return 0;
}

void tarn__kc_tick(tarn__kgroups *g, tarn__kg_group *gr, int64_t now_ms) {
  int gone = 0;
  for (tarn__kc_member *m = gr->cmembers, *nx; m; m = nx) {
    nx = m->next;
    /* the session (group.consumer.session.timeout.ms), or a revocation not
     * done within the member's rebalance timeout: Kafka fences it */
    if (now_ms - m->last_seen > m->session_ms || (m->revoking.n && now_ms > m->revoke_deadline)) {
      cremove(gr, m);
      gone = 1;
    }
  }
  int rc = gone ? tarn__kg_save(tarn__kg_meta(g), gr) : 0;
  if (rc)
    tarn__kg_drop(g, gr, store_error(rc));
}

/* ---- describing -------------------------------------------------------------- */

static int copy_topics(char ***dst, size_t *n, char *const *src, size_t k) {
  *dst = calloc(k ? k : 1, sizeof **dst);
  if (!*dst)
    return TARN_ENOMEM;
  for (size_t i = 0; i < k; i++)
    if (!((*dst)[(*n)++] = strdup(src[i])))
      return TARN_ENOMEM;
  return 0;
}

void tarn__kgroups_cdescribe(tarn__kgroups *g, const char *group_id, int64_t now_ms,
                             tarn__kc_desc *d) {
  memset(d, 0, sizeof *d);
  d->state = "Dead";
  if (!group_id || !*group_id) {
    d->error = TARN__KG_INVALID_GROUP_ID;
    return;
  }
  tarn__kg_lock(g);
  tarn__kg_group *gr;
  int fail = 0;
  if (tarn__kg_find(g, group_id, now_ms, 0, &gr))
    d->error = TARN__KG_COORDINATOR_NOT_AVAILABLE;
  else if (!gr || gr->type != KG_CONSUMER)
    d->error = TARN__KG_GROUP_ID_NOT_FOUND;
  if (!d->error) {
    int reconciling = 0;
    for (const tarn__kc_member *m = gr->cmembers; m; m = m->next)
      reconciling |=
          m->epoch != gr->target_epoch || m->revoking.n || !set_eq(&m->assigned, &m->target);
    d->state = !gr->cmembers                        ? "Empty"
               : gr->target_epoch < gr->group_epoch ? "Assigning"
               : reconciling                        ? "Reconciling"
                                                    : "Stable";
    d->group_epoch = gr->group_epoch, d->assignment_epoch = gr->target_epoch;
    fail = !(d->assignor = strdup(group_assignor(gr)));
    d->topics = calloc(gr->n_ctopics ? gr->n_ctopics : 1, sizeof *d->topics);
    fail |= !d->topics;
    for (size_t i = 0; !fail && i < gr->n_ctopics; i++) {
      d->topics[i] = gr->ctopics[i];
      fail = !(d->topics[i].name = strdup(gr->ctopics[i].name));
      d->n_topics++;
    }
    size_t n = 0;
    for (const tarn__kc_member *m = gr->cmembers; m; m = m->next)
      n++;
    d->members = calloc(n ? n : 1, sizeof *d->members);
    fail |= !d->members;
    for (const tarn__kc_member *m = gr->cmembers; !fail && m; m = m->next) {
      tarn__kc_desc_member *o = &d->members[d->n_members++];
      o->epoch = m->epoch;
      fail = !(o->member_id = strdup(m->id)) || !(o->client_id = strdup(m->client_id)) ||
             !(o->client_host = strdup(m->client_host)) ||
             set_str(&o->instance_id, m->instance_id) ||
             copy_topics(&o->topics, &o->n_topics, m->topics, m->n_topics) ||
             tarn__kc_set_copy(&o->assigned, &m->assigned) ||
             tarn__kc_set_copy(&o->target, &m->target);
    }
  }
  tarn__kg_unlock(g);
  if (fail)
    d->error = TARN__KG_UNKNOWN_SERVER_ERROR;
}

void tarn__kc_desc_free(tarn__kc_desc *d) {
  for (size_t i = 0; i < d->n_members; i++) {
    tarn__kc_desc_member *o = &d->members[i];
    free(o->member_id), free(o->instance_id), free(o->client_id), free(o->client_host);
    for (size_t j = 0; j < o->n_topics; j++)
      free(o->topics[j]);
    free(o->topics);
    tarn__kc_set_free(&o->assigned), tarn__kc_set_free(&o->target);
  }
  free(d->members);
  tarn__kc_topics_free(d->topics, d->n_topics);
  free(d->assignor);
  memset(d, 0, sizeof *d);
}
