/* The catalog's JSON records (docs/catalog.md) and stream identities. */
#include "tarn/catalog_record.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "tarn/key.h"
#include "util/error.h"

#define REC "catalog record"

/* Length of the well-formed UTF-8 sequence at s (n bytes left), or 0; the code
 * point in *cp. Overlongs, surrogates and values above U+10FFFF are refused. */
static size_t utf8_seq(const unsigned char *s, size_t n, uint32_t *cp) {
  unsigned c = s[0];
  size_t len;
  uint32_t v, min;
  if (c < 0x80)
    return *cp = c, 1;
  if ((c & 0xe0) == 0xc0)
    len = 2, v = c & 0x1f, min = 0x80;
  else if ((c & 0xf0) == 0xe0)
    len = 3, v = c & 0x0f, min = 0x800;
  else if ((c & 0xf8) == 0xf0)
    len = 4, v = c & 0x07, min = 0x10000;
  else
    return 0;
  if (len > n)
    return 0;
  for (size_t i = 1; i < len; i++) {
    if ((s[i] & 0xc0) != 0x80)
      return 0;
    v = v << 6 | (s[i] & 0x3f);
  }
  if (v < min || v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff))
    return 0;
  *cp = v;
  return len;
}

/* 0 when s is well-formed UTF-8 (and, with printable, holds no C0, DEL or C1
 * control character); else the 1-based position of the first bad byte. */
static size_t utf8_bad(const char *s, size_t n, int printable) {
  const unsigned char *u = (const unsigned char *)s;
  for (size_t i = 0; i < n;) {
    uint32_t cp;
    size_t k = utf8_seq(u + i, n - i, &cp);
    if (!k || (printable && (cp < 0x20 || (cp >= 0x7f && cp <= 0x9f))))
      return i + 1;
    i += k;
  }
  return 0;
}

int tarn_stream_part_check(const char *what, const char *s) {
  size_t n = strlen(s);
  if (n == 0)
    return tarn__err(TARN_EINVAL, "%s is empty", what);
  if (n > TARN_STREAM_NAME_MAX)
    return tarn__err(TARN_EINVAL, "%s is %zu bytes long; at most %d are allowed", what, n,
                     TARN_STREAM_NAME_MAX);
  if (strchr(s, '/')) /* LS-010, LS-011, LS-093, LS-094 */
    return tarn__err(TARN_EINVAL, "%s \"%s\" contains '/', which format version 3 forbids", what,
                     s);
  size_t bad = utf8_bad(s, n, 1);
  if (bad)
    return tarn__err(TARN_EINVAL,
                     "%s: byte %zu is not printable UTF-8 (control character or bad encoding)",
                     what, bad - 1);
  if (strcmp(s, ".") == 0 || strcmp(s, "..") == 0)
    return tarn__err(TARN_EINVAL,
                     "%s may not be \"%s\" (it names a directory of the compacted root)", what, s);
  return 0;
}

int tarn_stream_ident_check(const char *ns, const char *name) {
  int rc = tarn_stream_part_check("stream namespace", ns);
  return rc ? rc : tarn_stream_part_check("stream name", name);
}

int tarn_stream_ident_parse(const char *arg, char **ns, char **name) {
  *ns = *name = NULL;
  const char *slash = strchr(arg, '/');
  char *a = slash ? strndup(arg, (size_t)(slash - arg)) : strdup(TARN_DEFAULT_NAMESPACE);
  char *b = strdup(slash ? slash + 1 : arg);
  if (!a || !b) {
    free(a), free(b);
    return tarn__err(TARN_ENOMEM, "out of memory");
  }
  int rc = tarn_stream_ident_check(a, b);
  if (rc) {
    free(a), free(b);
    return tarn__errctx(rc, "stream \"%s\"", arg);
  }
  *ns = a, *name = b;
  return 0;
}

/* ---- kinds and their members -------------------------------------------- */

