// bench/cluster/report.mjs: bench/cluster/RESULTS.md from results/propagation.md, every
// results/scaling-<N>.md (largest N first), the hand-written results/notes.md, then under a
// heading of their own the runs over the modelled network (NET=tbf: results/scaling-<N>-*tbf.md):
// those with every process on a host of its own (CLIENT=own) first, then the others, each group
// newest first (by the date in each run's .json).
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const HERE = new URL('.', import.meta.url).pathname;
const R = join(HERE, 'results');
const read = (f) => (existsSync(join(R, f)) ? readFileSync(join(R, f), 'utf8').trim() + '\n' : '');
const all = readdirSync(R).filter((f) => /^scaling-.*\.md$/.test(f))
  // largest N first; at one N the run with the default config (no tag) first
  .sort((a, b) => parseFloat(b.slice(8)) - parseFloat(a.slice(8)) || a.length - b.length || a.localeCompare(b));
const isTbf = (f) => /-tbf\.md$/.test(f);
// '1 <date>' for a CLIENT=own run, '0 <date>' for the others: sorted descending, own first
const dateOf = (f) => {
  let j = {};
  try { j = JSON.parse(readFileSync(join(R, f.replace(/\.md$/, '.json')), 'utf8')); } catch { /* no .json: last */ }
  return `${j.client === 'own' ? 1 : 0} ${j.date || ''}`;
};
const scal = all.filter((f) => !isTbf(f));
const tbf = all.filter(isTbf).map((f) => [dateOf(f), f]).sort((a, b) => b[0].localeCompare(a[0])).map(([, f]) => f);
const tbfHead = ['## Over a modelled network: netns + veth + tbf 10 Gbit/s', '',
  'Made by `NET=tbf bench/cluster/scaling.sh [N]` (as root): every worker in a network namespace of',
  'its own, linked to the coordinator\'s bridge by a veth pair shaped by `tc ... tbf rate 10gbit` at',
  'both ends, so every byte between the processes crosses a modelled 10 Gbit/s link (worker to',
  'worker: two). Bandwidth only: no delay is modelled. See `README.md`. First the runs with every',
  'process on a host of its own (`CLIENT=own`, the default since 2026-12-07: their header says',
  '"client on a host of its own"), then those with the client beside the coordinator; each newest first.', ''].join('\n');
const head = ['# framed on a cluster: config propagation and scaling over workers', '',
  'Made by `bench/cluster/scaling.sh [N]` (scaling, then `propagation.mjs`, then this file via',
  '`report.mjs`); the raw figures are in `results/*.json`. See `README.md`.', ''].join('\n');
const parts = [head, read('propagation.md'), ...scal.map((f) => read(f)), read('notes.md'),
  ...(tbf.length ? [tbfHead, ...tbf.map((f) => read(f))] : [])];
writeFileSync(join(HERE, 'RESULTS.md'), parts.filter(Boolean).join('\n'));
console.error(`wrote ${join(HERE, 'RESULTS.md')}`);
