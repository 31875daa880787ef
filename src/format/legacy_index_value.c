/* Legacy index values of format versions 1 and 2 (Appendix C, tables §4.9):
 * UTF-8 strings "{message_count:020d}-{entry_size_bytes:020d}-{location}-{entry_id}"
 * and, in version 2, "...-{file_type}". Parsed strictly; detection of the version
 * from the bytes is tarn's own (Ursa does not detect it). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tarn/entryindex.h"
#include "tarn/error.h"
#include "util/error.h"

#define WHAT "legacy index value"

/* Strict decimal digits s[0..n) into a non-negative int64. */
static int parse_digits(const uint8_t *s, size_t n, size_t at, const char *field, int64_t *out) {
  if (n == 0)
    return tarn__corrupt(WHAT, at, "%s is empty", field);
  uint64_t v = 0;
  for (size_t i = 0; i < n; i++) {
    if (s[i] < '0' || s[i] > '9')
      return tarn__corrupt(WHAT, at + i, "%s: 0x%02x is not a decimal digit", field, s[i]);
    v = v * 10 + (uint64_t)(s[i] - '0');
    if (v > (uint64_t)INT64_MAX)
      return tarn__corrupt(WHAT, at, "%s exceeds 2^63-1", field);
  }
  *out = (int64_t)v;
  return 0;
}

static const uint8_t *last_dash(const uint8_t *p, size_t n) {
  for (size_t i = n; i-- > 0;)
    if (p[i] == '-')
      return p + i;
  return NULL;
}

static int file_type_of(const uint8_t *s, size_t n) {
  if (n == 3 && memcmp(s, "RAW", 3) == 0)
    return TARN_FILE_RAW;
  if (n == 7 && memcmp(s, "PARQUET", 7) == 0)
    return TARN_FILE_PARQUET;
  return -1;
}

void tarn_legacy_index_value_free(tarn_legacy_index_value *v) {
  free(v->location);
  memset(v, 0, sizeof *v);
}

int tarn_legacy_index_value_parse(const uint8_t *p, size_t len, tarn_legacy_index_value *out) {
  tarn_legacy_index_value v;
  memset(&v, 0, sizeof v);
  memset(out, 0, sizeof *out);
  /* 20 digits, '-', 20 digits, '-', then the position: at least "x-0" */
  if (len < 45)
    return tarn__corrupt(WHAT, len, "%zu bytes are too short for a legacy value", len);
  const void *nul = memchr(p, 0, len);
  if (nul)
    return tarn__corrupt(WHAT, (size_t)((const uint8_t *)nul - p), "contains a NUL byte");
  int rc = parse_digits(p, 20, 0, "message_count", &v.message_count);
  if (rc)
    return rc;
  if (p[20] != '-')
    return tarn__corrupt(WHAT, 20, "expected '-' after message_count");
  if ((rc = parse_digits(p + 21, 20, 21, "entry_size_bytes", &v.entry_size_bytes)))
    return rc;
  if (p[41] != '-')
    return tarn__corrupt(WHAT, 41, "expected '-' after entry_size_bytes");
  const uint8_t *pos = p + 42, *end = p + len;
  const uint8_t *d = last_dash(pos, (size_t)(end - pos));
  if (!d)
    return tarn__corrupt(WHAT, 42, "the position has no '-' before its entry_id");
  int ft = file_type_of(d + 1, (size_t)(end - d - 1));
  v.version = 1;
  if (ft >= 0) { /* version 2: the file type, then entry_id at the next '-' */
    v.version = 2, v.has_file_type = 1, v.file_type = ft;
    end = d;
    if (!(d = last_dash(pos, (size_t)(end - pos))))
      return tarn__corrupt(WHAT, 42, "the position has no '-' before its entry_id");
  }
  if ((rc = parse_digits(d + 1, (size_t)(end - d - 1), (size_t)(d + 1 - p), "entry_id",
                         &v.entry_id)))
    return rc;
  size_t ln = (size_t)(d - pos);
  if (ln == 0)
    return tarn__corrupt(WHAT, 42, "location is empty");
  if (!(v.location = malloc(ln + 1)))
    return tarn__err(TARN_ENOMEM, "legacy index value: out of memory");
  memcpy(v.location, pos, ln);
  v.location[ln] = 0;
  *out = v;
  return 0;
}

int tarn_legacy_index_value_encode(const tarn_legacy_index_value *v, tarn_buf *out) {
  if ((v->version != 1 && v->version != 2) || v->message_count < 0 || v->entry_size_bytes < 0 ||
      v->entry_id < 0 || !v->location || !v->location[0] ||
      (v->version == 2 && v->file_type != TARN_FILE_RAW && v->file_type != TARN_FILE_PARQUET))
    return tarn__err(TARN_EINVAL, "legacy index value: fields out of their domain");
  char head[64], tail[48];
  int hn = snprintf(head, sizeof head, "%020lld-%020lld-", (long long)v->message_count,
                    (long long)v->entry_size_bytes);
  int tn = snprintf(tail, sizeof tail, "-%lld%s", (long long)v->entry_id,
                    v->version == 1                 ? ""
                    : v->file_type == TARN_FILE_RAW ? "-RAW"
                                                    : "-PARQUET");
  int rc = tarn_buf_append(out, head, (size_t)hn);
  if (!rc)
    rc = tarn_buf_append(out, v->location, strlen(v->location));
  if (!rc)
    rc = tarn_buf_append(out, tail, (size_t)tn);
  return rc;
}

int tarn_index_value_detect_version(const uint8_t *p, size_t len) {
  if (len >= 2 && p[0] == 0x08 && p[1] == 0x03)
    return 3;
  if (len == 0)
    return tarn__corrupt("index value", 0, "empty value");
  if (p[0] >= '0' && p[0] <= '9') {
    const uint8_t *d = last_dash(p, len);
    if (!d)
      return tarn__corrupt("index value", 0,
                           "begins with a digit but has no '-': not a legacy value");
    return file_type_of(d + 1, (size_t)(p + len - d - 1)) >= 0 ? 2 : 1;
  }
  return tarn__corrupt("index value", 0,
                       "begins with 0x%02x%s: neither 08 03 (version 3) nor an ASCII digit "
                       "(versions 1 and 2)",
                       p[0], len >= 2 && p[0] == 0x08 ? " followed by a version other than 3" : "");
}
