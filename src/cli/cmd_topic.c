/* tarn topic — Kafka topics: create, list, describe, delete and grow them
 * (spec Appendix A; tarn/kafka_topics.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "tarn/catalog.h"
#include "tarn/deployment.h"
#include "tarn/error.h"
#include "tarn/kafka_topics.h"

#define EXIT_STATUS                                                                                \
  "\nExit status: 0 done; 1 the operation failed (the message says why); 2 bad\n"                  \
  "command line; 3 the metadata store could not be reached.\n"

typedef struct args {
  tarn_cli_deploy d;
  int json;
  const char *topic;
  uint64_t partitions;
  int have_partitions;
  uint64_t drain_ms;
  tarn_stream_prop *configs;
  size_t n_configs;
} args;

/* --config KEY=VALUE, repeatable. */
static int add_config(void *ctx, const char *v) {
  args *a = ctx;
  return tarn_cli_prop_add(&a->configs, &a->n_configs, v);
}

/* Parses sub-command cmd's command line (the options of the table below
 * that opts names; want_topic: one TOPIC is required), then opens the
 * deployment and its catalog. Returns TARN_CLI_GO_ON, else the exit status
 * with nothing left to free. */
static int start(const char *cmd, int argc, char **argv, int want_topic, const char *opts,
                 void (*help)(void), args *a, tarn_deployment **dep, tarn_catalog **cat) {
  memset(a, 0, sizeof *a);
  a->partitions = 1;
  const tarn_cli_opt all[] = {
      TARN_CLI_OPT_UINT("--partitions", &a->partitions, 1, TARN_STREAM_PARTITIONS_MAX, NULL,
                        &a->have_partitions),
      TARN_CLI_OPT_CALL("--config", add_config, a, "KEY=VALUE"),
      TARN_CLI_OPT_UINT("--drain-timeout-ms", &a->drain_ms, 0, 86400000, "a number of ms", NULL)};
  tarn_cli_opt mine[sizeof all / sizeof all[0] + 1];
  tarn_cli_opts_pick(all, sizeof all / sizeof all[0], opts, mine);
  const tarn_cli_verb v = {cmd, help, mine, &a->d, &a->json, want_topic, NULL};
  int nargs, ex = tarn_cli_parse(&v, argc, argv, &nargs);
  if (ex == TARN_CLI_GO_ON && want_topic && !nargs)
    ex = tarn_cli_usage_error(cmd, "which topic? Give its name");
  if (ex == TARN_CLI_GO_ON && strstr(opts, "--need-partitions") && !a->have_partitions)
    ex = tarn_cli_usage_error(cmd, "--partitions N is required");
  a->topic = nargs ? argv[1] : NULL;
  if (ex == TARN_CLI_GO_ON && (ex = tarn_cli_catalog_open(&a->d, dep, cat)) == 0)
    return TARN_CLI_GO_ON;
  tarn_cli_props_free(a->configs, a->n_configs);
  return ex;
}

static int finish(args *a, tarn_deployment *dep, tarn_catalog *cat, int ex) {
  tarn_cli_catalog_close(dep, cat);
  tarn_cli_props_free(a->configs, a->n_configs);
  return ex;
}

static json_t *topic_json(const tarn_kafka_topic *t) {
  json_t *o = json_object(), *logs = json_array(), *cfg = json_object();
  json_object_set_new(o, "topic", json_string(t->name));
  json_object_set_new(o, "topic_id", json_string(t->id));
  json_object_set_new(o, "namespace", json_string(t->ns));
  json_object_set_new(o, "stream", json_string(t->stream));
  json_object_set_new(o, "state",
                      json_string(t->state == TARN_STREAM_DROPPING ? "dropping" : "active"));
  json_object_set_new(o, "created_ms", json_integer(t->created_ms));
  json_object_set_new(o, "partitions", json_integer(t->partitions));
  for (uint32_t i = 0; i < t->partitions; i++)
    json_array_append_new(logs, json_integer((json_int_t)t->logs[i]));
  json_object_set_new(o, "log_ids", logs);
  json_object_set_new(o, "max_message_bytes", json_integer(t->max_message_bytes));
  json_object_set_new(o, "batch_ms", json_integer(t->batch_ms));
  json_object_set_new(o, "storage_class",
                      t->storage_class[0] ? json_string(t->storage_class) : json_null());
  for (size_t i = 0; i < t->n_configs; i++)
    json_object_set_new(cfg, t->configs[i].key, json_string(t->configs[i].value));
  json_object_set_new(o, "configs", cfg);
  return o;
}

