/* Durable mkdir -p: a directory entry is durable only once the directory
 * holding it is fsynced, and a root that vanishes in a crash takes every
 * object put in it along, fsynced or not. */
#include "util/dirs.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* fsyncs the directory holding path ("." when it has no '/'). */
static int fsync_parent(char *path) {
  char *slash = strrchr(path, '/');
  int fd;
  if (!slash) {
    fd = open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  } else if (slash == path) {
    fd = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  } else {
    *slash = 0;
    fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    *slash = '/';
  }
  if (fd < 0)
    return -1;
  int rc;
  do
    rc = fsync(fd);
  while (rc != 0 && errno == EINTR);
  int e = errno;
  close(fd);
  errno = e;
  return rc;
}

static int mkdir_one(char *path, int mode) {
  if (mkdir(path, (mode_t)mode) == 0)
    return fsync_parent(path);
  return errno == EEXIST ? 0 : -1;
}

int tarn__mkdirs_durable(char *path, int mode) {
  for (char *p = path + 1; *p; p++) {
    if (*p != '/' || p[-1] == '/')
      continue;
    *p = 0;
    int rc = mkdir_one(path, mode);
    if (rc != 0)
      return rc; /* path stays cut at the failed directory, for the message */
    *p = '/';
  }
  return mkdir_one(path, mode);
}
