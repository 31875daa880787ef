/* tarn inspect slot|poison FILE: an express slot object (issue 14, "Slots"):
 * a flight is a format-v3 WAL object, poison is one line naming its key; the
 * first bytes tell which (docs/express.md). */
#include <stdlib.h>
#include <string.h>

#include "cli/inspect.h"
#include "express/fence.h"
#include "tarn/error.h"
#include "tarn/wal.h"

static const char slot_usage[] =
    "usage: tarn inspect slot FILE [--json]\n"
    "\n"
    "Decodes an express slot object, as copied out of one bucket of the express\n"
    "bucket set (key {star}/{epoch:020}/{slot:020}). A flight is a format-v3 WAL\n"
    "object: its sections (one per express log of the star) and entries are shown\n"
    "as by `tarn inspect wal`. Poison is shown as by `tarn inspect poison`.\n"
    "FILE '-' reads stdin.\n"
    "\n"
    "Exit status: 0 decoded; 1 neither a flight nor poison; 2 bad command line.\n";

static const char poison_usage[] =
    "usage: tarn inspect poison FILE [--json]\n"
    "\n"
    "Decodes an express poison object: exactly the bytes\n"
    "  tarn-express-poison v1 {star}/{epoch}/{slot}\\n\n"
    "written create-only by a fence into an empty bucket of a slot it kills.\n"
    "Prints the star, epoch, slot and the slot's object key. With --json:\n"
    "{kind: \"poison\", star, epoch, slot, key}. FILE '-' reads stdin.\n"
    "\n"
    "Exit status: 0 decoded; 1 not exact poison; 2 bad command line.\n";

static int poison(const char *file, const uint8_t *p, size_t n, int json) {
  char star[TARN__X_STAR_MAX + 1], key[TARN__X_SLOT_KEY_MAX + 1];
  uint64_t epoch, slot;
  if (tarn__xpoison_parse(p, n, star, &epoch, &slot) ||
      tarn__xslot_key(key, sizeof key, star, epoch, slot))
    return tarn_cli_fail(file);
  if (json) {
    json_t *o = json_object();
    json_object_set_new(o, "kind", json_string("poison"));
    json_object_set_new(o, "star", json_string(star));
    json_object_set_new(o, "epoch", json_integer((json_int_t)epoch));
    json_object_set_new(o, "slot", json_integer((json_int_t)slot));
    json_object_set_new(o, "key", json_string(key));
    return tarn_cli_print_json(o);
  }
  printf("express poison   %zu bytes\n", n);
  printf("star             %s\n", star);
  printf("epoch            %llu\n", (unsigned long long)epoch);
  printf("slot             %llu\n", (unsigned long long)slot);
  printf("key              %s\n", key);
  return TARN_EXIT_OK;
}

static int inspect(int argc, char **argv, const char *name, const char *usage, int want_poison) {
  int json = 0, nargs;
  const tarn_cli_verb v = {name, NULL, NULL, NULL, &json, 1, usage};
  int ex = tarn_cli_parse(&v, argc, argv, &nargs);
  if (ex != TARN_CLI_GO_ON)
    return ex;
  if (!nargs)
    return tarn_cli_usage_error(name, "FILE is missing");
  const char *file = argv[1];
  uint8_t *obj;
  size_t len;
  if (tarn_cli_read_file(file, &obj, &len))
    return tarn_cli_fail(name);
  if (want_poison || tarn__xpoison_is(obj, len)) {
    ex = poison(file, obj, len, json);
    free(obj);
    return ex;
  }
  free(obj);
  if (!json)
    printf("express flight (a format-v3 WAL object)\n");
  /* the flight's sections and entries, as `tarn inspect wal` shows them */
  char *wal_argv[] = {"wal", (char *)file, json ? "--json" : NULL, NULL};
  return tarn_inspect_wal(json ? 3 : 2, wal_argv);
}

int tarn_inspect_slot(int argc, char **argv) {
  return inspect(argc, argv, "inspect slot", slot_usage, 0);
}

int tarn_inspect_poison(int argc, char **argv) {
  return inspect(argc, argv, "inspect poison", poison_usage, 1);
}
