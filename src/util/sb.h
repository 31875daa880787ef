/* A sticky-error string builder over a tarn_buf: every append after the
 * first failure does nothing and returns that failure, so a chain of appends
 * needs one check at its end instead of an `if (!rc) rc = ...` per step
 * (issue 18). Total: sizes are checked before they are added (tarn_buf_reserve
 * refuses an overflowing length), and the text stays NUL-free until
 * tarn__sb_cstr adds the terminator. */
#ifndef TARN_UTIL_SB_H
#define TARN_UTIL_SB_H

#include <stddef.h>

#include "tarn/buf.h"

typedef struct tarn__sb {
  tarn_buf *b; /* where the text goes; not owned */
  int rc;      /* 0, or the first failure (a negative TARN_E* code) */
} tarn__sb;

/* Starts a builder that appends to b (b's present contents stay). */
void tarn__sb_init(tarn__sb *s, tarn_buf *b);
/* Each returns the builder's code after the call: 0, or the first failure
 * of any call on s, whose message tarn_errmsg() kept. */
int tarn__sb_append(tarn__sb *s, const void *p, size_t n);
int tarn__sb_puts(tarn__sb *s, const char *str);
int tarn__sb_putc(tarn__sb *s, char c);
#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
int tarn__sb_appendf(tarn__sb *s, const char *fmt, ...);
/* Appends a NUL without counting it in the length, so b->data is a C string
 * and later appends overwrite the terminator. */
int tarn__sb_cstr(tarn__sb *s);
/* The builder's code: 0 or its first failure. */
static inline int tarn__sb_rc(const tarn__sb *s) { return s->rc; }

#endif