static void print_topic_line(const char *verb, const tarn_kafka_topic *t) {
  printf("%s topic %s (ID %s, stream %s/%s): %u partition(s), log IDs", verb, t->name, t->id, t->ns,
         t->stream, t->partitions);
  for (uint32_t i = 0; i < t->partitions; i++)
    printf(" %llu", (unsigned long long)t->logs[i]);
  printf("\n");
}

/* Prints t as JSON or as a line; frees it. */
static int print_topic(const args *a, const char *verb, tarn_kafka_topic *t) {
  int ex = 0;
  if (a->json)
    ex = tarn_cli_print_json(topic_json(t));
  else
    print_topic_line(verb, t);
  tarn_kafka_topic_free(t);
  return ex;
}

/* ---- create -------------------------------------------------------------- */

static void create_help(void) {
  printf("usage: tarn topic create TOPIC [--partitions N] [--config KEY=VALUE]...\n"
         "                        [DEPLOYMENT FLAGS] [--json]\n"
         "\n"
         "Creates Kafka topic TOPIC: a new stream " TARN_DEFAULT_NAMESPACE
         "/TOPIC-topic-id-ID, where ID is a fresh\n"
         "Kafka topic ID (22 characters of URL-safe Base64), with N partitions (default\n"
         "1), each a new log, and the properties lakestream.source.logical.name and\n"
         "lakestream.kafka.topic.name = TOPIC. Every append to its logs is checked against\n"
         "the Kafka binding (record batches only). A topic deleted and created again is a\n"
         "new stream with a new ID. TOPIC: 1..%d bytes of [a-zA-Z0-9._-], not '.' or '..'.\n"
         "\n"
         "Options:\n"
         "  --partitions N        number of partitions, 1..%d\n"
         "  --config KEY=VALUE    a topic config, kept as a stream property; repeat for\n"
         "                        more. Kafka's names, types and ranges (an unknown\n"
         "                        name or a bad value is refused; docs/kafka.md, \"Topic\n"
         "                        configs\"). tarn acts on " TARN_KAFKA_CONFIG_MAX_MESSAGE_BYTES
         " (default %d),\n"
         "                        " TARN_KAFKA_CONFIG_BATCH_MS
         " (the writer's batch window, 0..%d ms),\n"
         "                        " TARN_PROP_STORAGE_CLASS " (the stream's storage class)\n"
         "  --json                print the topic as JSON\n"
         "\n%s" EXIT_STATUS,
         TARN_KAFKA_TOPIC_NAME_MAX, TARN_STREAM_PARTITIONS_MAX,
         TARN_KAFKA_DEFAULT_MAX_MESSAGE_BYTES, TARN_KAFKA_BATCH_MS_MAX, tarn_cli_deploy_help);
}

static int cmd_create(int argc, char **argv) {
  args a;
  tarn_deployment *dep;
  tarn_catalog *cat;
  int ex =
      start("topic create", argc, argv, 1, "--partitions --config", create_help, &a, &dep, &cat);
  if (ex >= 0)
    return ex;
  ex = 0;
  tarn_kafka_topic t;
  int rc =
      tarn_kafka_topic_create(cat, a.topic, (uint32_t)a.partitions, a.configs, a.n_configs, &t);
  return finish(&a, dep, cat,
                rc ? tarn_cli_fail_rc(rc, "topic create") : print_topic(&a, "created", &t));
}

/* ---- list ---------------------------------------------------------------- */

