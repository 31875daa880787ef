/* The per-step watchdog of tarn-sim (sim_watchdog.c): a step that does not
 * return within its budget is reported as the property Hang and ends the
 * process, instead of hanging it. */
#ifndef TARN_SIM_WATCHDOG_H
#define TARN_SIM_WATCHDOG_H

#include <stddef.h>

/* Arms the watchdog for the process: cmd names the command for the replay
 * line, extra its options after --steps (" --bug NAME ..."; may be NULL). A
 * Hang exits 1, or 0 under --expect-fail. budget_ms <= 0: no watchdog. */
void sim_watchdog_start(const char *cmd, const char *extra, int budget_ms, int expect_fail);
/* A new run: its seed and its trace (read for the tail of the report). */
void sim_watchdog_run(unsigned long long seed, char *const *trace, const size_t *tlen);
/* Step `step` has begun (or a settle phase made progress): its budget starts again. */
void sim_watchdog_pet(int step);

#endif
