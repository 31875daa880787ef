/* Fuzzes the server's side of SASL (src/kafka/scram.c, sasl_users.c): the input up to
 * its first newline is a client-first-message, the rest a client-final-message, run
 * through a whole SCRAM-SHA-256 exchange against a fixed credential; the whole input is
 * also decoded as a user record. Nothing may crash or overread, a message that parses
 * names a user of 1..255 bytes, and a final message made up by the fuzzer never passes
 * the proof. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kafka/sasl_users.h"
#include "kafka/scram.h"
#include "tarn/error.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static tarn__kcred cred;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (!cred.iterations) {
    cred.iterations = TARN__SCRAM_ITER_MIN;
    cred.salt_len = 16;
    memset(cred.salt, 7, cred.salt_len);
    if (tarn__kcred_derive("pencil", 6, &cred))
      abort();
  }
  const uint8_t *nl = memchr(data, '\n', size);
  size_t n1 = nl ? (size_t)(nl - data) : size;
  /* exact-size copies, so that an overread is caught */
  uint8_t *first = malloc(n1 ? n1 : 1), *fin = NULL;
  memcpy(first, data, n1);
  tarn__scram s = {0};
  tarn_buf out = TARN_BUF_INIT;
  if (tarn__scram_client_first(&s, first, n1) == 0) {
    size_t ul = strlen(s.user);
    if (ul == 0 || ul > 255)
      abort();
    if (tarn__scram_server_first(&s, &cred, "srv", &out))
      abort();
    if (nl) {
      size_t n2 = size - n1 - 1;
      fin = malloc(n2 ? n2 : 1);
      memcpy(fin, nl + 1, n2);
      tarn_buf_reset(&out);
      if (tarn__scram_client_final(&s, &cred, fin, n2, &out) == 0)
        abort(); /* the fuzzer does not know pencil's keys */
    }
  }
  tarn_buf_free(&out);
  tarn__scram_free(&s);
  free(first);
  free(fin);
  uint8_t *rec = malloc(size ? size : 1);
  memcpy(rec, data, size);
  tarn__kcred c;
  (void)tarn__kuser_decode(rec, size, &c);
  free(rec);
  return 0;
}
