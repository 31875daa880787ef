/* Any bytes parse as a deployment config file or are refused with a message
 * naming the file; parsed URIs are non-empty strings without NUL. */
#include <stdlib.h>
#include <string.h>

#include "tarn/deployment.h"
#include "tarn/error.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *u[3];
  if (tarn_deployment_config_parse(data, size, "fuzz", u)) {
    if (!strstr(tarn_errmsg(), "deployment config fuzz"))
      abort();
    return 0;
  }
  for (int i = 0; i < 3; i++) {
    if (u[i] && !*u[i])
      abort();
    free(u[i]);
  }
  return 0;
}
