// The DuckDB baseline of bench/bench_parquet.c: loads the payloads of RAWFILE
// (entries of ENTRY bytes each) into a table, then times COPY to a Parquet file
// with CODEC and a read_parquet of every payload back. Prints JSON seconds.
import { DuckDBInstance } from '@duckdb/node-api';
import { readFileSync, rmSync } from 'node:fs';

const [raw, entry, codec, out] = [process.argv[2], Number(process.argv[3]), process.argv[4], process.argv[5]];
const bytes = readFileSync(raw);
const db = await DuckDBInstance.create(':memory:', { threads: '1' });
const con = await db.connect();
await con.run('CREATE TABLE t (payload BLOB)');
const app = await con.createAppender('t');
for (let off = 0; off + entry <= bytes.length; off += entry) {
  app.appendBlob(bytes.subarray(off, off + entry));
  app.endRow();
}
app.closeSync();
let t = performance.now();
await con.run(`COPY t TO '${out}' (FORMAT parquet, COMPRESSION ${codec})`);
const write = (performance.now() - t) / 1000;
t = performance.now();
const r = await con.runAndReadAll(`SELECT sum(octet_length(payload))::BIGINT AS n FROM read_parquet('${out}')`);
const read = (performance.now() - t) / 1000;
rmSync(out);
console.log(JSON.stringify({ write_seconds: write, read_seconds: read, bytes: Number(r.getRowObjects()[0].n) }));
