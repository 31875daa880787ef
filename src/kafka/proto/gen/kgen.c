/* tarn-kgen: turns the Kafka message declarations (src/kafka/proto/defs/<api>.kdef) into C.
 *
 *   tarn-kgen OUT.h OUT.c DEF.kdef...
 *
 * OUT.h gets the API keys and one typedef'd struct per message and per nested struct;
 * OUT.c gets the descriptor tables (offsetof into those very structs, so table and struct
 * cannot disagree) that the interpreter in kproto.c walks. The declaration form is in
 * docs/kafka.md, "The codec". A host tool, run by add_custom_command; it checks what it
 * reads (unknown types or keys, bad ranges, tags out of order) and fails loudly. */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAXF 48
#define MAXS 512
#define MAXA 64
#define NOVER (-1)
#define ALLHI 0x7fff

typedef struct kstruct kstruct;
typedef struct {
  char name[64];
  int type, elem; /* elem: element type of an array */
  int vlo, vhi, nlo, nhi, tlo, thi, tag;
  char def[64];
  kstruct *sub;
  int line;
} kfield;

struct kstruct {
  char kname[64]; /* declared name */
  char cname[160];
  int api;      /* index into apis */
  int vlo, vhi; /* versions of the message */
  kfield f[MAXF];
  int nf;
};

typedef struct {
  char snake[64], name[64], upper[64];
  int key, vlo, vhi, flex;
  kstruct *req, *resp;
} kapi;

static kstruct structs[MAXS];
static int nstructs;
static kapi apis[MAXA];
static int napis;
static const char *cur_file;
static int cur_line;

_Noreturn static void die(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "tarn-kgen: %s:%d: ", cur_file ? cur_file : "-", cur_line);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  exit(1);
}

static const struct {
  const char *name;
  int code;
  const char *ctype;
  const char *kt;
} types[] = {
    {"bool", 1, "bool", "TARN__KT_BOOL"},
    {"int8", 2, "int8_t", "TARN__KT_INT8"},
    {"int16", 3, "int16_t", "TARN__KT_INT16"},
    {"int32", 4, "int32_t", "TARN__KT_INT32"},
    {"int64", 5, "int64_t", "TARN__KT_INT64"},
    {"uint16", 6, "uint16_t", "TARN__KT_UINT16"},
    {"uint32", 7, "uint32_t", "TARN__KT_UINT32"},
    {"varint", 8, "int32_t", "TARN__KT_VARINT"},
    {"varlong", 9, "int64_t", "TARN__KT_VARLONG"},
    {"float64", 10, "double", "TARN__KT_FLOAT64"},
    {"uuid", 11, "uint8_t", "TARN__KT_UUID"},
    {"string", 12, "tarn__kstr", "TARN__KT_STRING"},
    {"bytes", 13, "tarn__kbytes", "TARN__KT_BYTES"},
    {"records", 14, "tarn__kbytes", "TARN__KT_RECORDS"},
};
enum { T_UUID = 11, T_STRING = 12, T_BYTES = 13, T_RECORDS = 14, T_STRUCT = 15, T_ARRAY = 16 };
#define NTYPES (sizeof types / sizeof types[0])

static int type_code(const char *s) {
  for (size_t i = 0; i < NTYPES; i++)
    if (!strcmp(types[i].name, s))
      return types[i].code;
  return 0;
}
static const char *ctype_of(int code) { return types[code - 1].ctype; }
static const char *kt_of(int code) {
  if (code == T_STRUCT)
    return "TARN__KT_STRUCT";
  if (code == T_ARRAY)
    return "TARN__KT_ARRAY";
  return types[code - 1].kt;
}

static int is_ident(const char *s) {
  if (!*s || !(islower((unsigned char)*s)))
    return 0;
  for (; *s; s++)
    if (!(islower((unsigned char)*s) || isdigit((unsigned char)*s) || *s == '_'))
      return 0;
  return 1;
}

