/* Any name and value (the input split at its first '=') are a topic config
 * Kafka's table takes, or refused with TARN_EINVAL and a message naming the
 * config or saying it is unknown (src/format/kafka_configs.c); never a crash
 * or an overread. */
#include <stdlib.h>
#include <string.h>

#include "tarn/error.h"
#include "tarn/kafka_configs.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *s = malloc(size + 1);
  if (!s)
    return 0;
  memcpy(s, data, size);
  s[size] = 0;
  char *eq = strchr(s, '=');
  const char *value = eq ? eq + 1 : "";
  if (eq)
    *eq = 0;
  int rc = tarn_kafka_config_check(s, value);
  if (rc && (rc != TARN_EINVAL ||
             (!strstr(tarn_errmsg(), "Unknown topic config name") && !strstr(tarn_errmsg(), s))))
    abort();
  if (!rc && !tarn_kafka_config_find(s))
    abort();
  free(s);
  return 0;
}
