/* tarn inspect offsets: the entry_offsets words (JavaFastPFOR IntegratedIntCompressor). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cli/inspect.h"
#include "tarn/error.h"
#include "tarn/offsets.h"

static const char usage[] =
    "usage: tarn inspect offsets --hex HEX [--json]\n"
    "       tarn inspect offsets --boundaries A0,A1,... [--json]\n"
    "\n"
    "--hex decodes a compressed_payload (big-endian 32-bit words of\n"
    "IntegratedIntCompressor.compress(A)) and shows n, the boundaries A and the\n"
    "entries [start, end) relative to the record's start.\n"
    "--boundaries encodes A and prints the words.\n";

/* Strict comma-separated unsigned 32-bit decimals; "" is the empty array. */
static int parse_list(const char *s, uint32_t **out, size_t *n) {
  size_t cap = 1;
  for (const char *p = s; *p; p++)
    cap += *p == ',';
  uint32_t *a = malloc(cap * sizeof *a);
  if (!a)
    return -1;
  size_t k = 0;
  if (*s) {
    for (const char *p = s;;) {
      if (*p < '0' || *p > '9') {
        free(a);
        return -1;
      }
      uint64_t v = 0;
      while (*p >= '0' && *p <= '9') {
        v = v * 10 + (uint64_t)(*p++ - '0');
        if (v > UINT32_MAX) {
          free(a);
          return -1;
        }
      }
      a[k++] = (uint32_t)v;
      if (!*p)
        break;
      if (*p++ != ',') {
        free(a);
        return -1;
      }
    }
  }
  *out = a;
  *n = k;
  return 0;
}

json_t *tarn_inspect_boundaries_json(const uint32_t *a, size_t n) {
  json_t *j = json_array();
  for (size_t i = 0; j && i < n; i++)
    json_array_append_new(j, json_integer(a[i]));
  return j;
}

json_t *tarn_inspect_entries_json(const uint32_t *a, size_t n) {
  json_t *j = json_array();
  for (size_t i = 0; j && i < n; i++)
    json_array_append_new(j, json_pack("{s:I, s:I}", "start", (json_int_t)(i ? a[i - 1] : 0), "end",
                                       (json_int_t)a[i]));
  return j;
}

void tarn_inspect_entries_print(const uint32_t *a, size_t n, const char *indent) {
  printf("%sboundaries", indent);
  for (size_t i = 0; i < n; i++)
    printf("%s%u", i ? "," : " ", a[i]);
  printf("\n%sentries   ", indent);
  for (size_t i = 0; i < n; i++)
    printf(" [%u,%u)", i ? a[i - 1] : 0, a[i]);
  printf("\n");
}

int tarn_inspect_offsets(int argc, char **argv) {
  const char *hex = NULL, *list = NULL;
  int json = 0, nargs;
  const tarn_cli_opt opts[] = {TARN_CLI_OPT_STRING("--hex", &hex, "HEX"),
                               TARN_CLI_OPT_STRING("--boundaries", &list, "N,N,..."),
                               {0}};
  const tarn_cli_verb v = {"inspect offsets", NULL, opts, NULL, &json, 0, usage};
  int ex = tarn_cli_parse(&v, argc, argv, &nargs);
  if (ex != TARN_CLI_GO_ON)
    return ex;
  if (!hex == !list)
    return tarn_cli_usage_error("inspect offsets", "give exactly one of --hex and --boundaries");
  uint8_t *p = NULL;
  size_t len = 0, n = 0;
  uint32_t *a = NULL;
  if (list) {
    if (parse_list(list, &a, &n))
      return tarn_cli_usage_error("inspect offsets",
                                  "--boundaries needs comma-separated integers below 2^32");
    tarn_buf b = TARN_BUF_INIT;
    if (tarn_entry_offsets_encode(a, n, &b)) {
      free(a);
      return tarn_cli_fail("inspect offsets");
    }
    p = tarn_buf_steal(&b, &len);
  } else {
    if (tarn_cli_parse_hex(hex, &p, &len))
      return tarn_cli_usage_error("inspect offsets", "%s", tarn_errmsg());
    if (tarn_entry_offsets_decode(p, len, &a, &n)) {
      free(p);
      return tarn_cli_fail("inspect offsets");
    }
  }
  int rc = TARN_EXIT_OK;
  if (json) {
    rc = tarn_cli_print_json(json_pack("{s:I, s:o, s:o, s:o}", "n", (json_int_t)n,
                                       "compressed_payload", tarn_cli_json_hex(p, len),
                                       "boundaries", tarn_inspect_boundaries_json(a, n), "entries",
                                       tarn_inspect_entries_json(a, n)));
  } else if (list) {
    tarn_cli_print_hex(stdout, p, len, 1);
    printf("\n");
  } else {
    printf("n          %zu\n", n);
    tarn_inspect_entries_print(a, n, "");
  }
  free(a);
  free(p);
  return rc;
}
