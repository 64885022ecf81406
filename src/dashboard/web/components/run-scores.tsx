// A run's scores on its page, and the reviewer's form that adds a human score or label (contract §10).
import { useState } from 'preact/hooks';
import { describeFailure, get, post, searchOf } from '../api';
import * as f from '../format';
import { useLoad } from '../hooks';
import type { Score } from '../types';
import { Field, Options, TextField } from './form';
import { Table } from './table';
import { ErrorNote, Show } from './ui';
import './scores.css';

type Kind = 'numeric' | 'boolean' | 'categorical';
const KINDS: { value: Kind; label: string }[] = [
  { value: 'numeric', label: 'a number' },
  { value: 'boolean', label: 'yes or no' },
  { value: 'categorical', label: 'a label' },
];

/** A score's value as it reads: numbers as typed, yes/no, labels as themselves. */
export const scoreValue = (value: Score['value']) =>
  typeof value === 'boolean' ? (value ? 'yes' : 'no') : String(value);

function ScoreForm({ path, added }: { path: string; added: () => void }) {
  const [name, setName] = useState('');
  const [kind, setKind] = useState<Kind>('numeric');
  const [value, setValue] = useState('');
  const [comment, setComment] = useState('');
  const [error, setError] = useState<Error>();
  const submit = async (event: Event) => {
    event.preventDefault();
    setError(undefined);
    const typed = kind === 'numeric' ? Number(value) : kind === 'boolean' ? value === 'yes' : value;
    try {
      await post(path, { scores: [{ name, value: typed, ...(comment ? { comment } : {}) }] });
    } catch (failure) {
      setError(describeFailure(failure));
      return;
    }
    setValue('');
    setComment('');
    added();
  };
  return (
    <form class="panel inline score-form" onSubmit={submit} aria-label="Add a score">
      <TextField
        label="Score"
        required
        pattern="[a-z0-9_.:\-]{1,100}"
        placeholder="helpfulness"
        value={name}
        onValue={setName}
      />
      <Field label="Kind">
        <select value={kind} onChange={(event) => setKind(event.currentTarget.value as Kind)}>
          <Options choices={KINDS} />
        </select>
      </Field>
      {kind === 'boolean' ? (
        <Field label="Value">
          <select value={value} required onChange={(event) => setValue(event.currentTarget.value)}>
            <option value="">…</option>
            <option value="yes">yes</option>
            <option value="no">no</option>
          </select>
        </Field>
      ) : (
        <TextField
          label="Value"
          required
          type={kind === 'numeric' ? 'number' : 'text'}
          step="any"
          maxLength={100}
          value={value}
          onValue={setValue}
        />
      )}
      <TextField label="Comment" maxLength={2000} value={comment} onValue={setComment} />
      <button type="submit" class="primary">
        Add score
      </button>
      {error && <ErrorNote error={error} />}
    </form>
  );
}

/** The run's scores, oldest first, and the form (a viewer's submission is refused by the API, and says so). */
export function RunScores({ projectID, runID, timestamp }: { projectID: string; runID: string; timestamp: string }) {
  const path = `/projects/${projectID}/agent/runs/${runID}/scores${searchOf({ timestamp })}`;
  const scores = useLoad(() => get<Score[]>(path), [path]);
  return (
    <section class="run-scores">
      <h2>Scores</h2>
      <Show loaded={scores}>
        {(rows) =>
          rows.length === 0 ? (
            <p class="muted">No score yet: an evaluator, your users or you can judge this run.</p>
          ) : (
            <Table
              rows={rows}
              rowKey={(score) => score.id}
              columns={[
                { label: 'Score', cell: (score) => score.name },
                { label: 'Value', cell: (score) => <strong>{scoreValue(score.value)}</strong> },
                { label: 'Source', cell: (score) => <span class="badge">{score.source}</span> },
                { label: 'Comment', cell: (score) => score.comment ?? '' },
                { label: 'When', cell: (score) => f.dateTime(score.created_at) },
              ]}
            />
          )
        }
      </Show>
      <ScoreForm path={path} added={scores.reload} />
    </section>
  );
}
