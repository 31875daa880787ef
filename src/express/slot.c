/* Express slots (issue 14, "Slots"): the key of a slot in every bucket, its
 * poison, what an observation of one bucket found, and the writer's
 * create-only PUT that counts a copy only when it has seen its own bytes. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "express/express_internal.h"
#include "tarn/wal.h"
#include "util/error.h"
#include "util/planted.h"

int tarn__xstar_check(const char *star) {
  size_t n = star ? strlen(star) : 0;
  if (n == 0 || n > TARN__X_STAR_MAX || !strcmp(star, ".") || !strcmp(star, ".."))
    return tarn__err(TARN_EINVAL, "star '%s': 1..%d bytes, not '.' or '..'", star ? star : "",
                     TARN__X_STAR_MAX);
  for (size_t i = 0; i < n; i++) {
    char c = star[i];
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
          c == '_' || c == '-'))
      return tarn__err(TARN_EINVAL, "star '%s': byte %zu is not one of [A-Za-z0-9._-]", star, i);
  }
  return 0;
}

int tarn__xslot_key(char *out, size_t n, const char *star, uint64_t epoch, uint64_t slot) {
  int rc = tarn__xstar_check(star);
  if (rc)
    return rc;
  int len = snprintf(out, n, "%s/%020" PRIu64 "/%020" PRIu64, star, epoch, slot);
  return len < 0 || (size_t)len >= n ? tarn__err(TARN_ERANGE, "slot key does not fit") : 0;
}

int tarn__xslot_epoch_prefix(char *out, size_t n, const char *star, uint64_t epoch) {
  int rc = tarn__xstar_check(star);
  if (rc)
    return rc;
  int len = snprintf(out, n, "%s/%020" PRIu64 "/", star, epoch);
  return len < 0 || (size_t)len >= n ? tarn__err(TARN_ERANGE, "slot prefix does not fit") : 0;
}

static int digits20(const char *p, uint64_t *v) {
  uint64_t x = 0;
  for (int i = 0; i < 20; i++) {
    if (p[i] < '0' || p[i] > '9')
      return -1;
    uint64_t d = (uint64_t)(p[i] - '0');
    if (x > (UINT64_MAX - d) / 10)
      return -1;
    x = x * 10 + d;
  }
  *v = x;
  return 0;
}

int tarn__xslot_key_parse(const char *key, char *star_out, uint64_t *epoch, uint64_t *slot) {
  size_t n = strlen(key);
  if (n < 44 || key[n - 21] != '/' || key[n - 42] != '/')
    return tarn__err(TARN_EINVAL, "'%s' is not a slot key {star}/{epoch:020}/{slot:020}", key);
  size_t sl = n - 42;
  if (sl > TARN__X_STAR_MAX || digits20(key + n - 41, epoch) || digits20(key + n - 20, slot))
    return tarn__err(TARN_EINVAL, "'%s' is not a slot key {star}/{epoch:020}/{slot:020}", key);
  memcpy(star_out, key, sl);
  star_out[sl] = 0;
  return tarn__xstar_check(star_out);
}

int tarn__xpoison(tarn_buf *out, const char *star, uint64_t epoch, uint64_t slot) {
  int rc = tarn__xstar_check(star);
  if (rc)
    return rc;
  char text[TARN__X_STAR_MAX + 96];
  int len = snprintf(text, sizeof text, TARN__X_POISON_MAGIC "%s/%" PRIu64 "/%" PRIu64 "\n", star,
                     epoch, slot);
  return tarn_buf_append(out, text, (size_t)len);
}

int tarn__xpoison_is(const uint8_t *p, size_t n) {
  size_t m = sizeof TARN__X_POISON_MAGIC - 1;
  return n >= m && !memcmp(p, TARN__X_POISON_MAGIC, m);
}

int tarn__xslot_classify(const uint8_t *p, size_t n, const char *star, uint64_t epoch,
                         uint64_t slot) {
  if (tarn__xpoison_is(p, n)) {
    tarn_buf mine;
    tarn_buf_init(&mine);
    int same =
        !tarn__xpoison(&mine, star, epoch, slot) && mine.len == n && !memcmp(mine.data, p, n);
    tarn_buf_free(&mine);
    return same ? TARN__XOBS_POISON : TARN__XOBS_FOREIGN;
  }
  tarn_wal w;
  if (tarn_wal_detect_version(p, n) == TARN_WAL_VERSION && tarn_wal_decode(p, n, &w) == 0) {
    tarn_wal_free(&w);
    return TARN__XOBS_FLIGHT;
  }
  tarn_errclear();
  return TARN__XOBS_FOREIGN;
}

int tarn__xslot_observe(tarn_objstore *b, const char *key, const char *star, uint64_t epoch,
                        uint64_t slot, tarn_buf *buf) {
  int rc = tarn_objstore_get(b, key, buf);
  if (rc == TARN_ENOTFOUND)
    return TARN__XOBS_EMPTY;
  if (rc)
    return TARN__XOBS_UNKNOWN;
  return tarn__xslot_classify(buf->data, buf->len, star, epoch, slot);
}

int tarn__xslot_put(tarn_objstore *b, const char *key, const void *data, size_t len) {
  int rc = tarn_objstore_put(b, key, data, len);
  if (rc == 0)
    return 0;
  if (rc != TARN_EEXIST && rc != TARN_EUNKNOWN)
    return rc;
  if (rc == TARN_EEXIST && TARN__PLANTED(TARN__BUG_XWRITER_TRUSTS_412))
    return 0; /* planted: "my earlier retry landed" (epochs-model §6, writer412) */
  /* epochs-model §7.5: read back; only our own bytes count as a copy */
  tarn_buf got;
  tarn_buf_init(&got);
  int put_rc = rc;
  rc = tarn_objstore_get(b, key, &got);
  if (rc == 0)
    rc = got.len == len && !memcmp(got.data, data, len)
             ? 0
             : tarn__err(TARN_EEXIST, "express slot %s: the bucket holds %s, not this flight", key,
                         tarn__xpoison_is(got.data, got.len) ? "poison" : "other bytes");
  else if (rc == TARN_ENOTFOUND)
    rc = put_rc == TARN_EUNKNOWN ? tarn__err(TARN_EUNKNOWN,
                                             "express slot %s: a put of unknown "
                                             "outcome did not land",
                                             key)
                                 : tarn__err(TARN_EIO,
                                             "express slot %s: 412 on create, then "
                                             "absent on read-back",
                                             key);
  else
    rc = tarn__errctx(rc, "express slot %s: reading back after %s", key, tarn_errname(put_rc));
  tarn_buf_free(&got);
  return rc;
}
