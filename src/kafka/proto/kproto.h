/* tarn — Kafka protocol codecs, generated from declarations (issue 13 §2).
 *
 * A pure codec layer like src/format: no I/O, nothing from src/log. Every message tarn
 * serves is declared once in src/kafka/proto/defs/<api>.kdef (fields, types, the versions
 * each field exists in, nullable versions, tagged fields, flexible versions, defaults);
 * tarn-kgen (src/kafka/proto/gen/kgen.c) turns them at build time into kproto_msgs.h (one
 * C struct per message and nested struct, holding the union of all versions' fields) and
 * kproto_tables.c (descriptor tables with offsetof into those structs). One interpreter
 * (kproto.c) encodes and decodes every api/version from the tables; there is no code per
 * version. docs/kafka.md, "The codec", explains the declaration form.
 *
 * Names: tarn__k_<api>_req / tarn__k_<api>_resp (api in snake_case: produce, fetch,
 * list_offsets, metadata, api_versions, find_coordinator, join_group, sync_group, heartbeat,
 * leave_group, offset_commit, offset_fetch, describe_groups, list_groups, init_producer_id,
 * create_topics, delete_topics); a nested struct is tarn__k_<api>_<kafka struct name in
 * snake_case> (tarn__k_produce_topic_produce_data); fields are Kafka's field names in
 * snake_case (topic_id, partition_index, records, error_code, throttle_time_ms). API keys
 * are TARN__KAPI_<API> (TARN__KAPI_PRODUCE = 0).
 *
 * Decoded strings, bytes and records point into the input buffer (zero copy): keep the
 * buffer alive as long as the decoded struct. Arrays and nested structs live in a
 * tarn__karena. A field absent in a version is left at its declared default on decode
 * and is not written on encode. */
#ifndef TARN_KAFKA_PROTO_KPROTO_H
#define TARN_KAFKA_PROTO_KPROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tarn/buf.h"

/* A string: len -1 is null; p is not NUL-terminated. */
typedef struct tarn__kstr {
  const char *p;
  int32_t len;
} tarn__kstr;

/* Bytes and records: len -1 is null. */
typedef struct tarn__kbytes {
  const uint8_t *p;
  int32_t len;
} tarn__kbytes;

/* Every generated array has this layout: struct { int32_t n; T *v; } (n -1 is null). */
typedef struct tarn__karray {
  int32_t n;
  void *v;
} tarn__karray;

/* Bounded allocations for one decode (or one response being built). */
typedef struct tarn__karena_chunk tarn__karena_chunk;
typedef struct tarn__karena {
  tarn__karena_chunk *head;
  size_t used;  /* bytes handed out so far */
  size_t limit; /* 0: set per decode to a small multiple of its input length */
} tarn__karena;

void tarn__karena_init(tarn__karena *a);
/* Frees everything the arena handed out. */
void tarn__karena_free(tarn__karena *a);
/* Zeroed memory for n bytes, or NULL (TARN_ENOMEM set) past the limit or on failure. */
void *tarn__karena_alloc(tarn__karena *a, size_t n);

#include "kproto_msgs.h" /* generated: TARN__KAPI_*, tarn__k_*_req / tarn__k_*_resp */

/* A request header, v1 or v2 (v0 is not served: client_id is always there). */
typedef struct tarn__kreq_header {
  int16_t api_key;
  int16_t api_version;
  int32_t correlation_id;
  tarn__kstr client_id; /* never a compact string, even in v2 */
} tarn__kreq_header;

/* What the declarations say about one API. */
typedef struct tarn__kapi_range {
  int16_t api_key;
  int16_t min_version;
  int16_t max_version;
  int16_t first_flexible; /* may lie above max_version: then no served version is flexible */
  const char *name;       /* "Produce" */
} tarn__kapi_range;

/* Every declared API, ordered by key; *n gets the count. */
const tarn__kapi_range *tarn__kproto_apis(size_t *n);
/* The declared API of a key, or NULL. */
const tarn__kapi_range *tarn__kproto_api(int16_t api_key);
/* Whether (api_key, version) is declared; whether that version is flexible. */
bool tarn__kproto_supported(int16_t api_key, int16_t version);
bool tarn__kproto_flexible(int16_t api_key, int16_t version);
/* Request header v2 / response header v1 for flexible versions, except ApiVersions,
 * whose response header is always v0 (KIP-511: a client that sent an unknown version
 * must still read the reply). */
int tarn__kreq_header_version(int16_t api_key, int16_t version);
int tarn__kresp_header_version(int16_t api_key, int16_t version);

/* Decodes the request header of a frame (the bytes after the 4-byte size). *body_off
 * gets where the body starts. For an api key or version that is not declared it still
 * fills api_key, api_version and correlation_id (client_id when it can), sets *body_off
 * as for header v1, and returns TARN_EUNSUPPORTED, so that the listener can answer
 * ApiVersions with error 35 (UNSUPPORTED_VERSION) and its own range. TARN_ECORRUPT
 * when the header is truncated or malformed. */
int tarn__kreq_header_decode(const uint8_t *frame, size_t len, tarn__kreq_header *h,
                             size_t *body_off);
/* Client side (tests): the correlation id of a response frame and where its body
 * starts, for the header version that (api_key, version) answers with. */
int tarn__kresp_header_decode(int16_t api_key, int16_t version, const uint8_t *frame, size_t len,
                              int32_t *correlation_id, size_t *body_off);

/* Sets every field of a message struct to its declared default (arrays empty,
 * nullable-by-default fields null). Decode does this itself; encoders call it before
 * filling a struct. TARN_EUNSUPPORTED for an undeclared api. */
int tarn__kmsg_init(int16_t api_key, int response, void *msg);

/* Decodes one message body (all of buf; trailing bytes are a fault) into out_struct,
 * the tarn__k_<api>_req (response 0) or _resp (response 1) struct. Total: a value, or
 * TARN_ECORRUPT with "kafka <Api>Request v<N>: byte <off>: <field>: <fault>", never an
 * overread; TARN_EUNSUPPORTED for an undeclared api/version; TARN_ENOMEM when the arena's
 * bound is reached. Unknown tagged fields are skipped. */
int tarn__kmsg_decode(int16_t api_key, int16_t version, int response, const uint8_t *buf,
                      size_t len, tarn__karena *a, void *out_struct);
/* Appends the body of one message at a version. TARN_EINVAL when a value cannot be
 * written at that version (null in a non-nullable field, a string too long). */
int tarn__kmsg_encode(int16_t api_key, int16_t version, int response, const void *in_struct,
                      tarn_buf *out);

/* Appends a whole response frame: 4-byte size, response header (v0 or v1 as the API
 * requires), body. */
int tarn__kresp_frame(int16_t api_key, int16_t version, int32_t correlation_id, const void *resp,
                      tarn_buf *out);
/* Appends a whole request frame: 4-byte size, request header (v1 or v2), body. */
int tarn__kreq_frame(const tarn__kreq_header *h, const void *req, tarn_buf *out);

#endif
