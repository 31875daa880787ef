#include "util/planted.h"

#ifdef TARN_PLANTED_BUGS
int tarn__planted_bug = TARN__BUG_NONE;
#else
typedef int tarn__planted_none; /* ISO C wants a translation unit to declare something */
#endif
