/* file:// roots refuse symlinks that lead outside them (issue 17, "Files";
 * docs/deployment.md "Secure deployment"): get, head, put and delete through
 * a symlinked directory or file that points out of the root are refused with
 * TARN_EINVAL and touch nothing outside; a symlink that stays inside works;
 * listings do not follow symlinks. Also the permission warning of
 * tarn__file_mode_warn and tarn__secret_read's handling of a secret file. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tarn/buf.h"
#include "tarn/error.h"
#include "tarn/objstore.h"
#include "testutil.h"
#include "util/secret_file.h"

static char *path_of(const char *dir, const char *name) {
  size_t n = strlen(dir) + strlen(name) + 2;
  char *p = malloc(n);
  snprintf(p, n, "%s/%s", dir, name);
  return p;
}

static void write_file(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fputs(text, f);
  fclose(f);
}

static void test_symlinks_out_of_the_root_are_refused(void **state) {
  (void)state;
  char *tmp = tu_tmpdir("confine");
  char *root = path_of(tmp, "root"), *out = path_of(tmp, "outside");
  assert_int_equal(mkdir(root, 0700), 0);
  assert_int_equal(mkdir(out, 0700), 0);
  char *secret = path_of(out, "secret");
  write_file(secret, "outside bytes");
  /* root/esc -> ../outside (a directory), root/leak -> ../outside/secret */
  char *esc = path_of(root, "esc"), *leak = path_of(root, "leak");
  assert_int_equal(symlink(out, esc), 0);
  assert_int_equal(symlink(secret, leak), 0);
  char uri[4200];
  snprintf(uri, sizeof uri, "file://%s", root);
  tarn_objstore *s;
  assert_int_equal(tarn_objstore_open(uri, &s), 0);
  tarn_buf b = TARN_BUF_INIT;
  uint64_t size;
  assert_int_equal(tarn_objstore_get(s, "esc/secret", &b), TARN_EINVAL);
  assert_non_null(strstr(tarn_errmsg(), "outside the root"));
  assert_int_equal(tarn_objstore_get(s, "leak", &b), TARN_EINVAL);
  assert_int_equal(tarn_objstore_head(s, "esc/secret", &size), TARN_EINVAL);
  assert_int_equal(tarn_objstore_put(s, "esc/new", "x", 1), TARN_EINVAL);
  char *made = path_of(out, "new");
  assert_int_not_equal(access(made, F_OK), 0); /* nothing was written outside */
  assert_int_equal(tarn_objstore_delete(s, "esc/secret"), TARN_EINVAL);
  assert_int_equal(access(secret, F_OK), 0); /* nor removed */
  tarn_objstore_listing l;
  assert_int_equal(tarn_objstore_list(s, "", NULL, 100, &l), 0);
  assert_int_equal(l.n, 0); /* esc/secret and leak are not listed */
  tarn_objstore_listing_free(&l);
  /* a symlink inside the root is followed */
  assert_int_equal(tarn_objstore_put(s, "real/obj", "in", 2), 0);
  char *real = path_of(root, "real"), *alias = path_of(root, "alias");
  assert_int_equal(symlink("real", alias), 0);
  assert_int_equal(tarn_objstore_get(s, "alias/obj", &b), 0);
  assert_int_equal(b.len, 2);
  assert_memory_equal(b.data, "in", 2);
  tarn_buf_free(&b);
  tarn_objstore_close(s);
  free(made), free(real), free(alias), free(esc), free(leak), free(secret);
  free(root), free(out);
  tu_rmtree(tmp);
  free(tmp);
}

static void test_secret_file(void **state) {
  (void)state;
  char *tmp = tu_tmpdir("secret");
  char *p = path_of(tmp, "pw");
  write_file(p, "s3cr3t\n");
  chmod(p, 0600);
  char *v = NULL;
  assert_int_equal(tarn__secret_read(p, "test password file", &v), 0);
  assert_string_equal(v, "s3cr3t"); /* without its line end */
  tarn__secret_free(v);
  write_file(p, "\n");
  assert_int_equal(tarn__secret_read(p, "test password file", &v), TARN_EINVAL);
  assert_null(strstr(tarn_errmsg(), "s3cr3t"));
  char *none = path_of(tmp, "absent");
  assert_int_equal(tarn__secret_read(none, "test password file", &v), TARN_ENOTFOUND);
  /* the warning: stderr to a file, for a file others may read */
  char *wide = path_of(tmp, "wide"), *errf = path_of(tmp, "stderr");
  write_file(wide, "x");
  chmod(wide, 0644);
  fflush(stderr);
  int saved = dup(2), fd = open(errf, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  dup2(fd, 2);
  tarn__file_mode_warn(p, "the owner's file"); /* 0600: no warning */
  tarn__file_mode_warn(wide, "the config file");
  tarn__file_mode_warn(wide, "the config file"); /* once per path */
  fflush(stderr);
  dup2(saved, 2);
  close(fd), close(saved);
  FILE *f = fopen(errf, "r");
  char text[1024] = {0};
  size_t n = fread(text, 1, sizeof text - 1, f);
  fclose(f);
  text[n] = 0;
  assert_non_null(strstr(text, "warning: the config file"));
  assert_non_null(strstr(text, "0644"));
  assert_null(strstr(text, "owner's file"));
  assert_null(strstr(strstr(text, "warning") + 1, "warning"));
  free(p), free(none), free(wide), free(errf);
  tu_rmtree(tmp);
  free(tmp);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_symlinks_out_of_the_root_are_refused),
      cmocka_unit_test(test_secret_file),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