/* "3+", "0-2", "5", "all" (the enclosing range), within lo..hi. */
static void parse_range(const char *s, int lo, int hi, int *a, int *b) {
  char *end;
  if (!strcmp(s, "all")) {
    *a = lo, *b = hi;
    return;
  }
  errno = 0;
  long x = strtol(s, &end, 10), y;
  if (end == s || x < 0 || x > 1000)
    die("bad version range '%s'", s);
  if (*end == '+' && !end[1])
    y = ALLHI;
  else if (*end == '-') {
    const char *t = end + 1;
    y = strtol(t, &end, 10);
    if (end == t || *end || y < x)
      die("bad version range '%s'", s);
  } else if (!*end)
    y = x;
  else
    die("bad version range '%s'", s);
  *a = (int)x, *b = (int)y;
  if (*a < lo)
    *a = lo;
  if (*b > hi)
    *b = hi;
  if (*a > *b)
    die("version range '%s' lies outside %d-%d", s, lo, hi);
}

static void upper_of(const char *s, char *out, size_t n) {
  size_t i = 0;
  for (; s[i] && i + 1 < n; i++)
    out[i] = (char)toupper((unsigned char)s[i]);
  out[i] = 0;
}

static kstruct *new_struct(int api, const char *kname, int vlo, int vhi) {
  if (nstructs == MAXS)
    die("too many structs");
  kstruct *s = &structs[nstructs++];
  memset(s, 0, sizeof *s);
  snprintf(s->kname, sizeof s->kname, "%s", kname);
  snprintf(s->cname, sizeof s->cname, "tarn__k_%s_%s", apis[api].snake, kname);
  for (int i = 0; i < nstructs - 1; i++)
    if (!strcmp(structs[i].cname, s->cname))
      die("struct %s declared twice", s->cname);
  s->api = api, s->vlo = vlo, s->vhi = vhi;
  return s;
}

/* One field line: name type [v=R] [null=R] [tag=N tagv=R] [def=X]. */
static kfield *parse_field(kstruct *s, char *line, int plo, int phi) {
  if (s->nf == MAXF)
    die("too many fields in %s", s->kname);
  kfield *f = &s->f[s->nf++];
  memset(f, 0, sizeof *f);
  f->line = cur_line;
  f->nlo = f->tlo = NOVER, f->nhi = f->thi = NOVER, f->tag = -1;
  char *save = NULL, *name = strtok_r(line, " \t", &save), *type = strtok_r(NULL, " \t", &save);
  if (!name || !type)
    die("a field needs a name and a type");
  if (!is_ident(name) || strlen(name) >= sizeof f->name)
    die("bad field name '%s'", name);
  for (int i = 0; i < s->nf - 1; i++)
    if (!strcmp(s->f[i].name, name))
      die("field %s declared twice in %s", name, s->kname);
  snprintf(f->name, sizeof f->name, "%s", name);
  f->vlo = plo, f->vhi = phi;
  char *tok, *tagv = NULL, *nullv = NULL;
  while ((tok = strtok_r(NULL, " \t", &save))) {
    if (!strncmp(tok, "v=", 2))
      parse_range(tok + 2, plo, phi, &f->vlo, &f->vhi);
    else if (!strncmp(tok, "null=", 5))
      nullv = tok + 5;
    else if (!strncmp(tok, "tag=", 4)) {
      char *end;
      long t = strtol(tok + 4, &end, 10);
      if (end == tok + 4 || *end || t < 0 || t > 1000000)
        die("bad tag '%s'", tok);
      f->tag = (int)t;
    } else if (!strncmp(tok, "tagv=", 5))
      tagv = tok + 5;
    else if (!strncmp(tok, "def=", 4)) {
      if (strlen(tok + 4) >= sizeof f->def)
        die("default too long");
      snprintf(f->def, sizeof f->def, "%s", tok + 4);
    } else
      die("unknown attribute '%s'", tok);
  }
  if (nullv)
    parse_range(nullv, f->vlo, f->vhi, &f->nlo, &f->nhi);
  if ((f->tag >= 0) != (tagv != NULL))
    die("tag= and tagv= go together");
  if (tagv)
    parse_range(tagv, f->vlo, f->vhi, &f->tlo, &f->thi);
  if (!strncmp(type, "[]", 2)) {
    f->type = T_ARRAY;
    f->elem = type_code(type + 2);
    if (!f->elem) {
      if (!is_ident(type + 2))
        die("bad struct name '%s'", type + 2);
      f->elem = T_STRUCT;
      f->sub = new_struct(s->api, type + 2, f->vlo, f->vhi);
    } else if (f->elem == T_RECORDS)
      die("an array of records is not a Kafka type");
  } else {
    f->type = type_code(type);
    if (!f->type)
      die("unknown type '%s'", type);
  }
  if (f->nlo != NOVER && f->type != T_ARRAY && f->type != T_STRING && f->type != T_BYTES &&
      f->type != T_RECORDS)
    die("only strings, bytes, records and arrays can be nullable");
  if (!strcmp(f->def, "null") && f->nlo == NOVER)
    die("default null for a field that is never nullable");
  return f;
}

