/* Kafka SASL users in the metadata store (partition TARN__KU_PARTITION;
 * docs/kafka.md "Security"): /users/{escaped name} holds the user's salted
 * credential (scram.h) — StoredKey, ServerKey, salt, iterations and the
 * mechanisms allowed — never the password. Every node of a deployment reads
 * the same users. */
#ifndef TARN_KAFKA_SASL_USERS_H
#define TARN_KAFKA_SASL_USERS_H

#include <stddef.h>

#include "kafka/scram.h"

struct tarn_meta;

#define TARN__KU_PARTITION "kafka-users"
#define TARN__KU_NAME_MAX 255

/* Creates or replaces user `name`. */
int tarn__kuser_put(struct tarn_meta *m, const char *name, const tarn__kcred *c);
/* TARN_ENOTFOUND when there is no such user; TARN_ECORRUPT for a record that
 * does not decode. */
int tarn__kuser_get(struct tarn_meta *m, const char *name, tarn__kcred *out);
int tarn__kuser_delete(struct tarn_meta *m, const char *name);
/* The deployment's secret for answering unknown users (issue 33 item 5,
 * sasl.c): 32 random bytes, created once (CreateIfAbsent, so that every node
 * reads the same), never leaving the metadata store's partition. */
int tarn__kuser_secret(struct tarn_meta *m, uint8_t out[32]);
/* The users' names, sorted (malloc'd array of malloc'd strings). */
int tarn__kuser_list(struct tarn_meta *m, char ***names, int **mechanisms, size_t *n);

/* The record's bytes (exposed for the fuzz target and the unit tests). */
int tarn__kuser_encode(const tarn__kcred *c, tarn_buf *out);
int tarn__kuser_decode(const uint8_t *p, size_t n, tarn__kcred *out);

#endif
