/* The consumer-group coordinator: Kafka's classic group protocol as a state
 * machine over the caller's clock (group.h; docs/kafka.md "Groups and
 * producers"). The states are Kafka's:
 *   Empty --join--> PreparingRebalance --all rejoined or deadline-->
 *   CompletingRebalance --leader's SyncGroup--> Stable --join/leave/expiry-->
 *   PreparingRebalance ...
 * Static members (KIP-345) are the members with an instance ID: one that
 * rejoins without its member ID replaces itself (replace_static), and a
 * join phase that ends without them keeps them (complete_join).
 * Requests that wait (JoinGroup in PreparingRebalance, SyncGroup before the
 * leader's) park a tarn__kg_wait in their member; whatever ends the wait
 * fills it and queues it, and the queue is run once the lock is released. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>

#include "kafka/group_internal.h"
#include "tarn/meta.h"
#include "util/clock.h"
#include "util/error.h"
#include "util/planted.h"
#include "util/random.h"

enum { WAIT_JOIN, WAIT_SYNC };

/* A request's answer, allocated before the lock is taken so that answering
 * never fails for want of memory. */
typedef struct tarn__kg_wait {
  int kind;
  tarn__kjoin_cb jcb;
  tarn__ksync_cb scb;
  void *arg;
  int16_t error;
  int32_t generation;
  char *protocol_type, *protocol, *leader, *member_id;
  tarn__kjoin_member *members;
  size_t n_members;
  uint8_t *assignment;
  size_t len;
  struct tarn__kg_wait *next;
} tarn__kg_wait;

typedef struct queue {
  tarn__kg_wait *head, **tail;
} queue;

struct tarn__kgroups {
  tarn_meta *m;
  tarn__kgroups_options opt;
  pthread_mutex_t mu;
  tarn__kg_group *groups;
  queue locked_q; /* what tarn__kg_lock's holder queued (cgroup.c) */
};

static const char *const state_names[] = {"Empty", "PreparingRebalance", "CompletingRebalance",
                                          "Stable"};

/* ---- memory ---------------------------------------------------------------- */

static void protos_free(tarn__kg_proto_copy *p, size_t n) {
  for (size_t i = 0; i < n; i++)
    free(p[i].name), free(p[i].meta);
  free(p);
}

void tarn__kg_member_free(tarn__kg_member *m) {
  if (!m)
    return;
  free(m->id), free(m->client_id), free(m->client_host), free(m->instance_id);
  free(m->assignment);
  protos_free(m->protos, m->n_protos);
  free(m);
}

void tarn__kg_group_free(tarn__kg_group *gr) {
  if (!gr)
    return;
  for (tarn__kg_member *m = gr->members, *nx; m; m = nx) {
    nx = m->next;
    tarn__kg_member_free(m);
  }
  for (tarn__kc_member *m = gr->cmembers, *nx; m; m = nx) {
    nx = m->next;
    tarn__kc_member_free(m);
  }
  tarn__kc_topics_free(gr->ctopics, gr->n_ctopics);
  free(gr->id), free(gr->protocol_type), free(gr->protocol), free(gr->leader);
  free(gr);
}

static char *dup_or_null(const char *s) { return s ? strdup(s) : NULL; }

static uint8_t *dup_bytes(const uint8_t *p, size_t n, int *fail) {
  if (!n)
    return NULL;
  uint8_t *c = malloc(n);
  if (!c)
    *fail = 1;
  else
    memcpy(c, p, n);
  return c;
}

static void wait_free(tarn__kg_wait *w) {
  for (size_t i = 0; i < w->n_members; i++)
    free((char *)w->members[i].member_id), free((char *)w->members[i].instance_id),
        free((uint8_t *)w->members[i].meta);
  free(w->members);
  free(w->protocol_type), free(w->protocol), free(w->leader), free(w->member_id);
  free(w->assignment);
  free(w);
}

/* ---- answering ------------------------------------------------------------- */

static void enqueue(queue *q, tarn__kg_wait *w) {
  w->next = NULL;
  *q->tail = w;
  q->tail = &w->next;
}

/* Calls every queued callback; the lock must not be held. */
static void run(queue *q) {
  for (tarn__kg_wait *w = q->head, *nx; w; w = nx) {
    nx = w->next;
    if (w->kind == WAIT_JOIN) {
      tarn__kjoin_resp r = {w->error,
                            w->error ? -1 : w->generation,
                            w->protocol_type,
                            w->protocol,
                            w->leader ? w->leader : "",
                            w->member_id ? w->member_id : "",
                            w->members,
                            w->n_members};
      w->jcb(w->arg, &r);
    } else {
      w->scb(w->arg, w->error, w->assignment, w->len);
    }
    wait_free(w);
  }
  q->head = NULL, q->tail = &q->head;
}

/* Answers a wait with an error (member_id: what the join response names). */
static void fail_wait(queue *q, tarn__kg_wait *w, int16_t error, const char *member_id) {
  w->error = error;
  w->member_id = dup_or_null(member_id);
  enqueue(q, w);
}

static const tarn__kg_proto_copy *proto_of(const tarn__kg_member *m, const char *name) {
  for (size_t i = 0; name && i < m->n_protos; i++)
    if (!strcmp(m->protos[i].name, name))
      return &m->protos[i];
  return NULL;
}

static size_t n_members(const tarn__kg_group *gr) {
  size_t n = 0;
  for (const tarn__kg_member *m = gr->members; m; m = m->next)
    n += !m->pending;
  return n;
}

/* Answers a member's JoinGroup with the current generation and leader (the
 * group's; a replaced static member is told the leader before it was
 * replaced, see replace_static); the leader gets every member with its
 * metadata for the chosen protocol. */
static void answer_join(queue *q, const tarn__kg_group *gr, const tarn__kg_member *mb,
                        const char *leader, tarn__kg_wait *w) {
  int fail = 0;
  w->generation = gr->generation;
  w->protocol_type = dup_or_null(gr->protocol_type);
  w->protocol = dup_or_null(gr->protocol);
  w->leader = dup_or_null(leader);
  w->member_id = strdup(mb->id);
  fail = !w->protocol_type || !w->protocol || !w->leader || !w->member_id;
  if (!fail && !strcmp(leader, mb->id)) {
    size_t n = n_members(gr), k = 0;
    w->members = calloc(n ? n : 1, sizeof *w->members);
    fail = !w->members;
    for (const tarn__kg_member *m = gr->members; !fail && m; m = m->next) {
      if (m->pending)
        continue;
      const tarn__kg_proto_copy *p = proto_of(m, gr->protocol);
      w->members[k].member_id = strdup(m->id);
      w->members[k].instance_id = dup_or_null(m->instance_id);
      w->members[k].len = p ? p->len : 0;
      w->members[k].meta = p ? dup_bytes(p->meta, p->len, &fail) : NULL;
      fail |= !w->members[k].member_id || (m->instance_id && !w->members[k].instance_id);
      k++;
      w->n_members = k;
    }
  }
  if (fail)
    w->error = TARN__KG_UNKNOWN_SERVER_ERROR;
  enqueue(q, w);
}

static void answer_sync(queue *q, const tarn__kg_member *mb, tarn__kg_wait *w) {
  int fail = 0;
  w->len = mb->assignment_len;
  w->assignment = dup_bytes(mb->assignment, mb->assignment_len, &fail);
  if (fail)
    w->error = TARN__KG_UNKNOWN_SERVER_ERROR, w->len = 0;
  enqueue(q, w);
}

