#!/usr/bin/python3
"""Writes the Kafka message vectors test_kproto checks tarn's codec against.

The encoder is kafka-python 2.0.2 (Debian python3-kafka, an implementation independent of
tarn's): for every request and response class it has for the APIs tarn declares, up to
tarn's highest version, it builds a message with every field populated (arrays of two
elements, distinct values, a few nulls where Kafka allows them) and prints
    <api key> <version> <req|resp> <hex of the body>
test_kproto decodes each body with tarn's codec, re-encodes it and wants the same bytes.

    /usr/bin/python3 tests/unit/kproto_vectors.py > tests/data/kproto/vectors.txt
"""
import importlib
import inspect
import sys

from kafka.protocol import types as T

# tarn's declared ranges (src/kafka/proto/defs): only these versions are written.
SERVED = {0: 8, 1: 11, 2: 5, 3: 8, 8: 7, 9: 5, 10: 2, 11: 5, 12: 3, 13: 3, 14: 3, 15: 4,
          16: 2, 18: 3, 19: 4, 20: 3, 22: 1}

# Where kafka-python 2.0.2's schema is not Kafka's (checked against the protocol guide,
# kafka.apache.org/protocol): these are left out, with the reason written in the file.
DIVERGENT = {
    (15, 3, "resp"): "kafka-python lacks authorized_operations (int32, DescribeGroups v3+)",
    (10, 1, "resp"): "kafka-python lacks throttle_time_ms (FindCoordinator v1+)",
    (2, 4, "req"): "kafka-python has current_leader_epoch as int64, Kafka as int32",
    (2, 5, "req"): "kafka-python has current_leader_epoch as int64, Kafka as int32",
    (0, 8, "resp"): "kafka-python lacks record_errors and error_message (Produce v8)",
}

counter = [0]


def nxt():
    counter[0] += 1
    return counter[0]


def value(t, name):
    n = nxt()
    if t is T.Int8:
        return n % 100
    if t is T.Int16:
        return (n * 7) % 30000 - 1
    if t is T.Int32:
        return n * 1000003 % 2000000000 - 5
    if t is T.Int64:
        return -(n * 0x100000001)
    if t is T.Boolean:
        return n % 2 == 1
    if t is T.String or isinstance(t, T.String):
        return "%s-%d" % (name, n)
    if t is T.Bytes:
        return bytes((n + i) % 256 for i in range(n % 7 + 1))
    if isinstance(t, T.Array):
        inner = t.array_of
        return [value(inner, name) for _ in range(2)]
    if isinstance(t, T.Schema):
        return tuple(value(ft, fn) for fn, ft in zip(t.names, t.fields))
    raise TypeError("no value for %r (%s)" % (t, name))


def classes():
    for m in ("admin", "commit", "fetch", "group", "metadata", "offset", "produce"):
        mod = importlib.import_module("kafka.protocol." + m)
        for obj in vars(mod).values():
            if not (isinstance(obj, list) and obj and inspect.isclass(obj[0])):
                continue
            key = getattr(obj[0], "API_KEY", None)
            if key not in SERVED:
                continue
            for v, cls in enumerate(obj):
                if v <= SERVED[key]:
                    yield key, v, cls


def main():
    out = []
    for key, v, cls in classes():
        kind = "resp" if "Response" in cls.__name__ else "req"
        if (key, v, kind) in DIVERGENT:
            out.append("# %s v%d: left out: %s" % (cls.__name__, v, DIVERGENT[key, v, kind]))
            continue
        schema = cls.SCHEMA
        vals = [value(ft, fn) for fn, ft in zip(schema.names, schema.fields)]
        msg = cls(*vals)  # kafka-python's encode() holds only a weak reference to it
        try:
            body = msg.encode()
        except TypeError as e:
            # A few of its schemas cannot encode (String without an encoding).
            out.append("# %s v%d: kafka-python cannot encode it: %s" % (cls.__name__, v, e))
            continue
        out.append("%d %d %s %s" % (key, v, kind, body.hex()))
        # Nulls where Kafka's declarations allow them at this version.
        nulls = {"transactional_id": 3, "topics": 1 if key == 3 else 99}
        if any(fn in nulls and v >= nulls[fn] and kind == "req" for fn in schema.names):
            vals = [None if (fn in nulls and v >= nulls[fn]) else val
                    for fn, val in zip(schema.names, vals)]
            msg = cls(*vals)
            out.append("%d %d %s %s" % (key, v, kind, msg.encode().hex()))
    sys.stdout.write("# kafka-python %s vectors: tests/unit/kproto_vectors.py wrote them\n"
                     % importlib.import_module("kafka").__version__)
    sys.stdout.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
