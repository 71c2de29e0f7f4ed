// bench/cluster/report.mjs: bench/cluster/RESULTS.md from results/propagation.md, every
// results/scaling-<N>.md (largest N first) and the hand-written results/notes.md.
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const HERE = new URL('.', import.meta.url).pathname;
const R = join(HERE, 'results');
const read = (f) => (existsSync(join(R, f)) ? readFileSync(join(R, f), 'utf8').trim() + '\n' : '');
const scal = readdirSync(R).filter((f) => /^scaling-.*\.md$/.test(f))
  // largest N first; at one N the run with the default config (no tag) first
  .sort((a, b) => parseFloat(b.slice(8)) - parseFloat(a.slice(8)) || a.length - b.length || a.localeCompare(b));
const head = ['# framed on a cluster: config propagation and scaling over workers', '',
  'Made by `bench/cluster/scaling.sh [N]` (scaling, then `propagation.mjs`, then this file via',
  '`report.mjs`); the raw figures are in `results/*.json`. See `README.md`.', ''].join('\n');
const parts = [head, read('propagation.md'), ...scal.map((f) => read(f)), read('notes.md')];
writeFileSync(join(HERE, 'RESULTS.md'), parts.filter(Boolean).join('\n'));
console.error(`wrote ${join(HERE, 'RESULTS.md')}`);
