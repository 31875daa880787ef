/* The streaming Parquet writer of compacted files (LS-056, LS-057, LS-058).
 *
 * It buffers one page: the PLAIN values and the run-length encoded
 * definition levels. A full page is compressed and handed to the sink with
 * its header; a full row group only adds an entry to the footer's list. So
 * memory is one page plus a few dozen bytes per row group.
 *
 * With opts.threads (and a codec), a helper thread compresses page N while
 * the caller fills page N+1 and hands page N-1 to the sink: two pages of
 * memory, and the caller's thread still makes every sink call, in the same
 * order and with the same bytes as without the thread. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format/parquet_internal.h"
#include "util/bytes.h"
#include "util/error.h"

#define DEFAULT_ROW_GROUP ((uint64_t)128 << 20)
#define DEFAULT_PAGE ((uint32_t)1 << 20)
/* The values buffer starts with this many bytes kept free, so that the level
 * bytes' length and the levels (one RLE run, up to 6 bytes, when the page
 * has no nulls) go in front of the values and the page body is one run of
 * bytes: compressed, or handed to the sink, without a copy into a body. */
#define PREFIX ((size_t)16)
/* A page's size is an i32; keep room for the level bytes and the header. */
#define MAX_PAGE_BODY ((size_t)INT32_MAX - 4096)

typedef struct page {
  tarn_buf values; /* PREFIX bytes kept free, then PLAIN: 4-byte little-endian length, bytes */
  tarn_buf levels; /* RLE runs of the definition levels, bit width 1 */
  tarn_buf body, comp;
  uint32_t rows, nulls;
  uint8_t len[4];         /* the levels' length */
  const uint8_t *part[3]; /* the body as handed to the sink */
  size_t part_len[3], parts, raw;
  int rc;        /* of the compression */
  char msg[512]; /* its message, when the helper thread failed */
} page;

struct tarn_parquet_writer {
  tarn_parquet_write_fn write;
  void *ctx;
  int codec, level;
  uint64_t row_group_size;
  uint32_t page_size;
  int failed;
  uint64_t off; /* bytes handed to the sink */

  page pg[2];
  page *cur;                   /* the page being filled */
  page *inflight;              /* the page the helper thread compresses, or NULL */
  uint32_t run_value, run_len; /* the pending run of cur's definition levels */
  tarn_buf hdr;
  tarn__pq_codec_ctx cx; /* kept from page to page; the helper's when there is one */

  /* the helper thread */
  int threaded, quit, job;
  pthread_t th;
  pthread_mutex_t mu;
  pthread_cond_t cv;

  /* the row group being filled */
  uint64_t group_bytes; /* PLAIN bytes of its values, the page being filled included */
  tarn_parquet_chunk chunk;
  int64_t group_rows;

  tarn_parquet_meta meta; /* schema, row groups so far, key/value metadata */
  size_t groups_cap;
};

static int sink(tarn_parquet_writer *w, const void *p, size_t n) {
  if (n == 0)
    return 0;
  int rc = w->write(w->ctx, p, n);
  if (rc)
    return tarn__errctx(rc < 0 ? rc : TARN_EIO, "parquet writer at byte %llu",
                        (unsigned long long)w->off);
  w->off += n;
  return 0;
}

