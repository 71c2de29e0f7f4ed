// bench/RESULTS.md from bench/results/: the one-run tables (bench/onerun.mjs: onerun-<N>.md, the
// largest N first, each before its -baseline), then the per-engine tables (bench/bench.mjs:
// <N>.md), the parquet/formats/sql tables, notes.md, the cluster and load benchmarks.
import { readFileSync, writeFileSync, existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';

const nOf = (name) => Number(name.replace(/^onerun-/, '').replace(/(-baseline)?\.md$/, ''));

export function writeResultsMd(BENCH) {
  const RES0 = join(BENCH, 'results');
  const onerun = readdirSync(RES0).filter((n) => /^onerun-\d+(e\d+)?(-baseline)?\.md$/.test(n))
    .sort((a, b) => nOf(b) - nOf(a) || a.length - b.length)
    .map((p) => readFileSync(join(RES0, p), 'utf8'));
  const RES = join(BENCH, 'results');
  const parts = readdirSync(RES).filter((n) => /^1e\d+\.md$|^\d+\.md$/.test(n))
    .sort((a, b) => Number(b.replace('.md', '')) - Number(a.replace('.md', '')));
  const notes = existsSync(join(RES, 'notes.md')) ? readFileSync(join(RES, 'notes.md'), 'utf8') : '';
  // The cluster benchmark (bench/cluster/scaling.sh) keeps its own file; it is folded in here.
  const clusterFile = join(BENCH, 'cluster', 'RESULTS.md');
  const cluster = existsSync(clusterFile)
    ? readFileSync(clusterFile, 'utf8').replace(/^# /, '# Cluster: ') : '';
  // bench/parquet.mjs writes results/parquet-<N>.md, bench/result_formats.mjs
  // results/formats-<N>.md, bench/sql.mjs results/sql-<SF>.md, bench/create.mjs results/create-<N>.md
  // and bench/partition_codec.c results/partition-codec-<N>.md: folded in after the CSV tables.
  const extra = readdirSync(RES).filter((n) => /^(parquet|formats|result-formats|sql|create|partition-codec)-.*\.md$/.test(n)).sort()
    .map((p) => readFileSync(join(RES, p), 'utf8'));
  // The load benchmark (bench/load/run.sh) writes results/load.md; it is folded in last.
  const load = existsSync(join(RES, 'load.md')) ? readFileSync(join(RES, 'load.md'), 'utf8') : '';
  writeFileSync(join(BENCH, 'RESULTS.md'), ['# framed vs DuckDB, Polars, pandas: db-benchmark groupby and join', '',
    'Made by `bench/run.sh N onerun` (the one-run tables: all engines in one run, interleaved) and',
    '`bench/run.sh N` (one process per engine, one after the other); see bench/README.md. Figures vary',
    'by about 30% between runs on this shared machine; compare engines within one table only.', '',
    ...onerun, ...parts.map((p) => readFileSync(join(RES, p), 'utf8')), ...extra, notes, cluster, load].join('\n'));
}
