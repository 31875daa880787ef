/* tarn-sim: runs the simulation for one seed or a range of seeds.
 *
 *   tarn-sim --seed N [--steps N] [--trace]        one run; --trace prints every line
 *   tarn-sim --seeds A..B [--steps N]               many runs; stops at the first failure
 *   --check-determinism   runs each seed twice and compares the traces' hashes
 *   --bug NAME            (tarn-sim-planted only) turns on a planted bug
 *   --expect-fail         exit 0 only if some seed failed (the planted-bug tests)
 *   --without LIST        leave out fault kinds:
 * object,meta,crash,expiry,skew,slow,zombie,stall,c3crash,read
 *   --step-budget-ms N    a step (or the settle) that has not returned after N ms of wall
 *                         time fails the run as Hang and ends the process (default 30000; 0: off)
 *   --hang-at STEP        the watchdog's self-test: step STEP never returns
 *   --late-lock-at STEP   from STEP on, a task node's claim has its next metadata
 *                         write held in flight and landed two steps later (once)
 *   --late-stamp-at STEP  from STEP on, a reclaimer pass has its first write past
 *                         its marks held, landed after the next successful pass (once)
 *
 *   tarn-sim --list-planted [SIM [OUT]]   the planted bugs' ctest registrations
 *                                         (tests/sim/sim_planted.c)
 *   tarn-sim --list-bugs                  the planted bugs' names, one a line
 *
 * A failure is shrunk: the run is repeated without each fault kind in turn
 * (keeping those it still fails without) and up to its failing step, and the
 * smallest failing run is printed with its replay command.
 *
 * A failing run prints its seed, the step, the violated property, the command
 * that replays it and the end of its trace. Runs are prefix-deterministic:
 * --steps S replays the first S steps of a longer run exactly, so the failing
 * step is the shortest replay. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sim.h"
#include "sim_watchdog.h"

static void usage(void) {
  fprintf(stderr, "usage: tarn-sim (--seed N | --seeds A..B) [--steps N] [--trace] "
                  "[--check-determinism] [--bug NAME] [--expect-fail] "
                  "[--without object,meta,crash,expiry,skew,slow,zombie,stall,c3crash,read] "
                  "[--step-budget-ms N] [--hang-at STEP] [--late-lock-at STEP] "
                  "[--late-stamp-at STEP]\n");
}

static void without_str(int without, char *out, size_t n) {
  out[0] = 0;
  for (int k = 0; sim_fault_names[k]; k++)
    if (without & (1 << k))
      snprintf(out + strlen(out), n - strlen(out), "%s%s", out[0] ? "," : "", sim_fault_names[k]);
}

/* A comma-separated list of fault names (whole names: "crash" is not "c3crash"). */
static int parse_without(const char *v) {
  int m = 0;
  while (*v) {
    size_t n = strcspn(v, ",");
    for (int k = 0; sim_fault_names[k]; k++)
      if (strlen(sim_fault_names[k]) == n && !strncmp(v, sim_fault_names[k], n))
        m |= 1 << k;
    v += n + (v[n] == ',');
  }
  return m;
}

static int shown_step(const sim *s) { return s->step > s->steps ? s->steps : s->step; }

/* Repeats a failing run without each fault kind in turn and only up to its
 * failing step; prints the smallest failing run found. */
static void shrink(const sim *failed) {
  int without = failed->without, steps = shown_step(failed);
  char failure[1024];
  snprintf(failure, sizeof failure, "%s", failed->failure);
  for (int k = 0; sim_fault_names[k]; k++) {
    if (without & (1 << k))
      continue;
    sim t = {.seed = failed->seed,
             .steps = steps,
             .bug = failed->bug,
             .without = without | (1 << k),
             .late_lock_at = failed->late_lock_at,
             .late_stamp_at = failed->late_stamp_at};
    if (sim_run(&t)) {
      without |= 1 << k;
      steps = shown_step(&t);
      snprintf(failure, sizeof failure, "%s", t.failure);
    }
    sim_free(&t);
  }
  char w[64];
  without_str(without, w, sizeof w);
  printf("shrunk: seed %" PRIu64 " still fails at step %d%s%s: %s\n", failed->seed, steps,
         w[0] ? " without " : "", w, failure);
  char ll[80] = "";
  if (failed->late_lock_at)
    snprintf(ll, sizeof ll, " --late-lock-at %d", failed->late_lock_at);
  if (failed->late_stamp_at)
    snprintf(ll + strlen(ll), sizeof ll - strlen(ll), " --late-stamp-at %d", failed->late_stamp_at);
  printf("replay: tarn-sim%s --seed %" PRIu64 " --steps %d%s%s%s%s%s --trace\n",
         failed->bug ? "-planted" : "", failed->seed, steps, failed->bug ? " --bug " : "",
         failed->bug ? sim_bug_names[failed->bug] : "", w[0] ? " --without " : "", w, ll);
}