static int valid_record_name(const char *s) {
  if (!s || !((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') || *s == '_'))
    return 0;
  for (; *s; s++)
    if (!((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') ||
          *s == '_'))
      return 0;
  return 1;
}

static char *dup(const char *s) {
  size_t n = strlen(s) + 1;
  char *p = malloc(n);
  if (p)
    memcpy(p, s, n);
  return p;
}

static int add_kv(tarn_parquet_meta *m, const char *k, const char *v) {
  tarn_parquet_kv *kv = &m->kv[m->n_kv];
  if (!(kv->key = dup(k)) || !(kv->value = dup(v))) {
    free(kv->key); /* not counted in n_kv yet: the meta's free would miss it */
    kv->key = NULL;
    return tarn__err(TARN_ENOMEM, "parquet writer: out of memory");
  }
  m->n_kv++;
  return 0;
}

/* The schema and footer metadata of the spec's table (tables-and-vectors.md §3.6). */
static int build_meta(tarn_parquet_writer *w, const tarn_parquet_writer_opts *o) {
  tarn_parquet_meta *m = &w->meta;
  m->version = 1;
  m->payload_column = 0;
  m->payload_max_def = 1;
  if (!(m->schema = calloc(2, sizeof *m->schema)) || !(m->kv = calloc(5, sizeof *m->kv)))
    return tarn__err(TARN_ENOMEM, "parquet writer: out of memory");
  /* LS-057: message <record name> { optional binary payload; } */
  m->n_schema = 2;
  m->schema[0] = (tarn_parquet_schema_element){dup(o->record_name), -1, -1, 1, -1};
  m->schema[1] = (tarn_parquet_schema_element){dup("payload"), TARN_PARQUET_BYTE_ARRAY,
                                               TARN_PARQUET_OPTIONAL, 0, -1};
  if (!m->schema[0].name || !m->schema[1].name ||
      !(m->created_by = dup("tarn version " TARN_VERSION " (build tarn)")))
    return tarn__err(TARN_ENOMEM, "parquet writer: out of memory");
  static const char avro_head[] = "{\"type\":\"record\",\"name\":\"";
  static const char avro_tail[] =
      "\",\"fields\":[{\"name\":\"payload\",\"type\":[\"null\",\"bytes\"],\"default\":null}]}";
  size_t n = sizeof avro_head + strlen(o->record_name) + sizeof avro_tail;
  char *avro = malloc(n);
  if (!avro)
    return tarn__err(TARN_ENOMEM, "parquet writer: out of memory");
  /* The record name is checked to be an Avro name, so it needs no JSON escaping. */
  snprintf(avro, n, "%s%s%s", avro_head, o->record_name, avro_tail);
  int rc = add_kv(m, "entrySerDeType", o->entry_serde_type);
  if (rc == 0 && o->row_metadata)
    rc = add_kv(m, "rowMetadata", o->row_metadata);
  if (rc == 0)
    rc = add_kv(m, "schemaType", "avro");
  if (rc == 0)
    rc = add_kv(m, "parquet.avro.schema", avro);
  if (rc == 0)
    rc = add_kv(m, "writer.model.name", "avro");
  free(avro);
  return rc;
}

static void *helper(void *arg);

static void reset_chunk(tarn_parquet_writer *w) {
  memset(&w->chunk, 0, sizeof w->chunk);
  w->chunk.type = TARN_PARQUET_BYTE_ARRAY;
  w->chunk.codec = w->codec;
  w->chunk.data_page_offset = -1;
  w->chunk.dictionary_page_offset = -1;
  w->chunk.encodings[0] = TARN_PARQUET_PLAIN;
  w->chunk.encodings[1] = TARN_PARQUET_RLE;
  w->chunk.n_encodings = 2;
  w->group_bytes = 0;
  w->group_rows = 0;
}

int tarn_parquet_writer_open(tarn_parquet_writer **out, const tarn_parquet_writer_opts *o,
                             tarn_parquet_write_fn write, void *ctx) {
  *out = NULL;
  if (!o || !write || !o->entry_serde_type || !valid_record_name(o->record_name))
    return tarn__err(TARN_EINVAL, "parquet writer: needs a sink, an entrySerDeType and an Avro "
                                  "record name ([A-Za-z_][A-Za-z0-9_]*)");
  if (o->codec != TARN_PARQUET_UNCOMPRESSED &&
      (o->codec == TARN_PARQUET_LZ4 || !tarn__pq_codec_known(o->codec)))
    return tarn__err(TARN_EINVAL, "parquet writer: codec %d (%s) is not one tarn writes", o->codec,
                     tarn_parquet_codec_name(o->codec));
  tarn_parquet_writer *w = calloc(1, sizeof *w);
  if (!w)
    return tarn__err(TARN_ENOMEM, "parquet writer: out of memory");
  w->write = write;
  w->ctx = ctx;
  w->codec = o->codec;
  w->level = o->level;
  w->row_group_size = o->row_group_size ? o->row_group_size : DEFAULT_ROW_GROUP;
  w->page_size = o->page_size ? o->page_size : DEFAULT_PAGE;
  if (w->page_size > MAX_PAGE_BODY)
    w->page_size = (uint32_t)MAX_PAGE_BODY;
  reset_chunk(w);
  w->cur = &w->pg[0];
  int rc = 0;
  for (int i = 0; i < 2 && rc == 0; i++) {
    rc = tarn_buf_reserve(&w->pg[i].values, PREFIX);
    w->pg[i].values.len = PREFIX;
  }
  if (rc == 0)
    rc = build_meta(w, o);
  if (rc == 0 && o->threads > 0 && w->codec != TARN_PARQUET_UNCOMPRESSED) {
    if (pthread_mutex_init(&w->mu, NULL) != 0)
      rc = tarn__err(TARN_ENOMEM, "parquet writer: cannot make a mutex");
    else if (pthread_cond_init(&w->cv, NULL) != 0) {
      pthread_mutex_destroy(&w->mu);
      rc = tarn__err(TARN_ENOMEM, "parquet writer: cannot make a condition variable");
    } else if (pthread_create(&w->th, NULL, helper, w) != 0) {
      pthread_cond_destroy(&w->cv);
      pthread_mutex_destroy(&w->mu);
      rc = tarn__err(TARN_ENOMEM, "parquet writer: cannot start the compression thread");
    } else
      w->threaded = 1;
  }
  if (rc == 0)
    rc = sink(w, "PAR1", 4);
  if (rc) {
    tarn_parquet_writer_close(w);
    return rc;
  }
  *out = w;
  return 0;
}

/* Ends the pending run of definition levels: an RLE run, header (count << 1),
 * then the value in one byte (bit width 1). */
static int end_run(tarn_parquet_writer *w) {
  if (w->run_len == 0)
    return 0;
  int rc = tarn_buf_put_uvarint(&w->cur->levels, (uint64_t)w->run_len << 1);
  if (rc == 0)
    rc = tarn_buf_putc(&w->cur->levels, (uint8_t)w->run_value);
  w->run_len = 0;
  return rc;
}

/* Lays out the full page p's body: the levels' length and the levels in the
 * free bytes in front of the values when they fit, so the body is one run. */
static int prepare_page(tarn_parquet_writer *w, page *p) {
  int rc = end_run(w);
  if (rc)
    return rc;
  tarn__st_le32(p->len, (uint32_t)p->levels.len);
  size_t nvals = p->values.len - PREFIX;
  p->raw = 4 + p->levels.len + nvals;
  if (4 + p->levels.len <= PREFIX) {
    uint8_t *at = p->values.data + PREFIX - 4 - p->levels.len;
    memcpy(at, p->len, 4);
    if (p->levels.len)
      memcpy(at + 4, p->levels.data, p->levels.len);
    p->part[0] = at, p->part_len[0] = p->raw, p->parts = 1;
  } else {
    p->part[0] = p->len, p->part_len[0] = 4;
    p->part[1] = p->levels.data, p->part_len[1] = p->levels.len;
    p->part[2] = p->values.data + PREFIX, p->part_len[2] = nvals;
    p->parts = 3;
  }
  return 0;
}

/* Compresses p's body (the caller's thread, or the helper's). */
static int compress_page(tarn_parquet_writer *w, page *p) {
  if (w->codec == TARN_PARQUET_UNCOMPRESSED)
    return 0;
  /* Definition levels and values are compressed together in a v1 page. */
  const uint8_t *src = p->part[0];
  int rc;
  if (p->parts > 1) {
    tarn_buf_reset(&p->body);
    if ((rc = tarn_buf_reserve(&p->body, p->raw)))
      return rc;
    for (size_t i = 0; i < p->parts; i++)
      tarn_buf_append(&p->body, p->part[i], p->part_len[i]);
    src = p->body.data;
  }
  tarn_buf_reset(&p->comp);
  if ((rc = tarn__pq_compress_ctx(&w->cx, w->codec, w->level, src, p->raw, &p->comp)))
    return rc;
  if (p->comp.len > (size_t)INT32_MAX)
    return tarn__err(TARN_ERANGE, "parquet writer: compressed page exceeds 2 GiB");
  p->part[0] = p->comp.data, p->part_len[0] = p->comp.len, p->parts = 1;
  return 0;
}

/* Hands the compressed page p to the sink with its header; empties it. */
static int emit_page(tarn_parquet_writer *w, page *p) {
  tarn__pq_page_header h = {0};
  h.type = TARN_PARQUET_DATA_PAGE;
  h.uncompressed_size = (int32_t)p->raw;
  h.compressed_size = (int32_t)(w->codec != TARN_PARQUET_UNCOMPRESSED ? p->comp.len : p->raw);
  h.num_values = (int32_t)p->rows;
  h.encoding = TARN_PARQUET_PLAIN;
  h.def_encoding = TARN_PARQUET_RLE;
  h.num_nulls = (int32_t)p->nulls;
  tarn_buf_reset(&w->hdr);
  int rc = tarn__pq_page_header_encode(&h, &w->hdr);
  if (rc)
    return rc;
  if (w->chunk.data_page_offset < 0)
    w->chunk.data_page_offset = (int64_t)w->off;
  if ((rc = sink(w, w->hdr.data, w->hdr.len)))
    return rc;
  for (size_t i = 0; i < p->parts; i++)
    if ((rc = sink(w, p->part[i], p->part_len[i])))
      return rc;
  w->chunk.num_values += p->rows;
  w->chunk.null_count += p->nulls;
  w->chunk.total_uncompressed_size += (int64_t)(w->hdr.len + p->raw);
  w->chunk.total_compressed_size += (int64_t)(w->hdr.len + (size_t)h.compressed_size);
  p->values.len = PREFIX;
  tarn_buf_reset(&p->levels);
  p->rows = p->nulls = 0;
  return 0;
}

static void *helper(void *arg) {
  tarn_parquet_writer *w = arg;
  pthread_mutex_lock(&w->mu);
  for (;;) {
    while (!w->job && !w->quit)
      pthread_cond_wait(&w->cv, &w->mu);
    if (!w->job)
      break;
    page *p = w->inflight;
    pthread_mutex_unlock(&w->mu);
    /* The message is thread-local: keep it for the caller's thread. */
    if ((p->rc = compress_page(w, p)))
      snprintf(p->msg, sizeof p->msg, "%s", tarn_errmsg());
    pthread_mutex_lock(&w->mu);
    w->job = 0;
    pthread_cond_broadcast(&w->cv);
  }
  pthread_mutex_unlock(&w->mu);
  return NULL;
}

/* Waits for the page in the helper and hands it to the sink. */
static int drain(tarn_parquet_writer *w) {
  page *p = w->inflight;
  if (!p)
    return 0;
  pthread_mutex_lock(&w->mu);
  while (w->job)
    pthread_cond_wait(&w->cv, &w->mu);
  pthread_mutex_unlock(&w->mu);
  w->inflight = NULL;
  if (p->rc)
    return tarn__err(p->rc, "%s", p->msg);
  return emit_page(w, p);
}

static int flush_page(tarn_parquet_writer *w) {
  page *p = w->cur;
  if (p->rows == 0)
    return 0;
  int rc = prepare_page(w, p);
  if (rc)
    return rc;
  if (!w->threaded) {
    rc = compress_page(w, p);
    return rc ? rc : emit_page(w, p);
  }
  /* Page N-1 is compressed before N goes to the helper; N-1 then goes to
   * the sink while N is compressed, and the caller fills N-1's buffers. */
  page *prev = w->inflight;
  if (prev) {
    pthread_mutex_lock(&w->mu);
    while (w->job)
      pthread_cond_wait(&w->cv, &w->mu);
    pthread_mutex_unlock(&w->mu);
  }
  pthread_mutex_lock(&w->mu);
  w->inflight = p;
  w->job = 1;
  pthread_cond_broadcast(&w->cv);
  pthread_mutex_unlock(&w->mu);
  w->cur = p == &w->pg[0] ? &w->pg[1] : &w->pg[0];
  if (prev) {
    if (prev->rc)
      return tarn__err(prev->rc, "%s", prev->msg);
    return emit_page(w, prev);
  }
  return 0;
}

static int flush_group(tarn_parquet_writer *w) {
  int rc = flush_page(w);
  if (rc == 0)
    rc = drain(w);
  if (rc || w->group_rows == 0)
    return rc;
  tarn_parquet_meta *m = &w->meta;
  if (m->n_row_groups == w->groups_cap) {
    size_t cap = w->groups_cap ? w->groups_cap * 2 : 8;
    tarn_parquet_row_group *g = realloc(m->row_groups, cap * sizeof *g);
    if (!g)
      return tarn__err(TARN_ENOMEM, "parquet writer: out of memory");
    m->row_groups = g;
    w->groups_cap = cap;
  }
  tarn_parquet_row_group *g = &m->row_groups[m->n_row_groups++];
  g->num_rows = w->group_rows;
  g->total_byte_size = w->chunk.total_uncompressed_size;
  g->chunk = w->chunk;
  m->num_rows += w->group_rows;
  reset_chunk(w);
  return 0;
}

static int add_row(tarn_parquet_writer *w, const void *p, size_t n, int is_null) {
  if (w->failed)
    return tarn__err(TARN_EINVAL, "parquet writer: an earlier write failed");
  if (n > MAX_PAGE_BODY - 4)
    return tarn__err(TARN_ERANGE, "parquet writer: payload of %zu bytes exceeds a page's 2 GiB", n);
  size_t add = is_null ? 0 : 4 + n;
  int rc = 0;
  if (w->group_rows > 0 && w->group_bytes + add > w->row_group_size)
    rc = flush_group(w);
  else if (w->cur->rows > 0 && w->cur->values.len - PREFIX + add > w->page_size)
    rc = flush_page(w);
  if (rc == 0 && w->cur->rows == UINT32_MAX / 2)
    rc = flush_page(w);
  page *pg = w->cur;
  if (rc == 0 && !is_null) {
    /* One capacity check per row, then the length and the bytes are stored
     * in place: the per-row calls were ~7 % of an uncompressed write (issue 16). */
    tarn_buf *v = &pg->values;
    if (v->cap - v->len < add)
      rc = tarn_buf_reserve(v, add);
    if (rc == 0) {
      uint8_t *at = v->data + v->len;
      tarn__st_le32(at, (uint32_t)n);
      if (n)
        memcpy(at + 4, p, n);
      v->len += add;
    }
  }
  uint32_t def = is_null ? 0 : 1;
  if (rc == 0 && w->run_len > 0 && w->run_value != def)
    rc = end_run(w);
  if (rc) {
    w->failed = 1;
    return rc;
  }
  w->run_value = def;
  w->run_len++;
  pg->rows++;
  pg->nulls += (uint32_t)is_null;
  w->group_rows++;
  w->group_bytes += add;
  return 0;
}

int tarn_parquet_writer_add(tarn_parquet_writer *w, const void *p, size_t n) {
  return add_row(w, p, n, 0);
}

int tarn_parquet_writer_add_null(tarn_parquet_writer *w) { return add_row(w, NULL, 0, 1); }

int tarn_parquet_writer_finish(tarn_parquet_writer *w, uint64_t *size) {
  if (w->failed)
    return tarn__err(TARN_EINVAL, "parquet writer: an earlier write failed");
  int rc = flush_group(w);
  tarn_buf foot = TARN_BUF_INIT;
  if (rc == 0)
    rc = tarn__pq_meta_encode(&w->meta, &foot);
  if (rc == 0 && foot.len > UINT32_MAX)
    rc = tarn__err(TARN_ERANGE, "parquet writer: footer exceeds 4 GiB");
  if (rc == 0) {
    uint8_t tail[8];
    tarn__st_le32(tail, (uint32_t)foot.len);
    memcpy(tail + 4, "PAR1", 4);
    rc = tarn_buf_append(&foot, tail, 8);
  }
  if (rc == 0)
    rc = sink(w, foot.data, foot.len);
  tarn_buf_free(&foot);
  if (rc) {
    w->failed = 1;
    return rc;
  }
  if (size)
    *size = w->off;
  return 0;
}

void tarn_parquet_writer_close(tarn_parquet_writer *w) {
  if (!w)
    return;
  if (w->threaded) {
    pthread_mutex_lock(&w->mu);
    w->quit = 1;
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
    pthread_join(w->th, NULL); /* after the page in flight, if any */
    pthread_cond_destroy(&w->cv);
    pthread_mutex_destroy(&w->mu);
  }
  for (int i = 0; i < 2; i++) {
    tarn_buf_free(&w->pg[i].values);
    tarn_buf_free(&w->pg[i].levels);
    tarn_buf_free(&w->pg[i].body);
    tarn_buf_free(&w->pg[i].comp);
  }
  tarn_buf_free(&w->hdr);
  tarn__pq_codec_ctx_free(&w->cx);
  tarn__pq_meta_free(&w->meta);
  free(w);
}
