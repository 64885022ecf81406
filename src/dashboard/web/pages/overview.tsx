// A project at a glance: the window's summary against the window before it, and its trends in time series.
import { useMemo } from 'preact/hooks';
import type { PageProps } from '../main';
import { get, searchOf } from '../api';
import { Chart, type Series } from '../components/chart';
import { AgentFilter } from '../components/agent-filter';
import { Card, FirstRunGuide, Show, WindowPicker } from '../components/ui';
import * as f from '../format';
import { useLoad, useWindow } from '../hooks';
import type { Summary, SummaryEntry, Timeseries } from '../types';

type Kind = 'relative' | 'points';
/** The summary's cards: which field, how it reads, how its change reads, and whether up is good. */
const CARDS: {
  field: keyof SummaryEntry;
  label: string;
  format: (value: number) => string;
  kind: Kind;
  upIsGood?: boolean;
}[] = [
  { field: 'total_runs', label: 'Runs', format: f.count, kind: 'relative' },
  { field: 'completion_rate', label: 'Completion rate', format: f.percent, kind: 'points', upIsGood: true },
  { field: 'loop_rate', label: 'Loop rate', format: f.percent, kind: 'points', upIsGood: false },
  { field: 'duration_p95_ms', label: 'p95 duration', format: f.duration, kind: 'relative', upIsGood: false },
  { field: 'avg_cost_usd', label: 'Avg cost per run', format: f.usd, kind: 'relative', upIsGood: false },
  { field: 'avg_tokens', label: 'Avg tokens per run', format: f.count, kind: 'relative' },
];

const COLORS = { blue: '#2563eb', green: '#059669', red: '#dc2626', amber: '#d97706', violet: '#7c3aed' };

type Bucket = Timeseries['buckets'][number];

function charts(series: Timeseries): { title: string; series: Series[]; format: (value: number) => string }[] {
  const counts = (field: keyof Bucket) => series.buckets.map((bucket) => bucket[field] as number);
  // A rate, mean or percentile of a bucket without runs is no value (a gap), not a 0.
  const of = (field: keyof Bucket) =>
    series.buckets.map((bucket) => (bucket.total_runs === 0 ? null : (bucket[field] as number)));
  return [
    { title: 'Runs', series: [{ label: 'runs', values: counts('total_runs'), color: COLORS.blue }], format: f.count },
    {
      title: 'Completion rate',
      series: [{ label: 'completion rate', values: of('completion_rate'), color: COLORS.green }],
      format: f.percent,
    },
    {
      title: 'Loop rate',
      series: [{ label: 'loop rate', values: of('loop_rate'), color: COLORS.red }],
      format: f.percent,
    },
    {
      title: 'Duration',
      format: f.duration,
      series: [
        { label: 'p50', values: of('duration_p50_ms'), color: COLORS.green },
        { label: 'p95', values: of('duration_p95_ms'), color: COLORS.amber },
        { label: 'p99', values: of('duration_p99_ms'), color: COLORS.red },
      ],
    },
    {
      title: 'Avg cost per run',
      series: [{ label: 'avg cost', values: of('avg_cost_usd'), color: COLORS.violet }],
      format: f.usd,
    },
  ];
}

export function OverviewPage({ params, here }: PageProps) {
  const { orgID, projectID } = params;
  const window = useWindow(here.query);
  const agent = here.query.get('agent') ?? undefined;
  const query = searchOf({ from: window.from, to: window.to, agent_name: agent });
  const loaded = useLoad(async () => {
    const [summary, series] = await Promise.all([
      get<Summary>(`/projects/${projectID}/agent/summary${query}`),
      get<Timeseries>(`/projects/${projectID}/agent/timeseries${query}`),
    ]);
    return { summary, series };
  }, [projectID, query]);
  const plotted = useMemo(
    () =>
      loaded.data && {
        times: loaded.data.series.buckets.map((b) => Date.parse(b.start)),
        charts: charts(loaded.data.series),
      },
    [loaded.data],
  );
  const path = here.path;
  return (
    <>
      <div class="page-head">
        <h1>Overview</h1>
        <AgentFilter projectID={projectID} path={path} query={here.query} window={window} />
        <WindowPicker path={path} query={here.query} />
      </div>
      <Show loaded={loaded}>
        {({ summary }) =>
          summary.current.total_runs === 0 && summary.previous.total_runs === 0 && !agent ? (
            <FirstRunGuide keysHref={`#/orgs/${orgID}/projects/${projectID}/keys`} />
          ) : (
            <>
              <section class="cards">
                {CARDS.map(({ field, label, format, kind, upIsGood }) => {
                  const current = summary.current[field];
                  const previous = summary.previous[field];
                  const good =
                    upIsGood === undefined || current === previous || previous === 0
                      ? undefined
                      : current > previous === upIsGood;
                  return (
                    <Card
                      key={field}
                      label={label}
                      value={format(current)}
                      change={f.delta(current, previous, kind)}
                      good={good}
                    />
                  );
                })}
              </section>
              <section class="charts">
                {plotted!.charts.map((chart) => (
                  <Chart
                    key={chart.title}
                    title={chart.title}
                    times={plotted!.times}
                    series={chart.series}
                    format={chart.format}
                  />
                ))}
              </section>
            </>
          )
        }
      </Show>
    </>
  );
}
