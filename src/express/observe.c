/* Observing one slot in all K buckets and classifying what was seen
 * (epochs-model §2 phase 2 and §7.3: decide committed only on W flights seen,
 * dead only on K-W+1 poison seen; repair or poison when an empty bucket is
 * seen; else block). A fencer counts only what it read, never a PUT. */
#include "express/fence.h"

#include <string.h>

#include "tarn/error.h"
#include "util/error.h"
#include "util/planted.h"

static const char *const class_names[] = {"committed", "repair", "poison", "dead", "undecided"};

const char *tarn__xslot_class_name(int c) {
  return c >= 0 && c <= TARN__XSLOT_UNDECIDED ? class_names[c] : "?";
}

void tarn__xobs_init(tarn__xobs *o) {
  memset(o, 0, sizeof *o);
  tarn_buf_init(&o->flight_bytes);
}

void tarn__xobs_free(tarn__xobs *o) {
  tarn_buf_free(&o->flight_bytes);
  memset(o, 0, sizeof *o);
}

int tarn__xobserve(const tarn__xbuckets *s, const char *star, uint64_t epoch, uint64_t slot,
                   tarn__xobs *o) {
  char key[TARN__X_SLOT_KEY_MAX + 1];
  int rc = tarn__xslot_key(key, sizeof key, star, epoch, slot);
  if (rc)
    return rc;
  o->k = s->k;
  o->flight = o->poison = o->empty = o->unknown = 0;
  tarn_buf got;
  tarn_buf_init(&got);
  for (size_t i = 0; i < s->k; i++) {
    int st = tarn__xslot_observe(s->b[i].store, key, star, epoch, slot, &got);
    if (st < 0)
      st = TARN__XOBS_UNKNOWN;
    o->st[i] = st;
    switch (st) {
    case TARN__XOBS_EMPTY: o->empty++; break;
    case TARN__XOBS_FLIGHT:
      o->flight++;
      if (!o->have_flight_bytes) {
        tarn_buf_reset(&o->flight_bytes);
        if (tarn_buf_append(&o->flight_bytes, got.data, got.len) == 0)
          o->have_flight_bytes = 1;
      }
      break;
    case TARN__XOBS_POISON: o->poison++; break;
    case TARN__XOBS_UNKNOWN: o->unknown++; break;
    default:
      /* a foreign object fills the bucket but votes for neither side */
      break;
    }
  }
  tarn_buf_free(&got);
  return 0;
}

int tarn__xobs_classify(const tarn__xobs *o, uint32_t w) {
  uint32_t k = (uint32_t)o->k;
  if (o->flight >= w)
    return TARN__XSLOT_COMMITTED;
  /* The blocking set: K-W+1 poison copies leave at most W-1 buckets for
   * flights, so the slot can never reach W (design "Why it is safe"). */
  uint32_t blocking = k - w + 1;
  if (TARN__PLANTED(TARN__BUG_XFENCE_THRESHOLD_K_MINUS_W))
    blocking = k - w;
  if (o->poison >= blocking)
    return TARN__XSLOT_DEAD;
  if (o->empty > 0)
    return o->flight > 0 ? TARN__XSLOT_REPAIR : TARN__XSLOT_POISON;
  /* epochs-model §6 "guess": one flight, one poison, a bucket down */
  if (TARN__PLANTED(TARN__BUG_XFENCE_GUESSES_UNDECIDED) && o->poison > 0)
    return TARN__XSLOT_DEAD;
  return TARN__XSLOT_UNDECIDED;
}

int tarn__xepoch_open(tarn_meta *m, const char *star, uint64_t epoch, const char *what,
                      tarn__xepoch *e, tarn__xbuckets *b) {
  memset(e, 0, sizeof *e);
  memset(b, 0, sizeof *b);
  if (!m || !star || tarn__xstar_check(star))
    return tarn__err(TARN_EINVAL, "%s: a metadata store and a valid star are needed", what);
  int rc = tarn__xepoch_load(m, star, TARN__X_CLASS_EXPRESS, epoch, e);
  if (rc == 0 && (rc = tarn__xbuckets_copy(&e->buckets, b)) == 0)
    rc = tarn__xbuckets_open(b);
  if (rc) {
    rc = tarn__errctx(rc, "%s %s/%llu", what, star, (unsigned long long)epoch);
    tarn__xbuckets_free(b);
    tarn__xepoch_free(e);
  }
  return rc;
}

static int parse_dec(const uint8_t *p, size_t n, size_t *i, char stop, uint64_t *v) {
  size_t j = *i;
  uint64_t x = 0;
  while (j < n && p[j] >= '0' && p[j] <= '9') {
    if (x > (UINT64_MAX - 9) / 10)
      return -1;
    x = x * 10 + (uint64_t)(p[j] - '0');
    j++;
  }
  if (j == *i || j >= n || p[j] != stop || (p[*i] == '0' && j - *i > 1))
    return -1;
  *v = x;
  *i = j + 1;
  return 0;
}

int tarn__xpoison_parse(const uint8_t *p, size_t n, char *star, uint64_t *epoch, uint64_t *slot) {
  size_t m = strlen(TARN__X_POISON_MAGIC);
  if (!tarn__xpoison_is(p, n))
    return tarn__err(TARN_ECORRUPT, "express poison: byte 0: no \"%.*s\" magic", (int)(m - 1),
                     TARN__X_POISON_MAGIC);
  size_t i = m, j = m;
  while (j < n && p[j] != '/')
    j++;
  if (j >= n || j == i || j - i > TARN__X_STAR_MAX)
    return tarn__err(TARN_ECORRUPT, "express poison: byte %zu: no star", i);
  memcpy(star, p + i, j - i);
  star[j - i] = 0;
  i = j + 1;
  if (tarn__xstar_check(star) || parse_dec(p, n, &i, '/', epoch))
    return tarn__err(TARN_ECORRUPT, "express poison: byte %zu: bad star or epoch", m);
  size_t at = i;
  if (parse_dec(p, n, &i, '\n', slot) || i != n)
    return tarn__err(TARN_ECORRUPT, "express poison: byte %zu: bad slot or trailing bytes", at);
  /* and it must be exactly the bytes the fence writes */
  if (tarn__xslot_classify(p, n, star, *epoch, *slot) != TARN__XOBS_POISON)
    return tarn__err(TARN_ECORRUPT, "express poison: not the exact poison of %s/%llu/%llu", star,
                     (unsigned long long)*epoch, (unsigned long long)*slot);
  return 0;
}

int tarn__xslot_exists(const tarn__xbuckets *s, const char *star, uint64_t epoch, uint64_t slot) {
  char key[TARN__X_SLOT_KEY_MAX + 1];
  if (tarn__xslot_key(key, sizeof key, star, epoch, slot))
    return 0;
  for (size_t i = 0; i < s->k; i++)
    if (tarn_objstore_head(s->b[i].store, key, NULL) == 0)
      return 1;
  tarn_errclear();
  return 0;
}