/* Drops the group from memory, answering whatever waits in it. */
static void drop_group(tarn__kgroups *g, tarn__kg_group *gr, int16_t error, queue *q) {
  for (tarn__kg_member *m = gr->members; m; m = m->next) {
    if (m->jwait)
      fail_wait(q, m->jwait, error, m->id);
    if (m->swait)
      fail_wait(q, m->swait, error, NULL);
    m->jwait = m->swait = NULL;
  }
  for (tarn__kg_group **p = &g->groups; *p; p = &(*p)->next)
    if (*p == gr) {
      *p = gr->next;
      break;
    }
  tarn__kg_group_free(gr);
}

/* The Kafka error of a failed write of the group record: another node wrote
 * it (this one is no longer the coordinator) or the store failed. */
static int16_t store_error(int rc) {
  return rc == TARN_ECONFLICT || rc == TARN_EGUARD ? TARN__KG_NOT_COORDINATOR
                                                   : TARN__KG_COORDINATOR_NOT_AVAILABLE;
}

/* ---- the state machine ----------------------------------------------------- */

static tarn__kg_member *find_member(tarn__kg_group *gr, const char *id) {
  for (tarn__kg_member *m = gr->members; m; m = m->next)
    if (!strcmp(m->id, id))
      return m;
  return NULL;
}

/* The static member of an instance ID: the group's instance ID -> member ID
 * map (KIP-345), kept as the members' instance_id. */
static tarn__kg_member *find_instance(tarn__kg_group *gr, const char *instance_id) {
  for (tarn__kg_member *m = gr->members; m; m = m->next)
    if (m->instance_id && !strcmp(m->instance_id, instance_id))
      return m;
  return NULL;
}

/* Kafka's check of the (member ID, instance ID) a request names. With an
 * instance ID, the member it maps to must have the member ID: another one
 * means the request comes from a replaced instance (a process that another
 * with the same group.instance.id took over), which must stop and not
 * rejoin: FENCED_INSTANCE_ID (KIP-345); an instance ID the group does not
 * know is UNKNOWN_MEMBER_ID. Without one, the member ID must be a joined
 * member's. */
static int16_t check_member(tarn__kg_group *gr, const char *member_id, const char *instance_id,
                            tarn__kg_member **out) {
  tarn__kg_member *m = instance_id ? find_instance(gr, instance_id)
                       : member_id ? find_member(gr, member_id)
                                   : NULL;
  *out = NULL;
  if (!m || m->pending)
    return TARN__KG_UNKNOWN_MEMBER_ID;
  if (instance_id && (!member_id || strcmp(m->id, member_id)))
    /* planted: the old ID is only unknown, so its process rejoins and takes
     * the instance back (two processes consume as one) */
    return TARN__PLANTED(TARN__BUG_KGROUP_STATIC_UNFENCED) ? TARN__KG_UNKNOWN_MEMBER_ID
                                                           : TARN__KG_FENCED_INSTANCE_ID;
  *out = m;
  return 0;
}

static void remove_member(tarn__kg_group *gr, tarn__kg_member *mb) {
  for (tarn__kg_member **p = &gr->members; *p; p = &(*p)->next)
    if (*p == mb) {
      *p = mb->next;
      break;
    }
  tarn__kg_member_free(mb);
}

static int32_t longest_rebalance(const tarn__kg_group *gr) {
  int32_t longest = 0;
  for (const tarn__kg_member *m = gr->members; m; m = m->next)
    if (!m->pending && m->rebalance_ms > longest)
      longest = m->rebalance_ms;
  return longest;
}

static void prepare_rebalance(tarn__kg_group *gr, int64_t now_ms, queue *q) {
  for (tarn__kg_member *m = gr->members; m; m = m->next)
    if (m->swait) /* their generation is over before it was handed out */
      fail_wait(q, m->swait, TARN__KG_REBALANCE_IN_PROGRESS, NULL), m->swait = NULL;
  gr->state = KG_PREPARING;
  gr->deadline = now_ms + longest_rebalance(gr);
}

/* Whether every protocol name of the member is one all other members support,
 * for at least one of them: the group's candidate protocols intersect the
 * member's. */
static int supports(const tarn__kg_group *gr, const tarn__kg_member *self, const char *type,
                    const tarn__kg_protocol *p, size_t n) {
  if (!type || !*type || !n)
    return 0;
  int others = 0;
  for (const tarn__kg_member *m = gr->members; m; m = m->next)
    others += !m->pending && m != self;
  if (!others)
    return 1;
  if (!gr->protocol_type || strcmp(gr->protocol_type, type))
    return 0;
  for (size_t i = 0; i < n; i++) {
    int all = 1;
    for (const tarn__kg_member *m = gr->members; all && m; m = m->next)
      if (!m->pending && m != self && !proto_of(m, p[i].name))
        all = 0;
    if (all)
      return 1;
  }
  return 0;
}

static void complete_join(tarn__kgroups *g, tarn__kg_group *gr, int64_t now_ms, queue *q);

/* The join phase ends when every member has rejoined and no member given an
 * ID has yet to come back, or at the deadline. */
static void maybe_complete_join(tarn__kgroups *g, tarn__kg_group *gr, int64_t now_ms, queue *q) {
  if (gr->state != KG_PREPARING)
    return;
  int all = 1;
  for (tarn__kg_member *m = gr->members; m; m = m->next)
    if (m->pending || !m->jwait)
      all = 0;
  if (all || now_ms >= gr->deadline)
    complete_join(g, gr, now_ms, q);
}

/* The protocol of a generation led by lead: the first in its order of
 * preference that every member supports; NULL when there is none. */
static const char *choose_protocol(const tarn__kg_group *gr, const tarn__kg_member *lead) {
  for (size_t i = 0; i < lead->n_protos; i++) {
    int all = 1;
    for (const tarn__kg_member *m = gr->members; all && m; m = m->next)
      all = m->pending || proto_of(m, lead->protos[i].name) != NULL;
    if (all)
      return lead->protos[i].name;
  }
  return NULL;
}

static void complete_join(tarn__kgroups *g, tarn__kg_group *gr, int64_t now_ms, queue *q) {
  /* dynamic members that did not rejoin in time leave the group; static ones
   * stay until their session expires (KIP-345), in the new generation with
   * the metadata they last joined with */
  int waiting = 0;
  for (tarn__kg_member *m = gr->members, *nx; m; m = nx) {
    nx = m->next;
    if (!m->pending && !m->jwait && !m->instance_id)
      remove_member(gr, m);
    else
      waiting += !m->pending && !m->jwait;
  }
  /* the leader answers the JoinGroup: a member that rejoined */
  tarn__kg_member *lead = gr->leader ? find_member(gr, gr->leader) : NULL;
  if (!lead || lead->pending || !lead->jwait)
    for (lead = gr->members; lead && (lead->pending || !lead->jwait); lead = lead->next) {
    }
  if (!lead && waiting) {
    /* only static members that have not rejoined: Kafka waits another
     * rebalance timeout, until they rejoin or their sessions expire */
    gr->deadline = now_ms + longest_rebalance(gr);
    return;
  }
  free(gr->protocol), gr->protocol = NULL;
  if (lead) {
    const char *p = choose_protocol(gr, lead);
    if (p && !(gr->protocol = strdup(p))) {
      drop_group(g, gr, TARN__KG_UNKNOWN_SERVER_ERROR, q);
      return;
    }
    if (!gr->protocol) {
      for (tarn__kg_member *m = gr->members, *nx; m; m = nx) {
        nx = m->next;
        if (!m->pending) {
          if (m->jwait)
            fail_wait(q, m->jwait, TARN__KG_INCONSISTENT_GROUP_PROTOCOL, m->id);
          m->jwait = NULL;
          remove_member(gr, m);
        }
      }
      lead = NULL;
    }
  }
  free(gr->leader);
  gr->leader = NULL;
  if (lead && !(gr->leader = strdup(lead->id))) {
    drop_group(g, gr, TARN__KG_UNKNOWN_SERVER_ERROR, q);
    return;
  }
  gr->generation++;
  gr->assigned = 0;
  for (tarn__kg_member *m = gr->members; m; m = m->next) {
    free(m->assignment), m->assignment = NULL, m->assignment_len = 0;
    m->synced = 0;
    m->last_seen = now_ms;
  }
  gr->state = lead ? KG_COMPLETING : KG_EMPTY;
  gr->deadline = now_ms + longest_rebalance(gr);
  int rc = tarn__kg_save(g->m, gr);
  if (rc) {
    drop_group(g, gr, store_error(rc), q);
    return;
  }
  for (tarn__kg_member *m = gr->members; m; m = m->next)
    if (m->jwait) {
      answer_join(q, gr, m, gr->leader, m->jwait);
      m->jwait = NULL;
    }
}

