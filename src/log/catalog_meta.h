/* The metadata store a catalog works on, for the library's own layers above
 * the catalog that keep records beside its logs (issue 37 "Lifecycle": a
 * Kafka topic's deletion removes its producer state from P(L)). */
#ifndef TARN_LOG_CATALOG_META_H
#define TARN_LOG_CATALOG_META_H

#include "tarn/catalog.h"

tarn_meta *tarn__catalog_meta(tarn_catalog *c);

#endif
