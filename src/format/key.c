/* Offset index keys K(L, e, c) and the slash keys of a log (spec "Offset index keys"). */
#include "tarn/key.h"

#include <stdio.h>
#include <string.h>

#include "tarn/error.h"
#include "util/error.h"

static const char *const field_names[3] = {"log_id", "end_offset", "cumulative_size"};

static int check_max(uint64_t v, int field) {
  if (v > TARN_KEY_MAX)
    return tarn__err(TARN_ERANGE, "index key: %s %llu exceeds MAX (2^63-1)", field_names[field],
                     (unsigned long long)v);
  return 0;
}

static void put_field(char *p, uint64_t v) {
  for (int i = TARN_KEY_FIELD_LEN - 1; i >= 0; i--, v /= 10)
    p[i] = (char)('0' + v % 10);
}

int tarn_key_format(char out[TARN_KEY_LEN + 1], uint64_t log_id, uint64_t end_offset,
                    uint64_t cumulative_size) {
  int rc;
  if ((rc = check_max(log_id, 0)) || (rc = check_max(end_offset, 1)) ||
      (rc = check_max(cumulative_size, 2)))
    return rc;
  put_field(out, log_id);
  out[20] = '-';
  put_field(out + 21, end_offset);
  out[41] = '-';
  put_field(out + 42, cumulative_size);
  out[TARN_KEY_LEN] = 0;
  return 0;
}

int tarn_key_parse(const char *key, size_t len, tarn_key *out) {
  if (len != TARN_KEY_LEN)
    return tarn__corrupt("index key", len < TARN_KEY_LEN ? len : TARN_KEY_LEN,
                         "%zu bytes, an index key has exactly %d", len, TARN_KEY_LEN);
  uint64_t v[3];
  for (int f = 0; f < 3; f++) {
    size_t start = (size_t)f * (TARN_KEY_FIELD_LEN + 1);
    if (f && key[start - 1] != '-')
      return tarn__corrupt("index key", start - 1, "expected '-' between fields, found 0x%02x",
                           (unsigned char)key[start - 1]);
    uint64_t x = 0;
    for (size_t i = start; i < start + TARN_KEY_FIELD_LEN; i++) {
      unsigned char c = (unsigned char)key[i];
      if (c < '0' || c > '9')
        return tarn__corrupt("index key", i, "%s: expected a decimal digit, found 0x%02x",
                             field_names[f], c);
      if (i > start) /* 19 digits always fit in 64 bits; MAX has 19 digits */
        x = x * 10 + (c - '0');
    }
    if (key[start] != '0' || x > TARN_KEY_MAX)
      return tarn__corrupt("index key", start, "%s exceeds MAX (2^63-1)", field_names[f]);
    v[f] = x;
  }
  out->log_id = v[0];
  out->end_offset = v[1];
  out->cumulative_size = v[2];
  return 0;
}

int tarn_key_prefix(char out[TARN_KEY_PREFIX_LEN + 1], uint64_t log_id) {
  int rc = check_max(log_id, 0);
  if (rc)
    return rc;
  put_field(out, log_id);
  out[20] = '-';
  out[21] = 0;
  return 0;
}

int tarn_key_has_prefix(const char *key, size_t len, uint64_t log_id) {
  char p[TARN_KEY_PREFIX_LEN + 1];
  if (len < TARN_KEY_PREFIX_LEN || tarn_key_prefix(p, log_id))
    return 0;
  return memcmp(key, p, TARN_KEY_PREFIX_LEN) == 0;
}

static int slash_key(char out[TARN_KEY_SLASH_MAX], const char *fmt_name, uint64_t log_id,
                     const char *token) {
  int rc = check_max(log_id, 0);
  if (rc)
    return rc;
  int n = token
              ? snprintf(out, TARN_KEY_SLASH_MAX, "/%s/%llu/%s", fmt_name,
                         (unsigned long long)log_id, token)
              : snprintf(out, TARN_KEY_SLASH_MAX, "/%s/%llu", fmt_name, (unsigned long long)log_id);
  if (n < 0 || n >= TARN_KEY_SLASH_MAX)
    return tarn__err(TARN_EINVAL, "key /%s/%llu/...: longer than %d bytes", fmt_name,
                     (unsigned long long)log_id, TARN_KEY_SLASH_MAX - 1);
  return 0;
}

int tarn_key_partition(char out[TARN_KEY_PARTITION_LEN + 1], uint64_t log_id) {
  int rc = check_max(log_id, 0);
  if (rc)
    return rc;
  snprintf(out, TARN_KEY_PARTITION_LEN + 1, "%llu", (unsigned long long)log_id); /* LS-004 */
  return 0;
}

int tarn_key_trim_marker(char out[TARN_KEY_SLASH_MAX], uint64_t log_id) {
  return slash_key(out, "mark-deleted-offsets", log_id, NULL);
}

int tarn_key_fence(char out[TARN_KEY_SLASH_MAX], uint64_t log_id) {
  return slash_key(out, "stream-write-fences", log_id, NULL);
}

int tarn_key_lease_prefix(char out[TARN_KEY_SLASH_MAX], uint64_t log_id) {
  return slash_key(out, "stream-write-leases", log_id, "");
}

int tarn_key_lease(char out[TARN_KEY_SLASH_MAX], uint64_t log_id, const char *token) {
  if (!token || !*token || strchr(token, '/'))
    return tarn__err(TARN_EINVAL, "write lease key: the token must be non-empty and hold no '/'");
  return slash_key(out, "stream-write-leases", log_id, token);
}
