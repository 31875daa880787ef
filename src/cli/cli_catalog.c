/* Helpers for the verbs that work on the catalog. */
#include "cli/cli.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "tarn/catalog.h"
#include "tarn/deployment.h"
#include "tarn/error.h"
#include "tarn/trim.h"

int tarn_cli_fail_rc(int rc, const char *what) {
  fprintf(stderr, "tarn: %s: %s\n", what, tarn_errmsg());
  if (rc == TARN_EUNAVAIL)
    fprintf(stderr, "The metadata store is unreachable; check that it runs and the URI "
                    "(--meta, TARN_META).\n");
  return tarn_cli_exit_for(rc);
}

int tarn_cli_parse_u64(const char *s, uint64_t max, uint64_t *out) {
  if (!*s || *s < '0' || *s > '9')
    return -1;
  char *end;
  errno = 0;
  unsigned long long v = strtoull(s, &end, 10);
  if (errno || *end || v > max)
    return -1;
  *out = v;
  return 0;
}

int tarn_cli_catalog_open(const tarn_cli_deploy *d, tarn_deployment **dep, tarn_catalog **cat) {
  *cat = NULL;
  int ex = tarn_cli_deploy_open(d, 0, dep);
  if (ex)
    return ex;
  int rc = tarn_catalog_open(tarn_deployment_meta(*dep), NULL, cat);
  if (!rc)
    rc = tarn_catalog_check(*cat);
  if (rc) {
    ex = tarn_cli_fail_rc(rc, "opening the catalog");
    tarn_cli_catalog_close(*dep, *cat);
    *dep = NULL, *cat = NULL;
  }
  return ex;
}

int tarn_cli_stream_open(const char *cmd, const tarn_cli_deploy *d, const char *ident,
                         tarn_deployment **dep, tarn_catalog **cat, char **ns, char **name) {
  *dep = NULL, *cat = NULL, *ns = *name = NULL;
  if (ident && tarn_stream_ident_parse(ident, ns, name))
    return tarn_cli_usage_error(cmd, "%s", tarn_errmsg());
  int ex = tarn_cli_catalog_open(d, dep, cat);
  if (ex) {
    free(*ns), free(*name);
    *ns = *name = NULL;
  }
  return ex;
}

void tarn_cli_catalog_close(tarn_deployment *dep, tarn_catalog *cat) {
  tarn_catalog_close(cat);
  tarn_deployment_close(dep);
}

int tarn_cli_partitions_json(tarn_deployment *dep, const tarn_catalog_record *s, json_t **out) {
  json_t *a = json_array();
  for (size_t i = 0; a && i < s->n_logs; i++) {
    tarn_log_bounds b;
    int rc = tarn_log_bounds_read(tarn_deployment_meta(dep), s->logs[i], &b);
    if (rc) {
      json_decref(a);
      return rc;
    }
    json_t *o = json_object();
    json_object_set_new(o, "partition", json_integer((json_int_t)i));
    json_object_set_new(o, "log_id", json_integer((json_int_t)s->logs[i]));
    json_object_set_new(o, "first_offset", json_integer((json_int_t)b.first));
    json_object_set_new(o, "end_offset", json_integer((json_int_t)b.end));
    json_object_set_new(o, "trim_marker", json_integer((json_int_t)b.trim));
    json_array_append_new(a, o);
  }
  if (!a)
    return TARN_ENOMEM;
  *out = a;
  return 0;
}

void tarn_cli_partitions_print(json_t *parts) {
  printf("%-10s %-20s %-20s %-20s %s\n", "PARTITION", "LOG", "FIRST", "END", "TRIM");
  size_t i;
  json_t *p;
  json_array_foreach(parts, i, p) {
    printf("%-10lld %-20lld %-20lld %-20lld %lld\n",
           (long long)json_integer_value(json_object_get(p, "partition")),
           (long long)json_integer_value(json_object_get(p, "log_id")),
           (long long)json_integer_value(json_object_get(p, "first_offset")),
           (long long)json_integer_value(json_object_get(p, "end_offset")),
           (long long)json_integer_value(json_object_get(p, "trim_marker")));
  }
}

int tarn_cli_prop_add(tarn_stream_prop **v, size_t *n, const char *kv) {
  const char *eq = strchr(kv, '=');
  if (!eq || eq == kv)
    return -1;
  tarn_stream_prop *np = realloc(*v, (*n + 1) * sizeof *np);
  if (!np)
    return -1;
  *v = np;
  np[*n].key = strndup(kv, (size_t)(eq - kv));
  np[*n].value = strdup(eq + 1);
  (*n)++;
  return 0;
}

void tarn_cli_props_free(tarn_stream_prop *v, size_t n) {
  for (size_t i = 0; i < n; i++)
    free(v[i].key), free(v[i].value);
  free(v);
}
