/* The descriptor tables tarn-kgen generates from the declarations (kproto_tables.c) and
 * the one interpreter (kproto.c) walks. Internal to the codec and its tests. */
#ifndef TARN_KAFKA_PROTO_KPROTO_DESC_H
#define TARN_KAFKA_PROTO_KPROTO_DESC_H

#include <stddef.h>
#include <stdint.h>

#include "kafka/proto/kproto.h"

/* Wire types of the declarations (docs/kafka.md, "The codec"). */
enum tarn__ktype {
  TARN__KT_BOOL = 1,
  TARN__KT_INT8,
  TARN__KT_INT16,
  TARN__KT_INT32,
  TARN__KT_INT64,
  TARN__KT_UINT16,
  TARN__KT_UINT32,
  TARN__KT_VARINT,  /* zigzag, int32 in the struct */
  TARN__KT_VARLONG, /* zigzag, int64 in the struct */
  TARN__KT_FLOAT64,
  TARN__KT_UUID,
  TARN__KT_STRING,
  TARN__KT_BYTES,
  TARN__KT_RECORDS,
  TARN__KT_STRUCT, /* only as an array's element */
  TARN__KT_ARRAY
};

/* A version range lo..hi; lo -1 is "no version". */
typedef struct tarn__kvers {
  int16_t lo, hi;
} tarn__kvers;

typedef struct tarn__kstruct tarn__kstruct;

typedef struct tarn__kfield {
  const char *name;
  uint8_t type;         /* enum tarn__ktype */
  uint8_t elem;         /* an array's element type */
  tarn__kvers versions; /* where the field exists */
  tarn__kvers nullable; /* where it may be null */
  tarn__kvers tagged;   /* where it is a tagged field, with tag */
  int32_t tag;
  uint32_t off;             /* offsetof in the parent struct */
  const tarn__kstruct *sub; /* element struct of an array of structs */
  int64_t idef;             /* default of integers and bool */
  double fdef;              /* default of float64 */
  const char *sdef;         /* default of a string ("" unless declared) */
  uint8_t null_def;         /* the default is null */
} tarn__kfield;

struct tarn__kstruct {
  const char *name; /* the declared name: produce_req, topic_produce_data */
  size_t size;      /* sizeof the generated struct */
  uint16_t nfields;
  const tarn__kfield *fields;
};

typedef struct tarn__kmsgdesc {
  int16_t api_key;
  int16_t min_version, max_version, first_flexible; /* first_flexible 0x7fff: none */
  const char *name;                                 /* "Produce" */
  const tarn__kstruct *req, *resp;
} tarn__kmsgdesc;

/* Generated: every declared API, ordered by key. */
extern const tarn__kmsgdesc tarn__kproto_msgs[];
extern const size_t tarn__kproto_nmsgs;
/* Generated: the same APIs' ranges, as tarn__kproto_apis() hands them out. */
extern const tarn__kapi_range tarn__kproto_ranges[];

/* The descriptor of an api key, or NULL. */
const tarn__kmsgdesc *tarn__kproto_desc(int16_t api_key);

#endif
