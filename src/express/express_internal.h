/* tarn — express streams, shared internals (issue 14; the Epochs design,
 * ../shared/spec/002_ad0b8bb50ec6abbf.txt; docs/express.md).
 *
 * Everything here is tarn__x*: used by the writer side (xwriter.c, absorb.c)
 * and the fence side (fence.c, settle.c). Names stay stable; additions are
 * fine. The layer sits above src/log and below src/cli and src/server, and
 * uses the object stores and the metadata store only through their APIs. */
#ifndef TARN_EXPRESS_INTERNAL_H
#define TARN_EXPRESS_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "tarn/buf.h"
#include "tarn/express_fence.h"
#include "tarn/meta.h"
#include "tarn/objstore.h"

/* ---- the bucket set -------------------------------------------------------- */

#define TARN__X_K_MAX 8     /* most buckets in a set */
#define TARN__X_ZONE_MAX 64 /* longest zone name */
#define TARN__X_W_DEFAULT 2
#define TARN__X_WIN_DEFAULT 8
#define TARN__X_WIN_MAX 4096

typedef struct tarn__xbucket {
  char *uri;            /* an object-store URI (file://, mem:, s3://) */
  char *zone;           /* the zone it lives in ("" when not given) */
  tarn_objstore *store; /* open after tarn__xbuckets_open, else NULL */
} tarn__xbucket;

/* The deployment's express bucket set: K buckets in a fixed order (the order
 * poison is written in), the copy quorum W and the pipeline window WIN (the
 * number of slots that may be assigned and not yet released: the fence walks
 * from estimate - WIN, epochs-model.md §7.1). */
typedef struct tarn__xbuckets {
  size_t k;
  uint32_t w;
  uint32_t win;
  tarn__xbucket b[TARN__X_K_MAX];
} tarn__xbuckets;

/* Appends one bucket given as "URI" or "URI@ZONE" (the zone after the last
 * '@' that follows the scheme's "//" or ':'; TARN_EINVAL on an empty URI, a
 * zone with '/', or more than TARN__X_K_MAX buckets). */
int tarn__xbuckets_add(tarn__xbuckets *s, const char *uri_at_zone);
/* 1 <= W <= K, 1 <= WIN <= TARN__X_WIN_MAX, distinct URIs: else TARN_EINVAL. */
int tarn__xbuckets_check(const tarn__xbuckets *s);
/* Opens every bucket's store (closing those opened on failure). */
int tarn__xbuckets_open(tarn__xbuckets *s);
/* Closes the stores, frees the strings, zeroes *s. */
void tarn__xbuckets_free(tarn__xbuckets *s);
/* A deep copy of the URIs, zones, W and WIN (stores not opened). */
int tarn__xbuckets_copy(const tarn__xbuckets *from, tarn__xbuckets *to);

/* The deployment record of the bucket set: JSON {"buckets":[{"uri":..,
 * "zone":..},..],"w":W,"win":WIN} at TARN__X_DEPLOY_PARTITION /
 * TARN__X_DEPLOY_KEY, written create-only by `tarn init` (an existing
 * record stays: the deployment's, like the timing record). */
#define TARN__X_DEPLOY_PARTITION "tarn-deployment"
#define TARN__X_DEPLOY_KEY "/express"
int tarn__xbuckets_encode(const tarn__xbuckets *s, tarn_buf *out);
int tarn__xbuckets_decode(const uint8_t *p, size_t n, tarn__xbuckets *out);
/* *created (may be NULL) is 1 when this call wrote the record. */
int tarn__xbuckets_record(tarn_meta *m, const tarn__xbuckets *s, int *created);
/* TARN_ENOTFOUND (with a message saying to run `tarn init`) when absent. */
int tarn__xbuckets_load(tarn_meta *m, tarn__xbuckets *out);

/* The "buckets" array (jansson) shared by the deployment record and the epoch
 * record's mint-time constants; from_json is TARN_ECORRUPT (no message) on
 * anything but a valid set. */
