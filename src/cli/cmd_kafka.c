/* tarn kafka user — the SASL users of the Kafka listener, kept in the
 * metadata store (kafka/sasl_users.h; docs/kafka.md "Security"). A password
 * is read from stdin or a file, never from the command line (it would show in
 * ps and shell histories), and only its salted keys are stored. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <openssl/crypto.h>

#include "cli/cli.h"
#include "tarn/catalog.h"
#include "tarn/deployment.h"
#include "tarn/error.h"
#include "tarn/kafka_users.h"

#define EXIT_STATUS                                                                                \
  "\nExit status: 0 done; 1 the operation failed (the message says why); 2 bad\n"                  \
  "command line; 3 the metadata store could not be reached.\n"

static void add_help(void) {
  printf("usage: tarn kafka user add NAME [--mechanism plain|scram-sha-256]...\n"
         "                          [--password-file FILE] [--iterations N] [DEPLOYMENT FLAGS]\n"
         "\n"
         "Creates or replaces Kafka SASL user NAME (1..%d bytes). The password is the\n"
         "first line of stdin, or of FILE (a file readable by others gets a warning);\n"
         "never give it on the command line. The metadata store keeps the SCRAM-SHA-256\n"
         "StoredKey and ServerKey of the password salted with 24 random bytes and\n"
         "hashed N times (PBKDF2-HMAC-SHA-256, default %d, at least %d), not the password.\n"
         "\n"
         "Options:\n"
         "  --mechanism M        a mechanism NAME may use: plain or scram-sha-256; repeat\n"
         "                       for both (default both)\n"
         "  --password-file FILE read the password from FILE instead of stdin\n"
         "  --iterations N       PBKDF2 iterations\n"
         "\n%s" EXIT_STATUS,
         TARN_KAFKA_USER_NAME_MAX, TARN_KAFKA_SCRAM_ITER_DEFAULT, TARN_KAFKA_SCRAM_ITER_MIN,
         tarn_cli_deploy_help);
}

/* The first line of path ("-": stdin), without its line end. */
static int read_password(const char *path, char **out, size_t *len) {
  if (strcmp(path, "-")) {
    struct stat st;
    if (stat(path, &st) == 0 && (st.st_mode & 077))
      fprintf(stderr,
              "tarn: warning: %s is readable or writable by others than its owner "
              "(chmod 600 it)\n",
              path);
  }
  uint8_t *p;
  size_t n;
  if (tarn_cli_read_file(path, &p, &n))
    return TARN_EIO;
  size_t l = 0;
  while (l < n && p[l] != '\n' && p[l] != '\r')
    l++;
  char *s = malloc(l + 1);
  if (s) {
    memcpy(s, p, l);
    s[l] = 0;
  }
  OPENSSL_cleanse(p, n);
  free(p);
  if (!s)
    return TARN_ENOMEM;
  *out = s, *len = l;
  return 0;
}

static int open_meta(tarn_cli_deploy *d, tarn_deployment **dep) {
  tarn_catalog *cat;
  int ex = tarn_cli_catalog_open(d, dep, &cat);
  if (!ex)
    tarn_catalog_close(cat);
  return ex;
}

static int cmd_add(int argc, char **argv) {
  tarn_cli_deploy d = {0};
  int mechs = 0;
  const char *pwfile = "-";
  uint64_t iter = TARN_KAFKA_SCRAM_ITER_DEFAULT;
  const tarn_cli_opt opts[] = {TARN_CLI_OPT_CALL("--mechanism", tarn_cli_sasl_mechanism_option,
                                                 &mechs, "plain or scram-sha-256"),
                               TARN_CLI_OPT_STRING("--password-file", &pwfile, "FILE"),
                               TARN_CLI_OPT_UINT("--iterations", &iter, TARN_KAFKA_SCRAM_ITER_MIN,
                                                 TARN_KAFKA_SCRAM_ITER_MAX, NULL, NULL),
                               {0}};
  const tarn_cli_verb v = {"kafka user add", add_help, opts, &d, NULL, 1, NULL};
  int nargs, ex = tarn_cli_parse(&v, argc, argv, &nargs);
  if (ex != TARN_CLI_GO_ON)
    return ex;
  if (nargs != 1)
    return tarn_cli_usage_error("kafka user add", "which user? Give one NAME");
  const char *name = argv[1];
  if (!*name || strlen(name) > TARN_KAFKA_USER_NAME_MAX)
    return tarn_cli_usage_error("kafka user add", "NAME is 1..%d bytes", TARN_KAFKA_USER_NAME_MAX);
  if (!mechs)
    mechs = TARN_KAFKA_SASL_PLAIN | TARN_KAFKA_SASL_SCRAM_SHA_256;
  char *pw;
  size_t pl;
  if (read_password(pwfile, &pw, &pl))
    return tarn_cli_fail("kafka user add: reading the password");
  if (!pl) {
    free(pw);
    fprintf(stderr, "tarn: kafka user add: the password is empty\n");
    return TARN_EXIT_FAULT;
  }
  tarn_deployment *dep;
  if ((ex = open_meta(&d, &dep))) {
    OPENSSL_cleanse(pw, pl);
    free(pw);
    return ex;
  }
  int rc = tarn_kafka_user_put(tarn_deployment_meta(dep), name, pw, pl, mechs, (uint32_t)iter);
  OPENSSL_cleanse(pw, pl);
  free(pw);
  if (rc)
    ex = tarn_cli_fail_rc(rc, "kafka user add");
  else
    printf("user %s: %s%s%s\n", name, mechs & TARN_KAFKA_SASL_PLAIN ? "PLAIN" : "",
           mechs == (TARN_KAFKA_SASL_PLAIN | TARN_KAFKA_SASL_SCRAM_SHA_256) ? ", " : "",
           mechs & TARN_KAFKA_SASL_SCRAM_SHA_256 ? "SCRAM-SHA-256" : "");
  tarn_deployment_close(dep);
  return ex;
}