/* A member left or expired. */
static void member_gone(tarn__kgroups *g, tarn__kg_group *gr, tarn__kg_member *mb, int64_t now_ms,
                        queue *q) {
  int was_pending = mb->pending;
  if (mb->jwait)
    fail_wait(q, mb->jwait, TARN__KG_UNKNOWN_MEMBER_ID, mb->id);
  if (mb->swait)
    fail_wait(q, mb->swait, TARN__KG_UNKNOWN_MEMBER_ID, NULL);
  mb->jwait = mb->swait = NULL;
  remove_member(gr, mb);
  if (!was_pending && (gr->state == KG_STABLE || gr->state == KG_COMPLETING))
    prepare_rebalance(gr, now_ms, q);
  maybe_complete_join(g, gr, now_ms, q);
}

/* The group as this node holds it, read from the store when it is not in
 * memory or when the store's record is not the one this node last wrote
 * (another node served the group meanwhile). *out is NULL without create
 * for a group neither here nor in the store. */
static int find_group(tarn__kgroups *g, const char *id, int64_t now_ms, int create, queue *q,
                      tarn__kg_group **out) {
  *out = NULL;
  tarn__kg_group *gr = g->groups;
  while (gr && strcmp(gr->id, id))
    gr = gr->next;
  if (gr) {
    int64_t v;
    int rc = tarn__kg_version(g->m, id, &v);
    if (rc)
      return rc;
    if (v == gr->version) {
      *out = gr;
      return 0;
    }
    drop_group(g, gr, TARN__KG_NOT_COORDINATOR, q);
  }
  int rc = tarn__kg_load(g->m, id, now_ms, &gr);
  if (rc)
    return rc;
  if (!create && gr->version == 0) {
    tarn__kg_group_free(gr);
    return 0;
  }
  gr->next = g->groups;
  g->groups = gr;
  *out = gr;
  return 0;
}

static int set_protocols(tarn__kg_member *mb, const tarn__kjoin_req *r) {
  tarn__kg_proto_copy *p = calloc(r->n_protocols, sizeof *p);
  int fail = !p;
  for (size_t i = 0; !fail && i < r->n_protocols; i++) {
    fail |= !(p[i].name = strdup(r->protocols[i].name ? r->protocols[i].name : ""));
    p[i].len = r->protocols[i].len;
    p[i].meta = dup_bytes(r->protocols[i].meta, r->protocols[i].len, &fail);
  }
  if (fail) {
    protos_free(p, p ? r->n_protocols : 0);
    return TARN_ENOMEM;
  }
  protos_free(mb->protos, mb->n_protos);
  mb->protos = p, mb->n_protos = r->n_protocols;
  return 0;
}

static int same_protocols(const tarn__kg_member *mb, const tarn__kjoin_req *r) {
  if (mb->n_protos != r->n_protocols)
    return 0;
  for (size_t i = 0; i < mb->n_protos; i++) {
    const tarn__kg_protocol *p = &r->protocols[i];
    if (strcmp(mb->protos[i].name, p->name ? p->name : "") || mb->protos[i].len != p->len ||
        (p->len && memcmp(mb->protos[i].meta, p->meta, p->len)))
      return 0;
  }
  return 1;
}

/* Kafka's member IDs: the client ID, '-', a random UUID. */
static char *new_member_id(const char *client_id) {
  uint8_t u[16];
  if (tarn__random(u, sizeof u, "kafka member id"))
    return NULL;
  size_t n = strlen(client_id) + 38;
  char *s = malloc(n);
  if (!s)
    return NULL;
  int k = snprintf(s, n, "%s-", client_id);
  for (int i = 0; i < 16; i++)
    k += snprintf(s + k, n - (size_t)k, "%s%02x", i == 4 || i == 6 || i == 8 || i == 10 ? "-" : "",
                  u[i]);
  return s;
}

static tarn__kg_member *new_member(const tarn__kjoin_req *r, char *id, int64_t now_ms) {
  tarn__kg_member *mb = calloc(1, sizeof *mb);
  if (!mb || !(mb->client_id = strdup(r->client_id ? r->client_id : "")) ||
      !(mb->client_host = strdup(r->client_host ? r->client_host : "")) ||
      (r->group_instance_id && !(mb->instance_id = strdup(r->group_instance_id))) ||
      set_protocols(mb, r)) {
    tarn__kg_member_free(mb);
    free(id);
    return NULL;
  }
  mb->id = id;
  mb->last_seen = now_ms;
  return mb;
}

static int32_t rebalance_of(const tarn__kjoin_req *r) {
  return r->rebalance_timeout_ms > 0 ? r->rebalance_timeout_ms : r->session_timeout_ms;
}

/* KIP-345: a static member that joins without a member ID while its
 * instance ID maps to mb (its process restarted, or another process took
 * the instance over) takes mb's place under a new member ID, keeping mb's
 * assignment. The old ID is fenced from now on (check_member); a JoinGroup
 * or SyncGroup of it still waiting is answered FENCED_INSTANCE_ID. A Stable
 * group whose chosen protocol stays does not rebalance: the record is
 * written with the new ID and the member gets the current generation with
 * the leader as it was before, so a replaced leader does not assign again
 * (a Stable group would not hand that assignment out) and syncs as a
 * follower, as Kafka answers JoinGroup before v9. Otherwise the group
 * rebalances (in CompletingRebalance too: the leader may be assigning to
 * the old ID). */
static void replace_static(tarn__kgroups *g, tarn__kg_group *gr, tarn__kg_member *mb,
                           const tarn__kjoin_req *r, int64_t now_ms, tarn__kg_wait *w, queue *q) {
  int was_leader = gr->leader && !strcmp(gr->leader, mb->id);
  char *id = new_member_id(r->group_instance_id);
  char *lead = was_leader && id ? strdup(id) : NULL;
  if (!id || (was_leader && !lead) || (!same_protocols(mb, r) && set_protocols(mb, r))) {
    free(id), free(lead);
    return fail_wait(q, w, TARN__KG_UNKNOWN_SERVER_ERROR, "");
  }
  if (mb->jwait)
    fail_wait(q, mb->jwait, TARN__KG_FENCED_INSTANCE_ID, mb->id);
  if (mb->swait)
    fail_wait(q, mb->swait, TARN__KG_FENCED_INSTANCE_ID, NULL);
  mb->jwait = mb->swait = NULL;
  char *old = mb->id;
  mb->id = id;
  if (was_leader)
    free(gr->leader), gr->leader = lead;
  mb->session_ms = r->session_timeout_ms, mb->rebalance_ms = rebalance_of(r);
  mb->last_seen = now_ms;
  const tarn__kg_member *leader = gr->leader ? find_member(gr, gr->leader) : NULL;
  const char *next = leader ? choose_protocol(gr, leader) : NULL;
  if (gr->state == KG_STABLE && next && gr->protocol && !strcmp(next, gr->protocol)) {
    int rc = tarn__kg_save(g->m, gr);
    if (rc) {
      /* the store keeps the old ID: the next request reads the group back */
      fail_wait(q, w, store_error(rc), "");
      drop_group(g, gr, store_error(rc), q);
    } else {
      answer_join(q, gr, mb, was_leader ? old : gr->leader, w);
    }
    free(old);
    return;
  }
  free(old);
  if (gr->state != KG_PREPARING)
    prepare_rebalance(gr, now_ms, q);
  mb->jwait = w;
  maybe_complete_join(g, gr, now_ms, q);
}