static void parse_file(const char *path) {
  FILE *fp = fopen(path, "r");
  if (!fp) {
    fprintf(stderr, "tarn-kgen: %s: %s\n", path, strerror(errno));
    exit(1);
  }
  cur_file = path, cur_line = 0;
  char buf[512];
  int api = -1;
  kstruct *stack[16];
  int depth = -1; /* indentation level of stack[depth]'s fields is depth + 1 */
  kfield *last = NULL;
  while (fgets(buf, sizeof buf, fp)) {
    cur_line++;
    char *hash = strchr(buf, '#');
    if (hash)
      *hash = 0;
    size_t n = strlen(buf);
    while (n && isspace((unsigned char)buf[n - 1]))
      buf[--n] = 0;
    if (!n)
      continue;
    size_t ind = 0;
    while (buf[ind] == ' ')
      ind++;
    if (buf[ind] == '\t' || ind % 2)
      die("indent with two spaces per level");
    int level = (int)(ind / 2);
    char *line = buf + ind;
    if (level == 0) {
      last = NULL;
      if (!strncmp(line, "api ", 4)) {
        if (api >= 0)
          die("one api per file");
        if (napis == MAXA)
          die("too many apis");
        kapi *a = &apis[napis];
        char vers[32], flex[32];
        if (sscanf(line, "api %63s %d %63s versions=%31s flexible=%31s", a->snake, &a->key, a->name,
                   vers, flex) != 5)
          die("api line: api SNAKE KEY Name versions=A-B flexible=N+|none");
        if (!is_ident(a->snake) || a->key < 0 || a->key > 0x7fff)
          die("bad api name or key");
        for (int i = 0; i < napis; i++)
          if (apis[i].key == a->key || !strcmp(apis[i].snake, a->snake))
            die("api %s declared twice", a->snake);
        parse_range(vers, 0, ALLHI, &a->vlo, &a->vhi);
        if (!strcmp(flex, "none"))
          a->flex = ALLHI;
        else {
          int fhi;
          parse_range(flex, 0, ALLHI, &a->flex, &fhi);
          if (fhi != ALLHI)
            die("flexible versions are N+");
        }
        upper_of(a->snake, a->upper, sizeof a->upper);
        api = napis++;
      } else if (!strcmp(line, "request") || !strcmp(line, "response")) {
        if (api < 0)
          die("request/response before the api line");
        int resp = line[2] == 's';
        if (resp ? apis[api].resp != NULL : apis[api].req != NULL)
          die("%s declared twice", line);
        kstruct *s = new_struct(api, resp ? "resp" : "req", apis[api].vlo, apis[api].vhi);
        if (resp)
          apis[api].resp = s;
        else
          apis[api].req = s;
        stack[0] = s, depth = 0;
      } else
        die("expected api, request or response");
      continue;
    }
    if (depth < 0)
      die("a field outside request/response");
    if (level > depth + 1) {
      /* The first field of the struct the previous line opened. */
      if (level != depth + 2 || !last || !last->sub)
        die("indented under a field that is not an array of structs");
      if (depth + 1 >= (int)(sizeof stack / sizeof stack[0]))
        die("nested too deep");
      stack[++depth] = last->sub;
    }
    while (level < depth + 1)
      depth--;
    kstruct *s = stack[depth];
    int plo = s->vlo, phi = s->vhi;
    last = parse_field(s, line, plo, phi);
  }
  fclose(fp);
  if (api < 0 || !apis[api].req || !apis[api].resp)
    die("a file declares one api with a request and a response");
}

