/* ConsumerGroupHeartbeat (key 68, versions 0-1) and ConsumerGroupDescribe
 * (key 69, version 0): KIP-848 consumer groups (issue 37; cgroup.c;
 * docs/kafka.md "Consumer groups (KIP-848)"). The coordinator is the node
 * the group's hash picks (api_group.c), as for the classic protocol. */
#include "kafka/api_group.h"

#include <stdio.h>
#include <string.h>

#include "kafka/group.h"
#include "tarn/error.h"
#include "tarn/kafka_topics.h"

static int resolve(void *arg, const char *topic, uint8_t id[16], int32_t *partitions) {
  tarn_kafka_topic t;
  int rc = tarn__knode_topic(arg, topic, strlen(topic), &t);
  if (rc)
    return rc;
  memcpy(id, t.uuid, 16);
  *partitions = (int32_t)t.partitions;
  tarn_kafka_topic_free(&t);
  return 0;
}

static void hb_refuse(tarn__kreq *req, int16_t e, const char *message) {
  tarn__k_consumer_group_heartbeat_resp r;
  tarn__kmsg_init(TARN__KAPI_CONSUMER_GROUP_HEARTBEAT, 1, &r);
  r.error_code = e;
  r.error_message = tarn__kg_kstr(message);
  r.member_epoch = -1;
  tarn__kreq_respond(req, &r);
}

void tarn__kapi_consumer_group_heartbeat(tarn__knode *node, tarn__kreq *req) {
  tarn__k_consumer_group_heartbeat_req b;
  if (tarn__kreq_body(req, &b))
    return;
  tarn__kc_hb_req q = {.member_epoch = b.member_epoch,
                       .rebalance_timeout_ms = b.rebalance_timeout_ms,
                       .client_id = req->client_id,
                       .version = req->api_version};
  q.group_id = tarn__kg_cstr(req, b.group_id);
  q.member_id = tarn__kg_cstr(req, b.member_id);
  if (!q.group_id || !q.member_id || tarn__kg_instance(req, b.instance_id, &q.instance_id) ||
      tarn__kg_instance(req, b.subscribed_topic_regex, &q.regex) ||
      tarn__kg_instance(req, b.server_assignor, &q.assignor))
    return hb_refuse(req, TARN__KG_INVALID_REQUEST, "a string holds a NUL");
  if (b.subscribed_topic_names.n >= 0) {
    size_t n = (size_t)b.subscribed_topic_names.n;
    const char **t = tarn__karena_alloc(req->arena, (n ? n : 1) * sizeof *t);
    if (!t) {
      tarn__kreq_close(req);
      return;
    }
    for (size_t i = 0; i < n; i++)
      if (!(t[i] = tarn__kg_cstr(req, b.subscribed_topic_names.v[i])))
        return hb_refuse(req, TARN__KG_INVALID_REQUEST, "a topic name holds a NUL");
    q.topics = t, q.n_topics = n;
  }
  if (b.topic_partitions.n >= 0) {
    size_t n = 0;
    for (int32_t i = 0; i < b.topic_partitions.n; i++)
      n += b.topic_partitions.v[i].partitions.n > 0 ? (size_t)b.topic_partitions.v[i].partitions.n
                                                    : 0;
    tarn__kc_tp *o = tarn__karena_alloc(req->arena, (n ? n : 1) * sizeof *o);
    if (!o) {
      tarn__kreq_close(req);
      return;
    }
    size_t k = 0;
    for (int32_t i = 0; i < b.topic_partitions.n; i++)
      for (int32_t j = 0; j < b.topic_partitions.v[i].partitions.n; j++, k++) {
        memcpy(o[k].id, b.topic_partitions.v[i].topic_id, 16);
        o[k].partition = b.topic_partitions.v[i].partitions.v[j];
      }
    q.owned = o, q.n_owned = n, q.has_owned = 1;
  }
  int16_t e = q.group_id && *q.group_id ? tarn__kg_check(node, q.group_id) : 0;
  if (e)
    return hb_refuse(req, e, NULL);
  /* Kafka names a client's host "/address" */
  char host[80];
  snprintf(host, sizeof host, "/%s", req->peer);
  char *colon = strrchr(host, ':');
  if (colon)
    *colon = 0;
  q.client_host = host;
  tarn__kc_hb_resp a;
  tarn__kgroups_cheartbeat(node->groups, &q, resolve, node, tarn__kg_now(), &a);
  tarn__k_consumer_group_heartbeat_resp r;
  tarn__kmsg_init(TARN__KAPI_CONSUMER_GROUP_HEARTBEAT, 1, &r);
  r.error_code = a.error;
  r.error_message = tarn__kg_kstr(a.message);
  r.member_epoch = a.member_epoch;
  r.heartbeat_interval_ms = a.heartbeat_ms;
  r.member_id = tarn__kg_kstr(a.member_id ? tarn__kg_cstr(req, tarn__kg_kstr(a.member_id)) : NULL);
  /* the assignment by topic: the set is sorted by topic ID */
  size_t nt = 0;
  for (size_t i = 0; i < a.assignment.n; i++)
    nt += !i || memcmp(a.assignment.v[i].id, a.assignment.v[i - 1].id, 16);
  tarn__k_consumer_group_heartbeat_assigned_topic_partitions *tp =
      tarn__karena_alloc(req->arena, (nt ? nt : 1) * sizeof *tp);
  int32_t *parts = tarn__karena_alloc(req->arena, (a.assignment.n ? a.assignment.n : 1) * 4);
  if (!tp || !parts) {
    tarn__kc_hb_resp_free(&a);
    tarn__kreq_close(req);
    return;
  }
  size_t k = 0;
  for (size_t i = 0; i < a.assignment.n; i++) {
    if (!i || memcmp(a.assignment.v[i].id, a.assignment.v[i - 1].id, 16)) {
      memcpy(tp[k].topic_id, a.assignment.v[i].id, 16);
      tp[k].partitions.n = 0, tp[k].partitions.v = &parts[i];
      k++;
    }
    parts[i] = a.assignment.v[i].partition;
    tp[k - 1].partitions.n++;
  }
  r.assigned_topic_partitions.n = (int32_t)nt;
  r.assigned_topic_partitions.v = tp;
  tarn__kc_hb_resp_free(&a);
  tarn__kreq_respond(req, &r);
}

