// router: routes in the URL hash (#/queries/q-...), so reload, back and links work.
// parseRoute turns the hash into {view, id, params}; useRoute re-renders on hashchange.
import { useEffect, useState } from 'preact/hooks';

export const VIEWS = ['queries', 'cluster', 'config', 'datasets'];

export function parseRoute(hash) {
  const raw = (hash || '').replace(/^#\/?/, '');
  const [pathPart, query = ''] = raw.split('?');
  const segs = pathPart.split('/').filter(Boolean).map((s) => decodeURIComponent(s));
  const view = VIEWS.includes(segs[0]) ? segs[0] : 'queries';
  const id = view === 'queries' && segs[1] ? segs[1] : null;
  return { view: id ? 'query' : view, id, params: Object.fromEntries(new URLSearchParams(query)) };
}

export function href(view, id, params) {
  let h = `#/${view}`;
  if (id) h += `/${encodeURIComponent(id)}`;
  const q = params ? new URLSearchParams(Object.entries(params).filter(([, v]) => v)).toString() : '';
  return q ? `${h}?${q}` : h;
}

export function navigate(view, id, params) {
  location.hash = href(view, id, params);
}

export function useRoute() {
  const [route, setRoute] = useState(() => parseRoute(location.hash));
  useEffect(() => {
    const on = () => setRoute(parseRoute(location.hash));
    addEventListener('hashchange', on);
    return () => removeEventListener('hashchange', on);
  }, []);
  return route;
}
