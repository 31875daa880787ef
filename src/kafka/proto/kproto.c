/* The one interpreter of the Kafka message descriptors (kproto_desc.h) that tarn-kgen
 * generates from src/kafka/proto/defs: decode, encode, defaults, for every declared
 * api/version. Wire rules (KIP-482 for flexible versions): below the first flexible
 * version strings have an int16 length, bytes/records an int32 length, arrays an int32
 * count (-1 null); from it on they are "compact" (unsigned varint of length + 1, 0 null)
 * and every struct ends with a tagged-field section (count, then tag, size, value). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kafka/proto/kproto.h"
#include "kafka/proto/kproto_desc.h"
#include "util/bytes.h"
#include "util/error.h"

/* Arrays nest a few levels deep in every declared message; a bound keeps a hostile input
 * from recursing further than the declarations allow. */
#define KPROTO_MAX_DEPTH 16

/* ---- arena ------------------------------------------------------------------------ */

struct tarn__karena_chunk {
  tarn__karena_chunk *next;
  size_t cap, used;
  _Alignas(max_align_t) unsigned char mem[];
};

void tarn__karena_init(tarn__karena *a) { memset(a, 0, sizeof *a); }

void tarn__karena_free(tarn__karena *a) {
  for (tarn__karena_chunk *c = a->head, *n; c; c = n) {
    n = c->next;
    free(c);
  }
  memset(a, 0, sizeof *a);
}

void *tarn__karena_alloc(tarn__karena *a, size_t n) {
  size_t al = _Alignof(max_align_t);
  if (n > SIZE_MAX / 2) {
    tarn__err(TARN_ENOMEM, "kafka arena: %zu bytes asked", n);
    return NULL;
  }
  n = n ? (n + al - 1) / al * al : al;
  if (a->limit && (n > a->limit || a->used > a->limit - n)) {
    tarn__err(TARN_ENOMEM, "kafka arena: bound of %zu bytes reached", a->limit);
    return NULL;
  }
  tarn__karena_chunk *c = a->head;
  if (!c || c->cap - c->used < n) {
    size_t cap = n > 8192 ? n : 8192;
    c = malloc(sizeof *c + cap);
    if (!c) {
      tarn__err(TARN_ENOMEM, "kafka arena: out of memory");
      return NULL;
    }
    c->cap = cap, c->used = 0, c->next = a->head;
    a->head = c;
  }
  void *p = c->mem + c->used;
  c->used += n;
  a->used += n;
  memset(p, 0, n);
  return p;
}

/* ---- descriptors -------------------------------------------------------------------- */

const tarn__kmsgdesc *tarn__kproto_desc(int16_t api_key) {
  for (size_t i = 0; i < tarn__kproto_nmsgs; i++)
    if (tarn__kproto_msgs[i].api_key == api_key)
      return &tarn__kproto_msgs[i];
  return NULL;
}

const tarn__kapi_range *tarn__kproto_apis(size_t *n) {
  *n = tarn__kproto_nmsgs;
  return tarn__kproto_ranges;
}

const tarn__kapi_range *tarn__kproto_api(int16_t api_key) {
  size_t n;
  const tarn__kapi_range *r = tarn__kproto_apis(&n);
  for (size_t i = 0; i < n; i++)
    if (r[i].api_key == api_key)
      return &r[i];
  return NULL;
}

bool tarn__kproto_supported(int16_t api_key, int16_t version) {
  const tarn__kmsgdesc *d = tarn__kproto_desc(api_key);
  return d && version >= d->min_version && version <= d->max_version;
}

bool tarn__kproto_flexible(int16_t api_key, int16_t version) {
  const tarn__kmsgdesc *d = tarn__kproto_desc(api_key);
  return d && version >= d->first_flexible;
}

int tarn__kreq_header_version(int16_t api_key, int16_t version) {
  return tarn__kproto_flexible(api_key, version) ? 2 : 1;
}

int tarn__kresp_header_version(int16_t api_key, int16_t version) {
  if (api_key == TARN__KAPI_API_VERSIONS)
    return 0;
  return tarn__kproto_flexible(api_key, version) ? 1 : 0;
}

