// stages: a query's plan drawn as SVG. StageGraph: a box per stage (operators, exchange,
// per-stage progress, rows and bytes, the planner decisions with their config field and value)
// and an arrow from each input stage. Timeline: each task attempt as a bar on its worker's (or
// thread's) lane, retries and reruns marked.
import { html } from '../lib/html.js';
import { fmtBytes, fmtMs, fmtNumber, fmtValue } from '../lib/format.js';

const BOX_W = 260;
const GAP_X = 60;
const GAP_Y = 24;
const PAD = 12;

function clip(s, n) {
  s = String(s ?? '');
  return s.length > n ? `${s.slice(0, n - 1)}…` : s;
}

// Column of each stage: 0 for a stage reading no stage, else one past its deepest input.
function depths(stages) {
  const byId = new Map(stages.map((s) => [s.stage, s]));
  const memo = new Map();
  const depth = (s, seen = new Set()) => {
    if (memo.has(s.stage)) return memo.get(s.stage);
    if (seen.has(s.stage)) return 0;
    seen.add(s.stage);
    const ins = (s.inputs || []).map((i) => byId.get(i)).filter(Boolean);
    const d = ins.length ? 1 + Math.max(...ins.map((x) => depth(x, seen))) : 0;
    memo.set(s.stage, d);
    return d;
  };
  for (const s of stages) depth(s);
  return memo;
}

function boxHeight(s) {
  return 92 + 14 * Math.min((s.decisions || []).length, 4);
}

function layout(stages) {
  const d = depths(stages);
  const cols = [];
  for (const s of stages) (cols[d.get(s.stage)] ||= []).push(s);
  const pos = new Map();
  let height = 0;
  cols.forEach((col, ci) => {
    let y = PAD;
    for (const s of col || []) {
      pos.set(s.stage, { x: PAD + ci * (BOX_W + GAP_X), y, h: boxHeight(s) });
      y += boxHeight(s) + GAP_Y;
    }
    height = Math.max(height, y);
  });
  return { pos, width: PAD * 2 + cols.length * BOX_W + (cols.length - 1) * GAP_X, height: height - GAP_Y + PAD };
}

function StageBox({ s, p }) {
  const total = s.tasks_total || 0;
  const done = s.tasks_done || 0;
  const frac = total ? Math.min(1, done / total) : 0;
  const state = s.finished_at ? 'done' : s.tasks_running || s.started_at ? 'running' : 'waiting';
  const decisions = (s.decisions || []).slice(0, 4);
  return html`<g class=${`stage stage-${state}`} transform=${`translate(${p.x},${p.y})`} data-stage=${s.stage}>
    <title>${`stage ${s.stage}: ${s.label || ''}`}</title>
    <rect class="stage-box" width=${BOX_W} height=${p.h} rx="6" />
    <text x="10" y="18" class="stage-title">Stage ${s.stage}${s.exchange && s.exchange !== 'none' ? ` · ${s.exchange}` : ''}</text>
    <text x="10" y="36" class="stage-label">${clip(s.label, 34)}</text>
    <rect class="stage-bar-bg" x="10" y="46" width=${BOX_W - 20} height="10" rx="3" />
    <rect class="stage-bar" x="10" y="46" width=${(BOX_W - 20) * frac} height="10" rx="3" />
    <text x="10" y="72" class="stage-metric">${`tasks ${done}/${total}${s.tasks_running ? ` (${s.tasks_running} running)` : ''}`}</text>
    <text x="10" y="86" class="stage-metric">${`rows ${fmtNumber(s.rows_in)} → ${fmtNumber(s.rows_out)} · ${fmtBytes(s.bytes_out)}${s.bytes_shuffled ? ` · shuffled ${fmtBytes(s.bytes_shuffled)}` : ''}`}</text>
    ${decisions.map((dd, i) => html`<text x="10" y=${102 + 14 * i} class="stage-decision">
      <title>${dd.decision}</title>${clip(dd.field ? `${dd.field} = ${fmtValue(dd.value)}` : dd.decision, 40)}</text>`)}
  </g>`;
}

export function StageGraph({ stages }) {
  if (!stages || !stages.length) return null;
  const { pos, width, height } = layout(stages);
  const arrows = [];
  for (const s of stages) {
    for (const i of s.inputs || []) {
      const a = pos.get(i), b = pos.get(s.stage);
      if (!a || !b) continue;
      const x1 = a.x + BOX_W, y1 = a.y + a.h / 2, x2 = b.x - 4, y2 = b.y + b.h / 2;
      const mx = (x1 + x2) / 2;
      arrows.push(html`<path class="edge" d=${`M${x1},${y1} C${mx},${y1} ${mx},${y2} ${x2},${y2}`} marker-end="url(#arrow)" data-from=${i} data-to=${s.stage} />`);
    }
  }
  return html`<div class="graph-wrap"><svg id="stage-graph" class="stage-graph" viewBox=${`0 0 ${width} ${height}`}
      width=${width} height=${height} role="img" aria-label=${`plan of ${stages.length} stages`}>
    <defs><marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="8" markerHeight="8" orient="auto-start-reverse">
      <path d="M 0 0 L 10 5 L 0 10 z" class="arrow-head" /></marker></defs>
    ${arrows}
    ${stages.map((s) => html`<${StageBox} s=${s} p=${pos.get(s.stage)} key=${s.stage} />`)}
  </svg></div>`;
}

