#include "testutil.h"
#include "tu_kafka.h"

#include <isa-l.h>
#include <lz4frame.h>
#include <snappy-c.h>
#include <string.h>
#include <zlib.h>
#include <zstd.h>

#include "kafka/proto/kproto.h"
#include "tarn/kafka.h"
#include "util/bytes.h"

static void put_zigzag(tarn_buf *b, int64_t v) {
  assert_int_equal(tarn_buf_put_uvarint(b, (uint64_t)v << 1 ^ (uint64_t)(v >> 63)), 0);
}

static void put_be16(tarn_buf *b, uint16_t v) {
  tarn_buf_putc(b, (uint8_t)(v >> 8));
  tarn_buf_putc(b, (uint8_t)v);
}

static void compress_with(int codec, tarn_buf *out, const tarn_buf *in);

/* A v2 batch with n records of values "v<i>", keys "k<i>" below keyed and
 * null from there; count and delta as declared; the records section
 * compressed with the codec in attrs' low bits. */
static void v2_batch(tarn_buf *out, int64_t base, uint16_t attrs, int32_t n, int32_t count,
                     int32_t delta, int64_t first_ts, int32_t keyed) {
  tarn_buf recs = TARN_BUF_INIT;
  for (int32_t i = 0; i < n; i++) {
    tarn_buf r = TARN_BUF_INIT;
    tarn_buf_putc(&r, 0); /* attributes */
    put_zigzag(&r, i);    /* timestampDelta */
    put_zigzag(&r, i);    /* offsetDelta */
    if (i < keyed) {
      put_zigzag(&r, 2);
      tarn_buf_putc(&r, 'k');
      tarn_buf_putc(&r, (uint8_t)('0' + i % 10));
    } else {
      put_zigzag(&r, -1); /* null key */
    }
    put_zigzag(&r, 2); /* value length */
    tarn_buf_putc(&r, 'v');
    tarn_buf_putc(&r, (uint8_t)('0' + i % 10));
    put_zigzag(&r, 0); /* no headers */
    put_zigzag(&recs, (int64_t)r.len);
    tarn_buf_append(&recs, r.data, r.len);
    tarn_buf_free(&r);
  }
  size_t start = out->len;
  tarn_buf_put_be64(out, (uint64_t)base);
  if ((attrs & 7) >= TARN_KAFKA_GZIP && (attrs & 7) <= TARN_KAFKA_ZSTD) {
    tarn_buf z = TARN_BUF_INIT;
    compress_with(attrs & 7, &z, &recs);
    tarn_buf_free(&recs);
    recs = z;
  }
  tarn_buf_put_be32(out, (uint32_t)(49 + recs.len));
  tarn_buf_put_be32(out, 0); /* partitionLeaderEpoch */
  tarn_buf_putc(out, 2);     /* magic */
  tarn_buf_put_be32(out, 0); /* crc, below */
  put_be16(out, attrs);
  tarn_buf_put_be32(out, (uint32_t)delta);
  tarn_buf_put_be64(out, (uint64_t)first_ts);
  tarn_buf_put_be64(out, (uint64_t)first_ts + (uint64_t)(n ? n - 1 : 0));
  tarn_buf_put_be64(out, (uint64_t)-1); /* producerId */
  put_be16(out, 0xffff);
  tarn_buf_put_be32(out, 0xffffffffu);
  tarn_buf_put_be32(out, (uint32_t)count);
  tarn_buf_append(out, recs.data, recs.len);
  uint32_t crc = ~crc32_iscsi(out->data + start + 21, (int)(out->len - start - 21), 0xffffffffu);
  tarn__st_be32(out->data + start + 17, crc);
  tarn_buf_free(&recs);
}

void tu_kafka_v2_batch(tarn_buf *out, int64_t base, uint16_t attrs, int32_t n, int32_t count,
                       int32_t delta) {
  v2_batch(out, base, attrs, n, count, delta, 1700000000000LL, 0);
}

void tu_kafka_v2_keyed(tarn_buf *out, int32_t n, int32_t keyed) {
  v2_batch(out, 0, 0, n, n, n - 1, 1700000000000LL, keyed);
}

void tu_kafka_v2_simple(tarn_buf *out, int32_t n) { tu_kafka_v2_batch(out, 0, 0, n, n, n - 1); }

void tu_kafka_v2_timed(tarn_buf *out, int32_t n, int64_t first_ts) {
  v2_batch(out, 0, 0, n, n, n - 1, first_ts, 0);
}

