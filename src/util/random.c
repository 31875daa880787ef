#include "util/random.h"

#include <errno.h>
#include <stdint.h>
#include <sys/random.h>

#include "util/error.h"

static void (*hook)(void *arg, void *p, size_t n);
static void *hook_arg;

void tarn__random_set_hook(void (*fn)(void *arg, void *p, size_t n), void *arg) {
  hook = fn;
  hook_arg = arg;
}

int tarn__random(void *p, size_t n, const char *what) {
  if (hook) {
    hook(hook_arg, p, n);
    return 0;
  }
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
