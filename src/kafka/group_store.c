/* A consumer group's records in the metadata store (partition
 * TARN__KG_PARTITION; docs/kafka.md "Groups and producers"):
 *   /groups/{group}                       the group: generation, protocol, leader, members
 *   /offsets/{group}/{topic}:{partition}  one committed offset
 * (that layout and the offset record's format 2 header are declared in
 * tarn/kafka_topics.h: a topic's deletion removes its offsets).
 * {group} is the escaped group ID, so every key of one kind has the same
 * number of segments and a group's offsets are one range. Each value starts
 * with a kind ("KG", "KO") and a format version, and carries the IDs it
 * belongs to, so a scan needs no key parsing. A group record of format 2
 * carries each member's group instance ID (KIP-345 static members, NULL for a
 * dynamic one); a group without static members is written in format 1, which
 * a node of an earlier build reads too, and a node that cannot read format 2
 * refuses the group (TARN_EVERSION) instead of taking static members for
 * dynamic ones. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kafka/group_internal.h"
#include "kafka/keyseg.h"
#include "tarn/buf.h"
#include "tarn/kafka_topics.h"
#include "tarn/meta.h"
#include "util/bytes.h"
#include "util/clock.h"
#include "util/error.h"
#include "util/planted.h"

#define PART TARN__KG_PARTITION
#define FORMAT 1
#define GROUP_FORMAT_STATIC 2
/* issue 37, KIP-848: a record with the group's type (KG_CONSUMER): group and
 * target epochs, subscribed topics, and per member its epochs, subscription
 * and partition sets. Written only for consumer groups (a classic group stays
 * in format 1 or 2); a build before it refuses the record (TARN_EVERSION). */
#define GROUP_FORMAT_TYPED 3
#define NULL_LEN 0xffffffffu

static char *group_key(const char *id) {
  char *k = malloc(strlen(id) * 3 + 16);
  if (!k)
    return NULL;
  memcpy(k, "/groups/", 8);
  tarn__kkey_escape(id, k + 8);
  return k;
}

/* The offsets range of a group ("{prefix}" up to "{prefix}\xff") or, with
 * topic, one partition's key. */
static char *offset_key(const char *id, const char *topic, int32_t partition) {
  size_t n = strlen(id) * 3 + (topic ? strlen(topic) : 0) + 40;
  char *k = malloc(n);
  if (!k)
    return NULL;
  memcpy(k, "/offsets/", 9);
  tarn__kkey_escape(id, k + 9);
  size_t l = strlen(k);
  if (topic)
    snprintf(k + l, n - l, "/%s:%010d", topic, (int)partition);
  else
    snprintf(k + l, n - l, "/");
  return k;
}

static int put_str(tarn_buf *b, const char *s) {
  if (!s)
    return tarn_buf_put_be32(b, NULL_LEN);
  size_t n = strlen(s);
  int rc = tarn_buf_put_be32(b, (uint32_t)n);
  return rc ? rc : tarn_buf_append(b, s, n);
}

static int put_bytes(tarn_buf *b, const uint8_t *p, size_t n) {
  int rc = tarn_buf_put_be32(b, (uint32_t)n);
  return rc || !n ? rc : tarn_buf_append(b, p, n);
}

static int rd_str(tarn__rd *r, char **out, const char *field) {
  uint32_t n;
  const uint8_t *p;
  int rc = tarn__rd_be32(r, &n, field);
  if (rc)
    return rc;
  *out = NULL;
  if (n == NULL_LEN)
    return 0;
  if ((rc = tarn__rd_bytes(r, n, &p, field)))
    return rc;
  if (memchr(p, 0, n))
    return tarn__corrupt(r->what, r->off - n, "%s holds a NUL", field);
  *out = malloc(n + 1);
  if (!*out)
    return tarn__err(TARN_ENOMEM, "kafka group record: out of memory");
  memcpy(*out, p, n);
  (*out)[n] = 0;
  return 0;
}

static int rd_bytes(tarn__rd *r, uint8_t **out, size_t *len, const char *field) {
  uint32_t n;
  const uint8_t *p;
  int rc = tarn__rd_be32(r, &n, field);
  if (rc || (rc = tarn__rd_bytes(r, n, &p, field)))
    return rc;
  *out = NULL;
  *len = n;
  if (!n)
    return 0;
  if (!(*out = malloc(n)))
    return tarn__err(TARN_ENOMEM, "kafka group record: out of memory");
  memcpy(*out, p, n);
  return 0;
}

/* Reads a record's header: formats FORMAT up to max; *format (may be NULL)
 * gets the record's. */
static int rd_head(tarn__rd *r, char kind, unsigned max, unsigned *format) {
  const uint8_t *h;
  int rc = tarn__rd_bytes(r, 3, &h, "header");
  if (rc)
    return rc;
  if (h[0] != 'K' || h[1] != (uint8_t)kind)
    return tarn__corrupt(r->what, 0, "not a %s record", r->what);
  if (h[2] < FORMAT || h[2] > max)
    return tarn__err(TARN_EVERSION, "%s: format %u, this build reads %u to %u", r->what, h[2],
                     FORMAT, max);
  if (format)
    *format = h[2];
  return 0;
}