static const char *const kind_names[] = {NULL,     "deployment", "log-id-counter",
                                         "stream", "tombstone",  "log"};

/* The members each kind has, all required, in the order they are written. */
static const char *const members[][8] = {
    {NULL},
    {"kind", "version", "created_ms", NULL},
    {"kind", "version", "next_log_id", NULL},
    {"kind", "version", "namespace", "name", "state", "created_ms", "logs", "properties"},
    {"kind", "version", "namespace", "name", "dropped_ms", "logs", NULL},
    {"kind", "version", "log_id", "namespace", "name", "partition", NULL}};

static int member_allowed(int kind, const char *m) {
  for (size_t i = 0; i < 8 && members[kind][i]; i++)
    if (strcmp(members[kind][i], m) == 0)
      return 1;
  return 0;
}

void tarn_catalog_record_free(tarn_catalog_record *r) {
  if (!r)
    return;
  free(r->ns);
  free(r->name);
  free(r->logs);
  for (size_t i = 0; i < r->n_props; i++)
    free(r->props[i].key), free(r->props[i].value);
  free(r->props);
  memset(r, 0, sizeof *r);
}

static int prop_cmp(const void *a, const void *b) {
  return strcmp(((const tarn_stream_prop *)a)->key, ((const tarn_stream_prop *)b)->key);
}

static int check_prop(const char *k, const char *v, size_t vlen) {
  size_t kl = strlen(k);
  if (kl == 0 || kl > TARN_STREAM_PROP_KEY_MAX || utf8_bad(k, kl, 1))
    return tarn__err(TARN_EINVAL, "property key \"%s\": must be 1..%d bytes of printable UTF-8", k,
                     TARN_STREAM_PROP_KEY_MAX);
  if (vlen > TARN_STREAM_PROP_VALUE_MAX || strlen(v) != vlen || utf8_bad(v, vlen, 0))
    return tarn__err(TARN_EINVAL,
                     "property \"%s\": the value must be at most %d bytes of UTF-8 without NUL", k,
                     TARN_STREAM_PROP_VALUE_MAX);
  return 0;
}

/* Checks what both the encoder and the decoder require of a record. */
static int check_record(const tarn_catalog_record *r) {
  int rc;
  switch (r->kind) {
  case TARN_CATREC_DEPLOYMENT:
  case TARN_CATREC_COUNTER: break;
  case TARN_CATREC_STREAM:
  case TARN_CATREC_TOMBSTONE:
  case TARN_CATREC_LOG:
    if (!r->ns || !r->name)
      return tarn__err(TARN_EINVAL, "namespace and name are required");
    if ((rc = tarn_stream_ident_check(r->ns, r->name)))
      return rc;
    break;
  default: return tarn__err(TARN_EINVAL, "unknown record kind %d", r->kind);
  }
  if (r->time_ms < 0)
    return tarn__err(TARN_EINVAL, "a time is negative");
  if (r->kind == TARN_CATREC_COUNTER && r->next_log_id > TARN_KEY_MAX)
    return tarn__err(TARN_EINVAL, "next_log_id exceeds 2^63-1");
  if (r->kind == TARN_CATREC_LOG && r->log_id > TARN_KEY_MAX)
    return tarn__err(TARN_EINVAL, "log_id exceeds 2^63-1");
  if (r->kind == TARN_CATREC_LOG && r->partition >= TARN_STREAM_PARTITIONS_MAX)
    return tarn__err(TARN_EINVAL, "partition exceeds %d", TARN_STREAM_PARTITIONS_MAX - 1);
  if (r->kind == TARN_CATREC_STREAM || r->kind == TARN_CATREC_TOMBSTONE) {
    if (r->kind == TARN_CATREC_STREAM && r->n_logs == 0)
      return tarn__err(TARN_EINVAL, "a stream has at least one partition");
    if (r->n_logs > TARN_STREAM_PARTITIONS_MAX)
      return tarn__err(TARN_EINVAL, "more than %d partitions", TARN_STREAM_PARTITIONS_MAX);
    for (size_t i = 0; i < r->n_logs; i++) {
      if (r->logs[i] > TARN_KEY_MAX)
        return tarn__err(TARN_EINVAL, "log ID at partition %zu exceeds 2^63-1", i);
      for (size_t j = 0; j < i; j++)
        if (r->logs[j] == r->logs[i])
          return tarn__err(TARN_EINVAL, "log %llu is at partitions %zu and %zu",
                           (unsigned long long)r->logs[i], j, i);
    }
  }
  if (r->kind == TARN_CATREC_STREAM) {
    if (r->state != TARN_STREAM_ACTIVE && r->state != TARN_STREAM_DROPPING)
      return tarn__err(TARN_EINVAL, "unknown stream state %d", r->state);
    if (r->n_props > TARN_STREAM_PROPS_MAX)
      return tarn__err(TARN_EINVAL, "more than %d properties", TARN_STREAM_PROPS_MAX);
    for (size_t i = 0; i < r->n_props; i++) {
      if ((rc = check_prop(r->props[i].key, r->props[i].value, strlen(r->props[i].value))))
        return rc;
      for (size_t j = 0; j < i; j++)
        if (strcmp(r->props[i].key, r->props[j].key) == 0)
          return tarn__err(TARN_EINVAL, "property \"%s\" is given twice", r->props[i].key);
    }
  }
  return 0;
}

