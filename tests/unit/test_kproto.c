/* The Kafka codec generated from the declarations (issue 13 §2, src/kafka/proto):
 * - librdkafka 2.0.2's own requests (tests/data/kproto/librdkafka.txt, captured from kcat by
 *   tests/unit/kproto_capture_rdkafka.py): headers and bodies decode, and the frames
 *   re-encode byte for byte, the flexible ApiVersions v3 (header v2) among them;
 * - kafka-python 2.0.2's encodings (tests/data/kproto/vectors.txt, written by
 *   tests/unit/kproto_vectors.py) decode and re-encode byte for byte, every api/version
 *   it has up to tarn's highest;
 * - every declared api/version, request and response, round-trips a struct with every
 *   field populated (tagged fields too), and the decoded fields equal the encoded ones;
 * - every decoder fails cleanly (TARN_ECORRUPT, no overread: each prefix sits in a
 *   buffer of exactly its size) on truncation at every byte, and on hostile lengths;
 * - the flexible ApiVersions v3 body and the headers match bytes worked out by hand from
 *   KIP-482 / KIP-511; unknown tagged fields are skipped. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "kafka/proto/kproto.h"
#include "kafka/proto/kproto_desc.h"
#include "tarn/error.h"

/* ---- populated structs, from the descriptors ---------------------------------------- */

typedef struct filler {
  tarn__karena *a;
  int version;
  unsigned n;
} filler;

static size_t elem_size(const tarn__kfield *f) {
  switch (f->elem) {
  case TARN__KT_STRUCT: return f->sub->size;
  case TARN__KT_BOOL: return sizeof(bool);
  case TARN__KT_INT8: return 1;
  case TARN__KT_INT16:
  case TARN__KT_UINT16: return 2;
  case TARN__KT_INT32:
  case TARN__KT_UINT32:
  case TARN__KT_VARINT: return 4;
  case TARN__KT_INT64:
  case TARN__KT_VARLONG:
  case TARN__KT_FLOAT64: return 8;
  case TARN__KT_UUID: return 16;
  case TARN__KT_STRING: return sizeof(tarn__kstr);
  default: return sizeof(tarn__kbytes);
  }
}

static int vin(tarn__kvers r, int v) { return r.lo >= 0 && v >= r.lo && v <= r.hi; }

static void fill_struct(filler *fl, const tarn__kstruct *s, void *p);

static void fill_value(filler *fl, const tarn__kfield *f, int type, int nullable,
                       unsigned char *p) {
  unsigned n = ++fl->n;
  char *str;
  switch (type) {
  case TARN__KT_BOOL: *(bool *)p = n & 1; break;
  case TARN__KT_INT8: *(int8_t *)p = (int8_t)(n * 3); break;
  case TARN__KT_INT16: *(int16_t *)p = (int16_t)(n * 257 - 3); break;
  case TARN__KT_UINT16: *(uint16_t *)p = (uint16_t)(n * 513); break;
  case TARN__KT_INT32:
  case TARN__KT_VARINT: *(int32_t *)p = (int32_t)(n * 100003u) - 7; break;
  case TARN__KT_UINT32: *(uint32_t *)p = n * 4000037u; break;
  case TARN__KT_INT64:
  case TARN__KT_VARLONG: *(int64_t *)p = -(int64_t)n * 0x100000007LL; break;
  case TARN__KT_FLOAT64: *(double *)p = n * 0.5; break;
  case TARN__KT_UUID:
    for (int i = 0; i < 16; i++)
      p[i] = (unsigned char)(n + i);
    break;
  case TARN__KT_STRING:
    if (nullable && n % 5 == 0) {
      *(tarn__kstr *)p = (tarn__kstr){NULL, -1};
      break;
    }
    str = tarn__karena_alloc(fl->a, 32);
    assert_non_null(str);
    snprintf(str, 32, "%s-%u", f->name, n);
    *(tarn__kstr *)p = (tarn__kstr){str, (int32_t)strlen(str)};
    break;
  case TARN__KT_BYTES:
  case TARN__KT_RECORDS: {
    if (nullable && n % 5 == 0) {
      *(tarn__kbytes *)p = (tarn__kbytes){NULL, -1};
      break;
    }
    uint8_t *b = tarn__karena_alloc(fl->a, n % 9 + 1);
    assert_non_null(b);
    for (unsigned i = 0; i < n % 9 + 1; i++)
      b[i] = (uint8_t)(n * 31 + i);
    *(tarn__kbytes *)p = (tarn__kbytes){b, (int32_t)(n % 9 + 1)};
    break;
  }
  case TARN__KT_ARRAY: {
    tarn__karray *arr = (tarn__karray *)p;
    if (nullable && n % 5 == 0) {
      arr->n = -1, arr->v = NULL;
      break;
    }
    arr->n = 2;
    size_t es = elem_size(f);
    unsigned char *v = tarn__karena_alloc(fl->a, 2 * es);
    assert_non_null(v);
    arr->v = v;
    for (int i = 0; i < 2; i++) {
      if (f->elem == TARN__KT_STRUCT)
        fill_struct(fl, f->sub, v + i * es);
      else
        fill_value(fl, f, f->elem, 0, v + i * es);
    }
    break;
  }
  default: fail_msg("undeclared type %d", type);
  }
}