static tarn__kg_proto_copy *chosen(const tarn__kg_group *gr, const tarn__kg_member *mb) {
  for (size_t i = 0; gr->protocol && i < mb->n_protos; i++)
    if (!strcmp(mb->protos[i].name, gr->protocol))
      return &mb->protos[i];
  return NULL;
}

static int put_set(tarn_buf *b, const tarn__kc_set *s) {
  int rc = tarn_buf_put_be32(b, (uint32_t)s->n);
  for (size_t i = 0; !rc && i < s->n; i++) {
    rc = tarn_buf_append(b, s->v[i].id, 16);
    rc = rc ? rc : tarn_buf_put_be32(b, (uint32_t)s->v[i].partition);
  }
  return rc;
}

static int encode_cgroup(const tarn__kg_group *gr, tarn_buf *b) {
  int rc = tarn_buf_append(b, "KG\x03", 3);
  rc = rc ? rc : tarn_buf_putc(b, KG_CONSUMER);
  rc = rc ? rc : tarn_buf_put_be32(b, (uint32_t)gr->group_epoch);
  rc = rc ? rc : tarn_buf_put_be32(b, (uint32_t)gr->target_epoch);
  rc = rc ? rc : put_str(b, gr->id);
  rc = rc ? rc : tarn_buf_put_be32(b, (uint32_t)gr->n_ctopics);
  for (size_t i = 0; !rc && i < gr->n_ctopics; i++) {
    rc = put_str(b, gr->ctopics[i].name);
    rc = rc ? rc : tarn_buf_append(b, gr->ctopics[i].id, 16);
    rc = rc ? rc : tarn_buf_put_be32(b, (uint32_t)gr->ctopics[i].partitions);
  }
  uint32_t n = 0;
  for (const tarn__kc_member *m = gr->cmembers; m; m = m->next)
    n++;
  rc = rc ? rc : tarn_buf_put_be32(b, n);
  for (const tarn__kc_member *m = gr->cmembers; !rc && m; m = m->next) {
    rc = put_str(b, m->id);
    rc = rc ? rc : put_str(b, m->instance_id);
    rc = rc ? rc : put_str(b, m->client_id);
    rc = rc ? rc : put_str(b, m->client_host);
    rc = rc ? rc : put_str(b, m->assignor);
    rc = rc ? rc : tarn_buf_put_be32(b, (uint32_t)m->epoch);
    rc = rc ? rc : tarn_buf_put_be32(b, (uint32_t)m->prev_epoch);
    rc = rc ? rc : tarn_buf_put_be32(b, (uint32_t)m->session_ms);
    rc = rc ? rc : tarn_buf_put_be32(b, (uint32_t)m->rebalance_ms);
    rc = rc ? rc : tarn_buf_put_be32(b, (uint32_t)m->n_topics);
    for (size_t i = 0; !rc && i < m->n_topics; i++)
      rc = put_str(b, m->topics[i]);
    rc = rc ? rc : put_set(b, &m->assigned);
    rc = rc ? rc : put_set(b, &m->revoking);
    rc = rc ? rc : put_set(b, &m->target);
  }
  return rc ? rc : tarn_buf_put_be64(b, (uint64_t)gr->state_ms);
}

static int rd_set(tarn__rd *r, tarn__kc_set *s) {
  uint32_t n;
  int rc = tarn__rd_be32(r, &n, "partition count");
  for (uint32_t i = 0; !rc && i < n; i++) {
    const uint8_t *id;
    uint32_t p;
    rc = tarn__rd_bytes(r, 16, &id, "topic id");
    rc = rc ? rc : tarn__rd_be32(r, &p, "partition");
    rc = rc ? rc : tarn__kc_set_add(s, id, (int32_t)p);
  }
  return rc;
}

