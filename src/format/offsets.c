/* The entry-offsets codec: JavaFastPFOR 0.2.1 IntegratedIntCompressor, as laid
 * out in Appendix D and checked against the vectors of tables-and-vectors §4.7.
 * C: LS-034 (exactly the words compress(A) returns). */
#include "tarn/offsets.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "tarn/error.h"
#include "util/bytes.h"
#include "util/error.h"

#define WHAT "entry offsets"
#define BLOCK 32

static unsigned bit_length(uint32_t v) { return v ? 32u - (unsigned)__builtin_clz(v) : 0u; }

/* Deltas of one block from prev (unsigned 32-bit), and the bit width of their OR. */
static unsigned block_deltas(const uint32_t *a, uint32_t prev, uint32_t d[BLOCK]) {
  uint32_t or = 0;
  for (int j = 0; j < BLOCK; j++) {
    d[j] = a[j] - prev;
    prev = a[j];
    or |= d[j];
  }
  return bit_length(or);
}

/* Delta j takes bits j*b .. j*b+b-1 of the block's b words, LSB first. The
 * bodies are inlined once per width (the switches below), so each copy has a
 * constant b and the compiler unrolls it: several times faster than a generic loop. */
static inline __attribute__((always_inline)) void pack_w(const uint32_t *d, uint8_t *dst,
                                                         const unsigned b) {
  uint32_t w[33] = {0};
  for (unsigned j = 0; j < BLOCK; j++) {
    unsigned pos = j * b, i = pos / 32, sh = pos % 32;
    w[i] |= d[j] << sh;
    if (sh + b > 32)
      w[i + 1] |= d[j] >> (32 - sh);
  }
  for (unsigned i = 0; i < b; i++)
    tarn__st_be32(dst + 4 * i, w[i]);
}

static inline __attribute__((always_inline)) void unpack_w(const uint8_t *src, uint32_t *d,
                                                           const unsigned b) {
  uint32_t w[33];
  for (unsigned i = 0; i < b; i++)
    w[i] = tarn__ld_be32(src + 4 * i);
  w[b] = 0;
  const uint32_t mask = b == 32 ? 0xffffffffu : (1u << b) - 1;
  for (unsigned j = 0; j < BLOCK; j++) {
    unsigned pos = j * b, i = pos / 32, sh = pos % 32;
    uint64_t acc = (uint64_t)w[i] | (uint64_t)w[i + 1] << 32;
    d[j] = (uint32_t)(acc >> sh) & mask;
  }
}

/* clang-format-14 lays this list out differently on each pass. */
/* clang-format off */
#define WIDTHS(X) \
  X(1)  X(2)  X(3)  X(4)  X(5)  X(6)  X(7)  X(8)  X(9)  X(10) X(11) X(12) X(13) X(14) X(15) X(16) \
  X(17) X(18) X(19) X(20) X(21) X(22) X(23) X(24) X(25) X(26) X(27) X(28) X(29) X(30) X(31) X(32)
/* clang-format on */

static void pack(const uint32_t d[BLOCK], unsigned b, uint8_t *dst) {
  switch (b) {
#define X(k)                                                                                       \
  case k: pack_w(d, dst, k); break;
    WIDTHS(X)
#undef X
  default: break; /* width 0: no words */
  }
}

static void unpack(const uint8_t *src, unsigned b, uint32_t d[BLOCK]) {
  switch (b) {
#define X(k)                                                                                       \
  case k: unpack_w(src, d, k); break;
    WIDTHS(X)
#undef X
  default: memset(d, 0, BLOCK * sizeof *d); break;
  }
}