static int in(tarn__kvers r, int v) { return r.lo >= 0 && v >= r.lo && v <= r.hi; }

static size_t scalar_size(int type) {
  switch (type) {
  case TARN__KT_BOOL: return sizeof(bool);
  case TARN__KT_INT8: return 1;
  case TARN__KT_INT16:
  case TARN__KT_UINT16: return 2;
  case TARN__KT_INT32:
  case TARN__KT_UINT32:
  case TARN__KT_VARINT: return 4;
  case TARN__KT_INT64:
  case TARN__KT_VARLONG: return 8;
  case TARN__KT_FLOAT64: return sizeof(double);
  case TARN__KT_UUID: return 16;
  case TARN__KT_STRING: return sizeof(tarn__kstr);
  case TARN__KT_BYTES:
  case TARN__KT_RECORDS: return sizeof(tarn__kbytes);
  default: return 0;
  }
}

static void init_struct(const tarn__kstruct *s, void *p);

/* The declared default of one value (an array's element types have no default but
 * zero, which is what Kafka's generated code gives them too). */
static void init_field(const tarn__kfield *f, unsigned char *p) {
  switch (f->type) {
  case TARN__KT_BOOL: *(bool *)p = f->idef != 0; break;
  case TARN__KT_INT8: *(int8_t *)p = (int8_t)f->idef; break;
  case TARN__KT_INT16: *(int16_t *)p = (int16_t)f->idef; break;
  case TARN__KT_UINT16: *(uint16_t *)p = (uint16_t)f->idef; break;
  case TARN__KT_INT32:
  case TARN__KT_VARINT: *(int32_t *)p = (int32_t)f->idef; break;
  case TARN__KT_UINT32: *(uint32_t *)p = (uint32_t)f->idef; break;
  case TARN__KT_INT64:
  case TARN__KT_VARLONG: *(int64_t *)p = f->idef; break;
  case TARN__KT_FLOAT64: *(double *)p = f->fdef; break;
  case TARN__KT_UUID: memset(p, 0, 16); break;
  case TARN__KT_STRING:
    *(tarn__kstr *)p =
        f->null_def ? (tarn__kstr){NULL, -1} : (tarn__kstr){f->sdef, (int32_t)strlen(f->sdef)};
    break;
  case TARN__KT_BYTES:
  case TARN__KT_RECORDS: *(tarn__kbytes *)p = (tarn__kbytes){NULL, f->null_def ? -1 : 0}; break;
  case TARN__KT_ARRAY: *(tarn__karray *)p = (tarn__karray){f->null_def ? -1 : 0, NULL}; break;
  default: break;
  }
}

static void init_struct(const tarn__kstruct *s, void *p) {
  memset(p, 0, s->size);
  for (unsigned i = 0; i < s->nfields; i++)
    init_field(&s->fields[i], (unsigned char *)p + s->fields[i].off);
}

static const tarn__kstruct *msg_struct(int16_t api_key, int response) {
  const tarn__kmsgdesc *d = tarn__kproto_desc(api_key);
  return d ? (response ? d->resp : d->req) : NULL;
}

int tarn__kmsg_init(int16_t api_key, int response, void *msg) {
  const tarn__kstruct *s = msg_struct(api_key, response);
  if (!s)
    return tarn__err(TARN_EUNSUPPORTED, "kafka: api key %d is not declared", api_key);
  init_struct(s, msg);
  return 0;
}

/* ---- decode ----------------------------------------------------------------------- */

typedef struct dctx {
  tarn__rd r;
  tarn__karena *a;
  int version;
  int flexible;
  int depth;
  char what[64];
} dctx;

/* The fewest bytes one value of a struct takes at a version: the bound every array
 * count is checked against before anything is allocated for it. */