static int decode_cmember(tarn__rd *r, int64_t now_ms, tarn__kc_member **out) {
  tarn__kc_member *m = calloc(1, sizeof *m);
  if (!m)
    return tarn__err(TARN_ENOMEM, "kafka group record: out of memory");
  uint32_t ep, pep, ses, reb, nt = 0;
  int rc = rd_str(r, &m->id, "member id");
  rc = rc ? rc : rd_str(r, &m->instance_id, "group instance id");
  rc = rc ? rc : rd_str(r, &m->client_id, "client id");
  rc = rc ? rc : rd_str(r, &m->client_host, "client host");
  rc = rc ? rc : rd_str(r, &m->assignor, "assignor");
  rc = rc ? rc : tarn__rd_be32(r, &ep, "member epoch");
  rc = rc ? rc : tarn__rd_be32(r, &pep, "previous epoch");
  rc = rc ? rc : tarn__rd_be32(r, &ses, "session timeout");
  rc = rc ? rc : tarn__rd_be32(r, &reb, "rebalance timeout");
  rc = rc ? rc : tarn__rd_be32(r, &nt, "topic count");
  if (!rc && (!m->id || !m->client_id || !m->client_host))
    rc = tarn__corrupt(r->what, r->off, "a member without an ID");
  if (!rc && nt > r->len - r->off)
    rc = tarn__corrupt(r->what, r->off, "topic count %u", nt);
  if (!rc && !(m->topics = calloc(nt ? nt : 1, sizeof *m->topics)))
    rc = tarn__err(TARN_ENOMEM, "kafka group record: out of memory");
  for (uint32_t i = 0; !rc && i < nt; i++) {
    rc = rd_str(r, &m->topics[i], "topic");
    m->n_topics += !rc;
    if (!rc && !m->topics[i])
      rc = tarn__corrupt(r->what, r->off, "a null topic");
  }
  rc = rc ? rc : rd_set(r, &m->assigned);
  rc = rc ? rc : rd_set(r, &m->revoking);
  rc = rc ? rc : rd_set(r, &m->target);
  if (rc) {
    tarn__kc_member_free(m);
    return rc;
  }
  m->epoch = (int32_t)ep, m->prev_epoch = (int32_t)pep;
  m->session_ms = (int32_t)ses, m->rebalance_ms = (int32_t)reb;
  /* a coordinator that takes the group over gives every member a session */
  m->last_seen = now_ms;
  m->revoke_deadline = now_ms + (m->rebalance_ms > 0 ? m->rebalance_ms : 60000);
  *out = m;
  return 0;
}

/* The rest of a format 3 record after its header. */
static int decode_cgroup(tarn__rd *r, int64_t now_ms, tarn__kg_group *gr) {
  const uint8_t *type;
  uint32_t ge, te, nt = 0, nm = 0;
  char *id = NULL;
  int rc = tarn__rd_bytes(r, 1, &type, "group type");
  if (!rc && type[0] != KG_CONSUMER)
    rc = tarn__err(TARN_EVERSION, "%s: group type %u, this build reads 1", r->what, type[0]);
  rc = rc ? rc : tarn__rd_be32(r, &ge, "group epoch");
  rc = rc ? rc : tarn__rd_be32(r, &te, "target epoch");
  rc = rc ? rc : rd_str(r, &id, "group id");
  if (!rc && !id)
    rc = tarn__corrupt(r->what, 12, "no group id");
  if (!rc && !gr->id)
    gr->id = id, id = NULL;
  free(id);
  rc = rc ? rc : tarn__rd_be32(r, &nt, "topic count");
  if (!rc && nt > r->len - r->off)
    rc = tarn__corrupt(r->what, r->off, "topic count %u", nt);
  if (!rc && !(gr->ctopics = calloc(nt ? nt : 1, sizeof *gr->ctopics)))
    rc = tarn__err(TARN_ENOMEM, "kafka group record: out of memory");
  for (uint32_t i = 0; !rc && i < nt; i++) {
    const uint8_t *tid;
    uint32_t np;
    rc = rd_str(r, &gr->ctopics[i].name, "topic");
    gr->n_ctopics += !rc;
    rc = rc ? rc : tarn__rd_bytes(r, 16, &tid, "topic id");
    rc = rc ? rc : tarn__rd_be32(r, &np, "partitions");
    if (!rc && !gr->ctopics[i].name)
      rc = tarn__corrupt(r->what, r->off, "a null topic");
    if (!rc)
      memcpy(gr->ctopics[i].id, tid, 16), gr->ctopics[i].partitions = (int32_t)np;
  }
  rc = rc ? rc : tarn__rd_be32(r, &nm, "member count");
  tarn__kc_member **tail = &gr->cmembers;
  for (uint32_t i = 0; !rc && i < nm; i++) {
    rc = decode_cmember(r, now_ms, tail);
    if (!rc)
      tail = &(*tail)->next;
  }
  uint64_t state_ms = 0;
  rc = rc ? rc : tarn__rd_be64(r, &state_ms, "state time");
  if (!rc && !(gr->protocol_type = strdup("consumer")))
    rc = tarn__err(TARN_ENOMEM, "kafka group record: out of memory");
  if (rc)
    return rc;
  gr->type = KG_CONSUMER;
  gr->group_epoch = (int32_t)ge, gr->target_epoch = (int32_t)te;
  gr->state_ms = (int64_t)state_ms;
  gr->state = gr->cmembers ? KG_STABLE : KG_EMPTY;
  return 0;
}

