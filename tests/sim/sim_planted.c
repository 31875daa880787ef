/* The planted bugs' runs: one table, one row per bug of TARN__PLANTED_BUGS
 * (src/util/planted.h): the world that must catch it, the seeds, the steps,
 * a pinned event, the property that must report it; or why no world can, and
 * the ordinary test that kills it instead (docs/simulation.md, the planted
 * bugs' table; issue 32 item 4: the list as data, not CMake lore).
 *
 *   tarn-sim --list-planted [SIM [OUT]]
 *
 * prints the table as ctest registrations (one sim_planted_<bug> per row
 * with a world; a comment per row without) of SIM (default
 * tarn-sim-planted), into OUT if given. tests/sim/CMakeLists.txt writes them
 * each time tarn-sim-planted is built, and ctest reads them. A bug without
 * its row (or with two) fails the listing, and with it the build. */
#include <stdio.h>
#include <string.h>

#include "sim.h"

/* tarn-sim's world arguments */
#define MAIN .world = ""                           /* sim_world.c */
#define CATALOG .world = "--catalog"               /* sim_catalog.c */
#define EXPRESS .world = "--express --classic"     /* sim_express.c, no live zombies */
#define RACE .world = "--express --race --classic" /* racing opens (issue 15) */
#define ONE_STAR .world = "--express --one-star"   /* live zombies (issue 30) */
#define SEEDS(a, b) .seed_lo = (a), .seed_hi = (b) /* --seeds a..b (--seed a when a == b) */
#define BUG(id) .bug = TARN__BUG_##id
/* not in the worlds: why, and the ordinary test that kills it */
#define NO_WORLD(why_, killer_) .no_world = (why_), .killer = (killer_)

struct planted_run {
  int bug;
  const char *world; /* NULL: no world catches it (no_world, killer) */
  unsigned seed_lo, seed_hi;
  int steps;            /* 0: 2000 */
  const char *extra;    /* more arguments: a pinned event */
  const char *property; /* NULL: any failure; else it must be reported as this property */
  const char *suffix;   /* a second run of one bug: sim_planted_<bug>_<suffix> */
  const char *no_world, *killer;
};

