// Cluster: the runner and every worker of GET /v1/workers in every state (active, suspect,
// gone), "last heartbeat 2 s ago", slots, the config IDs each holds with a red drift warning
// when one is not the runner's, and uPlot charts of tasks per second and running queries from
// the stats events (or, while the event stream is down, from /metrics once a second).
import { useEffect, useRef, useState } from 'preact/hooks';
import uPlot from 'uplot';
import { html } from '../lib/html.js';
import { api } from '../lib/api.js';
import { useEvent, useInterval, useLive } from '../lib/sse.js';
import { Badge, ConfigId, Empty, Loading, Problem, Time, useNow } from '../lib/ui.js';
import { fmtNumber } from '../lib/format.js';

const POINTS = 120;
const POLL_MS = 2000;

function Chart({ id, title, series, color }) {
  const box = useRef(null);
  const plot = useRef(null);
  useEffect(() => {
    const width = Math.max(240, box.current.clientWidth || 300);
    plot.current = new uPlot({
      width, height: 160, title, legend: { show: false },
      scales: { x: { time: true }, y: { range: (u, min, max) => [0, Math.max(1, max)] } },
      series: [{}, { label: title, stroke: color, width: 2, fill: `${color}22` }],
      axes: [{}, { size: 40 }],
    }, [[], []], box.current);
    const ro = new ResizeObserver(() => plot.current && plot.current.setSize({ width: Math.max(240, box.current.clientWidth), height: 160 }));
    ro.observe(box.current);
    return () => { ro.disconnect(); plot.current.destroy(); plot.current = null; };
  }, []);
  useEffect(() => { if (plot.current) plot.current.setData(series); }, [series]);
  return html`<figure class="chart"><div ref=${box} id=${id} class="chart-box" aria-label=${title} role="img" data-points=${series[0].length}></div></figure>`;
}

// Samples {t (s), tasks_per_s, queries_running}, newest last, at most POINTS.
function useStats(live) {
  const [samples, setSamples] = useState([]);
  const lastTotal = useRef(null);
  const push = (s) => setSamples((a) => [...a.slice(-(POINTS - 1)), s]);
  useEvent('stats', (e) => push({ t: Date.parse(e.time) / 1000, tps: e.tasks_per_s, running: e.queries_running }));
  useInterval(async () => {
    const [m, r] = await Promise.all([api('GET', '/metrics', { accept: 'text/plain' }), api('GET', '/v1/runner')]);
    if (!m.ok) return;
    const total = [...m.text.matchAll(/^framed_tasks_total\{outcome="(ok|failed|cancelled)"\} (\d+)/gm)].reduce((a, x) => a + Number(x[2]), 0);
    const now = Date.now() / 1000;
    const prev = lastTotal.current;
    lastTotal.current = { total, now };
    const running = r.ok && r.data.queries ? r.data.queries.running : Number((/^framed_queries\{state="running"\} (\d+)/m.exec(m.text) || [])[1] || 0);
    if (prev) push({ t: now, tps: (total - prev.total) / Math.max(0.001, now - prev.now), running });
  }, 1000, !live);
  return samples;
}