struct json_t;
struct json_t *tarn__xbuckets_json(const tarn__xbuckets *s);
int tarn__xbuckets_from_json(struct json_t *arr, struct json_t *w, struct json_t *win,
                             tarn__xbuckets *out);

/* ---- stars ----------------------------------------------------------------- */

#define TARN__X_STAR_MAX 128
/* A star names a writer identity that survives restarts (a node name): 1 ..
 * TARN__X_STAR_MAX bytes of [A-Za-z0-9._-], not "." or "..": it is a
 * segment of slot keys and of metadata keys. */
int tarn__xstar_check(const char *star);

/* ---- slots ----------------------------------------------------------------- */

/* "{star}/{epoch:020}/{slot:020}": the same key in every bucket; zero-padded
 * so listings sort by epoch, then slot. */
#define TARN__X_SLOT_KEY_MAX (TARN__X_STAR_MAX + 2 * 20 + 3)
int tarn__xslot_key(char *out, size_t n, const char *star, uint64_t epoch, uint64_t slot);
/* Parses a slot key back (star written to star_out, room TARN__X_STAR_MAX+1). */
int tarn__xslot_key_parse(const char *key, char *star_out, uint64_t *epoch, uint64_t *slot);
/* The prefix "{star}/{epoch:020}/" of an epoch's slots. */
int tarn__xslot_epoch_prefix(char *out, size_t n, const char *star, uint64_t epoch);

/* Poison: exactly "tarn-express-poison v1 {star}/{epoch}/{slot}\n" (unpadded
 * decimal). It never begins like a WAL object, so the first bytes tell. */
#define TARN__X_POISON_MAGIC "tarn-express-poison v1 "
int tarn__xpoison(tarn_buf *out, const char *star, uint64_t epoch, uint64_t slot);
/* 1 when p[0..n) begins with the poison magic (whatever follows), else 0. */
int tarn__xpoison_is(const uint8_t *p, size_t n);

/* What one bucket holds at a slot's key, as observed. */
enum {
  TARN__XOBS_EMPTY = 0,   /* absent */
  TARN__XOBS_FLIGHT = 1,  /* a format-v3 WAL object */
  TARN__XOBS_POISON = 2,  /* this slot's exact poison */
  TARN__XOBS_UNKNOWN = 3, /* the bucket could not be read */
  TARN__XOBS_FOREIGN = 4  /* anything else: counts as neither (a bug or tampering) */
};
/* Classifies bytes found at the key of (star, epoch, slot). */
int tarn__xslot_classify(const uint8_t *p, size_t n, const char *star, uint64_t epoch,
                         uint64_t slot);
/* Reads one bucket's object at key into buf and classifies it (UNKNOWN on a
 * read error other than not-found; the error stays in tarn_errmsg()). */
int tarn__xslot_observe(tarn_objstore *b, const char *key, const char *star, uint64_t epoch,
                        uint64_t slot, tarn_buf *buf);

/* A create-only PUT of one's own bytes, counted only when seen (epochs-model
 * §7.5, the writer-412 finding): 0 when the bucket now holds exactly data
 * (created by this call, or found there on read-back after TARN_EEXIST or
 * an unknown outcome); TARN_EEXIST when it holds other bytes (poison, a
 * foreign object); another error when the outcome could not be confirmed.
 * A 412 is never "my earlier retry landed". */
int tarn__xslot_put(tarn_objstore *b, const char *key, const void *data, size_t len);

/* ---- chains and epoch records ---------------------------------------------- */

/* The chain and its epochs live in one partition per star, so the counter's
 * CAS and an epoch record's CAS are each one atomic step:
 *   P = "tarn-chain/{star}"
 *   /chain/{class}                  the counter (head) of one storage class: decimal
 *   /epochs/{class}/{epoch:020}     the epoch record (JSON, below)
 * One head per storage class, so a standard roll and an express roll on one
 * star cannot depose each other. */
#define TARN__X_CLASS_EXPRESS "express"
#define TARN__X_PART_MAX (TARN__X_STAR_MAX + 16)
#define TARN__X_KEY_MAX 96
int tarn__xchain_partition(char *out, size_t n, const char *star);
int tarn__xchain_key(char *out, size_t n, const char *cls);
int tarn__xepoch_key(char *out, size_t n, const char *cls, uint64_t epoch);

