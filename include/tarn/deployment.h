/* tarn — a deployment: one metadata store, one WAL root and one compacted root
 * (spec "Terms"; LS-007: every implementation in a deployment uses the same
 * two roots). Every role opens its stores through a deployment. */
#ifndef TARN_DEPLOYMENT_H
#define TARN_DEPLOYMENT_H

#include <stddef.h>
#include <stdint.h>

#include "tarn/meta.h"
#include "tarn/objstore.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tarn_deployment_config {
  const char *meta_uri;      /* e.g. sqlite:DIR/meta.db, etcd://127.0.0.1:2379 */
  const char *wal_uri;       /* e.g. file://DIR/wal, s3://bucket/wal */
  const char *compacted_uri; /* e.g. file://DIR/compacted, s3://bucket/compacted */
  const char *home;          /* the one-directory default: DIR above */
} tarn_deployment_config;

/* The directory used when neither the config nor TARN_HOME names one. */
#define TARN_DEFAULT_HOME ".tarn"

/* The file in the home directory that names a deployment's stores, written by
 * `tarn init`: {"meta": URI, "wal": URI, "compacted": URI} (docs/catalog.md). */
#define TARN_DEPLOYMENT_CONFIG_FILE "tarn.json"

/* Fills the unset URIs of *c, in this order of precedence: what *c already
 * holds (flags), the environment (TARN_META, TARN_WAL, TARN_COMPACTED), the
 * config file HOME/tarn.json if it exists, then the one-directory default
 * under HOME: sqlite:HOME/meta.db, file://HOME/wal, file://HOME/compacted.
 * HOME is c->home, TARN_HOME or TARN_DEFAULT_HOME. A config file that is not
 * such a JSON object is TARN_ECORRUPT naming the file and the byte. The
 * strings it creates live in *storage (free with tarn_deployment_config_free). */
typedef struct tarn_deployment_strings {
  char *s[8];
} tarn_deployment_strings;
int tarn_deployment_config_resolve(tarn_deployment_config *c, tarn_deployment_strings *storage);
void tarn_deployment_config_free(tarn_deployment_strings *storage);

/* Warns on stderr, as ssh does, when path (a key, password or config file)
 * may be read or written by others than its owner ("tarn: warning: WHAT PATH
 * has permissions 0644: ..."); once per path and process. For the files a
 * program outside the library loads itself, e.g. the HTTP endpoint's TLS key
 * (issue 33), so that every such file warns alike. */
void tarn_file_mode_warn(const char *path, const char *what);

/* Parses the bytes of a config file (total: any bytes give the URIs or
 * TARN_ECORRUPT "deployment config WHAT: ..."). out[0..2] get malloc'd meta,
 * wal and compacted URIs, NULL where the file names none. */
int tarn_deployment_config_parse(const uint8_t *p, size_t len, const char *what, char *out[3]);

/* Writes HOME/tarn.json with the three URIs of a resolved config, unless the
 * file exists (*written, may be NULL, says which). */
int tarn_deployment_config_save(const tarn_deployment_config *c, int *written);

typedef struct tarn_deployment tarn_deployment;

/* Opens the three stores. With create != 0, local directories of file:// roots
 * and of a sqlite: file are created first (what `tarn init` does). */
int tarn_deployment_open(const tarn_deployment_config *c, int create, tarn_deployment **out);
void tarn_deployment_close(tarn_deployment *d);

tarn_meta *tarn_deployment_meta(tarn_deployment *d);
tarn_objstore *tarn_deployment_wal(tarn_deployment *d);
tarn_objstore *tarn_deployment_compacted(tarn_deployment *d);
const tarn_deployment_config *tarn_deployment_config_of(const tarn_deployment *d);

/* One deployment per root (issue 31 item 5; docs/deployment.md "One deployment
 * per root"). The deployment's id: 32 hex digits in the metadata store at
 * TARN_DEPLOYMENT_ID_PARTITION/TARN_DEPLOYMENT_ID_KEY; each root holds it in
 * the object TARN_ROOT_MARKER. Both are written create-only, never changed. */
#define TARN_DEPLOYMENT_ID_PARTITION "tarn-deployment"
#define TARN_DEPLOYMENT_ID_KEY "/id"
#define TARN_ROOT_MARKER "tarn-deployment"

/* Claims the roots: gives the metadata store an id unless it has one, and
 * writes it into each root that has no marker. TARN_EBUSY (nothing claimed)
 * for a root whose marker holds another id, or one with a marker while the
 * store has no id; with init set and a store that holds no deployment record
 * yet (a new deployment), also for a root that holds objects without a marker
 * (another deployment's, from before markers). `tarn init`, `tarn gc` and
 * `tarn serve` call it before anything else; tarn_reclaim_pass refuses roots
 * that are not claimed this way once the store has an id. Then, once in the
 * deployment's life, it records the deployment's format version (LS-001:
 * 3, or the legacy version its logs hold), so that no version 3 record goes
 * into a legacy deployment, not even into an empty log of it. */
int tarn_deployment_claim_roots(tarn_deployment *d, int init);

#ifdef __cplusplus
}
#endif
#endif