/* ---- decoding ------------------------------------------------------------ */

static int get_uint(json_t *o, const char *m, uint64_t max, uint64_t *out) {
  json_t *v = json_object_get(o, m);
  if (!json_is_integer(v) || json_integer_value(v) < 0 || (uint64_t)json_integer_value(v) > max)
    return tarn__corrupt(REC, 0, "member \"%s\" must be an integer in 0..%llu", m,
                         (unsigned long long)max);
  *out = (uint64_t)json_integer_value(v);
  return 0;
}

static int get_str(json_t *o, const char *m, char **out) {
  json_t *v = json_object_get(o, m);
  if (!json_is_string(v))
    return tarn__corrupt(REC, 0, "member \"%s\" must be a string", m);
  if (!(*out = strdup(json_string_value(v))))
    return tarn__err(TARN_ENOMEM, "out of memory");
  return 0;
}

static int decode_obj(json_t *o, tarn_catalog_record *r) {
  if (!json_is_object(o))
    return tarn__corrupt(REC, 0, "not a JSON object");
  json_t *k = json_object_get(o, "kind");
  if (!json_is_string(k))
    return tarn__corrupt(REC, 0, "member \"kind\" must be a string");
  for (int i = 1; i <= TARN_CATREC_LOG; i++)
    if (strcmp(json_string_value(k), kind_names[i]) == 0)
      r->kind = i;
  if (!r->kind)
    return tarn__corrupt(REC, 0, "unknown kind \"%s\"", json_string_value(k));
  const char *m;
  json_t *v;
  json_object_foreach(o, m, v) {
    if (!member_allowed(r->kind, m))
      return tarn__corrupt(REC, 0, "member \"%s\" does not belong to a %s record", m,
                           kind_names[r->kind]);
  }
  for (size_t i = 0; i < 8 && members[r->kind][i]; i++)
    if (!json_object_get(o, members[r->kind][i]))
      return tarn__corrupt(REC, 0, "member \"%s\" is missing", members[r->kind][i]);
  uint64_t u = 0; /* gcc -O3 cannot see get_uint sets it on success */
  int rc;
  if ((rc = get_uint(o, "version", 1000, &u)))
    return rc;
  if (u != 1)
    return tarn__err(TARN_EVERSION, REC ": version %llu; this build reads version 1",
                     (unsigned long long)u);
  const char *tm = r->kind == TARN_CATREC_TOMBSTONE ? "dropped_ms" : "created_ms";
  if (json_object_get(o, tm)) {
    if ((rc = get_uint(o, tm, INT64_MAX, &u)))
      return rc;
    r->time_ms = (int64_t)u;
  }
  if (r->kind == TARN_CATREC_COUNTER &&
      (rc = get_uint(o, "next_log_id", TARN_KEY_MAX, &r->next_log_id)))
    return rc;
  if (r->kind >= TARN_CATREC_STREAM &&
      ((rc = get_str(o, "namespace", &r->ns)) || (rc = get_str(o, "name", &r->name))))
    return rc;
  if (r->kind == TARN_CATREC_LOG) {
    if ((rc = get_uint(o, "log_id", TARN_KEY_MAX, &r->log_id)) ||
        (rc = get_uint(o, "partition", TARN_STREAM_PARTITIONS_MAX - 1, &u)))
      return rc;
    r->partition = (uint32_t)u;
  }
  if (r->kind == TARN_CATREC_STREAM) {
    json_t *s = json_object_get(o, "state");
    const char *sv = json_is_string(s) ? json_string_value(s) : "";
    if (strcmp(sv, "active") == 0)
      r->state = TARN_STREAM_ACTIVE;
    else if (strcmp(sv, "dropping") == 0)
      r->state = TARN_STREAM_DROPPING;
    else
      return tarn__corrupt(REC, 0, "member \"state\" must be \"active\" or \"dropping\"");
  }
  if (r->kind == TARN_CATREC_STREAM || r->kind == TARN_CATREC_TOMBSTONE) {
    json_t *a = json_object_get(o, "logs");
    if (!json_is_array(a) || json_array_size(a) > TARN_STREAM_PARTITIONS_MAX)
      return tarn__corrupt(REC, 0, "member \"logs\" must be an array of at most %d log IDs",
                           TARN_STREAM_PARTITIONS_MAX);
    size_t n = json_array_size(a);
    if (n && !(r->logs = calloc(n, sizeof *r->logs)))
      return tarn__err(TARN_ENOMEM, "out of memory");
    for (size_t i = 0; i < n; i++) {
      json_t *e = json_array_get(a, i);
      if (!json_is_integer(e) || json_integer_value(e) < 0)
        return tarn__corrupt(REC, 0, "logs[%zu] must be a log ID in 0..2^63-1", i);
      r->logs[r->n_logs++] = (uint64_t)json_integer_value(e);
    }
  }
  if (r->kind == TARN_CATREC_STREAM) {
    json_t *p = json_object_get(o, "properties");
    if (!json_is_object(p) || json_object_size(p) > TARN_STREAM_PROPS_MAX)
      return tarn__corrupt(REC, 0,
                           "member \"properties\" must be an object of at most %d "
                           "string values",
                           TARN_STREAM_PROPS_MAX);
    size_t n = json_object_size(p);
    if (n && !(r->props = calloc(n, sizeof *r->props)))
      return tarn__err(TARN_ENOMEM, "out of memory");
    json_object_foreach(p, m, v) {
      if (!json_is_string(v))
        return tarn__corrupt(REC, 0, "property \"%s\" must be a string", m);
      tarn_stream_prop *pr = &r->props[r->n_props];
      if (!(pr->key = strdup(m)) || !(pr->value = strdup(json_string_value(v)))) {
        free(pr->key);
        return tarn__err(TARN_ENOMEM, "out of memory");
      }
      r->n_props++;
      if (strlen(pr->value) != json_string_length(v))
        return tarn__corrupt(REC, 0, "property \"%s\" holds a NUL", m);
    }
    if (r->n_props > 1)
      qsort(r->props, r->n_props, sizeof *r->props, prop_cmp);
  }
  if ((rc = check_record(r)))
    return tarn__corrupt(REC, 0, "%s", tarn_errmsg());
  return 0;
}

