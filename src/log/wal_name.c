#include "log/wal_name.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#include "util/error.h"
#include "util/random.h"

int tarn__wal_name(char out[TARN__WAL_NAME_LEN + 1], int64_t unix_s) {
  /* LS-008: 128 random bits make a name no object has had or will have. */
  uint8_t r[16];
  int rc = tarn__random(r, sizeof r, "wal name");
  if (rc)
    return rc;
  char hex[33];
  for (int i = 0; i < 16; i++)
    snprintf(hex + 2 * i, 3, "%02x", r[i]);
  time_t t = (time_t)unix_s;
  struct tm tm;
  if (!gmtime_r(&t, &tm))
    return tarn__err(TARN_EINVAL, "wal name: time %lld out of range", (long long)unix_s);
  int n = snprintf(out, TARN__WAL_NAME_LEN + 1, "%.2s/%04d%02d%02dT%02d%02d%02dZ-%s.wal", hex,
                   (tm.tm_year + 1900) % 10000, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min,
                   tm.tm_sec, hex);
  if (n != TARN__WAL_NAME_LEN)
    return tarn__err(TARN_EINVAL, "wal name: unexpected length %d", n);
  return 0;
}

int tarn__wal_name_time(const char *name, int64_t *unix_s) {
  struct tm tm;
  memset(&tm, 0, sizeof tm);
  if (strlen(name) != TARN__WAL_NAME_LEN || name[2] != '/' || name[11] != 'T' || name[18] != 'Z' ||
      name[19] != '-' || strcmp(name + 52, ".wal") != 0 || memcmp(name, name + 20, 2) != 0)
    return tarn__err(TARN_EINVAL, "wal name: \"%s\" is not a tarn WAL object name", name);
  int v[6];
  const int pos[6] = {3, 7, 9, 12, 14, 16}, len[6] = {4, 2, 2, 2, 2, 2};
  for (int i = 0; i < 6; i++) {
    v[i] = 0;
    for (int k = 0; k < len[i]; k++) {
      char c = name[pos[i] + k];
      if (c < '0' || c > '9')
        return tarn__err(TARN_EINVAL, "wal name: \"%s\" has a bad time", name);
      v[i] = v[i] * 10 + (c - '0');
    }
  }
  tm.tm_year = v[0] - 1900, tm.tm_mon = v[1] - 1, tm.tm_mday = v[2];
  tm.tm_hour = v[3], tm.tm_min = v[4], tm.tm_sec = v[5];
  *unix_s = (int64_t)timegm(&tm);
  return 0;
}
