#!/usr/bin/env bash
# KafkaJS 2.2.4 (npm, a pure-JS client: its own codecs, its own choice of
# versions from ApiVersions) against tarn serve --kafka-listen on the embedded
# default: the admin client's calls as an operator or a UI makes them, each
# checked for its effect (issue 37, "Proof with clients written by others"):
# describeCluster (the deployment's cluster ID, the node), createTopics with
# configs (and a bad config refused: INVALID_CONFIG), listTopics,
# fetchTopicMetadata, describeConfigs (the topic's value DYNAMIC_TOPIC_CONFIG,
# a default DEFAULT_CONFIG), alterConfigs (seen by the next describe),
# createPartitions, fetchTopicOffsets, deleteTopicRecords (the log start moves;
# a consumer reads from there), a consumer group's offsets (fetchOffsets,
# setOffsets, resetOffsets), listGroups, describeGroups, deleteGroups,
# deleteTopics. KafkaJS is installed by TARN_WITH_NPM=1 scripts/install-deps.sh
# into tests/interop; without it the test skips (77), except in CI.
. "$(dirname "$0")/lib.sh"
interop=$(cd "$(dirname "$0")/../interop" && pwd)
if [ ! -d "$interop/node_modules/kafkajs" ] || ! command -v node > /dev/null; then
  [ "${CI:-}" = true ] && fail "kafkajs is not installed (TARN_WITH_NPM=1 scripts/install-deps.sh)"
  echo "kafkajs is not installed (TARN_WITH_NPM=1 scripts/install-deps.sh)" >&2
  exit 77
fi
export TARN_HOME="$dir/home"
unset TARN_META TARN_WAL TARN_COMPACTED
"$TARN" init > /dev/null
serve_start "$dir/log" --listen 127.0.0.1:0 --kafka-listen 127.0.0.1:0 --kafka-batch-ms 20 \
  --no-compact --no-reclaim --no-wal-gc
cid=$(grep -a -o 'cluster_id=[^ ]*' "$dir/log" | head -1 | cut -d= -f2)
[ -n "$cid" ] || fail "no cluster id logged: $(cat "$dir/log")"

cat > "$dir/admin.mjs" << 'EOF2'
import { createRequire } from "module";
const require = createRequire(process.env.INTEROP + "/");
const { Kafka, ConfigResourceTypes, ConfigSource, logLevel } = require("kafkajs");
const assert = (c, m) => { if (!c) { throw new Error("assertion failed: " + m); } };
const eq = (a, b, m) => assert(JSON.stringify(a) === JSON.stringify(b),
  `${m}: ${JSON.stringify(a)} != ${JSON.stringify(b)}`);
const kafka = new Kafka({ clientId: "kjs-admin", brokers: [process.env.BOOT],
  logLevel: logLevel.NOTHING, retry: { retries: 3 } });
const admin = kafka.admin();
await admin.connect();

const cl = await admin.describeCluster();
eq(cl.clusterId, process.env.CID, "describeCluster clusterId");
eq(cl.brokers.length, 1, "one node");
assert(cl.controller !== null && cl.controller !== undefined, "a controller");

// createTopics: configs kept; a bad value refused as Kafka does
assert(await admin.createTopics({ waitForLeaders: true, topics: [{ topic: "kj",
  numPartitions: 2, configEntries: [{ name: "retention.ms", value: "86400000" }] }] }),
  "createTopics created");
let bad = null;
try {
  await admin.createTopics({ topics: [{ topic: "kj-bad", numPartitions: 1,
    configEntries: [{ name: "retention.ms", value: "banana" }] }] });
} catch (e) { bad = e; }
assert(bad && JSON.stringify(bad.errors || bad.message).includes("INVALID_CONFIG"),
  "bad config refused: " + (bad && JSON.stringify(bad.errors || bad.message)));
const topics = await admin.listTopics();
assert(topics.includes("kj") && !topics.includes("kj-bad"), "listTopics: " + topics);
const md = await admin.fetchTopicMetadata({ topics: ["kj"] });
eq(md.topics[0].partitions.length, 2, "two partitions");