int tarn_entry_offsets_encode(const uint32_t *a, size_t n, tarn_buf *out) {
  if (n > TARN_ENTRY_OFFSETS_MAX_N)
    return tarn__err(TARN_ERANGE, "entry offsets: %zu values exceed 2^31-1", n);
  /* Worst case: every delta 32 bits packed plus header words, or 5 bytes in the tail. */
  size_t blocks = n / BLOCK, tailn = n % BLOCK;
  size_t worst = 4 * (2 + blocks * 33 + (5 * tailn + 3) / 4);
  int rc = tarn_buf_reserve(out, worst);
  if (rc)
    return rc;
  uint8_t *p = out->data + out->len, *start = p;
  tarn__st_be32(p, (uint32_t)n), p += 4;
  if (n == 0) { /* compress([]) is the single word 0 (§7.16) */
    out->len += 4;
    return 0;
  }
  uint32_t prev = 0, d[4][BLOCK];
  size_t k = 0;
  for (size_t g = 0; g < blocks / 4; g++) {
    unsigned b[4];
    for (int j = 0; j < 4; j++) {
      b[j] = block_deltas(a + k, prev, d[j]);
      prev = a[k + BLOCK - 1];
      k += BLOCK;
    }
    tarn__st_be32(p, b[0] << 24 | b[1] << 16 | b[2] << 8 | b[3]), p += 4;
    for (int j = 0; j < 4; j++)
      pack(d[j], b[j], p), p += 4 * b[j];
  }
  for (size_t s = 0; s < blocks % 4; s++) {
    unsigned b = block_deltas(a + k, prev, d[0]);
    prev = a[k + BLOCK - 1];
    k += BLOCK;
    tarn__st_be32(p, b), p += 4;
    pack(d[0], b, p), p += 4 * b;
  }
  if (blocks == 0) /* the marker: the packed part wrote nothing */
    tarn__st_be32(p, 0), p += 4;
  /* Variable-byte tail: 7-bit groups, LSB first, high bit on the LAST byte;
   * zero-padded to whole words that are read little-endian. */
  uint8_t *t = p;
  size_t nb = 0;
  for (; k < n; k++) {
    uint32_t v = a[k] - prev;
    prev = a[k];
    while (v >= 0x80) {
      t[nb++] = (uint8_t)(v & 0x7f);
      v >>= 7;
    }
    t[nb++] = (uint8_t)(v | 0x80);
  }
  while (nb % 4)
    t[nb++] = 0;
  for (size_t i = 0; i < nb; i += 4) { /* LE word -> BE bytes: reverse each 4 */
    uint8_t x0 = t[i], x1 = t[i + 1];
    t[i] = t[i + 3], t[i + 1] = t[i + 2], t[i + 2] = x1, t[i + 3] = x0;
  }
  p += nb;
  out->len += (size_t)(p - start);
  return 0;
}

int tarn_entry_offsets_peek_count(const uint8_t *p, size_t len, size_t *n) {
  if (len < 4)
    return tarn__corrupt(WHAT, 0, "length word needs 4 bytes, %zu given", len);
  uint32_t v = tarn__ld_be32(p);
  if (v > TARN_ENTRY_OFFSETS_MAX_N)
    return tarn__corrupt(WHAT, 0, "length %u exceeds 2^31-1", v);
  *n = v;
  return 0;
}

/* Physical byte of logical tail byte i: the tail's words are stored big-endian
 * but read little-endian. */
static size_t tail_byte_off(size_t tail_word, size_t i) {
  return 4 * (tail_word + i / 4) + 3 - i % 4;
}

/* The decoder's position: p[0, 4 * nw) is the input, w the next word, a[0, k)
 * the values decoded, prev the last of them. */
typedef struct dec {
  const uint8_t *p;
  size_t len, nw, w, k;
  uint32_t prev, *a;
} dec;

static int truncated(const dec *s) {
  return tarn__corrupt(WHAT, s->len, "header word of block missing: words end after %zu values",
                       s->k);
}

/* The bit width of block blk: from the group's header word (read at the first
 * block of each full group of 4) or, past the last full group, a word of its
 * own. */
static int block_width(dec *s, size_t blk, size_t blocks, unsigned widths[4], unsigned *b) {
  const uint8_t *p = s->p;
  if (blk < blocks / 4 * 4) {
    if (blk % 4 == 0) {
      if (s->w >= s->nw)
        return truncated(s);
      uint32_t h = tarn__ld_be32(p + 4 * s->w);
      for (int j = 0; j < 4; j++) {
        widths[j] = h >> (24 - 8 * j) & 0xff;
        if (widths[j] > 32)
          return tarn__corrupt(WHAT, 4 * s->w + (size_t)j, "bit width %u exceeds 32", widths[j]);
      }
      s->w++;
    }
    *b = widths[blk % 4];
    return 0;
  }
  if (s->w >= s->nw)
    return truncated(s);
  uint32_t h = tarn__ld_be32(p + 4 * s->w);
  if (h > 32)
    return tarn__corrupt(WHAT, 4 * s->w, "bit width %u exceeds 32", h);
  *b = h;
  s->w++;
  return 0;
}

