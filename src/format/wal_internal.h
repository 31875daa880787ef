/* Pieces shared by the version 3 and the legacy WAL object decoders: the view
 * plumbing (wal_view.c), which both call, and the legacy decoder, which only
 * wal.c calls. */
#ifndef TARN_FORMAT_WAL_INTERNAL_H
#define TARN_FORMAT_WAL_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "tarn/wal.h"

#define TARN__WAL_WHAT "wal object"

/* Allocates the section and entry arrays of w for counts the caller has
 * already checked against the bytes that hold them. */
int tarn__wal_alloc(tarn_wal *w, size_t nsec, size_t nent);

/* Builds the log_id lookup of w; refuses a log_id that names two sections (LS-020). */
int tarn__wal_index_logs(tarn_wal *w);

/* Decodes the legacy layout (Appendix C) from the first avail bytes of an
 * object of object_size bytes; payload pointers are set when with_payloads. */
int tarn__wal_decode_legacy(const uint8_t *p, size_t avail, uint64_t object_size, int with_payloads,
                            tarn_wal *out);

#endif
