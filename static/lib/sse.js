// sse: one EventSource on GET /v1/events shared by every view. Views subscribe by event type;
// while the stream is down (not served, or reconnecting) `live` is false and views poll instead.
// A stream the server closed for good is reopened after RETRY_MS.
import { useEffect, useRef, useState } from 'preact/hooks';

const RETRY_MS = 5000;
const TYPES = ['query', 'runner', 'worker', 'stats'];
const listeners = new Map(TYPES.map((t) => [t, new Set()]));
const statusListeners = new Set();
let source = null;
let live = false;
let retryTimer = null;

function setLive(v) {
  if (v === live) return;
  live = v;
  for (const fn of statusListeners) fn(v);
}

function dispatch(type, e) {
  let data;
  try { data = JSON.parse(e.data); } catch { return; }
  for (const fn of listeners.get(type)) fn(data);
}

export function startEvents() {
  if (source || typeof EventSource === 'undefined') return;
  source = new EventSource('/v1/events');
  source.onopen = () => setLive(true);
  source.onerror = () => {
    setLive(false);
    if (source && source.readyState === EventSource.CLOSED) {
      source = null;
      clearTimeout(retryTimer);
      retryTimer = setTimeout(startEvents, RETRY_MS);
    }
  };
  for (const t of TYPES) source.addEventListener(t, (e) => dispatch(t, e));
  // The server could not resume from our Last-Event-ID: what the views hold may be stale, so
  // the runner listeners (header, config, cluster) reload as after a freeze or reset.
  source.addEventListener('reset', () => { for (const fn of listeners.get('runner')) fn({}); });
}

export function isLive() {
  return live;
}

// Calls fn(data) for each event of type while the component is mounted.
export function useEvent(type, fn) {
  const ref = useRef(fn);
  ref.current = fn;
  useEffect(() => {
    const l = (d) => ref.current(d);
    listeners.get(type).add(l);
    return () => listeners.get(type).delete(l);
  }, [type]);
}

// true while the event stream is open.
export function useLive() {
  const [v, setV] = useState(live);
  useEffect(() => {
    statusListeners.add(setV);
    setV(live);
    return () => statusListeners.delete(setV);
  }, []);
  return v;
}

// Runs fn every ms while active (and once at once), e.g. the polling fallback.
export function useInterval(fn, ms, active = true) {
  const ref = useRef(fn);
  ref.current = fn;
  useEffect(() => {
    if (!active) return undefined;
    const t = setInterval(() => ref.current(), ms);
    return () => clearInterval(t);
  }, [ms, active]);
}