static const struct planted_run runs[] = {
    {BUG(INDEX_BEFORE_OBJECT), MAIN, SEEDS(1, 80)},
    {BUG(READER_SKIPS_TRIM), MAIN, SEEDS(1, 80)},
    {BUG(SOFT_TRIM_UNSTORED), MAIN, SEEDS(1, 80)},
    {BUG(C4_BEFORE_C3), MAIN, SEEDS(1, 80)},
    {BUG(RECLAIM_NO_GRACE), MAIN, SEEDS(1, 80)},
    /* CatReclaimOnlyUnreachable: the reclaimer that deletes an unreferenced
     * WAL object on first sight, in the catalog worlds, where a writer's
     * object is deleted between its A2 and its A3 (the main world reports it
     * as NoDanglingIndex): first caught at seed 2 step 154. */
    {BUG(RECLAIM_NO_GRACE), CATALOG, SEEDS(1, 80), .suffix = "catalog"},
    {BUG(ACK_OFFSET_BY_ENTRIES), MAIN, SEEDS(1, 80)},
    {BUG(UNKNOWN_AS_FAILED), MAIN, SEEDS(1, 80)},
    {BUG(ACK_TS_WRITER_CLOCK), MAIN, SEEDS(1, 80)},
    {BUG(PUBLISH_DELAY_UNCHECKED), MAIN, SEEDS(1, 80)},
    {BUG(PUBLISH_UNGUARDED), MAIN, SEEDS(1, 80)},
    {BUG(SEQ_PUT_COUNTS_ENTRIES), MAIN, SEEDS(1, 80)},
    {BUG(ACK_ORDER_REVERSED), MAIN, SEEDS(1, 80)},
    {BUG(ACK_NEXT_PLUS_ONE), MAIN, SEEDS(1, 80)},
    {BUG(PUBLISH_FALLS_THROUGH), MAIN, SEEDS(1, 80)},
    {BUG(READER_SKIPS_PREFIX_CHECK), MAIN, SEEDS(1, 80)},
    {BUG(SOFT_TRIM_LOWERS), MAIN, SEEDS(1, 80)},
    {BUG(HARD_TRIM_PAST_X), MAIN, SEEDS(1, 80)},
    {BUG(HARD_TRIM_ABOVE_B), MAIN, SEEDS(1, 80)},
    {BUG(C4_RANGE_PAST_E), MAIN, SEEDS(1, 80)},
    {BUG(C4_RANGE_FROM_S), MAIN, SEEDS(1, 80)},
    {BUG(PROGRESS_ONE_PAST), MAIN, SEEDS(1, 80)},
    {BUG(C2_CUMULATIVE_BEFORE_ENTRY), MAIN, SEEDS(1, 80)},
    {BUG(C2_TIMESTAMP_NOW), MAIN, SEEDS(1, 80)},
    {BUG(LEASE_IGNORES_FENCE), MAIN, SEEDS(1, 80)},
    {BUG(DELETE_NO_DRAIN), MAIN, SEEDS(1, 80)},
    {BUG(DELETE_TRUSTS_FENCE), MAIN, SEEDS(1, 80)},
    {BUG(TASK_DEAD_EARLY), MAIN, SEEDS(1, 80)},
    /* the express bugs, in the express worlds; without issue 30's live
     * zombies, which the library does not survive yet (docs/simulation.md
     * "Live zombies"), so that each run is failed by its own bug */
    {BUG(XWRITER_TRUSTS_412), EXPRESS, SEEDS(1, 40)},
    {BUG(XWRITER_RELEASE_OUT_OF_ORDER), EXPRESS, SEEDS(1, 40)},
    {BUG(XWRITER_WINDOW_PLUS_ONE), EXPRESS, SEEDS(1, 40)},
    /* a failed writer's close deleting its absorbed slots while a fencer
     * walks them (the poison it wrote goes): found by the long run at seed
     * 20769 (docs/simulation.md); sim_express_regressions is its ordinary
     * killer (--classic: the worlds of that run) */
    {BUG(XCLOSE_RECLAIMS_FAILED), EXPRESS, SEEDS(20769, 20769), .steps = 1627},
    {BUG(XROLL_KEEPS_SLOTS), EXPRESS, SEEDS(1, 40)},
    /* The retried index put without its absent-key guard: since issue 30's
     * positional put (absorb.c, TARN_META_GUARD_LAST: the log's last key must
     * be the section's start), a retry after a put that landed is refused by
     * that guard anyway, so no world breaks with the bug: seeds 1..600
     * (--classic, both worlds) and 1..300 (one-star, live zombies) ran clean
     * with it on after h-xsettle 6176c43 (before: seed 1 step 283). */
    {BUG(XABSORB_RETRIES_BLIND),
     NO_WORLD("the positional put's guard masks it",
              "test_express_writer (absorb_exactly_once_across_unknown_put)")},
    /* Two settlers interleaved inside one slot's absorb (one's intent pending
     * or its next slot indexed while the other works from its snapshot): the
     * simulator runs a settlement as one step (racing worlds with takeover
     * nodes, seeds 1..40 x 2000: clean); cli_test_kafka_express_failover met
     * it under load (docs/express.md "Absorb's intent"). */
    {BUG(XABSORB_RACE_IS_CORRUPT), NO_WORLD("no world interleaves two absorbs of one slot",
                                            "test_express_writer (settlers_race)")},
    {BUG(XFENCE_THRESHOLD_K_MINUS_W), EXPRESS, SEEDS(1, 40)},
    {BUG(XFENCE_GUESSES_UNDECIDED), EXPRESS, SEEDS(1, 40)},
    {BUG(XFENCE_NO_REOBSERVE), EXPRESS, SEEDS(1, 40)},
    {BUG(XFENCE_WALK_START_WIN_MINUS_1), EXPRESS, SEEDS(1, 40)},
    {BUG(XROLL_REPUBLISHES_BELOW_CUT), EXPRESS, SEEDS(1, 40)},
    {BUG(XSETTLE_DELETES_BELOW_CUT), EXPRESS, SEEDS(1, 40)},
    {BUG(XSETTLE_DELETES_POISON), EXPRESS, SEEDS(1, 40)},
    {BUG(TASK_WRITE_UNCHECKED), MAIN, SEEDS(1, 80)},
    {BUG(CLAIM_SKIPS_PREPARED), MAIN, SEEDS(1, 80)},
    {BUG(STALE_TASK_LEFT_OPEN), MAIN, SEEDS(1, 80)},
    {BUG(PLAN_SKIPS_FIRST_LOG), MAIN, SEEDS(1, 80)},
    {BUG(LOCK_RELEASE_ANY_VERSION), MAIN, SEEDS(1, 80)},
    {BUG(REPAIR_C4_PAST_E), MAIN, SEEDS(1, 80)},
    {BUG(FLUSH_SKIPS_OPEN_BATCH), MAIN, SEEDS(1, 80)},
    /* Since first-seen stamps are confirmed by a second pass (issue 12), an
     * orphan outlives one more pass: a C2 must stall across one more pass for
     * its files to go, and seeds 1..487 x 2000 steps missed it; seed 488 found
     * it at the settle. The pass marks (LS-086: their writes and random ids
     * move every later draw) changed the worlds: 488 is clean now, and
     * 1..1003 miss it; seed 1004 finds it at the settle. The marks' ranges
     * (issue 31 item 7: one more write a page) moved them again: seed 564
     * finds it (NoReaderError, step 1835; docs/simulation.md). */
    {BUG(RECLAIM_IGNORES_INTENTS), MAIN, SEEDS(564, 564)},
    {BUG(RECLAIM_LOCAL_CLOCK), MAIN, SEEDS(1, 80)},
    /* The bug needs a rare chain - a failed pass's held write is the stamp
     * create of an object between its A2 and A3, a successful pass forgets
     * the stamp before the create lands, the record is retired before the
     * next successful pass - that no seed of 1001..8600 x 2000 steps reached.
     * --late-stamp-at pins its first half: from step 300 a pass's fifth
     * write (past its marks and its first page's range, issue 31 item 7) is
     * held, and its zombie's write lands right after the next successful
     * pass. Before the ranges seed 4 failed ReclaimAfterGrace at the settle
     * (issue 12); with them 1..236 miss it and seed 237 fails it at step 685
     * (docs/simulation.md). */
    {BUG(RECLAIM_TRUSTS_LATE_STAMP), MAIN, SEEDS(237, 237), .extra = "--late-stamp-at 300"},
    /* A pass that saw a name named and failed its forget, then a retirement
     * and a deletion within the grace after it: the checker's
     * ReclaimAfterGrace counts from the last SUCCESSFUL pass that saw a record
     * name the object (sim_check.c: it cannot tell whether a failed pass got
     * as far as the name, and one that did not is the window the design
     * accepts), so the sim cannot judge it. */
    {BUG(RECLAIM_UNMARKED_PASS), NO_WORLD("the checker cannot see a failed pass's forget",
                                          "test_reclaim (failed_forget_keeps_grace, "
                                          "live_and_dead_marks)")},
    /* The sim's worlds are one deployment each: no second deployment's marker
     * to ignore (issue 31 item 5, docs/deployment.md "One deployment per
     * root"). */
    {BUG(ROOTS_UNCHECKED),
     NO_WORLD("one deployment per world", "test_reclaim (foreign_root_refused)")},
    {BUG(TASK_PUT_UNGUARDED), MAIN, SEEDS(1, 80)},
    {BUG(C2_STOPS_BEFORE_E), MAIN, SEEDS(1, 80)},
    {BUG(PLAN_OVER_UNFINISHED), MAIN, SEEDS(1, 80)},
    {BUG(CLAIM_SKIPS_FAILED), MAIN, SEEDS(1, 80)},
    {BUG(CLAIM_REDOES_C2), MAIN, SEEDS(1, 80)},
    {BUG(TASK_GUARD_ANY_LOCK), MAIN, SEEDS(1, 80)},
    {BUG(TASK_VIEW_STAYS_INIT), MAIN, SEEDS(1, 80)},
    /* the catalog bugs, in the catalog worlds */
    {BUG(CATALOG_ALLOC_UNCHECKED), CATALOG, SEEDS(1, 80)},
    {BUG(CATALOG_CREATE_IGNORES_TOMBSTONE), CATALOG, SEEDS(1, 80)},
    {BUG(CATALOG_DROP_SKIPS_LAST_LOG), CATALOG, SEEDS(1, 80)},
    /* needs a stream create held in flight past its retry and a drop before
     * it lands, early in a world (later every identity is tombstoned): first
     * caught at seed 123 (docs/simulation.md, catalog worlds) */
    {BUG(CATALOG_CREATE_UNGUARDED), CATALOG, SEEDS(1, 150)},
    {BUG(CATALOG_DROP_IGNORES_LOG_DELETE), CATALOG, SEEDS(1, 80)},
    /* A late lock create that leaks shows only when it lands near the end and
     * its node lives to the settle: rare (1..600 x 2000 steps miss it). The
     * seed of the long run that found it (10516, cut at 18400 steps) moved
     * with every change of the worlds (the pass marks: LS-086), so the event
     * is pinned: --late-lock-at holds a claim's first write (its lock create)
     * from step 1900 on and lands it two steps later; 8 of seeds 1..20 catch
     * it (seed 1 first), TaskCompletion at the settle (docs/simulation.md).
     * sim_late_lock runs the same worlds on the fixed library. */
    {BUG(LATE_LANDING_LEAKS), MAIN, SEEDS(1, 20), .extra = "--late-lock-at 1900"},
    {BUG(READER_TRIM_LAST_OFFSET), MAIN, SEEDS(1, 80)},
    {BUG(READER_PQ_END_IS_LOG_END), MAIN, SEEDS(1, 80)},
    {BUG(READER_RELOOKUP_THROUGH_CACHE), MAIN, SEEDS(1, 80)},
    /* The open gate's bugs (issue 15), in the racing-opens worlds (several
     * stars): each is caught at seed 1 (docs/simulation.md, docs/express.md
     * "Leadership"). */
    {BUG(XREC_AFTER_ACK), RACE, SEEDS(1, 20)},
    {BUG(XMARK_NOT_CONSUMED), RACE, SEEDS(1, 20)},
    {BUG(XMARK_BEFORE_FLUSH), RACE, SEEDS(1, 20)},
    {BUG(XGATE_TRUSTS_DEAD), RACE, SEEDS(1, 20)},
    {BUG(XGATE_TRUSTS_INDEX), RACE, SEEDS(1, 20)},
    /* Issue 30's rules, in the one-star worlds with its live zombies (paused
     * writers that resume, second processes of the star, the timer's model,
     * the library's settlement order; docs/simulation.md "Live zombies"):
     * each must be reported as the property of its rule. Seed 22 step 568:
     * the library's loop settles epoch 11 before 10, and absorb refuses
     * (older_unsettled). */
    {BUG(XSETTLE_NEWEST_FIRST), ONE_STAR, SEEDS(22, 30), .property = "XAckReadBack"},
    /* Issue 30 item 3's other two rules: with settlement oldest first, a gate
     * that settles its writer's own rolled epochs (absorbed exactly once
     * through the intents, at the acknowledged offsets) and a put at the
     * index's end instead of the positional one place every entry where it
     * was acknowledged; each is a second line behind the order, and no world
     * breaks with it alone: the one-star worlds with live zombies and late
     * first appends (a gate after rolls), seeds 1..1500 x 2000 steps, and
     * 401..3000 for xabsorb-not-positional, ran clean with the bug on
     * (docs/simulation.md "Live zombies"). */
    {BUG(XGATE_SETTLES_OWN),
     NO_WORLD("no world breaks with it alone", "test_express_gate (gate_spares_own_epochs)")},
    {BUG(XABSORB_NOT_POSITIONAL),
     NO_WORLD("no world breaks with it alone", "test_express_writer (scripts/mutants.hints)")},
    {BUG(XTAKEOVER_FENCES_LIVE_HEAD), RACE, SEEDS(1, 20)},
    {BUG(XTAKEOVER_SETTLES_UNFENCED), RACE, SEEDS(1, 20)},
    {BUG(XTAKEOVER_JUDGES_BEFORE_HEAD), RACE, SEEDS(1, 20)},
    /* seed 4 step 1201, a resumed writer's roll minted and acknowledged
     * offsets its successor had indexed (XAckReadBack: an entry read at
     * another offset; elsewhere XNoOffsetTwice first) */
    {BUG(XROLL_NO_LEAD_CHECK), ONE_STAR, SEEDS(1, 10), .property = "(XNoOffsetTwice|XAckReadBack)"},
    {BUG(XSTAR_TWO_LIVE), ONE_STAR, SEEDS(1, 10),
     .property = "XNoAdmitBesideLive"}, /* seed 1 step 207 */
    /* seed 4 step 1353: inside a roll */
    {BUG(XTIMER_SPINS), ONE_STAR, SEEDS(1, 10), .property = "XTimerBounded"},
    /* issue 31 item 6: the worlds never renew a session, a process that lost
     * one ends (tarn serve renews; its health job is not simulated) */
    {BUG(WRITER_KEEPS_OLD_LEASE),
     NO_WORLD("the worlds never renew a session", "test_writer_renew")},
    /* issue 31 item 3: the Kafka producers' state is no part of the worlds */
    {BUG(KPROD_TRUSTS_CACHE),
     NO_WORLD("no Kafka producers in the worlds", "test_kafka_producer (moves_between_nodes)")},
    /* issue 31, one rule for a Kafka stream */
    {BUG(KAFKA_RULE_TOPIC_ONLY),
     NO_WORLD("no stream with a serde property in the worlds", "test_kafka_rule")},
    /* issue 37: two alters of one topic's configs at once */
    {BUG(PROPS_BLIND_PUT), NO_WORLD("no topic configs in the worlds",
                                    "test_kafka_alter (concurrent_alters_lose_nothing)")},
    /* Issue 31's conformance items: LS-085's late-put bound (no world's put
     * outlasts max_put_ms) and LS-082's trim boundary by one (one seed of the
     * long runs met it); issue 30 item 6's late absorb put (the same bound on
     * express absorb) and item 6a's failed mint in a roll (not tried in the
     * worlds): each killed by a direct unit test instead. */
    {BUG(WRITER_NO_LATE_PUT_BOUND),
     NO_WORLD("no world's put outlasts max_put_ms", "test_wal_grace (late_put_not_acknowledged)")},
    {BUG(RECLAIM_TRIM_BOUND_PLUS_ONE),
     NO_WORLD("one seed of the long runs met it", "test_reclaim (trimmed_files_boundary)")},
    {BUG(XABSORB_NO_LATE_PUT_BOUND),
     NO_WORLD("no world's put outlasts max_put_ms",
              "test_express_writer (absorb_late_put_keeps_object)")},
    {BUG(XROLL_MINT_FAIL_SILENT), NO_WORLD("no world fails a roll's mint",
                                           "test_express_lead (failed_mint_gives_every_outcome)")},
    /* the s3:// client's 503 rule (issue 31, "behaviour under 503"): the
     * worlds' object stores are mem:, with no HTTP; the lying proxy's
     * 503-after-put mode in front of radosgw */
    {BUG(S3_503_NOT_AMBIGUOUS), NO_WORLD("no s3:// in the worlds", "cli_test_probe")},
    /* LS-001 (issue 31) */
    {BUG(LEGACY_LOG_APPENDABLE),
     NO_WORLD("no legacy log in the worlds", "test_legacy_read (append_to_legacy_refused)")},
    /* C5 by a plain put (issue 31 item 11): the checker holds no rule on the
     * optional progress record; a held put landing after a later pass's */
    {BUG(PROGRESS_UNCONDITIONAL), NO_WORLD("no property on C5's record", "test_compact_progress")},
    /* Issue 31 item 11: LS-040's create-then-Get still refuses the lease, so
     * no property breaks */
    {BUG(LEASE_CREATE_ON_FENCED),
     NO_WORLD("the lease is refused either way", "test_lease (fenced_log_untouched)")},
    /* the express produce's claim compare (issue 31 item 4) */
    {BUG(KPROD_EXPRESS_UNCHECKED),
     NO_WORLD("no Kafka producers in the worlds", "test_kafka_producer (express_claim_checked)")},
    /* The claims' settlement (issue 31): a node withdraws only its own claim,
     * a revoked claim stays until it was looked for, an express log's finder
     * leads the log and reads the writer's tail */
    {BUG(KPROD_DROPS_OTHERS_CLAIM),
     NO_WORLD("no Kafka producers in the worlds", "test_kafka_producer (others_claim_kept)")},
    {BUG(KPROD_FORGETS_REVOKED),
     NO_WORLD("no Kafka producers in the worlds",
              "test_kafka_producer (revoked_claim_outlives_failed_find)")},
    {BUG(KPROD_XFIND_INDEX_ONLY),
     NO_WORLD("no Kafka producers in the worlds",
              "test_kafka_producer_find (express_finder_settles_and_reads_tail)")},
    /* LS-001 at the deployment (issue 31): the worlds hold no legacy log */
    {BUG(LEGACY_EMPTY_LOG_APPENDABLE),
     NO_WORLD("no legacy log in the worlds",
              "test_legacy_read (empty_log_of_legacy_deployment_refused)")},
    /* Issue 37 "Lifecycle": producer state goes with its topic and expires */
    {BUG(KPROD_CREATES_ON_FENCED),
     NO_WORLD("no Kafka producers in the worlds", "test_kafka_producer (state_goes_with_topic)")},
    {BUG(KPROD_EXPIRY_UNGUARDED),
     NO_WORLD("no Kafka producers in the worlds", "test_kafka_producer (expiry_sweep)")},
    {BUG(KPROD_WAITS_FOR_DEAD_OWNER),
     NO_WORLD("no Kafka producers in the worlds",
              "test_kafka_producer (dead_owners_claim_settled_at_once)")},
    {BUG(KOFFSET_EXPIRY_UNGUARDED),
     NO_WORLD("no Kafka groups in the worlds", "test_kafka_group (offsets_expire)")},
    {BUG(KFETCH_READS_PAST_DEADLINE),
     NO_WORLD("no Kafka fetches in the worlds",
              "test_kafka_fetch_alloc (cold_backlog_answered_by_deadline)")},
    /* Issue 31: 004's S3 and S5 as the protocol states them
     * (docs/simulation.md "Properties"). publish-ignores-fence (A3 guarded by
     * the lease record but not the fence) appends between the fence and the
     * drain's end, which the checker before S3-from-the-fence let pass (seeds
     * 1..100 clean); seed 1 step 952. c4-skipped (install's C3 and C5 without
     * C4) leaves the superseded RAW records under a PARQUET record past C5,
     * which NoOverlappingRanges' C3-C4 window allowed (seeds 1..100 clean);
     * seed 1 step 143. Ordinary killers: test_writer_delete, test_compactor. */
    {BUG(PUBLISH_IGNORES_FENCE), MAIN, SEEDS(1, 10), .property = "FencedRejectsAppends"},
    {BUG(C4_SKIPPED), MAIN, SEEDS(1, 10), .property = "NoPhantomEntries"},
    /* etcd's sequenced put retrying after the log moved on past an attempt of
     * unknown outcome (issue 31 item 1): the worlds' mem: store has no
     * unknown outcomes of its own; case 1c, a compaction rewrites the put's
     * record while its answer is delayed */
    {BUG(SEQ_PUT_RETRY_BLIND), NO_WORLD("etcd only", "cli_test_etcd_faults")},
    /* issue 37: DeleteGroups deletes only an Empty group */
    {BUG(KGROUP_DELETES_NONEMPTY),
     NO_WORLD("no Kafka groups in the worlds", "test_kafka_admin (delete_groups_and_offsets)")},
    /* issue 37: plain-stream retention never trims an entry younger than
     * retention.ms */
    {BUG(RETENTION_TRIMS_YOUNG),
     NO_WORLD("no retention job in the worlds", "test_retention (by_time_never_young)")},
    /* issue 37: a replaced static member's old ID is FENCED_INSTANCE_ID */
    {BUG(KGROUP_STATIC_UNFENCED),
     NO_WORLD("no Kafka groups in the worlds", "test_kafka_group (static_member_fenced)")},
    /* issue 37: Produce v0-2 store a magic-0 wrapper as its inner messages */
    {BUG(KAFKA_LEGACY_UNFLATTENED), NO_WORLD("no Kafka producers in the worlds",
                                             "test_kafka_listen (produce_legacy_down_converted)")},
    /* issue 33: the listener's limits against hostile clients */
    {BUG(KAFKA_PREAUTH_UNBOUNDED),
     NO_WORLD("no Kafka listener in the worlds", "cli_test_kafka_dos (oversized before login)")},
    {BUG(KAFKA_BUDGET_UNCHECKED),
     NO_WORLD("no Kafka listener in the worlds", "cli_test_kafka_dos (in-flight budget)")},
    {BUG(KAFKA_PER_IP_UNLIMITED),
     NO_WORLD("no Kafka listener in the worlds", "cli_test_kafka_dos (per-address limit)")},
    {BUG(KAFKA_NO_AUTH_DEADLINE),
     NO_WORLD("no Kafka listener in the worlds", "cli_test_kafka_dos (login deadline)")},
    {BUG(KAFKA_TRICKLE_KEEPS_ALIVE),
     NO_WORLD("no Kafka listener in the worlds", "cli_test_kafka_dos (trickle deadline)")},
    {BUG(KAFKA_UNKNOWN_USER_RANDOM_SALT),
     NO_WORLD("no SASL in the worlds", "test_kafka_sasl (unknown_users_indistinguishable)")},
    /* issue 37, KIP-848: a partition goes to a member only after its previous
     * owner has revoked it */
    {BUG(KCGROUP_DOUBLE_ASSIGN),
     NO_WORLD("no Kafka groups in the worlds", "test_kafka_cgroup (revoke_before_reassign)")},
    /* issue 33 item 4: failed logins limited per address, name and pair */
    {BUG(KAFKA_AUTH_UNLIMITED),
     NO_WORLD("no SASL in the worlds", "test_kafka_sasl (failed_logins_limited)")},
};

