/* Credential and config files: permission warnings and secret reading
 * (docs/deployment.md "Secure deployment"). */
#include "util/secret_file.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <openssl/crypto.h>

#include "util/error.h"

#define WARNED_MAX 16

static pthread_mutex_t warned_mu = PTHREAD_MUTEX_INITIALIZER;
static char *warned[WARNED_MAX];
static int nwarned;

/* 1 the first time path is seen (so a file opened by every handle warns once). */
static int first_time(const char *path) {
  int first = 1;
  pthread_mutex_lock(&warned_mu);
  for (int i = 0; i < nwarned && first; i++)
    if (strcmp(warned[i], path) == 0)
      first = 0;
  if (first && nwarned < WARNED_MAX && (warned[nwarned] = strdup(path)))
    nwarned++;
  pthread_mutex_unlock(&warned_mu);
  return first;
}

void tarn__file_mode_warn(const char *path, const char *what) {
  struct stat sb;
  if (!path || stat(path, &sb) != 0 || !S_ISREG(sb.st_mode))
    return;
  if ((sb.st_mode & (S_IRWXG | S_IRWXO)) == 0 || !first_time(path))
    return;
  fprintf(stderr,
          "tarn: warning: %s %s has permissions %04o: others than its owner may read or "
          "change it (chmod 600 %s)\n",
          what, path, (unsigned)(sb.st_mode & 07777), path);
}

int tarn__secret_read(const char *path, const char *what, char **out) {
  *out = NULL;
  FILE *f = fopen(path, "r");
  if (!f)
    return tarn__errno(errno, "%s %s", what, path);
  tarn__file_mode_warn(path, what);
  /* unbuffered: stdio's buffer would keep a copy, freed unwiped at fclose
   * (issue 33: secret copies are wiped) */
  setvbuf(f, NULL, _IONBF, 0);
  enum { CAP = 4096 };
  char *s = malloc(CAP);
  if (!s) {
    fclose(f);
    return tarn__err(TARN_ENOMEM, "%s: out of memory", what);
  }
  size_t n = fread(s, 1, CAP - 1, f);
  int bad = ferror(f);
  fclose(f);
  s[n] = 0;
  size_t l = strcspn(s, "\r\n");
  /* what follows the first line: tarn__secret_free wipes up to the NUL */
  OPENSSL_cleanse(s + l, n - l);
  if (bad || !s[0]) {
    tarn__secret_free(s);
    return tarn__err(TARN_EINVAL, "%s %s: %s", what, path, bad ? "cannot be read" : "is empty");
  }
  *out = s;
  return 0;
}

void tarn__secret_free(char *s) {
  if (!s)
    return;
  OPENSSL_cleanse(s, strlen(s));
  free(s);
}