function Drift({ w, runnerConfig }) {
  const ids = w.config_ids || [];
  const drift = runnerConfig ? ids.filter((c) => c !== runnerConfig) : [];
  return html`<div class="config-ids">
    ${ids.length ? ids.map((c) => html`<div class=${drift.includes(c) ? "drift-id" : ""}><${ConfigId} id=${c} /></div>`) : html`<span class="muted">none</span>`}
    ${drift.length ? html`<p class="drift" role="alert" data-worker=${w.id}>Drift: holds ${drift.length} config${drift.length > 1 ? 's' : ''} other than the runner's</p>` : null}
  </div>`;
}

function WorkersTable({ workers, runnerConfig }) {
  return html`<div class="table-wrap"><table id="workers-table">
    <thead><tr><th>Worker</th><th>State</th><th>Last heartbeat</th><th class="num">Slots (running / threads)</th><th class="num">In flight</th><th>Config IDs</th></tr></thead>
    <tbody>${workers.map((w) => html`<tr data-worker-id=${w.id} data-state=${w.state}>
      <td><span class="mono">${w.id}</span><br /><span class="muted small">${w.url}</span>${w.static ? html` <span class="tag">static</span>` : null}</td>
      <td><${Badge} state=${w.state} /></td>
      <td class="heartbeat">${w.last_heartbeat ? html`last heartbeat <${Time} iso=${w.last_heartbeat} />` : html`<span class="muted">never heard from</span>`}</td>
      <td class="num">${fmtNumber(w.running_tasks)} / ${fmtNumber(w.threads)}</td>
      <td class="num">${fmtNumber(w.inflight)}</td>
      <td><${Drift} w=${w} runnerConfig=${runnerConfig} /></td>
    </tr>`)}</tbody>
  </table></div>`;
}

export function ClusterView() {
  const live = useLive();
  useNow(1000);
  const [st, setSt] = useState({ workers: null, runner: null, problem: null });
  const load = async () => {
    const [w, r] = await Promise.all([api('GET', '/v1/workers'), api('GET', '/v1/runner')]);
    setSt({ workers: w.ok ? w.data.workers : null, runner: r.ok ? r.data : null, problem: w.ok ? (r.ok ? null : r.problem) : w.problem });
  };
  useEffect(() => { load(); }, []);
  useInterval(load, POLL_MS);
  useEvent('worker', load);
  useEvent('runner', load);
  const samples = useStats(live);
  const xs = samples.map((s) => s.t);
  const runner = st.runner;
  const counts = { active: 0, suspect: 0, gone: 0 };
  for (const w of st.workers || []) counts[w.state] = (counts[w.state] || 0) + 1;
  return html`<section class="view" id="view-cluster" aria-labelledby="h-cluster">
    <h1 id="h-cluster">Cluster</h1>
    ${st.problem ? html`<${Problem} problem=${st.problem} context="cluster" />` : null}
    <div class="cards">
      <div class="card"><h2>Runner</h2>${runner ? html`<dl class="facts" id="runner-facts">
        <dt>State</dt><dd><${Badge} state=${runner.state} id="cluster-runner-state" /></dd>
        <dt>Kind</dt><dd>${runner.kind || '—'}</dd>
        <dt>Config ID</dt><dd><${ConfigId} id=${runner.config_id} /></dd>
        ${runner.queries ? html`<dt>Queries</dt><dd>${runner.queries.running} running, ${runner.queries.finished} finished</dd>` : null}
        ${runner.detail && runner.detail.threads ? html`<dt>Threads</dt><dd>${runner.detail.threads}</dd>` : null}
      </dl>` : html`<${Loading} what="the runner" />`}</div>
      <div class="card"><h2>Workers</h2><p id="worker-counts">
        <${Badge} state="active" /> ${counts.active} <${Badge} state="suspect" /> ${counts.suspect} <${Badge} state="gone" /> ${counts.gone}</p></div>
    </div>
    <div class="charts">
      <${Chart} id="chart-tasks" title="Tasks per second" color="#2563eb" series=${[xs, samples.map((s) => s.tps)]} />
      <${Chart} id="chart-queries" title="Running queries" color="#16a34a" series=${[xs, samples.map((s) => s.running)]} />
    </div>
    <h2>Workers</h2>
    ${st.workers === null && !st.problem ? html`<${Loading} what="workers" />` : null}
    ${st.workers && !st.workers.length ? html`<${Empty}>No workers. ${runner && runner.kind === 'local' ? 'This server runs the local runner (threads in the server).' : 'Start one with framed worker --coordinator URL.'}</${Empty}>` : null}
    ${st.workers && st.workers.length ? html`<${WorkersTable} workers=${st.workers} runnerConfig=${runner && runner.config_id} />` : null}
  </section>`;
}
