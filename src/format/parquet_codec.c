/* Parquet page compression: UNCOMPRESSED, SNAPPY, GZIP, ZSTD and LZ4_RAW,
 * through the Debian libraries (snappy-c, zlib, libzstd, liblz4). */
#include <limits.h>
#include <string.h>

#include <lz4.h>
#include <snappy-c.h>
#include <zlib.h>
#include <zstd.h>
#include <zstd_errors.h>

#include "format/parquet_internal.h"
#include "util/error.h"

int tarn__pq_codec_known(int codec) {
  return codec == TARN_PARQUET_UNCOMPRESSED || codec == TARN_PARQUET_SNAPPY ||
         codec == TARN_PARQUET_GZIP || codec == TARN_PARQUET_ZSTD || codec == TARN_PARQUET_LZ4_RAW;
}

static int gzip_compress(int level, const uint8_t *src, size_t n, tarn_buf *out) {
  z_stream z;
  memset(&z, 0, sizeof z);
  /* 15 + 16: a gzip (RFC 1952) stream, which Parquet's GZIP codec means. */
  if (deflateInit2(&z, level ? level : Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8,
                   Z_DEFAULT_STRATEGY) != Z_OK)
    return tarn__err(TARN_ENOMEM, "parquet: cannot start gzip");
  uLong bound = deflateBound(&z, (uLong)n) + 32;
  int rc = tarn_buf_reserve(out, bound);
  if (rc == 0) {
    z.next_in = (Bytef *)(uintptr_t)src;
    z.avail_in = (uInt)n;
    z.next_out = out->data + out->len;
    z.avail_out = (uInt)bound;
    if (deflate(&z, Z_FINISH) != Z_STREAM_END)
      rc = tarn__err(TARN_EIO, "parquet: gzip compression failed");
    else
      out->len += z.total_out;
  }
  deflateEnd(&z);
  return rc;
}

void tarn__pq_codec_ctx_free(tarn__pq_codec_ctx *cx) {
  ZSTD_freeCCtx(cx->zc);
  ZSTD_freeDCtx(cx->zd);
  cx->zc = cx->zd = NULL;
}

int tarn__pq_compress(int codec, int level, const uint8_t *src, size_t n, tarn_buf *out) {
  tarn__pq_codec_ctx cx = {0};
  int rc = tarn__pq_compress_ctx(&cx, codec, level, src, n, out);
  tarn__pq_codec_ctx_free(&cx);
  return rc;
}

int tarn__pq_compress_ctx(tarn__pq_codec_ctx *cx, int codec, int level, const uint8_t *src,
                          size_t n, tarn_buf *out) {
  if (!cx)
    return tarn__pq_compress(codec, level, src, n, out);
  if (n > INT32_MAX)
    return tarn__err(TARN_ERANGE, "parquet: page of %zu bytes exceeds 2 GiB", n);
  size_t cap;
  int rc;
  switch (codec) {
  case TARN_PARQUET_UNCOMPRESSED: return tarn_buf_append(out, src, n);
  case TARN_PARQUET_SNAPPY:
    cap = snappy_max_compressed_length(n);
    if ((rc = tarn_buf_reserve(out, cap)))
      return rc;
    if (snappy_compress((const char *)src, n, (char *)out->data + out->len, &cap) != SNAPPY_OK)
      return tarn__err(TARN_EIO, "parquet: snappy compression failed");
    out->len += cap;
    return 0;
  case TARN_PARQUET_GZIP: return gzip_compress(level, src, n, out);
  case TARN_PARQUET_ZSTD: {
    cap = ZSTD_compressBound(n);
    if ((rc = tarn_buf_reserve(out, cap)))
      return rc;
    if (!cx->zc && !(cx->zc = ZSTD_createCCtx()))
      return tarn__err(TARN_ENOMEM, "parquet: cannot start zstd");
    /* ZSTD_compressCCtx writes the same frame as ZSTD_compress. */
    size_t r = ZSTD_compressCCtx(cx->zc, out->data + out->len, cap, src, n,
                                 level ? level : ZSTD_CLEVEL_DEFAULT);
    if (ZSTD_isError(r))
      return tarn__err(TARN_EIO, "parquet: zstd compression failed: %s", ZSTD_getErrorName(r));
    out->len += r;
    return 0;
  }
  case TARN_PARQUET_LZ4_RAW: {
    int bound = LZ4_compressBound((int)n);
    if (bound <= 0)
      return tarn__err(TARN_ERANGE, "parquet: page too large for lz4");
    if ((rc = tarn_buf_reserve(out, (size_t)bound)))
      return rc;
    int r = LZ4_compress_default((const char *)src, (char *)out->data + out->len, (int)n, bound);
    if (r <= 0)
      return tarn__err(TARN_EIO, "parquet: lz4 compression failed");
    out->len += (size_t)r;
    return 0;
  }
  default:
    return tarn__err(TARN_EINVAL, "parquet: codec %d (%s) is not one tarn writes", codec,
                     tarn_parquet_codec_name(codec));
  }
}

