/* The linked library's version (tarn/version.h). */
#include "tarn/version.h"

const char *tarn_version(void) { return TARN_VERSION_STRING; }

int tarn_version_number(void) { return TARN_VERSION_NUMBER; }