static int encode_group(const tarn__kg_group *gr, tarn_buf *b) {
  if (gr->type == KG_CONSUMER)
    return encode_cgroup(gr, b);
  int statics = 0;
  for (const tarn__kg_member *mb = gr->members; mb; mb = mb->next)
    statics |= !mb->pending && mb->instance_id;
  int rc = tarn_buf_append(b, statics ? "KG\x02" : "KG\x01", 3);
  rc = rc ? rc : tarn_buf_put_be32(b, (uint32_t)gr->generation);
  rc = rc ? rc : tarn_buf_putc(b, (uint8_t)(gr->assigned != 0));
  rc = rc ? rc : put_str(b, gr->id);
  rc = rc ? rc : put_str(b, gr->protocol_type);
  rc = rc ? rc : put_str(b, gr->protocol);
  rc = rc ? rc : put_str(b, gr->leader);
  uint32_t n = 0;
  for (const tarn__kg_member *mb = gr->members; mb; mb = mb->next)
    n += !mb->pending;
  rc = rc ? rc : tarn_buf_put_be32(b, n);
  for (const tarn__kg_member *mb = gr->members; mb && !rc; mb = mb->next) {
    if (mb->pending)
      continue;
    const tarn__kg_proto_copy *p = chosen(gr, mb);
    rc = put_str(b, mb->id);
    rc = rc ? rc : put_str(b, mb->client_id);
    rc = rc ? rc : put_str(b, mb->client_host);
    rc = rc ? rc : tarn_buf_put_be32(b, (uint32_t)mb->session_ms);
    rc = rc ? rc : tarn_buf_put_be32(b, (uint32_t)mb->rebalance_ms);
    rc = rc ? rc : put_bytes(b, p ? p->meta : NULL, p ? p->len : 0);
    rc = rc ? rc : put_bytes(b, mb->assignment, mb->assignment_len);
    if (statics)
      rc = rc ? rc : put_str(b, mb->instance_id);
  }
  /* issue 37: the time of the state change (Kafka's currentStateTimestamp),
   * after the members: a build before it reads the record and ignores it */
  return rc ? rc : tarn_buf_put_be64(b, (uint64_t)gr->state_ms);
}

static int decode_member(tarn__rd *r, const char *protocol, unsigned format, int64_t now_ms,
                         tarn__kg_member **out) {
  tarn__kg_member *mb = calloc(1, sizeof *mb);
  if (!mb)
    return tarn__err(TARN_ENOMEM, "kafka group record: out of memory");
  uint32_t s, rb;
  int rc = rd_str(r, &mb->id, "member id");
  rc = rc ? rc : rd_str(r, &mb->client_id, "client id");
  rc = rc ? rc : rd_str(r, &mb->client_host, "client host");
  rc = rc ? rc : tarn__rd_be32(r, &s, "session timeout");
  rc = rc ? rc : tarn__rd_be32(r, &rb, "rebalance timeout");
  if (!rc && !mb->id)
    rc = tarn__corrupt(r->what, r->off, "a member without an ID");
  if (!rc && protocol) {
    /* the member supports the chosen protocol: the one it is known by */
    if (!(mb->protos = calloc(1, sizeof *mb->protos)) || !(mb->protos[0].name = strdup(protocol)))
      rc = tarn__err(TARN_ENOMEM, "kafka group record: out of memory");
    else
      mb->n_protos = 1, rc = rd_bytes(r, &mb->protos[0].meta, &mb->protos[0].len, "metadata");
  } else if (!rc) {
    uint8_t *skip;
    size_t n;
    rc = rd_bytes(r, &skip, &n, "metadata");
    free(skip);
  }
  rc = rc ? rc : rd_bytes(r, &mb->assignment, &mb->assignment_len, "assignment");
  if (!rc && format >= GROUP_FORMAT_STATIC)
    rc = rd_str(r, &mb->instance_id, "group instance id");
  if (rc) {
    tarn__kg_member_free(mb);
    return rc;
  }
  mb->session_ms = (int32_t)s, mb->rebalance_ms = (int32_t)rb, mb->last_seen = now_ms;
  *out = mb;
  return 0;
}

static int decode_group(const uint8_t *v, size_t len, int64_t now_ms, tarn__kg_group *gr) {
  tarn__rd r;
  tarn__rd_init(&r, v, len, "kafka group record");
  uint32_t gen, n;
  unsigned format = FORMAT;
  const uint8_t *assigned;
  int rc = rd_head(&r, 'G', GROUP_FORMAT_TYPED, &format);
  if (!rc && format == GROUP_FORMAT_TYPED)
    return decode_cgroup(&r, now_ms, gr);
  rc = rc ? rc : tarn__rd_be32(&r, &gen, "generation");
  rc = rc ? rc : tarn__rd_bytes(&r, 1, &assigned, "assigned");
  char *id = NULL;
  rc = rc ? rc : rd_str(&r, &id, "group id");
  if (!rc && !id)
    rc = tarn__corrupt(r.what, 8, "no group id");
  if (!gr->id)
    gr->id = id, id = NULL;
  free(id);
  rc = rc ? rc : rd_str(&r, &gr->protocol_type, "protocol type");
  rc = rc ? rc : rd_str(&r, &gr->protocol, "protocol");
  rc = rc ? rc : rd_str(&r, &gr->leader, "leader");
  rc = rc ? rc : tarn__rd_be32(&r, &n, "member count");
  tarn__kg_member **tail = &gr->members;
  for (uint32_t i = 0; !rc && i < n; i++) {
    rc = decode_member(&r, gr->protocol, format, now_ms, tail);
    if (!rc)
      tail = &(*tail)->next;
  }
  uint64_t state_ms = 0;
  if (!rc && r.len - r.off >= 8)
    rc = tarn__rd_be64(&r, &state_ms, "state time");
  if (rc)
    return rc;
  gr->state_ms = (int64_t)state_ms;
  gr->generation = (int32_t)gen;
  gr->assigned = assigned[0] != 0;
  gr->state = !gr->members ? KG_EMPTY : gr->assigned ? KG_STABLE : KG_COMPLETING;
  return 0;
}