// describeConfigs, alterConfigs
const desc = async () => {
  const r = await admin.describeConfigs({ includeSynonyms: false, resources: [{
    type: ConfigResourceTypes.TOPIC, name: "kj" }] });
  eq(r.resources[0].errorCode, 0, "describeConfigs errorCode");
  return Object.fromEntries(r.resources[0].configEntries.map((c) => [c.configName, c]));
};
let c = await desc();
eq(c["retention.ms"].configValue, "86400000", "retention.ms value");
eq(c["retention.ms"].configSource, ConfigSource.TOPIC_CONFIG, "retention.ms source");
eq(c["cleanup.policy"].configValue, "delete", "cleanup.policy default");
eq(c["cleanup.policy"].configSource, ConfigSource.DEFAULT_CONFIG, "cleanup.policy source");
await admin.alterConfigs({ validateOnly: false, resources: [{ type: ConfigResourceTypes.TOPIC,
  name: "kj", configEntries: [{ name: "retention.bytes", value: "1048576" }] }] });
c = await desc();
eq(c["retention.bytes"].configValue, "1048576", "altered retention.bytes");

// createPartitions
await admin.createPartitions({ topicPartitions: [{ topic: "kj", count: 3 }] });
eq((await admin.fetchTopicMetadata({ topics: ["kj"] })).topics[0].partitions.length, 3,
  "three partitions");

// records, then deleteTopicRecords moves the log start
const producer = kafka.producer();
await producer.connect();
for (let i = 0; i < 10; i++) {
  await producer.send({ topic: "kj", messages: [{ partition: 0, key: "k" + i, value: "v" + i }] });
}
await producer.disconnect();
let offs = await admin.fetchTopicOffsets("kj");
const p0 = offs.find((o) => o.partition === 0);
eq([p0.low, p0.high], ["0", "10"], "partition 0 offsets");
await admin.deleteTopicRecords({ topic: "kj", partitions: [{ partition: 0, offset: "4" }] });
offs = await admin.fetchTopicOffsets("kj");
eq(offs.find((o) => o.partition === 0).low, "4", "log start after deleteTopicRecords");

// a group: consume from the start (which is now 4), commit, then the
// offset calls; describe, list, delete
const consumer = kafka.consumer({ groupId: "kjg", sessionTimeout: 10000 });
await consumer.connect();
await consumer.subscribe({ topic: "kj", fromBeginning: true });
const seen = [];
await new Promise((resolve, reject) => {
  const t = setTimeout(() => reject(new Error("consumed only " + seen)), 30000);
  consumer.run({ eachMessage: async ({ partition, message }) => {
    if (partition === 0) { seen.push(Number(message.offset)); }
    if (seen.length === 6) { clearTimeout(t); resolve(); }
  } });
});
eq(seen, [4, 5, 6, 7, 8, 9], "consumed from the new log start");
const groups = (await admin.listGroups()).groups.map((g) => g.groupId);
assert(groups.includes("kjg"), "listGroups: " + groups);
let dg = await admin.describeGroups(["kjg"]);
eq(dg.groups[0].state, "Stable", "describeGroups state");
eq(dg.groups[0].members.length, 1, "one member");
await consumer.disconnect();
let fo = await admin.fetchOffsets({ groupId: "kjg", topics: ["kj"] });
eq(fo[0].partitions.find((p) => p.partition === 0).offset, "10", "committed offset");
await admin.setOffsets({ groupId: "kjg", topic: "kj", partitions: [{ partition: 0, offset: "7" }] });
fo = await admin.fetchOffsets({ groupId: "kjg", topics: ["kj"] });
eq(fo[0].partitions.find((p) => p.partition === 0).offset, "7", "setOffsets");
await admin.resetOffsets({ groupId: "kjg", topic: "kj", earliest: true });
fo = await admin.fetchOffsets({ groupId: "kjg", topics: ["kj"] });
// KafkaJS commits its EARLIEST marker itself (-2), which Kafka stores as given
eq(fo[0].partitions.find((p) => p.partition === 0).offset, "-2", "resetOffsets earliest");
dg = await admin.describeGroups(["kjg"]);
eq(dg.groups[0].state, "Empty", "describeGroups after the consumer left");
await admin.deleteGroups(["kjg"]);
dg = await admin.describeGroups(["kjg"]);
eq(dg.groups[0].state, "Dead", "deleted group");

await admin.deleteTopics({ topics: ["kj"] });
assert(!(await admin.listTopics()).includes("kj"), "deleteTopics");
await admin.disconnect();
console.log("kafkajs admin: ok");
EOF2
INTEROP="$interop" BOOT="127.0.0.1:$kport" CID="$cid" timeout 120 node "$dir/admin.mjs" \
  > "$dir/out" 2> "$dir/err" || fail "kafkajs admin: $(cat "$dir/out" "$dir/err")"
grepq "kafkajs admin: ok" "$dir/out" || fail "$(cat "$dir/out")"
stop_term "$pid"
echo ok
