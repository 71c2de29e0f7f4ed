// framed dashboard: the entry module. Renders the header (version, role, readiness, the lock,
// the admin token), the navigation and the view the URL hash names (lib/router.js). Views live
// in views/*.js; the live event stream (lib/sse.js) is opened once here.
import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { html } from './lib/html.js';
import { api, adminToken, setAdminToken } from './lib/api.js';
import { useRoute, href } from './lib/router.js';
import { startEvents, useEvent, useInterval, useLive } from './lib/sse.js';
import { ConfigId } from './lib/ui.js';
import { QueriesView } from './views/queries.js';
import { QueryView } from './views/query.js';
import { ClusterView } from './views/cluster.js';
import { ConfigView } from './views/config.js';
import { DatasetsView } from './views/datasets.js';

const HEADER_POLL_MS = 3000;

function TokenForm() {
  const [value, setValue] = useState(adminToken());
  const [saved, setSaved] = useState(adminToken() ? 'kept in this tab' : '');
  const submit = (e) => {
    e.preventDefault();
    setAdminToken(value.trim());
    setSaved(value.trim() ? 'kept in this tab' : 'cleared');
  };
  return html`<form id="token-form" class="token-form" onSubmit=${submit}>
    <label for="admin-token">Admin token</label>
    <input id="admin-token" type="password" autocomplete="off" value=${value}
      onInput=${(e) => setValue(e.currentTarget.value)} placeholder="for protected calls" />
    <button type="submit">Keep</button>
    <span class="muted small" id="token-status" aria-live="polite">${saved}</span>
  </form>`;
}

function useHeaderFacts() {
  const [facts, setFacts] = useState({ info: null, ready: null, config: null });
  const load = async () => {
    const [info, ready, config] = await Promise.all([
      api('GET', '/v1/info'), api('GET', '/readyz', { accept: 'text/plain, application/problem+json' }),
      api('GET', '/v1/config')]);
    setFacts({ info: info.ok ? info.data : null, ready: ready.ok ? 'ready' : 'not ready', config: config.ok ? config.data : null });
  };
  useEffect(() => { load(); }, []);
  useInterval(load, HEADER_POLL_MS);
  useEvent('runner', load);
  return facts;
}

function Header({ route }) {
  const { info, ready, config } = useHeaderFacts();
  const live = useLive();
  const locked = config && config.locked;
  const nav = [['queries', 'Queries'], ['cluster', 'Cluster'], ['config', 'Config'], ['datasets', 'Datasets']];
  const current = route.view === 'query' ? 'queries' : route.view;
  return html`<header class="top">
    <button type="button" class="skip" onClick=${() => document.getElementById('main').focus()}>Skip to the view</button>
    <div class="brand">
      <a href="#/queries" class="logo">framed</a>
      <span class="facts-inline">
        <span id="info-version" title="version">${info ? info.version : '—'}</span>
        <span id="info-role" class="muted">${info ? info.role : ''}</span>
        <span id="info-ready" class=${ready === 'ready' ? 'ok' : 'bad'}>${ready || '—'}</span>
        <span id="info-lock" class=${locked ? 'lock locked' : 'lock'}>${config ? (locked ? 'locked' : 'unlocked') : '—'}</span>
        <span id="info-config-id">${config && config.config_id ? html`<${ConfigId} id=${config.config_id} />` : ''}</span>
        <span id="live-status" class=${live ? 'live on' : 'live'} title=${live ? 'updates arrive by GET /v1/events' : 'the event stream is not open: polling'}>${live ? 'live' : 'polling'}</span>
      </span>
    </div>
    <nav aria-label="views"><ul>
      ${nav.map(([v, label]) => html`<li><a href=${href(v)} id=${`nav-${v}`} aria-current=${current === v ? 'page' : undefined}>${label}</a></li>`)}
    </ul></nav>
    <${TokenForm} />
  </header>`;
}

function App() {
  const route = useRoute();
  useEffect(() => { document.body.dataset.ready = '1'; }, []);
  useEffect(() => {
    const names = { queries: 'Queries', query: `Query ${route.id}`, cluster: 'Cluster', config: 'Config', datasets: 'Datasets' };
    document.title = `${names[route.view]} · framed`;
    document.body.dataset.view = route.view;
  }, [route.view, route.id]);
  let view;
  if (route.view === 'query') view = html`<${QueryView} id=${route.id} key=${route.id} />`;
  else if (route.view === 'cluster') view = html`<${ClusterView} />`;
  else if (route.view === 'config') view = html`<${ConfigView} />`;
  else if (route.view === 'datasets') view = html`<${DatasetsView} />`;
  else view = html`<${QueriesView} params=${route.params} />`;
  return html`<${Header} route=${route} /><main id="main" tabindex="-1">${view}</main>`;
}

startEvents();
render(html`<${App} />`, document.getElementById('app'));