/* The bit-packed blocks of 128 values, then (n below 128) the marker word. */
static int dec_blocks(dec *s, size_t blocks, size_t n) {
  uint32_t d[BLOCK];
  unsigned widths[4];
  for (size_t blk = 0; blk < blocks; blk++) {
    unsigned b = 0; /* set by block_width on success */
    int rc = block_width(s, blk, blocks, widths, &b);
    if (rc)
      return rc;
    if (b > s->nw - s->w)
      return tarn__corrupt(WHAT, 4 * s->w, "block %zu of width %u needs %u words, %zu left", blk, b,
                           b, s->nw - s->w);
    unpack(s->p + 4 * s->w, b, d);
    uint32_t or = 0;
    for (int j = 0; j < BLOCK; j++) {
      or |= d[j];
      s->a[s->k++] = s->prev += d[j];
    }
    if (bit_length(or) != b) /* the encoder always writes the least width */
      return tarn__corrupt(WHAT, 4 * s->w, "block %zu has width %u but its deltas need %u bits",
                           blk, b, bit_length(or));
    s->w += b;
  }
  if (n && blocks == 0) {
    if (s->w >= s->nw)
      return truncated(s);
    if (tarn__ld_be32(s->p + 4 * s->w) != 0)
      return tarn__corrupt(WHAT, 4 * s->w, "marker word after a length below 32 is not 0");
    s->w++;
  }
  return 0;
}

/* The variable-byte tail of tailn values, its zero padding, and nothing after. */
static int dec_tail(dec *s, size_t tailn, size_t n) {
  const uint8_t *p = s->p;
  size_t tw = s->w, tb = 4 * (s->nw - s->w), i = 0; /* tail words, tail bytes available */
  for (size_t v = 0; v < tailn; v++) {
    uint32_t x = 0;
    size_t start = i;
    for (unsigned g = 0;; g++) {
      if (i >= tb)
        return tarn__corrupt(WHAT, s->len, "variable-byte tail truncated in value %zu of %zu", v,
                             tailn);
      uint8_t c = p[tail_byte_off(tw, i++)];
      if (g == 4 && (c & 0x7f) > 0x0f)
        return tarn__corrupt(WHAT, tail_byte_off(tw, start), "tail value %zu exceeds 32 bits", v);
      x |= (uint32_t)(c & 0x7f) << (7 * g);
      if (c & 0x80) {
        if (g > 0 && (c & 0x7f) == 0)
          return tarn__corrupt(WHAT, tail_byte_off(tw, start), "tail value %zu is overlong", v);
        break;
      }
      if (g == 4)
        return tarn__corrupt(WHAT, tail_byte_off(tw, start), "tail value %zu longer than 5 bytes",
                             v);
    }
    s->a[s->k++] = s->prev += x;
  }
  for (; i % 4; i++)
    if (p[tail_byte_off(tw, i)] != 0)
      return tarn__corrupt(WHAT, tail_byte_off(tw, i), "tail padding byte is not 0");
  if (tw + i / 4 != s->nw)
    return tarn__corrupt(WHAT, 4 * (tw + i / 4), "%zu trailing words after %zu values",
                         s->nw - tw - i / 4, n);
  return 0;
}

int tarn_entry_offsets_decode(const uint8_t *p, size_t len, uint32_t **out, size_t *out_n) {
  if (len % 4)
    return tarn__corrupt(WHAT, len - len % 4, "length %zu is not a multiple of 4", len);
  size_t n = 0; /* set by peek_count on success; gcc -O3 cannot see it */
  int rc = tarn_entry_offsets_peek_count(p, len, &n);
  if (rc)
    return rc;
  size_t nw = len / 4;
  size_t blocks = n / BLOCK, tailn = n % BLOCK;
  if (n == 0 && nw != 1)
    return tarn__corrupt(WHAT, 4, "%zu words after the length 0", nw - 1);
  /* Bound n by the words before allocating: a width-0 block costs no packed
   * words, so every header word can stand for up to 128 values, and every tail
   * word for at most 4. */
  size_t min_words = 1 + blocks / 4 + blocks % 4 + (n && blocks == 0) + (tailn + 3) / 4;
  if (min_words > nw)
    return tarn__corrupt(WHAT, len, "length %zu needs at least %zu words, %zu given", n, min_words,
                         nw);
  uint32_t *a = malloc(n ? n * sizeof *a : 1);
  if (!a)
    return tarn__err(TARN_ENOMEM, "entry offsets: out of memory for %zu values", n);
  dec s = {p, len, nw, 1, 0, 0, a};
  if ((rc = dec_blocks(&s, blocks, n)) || (rc = dec_tail(&s, tailn, n))) {
    free(a);
    return rc;
  }
  *out = a;
  *out_n = n;
  return 0;
}

int tarn_entry_offsets_from_counts(const uint32_t *counts, size_t n, uint32_t *a) {
  uint64_t sum = 0;
  for (size_t i = 0; i < n; i++) {
    if (counts[i] == 0)
      return tarn__err(TARN_EINVAL, "entry offsets: entry %zu has record count 0", i);
    sum += counts[i];
    if (sum > INT32_MAX)
      return tarn__err(TARN_ERANGE, "entry offsets: record counts exceed 2^31-1 at entry %zu", i);
    a[i] = (uint32_t)sum;
  }
  return 0;
}