static void join_locked(tarn__kgroups *g, const tarn__kjoin_req *r, int64_t now_ms,
                        tarn__kg_wait *w, queue *q) {
  const char *mid = r->member_id ? r->member_id : "";
  const char *iid = r->group_instance_id;
  if (!r->group_id || !*r->group_id)
    return fail_wait(q, w, TARN__KG_INVALID_GROUP_ID, mid);
  if (r->session_timeout_ms < g->opt.min_session_ms ||
      r->session_timeout_ms > g->opt.max_session_ms)
    return fail_wait(q, w, TARN__KG_INVALID_SESSION_TIMEOUT, mid);
  tarn__kg_group *gr;
  int rc = find_group(g, r->group_id, now_ms, 1, q, &gr);
  if (rc)
    return fail_wait(q, w, TARN__KG_COORDINATOR_NOT_AVAILABLE, mid);
  if (gr->type == KG_CONSUMER) {
    /* KIP-848: a consumer group with members is not joined by the classic
     * protocol; an empty one becomes classic */
    if (gr->cmembers)
      return fail_wait(q, w, TARN__KG_INCONSISTENT_GROUP_PROTOCOL, mid);
    gr->type = KG_CLASSIC;
    tarn__kc_topics_free(gr->ctopics, gr->n_ctopics);
    gr->ctopics = NULL, gr->n_ctopics = 0;
  }
  tarn__kg_member *mb = NULL;
  int16_t e = 0;
  if (*mid && iid)
    e = check_member(gr, mid, iid, &mb);
  else if (*mid && !(mb = find_member(gr, mid)))
    e = TARN__KG_UNKNOWN_MEMBER_ID;
  if (e)
    return fail_wait(q, w, e, mid);
  tarn__kg_member *old = !*mid && iid ? find_instance(gr, iid) : NULL;
  if (!supports(gr, mb ? mb : old, r->protocol_type, r->protocols, r->n_protocols))
    return fail_wait(q, w, TARN__KG_INCONSISTENT_GROUP_PROTOCOL, mid);
  if (old)
    return replace_static(g, gr, old, r, now_ms, w, q);
  int32_t rebalance = rebalance_of(r);
  int added = 0;
  if (!mb) {
    /* Kafka's member IDs: a static member's starts with its instance ID */
    char *id = new_member_id(iid ? iid : r->client_id ? r->client_id : "");
    if (!id || !(mb = new_member(r, id, now_ms)))
      return fail_wait(q, w, TARN__KG_UNKNOWN_SERVER_ERROR, mid);
    mb->session_ms = r->session_timeout_ms, mb->rebalance_ms = rebalance;
    tarn__kg_member **tail = &gr->members;
    while (*tail)
      tail = &(*tail)->next;
    *tail = mb;
    /* a static member is known by its instance ID: no second round */
    if (r->version >= 4 && !iid) {
      /* KIP-394: the member comes back with its ID before it counts */
      mb->pending = 1;
      return fail_wait(q, w, TARN__KG_MEMBER_ID_REQUIRED, mb->id);
    }
    added = 1;
  } else {
    int changed = !same_protocols(mb, r);
    if (changed && set_protocols(mb, r))
      return fail_wait(q, w, TARN__KG_UNKNOWN_SERVER_ERROR, mid);
    mb->session_ms = r->session_timeout_ms, mb->rebalance_ms = rebalance;
    mb->last_seen = now_ms;
    if (mb->pending)
      mb->pending = 0, added = 1;
    else if (!changed && (gr->state == KG_COMPLETING ||
                          (gr->state == KG_STABLE && strcmp(gr->leader, mb->id)))) {
      /* a repeated join of this generation: its answer again */
      return answer_join(q, gr, mb, gr->leader, w);
    }
  }
  if (!gr->protocol_type || n_members(gr) == 1) {
    free(gr->protocol_type);
    if (!(gr->protocol_type = strdup(r->protocol_type)))
      return fail_wait(q, w, TARN__KG_UNKNOWN_SERVER_ERROR, mid);
  }
  if (gr->state != KG_PREPARING)
    prepare_rebalance(gr, now_ms, q);
  else if (rebalance > 0 && now_ms + rebalance > gr->deadline && added)
    gr->deadline = now_ms + rebalance;
  if (mb->jwait) /* the member's earlier JoinGroup is replaced by this one */
    fail_wait(q, mb->jwait, TARN__KG_REBALANCE_IN_PROGRESS, mb->id);
  mb->jwait = w;
  maybe_complete_join(g, gr, now_ms, q);
}

/* ---- the API --------------------------------------------------------------- */

int tarn__kgroups_open(tarn_meta *m, const tarn__kgroups_options *opt, tarn__kgroups **out) {
  tarn__kgroups *g = calloc(1, sizeof *g);
  if (!g)
    return tarn__err(TARN_ENOMEM, "kafka groups: out of memory");
  g->m = m;
  g->opt.min_session_ms = 6000, g->opt.max_session_ms = 1800000;
  if (opt && opt->min_session_ms > 0)
    g->opt.min_session_ms = opt->min_session_ms;
  if (opt && opt->max_session_ms > 0)
    g->opt.max_session_ms = opt->max_session_ms;
  g->opt.consumer_heartbeat_ms =
      opt && opt->consumer_heartbeat_ms > 0 ? opt->consumer_heartbeat_ms : 5000;
  g->opt.consumer_session_ms =
      opt && opt->consumer_session_ms > 0 ? opt->consumer_session_ms : 45000;
  g->locked_q.head = NULL, g->locked_q.tail = &g->locked_q.head;
  pthread_mutex_init(&g->mu, NULL);
  *out = g;
  return 0;
}

void tarn__kgroups_close(tarn__kgroups *g) {
  if (!g)
    return;
  queue q = {NULL, &q.head};
  pthread_mutex_lock(&g->mu);
  while (g->groups)
    drop_group(g, g->groups, TARN__KG_NOT_COORDINATOR, &q);
  pthread_mutex_unlock(&g->mu);
  run(&q);
  pthread_mutex_destroy(&g->mu);
  free(g);
}

void tarn__kgroups_join(tarn__kgroups *g, const tarn__kjoin_req *r, int64_t now_ms,
                        tarn__kjoin_cb cb, void *arg) {
  tarn__kg_wait *w = calloc(1, sizeof *w);
  if (!w) {
    tarn__kjoin_resp e = {TARN__KG_UNKNOWN_SERVER_ERROR,    -1,   NULL, NULL, "",
                          r->member_id ? r->member_id : "", NULL, 0};
    cb(arg, &e);
    return;
  }
  w->kind = WAIT_JOIN, w->jcb = cb, w->arg = arg;
  queue q = {NULL, &q.head};
  pthread_mutex_lock(&g->mu);
  join_locked(g, r, now_ms, w, &q);
  pthread_mutex_unlock(&g->mu);
  run(&q);
}

/* Finds the member of a request naming (group, generation, member,
 * instance): the Kafka error when there is none, it is fenced, or the group
 * is elsewhere. */
