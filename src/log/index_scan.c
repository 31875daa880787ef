#include "log/index_scan.h"

#include <stdio.h>
#include <string.h>

#include "util/error.h"

#define PAGE 512

static int decode(tarn__ixrec *x, const tarn_meta_rec *r) {
  memset(x, 0, sizeof *x);
  x->rec = r;
  int rc = tarn_key_parse(r->key, strlen(r->key), &x->key);
  if (rc)
    return rc;
  int64_t count;
  x->version = tarn_index_value_detect_version(r->value, r->value_len);
  if (x->version == 3) {
    if ((rc = tarn_entry_index_decode(r->value, r->value_len, &x->ei)))
      return tarn__errctx(rc, "index record %s", r->key);
    count = x->ei.message_count;
    x->file_type = x->ei.file_type;
  } else if (x->version == 1 || x->version == 2) {
    if ((rc = tarn_legacy_index_value_parse(r->value, r->value_len, &x->lv)))
      return tarn__errctx(rc, "index record %s", r->key);
    count = x->lv.message_count;
    x->file_type = x->lv.has_file_type ? x->lv.file_type : TARN_FILE_RAW;
  } else {
    return tarn__errctx(x->version < 0 ? x->version : TARN_ECORRUPT, "index record %s", r->key);
  }
  if (count < 0 || (uint64_t)count > x->key.end_offset)
    return tarn__err(TARN_ECORRUPT, "index record %s: message_count exceeds its end offset",
                     r->key);
  x->start = x->key.end_offset - (uint64_t)count;
  return 0;
}

static void ixfree(tarn__ixrec *x) {
  if (x->version == 3)
    tarn_entry_index_free(&x->ei);
  else if (x->version == 1 || x->version == 2)
    tarn_legacy_index_value_free(&x->lv);
  x->version = 0;
}

int tarn__index_scan(tarn_meta *m, uint64_t log_id, const char *a, const char *b,
                     int (*fn)(void *ctx, const tarn__ixrec *r), void *ctx) {
  char part[TARN_KEY_PARTITION_LEN + 1], lo[TARN_KEY_LEN + 1], hi[TARN_KEY_LEN + 1];
  int rc;
  if ((rc = tarn_key_partition(part, log_id)) || (rc = tarn_key_format(lo, log_id, 0, 0)) ||
      (rc = tarn_key_format(hi, log_id, TARN_KEY_MAX, TARN_KEY_MAX)))
    return rc;
  char cur[1100];
  snprintf(cur, sizeof cur, "%s", a ? a : lo);
  int flags = 0;
  for (;;) {
    tarn_meta_recs rs = {0};
    if ((rc = tarn_meta_scan(m, part, cur, b ? b : hi, flags, PAGE, &rs)))
      return rc;
    int more = rs.more && rs.n > 0;
    for (size_t i = 0; i < rs.n && !rc; i++) {
      const tarn_meta_rec *r = &rs.v[i];
      if (!tarn_key_has_prefix(r->key, strlen(r->key), log_id) || strlen(r->key) != TARN_KEY_LEN) {
        continue; /* another log's key in a shared partition */
      }
      tarn__ixrec x;
      rc = decode(&x, r);
      if (!rc)
        rc = fn(ctx, &x);
      ixfree(&x);
    }
    if (rs.n > 0)
      snprintf(cur, sizeof cur, "%s", rs.v[rs.n - 1].key);
    tarn_meta_recs_free(&rs);
    if (rc == 1)
      return 0;
    if (rc || !more)
      return rc;
    flags = TARN_META_AFTER;
  }
}

int tarn__index_last(tarn_meta *m, uint64_t log_id, tarn_meta_rec *out) {
  char part[TARN_KEY_PARTITION_LEN + 1], last[TARN_KEY_LEN + 1];
  memset(out, 0, sizeof *out);
  int rc = tarn_key_partition(part, log_id);
  if (!rc)
    rc = tarn_key_format(last, log_id, TARN_KEY_MAX, TARN_KEY_MAX);
  if (!rc)
    rc = tarn_meta_floor(m, part, last, out);
  if (!rc && !tarn_key_has_prefix(out->key, strlen(out->key), log_id)) {
    tarn_meta_rec_free(out);
    memset(out, 0, sizeof *out);
    rc = TARN_ENOTFOUND;
  }
  return rc;
}
