/* tarn — the catalog's records and stream identities (spec "Catalog
 * semantics": the serialization is implementation-defined; tarn's is JSON,
 * described in docs/catalog.md).
 *
 * Every catalog record is one JSON object with a "kind" and a "version" (1).
 * The decoder is total: any bytes give a record or TARN_ECORRUPT naming
 * "catalog record", the byte offset and the fault. */
#ifndef TARN_CATALOG_RECORD_H
#define TARN_CATALOG_RECORD_H

#include <stddef.h>
#include <stdint.h>

#include "tarn/buf.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Longest namespace or stream name, in bytes. */
#define TARN_STREAM_NAME_MAX 200
/* The namespace of a stream named without one. */
#define TARN_DEFAULT_NAMESPACE "default"
/* Most partitions a stream may have. */
#define TARN_STREAM_PARTITIONS_MAX 65536
/* Longest property key and value, in bytes; most properties of a stream. */
#define TARN_STREAM_PROP_KEY_MAX 256
#define TARN_STREAM_PROP_VALUE_MAX 4096
#define TARN_STREAM_PROPS_MAX 256

/* Checks one part of a stream identity (what is "namespace" or "stream
 * name", for the message): not empty, at most TARN_STREAM_NAME_MAX bytes,
 * well-formed UTF-8 without control characters (C0, DEL, C1), no '/'
 * (LS-010, LS-011, LS-093, LS-094), and not "." or ".." (the identity names
 * a directory under the compacted root). TARN_EINVAL with the reason. */
int tarn_stream_part_check(const char *what, const char *s);
/* Both parts. */
int tarn_stream_ident_check(const char *ns, const char *name);

/* Splits a command-line identity "NS/NAME", or "NAME" meaning namespace
 * "default", into malloc'd strings, and checks them. */
int tarn_stream_ident_parse(const char *arg, char **ns, char **name);

enum {
  TARN_CATREC_DEPLOYMENT = 1, /* the deployment's catalog: written by `tarn init` */
  TARN_CATREC_COUNTER = 2,    /* the log-ID allocator: the next unused log ID */
  TARN_CATREC_STREAM = 3,     /* a stream: layout, properties */
  TARN_CATREC_TOMBSTONE = 4,  /* a dropped identity (LS-089, LS-090) */
  TARN_CATREC_LOG = 5         /* a log: which stream and partition it belongs to */
};

enum { TARN_STREAM_ACTIVE = 0, TARN_STREAM_DROPPING = 1 };

typedef struct tarn_stream_prop {
  char *key;
  char *value;
} tarn_stream_prop;

typedef struct tarn_catalog_record {
  int kind;
  int64_t time_ms;      /* DEPLOYMENT, STREAM: created; TOMBSTONE: dropped */
  uint64_t next_log_id; /* COUNTER */
  char *ns, *name;      /* STREAM, TOMBSTONE, LOG */
  int state;            /* STREAM: TARN_STREAM_ACTIVE or _DROPPING */
  uint64_t *logs;       /* STREAM: the layout, log of partition i at i (>= 1);
                           TOMBSTONE: the logs it had (may be 0) */
  size_t n_logs;
  tarn_stream_prop *props; /* STREAM: distinct keys, in key order after decoding */
  size_t n_props;
  uint64_t log_id;    /* LOG */
  uint32_t partition; /* LOG */
} tarn_catalog_record;

/* Decodes one record (see docs/catalog.md): unknown members are refused, as
 * are duplicate members, log IDs above 2^63-1, bad identities, and a STREAM
 * without logs or with a log twice. The caller frees with _free. */
int tarn_catalog_record_decode(const uint8_t *p, size_t len, tarn_catalog_record *out);
/* Appends the compact JSON of r (members in a fixed order). Validates as the
 * decoder does (TARN_EINVAL). */
int tarn_catalog_record_encode(const tarn_catalog_record *r, tarn_buf *out);
void tarn_catalog_record_free(tarn_catalog_record *r);

#ifdef __cplusplus
}
#endif
#endif