enum { TARN__XEPOCH_OPEN = 0, TARN__XEPOCH_FENCED = 1 };

typedef struct tarn__xepoch {
  char *star;
  char *cls;
  uint64_t epoch;         /* >= 1 */
  int state;              /* TARN__XEPOCH_OPEN, then _FENCED with the cut */
  tarn__xbuckets buckets; /* mint-time constants: URIs + zones, W, WIN (stores not open) */
  uint64_t checkpoint;    /* every slot below is absorbed into the standard format */
  uint64_t trimmed;       /* flights below are deleted from the buckets */
  uint64_t rewritten;     /* reserved for rewriting (0) */
  int has_cut;
  uint64_t cut; /* the first dead slot, once published */
  int64_t created_ms;
  int64_t version; /* the metadata record's version (for CAS) */
  /* Absorb's intent: slots [checkpoint, absorbing_to) are being indexed, each
   * log's section going from (start, cum0) to (end, cum1); 0 when none. A
   * crashed absorb is resumed from it (tarn__xabsorb_flight): a log whose last
   * record ends at `end` was indexed, one that ends at `start` was not. */
  uint64_t absorbing_to;
  struct tarn__xintent *absorbing;
  size_t n_absorbing;
  /* What absorb indexed, per log (tarn__xepoch_end_absorb records each run's
   * intent here as it raises the checkpoint; `tarn fsck` checks the index
   * against it): a run that continues a log's last range extends it. */
  struct tarn__xrange *absorbed;
  size_t n_absorbed;
} tarn__xepoch;

/* Offsets [start, end) of one log, cumulative sizes cum0 before and cum1
 * after, indexed from the epoch's slots [slot_from, slot_to) (the runs that
 * made it; a run without entries of the log leaves the range as it is). */
typedef struct tarn__xrange {
  uint64_t log_id, start, cum0, end, cum1, slot_from, slot_to;
} tarn__xrange;

typedef struct tarn__xintent {
  uint64_t log_id, start, cum0, end, cum1;
} tarn__xintent;

int tarn__xepoch_encode(const tarn__xepoch *e, tarn_buf *out);
/* Total: any bytes give a record or TARN_ECORRUPT naming "express epoch record". */
int tarn__xepoch_decode(const uint8_t *p, size_t n, tarn__xepoch *out);
void tarn__xepoch_free(tarn__xepoch *e);

/* The current head of (star, class): 0 when never minted. */
int tarn__xchain_head(tarn_meta *m, const char *star, const char *cls, uint64_t *head);

/* Mints a new epoch: CAS-increments the head (create at 1 if absent, retried
 * on conflict), then creates the epoch record, state open, holding the bucket
 * set's constants and zero cursors. Only a returned mint may write slots. A
 * crash (or failure) between the increment and the record burns that number:
 * nothing ever resumes an epoch, and a burned number has no record. */
int tarn__xchain_mint(tarn_meta *m, const char *star, const char *cls, const tarn__xbuckets *s,
                      tarn__xepoch *out);

/* Reads an epoch record (TARN_ENOTFOUND for a burned or unknown number). */
int tarn__xepoch_load(tarn_meta *m, const char *star, const char *cls, uint64_t epoch,
                      tarn__xepoch *out);

/* The cursors, each only ever raised. */
enum { TARN__XCUR_CHECKPOINT = 0, TARN__XCUR_TRIMMED = 1, TARN__XCUR_REWRITTEN = 2 };
/* Raises one cursor to value by CAS (re-read and retried on conflict; a
 * cursor already at or past value is left alone). *e is refreshed. */
int tarn__xepoch_advance(tarn_meta *m, tarn__xepoch *e, int cursor, uint64_t value);

/* Publishes the cut by CAS and moves the record to fenced. The same cut
 * already published is success (a later fence is a read); a different one is
 * TARN_ECORRUPT, loudly, and nothing is overwritten (the design: a
 * disagreeing cut is a programming error, never retried). *e is refreshed. */