/* A v0/v1 message with the given value (NULL: null value). */
void tu_kafka_legacy_msg(tarn_buf *out, int magic, int64_t offset, uint8_t attrs, const void *value,
                         size_t vlen) {
  size_t start = out->len;
  tarn_buf_put_be64(out, (uint64_t)offset);
  tarn_buf_put_be32(out, 0); /* size, below */
  tarn_buf_put_be32(out, 0); /* crc, below */
  tarn_buf_putc(out, (uint8_t)magic);
  tarn_buf_putc(out, attrs);
  if (magic == 1)
    tarn_buf_put_be64(out, 1700000000000ULL);
  tarn_buf_put_be32(out, 0xffffffffu); /* null key */
  if (value) {
    tarn_buf_put_be32(out, (uint32_t)vlen);
    tarn_buf_append(out, value, vlen);
  } else {
    tarn_buf_put_be32(out, 0xffffffffu);
  }
  tarn__st_be32(out->data + start + 8, (uint32_t)(out->len - start - 12));
  tarn__st_be32(out->data + start + 12,
                (uint32_t)crc32(0, out->data + start + 16, (uInt)(out->len - start - 16)));
}

void tu_kafka_inner_set(tarn_buf *set, int magic, int n) {
  for (int i = 0; i < n; i++)
    tu_kafka_legacy_msg(set, magic, i, 0, "x", 1);
}

void tu_kafka_gzip_of(tarn_buf *out, const tarn_buf *in) {
  z_stream z;
  memset(&z, 0, sizeof z);
  assert_int_equal(deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY), Z_OK);
  tarn_buf_reserve(out, deflateBound(&z, in->len) + 32);
  z.next_in = in->data, z.avail_in = (uInt)in->len;
  z.next_out = out->data + out->len, z.avail_out = (uInt)(out->cap - out->len);
  assert_int_equal(deflate(&z, Z_FINISH), Z_STREAM_END);
  out->len = out->cap - z.avail_out;
  deflateEnd(&z);
}

void tu_kafka_snappy_xerial_of(tarn_buf *out, const tarn_buf *in) {
  static const uint8_t hdr[16] = {0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0, 0, 0, 0, 1, 0, 0, 0, 1};
  tarn_buf_append(out, hdr, 16);
  size_t max = snappy_max_compressed_length(in->len);
  tarn_buf_reserve(out, max + 4);
  size_t n = max;
  assert_int_equal(
      snappy_compress((const char *)in->data, in->len, (char *)out->data + out->len + 4, &n),
      SNAPPY_OK);
  tarn__st_be32(out->data + out->len, (uint32_t)n);
  out->len += 4 + n;
}

void tu_kafka_lz4_of(tarn_buf *out, const tarn_buf *in) {
  size_t max = LZ4F_compressFrameBound(in->len, NULL);
  tarn_buf_reserve(out, max);
  size_t n = LZ4F_compressFrame(out->data + out->len, max, in->data, in->len, NULL);
  assert_false(LZ4F_isError(n));
  out->len += n;
}

static void compress_with(int codec, tarn_buf *out, const tarn_buf *in) {
  if (codec == TARN_KAFKA_GZIP) {
    tu_kafka_gzip_of(out, in);
  } else if (codec == TARN_KAFKA_SNAPPY) {
    tu_kafka_snappy_xerial_of(out, in);
  } else if (codec == TARN_KAFKA_LZ4) {
    tu_kafka_lz4_of(out, in);
  } else {
    size_t max = ZSTD_compressBound(in->len);
    tarn_buf_reserve(out, max);
    size_t n = ZSTD_compress(out->data + out->len, max, in->data, in->len, 3);
    assert_false(ZSTD_isError(n));
    out->len += n;
  }
}

void tu_kafka_wrapper(tarn_buf *out, int magic, int codec, int n) {
  tarn_buf set = TARN_BUF_INIT, z = TARN_BUF_INIT;
  tu_kafka_inner_set(&set, magic, n);
  compress_with(codec, &z, &set);
  tu_kafka_legacy_msg(out, magic, 0, (uint8_t)codec, z.data, z.len);
  tarn_buf_free(&set), tarn_buf_free(&z);
}

void tu_kafka_fetch_req(tarn__k_fetch_req *q, tarn__k_fetch_fetch_topic *ft,
                        tarn__k_fetch_fetch_partition *fp, const char *topic, int64_t offset,
                        int32_t max_wait_ms, int32_t max_bytes) {
  tarn__kmsg_init(TARN__KAPI_FETCH, 0, q);
  q->max_wait_ms = max_wait_ms;
  q->min_bytes = 1;
  q->max_bytes = max_bytes;
  memset(ft, 0, sizeof *ft);
  memset(fp, 0, sizeof *fp);
  ft->topic = (tarn__kstr){topic, (int32_t)strlen(topic)};
  fp->partition = 0;
  fp->fetch_offset = offset;
  fp->partition_max_bytes = 1 << 20;
  fp->log_start_offset = -1;
  ft->partitions.n = 1;
  ft->partitions.v = fp;
  q->topics.n = 1;
  q->topics.v = ft;
}
