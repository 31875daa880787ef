/* The file:// object store: one object is one file under the root directory;
 * "a/b/c" is the file c in the subdirectory a/b.
 *
 * Create-only and crash-safe: a put writes a temporary file in the target
 * directory (named ".tmp-...", a segment no valid object name may have), fsyncs
 * it, link()s it to the real name -- link fails with EEXIST rather than
 * replacing, which makes the put create-only even between processes -- then
 * unlinks the temporary name and fsyncs the directory. The real name therefore
 * appears only by the atomic link of a complete, durable file: a crash at any
 * point leaves the name absent or complete, plus perhaps a temporary file that
 * listings skip.
 *
 * Confinement (docs/deployment.md "Secure deployment"): every path below the
 * root is opened with openat2(RESOLVE_BENEATH), so a symlink that leads
 * outside the root is refused (TARN_EINVAL) rather than followed; a symlink
 * within it works. Listings skip symlinks. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <linux/openat2.h>
#include <sys/syscall.h>

#include "store/objstore_vfs.h"
#include "util/dirs.h"
#include "util/error.h"

typedef struct fstore {
  tarn_objstore base;
  char *root;
  int rootfd;
} fstore;

typedef struct fupload {
  tarn_objstore_upload base;
  int dirfd, fd;
  char *name;   /* the object name, for messages */
  char *base_n; /* last segment of the name */
  char tmp[64];
} fupload;

static atomic_uint_fast64_t tmp_counter;

static int retry_eintr_fsync(int fd) {
  int rc;
  do
    rc = fsync(fd);
  while (rc != 0 && errno == EINTR);
  return rc;
}

/* mkdir -p relative to dirfd, with the parent fsynced after each new
 * directory so that the directory entry is as durable as the file will be. */
/* openat(dirfd, path, flags) that resolves nothing outside dirfd: -1 with
 * errno EXDEV for a symlink (or "..") that leads out. */
static int open_beneath(int dirfd, const char *path, int flags) {
  struct open_how how = {.flags = (uint64_t)flags,
                         .resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS};
  return (int)syscall(SYS_openat2, dirfd, path, &how, sizeof how);
}

static int escape_err(const fstore *s, const char *name) {
  return tarn__err(TARN_EINVAL,
                   "file store %s: \"%s\" refused: a symlink leads outside the "
                   "root",
                   s->root, name);
}