/* A set as ConsumerGroupDescribe's topic partitions (with names). */
static int describe_set(tarn__kreq *req, const tarn__kc_desc *d, const tarn__kc_set *s,
                        tarn__k_consumer_group_describe_assignment_topic **out, int32_t *nout) {
  size_t nt = 0;
  for (size_t i = 0; i < s->n; i++)
    nt += !i || memcmp(s->v[i].id, s->v[i - 1].id, 16);
  tarn__k_consumer_group_describe_assignment_topic *tp =
      tarn__karena_alloc(req->arena, (nt ? nt : 1) * sizeof *tp);
  int32_t *parts = tarn__karena_alloc(req->arena, (s->n ? s->n : 1) * 4);
  if (!tp || !parts)
    return -1;
  size_t k = 0;
  for (size_t i = 0; i < s->n; i++) {
    if (!i || memcmp(s->v[i].id, s->v[i - 1].id, 16)) {
      memcpy(tp[k].topic_id, s->v[i].id, 16);
      tp[k].topic_name = tarn__kg_kstr("");
      for (size_t t = 0; t < d->n_topics; t++)
        if (!memcmp(d->topics[t].id, s->v[i].id, 16))
          tp[k].topic_name = tarn__kg_kstr(tarn__kg_cstr(req, tarn__kg_kstr(d->topics[t].name)));
      tp[k].partitions.n = 0, tp[k].partitions.v = &parts[i];
      k++;
    }
    parts[i] = s->v[i].partition;
    tp[k - 1].partitions.n++;
  }
  *out = tp, *nout = (int32_t)nt;
  return 0;
}

