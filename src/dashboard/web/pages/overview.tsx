// A project at a glance: the window's summary against the window before it, its trends in time series with the
// alerts that fired marked on them, and what it spent.
import { useMemo } from 'preact/hooks';
import type { PageProps } from '../main';
import { get, searchOf } from '../api';
import { loadAlertMarks, type AlertMark } from '../alert-marks';
import { AgentFilter } from '../components/agent-filter';
import { Chart, type Series } from '../components/chart';
import { ScoreCards } from '../components/score-cards';
import { Card, FirstRunGuide, Show, WindowPicker } from '../components/ui';
import * as f from '../format';
import { useLoad, useWindow } from '../hooks';
import { href } from '../router';
import type { Summary, SummaryEntry, Timeseries, Usage } from '../types';
import { previousWindow, type Window } from '../window';

type Kind = 'relative' | 'points';
interface CardSpec {
  label: string;
  value: (entry: SummaryEntry, spend: number) => number;
  format: (value: number) => string;
  kind: Kind;
  upIsGood?: boolean;
}

/** The summary's cards: what they show, how it reads, how its change reads, and whether up is good. */
const CARDS: CardSpec[] = [
  { label: 'Runs', value: (entry) => entry.total_runs, format: f.count, kind: 'relative' },
  {
    label: 'Completion rate',
    value: (entry) => entry.completion_rate,
    format: f.percent,
    kind: 'points',
    upIsGood: true,
  },
  { label: 'Loop rate', value: (entry) => entry.loop_rate, format: f.percent, kind: 'points', upIsGood: false },
  {
    label: 'p95 duration',
    value: (entry) => entry.duration_p95_ms,
    format: f.duration,
    kind: 'relative',
    upIsGood: false,
  },
  { label: 'Total spend', value: (_, spend) => spend, format: f.usd, kind: 'relative', upIsGood: false },
  {
    label: 'Avg cost per run',
    value: (entry) => entry.avg_cost_usd,
    format: f.usd,
    kind: 'relative',
    upIsGood: false,
  },
  { label: 'Avg tokens per run', value: (entry) => entry.avg_tokens, format: f.count, kind: 'relative' },
];

const COLORS = { blue: '#2563eb', green: '#059669', red: '#dc2626', amber: '#d97706', violet: '#7c3aed' };

type Bucket = Timeseries['buckets'][number];
interface ChartSpec {
  title: string;
  times: number[];
  series: Series[];
  format: (value: number) => string;
}

/** The spend of every group of a usage, per bucket: what the project spent in each. */
function totalPerBucket(usage: Usage, measure: 'cost_usd' | 'tokens'): number[] {
  const groups = [...usage.groups, ...(usage.others ? [usage.others] : [])];
  return (groups[0]?.buckets ?? []).map((_, i) => groups.reduce((sum, group) => sum + group.buckets[i][measure], 0));
}

function charts(series: Timeseries, usage: Usage): ChartSpec[] {
  const times = series.buckets.map((bucket) => Date.parse(bucket.start));
  const counts = (field: keyof Bucket) => series.buckets.map((bucket) => bucket[field] as number);
  // A rate, mean or percentile of a bucket without runs is no value (a gap), not a 0.
  const of = (field: keyof Bucket) =>
    series.buckets.map((bucket) => (bucket.total_runs === 0 ? null : (bucket[field] as number)));
  const usageTimes = usage.groups[0]?.buckets.map((bucket) => Date.parse(bucket.start)) ?? times;
  const line = (label: string, values: (number | null)[], color: string) => [{ label, values, color }];
  return [
    { title: 'Runs', times, series: line('runs', counts('total_runs'), COLORS.blue), format: f.count },
    {
      title: 'Completion rate',
      times,
      series: line('completion rate', of('completion_rate'), COLORS.green),
      format: f.percent,
    },
    { title: 'Loop rate', times, series: line('loop rate', of('loop_rate'), COLORS.red), format: f.percent },
    {
      title: 'Duration',
      times,
      format: f.duration,
      series: [
        { label: 'p50', values: of('duration_p50_ms'), color: COLORS.green },
        { label: 'p95', values: of('duration_p95_ms'), color: COLORS.amber },
        { label: 'p99', values: of('duration_p99_ms'), color: COLORS.red },
      ],
    },
    {
      title: 'Spend',
      times: usageTimes,
      series: line('spend', totalPerBucket(usage, 'cost_usd'), COLORS.violet),
      format: f.usd,
    },
    {
      title: 'Avg cost per run',
      times,
      series: line('avg cost', of('avg_cost_usd'), COLORS.violet),
      format: f.usd,
    },
    {
      title: 'Tokens',
      times: usageTimes,
      series: line('tokens', totalPerBucket(usage, 'tokens'), COLORS.blue),
      format: f.count,
    },
  ];
}