static int mkdirs(fstore *s, const char *name, size_t dirlen, int *out_fd) {
  int fd = dup(s->rootfd);
  if (fd < 0)
    return tarn__errno(errno, "file store %s: dup", s->root);
  size_t i = 0;
  while (i < dirlen) {
    size_t j = i;
    while (j < dirlen && name[j] != '/')
      j++;
    char seg[TARN_OBJSTORE_NAME_MAX + 1];
    memcpy(seg, name + i, j - i);
    seg[j - i] = 0;
    if (mkdirat(fd, seg, 0755) == 0) {
      if (retry_eintr_fsync(fd) != 0) {
        int e = errno;
        close(fd);
        return tarn__errno(e, "file store %s: fsync of the directory above \"%.*s\"", s->root,
                           (int)j, name);
      }
    } else if (errno != EEXIST) {
      int e = errno;
      close(fd);
      return tarn__errno(e, "file store %s: mkdir \"%.*s\"", s->root, (int)j, name);
    }
    int nfd = open_beneath(fd, seg, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    int e = errno;
    close(fd);
    if (nfd < 0 && e == EXDEV)
      return escape_err(s, name);
    if (nfd < 0) {
      if (e == ENOTDIR)
        return tarn__err(TARN_EUNSUPPORTED,
                         "file store %s: \"%.*s\" is an object, so \"%s\" cannot exist here",
                         s->root, (int)j, name, name);
      return tarn__errno(e, "file store %s: open directory \"%.*s\"", s->root, (int)j, name);
    }
    fd = nfd;
    i = j + 1;
  }
  *out_fd = fd;
  return 0;
}

static int write_all(int fd, const void *p, size_t n) {
  const uint8_t *b = p;
  while (n) {
    ssize_t w = write(fd, b, n);
    if (w < 0) {
      if (errno == EINTR)
        continue;
      return -1;
    }
    b += w, n -= (size_t)w;
  }
  return 0;
}

static int f_put_begin(tarn_objstore *st, const char *name, tarn_objstore_upload **out) {
  fstore *s = (fstore *)st;
  const char *slash = strrchr(name, '/');
  size_t dirlen = slash ? (size_t)(slash - name) : 0;
  fupload *u = calloc(1, sizeof *u);
  if (!u)
    return tarn__err(TARN_ENOMEM, "file store: out of memory");
  u->dirfd = u->fd = -1;
  u->name = strdup(name);
  if (!u->name) {
    free(u);
    return tarn__err(TARN_ENOMEM, "file store: out of memory");
  }
  u->base_n = u->name + (slash ? dirlen + 1 : 0);
  int rc = mkdirs(s, name, dirlen, &u->dirfd);
  if (rc) {
    free(u->name), free(u);
    return rc;
  }
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  for (int tries = 0;; tries++) {
    uint64_t c = atomic_fetch_add(&tmp_counter, 1);
    snprintf(u->tmp, sizeof u->tmp, TARN__OBJSTORE_TMP_PREFIX "%ld-%llu-%ld", (long)getpid(),
             (unsigned long long)c, (long)ts.tv_nsec);
    u->fd = openat(u->dirfd, u->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (u->fd >= 0)
      break;
    if (errno != EEXIST || tries > 100) {
      rc = tarn__errno(errno, "file store %s: create temporary file for \"%s\"", s->root, name);
      close(u->dirfd), free(u->name), free(u);
      return rc;
    }
  }
  *out = &u->base;
  return 0;
}

static void f_free_upload(fupload *u) {
  if (u->fd >= 0)
    close(u->fd);
  if (u->dirfd >= 0)
    close(u->dirfd);
  free(u->name);
  free(u);
}

static void f_put_abort(tarn_objstore_upload *up) {
  fupload *u = (fupload *)up;
  if (u->tmp[0])
    unlinkat(u->dirfd, u->tmp, 0);
  f_free_upload(u);
}

static int f_put_write(tarn_objstore_upload *up, const void *data, size_t len) {
  fupload *u = (fupload *)up;
  if (u->fd < 0)
    return tarn__err(TARN_ECLOSED, "file store: upload of \"%s\" already failed", u->name);
  if (write_all(u->fd, data, len) != 0)
    return tarn__errno(errno, "file store: write \"%s\"", u->name);
  return 0;
}

static int f_put_commit(tarn_objstore_upload *up) {
  fupload *u = (fupload *)up;
  fstore *s = (fstore *)up->store;
  int rc = 0;
  if (retry_eintr_fsync(u->fd) != 0) {
    rc = tarn__errno(errno, "file store %s: fsync \"%s\"", s->root, u->name);
    goto out;
  }
  close(u->fd);
  u->fd = -1;
  /* link() never replaces: this is the create-only step. */
  if (linkat(u->dirfd, u->tmp, u->dirfd, u->base_n, 0) != 0) {
    int e = errno;
    struct stat st;
    if (e == EEXIST && fstatat(u->dirfd, u->base_n, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
        S_ISDIR(st.st_mode))
      rc = tarn__err(TARN_EUNSUPPORTED,
                     "file store %s: \"%s\" is a directory of other objects, so it cannot be "
                     "an object here",
                     s->root, u->name);
    else if (e == EEXIST)
      rc = tarn__err(TARN_EEXIST, "file store %s: object \"%s\" already exists", s->root, u->name);
    else
      rc = tarn__errno(e, "file store %s: link \"%s\"", s->root, u->name);
    goto out;
  }
  unlinkat(u->dirfd, u->tmp, 0);
  u->tmp[0] = 0;
  if (retry_eintr_fsync(u->dirfd) != 0)
    rc = tarn__errno(errno, "file store %s: fsync the directory of \"%s\"", s->root, u->name);
out:
  f_put_abort(up);
  return rc;
}

static int f_put(tarn_objstore *st, const char *name, const void *data, size_t len) {
  tarn_objstore_upload *u;
  int rc = f_put_begin(st, name, &u);
  if (rc)
    return rc;
  u->store = st;
  rc = f_put_write(u, data, len);
  if (rc) {
    f_put_abort(u);
    return rc;
  }
  return f_put_commit(u);
}

static int open_object(fstore *s, const char *name, int *fd, uint64_t *size) {
  *fd = open_beneath(s->rootfd, name, O_RDONLY | O_CLOEXEC);
  if (*fd < 0) {
    if (errno == EXDEV)
      return escape_err(s, name);
    if (errno == ENOENT || errno == ENOTDIR)
      return tarn__err(TARN_ENOTFOUND, "file store %s: no object \"%s\"", s->root, name);
    return tarn__errno(errno, "file store %s: open \"%s\"", s->root, name);
  }
  struct stat st;
  if (fstat(*fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    close(*fd);
    *fd = -1;
    return tarn__err(TARN_ENOTFOUND, "file store %s: no object \"%s\"", s->root, name);
  }
  *size = (uint64_t)st.st_size;
  return 0;
}

static int f_get(tarn_objstore *st, const char *name, uint64_t off, uint64_t len,
                 tarn__objdst *dst) {
  fstore *s = (fstore *)st;
  int fd;
  uint64_t size = 0;
  int rc = open_object(s, name, &fd, &size);
  if (rc)
    return rc;
  if (off > size) {
    close(fd);
    return tarn__err(TARN_ERANGE, "file store %s: offset %llu past the end of \"%s\" (%llu bytes)",
                     s->root, (unsigned long long)off, name, (unsigned long long)size);
  }
  tarn__objdst_sized(dst, size); /* fstat of this descriptor: the file we read */
  uint64_t want = size - off < len ? size - off : len;
  /* the whole read's room at once (the size is this file's): a buffer grown
   * chunk by chunk is copied again at each step */
  if (dst->buf && want <= SIZE_MAX && (rc = tarn_buf_reserve(dst->buf, (size_t)want))) {
    close(fd);
    return rc;
  }
  while (want > 0) {
    size_t chunk = want > (1u << 24) ? (1u << 24) : (size_t)want;
    uint8_t *at;
    size_t room;
    rc = tarn__objdst_room(dst, chunk, &at, &room);
    if (rc)
      break;
    if (room == 0)
      break;
    ssize_t r = pread(fd, at, room, (off_t)off);
    if (r < 0 && errno == EINTR)
      continue;
    if (r < 0) {
      rc = tarn__errno(errno, "file store %s: read \"%s\"", s->root, name);
      break;
    }
    if (r == 0) {
      /* Objects never shrink: the file was cut after we opened it. Short
       * data would pass for the object's bytes, so it is an error. */
      rc = tarn__err(TARN_EIO,
                     "file store %s: \"%s\" ends at %llu, short of the %llu bytes it "
                     "had when opened (truncated)",
                     s->root, name, (unsigned long long)off, (unsigned long long)size);
      break;
    }
    tarn__objdst_commit(dst, (size_t)r);
    off += (uint64_t)r, want -= (uint64_t)r;
  }
  close(fd);
  return rc;
}

static int f_head(tarn_objstore *st, const char *name, uint64_t *size) {
  fstore *s = (fstore *)st;
  struct stat sb;
  int fd = open_beneath(s->rootfd, name, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  int st_rc = fd < 0 ? -1 : fstat(fd, &sb);
  int e = errno;
  if (fd >= 0)
    close(fd);
  if (st_rc != 0) {
    if (e == EXDEV)
      return escape_err(s, name);
    if (e == ENOENT || e == ENOTDIR)
      return tarn__err(TARN_ENOTFOUND, "file store %s: no object \"%s\"", s->root, name);
    return tarn__errno(e, "file store %s: stat \"%s\"", s->root, name);
  }
  if (!S_ISREG(sb.st_mode))
    return tarn__err(TARN_ENOTFOUND, "file store %s: no object \"%s\"", s->root, name);
  *size = (uint64_t)sb.st_size;
  return 0;
}

static int f_del(tarn_objstore *st, const char *name) {
  fstore *s = (fstore *)st;
  const char *last = strrchr(name, '/');
  if (last) { /* the directory, opened beneath the root: unlink removes nothing outside */
    char dir[TARN_OBJSTORE_NAME_MAX + 1];
    memcpy(dir, name, (size_t)(last - name));
    dir[last - name] = 0;
    int pfd = open_beneath(s->rootfd, dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (pfd < 0) {
      if (errno == EXDEV)
        return escape_err(s, name);
      if (errno == ENOENT || errno == ENOTDIR)
        return 0;
      return tarn__errno(errno, "file store %s: open the directory of \"%s\"", s->root, name);
    }
    int u = unlinkat(pfd, last + 1, 0), e = errno;
    close(pfd);
    errno = e;
    if (u != 0 && (errno == ENOENT || errno == ENOTDIR || errno == EISDIR))
      return 0;
    if (u != 0)
      return tarn__errno(errno, "file store %s: unlink \"%s\"", s->root, name);
  } else if (unlinkat(s->rootfd, name, 0) != 0) {
    if (errno == ENOENT || errno == ENOTDIR || errno == EISDIR)
      return 0;
    return tarn__errno(errno, "file store %s: unlink \"%s\"", s->root, name);
  }
  /* Make the removal durable. Empty directories stay: removing one could race
   * with a put that is about to link into it. */
  const char *slash = strrchr(name, '/');
  int dfd = slash ? -1 : dup(s->rootfd);
  if (slash) {
    char dir[TARN_OBJSTORE_NAME_MAX + 1];
    memcpy(dir, name, (size_t)(slash - name));
    dir[slash - name] = 0;
    dfd = open_beneath(s->rootfd, dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  }
  if (dfd >= 0) {
    int rc = retry_eintr_fsync(dfd);
    int e = errno;
    close(dfd);
    if (rc != 0)
      return tarn__errno(e, "file store %s: fsync the directory of \"%s\"", s->root, name);
  }
  return 0;
}

/* --- listing: a depth-first walk in bytewise name order ------------------- */

typedef struct walk {
  fstore *s;
  const char *prefix;
  size_t plen;
  const char *after;
  size_t max;
  tarn_objstore_listing *out;
  char path[TARN_OBJSTORE_NAME_MAX + 2];
} walk;

typedef struct ent {
  char *key; /* the entry's name, with a '/' appended for a directory */
  int dir;
} ent;

static int ent_cmp(const void *a, const void *b) {
  return strcmp(((const ent *)a)->key, ((const ent *)b)->key);
}

static int starts_with(const char *s, size_t slen, const char *p, size_t plen) {
  return slen >= plen && memcmp(s, p, plen) == 0;
}

/* Sorting each directory's entries with '/' appended to subdirectory names
 * yields global bytewise order: every name below subdirectory d begins with
 * "d/", and no file name of the same directory is a prefix of "d/". */
static int walk_dir(walk *w, int dirfd, size_t plen) {
  int dfd = dup(dirfd);
  if (dfd < 0)
    return tarn__errno(errno, "file store %s: dup", w->s->root);
  DIR *d = fdopendir(dfd);
  if (!d) {
    int e = errno;
    close(dfd);
    return tarn__errno(e, "file store %s: opendir \"%.*s\"", w->s->root, (int)plen, w->path);
  }
  rewinddir(d); /* a dup shares the position an earlier listing left at the end */
  ent *es = NULL;
  size_t n = 0, cap = 0;
  int rc = 0;
  struct dirent *de;
  while ((de = readdir(d)) != NULL) {
    const char *nm = de->d_name;
    if (strcmp(nm, ".") == 0 || strcmp(nm, "..") == 0 ||
        strncmp(nm, TARN__OBJSTORE_TMP_PREFIX, strlen(TARN__OBJSTORE_TMP_PREFIX)) == 0)
      continue;
    int isdir;
    if (de->d_type == DT_DIR)
      isdir = 1;
    else if (de->d_type == DT_REG)
      isdir = 0;
    else {
      struct stat sb;
      if (fstatat(dirfd, nm, &sb, AT_SYMLINK_NOFOLLOW) != 0)
        continue;
      if (S_ISDIR(sb.st_mode))
        isdir = 1;
      else if (S_ISREG(sb.st_mode))
        isdir = 0;
      else
        continue;
    }
    if (n == cap) {
      cap = cap ? 2 * cap : 32;
      ent *ne = realloc(es, cap * sizeof *ne);
      if (!ne) {
        rc = tarn__err(TARN_ENOMEM, "file store: out of memory listing");
        break;
      }
      es = ne;
    }
    size_t l = strlen(nm);
    es[n].key = malloc(l + 2);
    if (!es[n].key) {
      rc = tarn__err(TARN_ENOMEM, "file store: out of memory listing");
      break;
    }
    memcpy(es[n].key, nm, l);
    es[n].key[l] = isdir ? '/' : 0;
    es[n].key[l + 1] = 0;
    es[n].dir = isdir;
    n++;
  }
  closedir(d);
  if (rc == 0 && n > 1)
    qsort(es, n, sizeof *es, ent_cmp);
  for (size_t i = 0; rc == 0 && i < n && w->out->n <= w->max; i++) {
    size_t kl = strlen(es[i].key);
    if (plen + kl > TARN_OBJSTORE_NAME_MAX)
      continue; /* cannot hold a valid name */
    memcpy(w->path + plen, es[i].key, kl + 1);
    size_t full = plen + kl;
    if (es[i].dir) {
      /* Prune subtrees that cannot hold a name with the prefix or after start_after. */
      if (!starts_with(w->path, full, w->prefix, w->plen) &&
          !starts_with(w->prefix, w->plen, w->path, full))
        continue;
      size_t al = strlen(w->after);
      if (strcmp(w->path, w->after) < 0 && !starts_with(w->after, al, w->path, full))
        continue;
      w->path[full - 1] = 0;
      int sub =
          open_beneath(dirfd, w->path + plen, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      w->path[full - 1] = '/';
      if (sub < 0)
        continue; /* vanished or unreadable: not an object */
      rc = walk_dir(w, sub, full);
      close(sub);
    } else {
      if (!starts_with(w->path, full, w->prefix, w->plen) || strcmp(w->path, w->after) <= 0)
        continue;
      if (tarn_objstore_check_name(w->path, full) != 0)
        continue; /* a stray file no put could have made */
      struct stat sb;
      if (fstatat(dirfd, es[i].key, &sb, 0) != 0)
        continue;
      rc = tarn__objlist_add(w->out, w->path, full, (uint64_t)sb.st_size);
    }
  }
  for (size_t i = 0; i < n; i++)
    free(es[i].key);
  free(es);
  return rc;
}

static int f_list(tarn_objstore *st, const char *prefix, const char *start_after, size_t max,
                  tarn_objstore_listing *out) {
  fstore *s = (fstore *)st;
  walk w = {s, prefix, strlen(prefix), start_after, max, out, {0}};
  /* One more than max is gathered, to learn whether the page is the last. */
  int rc = walk_dir(&w, s->rootfd, 0);
  if (rc)
    return rc;
  if (out->n > max) {
    out->n--;
    free(out->names[out->n]);
    out->truncated = 1;
  }
  return 0;
}

/* --- stale temporary files (issue 31 item 9) ------------------------------ */

/* Removes the ".tmp-" files below dirfd not modified for older_than_ms: a put
 * killed between its create and its link leaves one (docs/objstore.md
 * "Create-only and crash-safe put"). A live put writes its file and links it
 * within the longest put; a stalled one whose file is removed fails at its
 * link (ENOENT: the name was never created, a definite failure). Depth-first,
 * symlinks never followed. */
static int sweep_dir(fstore *s, int dirfd, int depth, time_t cutoff, uint64_t *removed) {
  if (depth > 64)
    return 0;
  int dfd = dup(dirfd);
  if (dfd < 0)
    return tarn__errno(errno, "file store %s: dup", s->root);
  DIR *d = fdopendir(dfd);
  if (!d) {
    int e = errno;
    close(dfd);
    return tarn__errno(e, "file store %s: opendir", s->root);
  }
  rewinddir(d);
  int rc = 0;
  struct dirent *de;
  while (!rc && (de = readdir(d)) != NULL) {
    const char *nm = de->d_name;
    if (strcmp(nm, ".") == 0 || strcmp(nm, "..") == 0)
      continue;
    struct stat sb;
    if (fstatat(dirfd, nm, &sb, AT_SYMLINK_NOFOLLOW) != 0)
      continue;
    if (S_ISDIR(sb.st_mode)) {
      int sub = openat(dirfd, nm, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      if (sub >= 0) {
        rc = sweep_dir(s, sub, depth + 1, cutoff, removed);
        close(sub);
      }
    } else if (S_ISREG(sb.st_mode) &&
               strncmp(nm, TARN__OBJSTORE_TMP_PREFIX, strlen(TARN__OBJSTORE_TMP_PREFIX)) == 0 &&
               sb.st_mtime < cutoff) {
      if (unlinkat(dirfd, nm, 0) == 0)
        (*removed)++;
      else if (errno != ENOENT)
        rc = tarn__errno(errno, "file store %s: removing the temporary file %s", s->root, nm);
    }
  }
  closedir(d);
  return rc;
}

static int f_sweep_temp(tarn_objstore *st, int64_t older_than_ms, uint64_t *removed) {
  fstore *s = (fstore *)st;
  time_t cutoff = time(NULL) - (time_t)((older_than_ms + 999) / 1000);
  return sweep_dir(s, s->rootfd, 0, cutoff, removed);
}

static int f_open(const char *uri, tarn_objstore **out) {
  if (strncmp(uri, "file://", 7) != 0 || uri[7] == 0)
    return tarn__err(TARN_EINVAL, "object store \"%s\": expected file://DIR", uri);
  fstore *s = calloc(1, sizeof *s);
  if (!s || !(s->root = strdup(uri + 7))) {
    free(s);
    return tarn__err(TARN_ENOMEM, "file store: out of memory");
  }
  size_t l = strlen(s->root);
  while (l > 1 && s->root[l - 1] == '/')
    s->root[--l] = 0;
  /* a root created here is as durable as the objects put in it */
  if (tarn__mkdirs_durable(s->root, 0755) != 0 ||
      (s->rootfd = open(s->root, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0) {
    int rc = tarn__errno(errno, "file store %s: open the root directory", s->root);
    free(s->root), free(s);
    return rc;
  }
  *out = &s->base;
  return 0;
}

static void f_close(tarn_objstore *st) {
  fstore *s = (fstore *)st;
  close(s->rootfd);
  free(s->root);
  free(s);
}

const struct tarn__objstore_vfs tarn__objstore_file = {
    .scheme = "file",
    .open = f_open,
    .close = f_close,
    .put = f_put,
    .put_begin = f_put_begin,
    .put_write = f_put_write,
    .put_commit = f_put_commit,
    .put_abort = f_put_abort,
    .get = f_get,
    .head = f_head,
    .del = f_del,
    .list = f_list,
    .sweep_temp = f_sweep_temp,
};
