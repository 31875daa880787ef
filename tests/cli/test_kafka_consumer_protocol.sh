#!/usr/bin/env bash
# KIP-848 consumer groups (issue 37) with a client written by others:
# kafka-ts 1.5.0 (npm, pure TypeScript, group.protocol "consumer": it speaks
# ConsumerGroupHeartbeat v0/v1 and commits with its member epoch) against
# tarn serve --kafka-listen on the embedded default. Two consumers of one
# group over a 6-partition topic get disjoint assignments that cover every
# partition (ConsumerGroupDescribe reports the group Stable with both,
# ListGroups v5 its type "consumer" and filters by type); they
# consume every record produced exactly once between them; one leaves and the
# other takes all six; a third consumer of the group after both left starts
# at the committed offsets (it reads only what was produced after). kafka-ts
# is installed by TARN_WITH_NPM=1 scripts/install-deps.sh into tests/interop;
# without it the test skips (77), except in CI.
. "$(dirname "$0")/lib.sh"
interop=$(cd "$(dirname "$0")/../interop" && pwd)
if [ ! -d "$interop/node_modules/kafka-ts" ] || ! command -v node > /dev/null; then
  [ "${CI:-}" = true ] && fail "kafka-ts is not installed (TARN_WITH_NPM=1 scripts/install-deps.sh)"
  echo "kafka-ts is not installed (TARN_WITH_NPM=1 scripts/install-deps.sh)" >&2
  exit 77
fi
export TARN_HOME="$dir/home"
unset TARN_META TARN_WAL TARN_COMPACTED
"$TARN" init > /dev/null
# group.consumer.heartbeat.interval.ms 300: each reconciliation step is a
# heartbeat, so the test's handovers take a second, not Kafka's 5 s steps
serve_start "$dir/log" --listen 127.0.0.1:0 --kafka-listen 127.0.0.1:0 --kafka-batch-ms 20 \
  --kafka-consumer-heartbeat-ms 300 --no-compact --no-reclaim --no-wal-gc

cat > "$dir/kip848.mjs" << 'EOF2'
import { createRequire } from "module";
const require = createRequire(process.env.INTEROP + "/");
const { createKafkaClient, API, setLogger } = require("kafka-ts");
const quiet = { debug() {}, info() {}, warn() {}, error() {} };
if (setLogger && !process.env.KTS_DEBUG) setLogger(quiet);
const assert = (c, m) => { if (!c) { throw new Error("assertion failed: " + m); } };
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const until = async (what, f, ms = 15000) => {
  const end = Date.now() + ms;
  while (!(await f())) {
    if (Date.now() > end) throw new Error("timed out: " + what());
    await sleep(100);
  }
};
const [host, port] = process.env.BOOT.split(":");
const kafka = createKafkaClient({ clientId: "kts", bootstrapServers: [{ host, port: +port }] });
const cluster = kafka.createCluster();
await cluster.connect();
await cluster.sendRequest(API.CREATE_TOPICS, { validateOnly: false, timeoutMs: 10000,
  topics: [{ name: "kt", numPartitions: 6, replicationFactor: 1, assignments: [], configs: [] }] });

const seen = new Map(); // value -> consumer names that got it
const consumer = (name) => kafka.startConsumer({ groupId: "ktg", topics: ["kt"],
  groupProtocol: "consumer", fromBeginning: true, maxWaitMs: 300,
  onBatch: async (ms) => { for (const m of ms) {
    const v = m.value.toString();
    seen.set(v, [...(seen.get(v) || []), name]);
  } } });
const parts = (c) => (c.metadata.getAssignment()["kt"] || []).slice().sort((a, b) => a - b);
const producer = kafka.createProducer({});
const produce = async (tag, n) => {
  const msgs = [];
  for (let i = 0; i < n; i++) msgs.push({ topic: "kt", partition: i % 6, value: Buffer.from(tag + i) });
  await producer.send(msgs);
};
const got = (tag, n) => { let k = 0; for (let i = 0; i < n; i++) k += seen.has(tag + i); return k; };
const once = () => [...seen.entries()].filter(([, who]) => who.length !== 1);

const c1 = await consumer("c1");
const c2 = await consumer("c2");
// disjoint assignments that cover all six partitions, and the group Stable
await until(() => `c1 ${parts(c1)} c2 ${parts(c2)}`, () => {
  const a = parts(c1), b = parts(c2);
  return a.length && b.length && a.length + b.length === 6 &&
    new Set([...a, ...b]).size === 6 && Math.abs(a.length - b.length) <= 1;
});
const desc = async () => (await cluster.sendRequest(API.CONSUMER_GROUP_DESCRIBE,
  { groupIds: ["ktg"], includeAuthorizedOperations: false })).groups[0];
await until(() => "describe not Stable", async () => (await desc()).groupState === "Stable");
const d = await desc();
assert(d.members.length === 2 && d.assignorName === "uniform", "describe: " + JSON.stringify(d));
// ListGroups v5: the group's type, and the types filter
const lg = async (typesFilter) => (await cluster.sendRequest(API.LIST_GROUPS,
  { statesFilter: [], typesFilter })).groups;
let l = await lg(["Consumer"]);
assert(l.length === 1 && l[0].groupId === "ktg" && l[0].groupType === "consumer" &&
  l[0].protocolType === "consumer", "listGroups consumer: " + JSON.stringify(l));
l = await lg(["classic"]);
assert(l.length === 0, "listGroups classic: " + JSON.stringify(l));
await produce("a", 60);
await until(() => `a: ${got("a", 60)} of 60`, () => got("a", 60) === 60);
assert(once().length === 0, "each record once: " + JSON.stringify(once()));
const byC1 = [...seen.values()].filter((w) => w[0] === "c1").length;
assert(byC1 > 0 && byC1 < 60, "both consumed: c1 " + byC1);

// c2 leaves: c1 takes every partition
await c2.close();
await until(() => `c1 ${parts(c1)}`, () => parts(c1).length === 6);
await produce("b", 30);
await until(() => `b: ${got("b", 30)} of 30`, () => got("b", 30) === 30);
assert(once().length === 0, "each record once after the leave: " + JSON.stringify(once()));
await sleep(500);
await c1.close();

// a new member starts at the committed offsets: only what came after
await produce("c", 12);
const c3 = await consumer("c3");
await until(() => `c: ${got("c", 12)} of 12`, () => got("c", 12) === 12);
await sleep(500);
assert(once().length === 0, "committed offsets honoured: " + JSON.stringify(once()));
await c3.close();
await producer.close();
await cluster.disconnect();
console.log("kafka-ts consumer protocol: ok");
process.exit(0);
EOF2
INTEROP="$interop" BOOT="127.0.0.1:$kport" timeout 60 node "$dir/kip848.mjs" \
  > "$dir/out" 2> "$dir/err" || fail "kafka-ts: $(cat "$dir/out" "$dir/err" | tail -40)"
grepq "kafka-ts consumer protocol: ok" "$dir/out" || fail "$(cat "$dir/out")"
stop_term "$pid"
echo ok
