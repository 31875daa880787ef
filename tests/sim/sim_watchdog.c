/* The per-step watchdog of tarn-sim: a step that does not return within its
 * budget (a role call that loops, a settle or read loop that never ends) is
 * reported as the property Hang, with the seed, the step, the command that
 * replays it and the end of the trace, and the process exits: it never hangs.
 *
 * The budget is wall time (ITIMER_REAL), not CPU time, so that a step blocked
 * in a wait is caught too. The simulation is one thread; after a hang its
 * state is whatever the interrupted call left, so nothing of it is freed or
 * reused: the report is written from the signal handler, which then exits.
 * Runs are deterministic, so the step that hung hangs again in the replay. */
#include "sim_watchdog.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

#define TICK_MS 100

static struct {
  int budget_ms, expect_fail;
  const char *cmd;   /* "tarn-sim", "tarn-sim-planted --express", ... */
  const char *extra; /* " --bug NAME --without ..." */
  unsigned long long seed;
  volatile sig_atomic_t step, pets, seen, ticks;
  char *const *trace; /* the run's trace and its length, for the tail */
  const size_t *tlen;
} wd;

static void put(const char *p, size_t n) {
  while (n) {
    ssize_t k = write(STDOUT_FILENO, p, n);
    if (k <= 0)
      return;
    p += k;
    n -= (size_t)k;
  }
}

static void puts_(const char *p) { put(p, strlen(p)); }

static void on_tick(int sig) {
  (void)sig;
  if (wd.pets != wd.seen) {
    wd.seen = wd.pets;
    wd.ticks = 0;
    return;
  }
  if (++wd.ticks * TICK_MS < wd.budget_ms)
    return;
  /* the step is stuck: report and exit. stdout's buffer holds what the run
   * printed before (--trace); it goes first. */
  fflush(stdout);
  char line[512];
  int step = wd.step;
  snprintf(line, sizeof line,
           "%s: seed %llu FAILED at step %d: Hang: step %d has not returned after %d ms "
           "(a call that does not end; the process stops here)\n",
           wd.cmd, wd.seed, step, step, wd.budget_ms);
  puts_(line);
  snprintf(line, sizeof line, "replay: %s --seed %llu --steps %d%s --trace\n", wd.cmd, wd.seed,
           step, wd.extra ? wd.extra : "");
  puts_(line);
  if (wd.trace && *wd.trace && wd.tlen) {
    const char *t = *wd.trace;
    size_t p = *wd.tlen;
    int n = 0;
    while (p > 0 && n <= 60)
      if (t[--p] == '\n')
        n++;
    if (p > 0)
      p++;
    puts_("trace (the last 60 lines):\n");
    put(t + p, *wd.tlen - p);
  }
  _exit(wd.expect_fail ? 0 : 1);
}

void sim_watchdog_start(const char *cmd, const char *extra, int budget_ms, int expect_fail) {
  wd.cmd = cmd;
  wd.extra = extra;
  wd.budget_ms = budget_ms;
  wd.expect_fail = expect_fail;
  if (budget_ms <= 0)
    return;
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_tick;
  sa.sa_flags = SA_RESTART;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGALRM, &sa, NULL);
  struct itimerval it = {{0, TICK_MS * 1000}, {0, TICK_MS * 1000}};
  setitimer(ITIMER_REAL, &it, NULL);
}

void sim_watchdog_run(unsigned long long seed, char *const *trace, const size_t *tlen) {
  wd.trace = NULL;
  wd.tlen = NULL;
  wd.seed = seed;
  wd.tlen = tlen;
  wd.trace = trace;
  sim_watchdog_pet(0);
}

void sim_watchdog_pet(int step) {
  wd.step = step;
  wd.pets++;
}
