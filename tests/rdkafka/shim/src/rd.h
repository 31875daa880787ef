/* The few librdkafka-internal definitions librdkafka's examples/rdkafka_performance.c
 * takes from its source tree ("../src/rd.h", "rd.h", "rdtime.h"), which librdkafka-dev
 * does not ship: a monotonic microsecond clock, snprintf, MIN/MAX and the libc headers
 * the internal rd.h brings in. Not tarn code; only the example programs include it. */
#ifndef TARN_RDKAFKA_SHIM_RD_H
#define TARN_RDKAFKA_SHIM_RD_H
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

typedef int64_t rd_ts_t;
#define rd_snprintf snprintf
#define RD_MAX(a, b) ((a) > (b) ? (a) : (b))
#define RD_MIN(a, b) ((a) < (b) ? (a) : (b))

/* librdkafka's rd_clock(): monotonic microseconds */
static inline rd_ts_t rd_clock(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (rd_ts_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}
#endif