static void check_struct(kstruct *s) {
  cur_line = 0;
  if (!s->nf && strcmp(s->kname, "req") && strcmp(s->kname, "resp"))
    die("struct %s has no fields", s->cname);
  int last_tag = -1;
  for (int i = 0; i < s->nf; i++) {
    kfield *f = &s->f[i];
    cur_line = f->line;
    if (f->type == T_ARRAY && f->elem == T_STRUCT && !f->sub->nf)
      die("array %s of a struct without fields", f->name);
    if (f->tag >= 0) {
      /* The encoder writes tagged fields in declaration order; Kafka wants them ascending. */
      if (f->tag <= last_tag)
        die("tags must be declared in ascending order");
      last_tag = f->tag;
    }
  }
}

/* Structs are emitted children first, so each is complete where it is used. */
static void emit_struct_h(FILE *h, kstruct *s) {
  for (int i = 0; i < s->nf; i++)
    if (s->f[i].sub)
      emit_struct_h(h, s->f[i].sub);
  fprintf(h, "typedef struct %s {\n", s->cname);
  for (int i = 0; i < s->nf; i++) {
    kfield *f = &s->f[i];
    if (f->type == T_ARRAY)
      fprintf(h, "  struct {\n    int32_t n;\n    %s *v;\n  } %s;\n",
              f->elem == T_STRUCT ? f->sub->cname : ctype_of(f->elem), f->name);
    else if (f->type == T_UUID)
      fprintf(h, "  uint8_t %s[16];\n", f->name);
    else
      fprintf(h, "  %s %s;\n", ctype_of(f->type), f->name);
  }
  if (!s->nf)
    fprintf(h, "  char unused_; /* no fields at any version */\n");
  fprintf(h, "} %s;\n\n", s->cname);
}

static void emit_default(FILE *c, kfield *f) {
  const char *d = f->def;
  long long idef = 0;
  const char *sdef = "\"\"";
  char sbuf[80];
  int null_def = 0;
  if (!*d) {
  } else if (!strcmp(d, "null")) {
    null_def = 1;
  } else if (!strcmp(d, "true")) {
    if (f->type != 1)
      die("default true for a non-bool %s", f->name);
    idef = 1;
  } else if (!strcmp(d, "false")) {
    if (f->type != 1)
      die("default false for a non-bool %s", f->name);
  } else if (d[0] == '"') {
    size_t n = strlen(d);
    if (n < 2 || d[n - 1] != '"' || f->type != T_STRING)
      die("a quoted default is for strings: %s", f->name);
    snprintf(sbuf, sizeof sbuf, "%s", d);
    sdef = sbuf;
  } else {
    char *end;
    errno = 0;
    idef = strtoll(d, &end, 0);
    if (*end || errno || f->type < 2 || f->type > 10)
      die("bad default '%s' for %s", d, f->name);
  }
  fprintf(c, ", %lldLL, %lld.0, %s, %d}", idef, idef, sdef, null_def);
}

