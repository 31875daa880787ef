/* A compaction range's JSON form (docs/compaction.md "Tasks"): the "range"
 * a task record embeds (src/log/tasks.c), kept next to the tasks that use it
 * so that compactor.c holds C1–C5 only. */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "log/compactor_internal.h"
#include "log/compactor_intent.h"
#include "tarn/key.h"
#include "util/error.h"

void tarn_compact_range_free(tarn_compact_range *r) {
  if (!r)
    return;
  for (size_t i = 0; i < r->n_files; i++)
    free(r->files[i].name);
  free(r->files);
  free(r->dir);
  memset(r, 0, sizeof *r);
}

int tarn_compact_range_encode(const tarn_compact_range *r, tarn_buf *out) {
  json_t *o = json_object(), *fs = json_array();
  for (size_t i = 0; i < r->n_files; i++)
    json_array_append_new(fs, json_pack("{s:s,s:I,s:I,s:I}", "name", r->files[i].name,
                                        "last_offset", (json_int_t)r->files[i].last_offset, "rows",
                                        (json_int_t)r->files[i].rows, "size",
                                        (json_int_t)r->files[i].size));
  json_object_set_new(o, "log", json_integer((json_int_t)r->log_id));
  json_object_set_new(o, "s", json_integer((json_int_t)r->s));
  json_object_set_new(o, "e", json_integer((json_int_t)r->e));
  json_object_set_new(o, "c_s", json_integer((json_int_t)r->c_s));
  json_object_set_new(o, "c_e", json_integer((json_int_t)r->c_e));
  json_object_set_new(o, "records", json_integer((json_int_t)r->n_records));
  json_object_set_new(o, "bytes", json_integer((json_int_t)r->bytes));
  json_object_set_new(o, "oldest_ms", json_integer((json_int_t)r->oldest_ms));
  json_object_set_new(o, "trim", json_integer((json_int_t)r->trim));
  json_object_set_new(o, "dir", json_string(r->dir ? r->dir : ""));
  json_object_set_new(o, "files", fs);
  if (r->intent[0])
    json_object_set_new(o, "intent", json_string(r->intent));
  char *s = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
  json_decref(o);
  if (!s)
    return tarn__err(TARN_ENOMEM, "compaction range: cannot encode");
  int rc = tarn_buf_append(out, s, strlen(s));
  free(s);
  return rc;
}

static int juint(json_t *o, const char *m, uint64_t *v) {
  json_t *x = json_object_get(o, m);
  if (!json_is_integer(x) || json_integer_value(x) < 0)
    return tarn__err(TARN_ECORRUPT, "compaction range: \"%s\" is not a non-negative integer", m);
  *v = (uint64_t)json_integer_value(x);
  return 0;
}

int tarn__compact_range_from_json(json_t *o, tarn_compact_range *r) {
  memset(r, 0, sizeof *r);
  uint64_t om = 0;
  int rc;
  if (!json_is_object(o))
    return tarn__err(TARN_ECORRUPT, "compaction range: not a JSON object");
  if ((rc = juint(o, "log", &r->log_id)) || (rc = juint(o, "s", &r->s)) ||
      (rc = juint(o, "e", &r->e)) || (rc = juint(o, "c_s", &r->c_s)) ||
      (rc = juint(o, "c_e", &r->c_e)) || (rc = juint(o, "records", &r->n_records)) ||
      (rc = juint(o, "bytes", &r->bytes)) || (rc = juint(o, "oldest_ms", &om)) ||
      (rc = juint(o, "trim", &r->trim)))
    return rc;
  r->oldest_ms = (int64_t)om;
  if (r->e <= r->s || r->c_e < r->c_s || r->log_id > TARN_KEY_MAX || r->e > TARN_KEY_MAX ||
      r->c_e > TARN_KEY_MAX)
    return tarn__err(TARN_ECORRUPT, "compaction range: bounds out of order or too large");
  json_t *d = json_object_get(o, "dir"), *fs = json_object_get(o, "files"),
         *in = json_object_get(o, "intent");
  if (!json_is_string(d) || !json_is_array(fs))
    return tarn__err(TARN_ECORRUPT, "compaction range: \"dir\" or \"files\" missing");
  if (in && (!json_is_string(in) || strlen(json_string_value(in)) != TARN__INTENT_ID_LEN))
    return tarn__err(TARN_ECORRUPT, "compaction range: \"intent\" is not an intent ID");
  if (in)
    memcpy(r->intent, json_string_value(in), TARN__INTENT_ID_LEN + 1);
  if (!(r->dir = strdup(json_string_value(d))))
    return tarn__err(TARN_ENOMEM, "out of memory");
  size_t n = json_array_size(fs);
  if (n && !(r->files = calloc(n, sizeof *r->files))) {
    tarn_compact_range_free(r);
    return tarn__err(TARN_ENOMEM, "out of memory");
  }
  for (size_t i = 0; i < n; i++) {
    json_t *f = json_array_get(fs, i), *nm = json_object_get(f, "name");
    uint64_t lo = 0;
    if (!json_is_string(nm) || (rc = juint(f, "last_offset", &lo)) ||
        (rc = juint(f, "rows", &r->files[i].rows)) || (rc = juint(f, "size", &r->files[i].size))) {
      tarn_compact_range_free(r);
      return rc ? rc : tarn__err(TARN_ECORRUPT, "compaction range: bad file %zu", i);
    }
    if (!(r->files[i].name = strdup(json_string_value(nm)))) {
      tarn_compact_range_free(r);
      return tarn__err(TARN_ENOMEM, "out of memory");
    }
    r->files[i].last_offset = (int64_t)lo;
    r->n_files = i + 1;
  }
  return 0;
}

int tarn_compact_range_decode(const uint8_t *p, size_t len, tarn_compact_range *out) {
  json_error_t je;
  json_t *o = json_loadb((const char *)p, len, JSON_REJECT_DUPLICATES, &je);
  if (!o)
    return tarn__corrupt("compaction range", (size_t)je.position, "%s", je.text);
  int rc = tarn__compact_range_from_json(o, out);
  json_decref(o);
  return rc;
}
