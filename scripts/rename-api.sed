# The public API renames of issue 18 ("names that agree"), applied by
# scripts/rename-api.sh (sed -E). Idempotent: no new name is an old one, and
# each old name matches only as a whole word (a __wrap_/__real_ prefix of a
# ctest-wrap test is kept), so a second run changes nothing.
#
# Handles are opened and closed: tarn_X_open / tarn_X_close (close releases the
# handle, finished or not). The log iterator's functions are named for its
# type, tarn_log_iter: tarn_log_iter_open / _next / _close and the rest.
s/\b(__wrap_|__real_)?tarn_reader_iter\b/\1tarn_log_iter_open/g
s/\b(__wrap_|__real_)?tarn_reader_next\b/\1tarn_log_iter_next/g
s/\b(__wrap_|__real_)?tarn_reader_iter_free\b/\1tarn_log_iter_close/g
s/\b(__wrap_|__real_)?tarn_reader_iter_position\b/\1tarn_log_iter_position/g
s/\b(__wrap_|__real_)?tarn_reader_iter_held_bytes\b/\1tarn_log_iter_held_bytes/g
s/\b(__wrap_|__real_)?tarn_reader_iter_next_size\b/\1tarn_log_iter_next_size/g
s/\b(__wrap_|__real_)?tarn_reader_iter_kafka_offsets\b/\1tarn_log_iter_kafka_offsets/g
s/\b(__wrap_|__real_)?tarn_parquet_writer_free\b/\1tarn_parquet_writer_close/g
s/\b(__wrap_|__real_)?tarn_token_bucket_new\b/\1tarn_token_bucket_open/g
s/\b(__wrap_|__real_)?tarn_token_bucket_free\b/\1tarn_token_bucket_close/g
s/\b(__wrap_|__real_)?tarn_companion_writer_free\b/\1tarn_companion_writer_abort/g
