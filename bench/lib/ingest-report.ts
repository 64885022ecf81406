// Prints the ingest benchmark: one table of every scenario, then each goal's figure beside its reference.
import os from 'node:os';
import type { Usage } from './probe';

export interface Figure {
  name: string;
  runsPerSecond: number;
  /** Undefined where there are no requests (the engine alone). */
  requestsPerSecond: number | undefined;
  p50: number | undefined;
  p99: number | undefined;
  rssMiB: number;
  usage: Usage;
  failures: number;
}

/** The figures the goals compare. */
export interface Scenarios {
  ceiling: Figure;
  starts: Figure;
  pairs: Figure;
  batch: Figure;
  endToEnd: Figure;
  engine: Figure;
  /** OTLP exports, in traces (runs) a second; `spansPerRun` spans each. */
  otlp: Figure;
  otlpCeiling: Figure;
  spansPerRun: number;
}

const count = (value: number) => Math.round(value).toLocaleString('en-US');
const optional = (value: number | undefined, format: (value: number) => string) =>
  value === undefined ? '—' : format(value);
const percent = (ratio: number) => `${(ratio * 100).toFixed(ratio < 0.1 ? 1 : 0)}%`;
const verdict = (met: boolean) => (met ? 'met' : 'missed');

/** Requests/s, 0 for a figure without requests (the engine alone). */
const requestsPerSecond = (figure: Figure) => figure.requestsPerSecond ?? 0;

function row(figure: Figure, ceiling: Figure): string {
  const { usage } = figure;
  const vsCeiling =
    figure.requestsPerSecond === undefined ? '—' : percent(figure.requestsPerSecond / requestsPerSecond(ceiling));
  return `| ${[
    figure.name,
    count(figure.runsPerSecond),
    optional(figure.requestsPerSecond, count),
    optional(figure.p50, count),
    optional(figure.p99, count),
    figure.rssMiB.toFixed(0),
    usage.mainCores.toFixed(2),
    usage.otherCores.toFixed(2),
    optional(usage.partsPerMinute, count),
    vsCeiling,
    usage.loadBefore.toFixed(2),
    figure.failures,
  ].join(' | ')} |`;
}

export function printTable(figures: readonly Figure[], run: { connections: number; seconds: number }): void {
  console.log(
    `\nmachine: ${os.cpus().length} cores, ${(os.totalmem() / 1024 ** 3).toFixed(0)} GiB; node ${process.version}; ` +
      `${run.connections} connections, ${run.seconds}s each`,
  );
  console.log(
    '| scenario | runs/s | requests/s | p50 ms | p99 ms | RSS MiB | cores: JS thread | cores: engine + other threads ' +
      '| engine parts/min | vs ceiling (req/s) | load before | failures |',
  );
  console.log('|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|');
  for (const figure of figures) console.log(row(figure, figures[0]));
}

/** One goal: a figure beside its reference, their ratio, and whether it reaches `atLeast`. */
function ratioLine(
  label: string,
  figure: string,
  reference: string,
  ratio: number,
  atLeast: number | undefined,
): string {
  const goal = atLeast === undefined ? '(no goal)' : `(goal ≥ ${percent(atLeast)}: ${verdict(ratio >= atLeast)})`;
  return `- ${label}: ${figure} vs ${reference} = ${percent(ratio)} ${goal}`;
}

export function printGoals({
  ceiling,
  starts,
  pairs,
  batch,
  endToEnd,
  engine,
  otlp,
  otlpCeiling,
  spansPerRun,
}: Scenarios): void {
  const ceilingRate = requestsPerSecond(ceiling);
  const ceilingText = `ceiling ${count(ceilingRate)} req/s`;
  const engineText = `the engine's bulk insert ${count(engine.runsPerSecond)} runs/s`;
  const startsP99 = starts.p99 ?? Infinity;
  console.log('\nGoals:');
  const startRate = requestsPerSecond(starts);
  console.log(
    `${ratioLine('run start', `${count(startRate)} req/s`, ceilingText, startRate / ceilingRate, 0.5)};` +
      ` p99 ${count(startsP99)} ms (goal ≤ 10 ms: ${verdict(startsP99 <= 10)})`,
  );
  const pairsP99 = pairs.p99 ?? Infinity;
  const pairRate = pairs.runsPerSecond;
  console.log(
    `${ratioLine('start + finish', `${count(pairRate)} runs/s`, ceilingText, pairRate / ceilingRate, 0.25)};` +
      ` p99 ${count(pairsP99)} ms (goal ≤ 15 ms: ${verdict(pairsP99 <= 15)})`,
  );
  // The JavaScript thread's CPU per start: what the event loop spends on one, HTTP included.
  const startMicros = (starts.usage.mainCores / requestsPerSecond(starts)) * 1e6;
  const ceilingMicros = (ceiling.usage.mainCores / ceilingRate) * 1e6;
  console.log(
    `- run start, JavaScript thread: ${startMicros.toFixed(0)} µs a start ` +
      `vs ${ceilingMicros.toFixed(0)} µs a request for the ceiling`,
  );
  console.log(
    ratioLine(
      'batch, end to end (until the summary counts every run)',
      `${count(endToEnd.runsPerSecond)} runs/s`,
      engineText,
      endToEnd.runsPerSecond / engine.runsPerSecond,
      0.6,
    ),
  );
  console.log(
    ratioLine(
      'batch, acknowledged',
      `${count(batch.runsPerSecond)} runs/s`,
      engineText,
      batch.runsPerSecond / engine.runsPerSecond,
      undefined,
    ) + `; goal ≥ 100,000 runs/s: ${verdict(batch.runsPerSecond >= 100_000)}`,
  );
  const spans = otlp.runsPerSecond * spansPerRun;
  const ceilingSpans = otlpCeiling.runsPerSecond * spansPerRun;
  console.log(
    ratioLine(
      'OTLP protobuf, acknowledged',
      `${count(spans)} spans/s`,
      `the same bodies to the bare ceiling ${count(ceilingSpans)} spans/s`,
      spans / ceilingSpans,
      undefined,
    ) + `; goal ≥ 50,000 spans/s: ${verdict(spans >= 50_000)}`,
  );
}
