/* tarn — the library's clock, for programs that must agree with it (issue 32
 * item 2): `tarn serve` stamps its log lines and measures compaction lag with
 * the same clock as the library's records, which a test or the simulator may
 * replace (src/util/clock.h's hooks). */
#ifndef TARN_CLOCK_H
#define TARN_CLOCK_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Wall-clock milliseconds since the Unix epoch. */
int64_t tarn_clock_now_ms(void);
/* Monotonic milliseconds (an arbitrary origin): for intervals. */
int64_t tarn_clock_mono_ms(void);

#ifdef __cplusplus
}
#endif
#endif
