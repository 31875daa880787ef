/* Any bytes decode as a compaction task record or are refused; a decoded task
 * re-encodes and decodes to the same fields (round trip). */
#include <stdlib.h>
#include <string.h>

#include "tarn/error.h"
#include "tarn/tasks.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  tarn_task t;
  if (tarn_task_decode(data, size, &t))
    return 0;
  tarn_buf b = TARN_BUF_INIT;
  if (tarn_task_encode(&t, &b))
    abort();
  tarn_task u;
  if (tarn_task_decode(b.data, b.len, &u))
    abort();
  if (u.log_id != t.log_id || u.state != t.state || u.failures != t.failures ||
      u.range.s != t.range.s || u.range.e != t.range.e || u.range.n_files != t.range.n_files ||
      (t.error == NULL) != (u.error == NULL) || (t.error && strcmp(t.error, u.error)))
    abort();
  for (size_t i = 0; i < t.range.n_files; i++)
    if (strcmp(t.range.files[i].name, u.range.files[i].name) ||
        t.range.files[i].last_offset != u.range.files[i].last_offset)
      abort();
  tarn_task_free(&u);
  tarn_task_free(&t);
  tarn_buf_free(&b);
  return 0;
}