static int16_t member_of(tarn__kgroups *g, const char *group_id, int32_t generation,
                         const char *member_id, const char *instance_id, int64_t now_ms, queue *q,
                         tarn__kg_group **gr, tarn__kg_member **mb) {
  *mb = NULL;
  if (!group_id || !*group_id)
    return TARN__KG_INVALID_GROUP_ID;
  if (find_group(g, group_id, now_ms, 0, q, gr))
    return TARN__KG_COORDINATOR_NOT_AVAILABLE;
  if (!*gr)
    return TARN__KG_UNKNOWN_MEMBER_ID;
  int16_t e = check_member(*gr, member_id, instance_id, mb);
  if (e)
    return e;
  if (generation != (*gr)->generation)
    return TARN__KG_ILLEGAL_GENERATION;
  return 0;
}

static void sync_locked(tarn__kgroups *g, const char *group_id, int32_t generation,
                        const char *member_id, const char *instance_id,
                        const tarn__ksync_assignment *a, size_t n, int64_t now_ms, tarn__kg_wait *w,
                        queue *q) {
  tarn__kg_group *gr;
  tarn__kg_member *mb;
  int16_t e = member_of(g, group_id, generation, member_id, instance_id, now_ms, q, &gr, &mb);
  if (!e && gr->state == KG_PREPARING)
    e = TARN__KG_REBALANCE_IN_PROGRESS;
  if (!e && gr->state == KG_EMPTY)
    e = TARN__KG_UNKNOWN_MEMBER_ID;
  if (e)
    return fail_wait(q, w, e, NULL);
  mb->last_seen = now_ms;
  mb->synced = 1;
  if (gr->state == KG_STABLE)
    return answer_sync(q, mb, w);
  if (mb->swait)
    fail_wait(q, mb->swait, TARN__KG_REBALANCE_IN_PROGRESS, NULL);
  mb->swait = w;
  if (strcmp(gr->leader, mb->id))
    return;
  /* the leader's assignments: every member gets its own (none: empty) */
  for (tarn__kg_member *m = gr->members; m; m = m->next) {
    free(m->assignment), m->assignment = NULL, m->assignment_len = 0;
    for (size_t i = 0; i < n; i++)
      if (a[i].member_id && !strcmp(a[i].member_id, m->id)) {
        int fail = 0;
        m->assignment = dup_bytes(a[i].assignment, a[i].len, &fail);
        m->assignment_len = fail ? 0 : a[i].len;
        if (fail)
          return drop_group(g, gr, TARN__KG_UNKNOWN_SERVER_ERROR, q);
      }
  }
  gr->assigned = 1;
  int rc = tarn__kg_save(g->m, gr);
  if (rc)
    return drop_group(g, gr, store_error(rc), q);
  gr->state = KG_STABLE;
  for (tarn__kg_member *m = gr->members; m; m = m->next)
    if (m->swait) {
      answer_sync(q, m, m->swait);
      m->swait = NULL;
    }
}

void tarn__kgroups_sync(tarn__kgroups *g, const char *group_id, int32_t generation,
                        const char *member_id, const char *instance_id,
                        const tarn__ksync_assignment *a, size_t n, int64_t now_ms,
                        tarn__ksync_cb cb, void *arg) {
  tarn__kg_wait *w = calloc(1, sizeof *w);
  if (!w) {
    cb(arg, TARN__KG_UNKNOWN_SERVER_ERROR, NULL, 0);
    return;
  }
  w->kind = WAIT_SYNC, w->scb = cb, w->arg = arg;
  queue q = {NULL, &q.head};
  pthread_mutex_lock(&g->mu);
  sync_locked(g, group_id, generation, member_id, instance_id, a, n, now_ms, w, &q);
  pthread_mutex_unlock(&g->mu);
  run(&q);
}

int16_t tarn__kgroups_heartbeat(tarn__kgroups *g, const char *group_id, int32_t generation,
                                const char *member_id, const char *instance_id, int64_t now_ms) {
  queue q = {NULL, &q.head};
  tarn__kg_group *gr;
  tarn__kg_member *mb;
  pthread_mutex_lock(&g->mu);
  int16_t e = member_of(g, group_id, generation, member_id, instance_id, now_ms, &q, &gr, &mb);
  if (!e) {
    mb->last_seen = now_ms;
    if (gr->state == KG_PREPARING)
      e = TARN__KG_REBALANCE_IN_PROGRESS;
    else if (gr->state == KG_EMPTY)
      e = TARN__KG_UNKNOWN_MEMBER_ID;
  }
  pthread_mutex_unlock(&g->mu);
  run(&q);
  return e;
}

static int16_t leave_locked(tarn__kgroups *g, const char *group_id, const char *member_id,
                            const char *instance_id, int64_t now_ms, queue *q) {
  tarn__kg_group *gr = NULL;
  tarn__kg_member *mb;
  if (member_id && *member_id) {
    int16_t e = member_of(g, group_id, 0, member_id, instance_id, now_ms, q, &gr, &mb);
    if (e == TARN__KG_UNKNOWN_MEMBER_ID && gr && !instance_id &&
        (mb = find_member(gr, member_id)) && mb->pending)
      e = 0;                                   /* handed an ID, not joined yet: Kafka forgets it */
    if (e && e != TARN__KG_ILLEGAL_GENERATION) /* a leave names no generation */
      return e;
  } else {
    /* KIP-345: a static member removed by its instance ID alone (tools
     * remove a member that will not come back without waiting for its
     * session to expire) */
    if (!group_id || !*group_id)
      return TARN__KG_INVALID_GROUP_ID;
    if (find_group(g, group_id, now_ms, 0, q, &gr))
      return TARN__KG_COORDINATOR_NOT_AVAILABLE;
    if (!gr || !instance_id || !(mb = find_instance(gr, instance_id)))
      return TARN__KG_UNKNOWN_MEMBER_ID;
  }
  member_gone(g, gr, mb, now_ms, q);
  return 0;
}

int16_t tarn__kgroups_leave(tarn__kgroups *g, const char *group_id, const char *member_id,
                            const char *instance_id, int64_t now_ms) {
  queue q = {NULL, &q.head};
  pthread_mutex_lock(&g->mu);
  int16_t e = leave_locked(g, group_id, member_id, instance_id, now_ms, &q);
  pthread_mutex_unlock(&g->mu);
  run(&q);
  return e;
}

void tarn__kgroups_tick(tarn__kgroups *g, int64_t now_ms) {
  queue q = {NULL, &q.head};
  pthread_mutex_lock(&g->mu);
  for (tarn__kg_group *gr = g->groups, *gnx; gr; gr = gnx) {
    gnx = gr->next;
    if (gr->type == KG_CONSUMER) {
      /* nothing waits in a consumer group: dropping one queues no answer */
      tarn__kc_tick(g, gr, now_ms);
      continue;
    }
    int again = 1;
    while (again) {
      again = 0;
      for (tarn__kg_member *m = gr->members; m; m = m->next) {
        int expired = !m->jwait && !m->swait && now_ms - m->last_seen > m->session_ms;
        /* a member that has not sent SyncGroup by the end of the sync phase */
        int unsynced =
            gr->state == KG_COMPLETING && !m->pending && !m->synced && now_ms >= gr->deadline;
        if (expired || unsynced) {
          member_gone(g, gr, m, now_ms, &q);
          again = 1;
          break;
        }
      }
      /* member_gone may have dropped the group (a failed write) */
      tarn__kg_group *still = g->groups;
      while (still && still != gr)
        still = still->next;
      if (!still)
        break;
    }
    tarn__kg_group *still = g->groups;
    while (still && still != gr)
      still = still->next;
    if (still)
      maybe_complete_join(g, gr, now_ms, &q);
  }
  pthread_mutex_unlock(&g->mu);
  run(&q);
}

