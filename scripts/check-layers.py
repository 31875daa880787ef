#!/usr/bin/env python3
"""The layer check (issue 32, item 5 and its acceptance): reads every
`#include "..."` in src/ and include/tarn/ and fails when an include runs from
a lower layer to a higher one, or when two concepts include each other.

Usage: scripts/check-layers.py [SOURCE_DIR]   (ctest: check_layers)
Prints each violation as  file:line: <what>  and exits 1 if there is any.

THE LAYERS, bottom to top (docs/CONTRIBUTING.md, "Layers"). A file may include
a header of its own layer or of any layer below it, never one above:

  util     src/util: errors, buffers, clock, random, metrics; usable by all
  format   src/format: the byte formats (WAL objects, Parquet, index values,
           Kafka record batches, the Kafka binding's naming rules); pure
  store    src/store: the metadata and object stores
  log      src/log: writer, reader, catalog, compaction, tasks
  express  src/express: express streams (the Epochs design), on src/log
  kafka    src/kafka (and its codecs, src/kafka/proto): the Kafka protocol.
           A Kafka topic may be an express stream (kafka/kexpress.c), so kafka
           sits on express; express never includes kafka.
  api      include/tarn/tarn.h: the whole public API in one include
  server   src/server: `tarn serve`'s node, HTTP and Kafka listeners
  cli      src/cli: the command; `tarn serve` starts the server
           (cli/cmd_serve.c), so cli sits on server, never the reverse

A file under src/DIR/ is of layer DIR. A public header include/tarn/X.h is of
the layer that implements it, listed in PUBLIC below; a header missing from
that list is a violation, so every new public header is placed on purpose.
include/tarn/testing.h (test hooks into the store, the writer and the express
writer) includes nothing of tarn and declares the handles it takes as
incomplete types, so that any layer may implement its hooks: it is util.
Generated headers (protobuf-c's *.pb-c.h, kproto_msgs.h) are not checked.

TWO-FILE CYCLES. A concept is one thing and its files: in one directory,
foo.c, foo.h, and every header foo_*.h when foo.c or foo.h exists there (the
internals or the backend interface of foo: store/meta_vfs.h,
express/xwriter_internal.h, log/appender_impl.h); a public header
include/tarn/foo.h belongs to the concept of the one src/*/foo.c, when there
is one. Every other .c file is a concept of its own (store/meta_etcd.c is a
user of meta_vfs.h, not a part of meta.c). A cycle is two concepts A != B
where a file of A includes a file of B and a file of B includes a file of A
(e.g. a.c includes b.h and b.h, or b.c, includes a.h): each needs the other,
so neither can be read, built or tested alone. Within one concept it is
allowed.
"""
import os
import re
import sys

LAYERS = ["util", "format", "store", "log", "express", "kafka", "api", "server", "cli"]
RANK = {name: i for i, name in enumerate(LAYERS)}

# include/tarn/*.h: the layer of the code that implements each.
PUBLIC = {
    "buf.h": "util",
    "error.h": "util",
    "clock.h": "util",
    "metrics.h": "util",
    "token_bucket.h": "util",
    "version.h": "util",  # generated from version.h.in
    "testing.h": "util",  # forward declarations only, see above
    "crc32c.h": "format",
    "catalog_record.h": "format",
    "companion.h": "format",
    "entryindex.h": "format",
    "fileindex.h": "format",
    "kafka.h": "format",
    "kafka_names.h": "format",
    "kafka_configs.h": "format",
    "key.h": "format",
    "offsets.h": "format",
    "parquet.h": "format",
    "trimmark.h": "format",
    "wal.h": "format",
    "meta.h": "store",
    "objstore.h": "store",
    "objstore_lat.h": "store",
    "probe.h": "store",
    "appender.h": "log",
    "catalog.h": "log",
    "compactor.h": "log",
    "deployment.h": "log",
    "fsck.h": "log",
    "kafka_topics.h": "log",
    "lease.h": "log",
    "reader.h": "log",
    "reclaim.h": "log",
    "retention.h": "log",
    "tasks.h": "log",
    "timing.h": "log",
    "token.h": "log",
    "trim.h": "log",
    "writer.h": "log",
    "express.h": "express",
    "express_fence.h": "express",
    "express_inspect.h": "express",
    "kafka_users.h": "kafka",
    "kafka_node.h": "kafka",
    "tarn.h": "api",
}