static void fill_struct(filler *fl, const tarn__kstruct *s, void *p) {
  memset(p, 0, s->size);
  for (unsigned i = 0; i < s->nfields; i++) {
    const tarn__kfield *f = &s->fields[i];
    if (vin(f->versions, fl->version))
      fill_value(fl, f, f->type, vin(f->nullable, fl->version), (unsigned char *)p + f->off);
  }
}

/* Field by field: a present field equals what was encoded, an absent one its default. */
static void same_struct(const tarn__kstruct *s, int v, const unsigned char *a,
                        const unsigned char *b, const unsigned char *dflt);

static void same_value(const tarn__kfield *f, int type, const unsigned char *a,
                       const unsigned char *b) {
  switch (type) {
  case TARN__KT_STRING:
  case TARN__KT_BYTES:
  case TARN__KT_RECORDS: {
    const tarn__kbytes *x = (const tarn__kbytes *)a, *y = (const tarn__kbytes *)b;
    if (x->len != y->len || (x->len > 0 && memcmp(x->p, y->p, (size_t)x->len)))
      fail_msg("field %s: lengths %d / %d or bytes differ", f->name, x->len, y->len);
    break;
  }
  case TARN__KT_ARRAY: {
    const tarn__karray *x = (const tarn__karray *)a, *y = (const tarn__karray *)b;
    if (x->n != y->n)
      fail_msg("field %s: %d / %d elements", f->name, x->n, y->n);
    size_t es = elem_size(f);
    for (int32_t i = 0; i < x->n; i++) {
      const unsigned char *ea = (const unsigned char *)x->v + i * es;
      const unsigned char *eb = (const unsigned char *)y->v + i * es;
      if (f->elem == TARN__KT_STRUCT)
        same_struct(f->sub, -1, ea, eb, NULL);
      else
        same_value(f, f->elem, ea, eb);
    }
    break;
  }
  case TARN__KT_BOOL:
    if (*(const bool *)a != *(const bool *)b)
      fail_msg("field %s differs", f->name);
    break;
  default: {
    size_t n = type == TARN__KT_INT8                                                            ? 1
               : type == TARN__KT_INT16 || type == TARN__KT_UINT16                              ? 2
               : type == TARN__KT_UUID                                                          ? 16
               : type == TARN__KT_INT64 || type == TARN__KT_VARLONG || type == TARN__KT_FLOAT64 ? 8
                                                                                                : 4;
    if (memcmp(a, b, n))
      fail_msg("field %s differs", f->name);
  }
  }
}

static int cur_version;

static void same_struct(const tarn__kstruct *s, int v, const unsigned char *a,
                        const unsigned char *b, const unsigned char *dflt) {
  if (v < 0)
    v = cur_version;
  for (unsigned i = 0; i < s->nfields; i++) {
    const tarn__kfield *f = &s->fields[i];
    if (vin(f->versions, v))
      same_value(f, f->type, a + f->off, b + f->off);
    else if (dflt)
      same_value(f, f->type, dflt + f->off, b + f->off);
  }
}

/* ---- helpers ---------------------------------------------------------------------- */

static uint8_t *copy_exact(const uint8_t *p, size_t n) {
  uint8_t *c = malloc(n ? n : 1);
  assert_non_null(c);
  if (n)
    memcpy(c, p, n);
  return c;
}

/* Every strict prefix fails as corrupt, each in a buffer of exactly its length. */
static int truncations_fail(int16_t key, int16_t v, int resp, const uint8_t *msg, size_t len,
                            size_t sz) {
  int bad = 0;
  for (size_t cut = 0; cut < len; cut++) {
    uint8_t *c = copy_exact(msg, cut);
    void *out = malloc(sz);
    tarn__karena a;
    tarn__karena_init(&a);
    int rc = tarn__kmsg_decode(key, v, resp, c, cut, &a, out);
    if (rc != TARN_ECORRUPT) {
      fprintf(stderr, "api %d v%d %s: prefix %zu of %zu: rc %d\n", key, v, resp ? "resp" : "req",
              cut, len, rc);
      bad++;
    }
    tarn__karena_free(&a);
    free(out);
    free(c);
  }
  return bad;
}