const spendOf = (usage: Usage) =>
  usage.groups.reduce((sum, group) => sum + group.cost_usd, 0) + (usage.others?.cost_usd ?? 0);

/** What a card says of the change: vs the window before, unless that window had no runs to compare with. */
function changeOf(spec: CardSpec, summary: Summary, current: number, previous: number) {
  if (summary.previous.total_runs === 0) return { change: 'no runs in the previous window', good: undefined };
  const good = spec.upIsGood === undefined || current === previous ? undefined : current > previous === spec.upIsGood;
  return { change: `${f.delta(current, previous, spec.kind)} vs previous`, good };
}

function AlertList({ marks, rulesPath }: { marks: AlertMark[]; rulesPath: string }) {
  if (marks.length === 0) return <p class="muted">No alert fired in this window.</p>;
  return (
    <ul class="alert-marks">
      {[...marks].reverse().map((mark) => (
        <li key={mark.event.id}>
          <span class={`mark mark-${mark.kind}`} aria-hidden="true" />
          <span class="muted">{f.dateTime(mark.atMs)}</span>
          <span class={`badge kind-${mark.kind}`}>{mark.kind}</span>
          <a href={href(`${rulesPath}/${mark.rule.id}`)}>{mark.label}</a>
        </li>
      ))}
    </ul>
  );
}

async function loadOverview(orgID: string, projectID: string, window: Window, agent: string | undefined) {
  const query = searchOf({ from: window.from, to: window.to, agent_name: agent });
  const before = previousWindow(window);
  const usage = ({ from, to }: { from: string; to: string }) =>
    get<Usage>(`/projects/${projectID}/agent/usage${searchOf({ from, to, by: 'agent', agent_name: agent })}`);
  const [summary, series, spend, spendBefore, marks] = await Promise.all([
    get<Summary>(`/projects/${projectID}/agent/summary${query}`),
    get<Timeseries>(`/projects/${projectID}/agent/timeseries${query}`),
    usage(window),
    usage(before),
    loadAlertMarks(orgID, projectID, window, agent),
  ]);
  return { summary, series, spend, spendBefore, marks };
}

export function OverviewPage({ params, here }: PageProps) {
  const { orgID, projectID } = params;
  const window = useWindow(here.query);
  const agent = here.query.get('agent') ?? undefined;
  const loaded = useLoad(() => loadOverview(orgID, projectID, window, agent), [orgID, projectID, window, agent]);
  const plotted = useMemo(() => loaded.data && charts(loaded.data.series, loaded.data.spend), [loaded.data]);
  const range = useMemo(() => [Date.parse(window.from), Date.parse(window.to)] as const, [window]);
  const path = here.path;
  return (
    <>
      <div class="page-head">
        <h1>Overview</h1>
        <AgentFilter projectID={projectID} path={path} query={here.query} window={window} />
        <WindowPicker path={path} query={here.query} />
      </div>
      <Show loaded={loaded}>
        {({ summary, spend, spendBefore, marks }) =>
          summary.current.total_runs === 0 && summary.previous.total_runs === 0 && !agent ? (
            <FirstRunGuide keysHref={`#/orgs/${orgID}/projects/${projectID}/keys`} />
          ) : (
            <>
              <section class="cards">
                {CARDS.map((spec) => {
                  const current = spec.value(summary.current, spendOf(spend));
                  const previous = spec.value(summary.previous, spendOf(spendBefore));
                  return (
                    <Card
                      key={spec.label}
                      label={spec.label}
                      value={spec.format(current)}
                      {...changeOf(spec, summary, current, previous)}
                    />
                  );
                })}
              </section>
              <section class="charts">
                {plotted!.map((chart) => (
                  <Chart key={chart.title} {...chart} markers={marks} sync="overview" range={range} />
                ))}
              </section>
              <ScoreCards projectID={projectID} window={window} agent={agent} />
              <h2>Alerts in this window</h2>
              <AlertList marks={marks} rulesPath={`/orgs/${orgID}/projects/${projectID}/alerts`} />
            </>
          )
        }
      </Show>
    </>
  );
}