int tarn__kg_version(tarn_meta *m, const char *id, int64_t *version) {
  char *k = group_key(id);
  if (!k)
    return tarn__err(TARN_ENOMEM, "kafka group: out of memory");
  tarn_meta_rec r = {0};
  int rc = tarn_meta_get(m, PART, k, &r);
  free(k);
  *version = rc ? 0 : r.stat.version;
  tarn_meta_rec_free(&r);
  return rc == TARN_ENOTFOUND ? 0 : rc;
}

int tarn__kg_load(tarn_meta *m, const char *id, int64_t now_ms, tarn__kg_group **out) {
  tarn__kg_group *gr = calloc(1, sizeof *gr);
  char *k = group_key(id);
  if (!gr || !k || !(gr->id = strdup(id))) {
    free(k);
    tarn__kg_group_free(gr);
    return tarn__err(TARN_ENOMEM, "kafka group: out of memory");
  }
  tarn_meta_rec r = {0};
  int rc = tarn_meta_get(m, PART, k, &r);
  free(k);
  if (rc == TARN_ENOTFOUND) {
    rc = 0;
  } else if (!rc) {
    gr->version = r.stat.version;
    rc = decode_group(r.value, r.value_len, now_ms, gr);
  }
  tarn_meta_rec_free(&r);
  if (rc) {
    tarn__kg_group_free(gr);
    return tarn__errctx(rc, "kafka group %s", id);
  }
  *out = gr;
  return 0;
}

int tarn__kg_save(tarn_meta *m, tarn__kg_group *gr) {
  tarn_buf b = TARN_BUF_INIT;
  char *k = group_key(gr->id);
  int64_t state_ms = gr->state_ms;
  gr->state_ms = tarn__now_ms(); /* every write of the record is a change of state */
  int rc = k ? encode_group(gr, &b) : TARN_ENOMEM;
  tarn_meta_stat st;
  if (!rc && gr->version == 0) {
    rc = tarn_meta_create(m, PART, k, b.data, b.len, TARN_META_PERSISTENT, &st);
    if (rc == TARN_EEXIST)
      rc = TARN_ECONFLICT;
  } else if (!rc) {
    rc = tarn_meta_cas(m, PART, k, b.data, b.len, gr->version, &st);
    if (rc == TARN_ENOTFOUND)
      rc = TARN_ECONFLICT;
  }
  if (!rc)
    gr->version = st.version;
  else
    gr->state_ms = state_ms;
  free(k);
  tarn_buf_free(&b);
  if (rc == TARN_ENOMEM)
    return tarn__err(rc, "kafka group: out of memory");
  return rc ? tarn__errctx(rc, "kafka group %s: writing its record", gr->id) : 0;
}

/* An offset record's value: format 2 (issue 37 "Lifecycle"), the topic's
 * ID right after the header (TARN_KAFKA_OFFSET_FORMAT_ID), so that a
 * re-created topic of the same name never reads it and the topic's deletion
 * finds it without parsing; the commit time is the wall clock (format 1 kept
 * the coordinator's monotonic clock). */
static int encode_offset(const tarn__koffset *o, int64_t commit_ms, tarn_buf *b) {
  int rc = tarn_buf_append(b, "KO\x02", 3);
  rc = rc ? rc : tarn_buf_append(b, o->topic_id, sizeof o->topic_id);
  rc = rc ? rc : tarn_buf_put_be64(b, (uint64_t)o->offset);
  rc = rc ? rc : tarn_buf_put_be32(b, (uint32_t)o->leader_epoch);
  rc = rc ? rc : tarn_buf_put_be64(b, (uint64_t)commit_ms);
  rc = rc ? rc : put_str(b, o->metadata ? o->metadata : "");
  rc = rc ? rc : put_str(b, o->topic);
  return rc ? rc : tarn_buf_put_be32(b, (uint32_t)o->partition);
}

int tarn__kg_put_offset(tarn_meta *m, const char *group_id, int64_t version, int guard_absent,
                        const tarn__koffset *o, int64_t now_ms) {
  char *k = offset_key(group_id, o->topic, o->partition);
  char *gk = group_key(group_id);
  tarn_buf b = TARN_BUF_INIT;
  int rc = k && gk ? encode_offset(o, now_ms, &b) : TARN_ENOMEM;
  if (!rc) {
    /* The commit stands only if the group is still what this coordinator
     * saw: a newer generation written by another node voids it. */
    tarn_meta_guard gd = {version > 0 ? TARN_META_GUARD_EXISTS : TARN_META_GUARD_ABSENT, gk,
                          version > 0 ? version : 0};
    size_t ng = version > 0 || guard_absent ? 1 : 0;
    rc = tarn_meta_put_if(m, PART, k, b.data, b.len, &gd, ng, NULL);
  }
  free(k);
  free(gk);
  tarn_buf_free(&b);
  if (rc == TARN_ENOMEM)
    return tarn__err(rc, "kafka group: out of memory");
  return rc ? tarn__errctx(rc, "kafka group %s: committing %s/%d", group_id, o->topic,
                           (int)o->partition)
            : 0;
}

