/* Test helper: Parquet footers whose list counts would amplify into large
 * allocations (issue #11 part 6), and files around them. */
#ifndef TU_PARQUET_BOMB_H
#define TU_PARQUET_BOMB_H

#include <stddef.h>

#include "tarn/buf.h"

/* FileMetaData with a valid two-element schema (root, payload) unless field
 * is 2, num_rows 0, and the list field `field` (2 schema, 4 row_groups, 5
 * key_value_metadata) holding k empty structs of one byte each. Appends to b. */
void tu_parquet_bomb_footer(tarn_buf *b, int field, size_t k);
/* Appends "PAR1", the footer, its length and "PAR1" to file: a file with no pages. */
void tu_parquet_wrap_footer(tarn_buf *file, const tarn_buf *footer);
/* The footer length an (in-memory) Parquet file's tail gives. */
size_t tu_parquet_footer_len(const tarn_buf *file);

#endif
