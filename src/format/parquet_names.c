/* Parquet's names for the values of its enums (parquet.thrift). */
#include "tarn/parquet.h"

static const char *pick(const char *const *names, int n, int v) {
  return v >= 0 && v < n && names[v] ? names[v] : "unknown";
}

#define PICK(names, v) pick(names, (int)(sizeof names / sizeof names[0]), v)

const char *tarn_parquet_codec_name(int codec) {
  static const char *const names[] = {"UNCOMPRESSED", "SNAPPY", "GZIP", "LZO",
                                      "BROTLI",       "LZ4",    "ZSTD", "LZ4_RAW"};
  return PICK(names, codec);
}

const char *tarn_parquet_encoding_name(int encoding) {
  static const char *const names[] = {
      "PLAIN",          "GROUP_VAR_INT",       "PLAIN_DICTIONARY",        "RLE",
      "BIT_PACKED",     "DELTA_BINARY_PACKED", "DELTA_LENGTH_BYTE_ARRAY", "DELTA_BYTE_ARRAY",
      "RLE_DICTIONARY", "BYTE_STREAM_SPLIT"};
  return PICK(names, encoding);
}

const char *tarn_parquet_type_name(int type) {
  static const char *const names[] = {"BOOLEAN", "INT32",  "INT64",      "INT96",
                                      "FLOAT",   "DOUBLE", "BYTE_ARRAY", "FIXED_LEN_BYTE_ARRAY"};
  return PICK(names, type);
}

const char *tarn_parquet_repetition_name(int repetition) {
  static const char *const names[] = {"REQUIRED", "OPTIONAL", "REPEATED"};
  return PICK(names, repetition);
}

const char *tarn_parquet_page_type_name(int page_type) {
  static const char *const names[] = {"DATA_PAGE", "INDEX_PAGE", "DICTIONARY_PAGE", "DATA_PAGE_V2"};
  return PICK(names, page_type);
}