/* commit_ms (may be NULL): the wall-clock commit time, -1 for format 1. */
static int decode_offset(const uint8_t *v, size_t len, tarn__koffset *o, char **topic,
                         int64_t *commit_ms) {
  tarn__rd r;
  tarn__rd_init(&r, v, len, "kafka offset record");
  uint64_t off, ts;
  uint32_t ep, part = 0;
  char *meta = NULL;
  unsigned format = FORMAT;
  const uint8_t *id = NULL;
  int rc = rd_head(&r, 'O', TARN_KAFKA_OFFSET_FORMAT_ID, &format);
  if (!rc && format >= TARN_KAFKA_OFFSET_FORMAT_ID)
    rc = tarn__rd_bytes(&r, sizeof o->topic_id, &id, "topic id");
  if (!rc)
    memset(o->topic_id, 0, sizeof o->topic_id);
  if (id)
    memcpy(o->topic_id, id, sizeof o->topic_id);
  rc = rc ? rc : tarn__rd_be64(&r, &off, "offset");
  rc = rc ? rc : tarn__rd_be32(&r, &ep, "leader epoch");
  rc = rc ? rc : tarn__rd_be64(&r, &ts, "commit time");
  rc = rc ? rc : rd_str(&r, &meta, "metadata");
  if (!rc && topic)
    rc = rd_str(&r, topic, "topic");
  if (!rc && topic)
    rc = tarn__rd_be32(&r, &part, "partition");
  if (rc) {
    free(meta);
    return rc;
  }
  o->offset = (int64_t)off;
  o->leader_epoch = (int32_t)ep;
  if (commit_ms)
    *commit_ms = format >= TARN_KAFKA_OFFSET_FORMAT_ID ? (int64_t)ts : -1;
  o->metadata = meta ? meta : strdup("");
  if (topic)
    o->partition = (int32_t)part;
  return o->metadata ? 0 : tarn__err(TARN_ENOMEM, "kafka offset record: out of memory");
}

int tarn__kg_get_offset(tarn_meta *m, const char *group_id, tarn__koffset *o) {
  char *k = offset_key(group_id, o->topic, o->partition);
  if (!k)
    return tarn__err(TARN_ENOMEM, "kafka group: out of memory");
  tarn_meta_rec r = {0};
  int rc = tarn_meta_get(m, PART, k, &r);
  free(k);
  if (rc == TARN_ENOTFOUND) {
    o->offset = -1, o->leader_epoch = -1;
    memset(o->topic_id, 0, sizeof o->topic_id);
    o->metadata = strdup("");
    rc = o->metadata ? 0 : tarn__err(TARN_ENOMEM, "kafka group: out of memory");
  } else if (!rc) {
    rc = decode_offset(r.value, r.value_len, o, NULL, NULL);
  }
  tarn_meta_rec_free(&r);
  return rc;
}

int tarn__kg_scan_offsets(tarn_meta *m, const char *group_id, tarn__koffset **out, size_t *n) {
  char *a = offset_key(group_id, NULL, 0);
  char *b = a ? malloc(strlen(a) + 2) : NULL;
  if (!b) {
    free(a);
    return tarn__err(TARN_ENOMEM, "kafka group: out of memory");
  }
  sprintf(b, "%s\xff", a);
  tarn_meta_recs rs = {0};
  int rc = tarn_meta_scan(m, PART, a, b, 0, 0, &rs);
  free(a);
  free(b);
  *out = NULL, *n = 0;
  if (rc)
    return rc;
  tarn__koffset *v = calloc(rs.n ? rs.n : 1, sizeof *v);
  if (!v)
    rc = tarn__err(TARN_ENOMEM, "kafka group: out of memory");
  size_t k = 0;
  for (size_t i = 0; !rc && i < rs.n; i++) {
    char *topic = NULL;
    rc = decode_offset(rs.v[i].value, rs.v[i].value_len, &v[k], &topic, NULL);
    if (!rc && !topic)
      rc = tarn__corrupt("kafka offset record", 0, "%s has no topic", rs.v[i].key);
    if (!rc)
      v[k++].topic = topic;
    else
      free(topic);
  }
  tarn_meta_recs_free(&rs);
  if (rc) {
    tarn__koffsets_free(v, k, 1);
    return tarn__errctx(rc, "kafka group %s: reading its offsets", group_id);
  }
  *out = v, *n = k;
  return 0;
}

