/* tarn — the lat: object-store wrapper: latency and outages on top of any
 * other backend, for tests and benchmarks of code that spreads writes over
 * several buckets (express streams).
 *
 *   lat:PARAMS;INNER-URI      e.g. lat:median=30ms,p99=150ms;file:///tmp/b0
 *
 * PARAMS is a comma-separated list of key=value (may be empty: "lat:;mem:x"):
 *   name=N        the state's name (default: the inner URI); handles that open
 *                 the same name share latency and outage, and the controls below
 *                 reach them all (a later open applies only the keys it names)
 *   median=D      median latency of every operation (D: 250us, 30ms, 1.5s; 0: none)
 *   p99=D         99th percentile; with median, a lognormal distribution
 *                 (p99 <= median: a fixed delay of median)
 *   seed=N        the sampler's seed (default: a hash of the name), so runs repeat
 *   outage=M      none | down (every call fails with TARN_EUNAVAIL) | slow (every
 *                 call also sleeps slow=D) | noput (PUTs fail with TARN_EIO, nothing
 *                 written; reads work) | lostput (PUTs are applied, then answer
 *                 TARN_EUNKNOWN: a lost reply)
 *   slow=D        the extra delay of outage=slow (default 1s)
 *   hang=D        how long a call to a down bucket takes before it fails (default 0)
 *
 * The environment variable TARN_OBJSTORE_LAT, when set, holds more PARAMS that
 * every lat: open applies after its URI's (the CLI and benchmarks use it). */
#ifndef TARN_OBJSTORE_LAT_H
#define TARN_OBJSTORE_LAT_H

#include "tarn/objstore.h"

#ifdef __cplusplus
extern "C" {
#endif

enum {
  TARN_LAT_UP = 0,
  TARN_LAT_DOWN = 1,
  TARN_LAT_SLOW = 2,
  TARN_LAT_NOPUT = 3,
  TARN_LAT_LOSTPUT = 4
};

/* Applies PARAMS (the URI's syntax, without name=) to the named state at run
 * time, e.g. tarn_objstore_lat_control("b1", "outage=down"). TARN_ENOTFOUND when
 * no open handle has that name, TARN_EINVAL for a bad parameter (nothing changed). */
int tarn_objstore_lat_control(const char *name, const char *params);
/* The same on the state of a lat: handle; TARN_EINVAL for another backend. */
int tarn_objstore_lat_set(tarn_objstore *s, const char *params);
/* The state's name of a lat: handle; NULL for another backend. */
const char *tarn_objstore_lat_name(const tarn_objstore *s);
/* Calls the state has seen (all operations), and the total delay it injected. */
int tarn_objstore_lat_stats(const char *name, uint64_t *calls, uint64_t *delay_us);
/* PUTs (streaming ones at their commit) the state handed to its inner store:
 * the requests a provider bills, so not those an outage failed first. */
int tarn_objstore_lat_puts(const char *name, uint64_t *puts);

#ifdef __cplusplus
}
#endif
#endif
