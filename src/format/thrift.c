/* The Thrift compact protocol (see thrift.h). */
#include "format/thrift.h"

#include <string.h>

static const char *type_name(int t) {
  static const char *const names[] = {"stop",   "bool",   "bool", "byte", "i16", "i32",   "i64",
                                      "double", "binary", "list", "set",  "map", "struct"};
  return t >= 0 && t <= TARN__T_STRUCT ? names[t] : "unknown type";
}

void tarn__thrift_rd_init(tarn__thrift_rd *d, const void *p, size_t len, size_t base,
                          const char *what) {
  tarn__rd_init(&d->r, p, len, what);
  d->r.base = base;
  d->depth = 0;
  d->bool_val = 0;
}

static size_t here(const tarn__thrift_rd *d) { return d->r.base + d->r.off; }

static int rd_byte(tarn__thrift_rd *d, uint8_t *c, const char *field) {
  const uint8_t *p;
  int rc = tarn__rd_bytes(&d->r, 1, &p, field);
  if (rc == 0)
    *c = *p;
  return rc;
}

static int64_t unzigzag(uint64_t v) { return (int64_t)(v >> 1) ^ -(int64_t)(v & 1); }

/* A zigzag varint that must fit in bits (16, 32 or 64) bits. */
static int rd_zigzag(tarn__thrift_rd *d, int bits, int64_t *v, const char *field) {
  size_t start = here(d);
  uint64_t u = 0;
  unsigned max_bytes = bits == 16 ? 3 : bits == 32 ? 5 : 10;
  uint64_t max_value = bits == 64 ? UINT64_MAX : ((uint64_t)1 << bits) - 1;
  int rc = tarn__rd_uvarint(&d->r, &u, max_bytes, UINT64_MAX, field);
  if (rc)
    return rc;
  if (u > max_value)
    return tarn__corrupt(d->r.what, start, "%s: varint does not fit in i%d", field, bits);
  *v = unzigzag(u);
  return 0;
}

int tarn__thrift_expect(tarn__thrift_rd *d, int type, int want, const char *field) {
  if (type == want || (want == TARN__T_LIST && type == TARN__T_SET))
    return 0;
  return tarn__corrupt(d->r.what, here(d), "%s is a %s, expected a %s", field, type_name(type),
                       type_name(want));
}

int tarn__thrift_struct_begin(tarn__thrift_rd *d) {
  if (d->depth >= TARN__THRIFT_MAX_DEPTH)
    return tarn__corrupt(d->r.what, here(d), "structs nested deeper than %d",
                         TARN__THRIFT_MAX_DEPTH);
  d->last_id[d->depth++] = 0;
  return 0;
}

int tarn__thrift_field(tarn__thrift_rd *d, int16_t *id, int *type) {
  if (d->depth == 0)
    return tarn__corrupt(d->r.what, here(d), "field read outside a struct");
  size_t start = here(d);
  uint8_t c;
  int rc = rd_byte(d, &c, "field header");
  if (rc)
    return rc;
  int t = c & 0x0f;
  if (t == TARN__T_STOP) {
    if (c != 0)
      return tarn__corrupt(d->r.what, start, "stop byte 0x%02x has a field delta", c);
    d->depth--;
    *type = TARN__T_STOP;
    *id = 0;
    return 0;
  }
  if (t > TARN__T_STRUCT)
    return tarn__corrupt(d->r.what, start, "field type %d is not a Thrift type", t);
  int16_t fid;
  if (c >> 4) {
    int v = d->last_id[d->depth - 1] + (c >> 4);
    if (v > INT16_MAX)
      return tarn__corrupt(d->r.what, start, "field id overflows i16");
    fid = (int16_t)v;
  } else {
    int64_t v;
    if ((rc = rd_zigzag(d, 16, &v, "field id")))
      return rc;
    fid = (int16_t)v;
  }
  d->last_id[d->depth - 1] = fid;
  if (t == TARN__T_BOOL || t == TARN__T_BOOL_FALSE) {
    d->bool_val = t == TARN__T_BOOL;
    t = TARN__T_BOOL;
  }
  *id = fid;
  *type = t;
  return 0;
}

int tarn__thrift_i32(tarn__thrift_rd *d, int type, int32_t *v, const char *field) {
  int64_t x;
  int rc = tarn__thrift_expect(d, type, TARN__T_I32, field);
  if (rc == 0 && (rc = rd_zigzag(d, 32, &x, field)) == 0)
    *v = (int32_t)x;
  return rc;
}

int tarn__thrift_i64(tarn__thrift_rd *d, int type, int64_t *v, const char *field) {
  int rc = tarn__thrift_expect(d, type, TARN__T_I64, field);
  return rc ? rc : rd_zigzag(d, 64, v, field);
}