void tarn__kapi_consumer_group_describe(tarn__knode *node, tarn__kreq *req) {
  tarn__k_consumer_group_describe_req b;
  if (tarn__kreq_body(req, &b))
    return;
  tarn__k_consumer_group_describe_resp r;
  tarn__kmsg_init(TARN__KAPI_CONSUMER_GROUP_DESCRIBE, 1, &r);
  size_t ng = b.group_ids.n > 0 ? (size_t)b.group_ids.n : 0;
  tarn__k_consumer_group_describe_described_group *o =
      tarn__karena_alloc(req->arena, (ng ? ng : 1) * sizeof *o);
  if (!o) {
    tarn__kreq_close(req);
    return;
  }
  int fail = 0;
  for (size_t i = 0; !fail && i < ng; i++) {
    tarn__k_consumer_group_describe_described_group *g = &o[i];
    memset(g, 0, sizeof *g);
    g->authorized_operations = INT32_MIN;
    g->group_id = b.group_ids.v[i];
    g->error_message = tarn__kg_kstr(NULL);
    char *id = tarn__kg_cstr(req, b.group_ids.v[i]);
    tarn__kc_desc d;
    int16_t e = !id ? TARN__KG_INVALID_GROUP_ID : tarn__kg_check(node, id);
    if (!e)
      tarn__kgroups_cdescribe(node->groups, id, tarn__kg_now(), &d);
    else
      memset(&d, 0, sizeof d), d.state = "Dead", d.error = e;
    g->error_code = d.error;
    g->group_state = tarn__kg_kstr(d.state);
    g->group_epoch = d.group_epoch, g->assignment_epoch = d.assignment_epoch;
    g->assignor_name =
        tarn__kg_kstr(d.assignor ? tarn__kg_cstr(req, tarn__kg_kstr(d.assignor)) : "");
    g->members.n = (int32_t)d.n_members;
    g->members.v =
        tarn__karena_alloc(req->arena, (d.n_members ? d.n_members : 1) * sizeof *g->members.v);
    fail = !g->members.v;
    for (size_t j = 0; !fail && j < d.n_members; j++) {
      tarn__k_consumer_group_describe_member *m = &g->members.v[j];
      const tarn__kc_desc_member *s = &d.members[j];
      tarn__k_consumer_group_describe_assignment_topic *tt = NULL;
      memset(m, 0, sizeof *m);
      m->member_id = tarn__kg_kstr(tarn__kg_cstr(req, tarn__kg_kstr(s->member_id)));
      m->instance_id =
          tarn__kg_kstr(s->instance_id ? tarn__kg_cstr(req, tarn__kg_kstr(s->instance_id)) : NULL);
      m->rack_id = tarn__kg_kstr(NULL);
      m->member_epoch = s->epoch;
      m->client_id = tarn__kg_kstr(tarn__kg_cstr(req, tarn__kg_kstr(s->client_id)));
      m->client_host = tarn__kg_kstr(tarn__kg_cstr(req, tarn__kg_kstr(s->client_host)));
      m->subscribed_topic_names.n = (int32_t)s->n_topics;
      m->subscribed_topic_names.v =
          tarn__karena_alloc(req->arena, (s->n_topics ? s->n_topics : 1) * sizeof(tarn__kstr));
      fail = !m->subscribed_topic_names.v;
      for (size_t t = 0; !fail && t < s->n_topics; t++)
        m->subscribed_topic_names.v[t] =
            tarn__kg_kstr(tarn__kg_cstr(req, tarn__kg_kstr(s->topics[t])));
      m->subscribed_topic_regex = tarn__kg_kstr(NULL);
      fail = fail || describe_set(req, &d, &s->assigned, &m->assignment.v, &m->assignment.n) ||
             describe_set(req, &d, &s->target, &tt, &m->target_assignment.n);
      m->target_assignment.v =
          fail ? NULL
               : tarn__karena_alloc(req->arena,
                                    (m->target_assignment.n ? (size_t)m->target_assignment.n : 1) *
                                        sizeof *m->target_assignment.v);
      fail = fail || !m->target_assignment.v;
      for (int32_t t = 0; !fail && t < m->target_assignment.n; t++) {
        memcpy(m->target_assignment.v[t].topic_id, tt[t].topic_id, 16);
        m->target_assignment.v[t].topic_name = tt[t].topic_name;
        m->target_assignment.v[t].partitions.n = tt[t].partitions.n;
        m->target_assignment.v[t].partitions.v = tt[t].partitions.v;
      }
    }
    tarn__kc_desc_free(&d);
  }
  if (fail) {
    tarn__kreq_close(req);
    return;
  }
  r.groups.n = (int32_t)ng;
  r.groups.v = o;
  tarn__kreq_respond(req, &r);
}
