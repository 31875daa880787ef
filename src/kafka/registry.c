/* The live Kafka nodes of a deployment (registry.h). */
#include "kafka/registry.h"

#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tarn/meta.h"
#include "util/clock.h"
#include "util/error.h"

/* How long a read of the live list is reused: Metadata requests come often
 * (every client asks on connect and on every error) and a node joining or
 * leaving is seen a second later at most. */
#define LIVE_TTL_MS 1000
/* Issue 37 "Failover": liveness apart from the safety session. Each node
 * rewrites its record every TARN__KREG_BEAT_MS (the registry job), which
 * changes the record's version; a node whose record this node has seen at
 * one version for LIVE_DEAD_MS is dead and leaves the live list, long before
 * its session (15 s by default) ends and takes the record. The age is this
 * node's monotonic clock since it saw the version change, so clocks need not
 * agree. Liveness only: the list names partition leaders and coordinators
 * (which clients follow), never who may write — the leases and claims do. */
#define LIVE_DEAD_MS 3000

typedef struct seen {
  int32_t node_id;
  int64_t version;
  int64_t changed_at; /* monotonic ms when this node saw that version first */
} seen;

struct tarn__kregistry {
  tarn_meta *m;
  tarn__knode_info self;
  pthread_mutex_t mu; /* guards the cache */
  tarn__knode_info *cache;
  size_t ncache;
  int64_t cached_at; /* monotonic ms; 0: none */
  int64_t version;   /* of this node's record as last written; 0: unknown */
  seen *seen;        /* the other records' versions, as last read */
  size_t nseen;
};

static void node_key(int32_t id, char *out, size_t n) { snprintf(out, n, "/nodes/%010d", id); }

static int node_value(const tarn__knode_info *i, char **out) {
  char claims[17];
  snprintf(claims, sizeof claims, "%016llx", (unsigned long long)i->claims);
  json_t *o = i->claims ? json_pack("{s:i,s:s,s:i,s:s}", "node_id", (json_int_t)i->node_id, "host",
                                    i->host, "port", (json_int_t)i->port, "claims", claims)
                        : json_pack("{s:i,s:s,s:i}", "node_id", (json_int_t)i->node_id, "host",
                                    i->host, "port", (json_int_t)i->port);
  *out = o ? json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
  json_decref(o);
  return *out ? 0 : TARN_ENOMEM;
}

static int node_parse(const tarn_meta_rec *r, tarn__knode_info *out) {
  json_error_t e;
  json_t *o = json_loadb((const char *)r->value, r->value_len, 0, &e);
  json_int_t id = -1, port = 0;
  const char *host = NULL, *claims = NULL;
  char *end = NULL;
  int ok = o &&
           json_unpack(o, "{s:I,s:s,s:I,s?s}", "node_id", &id, "host", &host, "port", &port,
                       "claims", &claims) == 0 &&
           id >= 0 && id <= TARN__KREG_MAX_NODE_ID && port > 0 && port < 65536 &&
           strlen(host) < sizeof out->host;
  if (ok) {
    out->node_id = (int32_t)id;
    out->port = (int)port;
    snprintf(out->host, sizeof out->host, "%s", host);
    /* a record without it, or not 16 hex digits: not said (0) */
    out->claims = claims && strlen(claims) == 16 ? strtoull(claims, &end, 16) : 0;
    if (!end || *end)
      out->claims = 0;
  }
  json_decref(o);
  return ok ? 0 : tarn__corrupt("kafka node record", 0, "%s is not a node record", r->key);
}

static int create_self(tarn__kregistry *r) {
  char key[32], *val;
  node_key(r->self.node_id, key, sizeof key);
  int rc = node_value(&r->self, &val);
  if (rc)
    return rc;
  tarn_meta_stat st = {0};
  rc =
      tarn_meta_create(r->m, TARN__KREG_PARTITION, key, val, strlen(val), TARN_META_EPHEMERAL, &st);
  free(val);
  if (rc == 0)
    r->version = st.version;
  return rc;
}