int tarn__thrift_bool(tarn__thrift_rd *d, int type, int in_list, int *v, const char *field) {
  int rc = tarn__thrift_expect(d, type, TARN__T_BOOL, field);
  if (rc)
    return rc;
  if (!in_list) {
    *v = d->bool_val;
    return 0;
  }
  uint8_t c;
  if ((rc = rd_byte(d, &c, field)))
    return rc;
  *v = c == TARN__T_BOOL;
  return 0;
}

int tarn__thrift_binary(tarn__thrift_rd *d, int type, const uint8_t **p, size_t *n,
                        const char *field) {
  uint64_t len = 0;
  int rc = tarn__thrift_expect(d, type, TARN__T_BINARY, field);
  if (rc || (rc = tarn__rd_uvarint(&d->r, &len, 5, INT32_MAX, field)))
    return rc;
  if ((rc = tarn__rd_bytes(&d->r, (size_t)len, p, field)))
    return rc;
  *n = (size_t)len;
  return 0;
}

int tarn__thrift_list_min(tarn__thrift_rd *d, int type, size_t min_elem, int *elem_type, size_t *n,
                          const char *field) {
  size_t start = here(d);
  uint8_t c;
  int rc = tarn__thrift_expect(d, type, TARN__T_LIST, field);
  if (rc || (rc = rd_byte(d, &c, field)))
    return rc;
  uint64_t count = c >> 4;
  if (count == 15 && (rc = tarn__rd_uvarint(&d->r, &count, 5, INT32_MAX, field)))
    return rc;
  int t = c & 0x0f;
  if (t == TARN__T_BOOL_FALSE)
    t = TARN__T_BOOL;
  if (t == TARN__T_STOP || t > TARN__T_STRUCT)
    return tarn__corrupt(d->r.what, start, "%s: list element type %d is not a Thrift type", field,
                         c & 0x0f);
  /* Every element takes at least min_elem bytes (one for any type), so a count
   * the bytes left cannot hold is a lie: refused before anyone allocates for it. */
  if (min_elem == 0)
    min_elem = 1;
  if (count > tarn__rd_left(&d->r) / min_elem)
    return tarn__corrupt(d->r.what, start,
                         "%s: list of %llu elements in %zu bytes (%zu each at least)", field,
                         (unsigned long long)count, tarn__rd_left(&d->r), min_elem);
  *elem_type = t;
  *n = (size_t)count;
  return 0;
}

int tarn__thrift_list(tarn__thrift_rd *d, int type, int *elem_type, size_t *n, const char *field) {
  return tarn__thrift_list_min(d, type, 1, elem_type, n, field);
}

static int skip_value(tarn__thrift_rd *d, int type, int in_list, int nest) {
  if (nest >= TARN__THRIFT_MAX_DEPTH)
    return tarn__corrupt(d->r.what, here(d), "values nested deeper than %d",
                         TARN__THRIFT_MAX_DEPTH);
  int64_t x;
  const uint8_t *p;
  size_t n;
  int rc, t;
  switch (type) {
  case TARN__T_BOOL:
  case TARN__T_BOOL_FALSE: return in_list ? tarn__rd_bytes(&d->r, 1, &p, "bool") : 0;
  case TARN__T_BYTE: return tarn__rd_bytes(&d->r, 1, &p, "byte");
  case TARN__T_I16: return rd_zigzag(d, 16, &x, "i16");
  case TARN__T_I32: return rd_zigzag(d, 32, &x, "i32");
  case TARN__T_I64: return rd_zigzag(d, 64, &x, "i64");
  case TARN__T_DOUBLE: return tarn__rd_bytes(&d->r, 8, &p, "double");
  case TARN__T_BINARY: return tarn__thrift_binary(d, type, &p, &n, "binary");
  case TARN__T_LIST:
  case TARN__T_SET:
    if ((rc = tarn__thrift_list(d, type, &t, &n, "list")))
      return rc;
    for (size_t i = 0; i < n; i++)
      if ((rc = skip_value(d, t, 1, nest + 1)))
        return rc;
    return 0;
  case TARN__T_MAP: {
    size_t start = here(d);
    uint64_t count = 0;
    uint8_t kv;
    if ((rc = tarn__rd_uvarint(&d->r, &count, 5, INT32_MAX, "map size")))
      return rc;
    if (count == 0)
      return 0;
    if ((rc = rd_byte(d, &kv, "map types")))
      return rc;
    if (count > tarn__rd_left(&d->r))
      return tarn__corrupt(d->r.what, start, "map of %llu entries in %zu bytes",
                           (unsigned long long)count, tarn__rd_left(&d->r));
    for (uint64_t i = 0; i < count; i++)
      if ((rc = skip_value(d, kv >> 4, 1, nest + 1)) || (rc = skip_value(d, kv & 15, 1, nest + 1)))
        return rc;
    return 0;
  }
  case TARN__T_STRUCT: {
    int depth = d->depth;
    if ((rc = tarn__thrift_struct_begin(d)))
      return rc;
    while (d->depth > depth) {
      int16_t id;
      if ((rc = tarn__thrift_field(d, &id, &t)))
        return rc;
      if (t != TARN__T_STOP && (rc = skip_value(d, t, 0, nest + 1)))
        return rc;
    }
    return 0;
  }
  default: return tarn__corrupt(d->r.what, here(d), "type %d is not a Thrift type", type);
  }
}

