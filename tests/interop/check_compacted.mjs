// Reads every DIR/*.parquet that tarn's compactor wrote with DuckDB and checks
// the payloads against DIR/*.expect byte for byte, the one nullable BLOB
// column, and the binding identifiers given on the command line
// (entrySerDeType, record name). Exit 1 on any difference.
import { readdirSync } from 'node:fs';
import { DuckDBInstance } from '@duckdb/node-api';
import { check, failed, readExpect, sameRows } from './common.mjs';

const [dir, serde, record] = process.argv.slice(2);
const files = readdirSync(dir).filter((f) => f.endsWith('.parquet')).sort();
check(files.length > 0, `no .parquet files in ${dir}`);
const db = await DuckDBInstance.create(':memory:');
const con = await db.connect();
const q = async (sql) => (await con.runAndReadAll(sql)).getRowObjects();
const lit = (s) => `'${s.replace(/'/g, "''")}'`;
for (const name of files) {
  const path = `${dir}/${name}`;
  const want = readExpect(path.replace(/\.parquet$/, '.expect'));
  const rows = await q(`SELECT payload FROM read_parquet(${lit(path)}, file_row_number = true) ORDER BY file_row_number`);
  sameRows(rows.map((r) => (r.payload === null ? null : r.payload.bytes)), want, 'duckdb', name);
  const schema = await q(`SELECT name FROM parquet_schema(${lit(path)})`);
  check(schema[0]?.name === record, `duckdb: ${name}: record name ${schema[0]?.name}, expected ${record}`);
  const desc = await q(`DESCRIBE SELECT * FROM read_parquet(${lit(path)})`);
  check(desc.length === 1 && desc[0].column_type === 'BLOB', `duckdb: ${name}: column ${desc[0]?.column_type}`);
  const kv = await q(`SELECT decode(key) AS k, decode(value) AS v FROM parquet_kv_metadata(${lit(path)})`);
  const got = Object.fromEntries(kv.map((r) => [r.k, r.v]));
  check(got.entrySerDeType === serde, `duckdb: ${name}: entrySerDeType ${got.entrySerDeType}`);
  check(got.rowMetadata === name.replace(/\.parquet$/, '.index'), `duckdb: ${name}: rowMetadata ${got.rowMetadata}`);
}
if (failed()) process.exit(1);
console.log(`duckdb read ${files.length} compacted files`);