int tarn__kregistry_open(tarn_meta *m, int32_t node_id, const char *host, int port, uint64_t claims,
                         tarn__kregistry **out) {
  *out = NULL;
  if (node_id > TARN__KREG_MAX_NODE_ID || node_id < -1 || !host || strlen(host) >= 256 ||
      port <= 0 || port > 65535)
    return tarn__err(TARN_EINVAL, "kafka node: node id %d or address %s:%d out of range",
                     (int)node_id, host ? host : "(null)", port);
  tarn__kregistry *r = calloc(1, sizeof *r);
  if (!r)
    return TARN_ENOMEM;
  r->m = m;
  snprintf(r->self.host, sizeof r->self.host, "%s", host);
  r->self.port = port;
  r->self.claims = claims;
  int rc;
  if (node_id >= 0) {
    r->self.node_id = node_id;
    rc = create_self(r);
    if (rc == TARN_EEXIST)
      rc = tarn__err(TARN_EEXIST, "kafka node id %d is held by a live node", (int)node_id);
  } else {
    /* The lowest free ID: a create-only record per try, so two nodes starting
     * at once never take the same one. */
    rc = TARN_EEXIST;
    for (int32_t id = 0; id <= TARN__KREG_MAX_NODE_ID && rc == TARN_EEXIST; id++) {
      r->self.node_id = id;
      rc = create_self(r);
    }
  }
  if (rc) {
    free(r);
    return rc;
  }
  pthread_mutex_init(&r->mu, NULL);
  *out = r;
  return 0;
}

void tarn__kregistry_close(tarn__kregistry *r) {
  if (!r)
    return;
  char key[32];
  node_key(r->self.node_id, key, sizeof key);
  tarn_meta_delete(r->m, TARN__KREG_PARTITION, key); /* else it goes with the session */
  pthread_mutex_destroy(&r->mu);
  free(r->cache);
  free(r->seen);
  free(r);
}

const tarn__knode_info *tarn__kregistry_self(const tarn__kregistry *r) { return &r->self; }

/* One beat: the record written again at the version this node wrote last
 * (a CompareAndSet: a record that went with a lost session is created again,
 * ephemeral, never put back persistent). */
static int beat(tarn__kregistry *r) {
  char key[32], *val;
  node_key(r->self.node_id, key, sizeof key);
  int rc = TARN_ECONFLICT;
  if (r->version) {
    if ((rc = node_value(&r->self, &val)))
      return rc;
    tarn_meta_stat st = {0};
    rc = tarn_meta_cas(r->m, TARN__KREG_PARTITION, key, val, strlen(val), r->version, &st);
    free(val);
    if (rc == 0)
      r->version = st.version;
  }
  if (rc != TARN_ECONFLICT && rc != TARN_ENOTFOUND)
    return rc;
  /* the version is not known (a write's outcome was unknown): read it */
  tarn_meta_rec rec;
  rc = tarn_meta_get(r->m, TARN__KREG_PARTITION, key, &rec);
  if (rc == 0) {
    r->version = rec.stat.version; /* the next beat writes */
    tarn_meta_rec_free(&rec);
    return 0;
  }
  if (rc != TARN_ENOTFOUND)
    return rc;
  rc = create_self(r);
  return rc == TARN_EEXIST ? 0 : rc;
}

static int read_live(tarn__kregistry *r, tarn__knode_info **out, size_t *n);

int tarn__kregistry_refresh(tarn__kregistry *r) {
  int rc = beat(r);
  /* the list read on the beat's schedule too, so that a version that stops
   * changing is seen to stop within a beat, however rarely clients ask */
  tarn__knode_info *v;
  size_t k;
  pthread_mutex_lock(&r->mu);
  int lr = read_live(r, &v, &k);
  if (lr == 0) {
    free(r->cache);
    r->cache = v;
    r->ncache = k;
    r->cached_at = tarn__mono_ms();
  }
  pthread_mutex_unlock(&r->mu);
  return rc ? rc : lr;
}

static int by_id(const void *a, const void *b) {
  int32_t x = ((const tarn__knode_info *)a)->node_id, y = ((const tarn__knode_info *)b)->node_id;
  return (x > y) - (x < y);
}

/* Whether the node of record i is alive: its version changed within
 * LIVE_DEAD_MS of now (as this node saw it). Records the table `was` from
 * the previous read; `now_seen` gets this read's. Under r->mu. */
static int alive(const tarn__kregistry *r, const seen *was, size_t nwas, seen *now_seen, int32_t id,
                 int64_t version, int64_t now) {
  *now_seen = (seen){id, version, now};
  for (size_t i = 0; i < nwas; i++)
    if (was[i].node_id == id && was[i].version == version)
      now_seen->changed_at = was[i].changed_at;
  return id == r->self.node_id || now - now_seen->changed_at < LIVE_DEAD_MS;
}

