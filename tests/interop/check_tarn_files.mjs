// Reads every tarn-written DIR/*.parquet with DuckDB, arrow-rs (parquet-wasm,
// through apache-arrow) and hyparquet, and checks the payloads against
// DIR/*.expect byte for byte (nulls included), the schema (an optional
// BYTE_ARRAY payload under the record KafkaMessage), the five footer keys and
// the codec named by the file's first word. Exit 1 on any difference.
import { readdirSync, readFileSync } from 'node:fs';
import { DuckDBInstance } from '@duckdb/node-api';
import { readParquet } from 'parquet-wasm';
import { tableFromIPC } from 'apache-arrow';
import { parquetMetadata, parquetReadObjects } from 'hyparquet';
import { check, expectedKeys, failed, readExpect, sameRows } from './common.mjs';

const dir = process.argv[2];
const files = readdirSync(dir).filter((f) => f.endsWith('.parquet')).sort();
check(files.length > 0, `no .parquet files in ${dir}`);

const db = await DuckDBInstance.create(':memory:');
const con = await db.connect();
const q = async (sql) => (await con.runAndReadAll(sql)).getRowObjects();
const lit = (s) => `'${s.replace(/'/g, "''")}'`;

for (const name of files) {
  const path = `${dir}/${name}`;
  const want = readExpect(path.replace(/\.parquet$/, '.expect'));
  const keys = expectedKeys(path);
  const codec = name.split('-')[0].toUpperCase();

  // DuckDB
  const rows = await q(`SELECT payload FROM read_parquet(${lit(path)}, file_row_number = true) ORDER BY file_row_number`);
  sameRows(rows.map((r) => (r.payload === null ? null : r.payload.bytes)), want, 'duckdb', name);
  const schema = await q(`SELECT name, type, repetition_type, num_children FROM parquet_schema(${lit(path)})`);
  check(schema.length === 2 && schema[0].name === 'KafkaMessage' && Number(schema[0].num_children) === 1,
        `duckdb: ${name}: root ${JSON.stringify(schema[0], (k, v) => (typeof v === 'bigint' ? Number(v) : v))}`);
  check(schema[1]?.name === 'payload' && schema[1]?.type === 'BYTE_ARRAY' && schema[1]?.repetition_type === 'OPTIONAL',
        `duckdb: ${name}: payload column ${JSON.stringify(schema[1], (k, v) => (typeof v === 'bigint' ? Number(v) : v))}`);
  const desc = await q(`DESCRIBE SELECT * FROM read_parquet(${lit(path)})`);
  check(desc.length === 1 && desc[0].column_type === 'BLOB' && desc[0].null === 'YES',
        `duckdb: ${name}: column type ${desc[0]?.column_type}`);
  const kv = await q(`SELECT decode(key) AS k, decode(value) AS v FROM parquet_kv_metadata(${lit(path)})`);
  const got = Object.fromEntries(kv.map((r) => [r.k, r.v]));
  for (const [k, v] of Object.entries(keys))
    check(got[k] === v, `duckdb: ${name}: footer key ${k} = ${JSON.stringify(got[k])}, expected ${JSON.stringify(v)}`);
  const meta = await q(`SELECT DISTINCT compression FROM parquet_metadata(${lit(path)})`);
  if (want.length > 0)
    check(meta.length === 1 && meta[0].compression === codec, `duckdb: ${name}: codec ${JSON.stringify(meta)}`);
  const created = await q(`SELECT created_by FROM parquet_file_metadata(${lit(path)})`);
  check(/^tarn version /.test(created[0]?.created_by ?? ''), `duckdb: ${name}: created_by ${created[0]?.created_by}`);

  // arrow-rs through parquet-wasm, then apache-arrow
  const bytes = new Uint8Array(readFileSync(path));
  const table = tableFromIPC(readParquet(bytes).intoIPCStream());
  const field = table.schema.fields.find((f) => f.name === 'payload');
  check(table.schema.fields.length === 1 && field && field.nullable && String(field.type) === 'Binary',
        `arrow: ${name}: schema ${table.schema.fields.map((f) => `${f.name}:${f.type}:${f.nullable}`)}`);
  const col = table.getChild('payload');
  const arrowRows = [];
  for (let i = 0; i < table.numRows; i++) arrowRows.push(col.get(i));
  sameRows(arrowRows, want, 'arrow', name);
  for (const [k, v] of Object.entries(keys))
    check(table.schema.metadata.get(k) === v, `arrow: ${name}: footer key ${k} = ${JSON.stringify(table.schema.metadata.get(k))}`);

  // hyparquet: it decodes only UNCOMPRESSED and SNAPPY without extra packages.
  if (codec === 'UNCOMPRESSED' || codec === 'SNAPPY') {
    const ab = bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength);
    const hrows = await parquetReadObjects({ file: ab, utf8: false });
    sameRows(hrows.map((r) => r.payload), want, 'hyparquet', name);
    const hm = parquetMetadata(ab);
    const hkv = Object.fromEntries((hm.key_value_metadata ?? []).map((e) => [e.key, e.value]));
    for (const [k, v] of Object.entries(keys))
      check(hkv[k] === v, `hyparquet: ${name}: footer key ${k}`);
  }
  console.log(`ok ${name}: ${want.length} rows`);
}
process.exit(failed() ? 1 : 0);