int tarn_catalog_record_decode(const uint8_t *p, size_t len, tarn_catalog_record *out) {
  memset(out, 0, sizeof *out);
  json_error_t err;
  json_t *o = json_loadb((const char *)p, len, JSON_REJECT_DUPLICATES, &err);
  if (!o)
    return tarn__corrupt(REC, (size_t)err.position, "%s", err.text);
  int rc = decode_obj(o, out);
  json_decref(o);
  if (rc)
    tarn_catalog_record_free(out);
  return rc;
}

/* ---- encoding ------------------------------------------------------------ */

static json_t *logs_json(const tarn_catalog_record *r) {
  json_t *a = json_array();
  for (size_t i = 0; a && i < r->n_logs; i++)
    if (json_array_append_new(a, json_integer((json_int_t)r->logs[i])))
      return json_decref(a), NULL;
  return a;
}

int tarn_catalog_record_encode(const tarn_catalog_record *r, tarn_buf *out) {
  int rc = check_record(r);
  if (rc)
    return tarn__errctx(rc, "encoding a catalog record");
  json_t *o = json_object();
  int bad = !o;
  bad = bad || json_object_set_new(o, "kind", json_string(kind_names[r->kind]));
  bad = bad || json_object_set_new(o, "version", json_integer(1));
  switch (r->kind) {
  case TARN_CATREC_DEPLOYMENT:
    bad = bad || json_object_set_new(o, "created_ms", json_integer(r->time_ms));
    break;
  case TARN_CATREC_COUNTER:
    bad = bad || json_object_set_new(o, "next_log_id", json_integer((json_int_t)r->next_log_id));
    break;
  case TARN_CATREC_LOG:
    bad = bad || json_object_set_new(o, "log_id", json_integer((json_int_t)r->log_id));
    /* fall through */
  default:
    bad = bad || json_object_set_new(o, "namespace", json_string(r->ns));
    bad = bad || json_object_set_new(o, "name", json_string(r->name));
  }
  if (r->kind == TARN_CATREC_LOG)
    bad = bad || json_object_set_new(o, "partition", json_integer(r->partition));
  if (r->kind == TARN_CATREC_STREAM) {
    bad = bad ||
          json_object_set_new(
              o, "state", json_string(r->state == TARN_STREAM_DROPPING ? "dropping" : "active"));
    bad = bad || json_object_set_new(o, "created_ms", json_integer(r->time_ms));
  }
  if (r->kind == TARN_CATREC_TOMBSTONE)
    bad = bad || json_object_set_new(o, "dropped_ms", json_integer(r->time_ms));
  if (r->kind == TARN_CATREC_STREAM || r->kind == TARN_CATREC_TOMBSTONE)
    bad = bad || json_object_set_new(o, "logs", logs_json(r));
  if (r->kind == TARN_CATREC_STREAM) {
    json_t *p = json_object();
    bad = bad || !p;
    /* In key order, as the decoder gives them back: one record, one encoding. */
    tarn_stream_prop *sorted = r->n_props ? malloc(r->n_props * sizeof *sorted) : NULL;
    bad = bad || (r->n_props && !sorted);
    if (!bad && r->n_props) {
      memcpy(sorted, r->props, r->n_props * sizeof *sorted);
      qsort(sorted, r->n_props, sizeof *sorted, prop_cmp);
    }
    for (size_t i = 0; !bad && i < r->n_props; i++)
      bad = json_object_set_new(p, sorted[i].key, json_string(sorted[i].value));
    free(sorted);
    if (bad)
      json_decref(p);
    else
      bad = json_object_set_new(o, "properties", p);
  }
  char *s = bad ? NULL : json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
  json_decref(o);
  if (!s)
    return tarn__err(TARN_ENOMEM, "out of memory encoding a catalog record");
  rc = tarn_buf_append(out, s, strlen(s));
  free(s);
  return rc;
}