/* Under r->mu (it updates the versions seen). */
static int read_live(tarn__kregistry *r, tarn__knode_info **out, size_t *n) {
  tarn_meta_recs recs;
  int rc = tarn_meta_scan(r->m, TARN__KREG_PARTITION, "/nodes/", "/nodes/~", 0, 0, &recs);
  if (rc)
    return rc;
  tarn__knode_info *v = calloc(recs.n + 1, sizeof *v);
  seen *sn = calloc(recs.n + 1, sizeof *sn);
  if (!v || !sn) {
    free(v);
    free(sn);
    tarn_meta_recs_free(&recs);
    return TARN_ENOMEM;
  }
  int64_t now = tarn__mono_ms();
  size_t k = 0, ns = 0;
  int have_self = 0;
  for (size_t i = 0; i < recs.n; i++) {
    if (node_parse(&recs.v[i], &v[k]))
      continue; /* a record no node wrote: not a live node */
    if (!alive(r, r->seen, r->nseen, &sn[ns++], v[k].node_id, recs.v[i].stat.version, now))
      continue; /* its beats stopped: dead, though its session has not ended yet */
    have_self |= v[k].node_id == r->self.node_id;
    k++;
  }
  tarn_meta_recs_free(&recs);
  free(r->seen);
  r->seen = sn;
  r->nseen = ns;
  if (!have_self)
    v[k++] = r->self; /* its record is being renewed: it still serves */
  qsort(v, k, sizeof *v, by_id);
  *out = v;
  *n = k;
  return 0;
}

int tarn__kregistry_live(tarn__kregistry *r, tarn__knode_info **out, size_t *n) {
  *out = NULL;
  *n = 0;
  int64_t now = tarn__mono_ms();
  pthread_mutex_lock(&r->mu);
  if (!r->cache || now - r->cached_at >= LIVE_TTL_MS) {
    tarn__knode_info *v;
    size_t k;
    int rc = read_live(r, &v, &k);
    if (rc) {
      pthread_mutex_unlock(&r->mu);
      return rc;
    }
    free(r->cache);
    r->cache = v;
    r->ncache = k;
    r->cached_at = now;
  }
  tarn__knode_info *c = malloc(r->ncache * sizeof *c);
  if (c) {
    memcpy(c, r->cache, r->ncache * sizeof *c);
    *out = c;
    *n = r->ncache;
  }
  pthread_mutex_unlock(&r->mu);
  return c ? 0 : TARN_ENOMEM;
}

int tarn__kregistry_owner_alive(tarn__kregistry *r, uint64_t claims) {
  tarn__knode_info *v;
  size_t n;
  if (tarn__kregistry_live(r, &v, &n))
    return 1; /* cannot be told */
  int alive = 0;
  for (size_t i = 0; i < n && !alive; i++)
    alive = v[i].claims == claims || v[i].claims == 0;
  free(v);
  return alive;
}

size_t tarn__kregistry_pick(size_t n, const void *key, size_t len) {
  uint64_t h = 14695981039346656037ull;
  const uint8_t *p = key;
  for (size_t i = 0; i < len; i++) {
    h ^= p[i];
    h *= 1099511628211ull;
  }
  return n ? (size_t)(h % n) : 0;
}

static uint64_t fnv(uint64_t h, const uint8_t *p, size_t len) {
  for (size_t i = 0; i < len; i++) {
    h ^= p[i];
    h *= 1099511628211ull;
  }
  return h;
}

size_t tarn__kregistry_leader(const tarn__knode_info *live, size_t n, const uint8_t topic_id[16],
                              uint32_t partition) {
  uint8_t key[24];
  memcpy(key, topic_id, 16);
  for (int i = 0; i < 4; i++)
    key[16 + i] = (uint8_t)(partition >> (24 - 8 * i));
  size_t best = 0;
  uint64_t best_h = 0;
  for (size_t j = 0; j < n; j++) {
    uint32_t id = (uint32_t)live[j].node_id;
    for (int i = 0; i < 4; i++)
      key[20 + i] = (uint8_t)(id >> (24 - 8 * i));
    uint64_t h = fnv(14695981039346656037ull, key, sizeof key);
    /* a final mix: FNV's last bytes (the node ID) reach only its low bits */
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    if (j == 0 || h > best_h)
      best = j, best_h = h;
  }
  return best;
}

int tarn__kregistry_pick_node(tarn__kregistry *r, const void *key, size_t len,
                              tarn__knode_info *out) {
  tarn__knode_info *v;
  size_t n;
  int rc = tarn__kregistry_live(r, &v, &n);
  if (rc)
    return rc;
  *out = v[tarn__kregistry_pick(n, key, len)];
  free(v);
  return 0;
}
