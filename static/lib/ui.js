// ui: the small pieces every view uses: state badges, progress bars, times, problems, loading
// and empty states, and a hook that loads an endpoint and tells 404 (not served) apart.
import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { html } from './html.js';
import { api, problemKind, adminToken } from './api.js';
import { fmtAgo, fmtUtc, fmtFrozenBy, shortId } from './format.js';

export function Badge({ state, id }) {
  return html`<span class=${`badge state-${state || 'unknown'}`} id=${id} data-state=${state}>${state || '—'}</span>`;
}

export function Progress({ done, total, state, id }) {
  const pct = total > 0 ? Math.min(100, Math.round((100 * done) / total)) : (state === 'succeeded' ? 100 : 0);
  return html`<div class=${`progress state-${state || ''}`} id=${id} role="progressbar"
      aria-valuemin="0" aria-valuemax=${total || 0} aria-valuenow=${done || 0}
      aria-label=${`${done ?? 0} of ${total ?? 0} tasks`} title=${`${done ?? 0} / ${total ?? 0} tasks`}>
    <div class="progress-fill" style=${`width:${pct}%`}></div>
    <span class="progress-text">${done ?? 0}/${total ?? 0}</span>
  </div>`;
}

// A time shown relative ("3 s ago"), with UTC in the title; re-rendered by the caller's clock.
export function Time({ iso }) {
  if (!iso) return html`<span class="muted">—</span>`;
  return html`<time datetime=${iso} title=${fmtUtc(iso)}>${fmtAgo(iso)}</time>`;
}

export function ConfigId({ id }) {
  if (!id) return html`<span class="muted">—</span>`;
  return html`<code class="config-id" title=${id} data-config-id=${id}>${shortId(id)}</code>`;
}

export function Loading({ what }) {
  return html`<p class="loading" role="status">Loading ${what}…</p>`;
}

export function Empty({ children }) {
  return html`<p class="empty">${children}</p>`;
}

function LockedMembers({ p }) {
  return html`<dl class="facts">
    <dt>config ID</dt><dd><code data-field="config_id">${p.config_id}</code></dd>
    <dt>frozen at</dt><dd><span data-field="frozen_at" title=${fmtUtc(p.frozen_at)}>${p.frozen_at}</span></dd>
    <dt>frozen by</dt><dd>${fmtFrozenBy(p.frozen_by)}</dd>
    <dt>to unlock</dt><dd><code>DELETE /v1/runner</code> (Reset runner)</dd>
  </dl>`;
}

// A problem body (RFC 9457) as a readable alert: title, status, detail, the kind's own members.
export function Problem({ problem, context, id }) {
  if (!problem) return null;
  const kind = problemKind(problem);
  const errors = Array.isArray(problem.errors) ? problem.errors : [];
  return html`<div class=${`problem problem-${kind || 'other'}`} role="alert" id=${id} data-kind=${kind}>
    <p class="problem-title"><strong>${problem.title || 'Error'}</strong>
      ${problem.status ? html` <span class="problem-status">${problem.status}</span>` : null}
      ${kind ? html` <code class="problem-kind">${kind}</code>` : null}
      ${context ? html` <span class="muted">— ${context}</span>` : null}</p>
    ${problem.detail ? html`<p class="problem-detail">${problem.detail}</p>` : null}
    ${kind === 'unauthorized' ? html`<p class="problem-hint">${adminToken()
      ? 'The admin token kept in this tab was refused: check it in the Admin token field.'
      : 'This call needs the admin token: enter it in the Admin token field at the top.'}</p>` : null}
    ${kind === 'config-locked' ? html`<${LockedMembers} p=${problem} />` : null}
    ${problem.line > 0 && problem.column > 0 && !problem.file ? html`<p class="problem-where small" data-field="line-column">line ${problem.line}, column ${problem.column}</p>` : null}
    ${typeof problem.excerpt === 'string' ? html`<pre class="problem-excerpt">${problem.excerpt}</pre>` : null}
    ${errors.length ? html`<ul class="problem-errors">${errors.map((e) => html`<li><code>${e.field}</code>: ${e.message}</li>`)}</ul>` : null}
    ${problem.request_id ? html`<p class="muted small">request ${problem.request_id}</p>` : null}
  </div>`;
}

// Loads path (GET) and reloads on demand: {data, problem, missing (404: not served here),
// loading, reload}. A reload keeps the last data on screen until the new one arrives.
export function useResource(path, deps = []) {
  const [st, setSt] = useState({ data: null, problem: null, missing: false, loading: true });
  const seq = useRef(0);
  const reload = useCallback(async () => {
    if (!path) return;
    const n = ++seq.current;
    const r = await api('GET', path);
    if (n !== seq.current) return;
    if (r.ok) setSt({ data: r.data, problem: null, missing: false, loading: false });
    else setSt((s) => ({ data: r.status === 404 ? null : s.data, problem: r.problem, missing: r.status === 404 || r.status === 405, loading: false }));
  }, [path]);
  useEffect(() => {
    setSt({ data: null, problem: null, missing: false, loading: true });
    reload();
  }, [path, ...deps]);
  return { ...st, reload };
}

// A clock that ticks every ms, so relative times stay true.
export function useNow(ms = 1000) {
  const [now, setNow] = useState(Date.now());
  useEffect(() => {
    const t = setInterval(() => setNow(Date.now()), ms);
    return () => clearInterval(t);
  }, [ms]);
  return now;
}

// The "not served yet" state of an endpoint that answered 404.
export function Missing({ path, what }) {
  return html`<div class="empty missing" role="status">
    <p>${what} is not available: <code>GET ${path}</code> is not served here (404).</p>
  </div>`;
}
