// What the project spent, and on what: spend and tokens over time per agent and per model (docs/usage.md), and the
// totals of each.
import { useMemo } from 'preact/hooks';
import type { PageProps } from '../main';
import { get, searchOf } from '../api';
import { AgentFilter } from '../components/agent-filter';
import { Chart, type Series } from '../components/chart';
import { Table } from '../components/table';
import { Card, Show, WindowPicker } from '../components/ui';
import * as f from '../format';
import { useLoad, useWindow } from '../hooks';
import type { Usage, UsageGroup } from '../types';

/** Lines a chart draws one by one; the rest is one line, "others". */
const LINES = 6;
const PALETTE = ['#2563eb', '#7c3aed', '#059669', '#d97706', '#dc2626', '#0891b2', '#6b7280'];

type Measure = 'cost_usd' | 'tokens';
const nameOf = (group: UsageGroup, by: Usage['by']) => group.name ?? (by === 'model' ? '(no model)' : '(no agent)');

/** The groups of a usage as lines: the biggest one by one, the rest summed (the API's `others` included). */
function linesOf(usage: Usage, measure: Measure): Series[] {
  const shown = usage.groups.slice(0, LINES);
  const rest = [...usage.groups.slice(LINES), ...(usage.others ? [usage.others] : [])];
  const series = shown.map((group, i) => ({
    label: nameOf(group, usage.by),
    values: group.buckets.map((bucket) => bucket[measure]),
    color: PALETTE[i],
  }));
  if (rest.length > 0)
    series.push({
      label: 'others',
      values: rest[0].buckets.map((_, i) => rest.reduce((sum, group) => sum + group.buckets[i][measure], 0)),
      color: PALETTE[LINES],
    });
  return series;
}

const totalOf = (usage: Usage, measure: Measure) =>
  usage.groups.reduce((sum, group) => sum + group[measure], 0) + (usage.others?.[measure] ?? 0);

function Totals({ usage, title }: { usage: Usage; title: string }) {
  const total = totalOf(usage, 'cost_usd');
  const rows = [
    ...usage.groups.map((group) => ({ ...group, name: nameOf(group, usage.by) })),
    ...(usage.others ? [{ ...usage.others, name: `${usage.others.groups} others` }] : []),
  ];
  return (
    <section>
      <h2>{title}</h2>
      <Table
        rows={rows}
        rowKey={(row) => row.name}
        empty="Nothing was spent in this window."
        columns={[
          { label: usage.by === 'model' ? 'Model' : 'Agent', cell: (row) => row.name },
          { label: 'Spend', cell: (row) => f.usd(row.cost_usd) },
          { label: 'Share', cell: (row) => (total > 0 ? f.percent(row.cost_usd / total) : '—') },
          { label: 'Tokens', cell: (row) => f.count(row.tokens) },
        ]}
      />
    </section>
  );
}

export function CostsPage({ params, here }: PageProps) {
  const { projectID } = params;
  const window = useWindow(here.query);
  const agent = here.query.get('agent') ?? undefined;
  const loaded = useLoad(async () => {
    const of = (by: Usage['by']) =>
      get<Usage>(
        `/projects/${projectID}/agent/usage${searchOf({ from: window.from, to: window.to, by, agent_name: agent })}`,
      );
    const [byAgent, byModel] = await Promise.all([of('agent'), of('model')]);
    return { byAgent, byModel };
  }, [projectID, window, agent]);
  const charts = useMemo(() => {
    if (!loaded.data) return [];
    const { byAgent, byModel } = loaded.data;
    const timesOf = (usage: Usage) => usage.groups[0]?.buckets.map((bucket) => Date.parse(bucket.start)) ?? [];
    return [
      { title: 'Spend by agent', usage: byAgent, measure: 'cost_usd' as const, format: f.usd },
      { title: 'Spend by model', usage: byModel, measure: 'cost_usd' as const, format: f.usd },
      { title: 'Tokens by agent', usage: byAgent, measure: 'tokens' as const, format: f.count },
      { title: 'Tokens by model', usage: byModel, measure: 'tokens' as const, format: f.count },
    ].map(({ title, usage, measure, format }) => ({
      title,
      times: timesOf(usage),
      series: linesOf(usage, measure),
      format,
    }));
  }, [loaded.data]);
  return (
    <>
      <div class="page-head">
        <h1>Costs</h1>
        <AgentFilter projectID={projectID} path={here.path} query={here.query} window={window} />
        <WindowPicker path={here.path} query={here.query} />
      </div>
      <Show loaded={loaded}>
        {({ byAgent, byModel }) => (
          <>
            <section class="cards">
              <Card label="Total spend" value={f.usd(totalOf(byAgent, 'cost_usd'))} change="finished runs" />
              <Card label="Tokens" value={f.count(totalOf(byAgent, 'tokens'))} change="finished runs" />
              <Card
                label="Top agent"
                value={byAgent.groups[0] ? nameOf(byAgent.groups[0], 'agent') : '—'}
                change={byAgent.groups[0] && f.usd(byAgent.groups[0].cost_usd)}
              />
              <Card
                label="Top model"
                value={byModel.groups[0] ? nameOf(byModel.groups[0], 'model') : '—'}
                change={byModel.groups[0] && f.usd(byModel.groups[0].cost_usd)}
              />
            </section>
            <section class="charts">
              {charts.map((chart) => (
                <Chart key={chart.title} {...chart} sync="costs" />
              ))}
            </section>
            <div class="columns">
              <Totals usage={byAgent} title="Per agent" />
              <Totals usage={byModel} title="Per model" />
            </div>
            <p class="muted">
              Per agent: the runs&apos; own totals. Per model: their steps&apos; costs and tokens, which a run&apos;s
              total sent at finish can differ from. Runs still going count once they finish.
            </p>
          </>
        )}
      </Show>
    </>
  );
}
