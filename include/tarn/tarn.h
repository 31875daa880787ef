/* tarn — the whole public API in one include: libtarn, a C11 implementation
 * of the Lakestream Storage Spec, format version 3. Build against it with
 *     cc prog.c $(pkg-config --cflags --libs tarn)
 * or, in CMake, find_package(tarn) and target_link_libraries(prog tarn::tarn).
 * The roles: a deployment (tarn/deployment.h) opens the stores; the catalog
 * (tarn/catalog.h) names streams and their logs; the writer (tarn/writer.h)
 * appends; the reader (tarn/reader.h) reads; the compactor, trim, reclaim and
 * tasks keep a deployment in shape. tarn/testing.h (fault injection, the mem:
 * object store's hooks, stepped writers) is for tests, not part of the
 * stable API, not installed, and left out here. */
#ifndef TARN_TARN_H
#define TARN_TARN_H

#include "tarn/version.h"
#include "tarn/error.h"
#include "tarn/clock.h"
#include "tarn/buf.h"
#include "tarn/crc32c.h"
#include "tarn/key.h"
#include "tarn/entryindex.h"
#include "tarn/fileindex.h"
#include "tarn/offsets.h"
#include "tarn/wal.h"
#include "tarn/parquet.h"
#include "tarn/companion.h"
#include "tarn/kafka.h"
#include "tarn/catalog_record.h"
#include "tarn/trimmark.h"
#include "tarn/timing.h"
#include "tarn/meta.h"
#include "tarn/objstore.h"
#include "tarn/objstore_lat.h"
#include "tarn/metrics.h"
#include "tarn/deployment.h"
#include "tarn/lease.h"
#include "tarn/catalog.h"
#include "tarn/kafka_names.h"
#include "tarn/kafka_topics.h"
#include "tarn/appender.h"
#include "tarn/writer.h"
#include "tarn/reader.h"
#include "tarn/trim.h"
#include "tarn/token_bucket.h"
#include "tarn/compactor.h"
#include "tarn/reclaim.h"
#include "tarn/tasks.h"
#include "tarn/fsck.h"
#include "tarn/express.h"
#include "tarn/express_fence.h"
#include "tarn/express_inspect.h"
#include "tarn/kafka_users.h"
#include "tarn/kafka_node.h"
#include "tarn/token.h"

#endif