int tarn__xepoch_publish_cut(tarn_meta *m, tarn__xepoch *e, uint64_t cut);

/* Records absorb's intent by CAS (the record must have none, or this same
 * one: a resume). 1 (nothing written) when the checkpoint is at or past to
 * already. */
int tarn__xepoch_begin_absorb(tarn_meta *m, tarn__xepoch *e, uint64_t to, const tarn__xintent *v,
                              size_t n);
/* Clears the intent and raises the checkpoint to `to`, by CAS, recording the
 * intent's per-log offset ranges as absorbed (e->absorbed): the same CAS, so
 * a range is on the record exactly when the checkpoint has passed its slots. */
int tarn__xepoch_end_absorb(tarn_meta *m, tarn__xepoch *e, uint64_t to);

/* ---- which star writes a log (xlogstar.c) ---------------------------------- */

/* partition TARN__X_LOGSTAR_PARTITION, key /{log:020}, value the star's name */
#define TARN__X_LOGSTAR_PARTITION "tarn-xlog"
/* Records star as the writer of log_id (nothing written when it is already). */
int tarn__xlog_star_set(tarn_meta *m, uint64_t log_id, const char *star);
/* The star recorded for log_id into star[n]; TARN_ENOTFOUND when none is. */
int tarn__xlog_star_get(tarn_meta *m, uint64_t log_id, char *star, size_t n);

/* ---- leadership: the last-writer record and the mark (writer_record.c) ----- */

/* In the log's own partition (docs/express.md "Leadership"). */
#define TARN__X_WRITER_KEY "/express/writer"
#define TARN__X_MARK_KEY "/express/mark"
/* Records star, opening epoch, as the log's writer, under the guards g (the
 * opener's lease). */
int tarn__xwriter_rec_put(tarn_meta *m, uint64_t log_id, const char *star, uint64_t epoch,
                          const tarn_meta_guard *g, size_t ng);
/* TARN_ENOTFOUND when no writer ever opened the log under this protocol;
 * *version (may be NULL) the record's version, for the gate's guard. */
int tarn__xwriter_rec_get(tarn_meta *m, uint64_t log_id, char star[TARN__X_STAR_MAX + 1],
                          uint64_t *epoch, int64_t *version);
/* Stamps the clean-release mark of the tenure (star, epoch): every offset
 * below end is indexed. Under the guards g (the tenure's lease). */
int tarn__xmark_put(tarn_meta *m, uint64_t log_id, const char *star, uint64_t epoch, uint64_t end,
                    const tarn_meta_guard *g, size_t ng);
/* The standing mark and its version; TARN_ENOTFOUND when none (or consumed). */
int tarn__xmark_get(tarn_meta *m, uint64_t log_id, char star[TARN__X_STAR_MAX + 1], uint64_t *epoch,
                    uint64_t *end, int64_t *version);
/* Consumes the mark by CAS on version: TARN_ECONFLICT when another open did. */
int tarn__xmark_consume(tarn_meta *m, uint64_t log_id, int64_t version);

/* ---- the star lease (epoch.c; issue 30 items 1 and 2) ------------------ */

/* At most one live process per star, and only it mints the star's epochs
 * (docs/express.md "Leadership"): an ephemeral record in the star's chain
 * partition, under takeover.c's liveness prefix. */
#define TARN__X_STAR_LEASE_KEY "/alive/star"
/* Creates the star lease for this handle's session; *version its version.
 * While another session holds it, waits up to wait_ms for it to go, then
 * TARN_EBUSY naming the holder (host, pid, since). */
int tarn__xstar_lease_acquire(tarn_meta *m, const char *star, int64_t wait_ms, int64_t *version);
/* Deletes the lease at version (gone or another's: 0, nothing deleted). */
int tarn__xstar_lease_release(tarn_meta *m, const char *star, int64_t version);
/* The holder's text into holder[n] and its version (either may be NULL);
 * TARN_ENOTFOUND when nobody holds it. */