function laneOf(t) {
  if (t.worker) return t.worker;
  if (t.thread !== null && t.thread !== undefined) return `thread ${t.thread}`;
  return 'coordinator';
}

// Rows of the timeline: one or more per worker (or thread), so attempts that ran at once on one
// worker get rows of their own. Sets t.lane on each task; returns the rows' labels ("" for a
// worker's second and later rows).
function packLanes(tasks, start, end) {
  const labels = [];
  const byLane = new Map();
  for (const t of tasks) (byLane.get(laneOf(t)) || byLane.set(laneOf(t), []).get(laneOf(t))).push(t);
  for (const name of [...byLane.keys()].sort()) {
    const rowsEnd = [];
    for (const t of byLane.get(name).sort((a, b) => start(a) - start(b))) {
      let r = rowsEnd.findIndex((e) => e <= start(t));
      if (r < 0) { r = rowsEnd.length; rowsEnd.push(0); }
      rowsEnd[r] = end(t);
      t.lane = labels.length + r;
    }
    rowsEnd.forEach((_, i) => labels.push(i === 0 ? name : ''));
  }
  return labels;
}

const LANE_H = 24;
const LABEL_W = 140;
const TL_W = 900;

export function Timeline({ stages, now }) {
  const tasks = [];
  for (const s of stages || []) for (const t of s.tasks || []) if (t.started_at) tasks.push({ ...t, stage: s.stage });
  if (!tasks.length) return html`<p class="empty" id="timeline-empty">No task has started yet.</p>`;
  const start = (t) => Date.parse(t.started_at);
  const end = (t) => (t.finished_at ? Date.parse(t.finished_at) : now);
  const t0 = Math.min(...tasks.map(start));
  const t1 = Math.max(t0 + 1, ...tasks.map(end));
  const lanes = packLanes(tasks, start, end);
  const scale = (v) => LABEL_W + ((v - t0) / (t1 - t0)) * (TL_W - LABEL_W - 8);
  const height = lanes.length * LANE_H + 24;
  const truncated = (stages || []).some((s) => s.tasks_truncated);
  return html`<div class="graph-wrap"><svg id="timeline" class="timeline" viewBox=${`0 0 ${TL_W} ${height}`}
      width=${TL_W} height=${height} role="img" aria-label=${`${tasks.length} task attempts on ${lanes.length} lanes`}>
    ${lanes.map((l, i) => html`<text x="4" y=${i * LANE_H + 16} class="lane-label">${l ? clip(l, 20) : ''}</text>
      <line x1=${LABEL_W} x2=${TL_W} y1=${(i + 1) * LANE_H} y2=${(i + 1) * LANE_H} class="lane-line" />`)}
    ${tasks.map((t) => {
      const x = scale(start(t));
      const w = Math.max(6, scale(end(t)) - x); // a sub-millisecond attempt stays visible
      const y = t.lane * LANE_H + 4;
      const mark = t.state === 'retried' || t.attempt > 1 || t.rerun;
      return html`<g class=${`task task-${t.state}${mark ? ' task-marked' : ''}`} data-stage=${t.stage} data-task=${t.task} data-attempt=${t.attempt}>
        <title>${`stage ${t.stage} task ${t.task} attempt ${t.attempt} on ${laneOf(t)}: ${t.state}${t.rerun ? ' (rerun)' : ''}, ${fmtMs(end(t) - start(t))}, rows ${fmtNumber(t.rows_in)} → ${fmtNumber(t.rows_out)}${t.error ? `: ${t.error}` : ''}`}</title>
        <rect x=${x} y=${y} width=${w} height=${LANE_H - 8} rx="2" />
        ${mark ? html`<text x=${x + 2} y=${y + 12} class="task-mark">${t.rerun ? 'rerun' : '↻'}</text>` : null}
      </g>`;
    })}
    <text x=${LABEL_W} y=${height - 4} class="axis">0</text>
    <text x=${TL_W - 4} y=${height - 4} class="axis" text-anchor="end">${fmtMs(t1 - t0)}</text>
  </svg></div>
  ${truncated ? html`<p class="muted small">Only the first 4096 task attempts are kept for this query.</p>` : null}
  <p class="legend small"><span class="key task-ok">ok</span> <span class="key task-running">running</span>
    <span class="key task-failed">failed</span> <span class="key task-retried">retried ↻</span> <span class="key task-cancelled">cancelled</span></p>`;
}

// The physical plan of GET /v1/dataframes/{id}/explain in the shape of the stages endpoint, for
// a server that does not serve /v1/queries/{id}/stages: the graph without live numbers.
export function stagesFromExplain(explain) {
  const phys = (explain && explain.physical && explain.physical.stages) || [];
  return phys.map((s) => ({
    stage: s.id, label: [s.kind, ...(s.pipeline || []).map((p) => Object.keys(p)[0]), s.sink && s.sink.op].filter(Boolean).join(' | '),
    inputs: (s.inputs || []).filter((i) => typeof i.stage === 'number').map((i) => i.stage),
    exchange: 'none', tasks_total: s.tasks, tasks_done: 0, tasks_running: 0, decisions: [], tasks: [],
  }));
}