GENERATED = re.compile(r"(\.pb-c\.h|^kproto_msgs\.h)$")
INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"')


def main():
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), ".."))
    os.chdir(root)
    files = []
    for top in ("src", "include/tarn"):
        for d, _, names in os.walk(top):
            files += [os.path.join(d, n) for n in names if n.endswith((".c", ".h"))]
    files.sort()
    exists = set(files)
    problems = []

    def layer(path):
        parts = path.split("/")
        if parts[0] == "include":
            return PUBLIC.get(parts[2])
        return parts[1]

    def resolve(src, name):
        for cand in ("include/" + name if name.startswith("tarn/") else "src/" + name,
                     os.path.normpath(os.path.join(os.path.dirname(src), name))):
            if cand in exists:
                return cand
        if name == "tarn/version.h":
            return "include/tarn/version.h"
        return None

    # concepts
    stems = {}
    for f in files:
        if f.startswith("src/"):
            d, b = os.path.split(f)
            stems.setdefault(d, set()).add(os.path.splitext(b)[0])
    c_files = {}
    for f in files:
        if f.startswith("src/") and f.endswith(".c"):
            c_files.setdefault(os.path.splitext(os.path.basename(f))[0], []).append(f)

    def concept(path):
        d, b = os.path.split(path)
        stem = os.path.splitext(b)[0]
        if d == "include/tarn":
            impl = c_files.get(stem, [])
            if len(impl) != 1:
                return path
            d = os.path.dirname(impl[0])
        if b.endswith(".h"):
            parts = stem.split("_")
            for i in range(1, len(parts)):  # the shortest foo of foo_*.h that names a file here
                if "_".join(parts[:i]) in stems.get(d, ()):
                    return d + "/" + "_".join(parts[:i])
        return d + "/" + stem

    edges = {}  # (concept a, concept b) -> first (file, line, included)
    for f in files:
        fl = layer(f)
        if fl is None:
            problems.append(f"{f}:1: public header without a layer (add it to PUBLIC in scripts/check-layers.py)")
            continue
        with open(f, encoding="utf-8", errors="replace") as fh:
            for n, line in enumerate(fh, 1):
                m = INCLUDE.match(line)
                if not m:
                    continue
                name = m.group(1)
                target = resolve(f, name)
                if target is None:
                    if not GENERATED.search(os.path.basename(name)):
                        problems.append(f"{f}:{n}: includes \"{name}\", which is no file of src/ or include/")
                    continue
                tl = layer(target)
                if tl is None:
                    continue  # reported once, for the header itself
                if RANK[tl] > RANK[fl]:
                    problems.append(f"{f}:{n}: layer {fl} includes layer {tl} ({name})")
                a, b = concept(f), concept(target)
                if a != b:
                    edges.setdefault((a, b), (f, n, name))
    for (a, b), (f, n, name) in sorted(edges.items()):
        if a < b and (b, a) in edges:
            f2, n2, name2 = edges[(b, a)]
            problems.append(f"{f}:{n}: two-file cycle: {a} includes {b} ({name}) and "
                            f"{b} includes {a} ({f2}:{n2}: {name2})")
    for p in problems:
        print(p)
    if problems:
        print(f"check-layers: {len(problems)} violation(s); the rules are at the top of scripts/check-layers.py")
        return 1
    print(f"check-layers: {len(files)} files, no include upward, no two-file cycle")
    return 0


if __name__ == "__main__":
    sys.exit(main())