static void emit_struct_c(FILE *c, kstruct *s) {
  for (int i = 0; i < s->nf; i++)
    if (s->f[i].sub)
      emit_struct_c(c, s->f[i].sub);
  if (s->nf) {
    fprintf(c, "static const tarn__kfield f_%s[] = {\n", s->cname);
    for (int i = 0; i < s->nf; i++) {
      kfield *f = &s->f[i];
      cur_line = f->line;
      fprintf(c, "  {\"%s\", %s, %s, {%d, %d}, {%d, %d}, {%d, %d}, %d, offsetof(%s, %s), %s%s",
              f->name, kt_of(f->type), f->type == T_ARRAY ? kt_of(f->elem) : "0", f->vlo, f->vhi,
              f->nlo, f->nhi, f->tlo, f->thi, f->tag, s->cname, f->name, f->sub ? "&s_" : "NULL",
              f->sub ? f->sub->cname : "");
      emit_default(c, f);
      fprintf(c, ",\n");
    }
    fprintf(c, "};\n");
  }
  fprintf(c, "static const tarn__kstruct s_%s = {\"%s\", sizeof(%s), %d, %s%s};\n\n", s->cname,
          s->kname, s->cname, s->nf, s->nf ? "f_" : "NULL", s->nf ? s->cname : "");
}

static int by_key(const void *a, const void *b) {
  return ((const kapi *)a)->key - ((const kapi *)b)->key;
}

int main(int argc, char **argv) {
  if (argc < 4) {
    fprintf(stderr, "usage: tarn-kgen OUT.h OUT.c DEF.kdef...\n");
    return 2;
  }
  for (int i = 3; i < argc; i++)
    parse_file(argv[i]);
  cur_file = "(all)";
  for (int i = 0; i < nstructs; i++)
    check_struct(&structs[i]);
  /* Sorting moves kapi entries only; their structs stay where they are. */
  qsort(apis, (size_t)napis, sizeof apis[0], by_key);

  FILE *h = fopen(argv[1], "w"), *c = fopen(argv[2], "w");
  if (!h || !c) {
    fprintf(stderr, "tarn-kgen: cannot write %s / %s\n", argv[1], argv[2]);
    return 1;
  }
  fprintf(h, "/* Generated by tarn-kgen from src/kafka/proto/defs: do not edit. */\n"
             "#ifndef TARN_KAFKA_PROTO_KPROTO_MSGS_H\n#define TARN_KAFKA_PROTO_KPROTO_MSGS_H\n\n"
             "enum {\n");
  for (int i = 0; i < napis; i++)
    fprintf(h, "  TARN__KAPI_%s = %d,\n", apis[i].upper, apis[i].key);
  fprintf(h, "};\n\n");
  for (int i = 0; i < napis; i++) {
    emit_struct_h(h, apis[i].req);
    emit_struct_h(h, apis[i].resp);
  }
  fprintf(h, "#endif\n");

  fprintf(c, "/* Generated by tarn-kgen from src/kafka/proto/defs: do not edit. */\n"
             "#include <stddef.h>\n\n#include \"kafka/proto/kproto.h\"\n"
             "#include \"kafka/proto/kproto_desc.h\"\n\n");
  for (int i = 0; i < napis; i++) {
    emit_struct_c(c, apis[i].req);
    emit_struct_c(c, apis[i].resp);
  }
  fprintf(c, "const tarn__kmsgdesc tarn__kproto_msgs[] = {\n");
  for (int i = 0; i < napis; i++)
    fprintf(c, "  {%d, %d, %d, %d, \"%s\", &s_%s, &s_%s},\n", apis[i].key, apis[i].vlo, apis[i].vhi,
            apis[i].flex, apis[i].name, apis[i].req->cname, apis[i].resp->cname);
  fprintf(c, "};\nconst size_t tarn__kproto_nmsgs = %d;\n\n", napis);
  fprintf(c, "const tarn__kapi_range tarn__kproto_ranges[] = {\n");
  for (int i = 0; i < napis; i++)
    fprintf(c, "  {%d, %d, %d, %d, \"%s\"},\n", apis[i].key, apis[i].vlo, apis[i].vhi, apis[i].flex,
            apis[i].name);
  fprintf(c, "};\n");
  if (fclose(h) || fclose(c)) {
    fprintf(stderr, "tarn-kgen: write failed\n");
    return 1;
  }
  return 0;
}