static void list_help(void) {
  printf("usage: tarn topic list [DEPLOYMENT FLAGS] [--json]\n"
         "\n"
         "Lists the live Kafka topics: name, topic ID, partitions. Streams that are not\n"
         "Kafka topics are not listed (see 'tarn stream list').\n"
         "\n"
         "Options:\n"
         "  --json   a JSON array of {topic, topic_id, namespace, stream, state,\n"
         "           created_ms, partitions, log_ids, max_message_bytes, batch_ms,\n"
         "           storage_class, configs}\n"
         "\n%s" EXIT_STATUS,
         tarn_cli_deploy_help);
}

static int cmd_list(int argc, char **argv) {
  args a;
  tarn_deployment *dep;
  tarn_catalog *cat;
  int ex = start("topic list", argc, argv, 0, "", list_help, &a, &dep, &cat);
  if (ex >= 0)
    return ex;
  ex = 0;
  tarn_kafka_topic *v;
  size_t n;
  int rc = tarn_kafka_topic_list(cat, &v, &n);
  if (rc) {
    ex = tarn_cli_fail_rc(rc, "topic list");
  } else {
    if (a.json) {
      json_t *arr = json_array();
      for (size_t i = 0; i < n; i++)
        json_array_append_new(arr, topic_json(&v[i]));
      ex = tarn_cli_print_json(arr);
    } else {
      printf("%-40s %-22s %s\n", "TOPIC", "TOPIC ID", "PARTITIONS");
      for (size_t i = 0; i < n; i++)
        printf("%-40s %-22s %u\n", v[i].name, v[i].id, v[i].partitions);
    }
    tarn_kafka_topics_free(v, n);
  }
  return finish(&a, dep, cat, ex);
}

/* ---- describe ------------------------------------------------------------ */

static void describe_help(void) {
  printf("usage: tarn topic describe TOPIC [DEPLOYMENT FLAGS] [--json]\n"
         "\n"
         "Shows a live topic: its ID and stream, configs, and per partition its log ID,\n"
         "first offset, end offset (Kafka's high watermark) and trim marker. Reads only.\n"
         "\n"
         "Options:\n"
         "  --json   the fields of 'tarn topic list --json', with partitions:\n"
         "           [{partition, log_id, first_offset, end_offset, trim_marker}]\n"
         "\n%s" EXIT_STATUS,
         tarn_cli_deploy_help);
}

static int cmd_describe(int argc, char **argv) {
  args a;
  tarn_deployment *dep;
  tarn_catalog *cat;
  int ex = start("topic describe", argc, argv, 1, "", describe_help, &a, &dep, &cat);
  if (ex >= 0)
    return ex;
  ex = 0;
  tarn_kafka_topic t;
  tarn_catalog_record s;
  json_t *parts = NULL;
  int rc = tarn_kafka_topic_lookup(cat, a.topic, &t);
  if (!rc) {
    rc = tarn_catalog_open_stream(cat, t.ns, t.stream, &s);
    if (!rc) {
      rc = tarn_cli_partitions_json(dep, &s, &parts);
      tarn_catalog_record_free(&s);
    }
    if (rc)
      tarn_kafka_topic_free(&t);
  }
  if (rc) {
    ex = tarn_cli_fail_rc(rc, "topic describe");
  } else if (a.json) {
    json_t *o = topic_json(&t);
    json_object_set_new(o, "partitions", parts);
    ex = tarn_cli_print_json(o);
    tarn_kafka_topic_free(&t);
  } else {
    printf("topic       %s\ntopic ID    %s\nstream      %s/%s\ncreated_ms  %lld\nconfigs    ",
           t.name, t.id, t.ns, t.stream, (long long)t.created_ms);
    if (!t.n_configs)
      printf(" (none)");
    for (size_t i = 0; i < t.n_configs; i++)
      printf("%s%s=%s", i ? "\n            " : " ", t.configs[i].key, t.configs[i].value);
    printf("\npartitions  %u\n\n", t.partitions);
    tarn_cli_partitions_print(parts);
    json_decref(parts);
    tarn_kafka_topic_free(&t);
  }
  return finish(&a, dep, cat, ex);
}

/* ---- delete -------------------------------------------------------------- */

