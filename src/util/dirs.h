/* Creating directories durably. */
#ifndef TARN_UTIL_DIRS_H
#define TARN_UTIL_DIRS_H

/* mkdir -p of path with the given mode; each directory it creates has its
 * parent fsynced, so that the new entry survives a crash as the files later
 * put in it do. Existing directories are left alone. 0 or -1 with errno set
 * (on a failed mkdir, path is cut at the directory that failed). */
int tarn__mkdirs_durable(char *path, int mode);

#endif