static int hexval(int c) {
  return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* A file of tests/data/kproto, read line by line. */
static FILE *open_testdata(const char *name) {
  const char *dir = getenv("TARN_TESTDATA");
  assert_non_null(dir);
  char path[512];
  snprintf(path, sizeof path, "%s/kproto/%s", dir, name);
  FILE *fp = fopen(path, "r");
  assert_non_null(fp);
  return fp;
}

/* The hex at h (up to the line's end) as bytes in a buffer of exactly their length. */
static uint8_t *unhex(const char *h, size_t *len) {
  size_t hl = strcspn(h, "\r\n");
  assert_int_equal(hl % 2, 0);
  *len = hl / 2;
  uint8_t *b = malloc(*len ? *len : 1);
  assert_non_null(b);
  for (size_t i = 0; i < *len; i++)
    b[i] = (uint8_t)(hexval(h[2 * i]) << 4 | hexval(h[2 * i + 1]));
  return b;
}

/* ---- kafka-python's vectors ---------------------------------------------------------- */

static void test_kafka_python_vectors(void **state) {
  (void)state;
  FILE *fp = open_testdata("vectors.txt");
  static char line[1 << 16];
  int vectors = 0, failures = 0, seen[64][16] = {{0}};
  while (fgets(line, sizeof line, fp)) {
    if (line[0] == '#')
      continue;
    int key, v, off = 0;
    char kind[8];
    if (sscanf(line, "%d %d %7s %n", &key, &v, kind, &off) != 3)
      continue;
    int resp = !strcmp(kind, "resp");
    size_t len;
    uint8_t *msg = unhex(line + off, &len);
    const tarn__kmsgdesc *d = tarn__kproto_desc((int16_t)key);
    assert_non_null(d);
    size_t sz = (resp ? d->resp : d->req)->size;
    uint8_t *exact = copy_exact(msg, len);
    void *out = malloc(sz);
    tarn__karena a;
    tarn__karena_init(&a);
    int rc = tarn__kmsg_decode((int16_t)key, (int16_t)v, resp, exact, len, &a, out);
    if (rc) {
      fprintf(stderr, "vector api %d v%d %s: decode: %s\n", key, v, kind, tarn_errmsg());
      failures++;
    } else {
      tarn_buf b = TARN_BUF_INIT;
      rc = tarn__kmsg_encode((int16_t)key, (int16_t)v, resp, out, &b);
      if (rc || b.len != len || (len && memcmp(b.data, msg, len))) {
        fprintf(stderr, "vector api %d v%d %s: re-encode differs (rc %d, %zu vs %zu bytes)\n", key,
                v, kind, rc, b.len, len);
        failures++;
      }
      tarn_buf_free(&b);
      failures += truncations_fail((int16_t)key, (int16_t)v, resp, msg, len, sz);
    }
    if (key < 64 && v < 16)
      seen[key][v] |= resp ? 2 : 1;
    tarn__karena_free(&a);
    free(out);
    free(exact);
    free(msg);
    vectors++;
  }
  fclose(fp);
  assert_int_equal(failures, 0);
  /* kafka-python has request and response for each of these, at least at v0. */
  static const int keys[] = {0, 1, 2, 3, 8, 9, 10, 11, 12, 13, 14, 15, 16, 18, 19, 20};
  for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
    assert_int_equal(seen[keys[i]][0], 3);
  assert_true(seen[0][7] == 3 && seen[1][10] == 2 && seen[3][5] == 3);
  assert_true(vectors > 140);
}

/* ---- librdkafka's requests ----------------------------------------------------------- */

static void test_librdkafka_requests(void **state) {
  (void)state;
  FILE *fp = open_testdata("librdkafka.txt");
  static char line[1 << 16];
  int failures = 0, seen[64][16] = {{0}};
  while (fgets(line, sizeof line, fp)) {
    int key, v, off = 0;
    if (line[0] == '#' || sscanf(line, "%d %d %n", &key, &v, &off) != 2)
      continue;
    size_t len;
    uint8_t *frame = unhex(line + off, &len);
    tarn__kreq_header hd;
    size_t body;
    int rc = tarn__kreq_header_decode(frame, len, &hd, &body);
    assert_int_equal(rc, 0);
    assert_int_equal(hd.api_key, key);
    assert_int_equal(hd.api_version, v);
    assert_int_equal(hd.client_id.len, 7);
    assert_memory_equal(hd.client_id.p, "rdkafka", 7);
    const tarn__kmsgdesc *d = tarn__kproto_desc((int16_t)key);
    void *req = malloc(d->req->size);
    tarn__karena a;
    tarn__karena_init(&a);
    rc = tarn__kmsg_decode(hd.api_key, hd.api_version, 0, frame + body, len - body, &a, req);
    if (rc) {
      fprintf(stderr, "librdkafka api %d v%d: %s\n", key, v, tarn_errmsg());
      failures++;
    } else {
      tarn_buf b = TARN_BUF_INIT;
      assert_int_equal(tarn__kreq_frame(&hd, req, &b), 0);
      if (b.len != len + 4 || memcmp(b.data + 4, frame, len)) {
        fprintf(stderr, "librdkafka api %d v%d: re-encoded frame differs\n", key, v);
        failures++;
      }
      tarn_buf_free(&b);
      failures +=
          truncations_fail(hd.api_key, hd.api_version, 0, frame + body, len - body, d->req->size);
      if (key == TARN__KAPI_API_VERSIONS) {
        tarn__k_api_versions_req *q = req;
        assert_int_equal(q->client_software_name.len, 10);
        assert_memory_equal(q->client_software_name.p, "librdkafka", 10);
      }
      if (key == TARN__KAPI_PRODUCE) {
        tarn__k_produce_req *q = req;
        assert_int_equal(q->topic_data.n, 1);
        assert_memory_equal(q->topic_data.v[0].name.p, "t0", 2);
        /* A magic-2 batch: records point into the frame, magic at byte 16. */
        tarn__kbytes r = q->topic_data.v[0].partition_data.v[0].records;
        assert_true(r.len > 61 && r.p > frame && r.p + r.len <= frame + len);
        assert_int_equal(r.p[16], 2);
      }
    }
    seen[key][v] = 1;
    tarn__karena_free(&a);
    free(req);
    free(frame);
  }
  fclose(fp);
  assert_int_equal(failures, 0);
  /* What kcat negotiates against tarn's ranges (../shared/notes/kafka.md's table). */
  assert_true(seen[18][3] && seen[3][4] && seen[0][7] && seen[1][11] && seen[2][2]);
  assert_true(seen[22][1] && seen[10][2] && seen[11][5] && seen[14][3] && seen[12][3]);
  assert_true(seen[9][5] && seen[13][1]);
}

/* Values land in the fields the declarations name: a Produce v3 request written by hand
 * from the protocol guide, and the same body at v2 without its transactional id. */
static void test_vector_fields(void **state) {
  (void)state;
  /* transactional_id "t", acks -1, timeout 1000, [topic "x": [partition 7: records 3 bytes]] */
  static const uint8_t v3[] = {0, 1, 't', 0xff, 0xff, 0, 0,    0x03, 0xe8, 0, 0,
                               0, 1, 0,   1,    'x',  0, 0,    0,    1,    0, 0,
                               0, 7, 0,   0,    0,    3, 0xaa, 0xbb, 0xcc};
  tarn__karena a;
  tarn__karena_init(&a);
  tarn__k_produce_req r;
  assert_int_equal(tarn__kmsg_decode(TARN__KAPI_PRODUCE, 3, 0, v3, sizeof v3, &a, &r), 0);
  assert_int_equal(r.transactional_id.len, 1);
  assert_memory_equal(r.transactional_id.p, "t", 1);
  assert_int_equal(r.acks, -1);
  assert_int_equal(r.timeout_ms, 1000);
  assert_int_equal(r.topic_data.n, 1);
  assert_memory_equal(r.topic_data.v[0].name.p, "x", 1);
  assert_int_equal(r.topic_data.v[0].partition_data.n, 1);
  assert_int_equal(r.topic_data.v[0].partition_data.v[0].index, 7);
  assert_int_equal(r.topic_data.v[0].partition_data.v[0].records.len, 3);
  /* zero copy: records point into the request */
  assert_ptr_equal(r.topic_data.v[0].partition_data.v[0].records.p, v3 + 28);
  /* At v2 the same body has no transactional id: 2 bytes fewer, left at its default. */
  assert_int_equal(tarn__kmsg_decode(TARN__KAPI_PRODUCE, 2, 0, v3 + 3, sizeof v3 - 3, &a, &r), 0);
  assert_int_equal(r.transactional_id.len, -1);
  assert_int_equal(r.acks, -1);
  tarn__karena_free(&a);
}

/* ---- every api/version round-trips --------------------------------------------------- */

static void test_round_trip_every_version(void **state) {
  (void)state;
  size_t napis;
  const tarn__kapi_range *apis = tarn__kproto_apis(&napis);
  assert_int_equal(napis, 31); /* KIP-848: ConsumerGroupHeartbeat, ConsumerGroupDescribe */
  int checked = 0, bad = 0;
  for (size_t i = 0; i < napis; i++) {
    const tarn__kmsgdesc *d = tarn__kproto_desc(apis[i].api_key);
    assert_non_null(d);
    for (int v = d->min_version; v <= d->max_version; v++)
      for (int resp = 0; resp < 2; resp++) {
        const tarn__kstruct *s = resp ? d->resp : d->req;
        tarn__karena a;
        tarn__karena_init(&a);
        filler fl = {&a, v, (unsigned)(v * 13 + resp)};
        void *in = tarn__karena_alloc(&a, s->size), *out = malloc(s->size);
        void *dflt = malloc(s->size);
        fill_struct(&fl, s, in);
        assert_int_equal(tarn__kmsg_init(d->api_key, resp, dflt), 0);
        tarn_buf b1 = TARN_BUF_INIT, b2 = TARN_BUF_INIT;
        int rc = tarn__kmsg_encode(d->api_key, (int16_t)v, resp, in, &b1);
        if (rc)
          fail_msg("%s v%d %s: encode: %s", d->name, v, resp ? "resp" : "req", tarn_errmsg());
        uint8_t *exact = copy_exact(b1.data, b1.len);
        tarn__karena da;
        tarn__karena_init(&da);
        rc = tarn__kmsg_decode(d->api_key, (int16_t)v, resp, exact, b1.len, &da, out);
        if (rc)
          fail_msg("%s v%d %s: decode: %s", d->name, v, resp ? "resp" : "req", tarn_errmsg());
        cur_version = v;
        same_struct(s, v, in, out, dflt);
        assert_int_equal(tarn__kmsg_encode(d->api_key, (int16_t)v, resp, out, &b2), 0);
        assert_int_equal(b1.len, b2.len);
        if (b1.len)
          assert_memory_equal(b1.data, b2.data, b1.len);
        bad += truncations_fail(d->api_key, (int16_t)v, resp, b1.data, b1.len, s->size);
        tarn_buf_free(&b1);
        tarn_buf_free(&b2);
        tarn__karena_free(&da);
        tarn__karena_free(&a);
        free(exact);
        free(out);
        free(dflt);
        checked++;
      }
  }
  assert_int_equal(bad, 0);
  /* 0-3 + 0-8 + 0-8 + 0-11 + 0-5 + 0-2 + 0-5 + 0-3 x4 + 0-7 + 0-5 + 0-4 + 0-2 + 0-1 + 0-4
   * + 0-3 + 0-1 + 0-4 + 0-2 versions, each a request and a response; issue 37's DeleteGroups
   * 0-2, OffsetDelete 0, DescribeCluster 0-1, AlterConfigs 0-2, CreatePartitions 0-3,
   * IncrementalAlterConfigs 0-1, DeleteRecords 0-2, DescribeProducers 0, DescribeLogDirs 0-4. */
  assert_int_equal(checked, 2 * (4 + 9 + 9 + 12 + 6 + 3 + 6 + 4 * 4 + 8 + 6 + 5 + 3 + 2 + 5 + 2 +
                                 5 + 3 + 3 + 1 + 2) +
                                2 * (3 + 4 + 2) + 2 * 3 + 2 * 1 + 2 * 5 +
                                2 * (4 + 2 + 1 + 3)); /* KIP-848: Metadata 9-12, 68 0-1, 69 0,
                                                         ListGroups 3-5 */
}

/* ---- the declared ranges -------------------------------------------------------------- */

static void test_api_ranges(void **state) {
  (void)state;
  static const struct {
    int16_t key, max, flex;
  } want[] = {{0, 8, 9},  {1, 11, 12}, {2, 5, 6},       {3, 12, 9}, {8, 7, 8},  {9, 5, 6},
              {10, 2, 3}, {11, 5, 6},  {12, 3, 4},      {13, 3, 4}, {14, 3, 4}, {15, 4, 5},
              {16, 5, 3}, {17, 1, 2},  {18, 3, 3},      {19, 4, 5}, {20, 3, 4}, {21, 2, 2},
              {22, 1, 2}, {32, 4, 4},  {33, 2, 2},      {35, 4, 2}, {36, 2, 2}, {37, 3, 2},
              {42, 2, 2}, {44, 1, 1},  {47, 0, 0x7fff}, {60, 1, 0}, {61, 0, 0}, {68, 1, 0},
              {69, 0, 0}}; /* issue 37 */
  size_t n;
  const tarn__kapi_range *r = tarn__kproto_apis(&n);
  assert_int_equal(n, sizeof want / sizeof want[0]);
  for (size_t i = 0; i < n; i++) {
    assert_int_equal(r[i].api_key, want[i].key);
    assert_int_equal(r[i].min_version, 0);
    assert_int_equal(r[i].max_version, want[i].max);
    assert_int_equal(r[i].first_flexible, want[i].flex);
  }
  assert_string_equal(tarn__kproto_api(TARN__KAPI_API_VERSIONS)->name, "ApiVersions");
  assert_null(tarn__kproto_api(23));
  assert_true(tarn__kproto_flexible(TARN__KAPI_API_VERSIONS, 3));
  assert_false(tarn__kproto_flexible(TARN__KAPI_API_VERSIONS, 2));
  assert_false(tarn__kproto_supported(TARN__KAPI_FETCH, 12));
  assert_int_equal(tarn__kresp_header_version(TARN__KAPI_API_VERSIONS, 3), 0);
  assert_int_equal(tarn__kreq_header_version(TARN__KAPI_API_VERSIONS, 3), 2);
  assert_int_equal(tarn__kreq_header_version(TARN__KAPI_PRODUCE, 8), 1);
}

/* ---- flexible versions, by hand (KIP-482) ---------------------------------------------- */

static void test_api_versions_v3_bytes(void **state) {
  (void)state;
  tarn__karena a;
  tarn__karena_init(&a);
  /* Request v3: compact strings "a", "1", no tagged fields. */
  static const uint8_t req[] = {0x02, 'a', 0x02, '1', 0x00};
  tarn__k_api_versions_req q;
  assert_int_equal(tarn__kmsg_decode(TARN__KAPI_API_VERSIONS, 3, 0, req, sizeof req, &a, &q), 0);
  assert_int_equal(q.client_software_name.len, 1);
  assert_int_equal(q.client_software_version.p[0], '1');
  tarn_buf b = TARN_BUF_INIT;
  assert_int_equal(tarn__kmsg_encode(TARN__KAPI_API_VERSIONS, 3, 0, &q, &b), 0);
  assert_int_equal(b.len, sizeof req);
  assert_memory_equal(b.data, req, sizeof req);

  /* Response v3: error 0, [{18, 0, 3}] as a compact array with a tag section per element,
   * throttle 0, then the tagged fields: finalized_features_epoch (tag 1) = 5. */
  tarn__k_api_versions_resp r;
  assert_int_equal(tarn__kmsg_init(TARN__KAPI_API_VERSIONS, 1, &r), 0);
  assert_int_equal(r.finalized_features_epoch, -1); /* declared default */
  tarn__k_api_versions_api_version k = {18, 0, 3};
  r.api_keys.n = 1, r.api_keys.v = &k;
  r.finalized_features_epoch = 5;
  static const uint8_t resp[] = {0, 0,    0x02, 0,    18, 0, 0, 0, 3, 0x00, 0, 0, 0,
                                 0, 0x01, 0x01, 0x08, 0,  0, 0, 0, 0, 0,    0, 5};
  tarn_buf_reset(&b);
  assert_int_equal(tarn__kmsg_encode(TARN__KAPI_API_VERSIONS, 3, 1, &r, &b), 0);
  assert_int_equal(b.len, sizeof resp);
  assert_memory_equal(b.data, resp, sizeof resp);

  /* An unknown tag (7, 3 bytes) after the known one is skipped. */
  static const uint8_t unk[] = {0,    0,    0x02, 0, 18, 0, 0, 0, 3, 0x00, 0,    0,    0, 0, 0x02,
                                0x01, 0x08, 0,    0, 0,  0, 0, 0, 0, 9,    0x07, 0x03, 1, 2, 3};
  tarn__k_api_versions_resp r2;
  assert_int_equal(tarn__kmsg_decode(TARN__KAPI_API_VERSIONS, 3, 1, unk, sizeof unk, &a, &r2), 0);
  assert_int_equal(r2.finalized_features_epoch, 9);
  assert_int_equal(r2.api_keys.n, 1);
  assert_int_equal(r2.api_keys.v[0].max_version, 3);
  assert_int_equal(r2.supported_features.n, 0);
  /* A tag whose size runs past the end, and tags out of order, are faults. */
  uint8_t longtag[sizeof unk];
  memcpy(longtag, unk, sizeof unk);
  longtag[26] = 0x04;
  assert_int_equal(
      tarn__kmsg_decode(TARN__KAPI_API_VERSIONS, 3, 1, longtag, sizeof longtag, &a, &r2),
      TARN_ECORRUPT);
  uint8_t order[sizeof unk];
  memcpy(order, unk, sizeof unk);
  order[25] = 0x01;
  assert_int_equal(tarn__kmsg_decode(TARN__KAPI_API_VERSIONS, 3, 1, order, sizeof order, &a, &r2),
                   TARN_ECORRUPT);
  tarn_buf_free(&b);
  tarn__karena_free(&a);
}

/* ---- headers and frames ---------------------------------------------------------------- */

static void test_headers(void **state) {
  (void)state;
  tarn__kreq_header h;
  size_t off;
  /* v1 (Produce 3): key 0, version 3, correlation 7, client id "ab". */
  static const uint8_t v1[] = {0, 0, 0, 3, 0, 0, 0, 7, 0, 2, 'a', 'b', 0xee};
  assert_int_equal(tarn__kreq_header_decode(v1, sizeof v1, &h, &off), 0);
  assert_int_equal(h.api_key, 0);
  assert_int_equal(h.api_version, 3);
  assert_int_equal(h.correlation_id, 7);
  assert_int_equal(h.client_id.len, 2);
  assert_int_equal(off, 12);
  /* v2 (ApiVersions 3): the same plus a tagged section, with an unknown tag skipped;
   * the client id stays a non-compact string. */
  static const uint8_t v2[] = {0, 18, 0, 3, 0, 0, 0, 9, 0xff, 0xff, 0x01, 0x05, 0x01, 0x00};
  assert_int_equal(tarn__kreq_header_decode(v2, sizeof v2, &h, &off), 0);
  assert_int_equal(h.client_id.len, -1);
  assert_int_equal(off, sizeof v2);
  /* Unknown version (ApiVersions 4) and unknown key: KIP-511 needs key, version and id. */
  static const uint8_t v4[] = {0, 18, 0, 4, 0x12, 0x34, 0x56, 0x78, 0, 0};
  assert_int_equal(tarn__kreq_header_decode(v4, sizeof v4, &h, &off), TARN_EUNSUPPORTED);
  assert_int_equal(h.api_key, 18);
  assert_int_equal(h.api_version, 4);
  assert_int_equal(h.correlation_id, 0x12345678);
  static const uint8_t k99[] = {0, 99, 0, 0, 0, 0, 0, 1, 0, 0};
  assert_int_equal(tarn__kreq_header_decode(k99, sizeof k99, &h, &off), TARN_EUNSUPPORTED);
  assert_int_equal(h.correlation_id, 1);
  for (size_t cut = 0; cut < 10; cut++) {
    uint8_t *c = copy_exact(v1, cut);
    assert_int_equal(tarn__kreq_header_decode(c, cut, &h, &off), TARN_ECORRUPT);
    free(c);
  }
  uint8_t *c = copy_exact(v2, 11);
  assert_int_equal(tarn__kreq_header_decode(c, 11, &h, &off), TARN_ECORRUPT);
  free(c);

  /* A request frame and its response frame, round trip through the headers. */
  tarn__k_metadata_req mq;
  assert_int_equal(tarn__kmsg_init(TARN__KAPI_METADATA, 0, &mq), 0);
  mq.topics.n = -1;
  tarn_buf b = TARN_BUF_INIT;
  tarn__kreq_header rh = {TARN__KAPI_METADATA, 4, 42, {"cli", 3}};
  assert_int_equal(tarn__kreq_frame(&rh, &mq, &b), 0);
  static const uint8_t mframe[] = {0,  0, 0, 18,  0,   3,   0,    4,    0,    0,    0,
                                   42, 0, 3, 'c', 'l', 'i', 0xff, 0xff, 0xff, 0xff, 1};
  assert_int_equal(b.len, sizeof mframe);
  assert_memory_equal(b.data, mframe, sizeof mframe);
  assert_int_equal(tarn__kreq_header_decode(b.data + 4, b.len - 4, &h, &off), 0);
  assert_int_equal(h.correlation_id, 42);
  tarn__karena a;
  tarn__karena_init(&a);
  assert_int_equal(
      tarn__kmsg_decode(h.api_key, h.api_version, 0, b.data + 4 + off, b.len - 4 - off, &a, &mq),
      0);
  assert_int_equal(mq.topics.n, -1);
  assert_true(mq.allow_auto_topic_creation);
  /* ApiVersions v3 answers with header v0 though its body is flexible. */
  tarn__k_api_versions_resp r;
  tarn__kmsg_init(TARN__KAPI_API_VERSIONS, 1, &r);
  r.error_code = 35;
  tarn_buf_reset(&b);
  assert_int_equal(tarn__kresp_frame(TARN__KAPI_API_VERSIONS, 3, 77, &r, &b), 0);
  static const uint8_t aframe[] = {0, 0, 0, 12, 0, 0, 0, 77, 0, 35, 0x01, 0, 0, 0, 0, 0};
  assert_int_equal(b.len, sizeof aframe);
  assert_memory_equal(b.data, aframe, sizeof aframe);
  int32_t corr;
  assert_int_equal(
      tarn__kresp_header_decode(TARN__KAPI_API_VERSIONS, 3, b.data + 4, b.len - 4, &corr, &off), 0);
  assert_int_equal(corr, 77);
  assert_int_equal(off, 4);
  tarn_buf_free(&b);
  tarn__karena_free(&a);
}

/* ---- hostile lengths ------------------------------------------------------------------- */

static void test_hostile_lengths(void **state) {
  (void)state;
  tarn__karena a;
  tarn__karena_init(&a);
  tarn__k_metadata_req m;
  /* 2^31-1 topics in 4 bytes: refused before any allocation. */
  static const uint8_t many[] = {0x7f, 0xff, 0xff, 0xff, 0, 1, 'x'};
  assert_int_equal(tarn__kmsg_decode(TARN__KAPI_METADATA, 0, 0, many, sizeof many, &a, &m),
                   TARN_ECORRUPT);
  assert_int_equal(a.used, 0);
  assert_non_null(strstr(tarn_errmsg(), "kafka MetadataRequest v0"));
  assert_non_null(strstr(tarn_errmsg(), "topics"));
  /* A negative count other than -1; null where v0 does not allow it. */
  static const uint8_t neg[] = {0xff, 0xff, 0xff, 0xfe};
  assert_int_equal(tarn__kmsg_decode(TARN__KAPI_METADATA, 1, 0, neg, sizeof neg, &a, &m),
                   TARN_ECORRUPT);
  static const uint8_t null0[] = {0xff, 0xff, 0xff, 0xff};
  assert_int_equal(tarn__kmsg_decode(TARN__KAPI_METADATA, 0, 0, null0, sizeof null0, &a, &m),
                   TARN_ECORRUPT);
  assert_int_equal(tarn__kmsg_decode(TARN__KAPI_METADATA, 1, 0, null0, sizeof null0, &a, &m), 0);
  /* A string longer than what is left; trailing bytes after the message. */
  static const uint8_t longstr[] = {0, 0, 0, 1, 0x7f, 0xff, 'x'};
  assert_int_equal(tarn__kmsg_decode(TARN__KAPI_METADATA, 0, 0, longstr, sizeof longstr, &a, &m),
                   TARN_ECORRUPT);
  static const uint8_t trail[] = {0, 0, 0, 0, 9};
  assert_int_equal(tarn__kmsg_decode(TARN__KAPI_METADATA, 0, 0, trail, sizeof trail, &a, &m),
                   TARN_ECORRUPT);
  /* Compact lengths: 2^32-1 as a varint, and a varint of six bytes. */
  tarn__k_api_versions_req q;
  static const uint8_t huge[] = {0xff, 0xff, 0xff, 0xff, 0x0f, 0x00};
  assert_int_equal(tarn__kmsg_decode(TARN__KAPI_API_VERSIONS, 3, 0, huge, sizeof huge, &a, &q),
                   TARN_ECORRUPT);
  static const uint8_t six[] = {0x80, 0x80, 0x80, 0x80, 0x80, 0x00};
  assert_int_equal(tarn__kmsg_decode(TARN__KAPI_API_VERSIONS, 3, 0, six, sizeof six, &a, &q),
                   TARN_ECORRUPT);
  /* A bool that is neither 0 nor 1 (Metadata v4 allow_auto_topic_creation). */
  static const uint8_t b2[] = {0, 0, 0, 0, 2};
  assert_int_equal(tarn__kmsg_decode(TARN__KAPI_METADATA, 4, 0, b2, sizeof b2, &a, &m),
                   TARN_ECORRUPT);
  /* Undeclared versions are refused as such, not as corrupt. */
  assert_int_equal(tarn__kmsg_decode(TARN__KAPI_METADATA, 13, 0, b2, sizeof b2, &a, &m),
                   TARN_EUNSUPPORTED);
  assert_int_equal(tarn__kmsg_decode(23, 0, 0, b2, sizeof b2, &a, &m), TARN_EUNSUPPORTED);
  /* The arena's bound: many small elements cannot take more than a multiple of the
   * input (Fetch v0 response: 100000 topics of 6 bytes). */
  size_t n = 100000, len = 4 + n * 6;
  uint8_t *big = calloc(1, len);
  big[1] = 0x01, big[2] = 0x86, big[3] = 0xa0; /* 100000 */
  tarn__karena_free(&a);
  tarn__karena_init(&a);
  tarn__k_fetch_resp fr;
  assert_int_equal(tarn__kmsg_decode(TARN__KAPI_FETCH, 0, 1, big, len, &a, &fr), 0);
  assert_int_equal(fr.responses.n, 100000);
  assert_true(a.used <= 16 * len + 4096);
  /* A caller's own bound holds too: the same input in 64 KiB fails as out of memory. */
  tarn__karena_free(&a);
  tarn__karena_init(&a);
  a.limit = 64 << 10;
  assert_int_equal(tarn__kmsg_decode(TARN__KAPI_FETCH, 0, 1, big, len, &a, &fr), TARN_ENOMEM);
  assert_true(a.used <= a.limit);
  free(big);
  tarn__karena_free(&a);
}

/* Encoding refuses values that a version cannot carry. */
static void test_encode_refusals(void **state) {
  (void)state;
  tarn__k_produce_req r;
  tarn__kmsg_init(TARN__KAPI_PRODUCE, 0, &r);
  assert_int_equal(r.transactional_id.len, -1);
  tarn_buf b = TARN_BUF_INIT;
  /* Null transactional id is fine from v3 (nullable) and absent below. */
  assert_int_equal(tarn__kmsg_encode(TARN__KAPI_PRODUCE, 3, 0, &r, &b), 0);
  assert_int_equal(b.len, 2 + 2 + 4 + 4);
  tarn_buf_reset(&b);
  assert_int_equal(tarn__kmsg_encode(TARN__KAPI_PRODUCE, 2, 0, &r, &b), 0);
  assert_int_equal(b.len, 2 + 4 + 4);
  tarn_buf_reset(&b);
  /* A null array where Produce does not allow one. */
  r.topic_data.n = -1;
  assert_int_equal(tarn__kmsg_encode(TARN__KAPI_PRODUCE, 3, 0, &r, &b), TARN_EINVAL);
  assert_int_equal(b.len, 0);
  assert_non_null(strstr(tarn_errmsg(), "topic_data"));
  tarn_buf_free(&b);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_librdkafka_requests),
      cmocka_unit_test(test_kafka_python_vectors),
      cmocka_unit_test(test_vector_fields),
      cmocka_unit_test(test_round_trip_every_version),
      cmocka_unit_test(test_api_ranges),
      cmocka_unit_test(test_api_versions_v3_bytes),
      cmocka_unit_test(test_headers),
      cmocka_unit_test(test_hostile_lengths),
      cmocka_unit_test(test_encode_refusals),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