/* A CMake bracket argument: no character in it is special. */
static void arg(FILE *f, const char *s) { fprintf(f, " [==[%s]==]", s); }

static void test_name(char *out, size_t n, const struct planted_run *r) {
  snprintf(out, n, "sim_planted_%s%s%s", sim_bug_names[r->bug], r->suffix ? "_" : "",
           r->suffix ? r->suffix : "");
  for (char *p = out; *p; p++)
    if (*p == '-')
      *p = '_';
}

/* Every bug has exactly one row without a suffix. */
static int check_table(void) {
  int bad = 0;
  for (int b = 1; b < TARN__BUG_COUNT; b++) {
    int n = 0;
    for (size_t i = 0; i < sizeof runs / sizeof runs[0]; i++)
      n += runs[i].bug == b && !runs[i].suffix;
    if (n != 1) {
      fprintf(stderr,
              "tarn-sim --list-planted: planted bug %s has %d rows in tests/sim/sim_planted.c "
              "(one: its world and seeds, or NO_WORLD and its killer)\n",
              sim_bug_names[b], n);
      bad = 1;
    }
  }
  return bad;
}

static void print_table(FILE *f, const char *exe) {
  fprintf(
      f, "# Generated by tarn-sim --list-planted from tests/sim/sim_planted.c: edit that table.\n");
  for (size_t i = 0; i < sizeof runs / sizeof runs[0]; i++) {
    const struct planted_run *r = &runs[i];
    char name[128], v[64];
    test_name(name, sizeof name, r);
    if (!r->world) {
      fprintf(f, "# %s: not registered (%s); killed by %s\n", name, r->no_world, r->killer);
      continue;
    }
    fprintf(f, "add_test([==[%s]==]", name);
    arg(f, exe);
    for (const char *w = r->world; *w;) {
      size_t k = strcspn(w, " ");
      fprintf(f, " [==[%.*s]==]", (int)k, w);
      w += k + (w[k] == ' ');
    }
    arg(f, r->seed_lo == r->seed_hi ? "--seed" : "--seeds");
    if (r->seed_lo == r->seed_hi)
      snprintf(v, sizeof v, "%u", r->seed_lo);
    else
      snprintf(v, sizeof v, "%u..%u", r->seed_lo, r->seed_hi);
    arg(f, v);
    arg(f, "--steps");
    snprintf(v, sizeof v, "%d", r->steps ? r->steps : 2000);
    arg(f, v);
    for (const char *w = r->extra ? r->extra : ""; *w;) {
      size_t k = strcspn(w, " ");
      fprintf(f, " [==[%.*s]==]", (int)k, w);
      w += k + (w[k] == ' ');
    }
    arg(f, "--bug");
    arg(f, sim_bug_names[r->bug]);
    arg(f, "--expect-fail");
    fprintf(f, ")\n");
    /* A planted bug may leak by design (flush-skips-open-batch leaves the
     * open batch behind at close): the run is judged on the property it
     * breaks, not by LeakSanitizer at exit. */
    fprintf(f, "set_tests_properties([==[%s]==] PROPERTIES ENVIRONMENT", name);
    arg(f, "ASAN_OPTIONS=detect_leaks=0:abort_on_error=1");
    if (r->property) {
      char re[256];
      snprintf(re, sizeof re, "FAILED at step [0-9]+[^:]*: %s", r->property);
      fprintf(f, " PASS_REGULAR_EXPRESSION");
      arg(f, re);
    }
    fprintf(f, ")\n");
  }
}

int sim_list_planted(int argc, char **argv) {
  const char *exe = argc > 1 ? argv[1] : "tarn-sim-planted";
  const char *out = argc > 2 ? argv[2] : NULL;
  if (argc > 3) {
    fprintf(stderr, "usage: tarn-sim --list-planted [SIM [OUT]]\n");
    return 2;
  }
  if (check_table()) {
    if (out) /* no stale registrations either */
      remove(out);
    return 2;
  }
  if (!out) {
    print_table(stdout, exe);
    return fflush(stdout) ? 2 : 0;
  }
  /* whole or not at all: a failed listing leaves no OUT, so the build retries it */
  char tmp[4096];
  snprintf(tmp, sizeof tmp, "%s.tmp", out);
  FILE *f = fopen(tmp, "w");
  if (!f) {
    perror(tmp);
    return 2;
  }
  print_table(f, exe);
  if (fclose(f) || rename(tmp, out)) {
    perror(out);
    remove(tmp);
    return 2;
  }
  return 0;
}

int sim_list_bugs(void) {
  for (int b = 1; b < TARN__BUG_COUNT; b++)
    printf("%s\n", sim_bug_names[b]);
  return 0;
}
