#include "cli/cli.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "tarn/buf.h"
#include "tarn/error.h"

int tarn_cli_fail(const char *what) {
  fprintf(stderr, "tarn: %s: %s\n", what, tarn_errmsg());
  return TARN_EXIT_FAULT;
}

int tarn_cli_usage_error(const char *cmd, const char *fmt, ...) {
  va_list ap;
  fprintf(stderr, "tarn: ");
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fprintf(stderr, "\nRun 'tarn %s --help' for usage.\n", cmd);
  return TARN_EXIT_USAGE;
}

int tarn_cli_read_file(const char *path, uint8_t **out, size_t *len) {
  FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
  if (!f)
    return tarn_set_errno(errno, "cannot open %s", path);
  tarn_buf b = TARN_BUF_INIT;
  int rc = 0;
  for (;;) {
    if ((rc = tarn_buf_reserve(&b, 65536)))
      break;
    size_t n = fread(b.data + b.len, 1, 65536, f);
    b.len += n;
    if (n < 65536) {
      if (ferror(f))
        rc = tarn_set_errno(errno, "cannot read %s", path);
      break;
    }
  }
  if (f != stdin)
    fclose(f);
  if (rc) {
    tarn_buf_free(&b);
    return rc;
  }
  if (tarn_buf_reserve(&b, 1) == 0) /* never hand back NULL for an empty file */
    *out = tarn_buf_steal(&b, len);
  else
    return TARN_ENOMEM;
  return 0;
}

static int hexval(int c) {
  if (c >= '0' && c <= '9')
    return c - '0';
  if (c >= 'a' && c <= 'f')
    return c - 'a' + 10;
  if (c >= 'A' && c <= 'F')
    return c - 'A' + 10;
  return -1;
}

int tarn_cli_parse_hex(const char *s, uint8_t **out, size_t *len) {
  if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
    s += 2;
  size_t n = strlen(s);
  uint8_t *p = malloc(n / 2 + 1);
  if (!p)
    return tarn_set_errmsg(TARN_ENOMEM, "out of memory");
  size_t k = 0;
  int hi = -1;
  for (size_t i = 0; i < n; i++) {
    char c = s[i];
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == ':')
      continue;
    int v = hexval((unsigned char)c);
    if (v < 0) {
      free(p);
      return tarn_set_errmsg(TARN_EINVAL, "hex: character %zu ('%c') is not a hex digit", i, c);
    }
    if (hi < 0)
      hi = v;
    else
      p[k++] = (uint8_t)(hi << 4 | v), hi = -1;
  }
  if (hi >= 0) {
    free(p);
    return tarn_set_errmsg(TARN_EINVAL, "hex: odd number of digits");
  }
  *out = p;
  *len = k;
  return 0;
}

void tarn_cli_print_hex(FILE *f, const uint8_t *p, size_t n, int grouped) {
  for (size_t i = 0; i < n; i++) {
    if (grouped && i && i % 4 == 0)
      fputc(' ', f);
    fprintf(f, "%02x", p[i]);
  }
}

json_t *tarn_cli_json_hex(const uint8_t *p, size_t n) {
  char *s = malloc(2 * n + 1);
  if (!s)
    return NULL;
  static const char digits[] = "0123456789abcdef";
  for (size_t i = 0; i < n; i++)
    s[2 * i] = digits[p[i] >> 4], s[2 * i + 1] = digits[p[i] & 15];
  s[2 * n] = 0;
  json_t *j = json_string(s);
  free(s);
  return j;
}

int tarn_cli_print_json(json_t *v) {
  if (!v) {
    fprintf(stderr, "tarn: out of memory building JSON\n");
    return TARN_EXIT_FAULT;
  }
  int rc = json_dumpf(v, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
  fputc('\n', stdout);
  json_decref(v);
  return rc ? TARN_EXIT_FAULT : TARN_EXIT_OK;
}

int tarn_cli_parse_i64(const char *s, int64_t *v) {
  char *end;
  errno = 0;
  long long x = strtoll(s, &end, 10);
  if (errno || !*s || *end || x < 0)
    return -1;
  *v = x;
  return 0;
}

int tarn_cli_has_flag(int argc, char **argv, const char *flag) {
  for (int i = 0; i < argc; i++)
    if (strcmp(argv[i], flag) == 0)
      return 1;
  return 0;
}

int tarn_cli_dispatch(const char *prog, const tarn_cli_cmd *cmds, int argc, char **argv,
                      const char *intro) {
  if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
      strcmp(argv[1], "help") == 0) {
    FILE *f = argc < 2 ? stderr : stdout;
    fprintf(f, "%s", intro);
    fprintf(f, "\nCommands:\n");
    for (const tarn_cli_cmd *c = cmds; c->name; c++)
      fprintf(f, "  %-12s %s\n", c->name, c->summary);
    fprintf(f, "\nRun '%s COMMAND --help' for a command's options.\n", prog);
    return argc < 2 ? TARN_EXIT_USAGE : TARN_EXIT_OK;
  }
  for (const tarn_cli_cmd *c = cmds; c->name; c++)
    if (strcmp(c->name, argv[1]) == 0)
      return c->run(argc - 1, argv + 1);
  fprintf(stderr, "tarn: '%s' is not a %s command. Run '%s --help'.\n", argv[1], prog, prog);
  return TARN_EXIT_USAGE;
}