int tarn__thrift_skip(tarn__thrift_rd *d, int type) { return skip_value(d, type, 0, d->depth); }

/* ---- encoder ---------------------------------------------------------- */

void tarn__thrift_wr_init(tarn__thrift_wr *w, tarn_buf *b) {
  w->b = b;
  w->rc = 0;
  w->depth = 0;
}

static void w_byte(tarn__thrift_wr *w, uint8_t c) {
  if (w->rc == 0)
    w->rc = tarn_buf_putc(w->b, c);
}

static void w_varint(tarn__thrift_wr *w, uint64_t v) {
  if (w->rc == 0)
    w->rc = tarn_buf_put_uvarint(w->b, v);
}

static uint64_t zigzag(int64_t v) { return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63); }

void tarn__thrift_w_field(tarn__thrift_wr *w, int16_t id, int type) {
  if (w->depth == 0) {
    if (w->rc == 0)
      w->rc = tarn__err(TARN_EINVAL, "thrift: field written outside a struct");
    return;
  }
  int16_t *last = &w->last_id[w->depth - 1];
  int delta = id - *last;
  if (delta > 0 && delta <= 15) {
    w_byte(w, (uint8_t)(delta << 4 | type));
  } else {
    w_byte(w, (uint8_t)type);
    w_varint(w, zigzag(id));
  }
  *last = id;
}

void tarn__thrift_w_i32(tarn__thrift_wr *w, int16_t id, int32_t v) {
  tarn__thrift_w_field(w, id, TARN__T_I32);
  w_varint(w, zigzag(v));
}

void tarn__thrift_w_i64(tarn__thrift_wr *w, int16_t id, int64_t v) {
  tarn__thrift_w_field(w, id, TARN__T_I64);
  w_varint(w, zigzag(v));
}

void tarn__thrift_w_bool(tarn__thrift_wr *w, int16_t id, int v) {
  tarn__thrift_w_field(w, id, v ? TARN__T_BOOL : TARN__T_BOOL_FALSE);
}

void tarn__thrift_w_elem_binary(tarn__thrift_wr *w, const void *p, size_t n) {
  w_varint(w, n);
  if (w->rc == 0)
    w->rc = tarn_buf_append(w->b, p, n);
}

void tarn__thrift_w_binary(tarn__thrift_wr *w, int16_t id, const void *p, size_t n) {
  tarn__thrift_w_field(w, id, TARN__T_BINARY);
  tarn__thrift_w_elem_binary(w, p, n);
}

void tarn__thrift_w_string(tarn__thrift_wr *w, int16_t id, const char *s) {
  tarn__thrift_w_binary(w, id, s, strlen(s));
}

void tarn__thrift_w_struct_begin(tarn__thrift_wr *w, int16_t id) {
  if (id >= 0)
    tarn__thrift_w_field(w, id, TARN__T_STRUCT);
  if (w->depth >= TARN__THRIFT_MAX_DEPTH) {
    if (w->rc == 0)
      w->rc = tarn__err(TARN_EINVAL, "thrift: structs nested too deep");
    return;
  }
  w->last_id[w->depth++] = 0;
}

void tarn__thrift_w_struct_end(tarn__thrift_wr *w) {
  w_byte(w, TARN__T_STOP);
  if (w->depth > 0)
    w->depth--;
}

void tarn__thrift_w_list(tarn__thrift_wr *w, int16_t id, int elem_type, size_t n) {
  tarn__thrift_w_field(w, id, TARN__T_LIST);
  if (n < 15) {
    w_byte(w, (uint8_t)(n << 4 | (size_t)elem_type));
  } else {
    w_byte(w, (uint8_t)(0xf0 | elem_type));
    w_varint(w, n);
  }
}

void tarn__thrift_w_elem_i32(tarn__thrift_wr *w, int32_t v) { w_varint(w, zigzag(v)); }