int tarn__kg_scan_groups(tarn_meta *m, tarn__kglisted **out, size_t *n) {
  tarn_meta_recs rs = {0};
  int rc = tarn_meta_scan(m, PART, "/groups/", "/groups/\xff", 0, 0, &rs);
  *out = NULL, *n = 0;
  if (rc)
    return rc;
  tarn__kglisted *v = calloc(rs.n ? rs.n : 1, sizeof *v);
  if (!v)
    rc = tarn__err(TARN_ENOMEM, "kafka group: out of memory");
  size_t k = 0;
  for (size_t i = 0; !rc && i < rs.n; i++) {
    tarn__kg_group *gr = calloc(1, sizeof *gr);
    rc = gr ? decode_group(rs.v[i].value, rs.v[i].value_len, 0, gr)
            : tarn__err(TARN_ENOMEM, "kafka group: out of memory");
    if (!rc) {
      v[k].group_id = gr->id;
      v[k].protocol_type = gr->protocol_type ? gr->protocol_type : strdup("");
      gr->id = gr->protocol_type = NULL;
      v[k].state = gr->state == KG_EMPTY    ? "Empty"
                   : gr->state == KG_STABLE ? "Stable"
                                            : "CompletingRebalance";
      v[k].type = gr->type == KG_CONSUMER ? "consumer" : "classic";
      if (!v[k++].protocol_type)
        rc = tarn__err(TARN_ENOMEM, "kafka group: out of memory");
    }
    tarn__kg_group_free(gr);
  }
  tarn_meta_recs_free(&rs);
  if (rc) {
    tarn__kglisted_free(v, k);
    return rc;
  }
  *out = v, *n = k;
  return 0;
}

/* The inverse of tarn__kkey_escape on the segment [p, end); NULL when out of
 * memory or not an escaped name. */
static char *unescape(const char *p, const char *end) {
  char *s = malloc((size_t)(end - p) + 1), *o = s;
  for (; s && p < end; p++) {
    unsigned hi, lo;
    if (*p != '%') {
      *o++ = *p;
      continue;
    }
    if (end - p < 3 || sscanf(p + 1, "%1x%1x", &hi, &lo) != 2) {
      free(s);
      return NULL;
    }
    *o++ = (char)(hi << 4 | lo);
    p += 2;
  }
  if (o)
    *o = 0;
  return s;
}

int tarn__kg_scan_offset_groups(tarn_meta *m, char ***out, size_t *n) {
  char **v = NULL, *from = strdup("/offsets/");
  size_t k = 0, cap = 0;
  int rc = from ? 0 : TARN_ENOMEM;
  *out = NULL, *n = 0;
  /* one key per group: each step jumps past the group it found (its range
   * ends at "{prefix}\xff"), so the cost is the groups', not the offsets' */
  while (!rc) {
    tarn_meta_recs rs = {0};
    /* "/offsets/\xff/": past every "/offsets/{group}/..." in the
     * slash-aware key order (tarn_meta_key_compare) */
    rc = tarn_meta_list(m, PART, from, "/offsets/\xff/", TARN_META_AFTER, 1, &rs);
    if (rc || !rs.n) {
      tarn_meta_recs_free(&rs);
      break;
    }
    const char *seg = rs.v[0].key + 9, *end = strchr(seg, '/');
    char *id = end ? unescape(seg, end) : NULL;
    if (!end)
      rc = tarn__corrupt("kafka offset key", 0, "%s has no topic", rs.v[0].key);
    else if (!id)
      rc = TARN_ENOMEM;
    if (!rc && k == cap) {
      char **nv = realloc(v, (cap = cap ? 2 * cap : 8) * sizeof *v);
      if (nv)
        v = nv;
      else
        rc = TARN_ENOMEM;
    }
    if (!rc) {
      v[k++] = id;
      free(from);
      size_t l = (size_t)(end - rs.v[0].key) + 1;
      if ((from = malloc(l + 2))) {
        memcpy(from, rs.v[0].key, l);
        strcpy(from + l, "\xff");
      } else
        rc = TARN_ENOMEM;
    } else
      free(id);
    tarn_meta_recs_free(&rs);
  }
  free(from);
  if (rc) {
    for (size_t i = 0; i < k; i++)
      free(v[i]);
    free(v);
    return rc == TARN_ENOMEM ? tarn__err(rc, "kafka group: out of memory")
                             : tarn__errctx(rc, "kafka groups: listing committed offsets");
  }
  *out = v, *n = k;
  return 0;
}

int tarn__kg_delete(tarn_meta *m, const char *id, int64_t version) {
  char *k = group_key(id);
  if (!k)
    return tarn__err(TARN_ENOMEM, "kafka group: out of memory");
  int rc = tarn_meta_delete_if(m, PART, k, version, NULL, 0);
  free(k);
  return rc ? tarn__errctx(rc, "kafka group %s: deleting its record", id) : 0;
}

/* The group's offsets range [a, b) and its record's key; NULL when out of memory. */
static int offsets_range(const char *id, char **a, char **b, char **gk) {
  *a = offset_key(id, NULL, 0);
  *b = *a ? malloc(strlen(*a) + 2) : NULL;
  *gk = group_key(id);
  if (!*b || !*gk) {
    free(*a), free(*b), free(*gk);
    return tarn__err(TARN_ENOMEM, "kafka group: out of memory");
  }
  sprintf(*b, "%s\xff", *a);
  return 0;
}

