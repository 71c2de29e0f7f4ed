// Queries: the history of queries, newest first (GET /v1/queries), with state badges, progress
// bars that move from the first second (query events of GET /v1/events, else polling), elapsed,
// rows and config ID, filtered by state and config ID (kept in the URL).
import { useEffect, useState } from 'preact/hooks';
import { html } from '../lib/html.js';
import { api, qs } from '../lib/api.js';
import { href, navigate } from '../lib/router.js';
import { useEvent, useInterval, useLive } from '../lib/sse.js';
import { Badge, ConfigId, Empty, Loading, Missing, Problem, Progress, Time, useNow } from '../lib/ui.js';
import { fmtMs, fmtNumber } from '../lib/format.js';

const STATES = ['queued', 'running', 'succeeded', 'failed', 'cancelled'];
const POLL_MS = 1000;
const PAGE = 50;

// A query event merged into its summary row.
function merge(row, ev) {
  return {
    ...row, state: ev.state ?? row.state, tasks_total: ev.tasks_total ?? row.tasks_total,
    tasks_done: ev.tasks_done ?? row.tasks_done, rows: ev.rows ?? row.rows,
    elapsed_ms: ev.elapsed_ms ?? row.elapsed_ms, config_id: ev.config_id ?? row.config_id,
  };
}

function Filters({ params }) {
  const [configId, setConfigId] = useState(params.config_id || '');
  useEffect(() => setConfigId(params.config_id || ''), [params.config_id]);
  const set = (patch) => navigate('queries', null, { ...params, ...patch });
  return html`<form class="filters" onSubmit=${(e) => { e.preventDefault(); set({ config_id: configId.trim() }); }}>
    <label>State
      <select id="qf-state" value=${params.state || ''} onChange=${(e) => set({ state: e.currentTarget.value })}>
        <option value="">any</option>
        ${STATES.map((s) => html`<option value=${s}>${s}</option>`)}
      </select></label>
    <label>Config ID
      <input id="qf-config" value=${configId} placeholder="sha256:…" spellcheck="false"
        onInput=${(e) => setConfigId(e.currentTarget.value)} /></label>
    <button type="submit" id="qf-apply">Filter</button>
    ${params.state || params.config_id ? html`<a class="button-link" href=${href('queries')} id="qf-clear">Clear</a>` : null}
  </form>`;
}

function QueryRow({ q }) {
  return html`<tr data-query-id=${q.id} data-state=${q.state}>
    <td><a href=${href('queries', q.id)} class="mono">${q.id}</a>${q.archived ? html` <span class="tag" title="its runner was reset or the server restarted">archived</span>` : null}</td>
    <td><${Badge} state=${q.state} /></td>
    <td class="cell-progress"><${Progress} done=${q.tasks_done} total=${q.tasks_total} state=${q.state} /></td>
    <td class="num">${fmtMs(q.elapsed_ms)}</td>
    <td class="num">${fmtNumber(q.rows)}</td>
    <td>${q.config_id ? html`<a href=${href('queries', null, { config_id: q.config_id })} title="queries with this config"><${ConfigId} id=${q.config_id} /></a>` : html`<${ConfigId} id=${null} />`}</td>
    <td><${Time} iso=${q.created_at || q.started_at} /></td>
    <td>${q.error ? html`<code class="bad">${q.error.kind}</code>` : null}</td>
  </tr>`;
}

export function QueriesView({ params }) {
  const live = useLive();
  useNow(1000);
  const [st, setSt] = useState({ rows: null, next: null, problem: null, missing: false });
  const path = `/v1/queries${qs({ state: params.state, config_id: params.config_id, limit: PAGE })}`;
  const load = async () => {
    const r = await api('GET', path);
    if (r.ok) setSt({ rows: r.data.queries || [], next: r.data.next_cursor, problem: null, missing: false });
    else setSt((s) => ({ ...s, rows: s.rows, problem: r.problem, missing: r.status === 404 || r.status === 405 }));
  };
  useEffect(() => { setSt({ rows: null, next: null, problem: null, missing: false }); load(); }, [path]);
  useInterval(load, POLL_MS, !live);
  useEvent('query', (ev) => {
    setSt((s) => {
      if (!s.rows) return s;
      const i = s.rows.findIndex((q) => q.id === ev.id);
      if (i < 0) { load(); return s; }
      const rows = s.rows.slice();
      rows[i] = merge(rows[i], ev);
      return { ...s, rows };
    });
  });
  const more = async () => {
    const r = await api('GET', `/v1/queries${qs({ state: params.state, config_id: params.config_id, limit: PAGE, cursor: st.next })}`);
    if (r.ok) setSt((s) => ({ ...s, rows: [...s.rows, ...(r.data.queries || [])], next: r.data.next_cursor }));
  };
  return html`<section class="view" id="view-queries" aria-labelledby="h-queries">
    <h1 id="h-queries">Queries</h1>
    <${Filters} params=${params} />
    ${st.missing ? html`<${Missing} path="/v1/queries" what="The query history" />`
      : st.problem ? html`<${Problem} problem=${st.problem} context="GET /v1/queries" />` : null}
    ${st.rows === null && !st.missing ? html`<${Loading} what="queries" />` : null}
    ${st.rows && st.rows.length === 0 ? html`<${Empty}>No queries${params.state || params.config_id ? ' match these filters' : ' yet: run one from Datasets'}.</${Empty}>` : null}
    ${st.rows && st.rows.length ? html`<div class="table-wrap"><table id="queries-table">
      <thead><tr><th>Query</th><th>State</th><th>Progress</th><th class="num">Elapsed</th><th class="num">Rows</th><th>Config ID</th><th>Created</th><th>Error</th></tr></thead>
      <tbody>${st.rows.map((q) => html`<${QueryRow} q=${q} key=${q.id} />`)}</tbody>
    </table></div>` : null}
    ${st.next ? html`<button type="button" id="queries-more" onClick=${more}>Older queries</button>` : null}
  </section>`;
}