void tarn__kgroups_forget(tarn__kgroups *g, const char *group_id) {
  queue q = {NULL, &q.head};
  pthread_mutex_lock(&g->mu);
  for (tarn__kg_group *gr = g->groups; gr; gr = gr->next)
    if (!strcmp(gr->id, group_id)) {
      drop_group(g, gr, TARN__KG_NOT_COORDINATOR, &q);
      break;
    }
  pthread_mutex_unlock(&g->mu);
  run(&q);
}

/* ---- what cgroup.c shares (group_internal.h) --------------------------------- */

void tarn__kg_lock(tarn__kgroups *g) { pthread_mutex_lock(&g->mu); }

void tarn__kg_unlock(tarn__kgroups *g) {
  queue q = g->locked_q;
  if (!q.head)
    q.tail = &q.head;
  g->locked_q.head = NULL, g->locked_q.tail = &g->locked_q.head;
  pthread_mutex_unlock(&g->mu);
  run(&q);
}

int tarn__kg_find(tarn__kgroups *g, const char *id, int64_t now_ms, int create,
                  tarn__kg_group **out) {
  return find_group(g, id, now_ms, create, &g->locked_q, out);
}

void tarn__kg_drop(tarn__kgroups *g, tarn__kg_group *gr, int16_t error) {
  drop_group(g, gr, error, &g->locked_q);
}

tarn_meta *tarn__kg_meta(tarn__kgroups *g) { return g->m; }

const tarn__kgroups_options *tarn__kg_options(tarn__kgroups *g) { return &g->opt; }

int tarn__kg_classic_busy(const tarn__kg_group *gr) {
  return gr->members != NULL || gr->state != KG_EMPTY;
}

/* ---- offsets --------------------------------------------------------------- */

static int16_t commit_locked(tarn__kgroups *g, const char *group_id, int32_t generation,
                             const char *member_id, const char *instance_id, tarn__koffset *parts,
                             size_t n, int64_t now_ms, queue *q) {
  if (!group_id || !*group_id)
    return TARN__KG_INVALID_GROUP_ID;
  tarn__kg_group *gr;
  if (find_group(g, group_id, now_ms, 0, q, &gr))
    return TARN__KG_COORDINATOR_NOT_AVAILABLE;
  int64_t version = gr ? gr->version : 0;
  if (!gr || gr->state == KG_EMPTY) {
    /* a plain commit: the group keeps only offsets */
    if (generation >= 0)
      return gr && ((member_id && *member_id) || instance_id) ? TARN__KG_UNKNOWN_MEMBER_ID
                                                              : TARN__KG_ILLEGAL_GENERATION;
  } else if (gr->type == KG_CONSUMER) {
    /* KIP-848: the member commits with its member epoch as the generation
     * (tarn takes it from OffsetCommit v1+, Kafka from v9 only: docs) */
    int16_t e = tarn__kc_check_commit(gr, member_id, generation, now_ms);
    if (e)
      return e;
  } else {
    tarn__kg_member *mb;
    int16_t e = check_member(gr, member_id, instance_id, &mb);
    /* a fenced static member is told so first (Kafka checks the member
     * before the state) */
    if (e == TARN__KG_FENCED_INSTANCE_ID)
      return e;
    if (gr->state == KG_COMPLETING)
      return TARN__KG_REBALANCE_IN_PROGRESS;
    if (e)
      return e;
    if (generation != gr->generation)
      return TARN__KG_ILLEGAL_GENERATION;
    mb->last_seen = now_ms;
  }
  int lost = 0;
  for (size_t i = 0; i < n; i++) {
    tarn__koffset *o = &parts[i];
    if (o->metadata && strlen(o->metadata) > TARN__KG_OFFSET_METADATA_MAX) {
      o->error = TARN__KG_OFFSET_METADATA_TOO_LARGE;
      continue;
    }
    /* the commit time on the wall clock: the expiry on any node reads it */
    int rc =
        lost ? TARN_EGUARD : tarn__kg_put_offset(g->m, group_id, version, 1, o, tarn__now_ms());
    o->error = rc ? store_error(rc) : TARN__KG_NONE;
    lost |= rc == TARN_EGUARD;
  }
  if (lost && gr)
    drop_group(g, gr, TARN__KG_NOT_COORDINATOR, q);
  return 0;
}

int16_t tarn__kgroups_commit(tarn__kgroups *g, const char *group_id, int32_t generation,
                             const char *member_id, const char *instance_id, tarn__koffset *parts,
                             size_t n, int64_t now_ms) {
  queue q = {NULL, &q.head};
  pthread_mutex_lock(&g->mu);
  int16_t e = commit_locked(g, group_id, generation, member_id, instance_id, parts, n, now_ms, &q);
  pthread_mutex_unlock(&g->mu);
  run(&q);
  for (size_t i = 0; e && i < n; i++)
    parts[i].error = e;
  return e;
}

int tarn__kgroups_fetch(tarn__kgroups *g, const char *group_id, tarn__koffset *parts, size_t n) {
  int last = 0, ok = 0;
  for (size_t i = 0; i < n; i++) {
    tarn__koffset *o = &parts[i];
    o->metadata = NULL;
    o->rc = tarn__kg_get_offset(g->m, group_id, o);
    o->error = o->rc ? TARN__KG_COORDINATOR_LOAD_IN_PROGRESS : TARN__KG_NONE;
    if (o->rc) {
      last = o->rc;
      o->offset = -1, o->leader_epoch = -1;
      free((char *)o->metadata);
      o->metadata = strdup("");
    } else {
      ok = 1;
    }
  }
  return ok || !n ? 0 : last;
}

int tarn__kgroups_fetch_all(tarn__kgroups *g, const char *group_id, tarn__koffset **out,
                            size_t *n) {
  return tarn__kg_scan_offsets(g->m, group_id, out, n);
}

void tarn__koffsets_free(tarn__koffset *parts, size_t n, int own) {
  for (size_t i = 0; parts && i < n; i++) {
    free((char *)parts[i].metadata);
    parts[i].metadata = NULL;
    if (own)
      free((char *)parts[i].topic);
  }
  if (own)
    free(parts);
}

/* ---- deleting (issue 37) ----------------------------------------------------- */

static int16_t delete_locked(tarn__kgroups *g, const char *group_id, int64_t now_ms, queue *q) {
  tarn__kg_group *gr;
  if (find_group(g, group_id, now_ms, 0, q, &gr))
    return TARN__KG_COORDINATOR_NOT_AVAILABLE;
  if (gr && (gr->state != KG_EMPTY || n_members(gr)) &&
      !TARN__PLANTED(TARN__BUG_KGROUP_DELETES_NONEMPTY))
    return TARN__KG_NON_EMPTY_GROUP;
  int had_record = gr && gr->version > 0;
  /* the record first, at the version seen Empty: a member joining through
   * another node meanwhile makes this fail, and once it is gone every commit
   * guarded on it fails; then the offsets, guarded on its absence */
  int rc = had_record ? tarn__kg_delete(g->m, group_id, gr->version) : 0;
  size_t count = 0;
  if (!rc)
    rc = tarn__kg_delete_offsets(g->m, group_id, &count);
  if (gr)
    drop_group(g, gr, TARN__KG_NOT_COORDINATOR, q);
  if (rc == TARN_ENOTFOUND)
    rc = TARN_ECONFLICT;
  if (rc)
    return store_error(rc);
  return had_record || count ? TARN__KG_NONE : TARN__KG_GROUP_ID_NOT_FOUND;
}