static size_t min_wire(const tarn__kstruct *s, int v, int flex, int depth) {
  size_t n = flex ? 1 : 0;
  if (depth > KPROTO_MAX_DEPTH)
    return n;
  for (unsigned i = 0; i < s->nfields; i++) {
    const tarn__kfield *f = &s->fields[i];
    if (!in(f->versions, v) || (flex && in(f->tagged, v)))
      continue;
    switch (f->type) {
    case TARN__KT_STRING: n += flex ? 1 : 2; break;
    case TARN__KT_BYTES:
    case TARN__KT_RECORDS:
    case TARN__KT_ARRAY: n += flex ? 1 : 4; break;
    case TARN__KT_VARINT:
    case TARN__KT_VARLONG: n += 1; break;
    case TARN__KT_BOOL: n += 1; break;
    default: n += scalar_size(f->type); break;
    }
  }
  return n;
}

static int bad(dctx *c, size_t at, const tarn__kstruct *s, const char *field, const char *what) {
  return tarn__corrupt(c->what, c->r.base + at, "%s.%s: %s", s->name, field, what);
}

/* A length or count: int16/int32 below flexible versions, unsigned varint + 1 from them.
 * *n gets -1 for null. */
static int rd_len(dctx *c, const tarn__kstruct *s, const char *field, int wide, int32_t *n) {
  size_t at = c->r.off;
  if (c->flexible) {
    uint64_t x = 0;
    int rc = tarn__rd_uvarint(&c->r, &x, 5, 0x80000000u, field);
    if (rc)
      return rc;
    *n = (int32_t)((int64_t)x - 1);
  } else if (wide) {
    uint32_t x;
    int rc = tarn__rd_be32(&c->r, &x, field);
    if (rc)
      return rc;
    *n = (int32_t)x;
  } else {
    int rc = tarn__rd_need(&c->r, 2, field);
    if (rc)
      return rc;
    *n = (int16_t)(c->r.p[c->r.off] << 8 | c->r.p[c->r.off + 1]);
    c->r.off += 2;
  }
  if (*n < -1)
    return bad(c, at, s, field, "negative length");
  return 0;
}

static int dec_struct(dctx *c, const tarn__kstruct *s, void *p);

