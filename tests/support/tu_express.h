/* Express test helpers. */
#ifndef TARN_TU_EXPRESS_H
#define TARN_TU_EXPRESS_H

#include <stdint.h>

#include "tarn/buf.h"

/* A flight (a format-v3 WAL object) for slot: one entry of log_id with
 * records records, the payload naming the slot, so every slot's flight differs. */
void tu_xflight(uint64_t slot, uint64_t log_id, uint32_t records, tarn_buf *out);

#endif
