/* The list of benchmarks; each is defined in its own bench_<name>.c. */
#include "bench.h"

int bench_wal(void);
int bench_entryindex(void);
int bench_companion(void);
int bench_parquet(void);
int bench_meta(void);
int bench_objstore(void);
int bench_log(void);
int bench_compact(void);
int bench_express(void);
int bench_kafka(void);

const tarn_bench bench_table[] = {
    {"wal", "WAL object encode and zero-copy decode, 4 MiB of 1 KiB entries, 4 logs", bench_wal},
    {"entryindex", "EntryIndex values and entry offsets: encode/decode", bench_entryindex},
    {"companion", "companion file write/read of 10,000 rows; CRC32C", bench_companion},
    {"parquet", "compacted-file Parquet writer and reader, 256 MiB of payloads", bench_parquet},
    {"meta", "metadata store: sequenced puts/s, 1 and 8 clients, sqlite: and etcd://", bench_meta},
    {"objstore", "create-only 4 MiB PUTs (file://, s3://) vs dd conv=fsync", bench_objstore},
    {"log",
     "append (100 B/1 KiB/64 KiB, 1 and 8 producers) vs dd fsync; latency; catch-up read vs cat",
     bench_log},
    {"compact",
     "compaction WAL -> Parquet+companion vs DuckDB COPY; reclamation scan objects/s; append p99 "
     "while compacting",
     bench_compact},
    {"express",
     "ack latency p50/p99 and PUTs/GiB, standard vs express streams, S3-Standard/Express-like "
     "latency, 1 of 3 buckets down",
     bench_express},
    {"kafka",
     "Kafka listener: rdkafka_performance produce (1 KiB, acks=all) vs the direct writer, "
     "consume vs `tarn read`, alternating rounds; produce p99",
     bench_kafka},
    {NULL, NULL, NULL}};