int tarn__kg_delete_offsets(tarn_meta *m, const char *id, size_t *count) {
  char *a, *b, *gk;
  *count = 0;
  int rc = offsets_range(id, &a, &b, &gk);
  if (rc)
    return rc;
  tarn_meta_guard gd = {TARN_META_GUARD_ABSENT, gk, 0};
  rc = tarn_meta_delete_range_if(m, PART, a, b, &gd, 1, count);
  free(a), free(b), free(gk);
  return rc ? tarn__errctx(rc, "kafka group %s: deleting its offsets", id) : 0;
}

int tarn__kg_delete_offset(tarn_meta *m, const char *id, int64_t version, const char *topic,
                           int32_t partition) {
  char *k = offset_key(id, topic, partition);
  char *gk = group_key(id);
  int rc = k && gk ? 0 : TARN_ENOMEM;
  if (!rc) {
    tarn_meta_guard gd = {version > 0 ? TARN_META_GUARD_EXISTS : TARN_META_GUARD_ABSENT, gk,
                          version > 0 ? version : 0};
    rc = tarn_meta_delete_if(m, PART, k, TARN_META_ANY_VERSION, &gd, 1);
    if (rc == TARN_ENOTFOUND) /* nothing committed: nothing to delete */
      rc = 0;
  }
  free(k), free(gk);
  if (rc == TARN_ENOMEM)
    return tarn__err(rc, "kafka group: out of memory");
  return rc ? tarn__errctx(rc, "kafka group %s: deleting the offset of %s/%d", id, topic,
                           (int)partition)
            : 0;
}

int tarn__kg_has_offsets(tarn_meta *m, const char *id, int *any) {
  char *a, *b, *gk;
  *any = 0;
  int rc = offsets_range(id, &a, &b, &gk);
  if (rc)
    return rc;
  tarn_meta_recs rs = {0};
  rc = tarn_meta_list(m, PART, a, b, 0, 1, &rs);
  *any = !rc && rs.n > 0;
  tarn_meta_recs_free(&rs);
  free(a), free(b), free(gk);
  return rc;
}

/* ---- expiry (issue 37 "Lifecycle") ------------------------------------------ */

void tarn__kg_offrecs_free(tarn__kg_offrec *v, size_t n) {
  for (size_t i = 0; v && i < n; i++)
    free((char *)v[i].o.topic), free((char *)v[i].o.metadata), free(v[i].key);
  free(v);
}

int tarn__kg_scan_offrecs(tarn_meta *m, const char *group_id, tarn__kg_offrec **out, size_t *n) {
  char *a, *b, *gk;
  *out = NULL, *n = 0;
  int rc = offsets_range(group_id, &a, &b, &gk);
  if (rc)
    return rc;
  tarn_meta_recs rs = {0};
  rc = tarn_meta_scan(m, PART, a, b, 0, 0, &rs);
  free(a), free(b), free(gk);
  tarn__kg_offrec *v = rc ? NULL : calloc(rs.n ? rs.n : 1, sizeof *v);
  if (!rc && !v)
    rc = tarn__err(TARN_ENOMEM, "kafka group: out of memory");
  size_t k = 0;
  for (size_t i = 0; !rc && i < rs.n; i++) {
    char *topic = NULL;
    rc = decode_offset(rs.v[i].value, rs.v[i].value_len, &v[k].o, &topic, &v[k].commit_ms);
    v[k].o.topic = topic;
    if (!rc && !topic)
      rc = tarn__corrupt("kafka offset record", 0, "%s has no topic", rs.v[i].key);
    v[k].key = rs.v[i].key, rs.v[i].key = NULL;
    v[k++].version = rs.v[i].stat.version;
  }
  tarn_meta_recs_free(&rs);
  if (rc) {
    tarn__kg_offrecs_free(v, k);
    return tarn__errctx(rc, "kafka group %s: reading its offsets", group_id);
  }
  *out = v, *n = k;
  return 0;
}

int tarn__kg_expire_offset(tarn_meta *m, const char *group_id, int64_t group_version,
                           const tarn__kg_offrec *r) {
  char *gk = group_key(group_id);
  if (!gk)
    return tarn__err(TARN_ENOMEM, "kafka group: out of memory");
  tarn_meta_guard gd = {group_version > 0 ? TARN_META_GUARD_EXISTS : TARN_META_GUARD_ABSENT, gk,
                        group_version > 0 ? group_version : 0};
  /* on the version read: a commit that landed since keeps its offset */
  int64_t v =
      TARN__PLANTED(TARN__BUG_KOFFSET_EXPIRY_UNGUARDED) ? TARN_META_ANY_VERSION : r->version;
  int rc = tarn_meta_delete_if(m, PART, r->key, v, &gd, 1);
  free(gk);
  return rc;
}

int tarn__kg_stamp_offset(tarn_meta *m, const tarn__kg_offrec *r, int64_t now_ms) {
  tarn_buf b = TARN_BUF_INIT;
  int rc = encode_offset(&r->o, now_ms, &b);
  rc = rc ? rc : tarn_meta_cas(m, PART, r->key, b.data, b.len, r->version, NULL);
  tarn_buf_free(&b);
  return rc;
}