int tarn__xstar_lease_read(tarn_meta *m, const char *star, char *holder, size_t n,
                           int64_t *version);
/* tarn__xchain_mint under the leadership guard: the star lease exists at
 * lease_version, checked in the same atomic step as the counter's CAS and
 * the epoch record's create. TARN_ESESSION (nothing minted) when it does
 * not. lease_version 0: unguarded (tarn__xchain_mint). */
int tarn__xchain_mint_led(tarn_meta *m, const char *star, const char *cls, const tarn__xbuckets *s,
                          int64_t lease_version, tarn__xepoch *out);

/* ---- the liveness of a star's process and the takeover (takeover.c) ----- */

/* A star's liveness record (issue 15; docs/express.md "Takeover"): an
 * ephemeral record /alive/{nonce} in the star's chain partition, bound to
 * the session of the process's metadata handle. tarn_xwriter_open writes it
 * before it mints its epoch and tarn_xwriter_close deletes it before any of
 * its leases go, so whoever finds neither a lease of the star's logs nor a
 * liveness record, after reading the star's head, knows that no process of
 * the star can be writing an epoch at or below that head. key[n] gets the
 * record's key. */
int tarn__xalive_put(tarn_meta *m, const char *star, char *key, size_t n);
/* Deletes the record tarn__xalive_put wrote (absent: 0). */
int tarn__xalive_del(tarn_meta *m, const char *star, const char *key);
/* *yes = 1 when some process of star holds a liveness record. */
int tarn__xalive_get(tarn_meta *m, const char *star, int *yes);
/* *yes = 1 when log_id has a lease record other than the one keyed except
 * (NULL: any): its holder's session lives, so it may still acknowledge. */
int tarn__xlease_other(tarn_meta *m, uint64_t log_id, const char *except, int *yes);

/* Fences and settles every unsettled epoch of star's express chain in
 * [lo, hi] (burned numbers skipped); sum (may be NULL) adds up the
 * settlements' reports and *epochs (may be NULL) counts the epochs settled. */
int tarn__xsettle_epochs(tarn_meta *m, tarn_objstore *wal, const char *star, uint64_t lo,
                         uint64_t hi, const tarn_xfence_opts *fo, tarn_xsettle_report *sum,
                         uint64_t *epochs);

/* The takeover of a star that may have died (the report and its verdicts
 * TARN_XTAKE_*: tarn/express_fence.h) (the Epochs design, "Takeover,
 * end to end"; the serve job src/server/jobs_express.c): logs[n] are the
 * express logs recorded for star. Reads the star's head H first, then
 * judges: a lease on one of the logs, or every log's standing mark for the
 * star's tenure, leaves it alone; a liveness record means the process that
 * wrote it may be writing H (or a newer epoch), so only the epochs below H
 * are fenced and settled (superseded by H); otherwise the epochs up to H.
 * Never an epoch above H: one minted after the head was read belongs to a
 * process whose liveness record the judgement may have missed. judged (may
 * be NULL; tests) runs between reading H and the judgement. The epochs
 * looked at: H (or H - 1) down to the first settled one, at most 16. */
int tarn__xtakeover(tarn_meta *m, tarn_objstore *wal, const char *star, const uint64_t *logs,
                    size_t n, const tarn_xfence_opts *fo, void (*judged)(void *arg), void *arg,
                    tarn_xtakeover_report *r);

/* ---- absorb for settlement --------------------------------------------------- */

/* Absorbs one committed slot of a fenced epoch from its flight's bytes (the
 * settlement's tarn__xabsorb_fn; arg is the deployment's WAL root, a
 * tarn_objstore *): its entries are written into a WAL object and indexed at
 * the log's end with the guarded A3 put, then the checkpoint moves past it.
 * A slot below the checkpoint is skipped; an intent left by a crashed absorb
 * (of several slots, fetched from e's buckets) is resolved first by reading
 * each log's last record: never index a slot twice. */
int tarn__xabsorb_flight(void *arg, tarn_meta *m, tarn__xepoch *e, uint64_t slot,
                         const uint8_t *flight, size_t n);

#endif
