/* tarn — the Kafka listener's SASL users (docs/kafka.md "Security").
 *
 * A user is a name and a salted credential in the deployment's metadata
 * store (never the password): every `tarn serve` node of the deployment
 * authenticates against the same users. The front door to what `tarn kafka
 * user add|list|delete` does, for programs that embed libtarn. */
#ifndef TARN_KAFKA_USERS_H
#define TARN_KAFKA_USERS_H

#include <stddef.h>
#include <stdint.h>

#include "tarn/meta.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The mechanisms a user may authenticate with (bits). */
#define TARN_KAFKA_SASL_PLAIN 1
#define TARN_KAFKA_SASL_SCRAM_SHA_256 2

#define TARN_KAFKA_USER_NAME_MAX 255
/* SCRAM's PBKDF2 iterations: RFC 7677's least, the default, the most. */
#define TARN_KAFKA_SCRAM_ITER_MIN 4096
#define TARN_KAFKA_SCRAM_ITER_DEFAULT 8192
#define TARN_KAFKA_SCRAM_ITER_MAX 1000000

/* The mechanism bit of a name as the command line spells it ("plain",
 * "scram-sha-256"), 0 for any other. */
int tarn_kafka_sasl_mechanism_parse(const char *word);

/* Creates or replaces user name (1..TARN_KAFKA_USER_NAME_MAX bytes) with a
 * fresh credential from password[0..len) (not empty) for mechanisms (a
 * non-zero OR of TARN_KAFKA_SASL_*), iterations in [MIN, MAX] (0: the
 * default). TARN_EINVAL for a bad argument. */
int tarn_kafka_user_put(tarn_meta *m, const char *name, const char *password, size_t len,
                        int mechanisms, uint32_t iterations);
/* TARN_ENOTFOUND when there is no such user. */
int tarn_kafka_user_delete(tarn_meta *m, const char *name);

typedef struct tarn_kafka_user {
  char *name;
  int mechanisms; /* TARN_KAFKA_SASL_* bits */
} tarn_kafka_user;

/* Every user, sorted by name; free with tarn_kafka_users_free. */
int tarn_kafka_user_list(tarn_meta *m, tarn_kafka_user **out, size_t *n);
void tarn_kafka_users_free(tarn_kafka_user *v, size_t n);

#ifdef __cplusplus
}
#endif
#endif
