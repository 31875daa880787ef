/* Structured logs of `tarn serve` on stderr: text lines by default
 *   2026-11-30T03:40:00.123Z INFO job done job=compact seconds=0.012
 * or JSON lines with --log-format json
 *   {"ts":"2026-11-30T03:40:00.123Z","level":"info","msg":"job done","job":"compact",...}
 * Thread-safe: one line is written at a time. */
#ifndef TARN_SERVER_SRVLOG_H
#define TARN_SERVER_SRVLOG_H

enum { TARN_SRV_LOG_TEXT = 0, TARN_SRV_LOG_JSON = 1 };
enum { TARN_SRV_DEBUG = 0, TARN_SRV_INFO = 1, TARN_SRV_WARN = 2, TARN_SRV_ERROR = 3 };

/* Sets the format and the least level written (default text, info). */
void tarn_srv_log_setup(int format, int min_level);

/* One line: msg, then NULL-terminated (key, value) string pairs. */
void tarn_srv_log(int level, const char *msg, ...);
/* The same with the pairs in kv[], NULL-terminated (a NULL value is ""):
 * the Kafka node's lines (tarn_kafka_log_fn) come this way. */
void tarn_srv_logv(int level, const char *msg, const char *const *kv);

#endif