static void print_tail(const char *trace, size_t len, int lines) {
  size_t p = len;
  int n = 0;
  while (p > 0 && n <= lines) {
    p--;
    if (trace[p] == '\n')
      n++;
  }
  if (p > 0)
    p++;
  fputs(trace + p, stdout);
}

int sim_express_main(int argc, char **argv); /* sim_express.c */
int sim_catalog_main(int argc, char **argv); /* sim_catalog.c */

int main(int argc, char **argv) {
  if (argc > 1 && !strcmp(argv[1], "--express"))
    return sim_express_main(argc - 1, argv + 1);
  if (argc > 1 && !strcmp(argv[1], "--catalog"))
    return sim_catalog_main(argc - 1, argv + 1);
  if (argc > 1 && !strcmp(argv[1], "--list-planted"))
    return sim_list_planted(argc - 1, argv + 1);
  if (argc > 1 && !strcmp(argv[1], "--list-bugs"))
    return sim_list_bugs();
  uint64_t a = 1, b = 1;
  int steps = 2000, trace = 0, determinism = 0, expect_fail = 0, bug = 0, have_seed = 0;
  int without = 0, budget_ms = 30000, hang_at = 0, late_lock_at = 0;
  int late_stamp_at = 0;
  for (int i = 1; i < argc; i++) {
    const char *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(argv[i], "--seed") && v) {
      a = b = strtoull(v, NULL, 10);
      have_seed = 1;
      i++;
    } else if (!strcmp(argv[i], "--seeds") && v) {
      char *end;
      a = strtoull(v, &end, 10);
      if (strncmp(end, "..", 2) != 0) {
        usage();
        return 2;
      }
      b = strtoull(end + 2, NULL, 10);
      have_seed = 1;
      i++;
    } else if (!strcmp(argv[i], "--steps") && v) {
      steps = atoi(v);
      i++;
    } else if (!strcmp(argv[i], "--bug") && v) {
      for (bug = 0; sim_bug_names[bug] && strcmp(sim_bug_names[bug], v); bug++) {
      }
      if (!sim_bug_names[bug]) {
        fprintf(stderr, "tarn-sim: unknown bug %s; known:", v);
        for (int k = 1; sim_bug_names[k]; k++)
          fprintf(stderr, " %s", sim_bug_names[k]);
        fprintf(stderr, "\n");
        return 2;
      }
#ifndef TARN_PLANTED_BUGS
      if (bug) {
        fprintf(stderr, "tarn-sim: planted bugs need tarn-sim-planted\n");
        return 2;
      }
#endif
      i++;
    } else if (!strcmp(argv[i], "--without") && v) {
      without = parse_without(v);
      i++;
    } else if (!strcmp(argv[i], "--step-budget-ms") && v) {
      budget_ms = atoi(v);
      i++;
    } else if (!strcmp(argv[i], "--hang-at") && v) {
      hang_at = atoi(v);
      i++;
    } else if (!strcmp(argv[i], "--late-stamp-at") && v) {
      late_stamp_at = atoi(v);
      i++;
    } else if (!strcmp(argv[i], "--late-lock-at") && v) {
      late_lock_at = atoi(v);
      i++;
    } else if (!strcmp(argv[i], "--trace"))
      trace = 1;
    else if (!strcmp(argv[i], "--check-determinism"))
      determinism = 1;
    else if (!strcmp(argv[i], "--expect-fail"))
      expect_fail = 1;
    else if (!strcmp(argv[i], "--help")) {
      usage();
      return 0;
    } else {
      usage();
      return 2;
    }
  }
  if (!have_seed || steps < 1 || b < a) {
    usage();
    return 2;
  }
  static char extra[256];
  char w0[64];
  without_str(without, w0, sizeof w0);
  char ll[80] = "";
  if (late_lock_at)
    snprintf(ll, sizeof ll, " --late-lock-at %d", late_lock_at);
  if (late_stamp_at)
    snprintf(ll + strlen(ll), sizeof ll - strlen(ll), " --late-stamp-at %d", late_stamp_at);
  snprintf(extra, sizeof extra, "%s%s%s%s%s", bug ? " --bug " : "", bug ? sim_bug_names[bug] : "",
           w0[0] ? " --without " : "", w0, ll);
  sim_watchdog_start(bug ? "tarn-sim-planted" : "tarn-sim", extra, budget_ms, expect_fail);
  clock_t t0 = clock();
  long total_steps = 0;
  sim_stats tot = {0};
  uint64_t checks[P_COUNT] = {0};
  for (uint64_t seed = a; seed <= b; seed++) {
    sim s = {.seed = seed,
             .steps = steps,
             .bug = bug,
             .without = without,
             .verbose = trace && a == b,
             .hang_at = hang_at,
             .late_lock_at = late_lock_at,
             .late_stamp_at = late_stamp_at};
    int failed = sim_run(&s);
    total_steps += s.step > s.steps ? s.steps : s.step;
    tot.acked += s.st.acked;
    tot.failed += s.st.failed;
    tot.unknown += s.st.unknown;
    tot.installs += s.st.installs;
    tot.windows += s.st.windows;
    tot.reclaimed += s.st.reclaimed;
    tot.crashes += s.st.crashes;
    tot.expiries += s.st.expiries;
    tot.deletions += s.st.deletions;
    tot.stale_hits += s.st.stale_hits;
    tot.soft_trims += s.st.soft_trims;
    tot.hard_trimmed += s.st.hard_trimmed;
    tot.held += s.st.held;
    tot.landed += s.st.landed;
    tot.silent += s.st.silent;
    tot.c2_pauses += s.st.c2_pauses;
    tot.read_faults += s.st.read_faults;
    tot.read_errors += s.st.read_errors;
    for (int p = 0; p < P_COUNT; p++)
      checks[p] += s.checks[p];
    if (failed) {
      printf("tarn-sim: seed %" PRIu64 " FAILED at step %d: %s\n", seed, s.step, s.failure);
      char w[64];
      without_str(without, w, sizeof w);
      printf("replay: tarn-sim%s --seed %" PRIu64 " --steps %d%s%s%s%s%s --trace\n",
             bug ? "-planted" : "", seed, shown_step(&s), bug ? " --bug " : "",
             bug ? sim_bug_names[bug] : "", w[0] ? " --without " : "", w, ll);
      if (!s.verbose) {
        printf("trace (the last 60 lines):\n");
        print_tail(s.trace, s.tlen, 60);
      }
      if (!expect_fail)
        shrink(&s);
      sim_free(&s);
      return expect_fail ? 0 : 1;
    }
    if (determinism) {
      uint64_t h1 = s.hash;
      size_t l1 = s.tlen;
      sim_free(&s);
      sim s2 = {.seed = seed,
                .steps = steps,
                .bug = bug,
                .without = without,
                .late_lock_at = late_lock_at,
                .late_stamp_at = late_stamp_at};
      sim_run(&s2);
      if (s2.hash != h1 || s2.tlen != l1) {
        printf("tarn-sim: seed %" PRIu64 " is not deterministic: trace hash %016" PRIx64
               " (%zu bytes), then %016" PRIx64 " (%zu bytes)\n",
               seed, h1, l1, s2.hash, s2.tlen);
        sim_free(&s2);
        return 1;
      }
      sim_free(&s2);
      if (a == b)
        printf("tarn-sim: seed %" PRIu64 " deterministic (trace hash %016" PRIx64 ")\n", seed, h1);
    } else {
      if (a == b)
        printf("tarn-sim: seed %" PRIu64 " ok, %d steps, trace hash %016" PRIx64 "\n", seed, steps,
               s.hash);
      sim_free(&s);
    }
  }
  printf("tarn-sim: seeds %" PRIu64 "..%" PRIu64 ": %ld steps, no violation (%.1f s)\n", a, b,
         total_steps, (double)(clock() - t0) / CLOCKS_PER_SEC);
  printf("tarn-sim: exercised: %" PRIu64 " appends acknowledged, %" PRIu64 " failed, %" PRIu64
         " of unknown outcome; %" PRIu64 " compactions installed, %" PRIu64
         " C3-C4 windows seen; %" PRIu64 " soft trims, %" PRIu64 " records hard-trimmed; %" PRIu64
         " WAL objects reclaimed; %" PRIu64 " stale-cache index hits; %" PRIu64 " crashes, %" PRIu64
         " session expiries, %" PRIu64 " logs deleted\n",
         tot.acked, tot.failed, tot.unknown, tot.installs, tot.windows, tot.soft_trims,
         tot.hard_trimmed, tot.reclaimed, tot.stale_hits, tot.crashes, tot.expiries, tot.deletions);
  printf("tarn-sim: slow steps: %" PRIu64 " metadata writes held in flight, %" PRIu64
         " landed late; %" PRIu64 " sessions ended silently (zombies); %" PRIu64
         " C2 runs spanning reclamation passes\n",
         tot.held, tot.landed, tot.silent, tot.c2_pauses);
  printf("tarn-sim: read side: %" PRIu64 " read, list, delete or metadata-read faults armed, "
         "%" PRIu64 " reads that failed under one\n",
         tot.read_faults, tot.read_errors);
  printf("tarn-sim: properties checked:");
  for (int p = 0; p < P_COUNT; p++)
    printf(" %s(%s)=%" PRIu64, sim_prop_names[p], sim_prop_sources[p], checks[p]);
  printf("\n");
  if (expect_fail) {
    printf("tarn-sim: expected a failure within the budget, found none\n");
    return 1;
  }
  return 0;
}
