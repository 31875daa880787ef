/* OffsetFetch (key 9), versions 0-5 (group.h): -1 for a partition without a
 * commit; from v2 a null topic list asks for every committed partition. When
 * the store cannot be read each partition gets COORDINATOR_LOAD_IN_PROGRESS
 * (v1 has no request-wide error, and a client told -1 would reset its
 * position), and from v2 the request-wide error too. */
#include "kafka/api_group.h"

#include <stdlib.h>
#include <string.h>

#include "kafka/group.h"
#include "tarn/error.h"
#include "tarn/kafka_topics.h"

/* Issue 37 "Lifecycle": 1 when o was committed on another incarnation of
 * its topic than the live one (or there is none): a topic deleted and
 * created again under its name starts without the old offsets, even before
 * the deletion's removal of them is done. An offset without an ID (format 1)
 * is the live topic's, as before. The cache may be a second old: a
 * mismatch is checked against the catalog before an offset is hidden. <0:
 * the catalog could not be read. */
static int stale(tarn__knode *node, const tarn__koffset *o) {
  static const uint8_t none[16];
  if (o->offset < 0 || !memcmp(o->topic_id, none, sizeof none))
    return 0;
  size_t len = strlen(o->topic);
  for (int fresh = 0; fresh < 2; fresh++) {
    if (fresh)
      tarn__knode_topic_forget(node, o->topic, len);
    tarn_kafka_topic t;
    int rc = tarn__knode_topic(node, o->topic, len, &t);
    if (rc && rc != TARN_ENOTFOUND)
      return rc;
    int same = !rc && !memcmp(t.uuid, o->topic_id, sizeof t.uuid);
    if (!rc)
      tarn_kafka_topic_free(&t);
    if (same)
      return 0;
  }
  return 1;
}

/* Hides the offsets of other incarnations (stale): -1 as for no commit, or
 * with drop, out of the list (OffsetFetch of every partition). */
static void hide_stale(tarn__knode *node, tarn__koffset *o, size_t *n, int drop) {
  size_t k = 0;
  for (size_t i = 0; i < *n; i++) {
    int s = o[i].error ? 0 : stale(node, &o[i]);
    if (s < 0) {
      o[i].error = TARN__KG_COORDINATOR_LOAD_IN_PROGRESS, o[i].offset = -1;
    } else if (s && drop) {
      free((char *)o[i].metadata), free((char *)o[i].topic);
      continue;
    } else if (s) {
      o[i].offset = -1, o[i].leader_epoch = -1;
      free((char *)o[i].metadata);
      o[i].metadata = NULL; /* answered "" */
    }
    o[k++] = o[i];
  }
  *n = k;
}

static void answer(tarn__kreq *req, tarn__koffset *o, size_t n, int16_t e) {
  tarn__k_offset_fetch_resp r;
  tarn__kmsg_init(TARN__KAPI_OFFSET_FETCH, 1, &r);
  tarn__k_offset_fetch_offset_fetch_response_topic *rt =
      tarn__karena_alloc(req->arena, (n ? n : 1) * sizeof *rt);
  tarn__k_offset_fetch_offset_fetch_response_partition *rp =
      tarn__karena_alloc(req->arena, (n ? n : 1) * sizeof *rp);
  if (!rt || !rp) {
    tarn__kreq_close(req);
    return;
  }
  /* the partitions come grouped by topic: one response topic per run */
  size_t nt = 0;
  for (size_t i = 0; i < n; i++) {
    if (!nt || strcmp(o[i].topic, o[i - 1].topic)) {
      rt[nt].name = tarn__kg_kstr(o[i].topic);
      rt[nt].partitions.n = 0;
      rt[nt++].partitions.v = &rp[i];
    }
    rt[nt - 1].partitions.n++;
    rp[i].partition_index = o[i].partition;
    rp[i].committed_offset = e ? -1 : o[i].offset;
    rp[i].committed_leader_epoch = e ? -1 : o[i].leader_epoch;
    rp[i].metadata = tarn__kg_kstr(!e && o[i].metadata ? o[i].metadata : "");
    rp[i].error_code = e ? e : o[i].error;
  }
  r.topics.n = (int32_t)nt;
  r.topics.v = rt;
  if (req->api_version >= 2) {
    r.error_code = e;
    for (size_t i = 0; !e && i < n; i++)
      if (o[i].error == TARN__KG_COORDINATOR_LOAD_IN_PROGRESS)
        r.error_code = o[i].error;
  }
  tarn__kreq_respond(req, &r);
}

void tarn__kapi_offset_fetch(tarn__knode *node, tarn__kreq *req) {
  tarn__k_offset_fetch_req b;
  if (tarn__kreq_body(req, &b))
    return;
  char *group = tarn__kg_cstr(req, b.group_id);
  int16_t e = group ? tarn__kg_check(node, group) : TARN__KG_INVALID_GROUP_ID;
  if (b.topics.n < 0) { /* every committed partition (v2+) */
    tarn__koffset *all = NULL;
    size_t n = 0;
    if (!e && tarn__kgroups_fetch_all(node->groups, group, &all, &n))
      e = TARN__KG_COORDINATOR_LOAD_IN_PROGRESS;
    if (!e)
      hide_stale(node, all, &n, 1);
    answer(req, all, n, e);
    tarn__koffsets_free(all, n, 1);
    return;
  }
  size_t nt = (size_t)b.topics.n, n = 0;
  for (size_t i = 0; i < nt; i++)
    n += b.topics.v[i].partition_indexes.n > 0 ? (size_t)b.topics.v[i].partition_indexes.n : 0;
  /* not in the arena: the response's completion frees that before the
   * metadata strings are freed */
  tarn__koffset *o = calloc(n ? n : 1, sizeof *o);
  if (!o) {
    tarn__kreq_close(req);
    return;
  }
  size_t k = 0;
  for (size_t i = 0; i < nt; i++) {
    char *topic = tarn__kg_cstr(req, b.topics.v[i].name);
    for (int32_t j = 0; j < b.topics.v[i].partition_indexes.n; j++, k++) {
      o[k].topic = topic ? topic : "";
      o[k].partition = b.topics.v[i].partition_indexes.v[j];
      if (!topic)
        e = e ? e : TARN__KG_INVALID_REQUEST;
    }
  }
  if (!e) {
    tarn__kgroups_fetch(node->groups, group, o, n);
    size_t all = n;
    hide_stale(node, o, &all, 0);
  }
  answer(req, o, n, e);
  if (!e)
    tarn__koffsets_free(o, n, 0);
  free(o);
}
