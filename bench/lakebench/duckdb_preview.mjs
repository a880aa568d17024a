// DuckDB's side of lakebench's preview section (issue 42): one DuckDB
// (@duckdb/node-api, pinned in tools/npm/package-lock.json), opened once
// in memory, answering timing requests from the Go driver so that it can
// alternate lake's runs and DuckDB's in the same run.
//
// Protocol, one JSON object a line. On start it writes
// {"ready":true,"version":…,"threads":…,"external_file_cache":…}. Then each
// line read, {"sql":"…"}, is run with runAndReadAll (every row of the
// result materialized in DuckDB's vectors, none converted to JavaScript
// values) and answered {"ms":…,"rows":…}, or {"error":"…"}; ms is measured
// here, around that call alone (process.hrtime.bigint), so the pipe to the
// driver is not in it. End of input ends the process.
//
// Run from the repository root: node bench/lakebench/duckdb_preview.mjs
// (LAKE_NPM_DIR overrides where node_modules is, tools/npm by default).

import { createRequire } from 'node:module';
import { createInterface } from 'node:readline';
import path from 'node:path';

const npmDir = path.resolve(process.env.LAKE_NPM_DIR || 'tools/npm');
const require = createRequire(path.join(npmDir, 'package.json'));

function reply(obj) {
  process.stdout.write(JSON.stringify(obj) + '\n');
}

let conn;
try {
  const { DuckDBInstance } = require('@duckdb/node-api');
  const instance = await DuckDBInstance.create(':memory:');
  conn = await instance.connect();
} catch (err) {
  reply({ error: `open DuckDB from ${npmDir}: ${err.message}` });
  process.exit(1);
}

async function setting(name) {
  const r = await conn.runAndReadAll(`SELECT current_setting('${name}')::VARCHAR`);
  return r.getRows()[0][0];
}

const version = (await conn.runAndReadAll('SELECT version()')).getRows()[0][0];
let cache = 'unknown';
try {
  cache = await setting('enable_external_file_cache');
} catch {
  // an older DuckDB without the setting
}
reply({ ready: true, version, threads: await setting('threads'), external_file_cache: cache });

const lines = createInterface({ input: process.stdin, crlfDelay: Infinity });
for await (const line of lines) {
  if (line.trim() === '') continue;
  try {
    const { sql } = JSON.parse(line);
    const t0 = process.hrtime.bigint();
    const result = await conn.runAndReadAll(sql);
    const ns = process.hrtime.bigint() - t0;
    reply({ ms: Number(ns) / 1e6, rows: result.currentRowCount });
  } catch (err) {
    reply({ error: err.message });
  }
}
