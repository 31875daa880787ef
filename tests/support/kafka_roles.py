"""The producer and group consumer of the Kafka failover tests
(tests/cli/test_kafka_two_nodes_kill.sh, tests/cli/kafka_failover.sh), with
confluent-kafka-python 1.7 (librdkafka 2.0.2).

produce(): n messages at ~200/s, idempotent, acks=all; each acknowledgement a
line "partition offset value" in d/acked. consume(): a group consumer that
writes "partition offset value" per message to d/consumed until d/stop exists
and nothing came for 2 s. timed=True appends the time (s) to each line and the
send time to each value ("v<i>@<time>"), for latency and pause measurements,
and writes each successful (auto-)commit to d/commits ("time p:offset ..."),
for the bound on redeliveries."""
import os
import sys
import time

from confluent_kafka import Consumer, Producer


def produce(boot, d, topic, n, timed=False, **conf):
    out = open(d + "/acked", "w")
    errors = []

    def cb(err, msg):
        if err:
            errors.append(str(err))
            return
        line = "%d %d %s" % (msg.partition(), msg.offset(), msg.value().decode())
        out.write(line + (" %.3f\n" % time.time() if timed else "\n"))
        out.flush()

    c = {"bootstrap.servers": boot, "enable.idempotence": True, "acks": "all",
         "topic.metadata.refresh.interval.ms": 1000, "reconnect.backoff.max.ms": 500}
    c.update(conf)
    p = Producer(c)
    for i in range(n):
        v = b"v%d@%.3f" % (i, time.time()) if timed else b"v%d" % i
        p.produce(topic, key=b"%d" % i, value=v, on_delivery=cb)
        p.poll(1 / 200)
    left = p.flush(int(c.get("message.timeout.ms", 25000)) / 1000 + 5)
    out.close()
    print("unflushed %d errors %d %s" % (left, len(errors), errors[:3]))
    sys.exit(1 if left or errors else 0)


def consume(boot, d, topic, group, timed=False):
    conf = {"bootstrap.servers": boot, "group.id": group, "auto.offset.reset": "earliest",
            "enable.auto.commit": True, "auto.commit.interval.ms": 500,
            "session.timeout.ms": 6000, "heartbeat.interval.ms": 500,
            "fetch.wait.max.ms": 100, "topic.metadata.refresh.interval.ms": 1000}
    if timed:  # each successful commit: "time p:offset ..." in d/commits
        commits = open(d + "/commits", "w")

        def on_commit(err, parts):
            ok = ["%d:%d" % (p.partition, p.offset) for p in parts if not p.error and p.offset >= 0]
            if err is None and ok:
                commits.write("%.3f %s\n" % (time.time(), " ".join(ok)))
                commits.flush()
        conf["on_commit"] = on_commit
    c = Consumer(conf)
    c.subscribe([topic])
    out = open(d + "/consumed", "w")
    idle = None
    while True:
        m = c.poll(0.2)
        if m is None or m.error():
            if os.path.exists(d + "/stop"):
                idle = idle or time.time()
                if time.time() - idle > 2:
                    break
            continue
        idle = None
        line = "%d %d %s" % (m.partition(), m.offset(), m.value().decode())
        out.write(line + (" %.3f\n" % time.time() if timed else "\n"))
        out.flush()
    c.close()
