/* Planted bugs, for proving that the simulator's checker and the test suite
 * can fail (docs/simulation.md lists each with the property that catches it).
 *
 * Only a library compiled with -DTARN_PLANTED_BUGS has them: tarn_planted
 * (CMakeLists.txt, linked into tarn-sim-planted, --bug NAME), or the whole build
 * configured with -DTARN_MUTANTS=ON (scripts/mutants.sh), where the
 * environment variable TARN_PLANTED_BUG=NAME switches one on. In the normal
 * library TARN__PLANTED(b) is the constant 0 and the sites compile away. */
#ifndef TARN_UTIL_PLANTED_H
#define TARN_UTIL_PLANTED_H

/* X(enum suffix, name). Each bug has its row in tests/sim/sim_planted.c (the
 * world and seeds that catch it, or the ordinary test that kills it): tarn-sim
 * --list-planted prints the sim_planted_* ctest registrations from it, and
 * refuses (failing the build) while a bug lacks its row. */
/* clang-format off */
#define TARN__PLANTED_BUGS(X)                                                                      \
  X(INDEX_BEFORE_OBJECT, "index-before-object")               /* publishes a failed object */      \
  X(READER_SKIPS_TRIM, "reader-skips-trim")                   /* R1 takes B = 0 */                 \
  X(SOFT_TRIM_UNSTORED, "soft-trim-unstored")                 /* reports B' unwritten */           \
  X(C4_BEFORE_C3, "c4-before-c3")                             /* retires before installing */      \
  X(RECLAIM_NO_GRACE, "reclaim-no-grace")                     /* deletes WAL on first sight */     \
  X(ACK_OFFSET_BY_ENTRIES, "ack-offset-by-entries")           /* A4: e - entries, not records */   \
  X(UNKNOWN_AS_FAILED, "unknown-as-failed")                   /* A3 unknown reported failed */     \
  X(ACK_TS_WRITER_CLOCK, "ack-ts-writer-clock")               /* A4 ts from the writer's clock */  \
  X(PUBLISH_DELAY_UNCHECKED, "publish-delay-unchecked")       /* reverts the publish limit */      \
  X(PUBLISH_UNGUARDED, "publish-unguarded")                   /* A3 unchecked, unguarded */        \
  X(SEQ_PUT_COUNTS_ENTRIES, "seq-put-counts-entries")         /* A3's d1 = entries */              \
  X(ACK_ORDER_REVERSED, "ack-order-reversed")                 /* A4 offsets in reverse order */    \
  X(ACK_NEXT_PLUS_ONE, "ack-next-plus-one")                   /* A4: next entry at off + 1 */      \
  X(PUBLISH_FALLS_THROUGH, "publish-falls-through")           /* no return after a failure */      \
  X(READER_SKIPS_PREFIX_CHECK, "reader-skips-prefix-check")   /* Higher without LS-051 */          \
  X(SOFT_TRIM_LOWERS, "soft-trim-lowers")                     /* writes B' below B */              \
  X(HARD_TRIM_PAST_X, "hard-trim-past-x")                     /* range bound x + 1 */              \
  X(HARD_TRIM_ABOVE_B, "hard-trim-above-b")                   /* LS-081's x <= B unchecked */      \
  X(C4_RANGE_PAST_E, "c4-range-past-e")                       /* C4's upper bound e, not e-1 */    \
  X(C4_RANGE_FROM_S, "c4-range-from-s")                       /* C4's lower bound s, not s+1 */    \
  X(PROGRESS_ONE_PAST, "progress-one-past")                   /* C5 writes e + 1 (Ursa's) */       \
  X(C2_CUMULATIVE_BEFORE_ENTRY, "c2-cumulative-before-entry") /* cumulative size - entry */        \
  X(C2_TIMESTAMP_NOW, "c2-timestamp-now")                     /* C2 stamps its own clock */        \
  X(LEASE_IGNORES_FENCE, "lease-ignores-fence")               /* LS-041 not honoured */            \
  X(DELETE_NO_DRAIN, "delete-no-drain")                       /* deletes before leases end */      \
  X(DELETE_TRUSTS_FENCE, "delete-trusts-fence")               /* fence there: returns at once */   \
  X(TASK_DEAD_EARLY, "task-dead-early")                       /* DEAD one failure early */         \
  X(XWRITER_TRUSTS_412, "xwriter-trusts-412")                 /* 412 counted as a copy */          \
  X(XWRITER_RELEASE_OUT_OF_ORDER, "xwriter-release-out-of-order") /* acks past a gap */            \
  X(XWRITER_WINDOW_PLUS_ONE, "xwriter-window-plus-one")           /* WIN + 1 slots in flight */    \
  X(XCLOSE_RECLAIMS_FAILED, "xclose-reclaims-failed")             /* failed writer reclaims */     \
  X(XROLL_KEEPS_SLOTS, "xroll-keeps-slots")                       /* republished at old slots */   \
  X(XABSORB_RETRIES_BLIND, "xabsorb-retries-blind")               /* unknown put retried unread */ \
  X(XABSORB_RACE_IS_CORRUPT, "xabsorb-race-is-corrupt")           /* settlers' race = corruption */ \
  X(XFENCE_THRESHOLD_K_MINUS_W, "xfence-threshold-k-minus-w")     /* dead at K-W poison */         \
  X(XFENCE_GUESSES_UNDECIDED, "xfence-guesses-undecided")         /* dead instead of blocking */   \
  X(XFENCE_NO_REOBSERVE, "xfence-no-reobserve")                   /* trusts its poison PUTs */     \
  X(XFENCE_WALK_START_WIN_MINUS_1, "xfence-walk-start-win-minus-1") /* E-(WIN-1) */                \
  X(XROLL_REPUBLISHES_BELOW_CUT, "xroll-republishes-below-cut")     /* cut-1 also republished */   \
  X(XSETTLE_DELETES_BELOW_CUT, "xsettle-deletes-below-cut")         /* deletes from cut-1 */       \
  X(XSETTLE_DELETES_POISON, "xsettle-deletes-poison")       /* deletes poison stragglers */        \
  X(TASK_WRITE_UNCHECKED, "task-write-unchecked")           /* C2's task write unchecked */        \
  X(CLAIM_SKIPS_PREPARED, "claim-skips-prepared")           /* claims INIT tasks only */           \
  X(STALE_TASK_LEFT_OPEN, "stale-task-left-open")           /* stale range stays INIT */           \
  X(PLAN_SKIPS_FIRST_LOG, "plan-skips-first-log")           /* logs counted from 1 */              \
  X(LOCK_RELEASE_ANY_VERSION, "lock-release-any-version")   /* reverts #11 part 5's release */     \
  X(REPAIR_C4_PAST_E, "repair-c4-past-e")                   /* repair's C4 bound e, not e-1 */     \
  X(FLUSH_SKIPS_OPEN_BATCH, "flush-skips-open-batch")       /* close leaves the batch */           \
  X(RECLAIM_IGNORES_INTENTS, "reclaim-ignores-intents")     /* reverts #11 part 1 */               \
  X(RECLAIM_LOCAL_CLOCK, "reclaim-local-clock")             /* reverts #11 part 2's clock */       \
  X(RECLAIM_TRUSTS_LATE_STAMP, "reclaim-trusts-late-stamp") /* reverts issue 12's stamp fix */     \
  X(RECLAIM_UNMARKED_PASS, "reclaim-unmarked-pass")         /* no mark: failed forget unseen */    \
  X(ROOTS_UNCHECKED, "roots-unchecked")                     /* reclaims another deployment's root */\
  X(TASK_PUT_UNGUARDED, "task-put-unguarded")               /* task writes without the lock */     \
  X(C2_STOPS_BEFORE_E, "c2-stops-before-e")                 /* C2's scan ends at >= e */           \
  X(PLAN_OVER_UNFINISHED, "plan-over-unfinished")           /* reverts #11 part 5's roll-forward */\
  X(CLAIM_SKIPS_FAILED, "claim-skips-failed")               /* a failed task never reclaimed */    \
  X(CLAIM_REDOES_C2, "claim-redoes-c2")                     /* PREPARED claimed as INIT */         \
  X(TASK_GUARD_ANY_LOCK, "task-guard-any-lock")             /* guard: a lock, not ours */          \
  X(TASK_VIEW_STAYS_INIT, "task-view-stays-init")           /* PREPARED put, view left INIT */     \
  X(CATALOG_ALLOC_UNCHECKED, "catalog-alloc-unchecked")     /* LS-087 partition unchecked */       \
  X(CATALOG_CREATE_IGNORES_TOMBSTONE, "catalog-create-ignores-tombstone") /* LS-089 */             \
  X(CATALOG_DROP_SKIPS_LAST_LOG, "catalog-drop-skips-last-log") /* deletes n_logs - 1 logs */      \
  X(CATALOG_CREATE_UNGUARDED, "catalog-create-unguarded")       /* LS-089: no tombstone guard */   \
  X(CATALOG_DROP_IGNORES_LOG_DELETE, "catalog-drop-ignores-log-delete") /* failed log delete passed over */ \
  X(LATE_LANDING_LEAKS, "late-landing-leaks")             /* reverts issue 12's lock/lease fix */  \
  X(READER_TRIM_LAST_OFFSET, "reader-trim-last-offset")   /* LS-053 skip: end <= B + 1 */          \
  X(READER_PQ_END_IS_LOG_END, "reader-pq-end-is-log-end") /* a file's end ends the log */          \
  X(READER_RELOOKUP_THROUGH_CACHE, "reader-relookup-through-cache") /* LS-055 retry cached */      \
  X(XREC_AFTER_ACK, "xrec-after-ack")                               /* writer record at Finish */  \
  X(XMARK_NOT_CONSUMED, "xmark-not-consumed")                       /* the gate leaves the mark */ \
  X(XMARK_BEFORE_FLUSH, "xmark-before-flush")                       /* mark before the absorb */   \
  X(XGATE_TRUSTS_DEAD, "xgate-trusts-dead")   /* dead: no fence, no settle */                      \
  X(XGATE_TRUSTS_INDEX, "xgate-trusts-index") /* empty index = fresh log */                       \
  X(XSETTLE_NEWEST_FIRST, "xsettle-newest-first")     /* settles a star's epochs newest first */ \
  X(XGATE_SETTLES_OWN, "xgate-settles-own")           /* the gate settles its writer's own epochs */ \
  X(XABSORB_NOT_POSITIONAL, "xabsorb-not-positional") /* absorb puts at whatever the end is */     \
  X(XTAKEOVER_FENCES_LIVE_HEAD, "xtakeover-fences-live-head")     /* alive: up to H, not < H */     \
  X(XTAKEOVER_SETTLES_UNFENCED, "xtakeover-settles-unfenced")     /* settle without the fence */    \
  X(XTAKEOVER_JUDGES_BEFORE_HEAD, "xtakeover-judges-before-head") /* liveness read, then H */ \
  X(XROLL_NO_LEAD_CHECK, "xroll-no-lead-check")     /* mint without the star lease's guard */ \
  X(XSTAR_TWO_LIVE, "xstar-two-live")               /* a second live process of a star admitted */ \
  X(XTIMER_SPINS, "xtimer-spins")                   /* the timer spins under mu during a roll */ \
  X(WRITER_KEEPS_OLD_LEASE, "writer-keeps-old-lease") /* issue 31 #6: no new lease after renew */ \
  X(KPROD_TRUSTS_CACHE, "kprod-trusts-cache") /* issue 31 #3: the node's producer cache decides */ \
  X(KAFKA_RULE_TOPIC_ONLY, "kafka-rule-topic-only") /* issue 31: Kafka serde without topic unchecked */ \
  X(WRITER_NO_LATE_PUT_BOUND, "writer-no-late-put-bound")         /* LS-085: late put acked */ \
  X(RECLAIM_TRIM_BOUND_PLUS_ONE, "reclaim-trim-bound-plus-one")   /* LS-082: scan to B + 1 */ \
  X(XABSORB_NO_LATE_PUT_BOUND, "xabsorb-no-late-put-bound")       /* issue 30 #6: late record trusted */ \
  X(XROLL_MINT_FAIL_SILENT, "xroll-mint-fail-silent")     /* issue 30 #6a: no outcome after a failed mint */ \
  X(S3_503_NOT_AMBIGUOUS, "s3-503-not-ambiguous") /* issue 31: a 412 after a 503 taken as another's */ \
  X(LEGACY_LOG_APPENDABLE, "legacy-log-appendable")               /* LS-001: v3 onto a v1/v2 log */ \
  X(PROGRESS_UNCONDITIONAL, "progress-unconditional")             /* C5 put, not CAS: goes back */ \
  X(PROPS_BLIND_PUT, "props-blind-put") /* issue 37: a stream's properties put, not CAS: an alter lost */ \
  X(LEASE_CREATE_ON_FENCED, "lease-create-on-fenced")             /* record in a fenced P(L) */ \
  X(KPROD_EXPRESS_UNCHECKED, "kprod-express-unchecked")           /* issue 31 #4: no claim compare */ \
  X(PUBLISH_IGNORES_FENCE, "publish-ignores-fence") /* A3 guarded by the lease, not the fence */ \
  X(C4_SKIPPED, "c4-skipped")                       /* install: C3 then C5, no C4 */ \
  X(SEQ_PUT_RETRY_BLIND, "seq-put-retry-blind") /* issue 31 #1: C3 a new nonce, retry after the log moved on */ \
  X(KPROD_DROPS_OTHERS_CLAIM, "kprod-drops-others-claim") /* issue 31: a node withdraws another's claim */ \
  X(KPROD_FORGETS_REVOKED, "kprod-forgets-revoked") /* issue 31: revoked claims dropped before the lookup */ \
  X(KPROD_XFIND_INDEX_ONLY, "kprod-xfind-index-only") /* issue 31: express finder without gate and tail */ \
  X(LEGACY_EMPTY_LOG_APPENDABLE, "legacy-empty-log-appendable") /* LS-001: v3 onto an empty log of a legacy deployment */ \
  X(KGROUP_DELETES_NONEMPTY, "kgroup-deletes-nonempty") /* issue 37: DeleteGroups ignores members */ \
  X(KPROD_CREATES_ON_FENCED, "kprod-creates-on-fenced") /* issue 37: producer state for a deleted log */ \
  X(KPROD_EXPIRY_UNGUARDED, "kprod-expiry-unguarded") /* issue 37: the sweep deletes a fresh write */ \
  X(RETENTION_TRIMS_YOUNG, "retention-trims-young") /* issue 37: a plain stream trimmed by a mark younger than retention.ms */ \
  X(KPROD_WAITS_FOR_DEAD_OWNER, "kprod-waits-for-dead-owner") /* issue 37: a dead node's claim waits 10 s */ \
  X(KGROUP_STATIC_UNFENCED, "kgroup-static-unfenced") /* issue 37: a replaced static member not fenced */ \
  X(KOFFSET_EXPIRY_UNGUARDED, "koffset-expiry-unguarded") /* issue 37: the offsets expiry deletes a fresh commit */ \
  X(KAFKA_LEGACY_UNFLATTENED, "kafka-legacy-unflattened") /* issue 37: a magic-0 wrapper stored whole */ \
  X(KFETCH_READS_PAST_DEADLINE, "kfetch-reads-past-deadline") /* issue 37: a Fetch reads its whole budget, however long */ \
  X(KAFKA_PREAUTH_UNBOUNDED, "kafka-preauth-unbounded") /* issue 33: no 512 KiB bound before login */ \
  X(KAFKA_BUDGET_UNCHECKED, "kafka-budget-unchecked") /* issue 33: no in-flight request budget */ \
  X(KAFKA_PER_IP_UNLIMITED, "kafka-per-ip-unlimited") /* issue 33: no max.connections.per.ip */ \
  X(KAFKA_NO_AUTH_DEADLINE, "kafka-no-auth-deadline") /* issue 33: no login deadline */ \
  X(KAFKA_TRICKLE_KEEPS_ALIVE, "kafka-trickle-keeps-alive") /* issue 33: no request-read deadline */ \
  X(KAFKA_UNKNOWN_USER_RANDOM_SALT, "kafka-unknown-user-random-salt") /* issue 33 #5: a fresh salt per try */ \
  X(KCGROUP_DOUBLE_ASSIGN, "kcgroup-double-assign") /* issue 37, KIP-848: a partition handed out before its owner revoked it */ \
  X(KAFKA_AUTH_UNLIMITED, "kafka-auth-unlimited") /* issue 33 #4: failed logins never limited */
/* clang-format on */

#define TARN__PLANTED_ENUM(id, name) TARN__BUG_##id,
enum { TARN__BUG_NONE = 0, TARN__PLANTED_BUGS(TARN__PLANTED_ENUM) TARN__BUG_COUNT };

/* "none", then every bug's name by number, then NULL. */
extern const char *const tarn__planted_names[];

#ifdef TARN_PLANTED_BUGS
extern int tarn__planted_bug;
#define TARN__PLANTED(b) (tarn__planted_bug == (b))
#else
#define TARN__PLANTED(b) 0
#endif

#endif