static int dec_value(dctx *c, const tarn__kstruct *s, const tarn__kfield *f, int type, int nullable,
                     unsigned char *p) {
  size_t at = c->r.off;
  int rc = 0;
  switch (type) {
  case TARN__KT_BOOL: {
    if ((rc = tarn__rd_need(&c->r, 1, f->name)))
      return rc;
    uint8_t b = c->r.p[c->r.off++];
    if (b > 1)
      return bad(c, at, s, f->name, "bool is neither 0 nor 1");
    *(bool *)p = b;
    return 0;
  }
  case TARN__KT_INT8:
    if ((rc = tarn__rd_need(&c->r, 1, f->name)))
      return rc;
    *(int8_t *)p = (int8_t)c->r.p[c->r.off++];
    return 0;
  case TARN__KT_INT16:
  case TARN__KT_UINT16:
    if ((rc = tarn__rd_need(&c->r, 2, f->name)))
      return rc;
    *(uint16_t *)p = (uint16_t)(c->r.p[c->r.off] << 8 | c->r.p[c->r.off + 1]);
    c->r.off += 2;
    return 0;
  case TARN__KT_INT32:
  case TARN__KT_UINT32: {
    uint32_t x;
    if ((rc = tarn__rd_be32(&c->r, &x, f->name)))
      return rc;
    *(uint32_t *)p = x;
    return 0;
  }
  case TARN__KT_INT64:
  case TARN__KT_FLOAT64: {
    uint64_t x;
    if ((rc = tarn__rd_be64(&c->r, &x, f->name)))
      return rc;
    memcpy(p, &x, 8);
    return 0;
  }
  case TARN__KT_VARINT:
  case TARN__KT_VARLONG: {
    uint64_t x = 0;
    int w = type == TARN__KT_VARINT;
    if ((rc = tarn__rd_uvarint(&c->r, &x, w ? 5 : 10, w ? UINT32_MAX : UINT64_MAX, f->name)))
      return rc;
    int64_t v = (int64_t)(x >> 1) ^ -(int64_t)(x & 1);
    if (w)
      *(int32_t *)p = (int32_t)v;
    else
      *(int64_t *)p = v;
    return 0;
  }
  case TARN__KT_UUID: {
    const uint8_t *b;
    if ((rc = tarn__rd_bytes(&c->r, 16, &b, f->name)))
      return rc;
    memcpy(p, b, 16);
    return 0;
  }
  case TARN__KT_STRING:
  case TARN__KT_BYTES:
  case TARN__KT_RECORDS: {
    int32_t n;
    if ((rc = rd_len(c, s, f->name, type != TARN__KT_STRING, &n)))
      return rc;
    const uint8_t *b = NULL;
    if (n < 0) {
      if (!nullable)
        return bad(c, at, s, f->name, "null where the version does not allow it");
    } else if ((rc = tarn__rd_bytes(&c->r, (size_t)n, &b, f->name)))
      return rc;
    if (type == TARN__KT_STRING)
      *(tarn__kstr *)p = (tarn__kstr){(const char *)b, n};
    else
      *(tarn__kbytes *)p = (tarn__kbytes){b, n};
    return 0;
  }
  case TARN__KT_ARRAY: {
    int32_t n;
    if ((rc = rd_len(c, s, f->name, 1, &n)))
      return rc;
    tarn__karray *arr = (tarn__karray *)p;
    arr->n = n, arr->v = NULL;
    if (n < 0) {
      if (!nullable)
        return bad(c, at, s, f->name, "null array where the version does not allow it");
      return 0;
    }
    if (!n)
      return 0;
    if (++c->depth > KPROTO_MAX_DEPTH)
      return bad(c, at, s, f->name, "nested too deep");
    int et = f->elem;
    size_t esz = et == TARN__KT_STRUCT ? f->sub->size : scalar_size(et);
    size_t emin = et == TARN__KT_STRUCT    ? min_wire(f->sub, c->version, c->flexible, c->depth)
                  : et == TARN__KT_STRING  ? (c->flexible ? 1 : 2)
                  : (et == TARN__KT_BYTES) ? (c->flexible ? 1 : 4)
                  : (et == TARN__KT_VARINT || et == TARN__KT_VARLONG || et == TARN__KT_BOOL)
                      ? 1
                      : scalar_size(et);
    if (!emin)
      emin = 1;
    if ((size_t)n > tarn__rd_left(&c->r) / emin)
      return tarn__corrupt(c->what, c->r.base + at,
                           "%s.%s: %d elements cannot fit in the %zu bytes left", s->name, f->name,
                           n, tarn__rd_left(&c->r));
    unsigned char *v = tarn__karena_alloc(c->a, (size_t)n * esz);
    if (!v)
      return tarn__errctx(TARN_ENOMEM, "%s: %s.%s", c->what, s->name, f->name);
    arr->v = v;
    for (int32_t i = 0; i < n; i++) {
      unsigned char *e = v + (size_t)i * esz;
      rc = et == TARN__KT_STRUCT ? dec_struct(c, f->sub, e) : dec_value(c, s, f, et, 0, e);
      if (rc)
        return rc;
    }
    c->depth--;
    return 0;
  }
  default: return bad(c, at, s, f->name, "undeclared type");
  }
}

/* The tagged-field section that ends a struct in flexible versions: known tags decode
 * into their fields, unknown ones are skipped. */
static int dec_tagged(dctx *c, const tarn__kstruct *s, unsigned char *p) {
  uint64_t count = 0, tag = 0, size = 0;
  int rc = tarn__rd_uvarint(&c->r, &count, 5, UINT32_MAX, "tagged field count");
  if (rc)
    return rc;
  int64_t last = -1;
  for (uint64_t i = 0; i < count; i++) {
    size_t at = c->r.off;
    if ((rc = tarn__rd_uvarint(&c->r, &tag, 5, UINT32_MAX, "tag")) ||
        (rc = tarn__rd_uvarint(&c->r, &size, 5, UINT32_MAX, "tagged field size")))
      return rc;
    if ((int64_t)tag <= last)
      return bad(c, at, s, "(tags)", "tags not in ascending order");
    last = (int64_t)tag;
    if (size > tarn__rd_left(&c->r))
      return tarn__corrupt(c->what, c->r.base + at, "%s: tag %llu of %llu bytes, %zu left", s->name,
                           (unsigned long long)tag, (unsigned long long)size, tarn__rd_left(&c->r));
    const tarn__kfield *f = NULL;
    for (unsigned j = 0; j < s->nfields; j++)
      if (in(s->fields[j].tagged, c->version) && s->fields[j].tag == (int32_t)tag &&
          in(s->fields[j].versions, c->version))
        f = &s->fields[j];
    if (!f) {
      c->r.off += size;
      continue;
    }
    /* The value must fill its size exactly: decode it from a cursor bounded there. */
    tarn__rd outer = c->r;
    c->r.len = c->r.off + size;
    rc = dec_value(c, s, f, f->type, in(f->nullable, c->version), p + f->off);
    if (!rc && c->r.off != c->r.len)
      rc = bad(c, c->r.off, s, f->name, "tagged value shorter than its size");
    size_t end = c->r.off;
    c->r = outer;
    c->r.off = end;
    if (rc)
      return rc;
  }
  return 0;
}

