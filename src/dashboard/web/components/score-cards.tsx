// The overview's scores (contract §10): a card per score name — its mean (or its share of yes, or its labels) against
// the window before — and a bar chart of each categorical score's labels.
import { get, searchOf } from '../api';
import * as f from '../format';
import { useLoad } from '../hooks';
import type { ScoreReportEntry } from '../types';
import type { Window } from '../window';
import { Card, Show } from './ui';
import './scores.css';

const mean = (value: number) => value.toLocaleString('en-US', { maximumFractionDigits: 3 });
const scores = (count: number) => `${f.count(count)} score${count === 1 ? '' : 's'}`;

/** A numeric or boolean score as a card: the mean (a share of yes for booleans) and its change. */
function MeanCard({ entry }: { entry: ScoreReportEntry }) {
  const boolean = entry.data_type === 'boolean';
  const format = boolean ? f.percent : mean;
  const current = entry.mean ?? 0;
  const change =
    entry.prev_mean === null
      ? 'no scores in the previous window'
      : `${f.delta(current, entry.prev_mean, boolean ? 'points' : 'relative')} vs previous`;
  return (
    <Card
      label={`${entry.name} · ${boolean ? 'yes' : 'mean'} · ${scores(entry.count)}`}
      value={format(current)}
      change={change}
    />
  );
}

/** A categorical score's labels as horizontal bars, most frequent first. */
function Labels({ entry }: { entry: ScoreReportEntry }) {
  const values = Object.entries(entry.values ?? {}).sort((a, b) => b[1] - a[1]);
  const most = Math.max(1, ...values.map(([, count]) => count));
  return (
    <figure class="chart score-labels">
      <figcaption>
        {entry.name} <span class="muted">· {scores(entry.count)}</span>
      </figcaption>
      {values.map(([label, count]) => (
        <div class="label-bar" key={label}>
          <span class="label-name">{label}</span>
          <span class="label-track">
            <span style={{ width: `${(count / most) * 100}%` }} />
          </span>
          <span class="label-count">{f.count(count)}</span>
        </div>
      ))}
    </figure>
  );
}

export function ScoreCards({ projectID, window, agent }: { projectID: string; window: Window; agent?: string }) {
  const search = searchOf({ from: window.from, to: window.to, agent_name: agent });
  const report = useLoad(() => get<ScoreReportEntry[]>(`/projects/${projectID}/agent/scores${search}`), [search]);
  return (
    <Show loaded={report}>
      {(entries) =>
        entries.length > 0 && (
          <section class="scores-overview" aria-label="Scores">
            <h2>Scores</h2>
            <div class="cards">
              {entries
                .filter((entry) => entry.data_type !== 'categorical')
                .map((entry) => (
                  <MeanCard key={entry.name} entry={entry} />
                ))}
            </div>
            <div class="charts">
              {entries
                .filter((entry) => entry.data_type === 'categorical')
                .map((entry) => (
                  <Labels key={entry.name} entry={entry} />
                ))}
            </div>
          </section>
        )
      }
    </Show>
  );
}
