// Shared by the interop scripts: the .expect format that tarn's test and
// these scripts exchange, and the footer keys of a compacted file.
import { readFileSync, writeFileSync } from 'node:fs';

// .expect: per row, one byte (0 null, 1 value), then for a value a 4-byte
// little-endian length and the bytes.
export function readExpect(path) {
  const b = readFileSync(path);
  const rows = [];
  for (let off = 0; off < b.length;) {
    const flag = b[off++];
    if (flag === 0) { rows.push(null); continue; }
    const n = b.readUInt32LE(off);
    off += 4;
    rows.push(b.subarray(off, off + n));
    off += n;
  }
  return rows;
}

export function writeExpect(path, rows) {
  const parts = [];
  for (const r of rows) {
    if (r === null || r === undefined) { parts.push(Buffer.from([0])); continue; }
    const h = Buffer.alloc(5);
    h[0] = 1;
    h.writeUInt32LE(r.length, 1);
    parts.push(h, Buffer.from(r));
  }
  writeFileSync(path, Buffer.concat(parts));
}

export const AVRO_SCHEMA =
  '{"type":"record","name":"KafkaMessage","fields":[{"name":"payload","type":["null","bytes"],"default":null}]}';

// The footer keys tarn writes for the Kafka binding (tables-and-vectors.md §3.6).
export function expectedKeys(file) {
  return {
    entrySerDeType: 'KAFKA_BATCHED_RAW_PARQUET',
    rowMetadata: file.replace(/^.*\//, '').replace(/\.parquet$/, '.index'),
    schemaType: 'avro',
    'parquet.avro.schema': AVRO_SCHEMA,
    'writer.model.name': 'avro',
  };
}

let failures = 0;
export function check(ok, what) {
  if (!ok) {
    failures++;
    console.error(`FAIL: ${what}`);
  }
  return ok;
}
export function failed() { return failures; }

export function sameRows(got, want, who, file) {
  if (!check(got.length === want.length, `${who}: ${file}: ${got.length} rows, expected ${want.length}`))
    return;
  for (let i = 0; i < want.length; i++) {
    const g = got[i], w = want[i];
    if (w === null) {
      if (!check(g === null || g === undefined, `${who}: ${file}: row ${i} should be null`)) return;
    } else if (!check(g !== null && g !== undefined && Buffer.compare(Buffer.from(g), w) === 0,
                      `${who}: ${file}: row ${i} differs (${g === null ? 'null' : g?.length} bytes, expected ${w.length})`)) {
      return;
    }
  }
}
