/* The server-side assignors of consumer groups (KIP-848, issue 37; group.h
 * tarn__kc_assign; docs/kafka.md "Consumer groups (KIP-848)"). Pure
 * functions: the same topics and members give the same assignment.
 *   uniform  every partition of the subscribed topics to one member that
 *            subscribes to its topic; the counts are balanced by filling the
 *            least loaded member first (a member among equals that already
 *            holds more gets the extra one), then each member keeps what it
 *            held up to its count (sticky), and the rest goes to members below
 *            their count.
 *   range    per topic, the members subscribing to it in ID order get
 *            contiguous ranges (the first partitions % members one more), so
 *            co-partitioned topics are assigned alike. */
#include <stdlib.h>
#include <string.h>

#include "kafka/group.h"
#include "tarn/error.h"
#include "util/error.h"

static int tp_cmp(const uint8_t a[16], int32_t pa, const uint8_t b[16], int32_t pb) {
  int c = memcmp(a, b, 16);
  return c ? c : pa < pb ? -1 : pa > pb;
}

/* The index where (id, partition) is or would go. */
static size_t set_find(const tarn__kc_set *s, const uint8_t id[16], int32_t partition) {
  size_t lo = 0, hi = s->n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (tp_cmp(s->v[mid].id, s->v[mid].partition, id, partition) < 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

int tarn__kc_set_has(const tarn__kc_set *s, const uint8_t id[16], int32_t partition) {
  size_t i = set_find(s, id, partition);
  return i < s->n && !tp_cmp(s->v[i].id, s->v[i].partition, id, partition);
}

int tarn__kc_set_add(tarn__kc_set *s, const uint8_t id[16], int32_t partition) {
  size_t i = set_find(s, id, partition);
  if (i < s->n && !tp_cmp(s->v[i].id, s->v[i].partition, id, partition))
    return 0;
  tarn__kc_tp *v = realloc(s->v, (s->n + 1) * sizeof *v);
  if (!v)
    return tarn__err(TARN_ENOMEM, "consumer group: out of memory");
  memmove(v + i + 1, v + i, (s->n - i) * sizeof *v);
  memcpy(v[i].id, id, 16);
  v[i].partition = partition;
  s->v = v, s->n++;
  return 0;
}

void tarn__kc_set_free(tarn__kc_set *s) {
  free(s->v);
  s->v = NULL, s->n = 0;
}

int tarn__kc_set_copy(tarn__kc_set *dst, const tarn__kc_set *src) {
  tarn__kc_tp *v = src->n ? malloc(src->n * sizeof *v) : NULL;
  if (src->n && !v)
    return tarn__err(TARN_ENOMEM, "consumer group: out of memory");
  if (src->n)
    memcpy(v, src->v, src->n * sizeof *v);
  free(dst->v);
  dst->v = v, dst->n = src->n;
  return 0;
}

int tarn__kc_assignor_known(const char *name) {
  return !name || !strcmp(name, "uniform") || !strcmp(name, "range");
}

static int subscribes(const tarn__kc_amember *m, const char *topic) {
  size_t lo = 0, hi = m->n_topics;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    int c = strcmp(m->topics[mid], topic);
    if (!c)
      return 1;
    if (c < 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  return 0;
}

/* The topic of an ID among the subscribed ones, -1 when none. */
static long topic_of(const tarn__kc_topic *t, size_t nt, const uint8_t id[16]) {
  for (size_t i = 0; i < nt; i++)
    if (!memcmp(t[i].id, id, 16))
      return (long)i;
  return -1;
}

static int range(const tarn__kc_topic *topics, size_t nt, tarn__kc_amember *m, const size_t *ord,
                 size_t nm) {
  int rc = 0;
  for (size_t t = 0; !rc && t < nt; t++) {
    size_t k = 0;
    for (size_t i = 0; i < nm; i++)
      k += subscribes(&m[ord[i]], topics[t].name);
    if (!k)
      continue;
    int32_t n = topics[t].partitions, per = n / (int32_t)k, extra = n % (int32_t)k, at = 0;
    for (size_t i = 0, j = 0; !rc && i < nm; i++) {
      tarn__kc_amember *mb = &m[ord[i]];
      if (!subscribes(mb, topics[t].name))
        continue;
      int32_t cnt = per + ((int32_t)j++ < extra);
      for (int32_t p = at; !rc && p < at + cnt; p++)
        rc = tarn__kc_set_add(&mb->out, topics[t].id, p);
      at += cnt;
    }
  }
  return rc;
}

static int uniform(const tarn__kc_topic *topics, size_t nt, tarn__kc_amember *m, const size_t *ord,
                   size_t nm) {
  size_t np = 0;
  for (size_t t = 0; t < nt; t++)
    np += topics[t].partitions > 0 ? (size_t)topics[t].partitions : 0;
  size_t *cnt = calloc(nm ? nm : 1, sizeof *cnt), *load = calloc(nm ? nm : 1, sizeof *load);
  size_t *held = calloc(nm ? nm : 1, sizeof *held);
  long *owner = malloc((np ? np : 1) * sizeof *owner);
  size_t *base = calloc(nt ? nt : 1, sizeof *base);
  int rc = cnt && load && held && owner && base ? 0 : TARN_ENOMEM;
  for (size_t t = 1; !rc && t < nt; t++)
    base[t] = base[t - 1] + (size_t)(topics[t - 1].partitions > 0 ? topics[t - 1].partitions : 0);
  /* what each member held that is still valid: the tie-break of the counts */
  for (size_t i = 0; !rc && i < nm; i++)
    for (size_t j = 0; m[i].current && j < m[i].current->n; j++) {
      long t = topic_of(topics, nt, m[i].current->v[j].id);
      held[i] += t >= 0 && m[i].current->v[j].partition < topics[t].partitions &&
                 subscribes(&m[i], topics[t].name);
    }
  /* 1. the counts: each partition to the least loaded eligible member */
  for (size_t t = 0; !rc && t < nt; t++)
    for (int32_t p = 0; p < topics[t].partitions; p++) {
      long best = -1;
      for (size_t k = 0; k < nm; k++) {
        size_t i = ord[k];
        if (!subscribes(&m[i], topics[t].name))
          continue;
        if (best < 0 || cnt[i] < cnt[best] || (cnt[i] == cnt[best] && held[i] > held[best]))
          best = (long)i;
      }
      if (best >= 0)
        cnt[best]++;
    }
  /* 2. sticky: each member keeps what it held, up to its count */
  for (size_t i = 0; !rc && i < np; i++)
    owner[i] = -1;
  for (size_t k = 0; !rc && k < nm; k++) {
    size_t i = ord[k];
    for (size_t j = 0; m[i].current && j < m[i].current->n && load[i] < cnt[i]; j++) {
      const tarn__kc_tp *tp = &m[i].current->v[j];
      long t = topic_of(topics, nt, tp->id);
      if (t < 0 || tp->partition < 0 || tp->partition >= topics[t].partitions ||
          !subscribes(&m[i], topics[t].name) || owner[base[t] + (size_t)tp->partition] >= 0)
        continue;
      owner[base[t] + (size_t)tp->partition] = (long)i;
      load[i]++;
    }
  }
  /* 3. the rest to eligible members below their count (least loaded first);
   * past the counts (subscriptions that differ) to the least loaded */
  for (size_t t = 0; !rc && t < nt; t++)
    for (int32_t p = 0; p < topics[t].partitions; p++) {
      if (owner[base[t] + (size_t)p] >= 0)
        continue;
      long best = -1;
      int best_under = 0;
      for (size_t k = 0; k < nm; k++) {
        size_t i = ord[k];
        if (!subscribes(&m[i], topics[t].name))
          continue;
        int under = load[i] < cnt[i];
        if (best < 0 || (under && !best_under) || (under == best_under && load[i] < load[best]))
          best = (long)i, best_under = under;
      }
      if (best >= 0)
        owner[base[t] + (size_t)p] = best, load[best]++;
    }
  for (size_t t = 0; !rc && t < nt; t++)
    for (int32_t p = 0; !rc && p < topics[t].partitions; p++) {
      long o = owner[base[t] + (size_t)p];
      if (o >= 0)
        rc = tarn__kc_set_add(&m[o].out, topics[t].id, p);
    }
  free(cnt), free(load), free(held), free(owner), free(base);
  return rc == TARN_ENOMEM ? tarn__err(rc, "consumer group: out of memory") : rc;
}

int tarn__kc_assign(const char *assignor, const tarn__kc_topic *topics, size_t n_topics,
                    tarn__kc_amember *members, size_t n_members) {
  if (!tarn__kc_assignor_known(assignor))
    return tarn__err(TARN_EINVAL, "consumer group: no assignor %s", assignor);
  size_t *ord = malloc((n_members ? n_members : 1) * sizeof *ord);
  if (!ord)
    return tarn__err(TARN_ENOMEM, "consumer group: out of memory");
  for (size_t i = 0; i < n_members; i++) {
    ord[i] = i;
    members[i].out.v = NULL, members[i].out.n = 0;
  }
  /* the members in ID order (an insertion sort: qsort has no context
   * argument, and groups are small) */
  for (size_t i = 1; i < n_members; i++)
    for (size_t j = i; j > 0 && strcmp(members[ord[j - 1]].id, members[ord[j]].id) > 0; j--) {
      size_t x = ord[j];
      ord[j] = ord[j - 1], ord[j - 1] = x;
    }
  int rc = assignor && !strcmp(assignor, "range")
               ? range(topics, n_topics, members, ord, n_members)
               : uniform(topics, n_topics, members, ord, n_members);
  free(ord);
  if (rc)
    for (size_t i = 0; i < n_members; i++)
      tarn__kc_set_free(&members[i].out);
  return rc;
}
