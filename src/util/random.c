#include "util/random.h"

#include <errno.h>
#include <stdint.h>
#include <sys/random.h>

#include "util/error.h"

int tarn__random(void *p, size_t n, const char *what) {
  size_t got = 0;
  while (got < n) {
    ssize_t k = getrandom((uint8_t *)p + got, n - got, 0);
    if (k < 0) {
      if (errno == EINTR)
        continue;
      return tarn__err(TARN_EIO, "%s: cannot read random bytes", what);
    }
    got += (size_t)k;
  }
  return 0;
}
