/* The public front door to the Kafka SASL users (tarn/kafka_users.h): the
 * credential is made here (scram.c) and stored by sasl_users.c. */
#include "tarn/kafka_users.h"

#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>

#include "kafka/sasl.h"
#include "kafka/sasl_users.h"
#include "kafka/scram.h"
#include "tarn/error.h"
#include "util/error.h"

_Static_assert(TARN_KAFKA_SASL_PLAIN == TARN__KSASL_PLAIN &&
                   TARN_KAFKA_SASL_SCRAM_SHA_256 == TARN__KSASL_SCRAM_SHA_256,
               "public and internal mechanism bits agree");
_Static_assert(TARN_KAFKA_USER_NAME_MAX == TARN__KU_NAME_MAX &&
                   TARN_KAFKA_SCRAM_ITER_MIN == TARN__SCRAM_ITER_MIN &&
                   TARN_KAFKA_SCRAM_ITER_DEFAULT == TARN__SCRAM_ITER_DEFAULT &&
                   TARN_KAFKA_SCRAM_ITER_MAX == TARN__SCRAM_ITER_MAX,
               "public and internal limits agree");

int tarn_kafka_sasl_mechanism_parse(const char *word) {
  int m = 0;
  return word && tarn__ksasl_mechanism_option(&m, word) == 0 ? m : 0;
}

int tarn_kafka_user_put(tarn_meta *m, const char *name, const char *password, size_t len,
                        int mechanisms, uint32_t iterations) {
  const int all = TARN_KAFKA_SASL_PLAIN | TARN_KAFKA_SASL_SCRAM_SHA_256;
  if (!iterations)
    iterations = TARN_KAFKA_SCRAM_ITER_DEFAULT;
  if (!name || !*name || strlen(name) > TARN_KAFKA_USER_NAME_MAX)
    return tarn__err(TARN_EINVAL, "kafka user: a name is 1..%d bytes", TARN_KAFKA_USER_NAME_MAX);
  if (!password || !len)
    return tarn__err(TARN_EINVAL, "kafka user %s: the password is empty", name);
  if (!mechanisms || (mechanisms & ~all))
    return tarn__err(TARN_EINVAL, "kafka user %s: mechanisms 0x%x (PLAIN 1, SCRAM-SHA-256 2)", name,
                     (unsigned)mechanisms);
  if (iterations < TARN_KAFKA_SCRAM_ITER_MIN || iterations > TARN_KAFKA_SCRAM_ITER_MAX)
    return tarn__err(TARN_EINVAL, "kafka user %s: %u iterations, not in %d..%d", name,
                     (unsigned)iterations, TARN_KAFKA_SCRAM_ITER_MIN, TARN_KAFKA_SCRAM_ITER_MAX);
  tarn__kcred c;
  int rc = tarn__kcred_make(password, len, mechanisms, iterations, &c);
  if (!rc)
    rc = tarn__kuser_put(m, name, &c);
  OPENSSL_cleanse(&c, sizeof c);
  return rc;
}

int tarn_kafka_user_delete(tarn_meta *m, const char *name) { return tarn__kuser_delete(m, name); }

int tarn_kafka_user_list(tarn_meta *m, tarn_kafka_user **out, size_t *n) {
  *out = NULL, *n = 0;
  char **names;
  int *mechs;
  size_t k;
  int rc = tarn__kuser_list(m, &names, &mechs, &k);
  if (rc)
    return rc;
  tarn_kafka_user *v = calloc(k ? k : 1, sizeof *v);
  if (!v) {
    for (size_t i = 0; i < k; i++)
      free(names[i]);
    free(names);
    free(mechs);
    return tarn__err(TARN_ENOMEM, "out of memory");
  }
  for (size_t i = 0; i < k; i++)
    v[i] = (tarn_kafka_user){names[i], mechs[i]};
  free(names);
  free(mechs);
  *out = v, *n = k;
  return 0;
}

void tarn_kafka_users_free(tarn_kafka_user *v, size_t n) {
  for (size_t i = 0; v && i < n; i++)
    free(v[i].name);
  free(v);
}