int16_t tarn__kgroups_delete(tarn__kgroups *g, const char *group_id, int64_t now_ms) {
  /* Kafka takes "" as a group ID here; tarn never creates that group */
  if (!group_id || !*group_id)
    return group_id ? TARN__KG_GROUP_ID_NOT_FOUND : TARN__KG_INVALID_GROUP_ID;
  queue q = {NULL, &q.head};
  pthread_mutex_lock(&g->mu);
  int16_t e = delete_locked(g, group_id, now_ms, &q);
  pthread_mutex_unlock(&g->mu);
  run(&q);
  return e;
}

/* Reads the topics of a ConsumerProtocolSubscription (its v0 prefix, which
 * every version starts with: version int16, topics [string]); 1 when topic
 * is among them, -1 when the bytes do not parse. */
static int subscribes(const uint8_t *p, size_t len, const char *topic) {
  size_t off = 6, tl = strlen(topic);
  if (!p || len < 6)
    return -1;
  int32_t n = (int32_t)((uint32_t)p[2] << 24 | (uint32_t)p[3] << 16 | (uint32_t)p[4] << 8 | p[5]);
  if (n < 0)
    return -1;
  int found = 0;
  for (int32_t i = 0; i < n; i++) {
    if (len - off < 2)
      return -1;
    int16_t sl = (int16_t)((uint16_t)p[off] << 8 | p[off + 1]);
    off += 2;
    if (sl < 0 || len - off < (size_t)sl)
      return -1;
    found |= (size_t)sl == tl && memcmp(p + off, topic, tl) == 0;
    off += (size_t)sl;
  }
  return found;
}

/* Kafka's ClassicGroup.isSubscribedToTopic for a group with members of
 * protocol type "consumer": a member's subscription for the chosen protocol
 * names the topic, or some subscription cannot be read (then every topic). */
static int subscribed(const tarn__kg_group *gr, const char *topic) {
  if (!gr->protocol)
    return 1;
  for (const tarn__kg_member *m = gr->members; m; m = m->next) {
    if (m->pending)
      continue;
    const tarn__kg_proto_copy *p = proto_of(m, gr->protocol);
    if (!p || subscribes(p->meta, p->len, topic) != 0)
      return 1;
  }
  return 0;
}

static int16_t delete_offsets_locked(tarn__kgroups *g, const char *group_id, tarn__koffset *parts,
                                     size_t n, int64_t now_ms, queue *q) {
  tarn__kg_group *gr;
  if (find_group(g, group_id, now_ms, 0, q, &gr))
    return TARN__KG_COORDINATOR_NOT_AVAILABLE;
  int active = gr && (gr->state != KG_EMPTY || n_members(gr));
  if (!gr || gr->version == 0) {
    int any = 0;
    if (!active && tarn__kg_has_offsets(g->m, group_id, &any))
      return TARN__KG_COORDINATOR_NOT_AVAILABLE;
    if (!active && !any)
      return TARN__KG_GROUP_ID_NOT_FOUND;
  }
  if (active && (!gr->protocol_type || strcmp(gr->protocol_type, "consumer")))
    return TARN__KG_NON_EMPTY_GROUP;
  int64_t version = gr ? gr->version : 0;
  int lost = 0;
  for (size_t i = 0; i < n; i++) {
    tarn__koffset *o = &parts[i];
    if (active && subscribed(gr, o->topic)) {
      o->error = TARN__KG_GROUP_SUBSCRIBED_TO_TOPIC;
      continue;
    }
    int rc = lost ? TARN_EGUARD
                  : tarn__kg_delete_offset(g->m, group_id, version, o->topic, o->partition);
    o->error = rc ? store_error(rc) : TARN__KG_NONE;
    lost |= rc == TARN_EGUARD;
  }
  if (lost && gr)
    drop_group(g, gr, TARN__KG_NOT_COORDINATOR, q);
  return 0;
}

int16_t tarn__kgroups_delete_offsets(tarn__kgroups *g, const char *group_id, tarn__koffset *parts,
                                     size_t n, int64_t now_ms) {
  if (!group_id || !*group_id)
    return TARN__KG_INVALID_GROUP_ID;
  queue q = {NULL, &q.head};
  pthread_mutex_lock(&g->mu);
  int16_t e = delete_offsets_locked(g, group_id, parts, n, now_ms, &q);
  pthread_mutex_unlock(&g->mu);
  run(&q);
  for (size_t i = 0; e && i < n; i++)
    parts[i].error = e;
  return e;
}

/* ---- expiry (issue 37 "Lifecycle") ------------------------------------------ */

/* When offset r of group gr (NULL: a group of plain commits, no record)
 * expires, Kafka's GroupMetadata.removeExpiredOffsets since 2.1 (KIP-211):
 * an Empty group of a protocol type, retention after it became Empty (its
 * state time; unknown: the commit's); a Stable "consumer" group, the offsets
 * of topics no member subscribes to, retention after their commit; plain
 * commits (no protocol type), retention after the commit; any other group
 * keeps them. INT64_MAX: never. */
static int64_t expires_at(const tarn__kg_group *gr, const tarn__kg_offrec *r, int64_t retention) {
  int active = gr && (gr->state != KG_EMPTY || n_members(gr));
  int typed = gr && gr->protocol_type && *gr->protocol_type;
  if (!active)
    return (typed && gr->state_ms > 0 ? gr->state_ms : r->commit_ms) + retention;
  if (gr->state == KG_STABLE && typed && !strcmp(gr->protocol_type, "consumer") &&
      !subscribed(gr, r->o.topic))
    return r->commit_ms + retention;
  return INT64_MAX;
}

/* The sweep of one group, under the lock: its expired offsets, and those
 * of topic incarnations no longer live, go by a Delete on the version read
 * guarded by the group record's version (or absence); an Empty group whose
 * last offset went goes too (Kafka: Dead). */
static int expire_locked(tarn__kgroups *g, const char *id, int64_t retention,
                         const tarn__kg_expiry *x, tarn__kg_expired *out, queue *q) {
  tarn__kg_group *gr;
  int rc = find_group(g, id, tarn__mono_ms(), 0, q, &gr);
  tarn__kg_offrec *v = NULL;
  size_t n = 0;
  rc = rc ? rc : tarn__kg_scan_offrecs(g->m, id, &v, &n);
  int64_t now = tarn__now_ms(), version = gr ? gr->version : 0;
  for (size_t i = 0; !rc && i < n; i++) {
    tarn__kg_offrec *r = &v[i];
    int live = x->live ? x->live(x->arg, r->o.topic, r->o.topic_id) : 1;
    if (live < 0) {
      rc = live;
      break;
    }
    if (live && r->commit_ms < 0) { /* format 1: counts from now */
      int e = tarn__kg_stamp_offset(g->m, r, now);
      rc = e == TARN_ECONFLICT || e == TARN_ENOTFOUND ? 0 : e;
      continue;
    }
    if (live && expires_at(gr, r, retention) > now)
      continue;
    int e = tarn__kg_expire_offset(g->m, id, version, r);
    if (e == 0)
      out->offsets++;
    else if (e == TARN_EGUARD) /* the group changed elsewhere: another pass */
      break;
    else if (e != TARN_ECONFLICT && e != TARN_ENOTFOUND)
      rc = e;
  }
  tarn__kg_offrecs_free(v, n);
  int any = 1;
  if (!rc && gr && version > 0 && gr->state == KG_EMPTY && !n_members(gr) &&
      !(rc = tarn__kg_has_offsets(g->m, id, &any)) && !any) {
    int e = tarn__kg_delete(g->m, id, version);
    if (e == 0)
      out->groups++;
    drop_group(g, gr, TARN__KG_NOT_COORDINATOR, q);
  }
  return rc;
}