static int dec_struct(dctx *c, const tarn__kstruct *s, void *out) {
  unsigned char *p = out;
  init_struct(s, p);
  for (unsigned i = 0; i < s->nfields; i++) {
    const tarn__kfield *f = &s->fields[i];
    if (!in(f->versions, c->version) || (c->flexible && in(f->tagged, c->version)))
      continue;
    int rc = dec_value(c, s, f, f->type, in(f->nullable, c->version), p + f->off);
    if (rc)
      return rc;
  }
  return c->flexible ? dec_tagged(c, s, p) : 0;
}

static void name_msg(char *buf, size_t n, const tarn__kmsgdesc *d, int response, int version) {
  snprintf(buf, n, "kafka %s%s v%d", d->name, response ? "Response" : "Request", version);
}

int tarn__kmsg_decode(int16_t api_key, int16_t version, int response, const uint8_t *buf,
                      size_t len, tarn__karena *a, void *out_struct) {
  const tarn__kmsgdesc *d = tarn__kproto_desc(api_key);
  if (!d || version < d->min_version || version > d->max_version)
    return tarn__err(TARN_EUNSUPPORTED, "kafka: api key %d version %d is not served", api_key,
                     version);
  dctx c = {.a = a, .version = version, .flexible = version >= d->first_flexible};
  name_msg(c.what, sizeof c.what, d, response, version);
  tarn__rd_init(&c.r, buf, len, c.what);
  c.r.what = c.what;
  /* A decode takes at most a small multiple of its input: every element costs at most
   * 16 times its fewest wire bytes in the structs (a 2-byte string is a 16-byte kstr). */
  size_t saved = a->limit;
  if (!saved)
    a->limit = a->used + (len < SIZE_MAX / 32 ? 16 * len : SIZE_MAX / 2) + 4096;
  const tarn__kstruct *s = response ? d->resp : d->req;
  int rc = dec_struct(&c, s, out_struct);
  if (!rc && c.r.off != len)
    rc = tarn__corrupt(c.what, c.r.off, "%zu bytes after the message", len - c.r.off);
  a->limit = saved;
  return rc;
}

/* ---- encode ----------------------------------------------------------------------- */

typedef struct ectx {
  int version, flexible, depth;
  const char *what;
} ectx;

static int enc_bad(ectx *c, const tarn__kstruct *s, const tarn__kfield *f, const char *why) {
  return tarn__err(TARN_EINVAL, "%s: %s.%s: %s", c->what, s->name, f->name, why);
}

static int put16(tarn_buf *b, uint16_t v) {
  uint8_t x[2] = {(uint8_t)(v >> 8), (uint8_t)v};
  return tarn_buf_append(b, x, 2);
}

static int put_len(ectx *c, tarn_buf *b, int wide, int32_t n) {
  if (c->flexible)
    return tarn_buf_put_uvarint(b, (uint64_t)((int64_t)n + 1));
  return wide ? tarn_buf_put_be32(b, (uint32_t)n) : put16(b, (uint16_t)(int16_t)n);
}

static int enc_struct(ectx *c, const tarn__kstruct *s, const void *in, tarn_buf *b);

