/* The Thrift compact protocol: enough of it to write and read Parquet's
 * FileMetaData, PageHeader and ColumnMetaData.
 *
 * The decoder is total: every read checks the bytes left, a list's element
 * count is checked against what the bytes left can hold (at the least size of
 * one element) before anyone allocates for it,
 * varints are at most 10 bytes (5 for i32, 3 for i16), and structs and lists
 * may nest at most TARN__THRIFT_MAX_DEPTH deep, which refuses "nesting bombs"
 * (a few bytes that open thousands of structs).
 *
 * The encoder writes into a tarn_buf and keeps the first failure, so a caller
 * writes a whole struct and checks once. */
#ifndef TARN_FORMAT_THRIFT_H
#define TARN_FORMAT_THRIFT_H

#include <stddef.h>
#include <stdint.h>

#include "tarn/buf.h"
#include "util/bytes.h"

#define TARN__THRIFT_MAX_DEPTH 32

/* Compact-protocol type codes. Boolean fields carry their value in the type
 * (TRUE 1, FALSE 2); tarn__thrift_field() reports both as TARN__T_BOOL. */
enum {
  TARN__T_STOP = 0,
  TARN__T_BOOL = 1,
  TARN__T_BOOL_FALSE = 2,
  TARN__T_BYTE = 3,
  TARN__T_I16 = 4,
  TARN__T_I32 = 5,
  TARN__T_I64 = 6,
  TARN__T_DOUBLE = 7,
  TARN__T_BINARY = 8,
  TARN__T_LIST = 9,
  TARN__T_SET = 10,
  TARN__T_MAP = 11,
  TARN__T_STRUCT = 12
};

typedef struct tarn__thrift_rd {
  tarn__rd r;
  int depth;                               /* structs open */
  int16_t last_id[TARN__THRIFT_MAX_DEPTH]; /* per open struct: the previous field id */
  int bool_val;                            /* the value a boolean field header carried */
} tarn__thrift_rd;

/* what names the structure for messages ("parquet footer"); base is the
 * input's byte offset within the file, added to every offset reported. */
void tarn__thrift_rd_init(tarn__thrift_rd *d, const void *p, size_t len, size_t base,
                          const char *what);

/* Enters a struct (at top level, or after its field header or list header). */
int tarn__thrift_struct_begin(tarn__thrift_rd *d);
/* Reads the next field header of the innermost struct. At the end of the
 * struct it sets *type to TARN__T_STOP and leaves the struct. */
int tarn__thrift_field(tarn__thrift_rd *d, int16_t *id, int *type);

/* Value readers; type is the type the field header (or list header) gave,
 * and a value of another type is reported as corrupt, naming field. */
int tarn__thrift_i32(tarn__thrift_rd *d, int type, int32_t *v, const char *field);
int tarn__thrift_i64(tarn__thrift_rd *d, int type, int64_t *v, const char *field);
/* A boolean: from the field header for a field, from one byte in a list. */
int tarn__thrift_bool(tarn__thrift_rd *d, int type, int in_list, int *v, const char *field);
/* Binary or string: *p points into the input. */
int tarn__thrift_binary(tarn__thrift_rd *d, int type, const uint8_t **p, size_t *n,
                        const char *field);
/* A list (or set) header; *n is at most the bytes left. */
int tarn__thrift_list(tarn__thrift_rd *d, int type, int *elem_type, size_t *n, const char *field);
/* As tarn__thrift_list, for elements that take at least min_elem bytes each
 * (a struct's required fields): *n is at most the bytes left / min_elem, so a
 * caller allocating *n decoded elements allocates at most sizeof(element) /
 * min_elem bytes per input byte. */
int tarn__thrift_list_min(tarn__thrift_rd *d, int type, size_t min_elem, int *elem_type, size_t *n,
                          const char *field);
/* Fails unless type is want; for fields whose type is fixed by the schema. */
int tarn__thrift_expect(tarn__thrift_rd *d, int type, int want, const char *field);
/* Skips a value of the given type, nested values included. */
int tarn__thrift_skip(tarn__thrift_rd *d, int type);

typedef struct tarn__thrift_wr {
  tarn_buf *b;
  int rc; /* the first failure, or 0 */
  int depth;
  int16_t last_id[TARN__THRIFT_MAX_DEPTH];
} tarn__thrift_wr;

void tarn__thrift_wr_init(tarn__thrift_wr *w, tarn_buf *b);
/* A field header; for booleans use tarn__thrift_w_bool. */
void tarn__thrift_w_field(tarn__thrift_wr *w, int16_t id, int type);
void tarn__thrift_w_i32(tarn__thrift_wr *w, int16_t id, int32_t v);
void tarn__thrift_w_i64(tarn__thrift_wr *w, int16_t id, int64_t v);
void tarn__thrift_w_bool(tarn__thrift_wr *w, int16_t id, int v);
void tarn__thrift_w_binary(tarn__thrift_wr *w, int16_t id, const void *p, size_t n);
void tarn__thrift_w_string(tarn__thrift_wr *w, int16_t id, const char *s);
/* A struct-valued field (id >= 0), or a struct in a list or at top level (id < 0). */
void tarn__thrift_w_struct_begin(tarn__thrift_wr *w, int16_t id);
void tarn__thrift_w_struct_end(tarn__thrift_wr *w);
void tarn__thrift_w_list(tarn__thrift_wr *w, int16_t id, int elem_type, size_t n);
/* List elements. */
void tarn__thrift_w_elem_i32(tarn__thrift_wr *w, int32_t v);
void tarn__thrift_w_elem_binary(tarn__thrift_wr *w, const void *p, size_t n);

#endif
