/* Files that hold secrets or name stores: read with a permission check. */
#ifndef TARN_UTIL_SECRET_FILE_H
#define TARN_UTIL_SECRET_FILE_H

/* Warns on stderr, as ssh does, when PATH may be read or written by anyone
 * but its owner (group or other bits in its mode). what names the file
 * ("the config file", "etcd password file"). One warning per path and process. */
void tarn__file_mode_warn(const char *path, const char *what);

/* Reads a secret (a password, a token) from PATH: the first line, without
 * its line end. The secret never enters a message: errors name the file.
 * *out is freed with tarn__secret_free. */
int tarn__secret_read(const char *path, const char *what, char **out);

/* Overwrites and frees a secret (NULL is fine). */
void tarn__secret_free(char *s);

#endif
