/* Fuzzes the Kafka request path of the listener: a frame (the bytes after the 4-byte
 * size) goes through the request header decoder and, for every declared api/version the
 * header names, the request decoder; the body is also decoded as that version's response.
 * Whatever decodes must re-encode, and the re-encoding must decode and encode again to
 * the same bytes (decoding drops unknown tags and non-canonical varints, so the first
 * encoding may differ from the input, never the second). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kafka/proto/kproto.h"
#include "kafka/proto/kproto_desc.h"
#include "tarn/error.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(int16_t key, int16_t v, int resp, const uint8_t *body, size_t len) {
  const tarn__kmsgdesc *d = tarn__kproto_desc(key);
  size_t sz = (resp ? d->resp : d->req)->size;
  void *m1 = malloc(sz), *m2 = malloc(sz);
  tarn__karena a;
  tarn__karena_init(&a);
  tarn_buf e1 = TARN_BUF_INIT, e2 = TARN_BUF_INIT;
  if (!m1 || !m2)
    abort();
  if (tarn__kmsg_decode(key, v, resp, body, len, &a, m1) == 0) {
    if (a.used > 16 * len + 4096)
      abort(); /* the arena's bound */
    if (tarn__kmsg_encode(key, v, resp, m1, &e1))
      abort();
    if (tarn__kmsg_decode(key, v, resp, e1.data, e1.len, &a, m2))
      abort();
    if (tarn__kmsg_encode(key, v, resp, m2, &e2))
      abort();
    if (e1.len != e2.len || (e1.len && memcmp(e1.data, e2.data, e1.len)))
      abort();
  }
  tarn_buf_free(&e1);
  tarn_buf_free(&e2);
  tarn__karena_free(&a);
  free(m1);
  free(m2);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  /* An exact copy, so that any overread past the frame is caught. */
  uint8_t *frame = malloc(size ? size : 1);
  if (!frame)
    return 0;
  memcpy(frame, data, size);
  tarn__kreq_header h;
  size_t off;
  int rc = tarn__kreq_header_decode(frame, size, &h, &off);
  if (rc == 0) {
    if (off > size || !tarn__kproto_supported(h.api_key, h.api_version))
      abort();
    check(h.api_key, h.api_version, 0, frame + off, size - off);
    check(h.api_key, h.api_version, 1, frame + off, size - off);
  } else if (rc == TARN_EUNSUPPORTED) {
    if (tarn__kproto_supported(h.api_key, h.api_version))
      abort();
  }
  free(frame);
  return 0;
}
