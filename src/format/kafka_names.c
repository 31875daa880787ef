/* The Kafka binding's names (spec Appendix A, "Stream identity"): topic IDs
 * in Kafka's string form, topic names, and the stream name of a topic. */
#include <stdio.h>
#include <string.h>

#include "tarn/kafka_names.h"
#include "util/error.h"

/* RFC 4648 §5, the URL- and filename-safe alphabet Kafka's Uuid.toString()
 * uses (Base64.getUrlEncoder().withoutPadding()). */
static const char B64URL[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

int tarn_kafka_topic_name_check(const char *name) {
  size_t n = name ? strlen(name) : 0;
  if (n == 0)
    return tarn__err(TARN_EINVAL, "topic name is empty");
  if (n > TARN_KAFKA_TOPIC_NAME_MAX)
    return tarn__err(TARN_EINVAL,
                     "topic name is %zu bytes; tarn allows %d (the stream name "
                     "{topic}-topic-id-{id} must fit %d bytes)",
                     n, TARN_KAFKA_TOPIC_NAME_MAX, TARN_STREAM_NAME_MAX);
  if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
    return tarn__err(TARN_EINVAL, "topic name cannot be \".\" or \"..\"");
  for (size_t i = 0; i < n; i++) {
    unsigned char ch = (unsigned char)name[i];
    int ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
             ch == '.' || ch == '_' || ch == '-';
    if (!ok)
      return tarn__err(TARN_EINVAL,
                       "topic name \"%s\": byte %zu (0x%02x) is not one of [a-zA-Z0-9._-]", name, i,
                       ch);
  }
  return 0;
}

int tarn_kafka_topic_reserved(const char *name, size_t len) {
  static const char *const internal[] = {"__consumer_offsets", "__transaction_state",
                                         "__share_group_state"};
  for (size_t i = 0; i < sizeof internal / sizeof internal[0]; i++)
    if (len == strlen(internal[i]) && memcmp(name, internal[i], len) == 0)
      return TARN_KAFKA_NAME_INTERNAL;
  if (len == strlen("__cluster_metadata") && memcmp(name, "__cluster_metadata", len) == 0)
    return TARN_KAFKA_NAME_RESERVED;
  return 0;
}

void tarn_kafka_topic_id_string(const uint8_t uuid[16], char out[TARN_KAFKA_TOPIC_ID_LEN + 1]) {
  size_t o = 0;
  for (size_t i = 0; i < 15; i += 3) {
    uint32_t v = (uint32_t)uuid[i] << 16 | (uint32_t)uuid[i + 1] << 8 | uuid[i + 2];
    out[o++] = B64URL[v >> 18 & 63];
    out[o++] = B64URL[v >> 12 & 63];
    out[o++] = B64URL[v >> 6 & 63];
    out[o++] = B64URL[v & 63];
  }
  /* the 16th byte: two characters, the second with 4 zero bits (no padding) */
  out[o++] = B64URL[uuid[15] >> 2];
  out[o++] = B64URL[(uuid[15] & 3) << 4];
  out[o] = 0;
}

static int b64url_value(char ch) {
  const char *p = ch ? strchr(B64URL, ch) : NULL;
  return p ? (int)(p - B64URL) : -1;
}

int tarn_kafka_topic_id_parse(const char *s, uint8_t uuid[16]) {
  if (!s || strlen(s) != TARN_KAFKA_TOPIC_ID_LEN)
    return tarn__err(TARN_EINVAL, "topic ID \"%s\" is not %d characters", s ? s : "",
                     TARN_KAFKA_TOPIC_ID_LEN);
  int v[TARN_KAFKA_TOPIC_ID_LEN];
  for (int i = 0; i < TARN_KAFKA_TOPIC_ID_LEN; i++)
    if ((v[i] = b64url_value(s[i])) < 0)
      return tarn__err(TARN_EINVAL, "topic ID \"%s\": character %d is not URL-safe Base64", s, i);
  if (v[21] & 15)
    return tarn__err(TARN_EINVAL, "topic ID \"%s\": its last character carries bits past 128", s);
  size_t o = 0;
  for (int i = 0; i < 20; i += 4) {
    uint32_t x = (uint32_t)v[i] << 18 | (uint32_t)v[i + 1] << 12 | (uint32_t)v[i + 2] << 6 |
                 (uint32_t)v[i + 3];
    uuid[o++] = (uint8_t)(x >> 16);
    uuid[o++] = (uint8_t)(x >> 8);
    uuid[o++] = (uint8_t)x;
  }
  uuid[15] = (uint8_t)(v[20] << 2 | v[21] >> 4);
  return 0;
}

int tarn_kafka_stream_name(const char *topic, const char *id, char *out, size_t n) {
  int rc = tarn_kafka_topic_name_check(topic);
  if (rc)
    return rc;
  uint8_t u[16];
  if ((rc = tarn_kafka_topic_id_parse(id, u)))
    return rc;
  int w = snprintf(out, n, "%s" TARN_KAFKA_STREAM_INFIX "%s", topic, id);
  if (w < 0 || (size_t)w >= n)
    return tarn__err(TARN_ERANGE, "stream name of topic %s does not fit %zu bytes", topic, n);
  return 0;
}