static void list_help(void) {
  printf("usage: tarn kafka user list [DEPLOYMENT FLAGS] [--json]\n"
         "\n"
         "Lists the Kafka SASL users and the mechanisms each may use.\n"
         "\n%s" EXIT_STATUS,
         tarn_cli_deploy_help);
}

static int cmd_list(int argc, char **argv) {
  tarn_cli_deploy d = {0};
  int json = 0;
  const tarn_cli_verb v = {"kafka user list", list_help, NULL, &d, &json, 0, NULL};
  int nargs, ex = tarn_cli_parse(&v, argc, argv, &nargs);
  if (ex != TARN_CLI_GO_ON)
    return ex;
  tarn_deployment *dep;
  if ((ex = open_meta(&d, &dep)))
    return ex;
  tarn_kafka_user *u;
  size_t n;
  int rc = tarn_kafka_user_list(tarn_deployment_meta(dep), &u, &n);
  if (rc) {
    ex = tarn_cli_fail_rc(rc, "kafka user list");
  } else {
    json_t *arr = json ? json_array() : NULL;
    for (size_t i = 0; i < n; i++) {
      if (json) {
        json_t *o = json_object(), *m = json_array();
        if (u[i].mechanisms & TARN_KAFKA_SASL_PLAIN)
          json_array_append_new(m, json_string("PLAIN"));
        if (u[i].mechanisms & TARN_KAFKA_SASL_SCRAM_SHA_256)
          json_array_append_new(m, json_string("SCRAM-SHA-256"));
        json_object_set_new(o, "user", json_string(u[i].name));
        json_object_set_new(o, "mechanisms", m);
        json_array_append_new(arr, o);
      } else {
        int mk = u[i].mechanisms;
        printf("%s\t%s%s%s\n", u[i].name, mk & TARN_KAFKA_SASL_PLAIN ? "PLAIN" : "",
               mk == (TARN_KAFKA_SASL_PLAIN | TARN_KAFKA_SASL_SCRAM_SHA_256) ? "," : "",
               mk & TARN_KAFKA_SASL_SCRAM_SHA_256 ? "SCRAM-SHA-256" : "");
      }
    }
    tarn_kafka_users_free(u, n);
    if (json)
      ex = tarn_cli_print_json(arr);
  }
  tarn_deployment_close(dep);
  return ex;
}

static void delete_help(void) {
  printf("usage: tarn kafka user delete NAME [DEPLOYMENT FLAGS]\n"
         "\n"
         "Deletes Kafka SASL user NAME: its next authentication is refused (connections\n"
         "already authenticated stay open).\n"
         "\n%s" EXIT_STATUS,
         tarn_cli_deploy_help);
}

static int cmd_delete(int argc, char **argv) {
  tarn_cli_deploy d = {0};
  const tarn_cli_verb v = {"kafka user delete", delete_help, NULL, &d, NULL, 1, NULL};
  int nargs, ex = tarn_cli_parse(&v, argc, argv, &nargs);
  if (ex != TARN_CLI_GO_ON)
    return ex;
  if (nargs != 1)
    return tarn_cli_usage_error("kafka user delete", "which user? Give one NAME");
  tarn_deployment *dep;
  if ((ex = open_meta(&d, &dep)))
    return ex;
  int rc = tarn_kafka_user_delete(tarn_deployment_meta(dep), argv[1]);
  if (rc)
    ex = tarn_cli_fail_rc(rc, "kafka user delete");
  else
    printf("deleted user %s\n", argv[1]);
  tarn_deployment_close(dep);
  return ex;
}

static const tarn_cli_cmd user_subs[] = {
    {"add", "create or replace a SASL user (password from stdin or a file)", cmd_add},
    {"list", "list the SASL users and their mechanisms", cmd_list},
    {"delete", "delete a SASL user", cmd_delete},
    {NULL, NULL, NULL}};

static int cmd_user(int argc, char **argv) {
  return tarn_cli_dispatch(
      "tarn kafka user", user_subs, argc, argv,
      "usage: tarn kafka user COMMAND [ARGS]\n"
      "\n"
      "Manages the SASL users of the Kafka listener (tarn serve --kafka-sasl),\n"
      "kept in the metadata store as salted keys.\n" EXIT_STATUS);
}

static const tarn_cli_cmd subs[] = {
    {"user", "manage the SASL users of the Kafka listener", cmd_user}, {NULL, NULL, NULL}};

int tarn_cmd_kafka(int argc, char **argv) {
  return tarn_cli_dispatch("tarn kafka", subs, argc, argv,
                           "usage: tarn kafka COMMAND [ARGS]\n"
                           "\n"
                           "The Kafka listener's settings kept in the deployment (docs/kafka.md).\n"
                           "Topics: tarn topic.\n" EXIT_STATUS);
}