static int enc_value(ectx *c, const tarn__kstruct *s, const tarn__kfield *f, int type, int nullable,
                     const unsigned char *p, tarn_buf *b) {
  switch (type) {
  case TARN__KT_BOOL: return tarn_buf_putc(b, *(const bool *)p ? 1 : 0);
  case TARN__KT_INT8: return tarn_buf_putc(b, (uint8_t) * (const int8_t *)p);
  case TARN__KT_INT16:
  case TARN__KT_UINT16: return put16(b, *(const uint16_t *)p);
  case TARN__KT_INT32:
  case TARN__KT_UINT32: return tarn_buf_put_be32(b, *(const uint32_t *)p);
  case TARN__KT_INT64:
  case TARN__KT_FLOAT64: {
    uint64_t x;
    memcpy(&x, p, 8);
    return tarn_buf_put_be64(b, x);
  }
  case TARN__KT_VARINT: {
    int32_t v = *(const int32_t *)p;
    return tarn_buf_put_uvarint(b, (uint32_t)(((uint32_t)v << 1) ^ (uint32_t)(v >> 31)));
  }
  case TARN__KT_VARLONG: {
    int64_t v = *(const int64_t *)p;
    return tarn_buf_put_uvarint(b, ((uint64_t)v << 1) ^ (uint64_t)(v >> 63));
  }
  case TARN__KT_UUID: return tarn_buf_append(b, p, 16);
  case TARN__KT_STRING:
  case TARN__KT_BYTES:
  case TARN__KT_RECORDS: {
    const void *d;
    int32_t n;
    if (type == TARN__KT_STRING)
      d = ((const tarn__kstr *)p)->p, n = ((const tarn__kstr *)p)->len;
    else
      d = ((const tarn__kbytes *)p)->p, n = ((const tarn__kbytes *)p)->len;
    if (n < -1)
      return enc_bad(c, s, f, "negative length");
    if (n == -1 && !nullable)
      return enc_bad(c, s, f, "null where the version does not allow it");
    if (type == TARN__KT_STRING && !c->flexible && n > 0x7fff)
      return enc_bad(c, s, f, "string longer than 32767 bytes");
    if (n > 0 && !d)
      return enc_bad(c, s, f, "length without data");
    int rc = put_len(c, b, type != TARN__KT_STRING, n);
    return rc || n <= 0 ? rc : tarn_buf_append(b, d, (size_t)n);
  }
  case TARN__KT_ARRAY: {
    const tarn__karray *arr = (const tarn__karray *)p;
    if (arr->n < -1)
      return enc_bad(c, s, f, "negative count");
    if (arr->n == -1 && !nullable)
      return enc_bad(c, s, f, "null array where the version does not allow it");
    if (arr->n > 0 && !arr->v)
      return enc_bad(c, s, f, "count without elements");
    if (c->depth >= KPROTO_MAX_DEPTH)
      return enc_bad(c, s, f, "nested too deep");
    int rc = put_len(c, b, 1, arr->n);
    int et = f->elem;
    size_t esz = et == TARN__KT_STRUCT ? f->sub->size : scalar_size(et);
    c->depth++;
    for (int32_t i = 0; !rc && i < arr->n; i++) {
      const unsigned char *e = (const unsigned char *)arr->v + (size_t)i * esz;
      rc = et == TARN__KT_STRUCT ? enc_struct(c, f->sub, e, b) : enc_value(c, s, f, et, 0, e, b);
    }
    c->depth--;
    return rc;
  }
  default: return enc_bad(c, s, f, "undeclared type");
  }
}

/* Kafka writes a tagged field only when it differs from its default. */
static int is_default(const tarn__kfield *f, const unsigned char *p) {
  union {
    max_align_t align;
    unsigned char b[32];
  } u;
  unsigned char *d = u.b;
  init_field(f, d);
  switch (f->type) {
  case TARN__KT_STRING: {
    const tarn__kstr *a = (const tarn__kstr *)p, *e = (const tarn__kstr *)d;
    return a->len == e->len && (a->len <= 0 || !memcmp(a->p, e->p, (size_t)a->len));
  }
  case TARN__KT_BYTES:
  case TARN__KT_RECORDS:
    return ((const tarn__kbytes *)p)->len == ((const tarn__kbytes *)d)->len &&
           ((const tarn__kbytes *)p)->len <= 0;
  case TARN__KT_ARRAY: return ((const tarn__karray *)p)->n == ((const tarn__karray *)d)->n;
  default: return !memcmp(p, d, scalar_size(f->type));
  }
}