static int gzip_decompress(const uint8_t *src, size_t n, uint8_t *dst, size_t dst_len,
                           uint64_t off) {
  z_stream z;
  memset(&z, 0, sizeof z);
  /* 15 + 32: gzip, or a zlib stream, which some writers emit for GZIP. */
  if (inflateInit2(&z, 15 + 32) != Z_OK)
    return tarn__err(TARN_ENOMEM, "parquet page: cannot start gzip");
  z.next_in = (Bytef *)(uintptr_t)src;
  z.avail_in = (uInt)n;
  z.next_out = dst;
  z.avail_out = (uInt)dst_len;
  int zr = inflate(&z, Z_FINISH);
  size_t got = z.total_out;
  const char *msg = z.msg;
  inflateEnd(&z);
  if (zr == Z_STREAM_END && got == dst_len)
    return 0;
  if (zr == Z_BUF_ERROR && got == dst_len)
    return tarn__corrupt("parquet page", (size_t)off,
                         "gzip data inflates to more than uncompressed_page_size %zu", dst_len);
  if (zr == Z_STREAM_END)
    return tarn__corrupt("parquet page", (size_t)off,
                         "gzip data inflates to %zu bytes, uncompressed_page_size says %zu", got,
                         dst_len);
  return tarn__corrupt("parquet page", (size_t)off, "bad gzip data (%s)",
                       msg ? msg : "truncated stream");
}

int tarn__pq_decompress(int codec, const uint8_t *src, size_t n, uint8_t *dst, size_t dst_len,
                        uint64_t off) {
  tarn__pq_codec_ctx cx = {0};
  int rc = tarn__pq_decompress_ctx(&cx, codec, src, n, dst, dst_len, off);
  tarn__pq_codec_ctx_free(&cx);
  return rc;
}

int tarn__pq_decompress_ctx(tarn__pq_codec_ctx *cx, int codec, const uint8_t *src, size_t n,
                            uint8_t *dst, size_t dst_len, uint64_t off) {
  if (!cx)
    return tarn__pq_decompress(codec, src, n, dst, dst_len, off);
  size_t len;
  switch (codec) {
  case TARN_PARQUET_UNCOMPRESSED:
    if (n != dst_len)
      return tarn__corrupt("parquet page", (size_t)off,
                           "uncompressed page of %zu bytes declares uncompressed_page_size %zu", n,
                           dst_len);
    if (n)
      memcpy(dst, src, n);
    return 0;
  case TARN_PARQUET_SNAPPY:
    if (snappy_uncompressed_length((const char *)src, n, &len) != SNAPPY_OK)
      return tarn__corrupt("parquet page", (size_t)off, "bad snappy data");
    if (len != dst_len)
      return tarn__corrupt("parquet page", (size_t)off,
                           "snappy data expands to %zu bytes, uncompressed_page_size says %zu", len,
                           dst_len);
    if (snappy_uncompress((const char *)src, n, (char *)dst, &len) != SNAPPY_OK || len != dst_len)
      return tarn__corrupt("parquet page", (size_t)off, "bad snappy data");
    return 0;
  case TARN_PARQUET_GZIP: return gzip_decompress(src, n, dst, dst_len, off);
  case TARN_PARQUET_ZSTD: {
    if (!cx->zd && !(cx->zd = ZSTD_createDCtx()))
      return tarn__err(TARN_ENOMEM, "parquet page: cannot start zstd");
    size_t r = ZSTD_decompressDCtx(cx->zd, dst, dst_len, src, n);
    if (ZSTD_isError(r)) {
      if (ZSTD_getErrorCode(r) == ZSTD_error_dstSize_tooSmall)
        return tarn__corrupt("parquet page", (size_t)off,
                             "zstd data expands to more than uncompressed_page_size %zu", dst_len);
      return tarn__corrupt("parquet page", (size_t)off, "bad zstd data (%s)", ZSTD_getErrorName(r));
    }
    if (r != dst_len)
      return tarn__corrupt("parquet page", (size_t)off,
                           "zstd data expands to %zu bytes, uncompressed_page_size says %zu", r,
                           dst_len);
    return 0;
  }
  case TARN_PARQUET_LZ4_RAW: {
    if (n > INT_MAX || dst_len > INT_MAX)
      return tarn__corrupt("parquet page", (size_t)off, "lz4 page larger than 2 GiB");
    int r = LZ4_decompress_safe((const char *)src, (char *)dst, (int)n, (int)dst_len);
    if (r < 0)
      return tarn__corrupt("parquet page", (size_t)off,
                           "bad lz4 data, or it expands past uncompressed_page_size %zu", dst_len);
    if ((size_t)r != dst_len)
      return tarn__corrupt("parquet page", (size_t)off,
                           "lz4 data expands to %d bytes, uncompressed_page_size says %zu", r,
                           dst_len);
    return 0;
  }
  default:
    return tarn__err(TARN_EUNSUPPORTED, "parquet page: byte %llu: codec %d (%s) is not supported",
                     (unsigned long long)off, codec, tarn_parquet_codec_name(codec));
  }
}
