// One engine as a long-lived child of bench/onerun.mjs, driven by lines on stdin, one JSON line
// back on stdout per command:
//   hello                -> { engine, version, threads }
//   load G1 | load join  -> { t[, e2e] }          (seconds)
//   run <id>             -> { t[, e2e], rows }    (the answer stays materialized)
//   checksum <id>        -> { chk[, rows] }       (of the last run, untimed)
//   create <id>          -> { t }                 (framed only: POST /v1/dataframes {plan})
//   restart              -> {}                    (framed: a fresh server, join tables reloaded)
//   drop                 -> {}                    (frees the last answer where the engine can)
//   quit                 -> {} and exits
// Every answer also has rss (GiB: the engine's resident memory, framed's server) and, on failure,
// error instead of the figures.
// Usage: node bench/engines/worker.mjs duckdb|polars|framed N DATADIR   (Polars: set
// POLARS_MAX_THREADS=2 in its environment)
import { createInterface } from 'node:readline';
import { readFileSync } from 'node:fs';

const [engine, n, dir] = process.argv.slice(2);
const mod = await import(`./${engine}.mjs`);
const d = await mod.open(Number(n), dir);
const gib = (kb) => +(kb / (1 << 20)).toFixed(2);
const rss = () => {
  if (d.rss) return d.rss();
  const st = readFileSync('/proc/self/status', 'utf8');
  const g = (k) => Number((st.match(new RegExp(`${k}:\\s+(\\d+)`)) || [0, 0])[1]);
  return { rss: gib(g('VmRSS')), peak: gib(g('VmHWM')) };
};
const reply = (o) => process.stdout.write(JSON.stringify(o) + '\n');

const rl = createInterface({ input: process.stdin });
for await (const line of rl) {
  const [cmd, arg] = line.trim().split(/\s+/);
  let r;
  try {
    if (cmd === 'hello') r = { engine: d.engine, version: d.version, threads: d.threads, notes: d.notes || [] };
    else if (cmd === 'quit') {
      await d.close();
      reply({});
      process.exit(0);
    } else if (cmd === 'load' || cmd === 'run' || cmd === 'checksum') r = await d[cmd](arg);
    else if (cmd === 'create') r = d.create ? await d.create(arg) : { error: 'not supported' };
    else if (cmd === 'restart') r = d.restart ? await d.restart() : {};
    else if (cmd === 'drop') r = (await d.drop(), {});
    else r = { error: `unknown command ${cmd}` };
    if (cmd === 'hello') r.notes = d.notes || [];
    if (cmd === 'load' && d.notes) r.notes = d.notes;
    if (d.rightMode) r.right_mode = d.rightMode;
  } catch (e) {
    r = { error: String(e && e.message ? e.message : e).slice(0, 500) };
  }
  r.rss = rss();
  reply(r);
}
await d.close();