static int enc_tagged(ectx *c, const tarn__kstruct *s, const unsigned char *p, tarn_buf *b) {
  uint64_t count = 0;
  for (unsigned i = 0; i < s->nfields; i++) {
    const tarn__kfield *f = &s->fields[i];
    if (in(f->versions, c->version) && in(f->tagged, c->version) && !is_default(f, p + f->off))
      count++;
  }
  int rc = tarn_buf_put_uvarint(b, count);
  /* Declared in ascending tag order (tarn-kgen checks), so written in it. */
  for (unsigned i = 0; !rc && i < s->nfields; i++) {
    const tarn__kfield *f = &s->fields[i];
    if (!in(f->versions, c->version) || !in(f->tagged, c->version) || is_default(f, p + f->off))
      continue;
    tarn_buf v = TARN_BUF_INIT;
    rc = enc_value(c, s, f, f->type, in(f->nullable, c->version), p + f->off, &v);
    if (!rc && !(rc = tarn_buf_put_uvarint(b, (uint64_t)f->tag)) &&
        !(rc = tarn_buf_put_uvarint(b, v.len)))
      rc = tarn_buf_append(b, v.data, v.len);
    tarn_buf_free(&v);
  }
  return rc;
}

static int enc_struct(ectx *c, const tarn__kstruct *s, const void *in_struct, tarn_buf *b) {
  const unsigned char *p = in_struct;
  for (unsigned i = 0; i < s->nfields; i++) {
    const tarn__kfield *f = &s->fields[i];
    if (!in(f->versions, c->version) || (c->flexible && in(f->tagged, c->version)))
      continue;
    int rc = enc_value(c, s, f, f->type, in(f->nullable, c->version), p + f->off, b);
    if (rc)
      return rc;
  }
  return c->flexible ? enc_tagged(c, s, p, b) : 0;
}

int tarn__kmsg_encode(int16_t api_key, int16_t version, int response, const void *in_struct,
                      tarn_buf *out) {
  const tarn__kmsgdesc *d = tarn__kproto_desc(api_key);
  if (!d || version < d->min_version || version > d->max_version)
    return tarn__err(TARN_EUNSUPPORTED, "kafka: api key %d version %d is not served", api_key,
                     version);
  char what[64];
  name_msg(what, sizeof what, d, response, version);
  ectx c = {.version = version, .flexible = version >= d->first_flexible, .what = what};
  size_t start = out->len;
  int rc = enc_struct(&c, response ? d->resp : d->req, in_struct, out);
  if (rc)
    out->len = start; /* nothing half-written is left behind */
  return rc;
}

/* ---- headers and frames ------------------------------------------------------------ */

int tarn__kreq_header_decode(const uint8_t *frame, size_t len, tarn__kreq_header *h,
                             size_t *body_off) {
  tarn__rd r;
  tarn__rd_init(&r, frame, len, "kafka request header");
  memset(h, 0, sizeof *h);
  h->client_id.len = -1;
  uint32_t corr;
  int rc = tarn__rd_need(&r, 4, "api key and version");
  if (rc)
    return rc;
  h->api_key = (int16_t)(frame[0] << 8 | frame[1]);
  h->api_version = (int16_t)(frame[2] << 8 | frame[3]);
  r.off = 4;
  if ((rc = tarn__rd_be32(&r, &corr, "correlation_id")))
    return rc;
  h->correlation_id = (int32_t)corr;
  if ((rc = tarn__rd_need(&r, 2, "client_id")))
    return rc;
  int16_t n = (int16_t)(frame[r.off] << 8 | frame[r.off + 1]);
  r.off += 2;
  if (n < -1)
    return tarn__corrupt(r.what, r.off - 2, "client_id: negative length");
  if (n >= 0) {
    const uint8_t *p;
    if ((rc = tarn__rd_bytes(&r, (size_t)n, &p, "client_id")))
      return rc;
    h->client_id = (tarn__kstr){(const char *)p, n};
  }
  *body_off = r.off;
  if (!tarn__kproto_supported(h->api_key, h->api_version))
    return tarn__err(TARN_EUNSUPPORTED, "kafka request: api key %d version %d is not served",
                     h->api_key, h->api_version);
  if (tarn__kreq_header_version(h->api_key, h->api_version) == 2) {
    /* Header v2's tagged fields: none is known, all are skipped. */
    static const tarn__kstruct none = {"request_header", 0, 0, NULL};
    dctx c = {.version = h->api_version, .flexible = 1};
    snprintf(c.what, sizeof c.what, "kafka request header");
    c.r = r;
    c.r.what = c.what;
    if ((rc = dec_tagged(&c, &none, NULL)))
      return rc;
    *body_off = c.r.off;
  }
  return 0;
}