static void delete_help(void) {
  printf("usage: tarn topic delete TOPIC [--drain-timeout-ms MS] [DEPLOYMENT FLAGS] [--json]\n"
         "\n"
         "Deletes a topic: drops its stream as 'tarn stream drop' does (tombstone, then\n"
         "each log fenced, its writers drained and its index records removed). The name\n"
         "is free at once for a new topic, which gets a new ID and a new stream. If\n"
         "writers still hold leases when the wait ends, the command fails (exit 1) and\n"
         "the topic stays unlisted: run it again once they have stopped.\n"
         "\n"
         "Options:\n"
         "  --drain-timeout-ms MS   how long to wait for leases (default %d)\n"
         "  --json                  print {topic, deleted}\n"
         "\n%s" EXIT_STATUS,
         TARN_DRAIN_TIMEOUT_MS, tarn_cli_deploy_help);
}

static int cmd_delete(int argc, char **argv) {
  args a;
  tarn_deployment *dep;
  tarn_catalog *cat0, *cat;
  int ex = start("topic delete", argc, argv, 1, "--drain-timeout-ms", delete_help, &a, &dep, &cat0);
  if (ex >= 0)
    return ex;
  ex = 0;
  tarn_catalog_close(cat0); /* the drain timeout is an option of the handle */
  tarn_catalog_options o = {.drain_timeout_ms = (int)a.drain_ms};
  int rc = tarn_catalog_open(tarn_deployment_meta(dep), &o, &cat);
  if (!rc)
    rc = tarn_kafka_topic_delete(cat, a.topic);
  if (rc) {
    ex = tarn_cli_fail_rc(rc, "topic delete");
  } else if (a.json) {
    json_t *j = json_object();
    json_object_set_new(j, "topic", json_string(a.topic));
    json_object_set_new(j, "deleted", json_true());
    ex = tarn_cli_print_json(j);
  } else {
    printf("deleted topic %s; its logs are fenced and their index records removed\n", a.topic);
  }
  return finish(&a, dep, cat, ex);
}

/* ---- add-partitions ------------------------------------------------------ */

static void add_help(void) {
  printf("usage: tarn topic add-partitions TOPIC --partitions N [DEPLOYMENT FLAGS] [--json]\n"
         "\n"
         "Grows a topic to N partitions in all (Kafka's CreatePartitions): the new logs\n"
         "are created first, then the whole new layout is published at once.\n"
         "\n"
         "Options:\n"
         "  --partitions N   the new partition count, above the current one (required)\n"
         "  --json           print the topic as JSON\n"
         "\n%s" EXIT_STATUS,
         tarn_cli_deploy_help);
}

static int cmd_add(int argc, char **argv) {
  args a;
  tarn_deployment *dep;
  tarn_catalog *cat;
  int ex = start("topic add-partitions", argc, argv, 1, "--partitions --need-partitions", add_help,
                 &a, &dep, &cat);
  if (ex >= 0)
    return ex;
  ex = 0;
  tarn_kafka_topic t;
  int rc = tarn_kafka_topic_add_partitions(cat, a.topic, (uint32_t)a.partitions, &t);
  return finish(&a, dep, cat,
                rc ? tarn_cli_fail_rc(rc, "topic add-partitions") : print_topic(&a, "grew", &t));
}

static const tarn_cli_cmd subs[] = {
    {"create", "create a Kafka topic: a new stream of N partitions", cmd_create},
    {"list", "list the live topics", cmd_list},
    {"describe", "show a topic's ID, stream, configs and offsets", cmd_describe},
    {"delete", "delete a topic: drop its stream", cmd_delete},
    {"add-partitions", "grow a topic to N partitions", cmd_add},
    {NULL, NULL, NULL}};

static const char intro[] =
    "usage: tarn topic COMMAND [ARGS]\n"
    "\n"
    "Manages Kafka topics (the Kafka binding, spec Appendix A). Each incarnation of\n"
    "a topic is one stream, " TARN_DEFAULT_NAMESPACE
    "/TOPIC-topic-id-ID; partition p is its log at\n"
    "position p. Read a topic's records with 'tarn read --format kafka'.\n" EXIT_STATUS;

int tarn_cmd_topic(int argc, char **argv) {
  return tarn_cli_dispatch("tarn topic", subs, argc, argv, intro);
}
