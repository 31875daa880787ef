/* The metadata store's key order (Oxia's compare_with_slash) and an encoding
 * of keys whose bytewise order is that order, for backends that sort bytes
 * (SQLite BLOBs, etcd). Key order property of "Metadata store model". */
#include <string.h>

#include "tarn/meta.h"
#include "util/error.h"

static int cmp_bytes(const char *a, size_t na, const char *b, size_t nb) {
  int c = memcmp(a, b, na < nb ? na : nb);
  if (c)
    return c < 0 ? -1 : 1;
  return na < nb ? -1 : na > nb ? 1 : 0;
}

int tarn_meta_key_compare(const char *a, const char *b) {
  size_t na = strlen(a), nb = strlen(b);
  while (na > 0 && nb > 0) {
    const char *sa = memchr(a, '/', na), *sb = memchr(b, '/', nb);
    if (!sa && !sb)
      return cmp_bytes(a, na, b, nb);
    if (!sa)
      return -1;
    if (!sb)
      return 1;
    size_t la = (size_t)(sa - a), lb = (size_t)(sb - b);
    int c = cmp_bytes(a, la, b, lb);
    if (c)
      return c;
    a += la + 1, na -= la + 1;
    b += lb + 1, nb -= lb + 1;
  }
  return na < nb ? -1 : na > nb ? 1 : 0;
}

/* Why the encoding works: at each level the tag byte 0x01 (no more '/')
 * sorts before 0x02 (more follow), as Oxia puts a remainder without '/'
 * first; a non-final segment ends in 0x00, below every key byte, so a
 * segment that is a prefix of another sorts first, as bytes.Compare does;
 * an empty remainder encodes as 0x01 alone, a prefix of every other final
 * remainder and below 0x02. */
size_t tarn_meta_key_encode(const char *key, uint8_t *out) {
  size_t n = 0;
  for (;;) {
    const char *slash = strchr(key, '/');
    size_t len = slash ? (size_t)(slash - key) : strlen(key);
    if (out) {
      out[n] = slash ? 0x02 : 0x01;
      memcpy(out + n + 1, key, len);
    }
    n += 1 + len;
    if (!slash)
      return n;
    if (out)
      out[n] = 0x00;
    n++;
    key = slash + 1;
  }
}

int tarn_meta_key_decode(const uint8_t *enc, size_t n, char *out) {
  size_t i = 0, o = 0;
  for (;;) {
    if (i >= n)
      return tarn__corrupt("metadata key encoding", i, "missing segment tag");
    uint8_t tag = enc[i++];
    if (tag == 0x01) {
      for (; i < n; i++) {
        if (enc[i] == 0 || enc[i] == '/')
          return tarn__corrupt("metadata key encoding", i, "byte 0x%02x in a key", enc[i]);
        out[o++] = (char)enc[i];
      }
      out[o] = 0;
      return 0;
    }
    if (tag != 0x02)
      return tarn__corrupt("metadata key encoding", i - 1, "segment tag 0x%02x", tag);
    for (;;) {
      if (i >= n)
        return tarn__corrupt("metadata key encoding", i, "unterminated segment");
      if (enc[i] == 0)
        break;
      if (enc[i] == '/')
        return tarn__corrupt("metadata key encoding", i, "'/' in a segment");
      out[o++] = (char)enc[i++];
    }
    i++;
    out[o++] = '/';
  }
}
