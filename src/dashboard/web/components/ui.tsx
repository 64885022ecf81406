// Small pieces every page uses: loading and error states, cards, copy buttons, the window picker, the first-run guide.
import type { ComponentChildren } from 'preact';
import { useState } from 'preact/hooks';
import * as f from '../format';
import { useWindow, type Loaded } from '../hooks';
import { navigate, withChanges } from '../router';
import { PRESETS } from '../window';

export function Loading() {
  return (
    <p class="muted" role="status">
      Loading…
    </p>
  );
}

export function ErrorNote({ error, retry }: { error: Error; retry?: () => void }) {
  return (
    <div class="error" role="alert">
      <strong>Something went wrong.</strong> {error.message}
      {retry && (
        <button type="button" class="link" onClick={retry}>
          Try again
        </button>
      )}
    </div>
  );
}

/** Shows the data once loaded, else the loading or error state. */
export function Show<T>({ loaded, children }: { loaded: Loaded<T>; children: (data: T) => ComponentChildren }) {
  if (loaded.error) return <ErrorNote error={loaded.error} retry={loaded.reload} />;
  if (loaded.data === undefined) return <Loading />;
  return <>{children(loaded.data)}</>;
}

/** A figure of the window: its value, and how it changed from the window before (or why that cannot be said). */
export function Card({
  label,
  value,
  change,
  good,
}: {
  label: string;
  value: string;
  change?: string;
  good?: boolean;
}) {
  return (
    <div class="card">
      <div class="card-label">{label}</div>
      <div class="card-value">{value}</div>
      {change !== undefined && (
        <div class={`card-change ${good === undefined ? '' : good ? 'good' : 'bad'}`}>{change}</div>
      )}
    </div>
  );
}

/** Puts text on the clipboard (the Clipboard API where the page may use it, else a selection copied). */
async function copyText(text: string): Promise<void> {
  if (navigator.clipboard && window.isSecureContext) return navigator.clipboard.writeText(text);
  const area = document.createElement('textarea');
  area.value = text;
  area.setAttribute('readonly', '');
  area.className = 'offscreen';
  document.body.append(area);
  area.select();
  const copied = document.execCommand('copy');
  area.remove();
  if (!copied) throw new Error('the browser did not copy');
}

/** A button that copies `text`, and says so. */
export function CopyButton({ text, label = 'Copy' }: { text: string; label?: string }) {
  const [state, setState] = useState<'idle' | 'copied' | 'failed'>('idle');
  const copy = () =>
    copyText(text).then(
      () => setState('copied'),
      () => setState('failed'),
    );
  return (
    <button type="button" class="copy" onClick={copy} aria-live="polite">
      {state === 'copied' ? 'Copied' : state === 'failed' ? 'Select and copy it' : label}
    </button>
  );
}

/** An instant as the custom window's inputs show it: the dashboard's date format, to the minute, in UTC. */
const toInput = (iso: string) => f.dateTime(iso, 'minutes');
/** `2026-11-27 06:05` (UTC) as an instant; undefined when it does not read as one. */
function fromInput(text: string): string | undefined {
  const match = /^(\d{4}-\d{2}-\d{2})[ T](\d{2}:\d{2})$/.exec(text.trim());
  const at = match ? Date.parse(`${match[1]}T${match[2]}:00Z`) : NaN;
  return Number.isNaN(at) ? undefined : new Date(at).toISOString();
}

/** Presets and a custom range; the choice goes into the URL, which every chart and card of the page follows. */
export function WindowPicker({ path, query }: { path: string; query: URLSearchParams }) {
  const window = useWindow(query);
  const [custom, setCustom] = useState(window.name === 'custom');
  const [from, setFrom] = useState(toInput(window.from));
  const [to, setTo] = useState(toInput(window.to));
  const [invalid, setInvalid] = useState(false);
  const choose = (name: string) => {
    setCustom(false);
    navigate(path, withChanges(query, { window: name, from: undefined, to: undefined, offset: undefined }));
  };
  return (
    <div class="window-picker" role="group" aria-label="Window">
      {Object.keys(PRESETS).map((name) => (
        <button
          type="button"
          key={name}
          class={!custom && window.name === name ? 'active' : ''}
          aria-pressed={!custom && window.name === name}
          onClick={() => choose(name)}
        >
          {name}
        </button>
      ))}
      <button type="button" class={custom ? 'active' : ''} aria-pressed={custom} onClick={() => setCustom(true)}>
        custom
      </button>
      {custom && (
        <form
          class="inline custom-window"
          onSubmit={(event) => {
            event.preventDefault();
            const [start, end] = [fromInput(from), fromInput(to)];
            setInvalid(!start || !end);
            if (start && end)
              navigate(path, withChanges(query, { window: undefined, from: start, to: end, offset: undefined }));
          }}
        >
          <input aria-label="From (UTC)" value={from} onInput={(event) => setFrom(event.currentTarget.value)} />
          <input aria-label="To (UTC)" value={to} onInput={(event) => setTo(event.currentTarget.value)} />
          <button type="submit">Apply</button>
          {invalid && <span class="error-text">Write both as 2026-11-27 06:05 (UTC).</span>}
        </form>
      )}
    </div>
  );
}

/** What a project without runs shows: how to send the first one, with curl or OpenTelemetry. */
export function FirstRunGuide({ keysHref }: { keysHref: string }) {
  const origin = location.origin;
  return (
    <section class="guide">
      <h2>No runs yet</h2>
      <p>
        Create an <a href={keysHref}>API key</a> for this project, then report a run from your agent:
      </p>
      <pre>{`curl -X POST ${origin}/ingest/agent/runs/batch \\
  -H "Authorization: Bearer $RUNWATCH_API_KEY" -H "Content-Type: application/json" \\
  -d '{"runs":[{"agent_name":"my-agent","status":"completed","input":"hello","output":"hi",
       "steps":[{"index":0,"type":"llm","model":"gpt-4o-mini","tokens":42}]}]}'`}</pre>
      <p>Or point an OpenTelemetry SDK at runwatch (GenAI spans become runs and steps):</p>
      <pre>{`OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=${origin}/v1/traces
OTEL_EXPORTER_OTLP_TRACES_HEADERS="Authorization=Bearer $RUNWATCH_API_KEY"`}</pre>
    </section>
  );
}
