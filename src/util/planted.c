#include "util/planted.h"

#include <stdlib.h>
#include <string.h>

#define TARN__PLANTED_NAME(id, name) name,
const char *const tarn__planted_names[] = {"none", TARN__PLANTED_BUGS(TARN__PLANTED_NAME) NULL};

#ifdef TARN_PLANTED_BUGS
int tarn__planted_bug = TARN__BUG_NONE;

/* scripts/mutants.sh: TARN_PLANTED_BUG=NAME switches one bug on in every
 * program of a -DTARN_MUTANTS=ON build. */
__attribute__((constructor)) static void planted_from_env(void) {
  const char *v = getenv("TARN_PLANTED_BUG");
  for (int b = 1; v && b < TARN__BUG_COUNT; b++)
    if (strcmp(v, tarn__planted_names[b]) == 0)
      tarn__planted_bug = b;
}
#endif
