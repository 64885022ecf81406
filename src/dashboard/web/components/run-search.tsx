// Finding runs on the Runs page (contract §11): a search box, filter chips and an "Export" menu. Everything lives in
// the page's URL (`#/…/runs?q=refund&tag=prod&tag=eu&model=gpt-4o`), so a search can be shared or reloaded; the
// same parameters, renamed where the page's differ, go to the runs list and to the export.
import { useState } from 'preact/hooks';
import { navigateSearch } from '../router';
import { Options } from './form';

/** The filters a chip stands for: the page's parameter (the API's too), how a chip reads, what the input takes. */
const CHIP_FILTERS = {
  tag: { label: 'tag', input: 'text' },
  model: { label: 'model', input: 'text' },
  tool_name: { label: 'tool', input: 'text' },
  session_id: { label: 'session', input: 'text' },
  user_id: { label: 'user', input: 'text' },
  min_duration_ms: { label: 'duration ≥ (ms)', input: 'number' },
  max_duration_ms: { label: 'duration ≤ (ms)', input: 'number' },
  min_cost_usd: { label: 'cost ≥ ($)', input: 'number' },
  max_cost_usd: { label: 'cost ≤ ($)', input: 'number' },
} as const;
type ChipFilter = keyof typeof CHIP_FILTERS;
const CHIP_NAMES = Object.keys(CHIP_FILTERS) as ChipFilter[];

/** The page's parameters the runs list and the export take as they are (tag repeated, a value each). */
export const SEARCH_PARAMS = ['q', ...CHIP_NAMES] as const;

/** The page's search parameters, as the API's: each value of each, in the page's order. */
export function searchParamsOf(query: URLSearchParams): [string, string][] {
  return SEARCH_PARAMS.flatMap((name) => query.getAll(name).map((value): [string, string] => [name, value]));
}

/** The page's query with a parameter's values changed: set, added to (a tag) or removed; paging starts over. */
function changed(query: URLSearchParams, change: (next: URLSearchParams) => void): URLSearchParams {
  const next = new URLSearchParams(query);
  next.delete('offset');
  change(next);
  return next;
}

/** The search box: text in a run's or its steps' input, output or error, sent on Enter. */
export function SearchBox({ path, query }: { path: string; query: URLSearchParams }) {
  const [text, setText] = useState(query.get('q') ?? '');
  const sent = text.trim();
  return (
    <form
      class="search-box"
      role="search"
      onSubmit={(event) => {
        event.preventDefault();
        navigateSearch(
          path,
          changed(query, (next) => (sent ? next.set('q', sent) : next.delete('q'))),
        );
      }}
    >
      <input
        type="search"
        aria-label="Search runs"
        placeholder="Search inputs, outputs, errors…"
        value={text}
        minLength={3}
        maxLength={200}
        onInput={(event) => setText(event.currentTarget.value)}
      />
      <button type="submit">Search</button>
    </form>
  );
}

/** The filters in force as chips (each removable), and a control that adds one. */
export function FilterChips({ path, query }: { path: string; query: URLSearchParams }) {
  const [kind, setKind] = useState<ChipFilter>('tag');
  const [value, setValue] = useState('');
  const chips = searchParamsOf(query);
  const remove = (name: string, removed: string) =>
    navigateSearch(
      path,
      changed(query, (next) => {
        const kept = next.getAll(name).filter((other) => other !== removed);
        next.delete(name);
        for (const other of kept) next.append(name, other);
      }),
    );
  const add = () => {
    const sent = value.trim();
    if (!sent) return;
    // Tags add up (a run must carry every one); any other filter takes one value.
    navigateSearch(
      path,
      changed(query, (next) => (kind === 'tag' ? next.append(kind, sent) : next.set(kind, sent))),
    );
    setValue('');
  };
  return (
    <div class="chips" role="group" aria-label="Search filters">
      {chips.map(([name, chosen]) => (
        <span class="chip" key={`${name}=${chosen}`}>
          {name === 'q' ? 'text' : CHIP_FILTERS[name as ChipFilter].label}: <strong>{chosen}</strong>
          <button
            type="button"
            class="link"
            aria-label={`Remove ${name} ${chosen}`}
            onClick={() => remove(name, chosen)}
          >
            ×
          </button>
        </span>
      ))}
      <form
        class="chip-add"
        onSubmit={(event) => {
          event.preventDefault();
          add();
        }}
      >
        <select
          aria-label="Filter by"
          value={kind}
          onChange={(event) => setKind(event.currentTarget.value as ChipFilter)}
        >
          <Options choices={CHIP_NAMES.map((name) => ({ value: name, label: CHIP_FILTERS[name].label }))} />
        </select>
        <input
          aria-label="Filter value"
          type={CHIP_FILTERS[kind].input}
          min={0}
          step="any"
          value={value}
          onInput={(event) => setValue(event.currentTarget.value)}
        />
        <button type="submit">Add filter</button>
      </form>
    </div>
  );
}

const EXPORTS = [
  { format: 'csv', label: 'CSV' },
  { format: 'jsonl', label: 'JSON Lines' },
  { format: 'jsonl', label: 'JSON Lines, with steps', steps: true },
  { format: 'parquet', label: 'Parquet' },
  { format: 'parquet', label: 'Parquet, with steps', steps: true },
];

/**
 * "Export": downloads of the runs the page lists (its window and filters, every page of them up to the export's
 * default limit), each a link the session cookie signs in, which the browser saves under the name the service gives.
 */
export function ExportMenu({ projectID, params }: { projectID: string; params: [string, string][] }) {
  return (
    <details class="menu export-menu">
      <summary class="button">Export</summary>
      <ul role="menu">
        {EXPORTS.map(({ format, label, steps }) => {
          const search = new URLSearchParams([
            ...params,
            ['format', format],
            ...(steps ? [['include_steps', 'true']] : []),
          ]);
          return (
            <li role="none" key={label}>
              <a role="menuitem" href={`/projects/${projectID}/agent/runs/export?${search}`} download>
                {label}
              </a>
            </li>
          );
        })}
      </ul>
    </details>
  );
}
