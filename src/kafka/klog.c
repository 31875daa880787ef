/* The Kafka node's log lines (api.h: tarn__klog), handed to the embedding
 * program's tarn_kafka_log_fn (tarn/kafka_node.h) as key-value pairs: the
 * library writes no log of its own (tarn serve writes them to stderr). */
#include <stdarg.h>
#include <stddef.h>

#include "kafka/api.h"

void tarn__klog(const tarn__knode *n, int level, const char *msg, ...) {
  if (!n || !n->cfg.log)
    return;
  const char *kv[2 * 16 + 1];
  size_t i = 0;
  va_list ap;
  va_start(ap, msg);
  for (const char *k; i + 2 < sizeof kv / sizeof *kv && (k = va_arg(ap, const char *)) != NULL;) {
    const char *v = va_arg(ap, const char *);
    kv[i++] = k;
    kv[i++] = v ? v : "";
  }
  va_end(ap);
  kv[i] = NULL;
  n->cfg.log(n->cfg.log_arg, level, msg, kv);
}
