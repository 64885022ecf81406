// Small pieces every page uses: loading and error states, cards, the window picker, the first-run guide.
import type { ComponentChildren } from 'preact';
import { useState } from 'preact/hooks';
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
        <div class={`card-change ${good === undefined ? '' : good ? 'good' : 'bad'}`}>{change} vs previous</div>
      )}
    </div>
  );
}

/** An instant as a datetime-local input shows it: local time, with the offset of that date (not of today). */
function toLocalInput(iso: string): string {
  const date = new Date(iso);
  return new Date(date.getTime() - date.getTimezoneOffset() * 60_000).toISOString().slice(0, 16);
}

/** Presets and a custom range; the choice goes into the URL, which every chart and card of the page follows. */
export function WindowPicker({ path, query }: { path: string; query: URLSearchParams }) {
  const window = useWindow(query);
  const [custom, setCustom] = useState(window.name === 'custom');
  const [from, setFrom] = useState(toLocalInput(window.from));
  const [to, setTo] = useState(toLocalInput(window.to));
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
          class="inline"
          onSubmit={(event) => {
            event.preventDefault();
            navigate(
              path,
              withChanges(query, {
                window: undefined,
                from: new Date(from).toISOString(),
                to: new Date(to).toISOString(),
                offset: undefined,
              }),
            );
          }}
        >
          <input
            type="datetime-local"
            aria-label="From"
            value={from}
            onInput={(event) => setFrom(event.currentTarget.value)}
          />
          <input
            type="datetime-local"
            aria-label="To"
            value={to}
            onInput={(event) => setTo(event.currentTarget.value)}
          />
          <button type="submit">Apply</button>
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
