// Writes Parquet files with DuckDB in many layouts into DIR, each with the
// payloads DuckDB itself reads back in DIR/<name>.expect, for tarn's reader:
// every codec DuckDB writes, dictionary and plain pages, small row groups,
// and version 2 files (data page v2, DELTA_LENGTH_BYTE_ARRAY), payload
// optional and required, and a file with other columns beside payload.
import { DuckDBInstance } from '@duckdb/node-api';
import { writeExpect } from './common.mjs';

const dir = process.argv[2];
const db = await DuckDBInstance.create(':memory:');
const con = await db.connect();
const lit = (s) => `'${s.replace(/'/g, "''")}'`;

// Binary payloads of every byte value (unhex of md5 strings), nulls, empties.
await con.run(`CREATE TABLE varied AS SELECT CASE WHEN i % 7 = 3 THEN NULL
  ELSE unhex(repeat(md5(i::VARCHAR), (i % 41)::INT)) END AS payload FROM range(10000) r(i)`);
// Few distinct payloads: DuckDB writes these with a dictionary.
await con.run(`CREATE TABLE repeated AS SELECT CASE WHEN i % 5 = 4 THEN NULL
  ELSE unhex(repeat(md5((i % 9)::VARCHAR), (i % 3)::INT + 1)) END AS payload FROM range(10000) r(i)`);
await con.run(`CREATE TABLE required (payload BLOB NOT NULL)`);
await con.run(`INSERT INTO required SELECT unhex(md5(i::VARCHAR)) FROM range(3000) r(i)`);
await con.run(`CREATE TABLE wide AS SELECT i AS id, 'x' || i AS label,
  CASE WHEN i % 4 = 0 THEN NULL ELSE unhex(md5(i::VARCHAR)) END AS payload FROM range(5000) r(i)`);
// Large payloads, one per row, across several pages.
await con.run(`CREATE TABLE large AS SELECT unhex(repeat(md5(i::VARCHAR), 4000)) AS payload FROM range(40) r(i)`);

const layouts = [];
for (const codec of ['uncompressed', 'snappy', 'gzip', 'zstd', 'lz4_raw']) {
  for (const version of ['V1', 'V2']) {
    layouts.push({ table: 'varied', codec, version, rg: 2048 });
    layouts.push({ table: 'repeated', codec, version, rg: 4096 });
  }
}
layouts.push({ table: 'required', codec: 'zstd', version: 'V1', rg: 100000 });
layouts.push({ table: 'required', codec: 'snappy', version: 'V2', rg: 100000 });
layouts.push({ table: 'wide', codec: 'snappy', version: 'V1', rg: 2048 });
layouts.push({ table: 'large', codec: 'zstd', version: 'V1', rg: 100000 });
layouts.push({ table: 'large', codec: 'uncompressed', version: 'V2', rg: 100000 });
// Dictionary off: a ratio threshold no column meets, where this DuckDB has the option.
layouts.push({ table: 'repeated', codec: 'snappy', version: 'V1', rg: 4096, extra: 'DICTIONARY_SIZE_LIMIT 1' });

for (const l of layouts) {
  const name = `duckdb-${l.table}-${l.codec}-${l.version.toLowerCase()}-${l.rg}${l.extra ? '-nodict' : ''}`;
  const path = `${dir}/${name}.parquet`;
  const opts = [`FORMAT parquet`, `COMPRESSION ${l.codec}`, `ROW_GROUP_SIZE ${l.rg}`,
                `PARQUET_VERSION ${l.version}`, `KV_METADATA {entrySerDeType: 'KAFKA_BATCHED_RAW_PARQUET'}`];
  if (l.extra) opts.push(l.extra);
  await con.run(`COPY (SELECT * FROM ${l.table}) TO ${lit(path)} (${opts.join(', ')})`);
  const rows = (await con.runAndReadAll(
    `SELECT payload FROM read_parquet(${lit(path)}, file_row_number = true) ORDER BY file_row_number`)).getRowObjects();
  writeExpect(`${dir}/${name}.expect`, rows.map((r) => (r.payload === null ? null : r.payload.bytes)));
  const meta = (await con.runAndReadAll(`SELECT count(DISTINCT row_group_id) AS groups,
      string_agg(DISTINCT encodings, ',') AS enc FROM parquet_metadata(${lit(path)}) WHERE path_in_schema = 'payload'`)).getRowObjects();
  console.log(`wrote ${name}: ${rows.length} rows, ${meta[0].groups} row groups, ${meta[0].enc}`);
}
