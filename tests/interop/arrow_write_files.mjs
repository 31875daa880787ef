// Writes Parquet files with arrow-rs (parquet-wasm) into DIR, each with its
// payloads in DIR/<name>.expect, for tarn's reader: data pages v1 and v2
// (DuckDB writes no v2 data pages), every codec, dictionary on and off,
// small pages and row groups.
import { Binary, Table, tableToIPC, vectorFromArray } from 'apache-arrow';
import * as pq from 'parquet-wasm';
import { writeFileSync } from 'node:fs';
import { writeExpect } from './common.mjs';

const dir = process.argv[2];

// Deterministic payloads: nulls, empties, random bytes and repeats.
let s = 12345n;
const rand = () => {
  s = (s * 6364136223846793005n + 1442695040888963407n) & 0xffffffffffffffffn;
  return Number(s >> 33n);
};
const rows = [];
for (let i = 0; i < 5000; i++) {
  const k = rand();
  if (k % 10 === 0) { rows.push(null); continue; }
  if (k % 13 === 0) { rows.push(new Uint8Array(0)); continue; }
  if (k % 3 === 0) { rows.push(new TextEncoder().encode(`repeat-${k % 7}`)); continue; }
  const b = new Uint8Array(rand() % 300);
  for (let j = 0; j < b.length; j++) b[j] = rand() & 0xff;
  rows.push(b);
}
const table = new Table({ payload: vectorFromArray(rows, new Binary()) });
const ipc = tableToIPC(table, 'stream');

const codecs = { uncompressed: pq.Compression.UNCOMPRESSED, snappy: pq.Compression.SNAPPY,
                 gzip: pq.Compression.GZIP, zstd: pq.Compression.ZSTD, lz4_raw: pq.Compression.LZ4_RAW };
for (const [cname, codec] of Object.entries(codecs)) {
  for (const version of ['v1', 'v2']) {
    for (const dict of [true, false]) {
      const name = `arrow-${cname}-${version}-${dict ? 'dict' : 'plain'}`;
      const props = new pq.WriterPropertiesBuilder()
        .setCompression(codec)
        .setWriterVersion(version === 'v2' ? pq.WriterVersion.V2 : pq.WriterVersion.V1)
        .setDictionaryEnabled(dict)
        .setDataPageSizeLimit(4096)
        .setMaxRowGroupSize(1500)
        .setKeyValueMetadata(new Map([['entrySerDeType', 'KAFKA_BATCHED_RAW_PARQUET']]))
        .build();
      const bytes = pq.writeParquet(pq.Table.fromIPCStream(ipc), props);
      writeFileSync(`${dir}/${name}.parquet`, bytes);
      writeExpect(`${dir}/${name}.expect`, rows);
      console.log(`wrote ${name}: ${rows.length} rows, ${bytes.length} bytes`);
    }
  }
}