static int by_str(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

int tarn__kgroups_expire(tarn__kgroups *g, int64_t retention_ms, const tarn__kg_expiry *x,
                         tarn__kg_expired *out) {
  memset(out, 0, sizeof *out);
  tarn__kglisted *rec;
  size_t nr, np;
  char **ids;
  int rc = tarn__kg_scan_groups(g->m, &rec, &nr);
  if (rc)
    return rc;
  if ((rc = tarn__kg_scan_offset_groups(g->m, &ids, &np))) {
    tarn__kglisted_free(rec, nr);
    return rc;
  }
  /* every group with a record or an offset, once */
  char **all = realloc(ids, (np + nr + 1) * sizeof *all);
  if (!all) {
    rc = tarn__err(TARN_ENOMEM, "kafka groups: out of memory");
    all = ids;
  }
  size_t n = np;
  for (size_t i = 0; !rc && i < nr; i++)
    all[n++] = rec[i].group_id, rec[i].group_id = NULL;
  tarn__kglisted_free(rec, nr);
  if (!rc)
    qsort(all, n, sizeof *all, by_str);
  for (size_t i = 0; !rc && i < n; i++) {
    if ((i && !strcmp(all[i], all[i - 1])) || (x->mine && x->mine(x->arg, all[i]) != 1))
      continue;
    queue q = {NULL, &q.head};
    pthread_mutex_lock(&g->mu);
    int e = expire_locked(g, all[i], retention_ms, x, out, &q);
    pthread_mutex_unlock(&g->mu);
    run(&q);
    rc = rc ? rc : e;
  }
  for (size_t i = 0; i < n; i++)
    free(all[i]);
  free(all);
  return rc;
}

/* ---- describing ------------------------------------------------------------ */

void tarn__kgroups_describe(tarn__kgroups *g, const char *group_id, int64_t now_ms,
                            tarn__kgdesc *d) {
  memset(d, 0, sizeof *d);
  queue q = {NULL, &q.head};
  pthread_mutex_lock(&g->mu);
  tarn__kg_group *gr = NULL;
  int fail = 0;
  if (!group_id || !*group_id)
    d->error = TARN__KG_INVALID_GROUP_ID;
  else if (find_group(g, group_id, now_ms, 0, &q, &gr))
    d->error = TARN__KG_COORDINATOR_NOT_AVAILABLE;
  int any = 0;
  /* a group of plain commits (no member ever joined) is Kafka's Empty group
   * of protocol type "" until its offsets are gone (issue 37) */
  if (!gr && !d->error && tarn__kg_has_offsets(g->m, group_id, &any))
    d->error = TARN__KG_COORDINATOR_NOT_AVAILABLE;
  d->state = gr ? state_names[gr->state] : any ? "Empty" : "Dead";
  d->group_id = strdup(group_id ? group_id : "");
  d->protocol_type = strdup(gr && gr->protocol_type ? gr->protocol_type : "");
  d->protocol = strdup(gr && gr->protocol && gr->state != KG_PREPARING ? gr->protocol : "");
  fail = !d->group_id || !d->protocol_type || !d->protocol;
  size_t n = gr ? n_members(gr) : 0;
  if (!fail && n && !(d->members = calloc(n, sizeof *d->members)))
    fail = 1;
  for (tarn__kg_member *m = gr ? gr->members : NULL; !fail && m; m = m->next) {
    if (m->pending)
      continue;
    tarn__kgdesc_member *o = &d->members[d->n_members++];
    const tarn__kg_proto_copy *p = proto_of(m, gr->protocol);
    o->member_id = strdup(m->id);
    o->instance_id = dup_or_null(m->instance_id);
    o->client_id = strdup(m->client_id ? m->client_id : "");
    o->client_host = strdup(m->client_host ? m->client_host : "");
    fail = !o->member_id || !o->client_id || !o->client_host || (m->instance_id && !o->instance_id);
    o->meta_len = p ? p->len : 0;
    o->meta = p ? dup_bytes(p->meta, p->len, &fail) : NULL;
    o->assignment_len = m->assignment_len;
    o->assignment = dup_bytes(m->assignment, m->assignment_len, &fail);
  }
  pthread_mutex_unlock(&g->mu);
  run(&q);
  if (fail)
    d->error = TARN__KG_UNKNOWN_SERVER_ERROR;
}

void tarn__kgdesc_free(tarn__kgdesc *d) {
  for (size_t i = 0; i < d->n_members; i++) {
    tarn__kgdesc_member *o = &d->members[i];
    free(o->member_id), free(o->instance_id), free(o->client_id), free(o->client_host);
    free(o->meta);
    free(o->assignment);
  }
  free(d->members), free(d->group_id), free(d->protocol_type), free(d->protocol);
  memset(d, 0, sizeof *d);
}

static int by_id(const void *a, const void *b) {
  return strcmp(((const tarn__kglisted *)a)->group_id, ((const tarn__kglisted *)b)->group_id);
}

int tarn__kgroups_list(tarn__kgroups *g, tarn__kglisted **out, size_t *n) {
  tarn__kglisted *v;
  size_t k;
  char **plain = NULL;
  size_t np = 0;
  int rc = tarn__kg_scan_groups(g->m, &v, &k);
  if (!rc && (rc = tarn__kg_scan_offset_groups(g->m, &plain, &np)))
    tarn__kglisted_free(v, k);
  if (rc)
    return rc;
  pthread_mutex_lock(&g->mu);
  size_t extra = np;
  for (tarn__kg_group *gr = g->groups; gr; gr = gr->next)
    extra++;
  tarn__kglisted *nv = realloc(v, (k + extra + 1) * sizeof *v);
  if (!nv)
    rc = tarn__err(TARN_ENOMEM, "kafka groups: out of memory");
  else
    v = nv;
  /* what this node holds is newer than the record for the groups it serves,
   * and groups not written yet (a first join phase) are only here */
  for (tarn__kg_group *gr = g->groups; !rc && gr; gr = gr->next) {
    size_t i = 0;
    while (i < k && strcmp(v[i].group_id, gr->id))
      i++;
    if (i == k) {
      if (!gr->members)
        continue;
      v[k].group_id = strdup(gr->id);
      v[k].protocol_type = strdup(gr->protocol_type ? gr->protocol_type : "");
      v[k].type = "classic";
      k++;
      if (!v[k - 1].group_id || !v[k - 1].protocol_type)
        rc = tarn__err(TARN_ENOMEM, "kafka groups: out of memory");
    }
    v[i].state = state_names[gr->state];
    v[i].type = gr->type == KG_CONSUMER ? "consumer" : "classic";
  }
  /* groups of plain commits: Empty, protocol type "" (issue 37) */
  for (size_t j = 0; !rc && j < np; j++) {
    size_t i = 0;
    while (i < k && strcmp(v[i].group_id, plain[j]))
      i++;
    if (i < k)
      continue;
    v[k].group_id = plain[j];
    plain[j] = NULL;
    v[k].protocol_type = strdup("");
    v[k].type = "classic";
    v[k++].state = "Empty";
    if (!v[k - 1].protocol_type)
      rc = tarn__err(TARN_ENOMEM, "kafka groups: out of memory");
  }
  pthread_mutex_unlock(&g->mu);
  for (size_t j = 0; j < np; j++)
    free(plain[j]);
  free(plain);
  if (rc) {
    tarn__kglisted_free(v, k);
    return rc;
  }
  qsort(v, k, sizeof *v, by_id);
  *out = v, *n = k;
  return 0;
}

void tarn__kglisted_free(tarn__kglisted *v, size_t n) {
  for (size_t i = 0; v && i < n; i++)
    free(v[i].group_id), free(v[i].protocol_type);
  free(v);
}
