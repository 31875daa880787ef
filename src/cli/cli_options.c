/* The option parser every verb shares: a verb lists its options in a table
 * (tarn_cli_opt); --help/-h, --json and the deployment flags are handled
 * here once. Conventions (docs/cli.md): a value option takes "--opt VALUE" or
 * "--opt=VALUE"; an option given twice keeps the last value (a repeatable one,
 * such as --property, accumulates); every usage error names the option or
 * argument and points to the verb's --help, exit status 2. */
#include "cli/cli.h"
#include "tarn/kafka_users.h"

#include <stdlib.h>
#include <string.h>

/* If argv[*i] is option name ("--name V" or "--name=V"), sets *val (NULL for a
 * missing value), advances *i past the value and returns 1; 0 if it is not. */
static int match(const tarn_cli_opt *o, int argc, char **argv, int *i, const char **val) {
  size_t n = strlen(o->name);
  const char *a = argv[*i];
  if (strncmp(a, o->name, n) != 0)
    return 0;
  *val = NULL;
  if (o->kind == TARN_CLI_FLAG)
    return a[n] == 0;
  if (a[n] == '=') {
    *val = a + n + 1;
    return 1;
  }
  if (a[n])
    return 0;
  if (*i + 1 < argc)
    *val = argv[++*i];
  return 1;
}

/* The index of val among the '|'-separated words of choices, or -1. */
static int choice(const char *choices, const char *val) {
  size_t n = strlen(val);
  int k = 0;
  for (const char *p = choices;; k++) {
    size_t w = strcspn(p, "|");
    if (w == n && strncmp(p, val, n) == 0)
      return k;
    if (!p[w])
      return -1;
    p += w + 1;
  }
}

/* Stores the value of option o; 0, or -1 when val is not a valid value. */
static int store(const tarn_cli_opt *o, const char *val) {
  uint64_t v;
  int k;
  switch (o->kind) {
  case TARN_CLI_FLAG: *(int *)o->out = o->set; return 0;
  case TARN_CLI_STRING: *(const char **)o->out = val; return 0;
  case TARN_CLI_UINT:
    if (tarn_cli_parse_u64(val, o->max, &v) || v < o->min)
      return -1;
    if (o->size == sizeof(uint32_t)) /* an int, or a uint32_t: max fits, as the table says */
      *(uint32_t *)o->out = (uint32_t)v;
    else if (o->size == sizeof(uint64_t))
      *(uint64_t *)o->out = v;
    else
      abort(); /* a table entry of an unsupported type: a bug */
    if (o->seen)
      *o->seen = 1;
    return 0;
  case TARN_CLI_CHOICE:
    if ((k = choice(o->choices, val)) < 0)
      return -1;
    *(int *)o->out = k;
    return 0;
  case TARN_CLI_CALL: return o->call(o->out, val) ? -1 : 0;
  }
  return -1;
}

/* Looks argv[*i] up in table opts; 1 taken, 0 not one of them, else the
 * usage error's exit status. */
static int take(const char *verb, const tarn_cli_opt *opts, int argc, char **argv, int *i) {
  for (const tarn_cli_opt *o = opts; o && o->name; o++) {
    const char *val;
    if (!match(o, argc, argv, i, &val))
      continue;
    const char *what = o->what ? o->what : "a value";
    char range[64];
    if (!o->what && o->kind == TARN_CLI_UINT) {
      snprintf(range, sizeof range, "a number from %llu to %llu", (unsigned long long)o->min,
               (unsigned long long)o->max);
      what = range;
    }
    if (o->kind != TARN_CLI_FLAG && !val)
      return tarn_cli_usage_error(verb, "%s needs %s", o->name, what);
    if (store(o, val))
      return tarn_cli_usage_error(verb, "%s needs %s, not '%s'", o->name, what, val);
    return 1;
  }
  return 0;
}

int tarn_cli_parse(const tarn_cli_verb *v, int argc, char **argv, int *nargs) {
  /* --json where the verb has it; the deployment flags where it opens the stores */
  tarn_cli_opt shared[6];
  size_t ns = 0;
  tarn_cli_deploy *d = v->deploy;
  if (v->json)
    shared[ns++] = (tarn_cli_opt)TARN_CLI_OPT_FLAG("--json", v->json, 1);
  if (d) {
    shared[ns++] = (tarn_cli_opt)TARN_CLI_OPT_STRING("--home", &d->home, NULL);
    shared[ns++] = (tarn_cli_opt)TARN_CLI_OPT_STRING("--meta", &d->meta, NULL);
    shared[ns++] = (tarn_cli_opt)TARN_CLI_OPT_STRING("--wal", &d->wal, NULL);
    shared[ns++] = (tarn_cli_opt)TARN_CLI_OPT_STRING("--compacted", &d->compacted, NULL);
  }
  shared[ns] = (tarn_cli_opt){0};
  int n = 0;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
      if (v->help)
        v->help();
      else
        fputs(v->usage, stdout);
      return TARN_EXIT_OK;
    }
    int k = take(v->name, shared, argc, argv, &i);
    if (!k)
      k = take(v->name, v->opts, argc, argv, &i);
    if (k == 1)
      continue;
    if (k)
      return k;
    if (a[0] == '-' && a[1])
      return tarn_cli_usage_error(v->name, "unknown option '%s'", a);
    if (v->max_args >= 0 && n >= v->max_args)
      return tarn_cli_usage_error(v->name, "unexpected argument '%s'", a);
    argv[++n] = argv[i]; /* the positional arguments, in order, from argv[1] */
  }
  *nargs = n;
  return TARN_CLI_GO_ON;
}

size_t tarn_cli_opts_pick(const tarn_cli_opt *all, size_t n, const char *names, tarn_cli_opt *out) {
  size_t k = 0;
  for (size_t i = 0; i < n; i++)
    if (strstr(names, all[i].name))
      out[k++] = all[i];
  out[k] = (tarn_cli_opt){0};
  return k;
}

int tarn_cli_sasl_mechanism_option(void *ctx, const char *v) {
  int m = tarn_kafka_sasl_mechanism_parse(v);
  if (!m)
    return TARN_EINVAL;
  *(int *)ctx |= m;
  return 0;
}