int tarn__kresp_header_decode(int16_t api_key, int16_t version, const uint8_t *frame, size_t len,
                              int32_t *correlation_id, size_t *body_off) {
  tarn__rd r;
  tarn__rd_init(&r, frame, len, "kafka response header");
  uint32_t corr;
  int rc = tarn__rd_be32(&r, &corr, "correlation_id");
  if (rc)
    return rc;
  *correlation_id = (int32_t)corr;
  if (tarn__kresp_header_version(api_key, version) == 1) {
    static const tarn__kstruct none = {"response_header", 0, 0, NULL};
    dctx c = {.version = version, .flexible = 1};
    snprintf(c.what, sizeof c.what, "kafka response header");
    c.r = r;
    c.r.what = c.what;
    if ((rc = dec_tagged(&c, &none, NULL)))
      return rc;
    r.off = c.r.off;
  }
  *body_off = r.off;
  return 0;
}

/* Reserves the 4-byte size, runs the writer of header and body, patches the size. */
static int frame_end(tarn_buf *out, size_t start, int rc) {
  if (!rc && out->len - start - 4 > INT32_MAX)
    rc = tarn__err(TARN_ERANGE, "kafka frame: %zu bytes", out->len - start - 4);
  if (rc) {
    out->len = start;
    return rc;
  }
  tarn__st_be32(out->data + start, (uint32_t)(out->len - start - 4));
  return 0;
}

int tarn__kresp_frame(int16_t api_key, int16_t version, int32_t correlation_id, const void *resp,
                      tarn_buf *out) {
  size_t start = out->len;
  int rc = tarn_buf_put_be32(out, 0);
  if (!rc)
    rc = tarn_buf_put_be32(out, (uint32_t)correlation_id);
  if (!rc && tarn__kresp_header_version(api_key, version) == 1)
    rc = tarn_buf_putc(out, 0); /* no tagged fields */
  if (!rc)
    rc = tarn__kmsg_encode(api_key, version, 1, resp, out);
  return frame_end(out, start, rc);
}

int tarn__kreq_frame(const tarn__kreq_header *h, const void *req, tarn_buf *out) {
  size_t start = out->len;
  const tarn__kstr *id = &h->client_id;
  if (id->len < -1 || id->len > 0x7fff || (id->len > 0 && !id->p))
    return tarn__err(TARN_EINVAL, "kafka request header: client_id of length %d", id->len);
  int rc = tarn_buf_put_be32(out, 0);
  if (!rc)
    rc = put16(out, (uint16_t)h->api_key);
  if (!rc)
    rc = put16(out, (uint16_t)h->api_version);
  if (!rc)
    rc = tarn_buf_put_be32(out, (uint32_t)h->correlation_id);
  if (!rc)
    rc = put16(out, (uint16_t)(int16_t)id->len);
  if (!rc && id->len > 0)
    rc = tarn_buf_append(out, id->p, (size_t)id->len);
  if (!rc && tarn__kreq_header_version(h->api_key, h->api_version) == 2)
    rc = tarn_buf_putc(out, 0);
  if (!rc)
    rc = tarn__kmsg_encode(h->api_key, h->api_version, 0, req, out);
  return frame_end(out, start, rc);
}
