/* Naming the log a verb acts on: NS/NAME [--partition P], or --log L. */
#include "cli/log_cmds.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tarn/catalog.h"
#include "tarn/deployment.h"
#include "tarn/error.h"
#include "tarn/key.h"

const char tarn_cli_log_target_help[] =
    "The log:\n"
    "  NS/NAME            a stream, by namespace and name (see 'tarn stream');\n"
    "                     NAME alone means namespace '" TARN_DEFAULT_NAMESPACE "'\n"
    "  --partition P      the stream's partition P (default 0)\n"
    "  --log L            a stream's log by its ID instead of NS/NAME\n";

/* LS-087: --log L reaches only a log the catalog allocated and a live
 * stream lists. A log no stream has may be one whose ID the catalog hands
 * out later (whose new stream would read what we wrote) or one a drop is
 * deleting. */
static int allocated_log(const char *cmd, tarn_deployment *d, uint64_t log_id) {
  tarn_catalog *c = NULL;
  tarn_catalog_record lr, s;
  memset(&lr, 0, sizeof lr);
  memset(&s, 0, sizeof s);
  int rc = tarn_catalog_open(tarn_deployment_meta(d), NULL, &c);
  if (!rc)
    rc = tarn_catalog_log_stream(c, log_id, &lr);
  if (!rc)
    rc = tarn_catalog_open_stream(c, lr.ns, lr.name, &s);
  int status = TARN_EXIT_OK;
  if (rc == TARN_ENOTFOUND || (!rc && s.state == TARN_STREAM_DROPPING)) {
    fprintf(stderr,
            "tarn: %s: log %llu belongs to no stream%s; name a stream's log (see "
            "'tarn stream describe')\n",
            cmd, (unsigned long long)log_id, rc ? "" : " (its stream is being dropped)");
    status = TARN_EXIT_FAULT;
  } else if (rc) {
    fprintf(stderr, "tarn: %s: log %llu: %s\n", cmd, (unsigned long long)log_id, tarn_errmsg());
    status = tarn_cli_exit_for(rc);
  }
  tarn_catalog_record_free(&s);
  tarn_catalog_record_free(&lr);
  tarn_catalog_close(c);
  return status;
}

int tarn_cli_log_target_resolve(const tarn_cli_log_target *t, const char *cmd, tarn_deployment *d,
                                uint64_t *log_id) {
  if (t->log) {
    if (t->stream || t->partition)
      return tarn_cli_usage_error(cmd, "--log L replaces NS/NAME and --partition");
    if (tarn_cli_parse_u64(t->log, TARN_KEY_MAX, log_id))
      return tarn_cli_usage_error(cmd, "--log needs a log ID (0 .. 2^63-1), not '%s'", t->log);
    return allocated_log(cmd, d, *log_id);
  }
  if (!t->stream)
    return tarn_cli_usage_error(cmd, "name the stream (NS/NAME) or the log (--log L)");
  uint64_t part = 0;
  if (t->partition && tarn_cli_parse_u64(t->partition, UINT32_MAX, &part))
    return tarn_cli_usage_error(cmd, "--partition needs a number, not '%s'", t->partition);
  char *ns = NULL, *name = NULL;
  int rc = tarn_stream_ident_parse(t->stream, &ns, &name);
  if (rc == TARN_EINVAL)
    return tarn_cli_usage_error(cmd, "'%s' is not NS/NAME or NAME: %s", t->stream, tarn_errmsg());
  tarn_catalog *c = NULL;
  if (!rc)
    rc = tarn_catalog_open(tarn_deployment_meta(d), NULL, &c);
  if (!rc)
    rc = tarn_catalog_partition_log(c, ns, name, (uint32_t)part, log_id);
  int status = TARN_EXIT_OK;
  if (rc == TARN_ENOTFOUND) {
    fprintf(stderr, "tarn: %s: stream %s does not exist (create it with 'tarn stream create')\n",
            cmd, t->stream);
    status = TARN_EXIT_FAULT;
  } else if (rc) {
    fprintf(stderr, "tarn: %s: %s\n", cmd, tarn_errmsg());
    status = tarn_cli_exit_for(rc);
  }
  tarn_catalog_close(c);
  free(ns);
  free(name);
  return status;
}
