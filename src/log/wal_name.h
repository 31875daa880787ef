/* WAL object names (LS-008): see include/tarn/writer.h for the scheme. */
#ifndef TARN_LOG_WAL_NAME_H
#define TARN_LOG_WAL_NAME_H

#include <stdint.h>

/* "pp/yyyymmddTHHMMSSZ-" + 32 hex + ".wal" and a NUL. */
#define TARN__WAL_NAME_LEN 56

/* Writes a fresh name for an object written at unix_s (seconds). */
int tarn__wal_name(char out[TARN__WAL_NAME_LEN + 1], int64_t unix_s);

/* Parses the write time back out of a name of this form (for a garbage
 * collector); TARN_EINVAL when the name is not one. */
int tarn__wal_name_time(const char *name, int64_t *unix_s);

#endif
