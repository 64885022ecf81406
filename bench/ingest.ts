// npm run bench:ingest — ingest throughput and latency over loopback beside a bare node:http ceiling, batch ingest end
// to end beside the engine's own bulk-insert rate, OTLP exports beside the ceiling with the same bodies, and the
// engine's parts and cores per scenario, all in one run.
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import autocannon from 'autocannon';
import { loadConfig } from '../src/config';
import { batchEndToEnd, type EndToEndFigure } from './lib/batch-end-to-end';
import { countedLoad } from './lib/counted-load';
import { measureBulkInsert } from './lib/engine-reference';
import { otlpExport, SPANS_PER_TRACE } from './lib/otlp-traces';
import { printGoals, printTable, type Figure, type Scenarios } from './lib/ingest-report';
import { startProbe } from './lib/probe';
import {
  createProjectKey,
  startProcess,
  startRunwatch,
  waitUntilIdle,
  type ServerProcess,
} from './lib/service-process';
import { batchBody, wholeRunItems, type WholeRunItem } from './lib/whole-runs';

const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 64);
const WARM_UP_SECONDS = 2;
const DURATION_SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const BATCH_SIZE = 1000;
// End to end: enough batches for the flushes of a durable log (about one a second) to be a small part of the time.
const END_TO_END_BATCHES = Number(process.env.BENCH_E2E_BATCHES ?? 200);
const END_TO_END_TIMEOUT_SECONDS = 120;
// The engine alone inserts 50,000 runs a chunk (their 100,000 steps in an insert of their own).
const ENGINE_CHUNK_RUNS = 50_000;
const MINUTE_MS = 60_000;
// An OTLP export as a batch span processor sends it: up to 512 spans (maxExportBatchSize), here 85 traces of 6.
const OTLP_TRACES_PER_EXPORT = 85;

// The ceiling: a server that reads the body and answers 201 with a fixed body, nothing else.
const BARE_SERVER = `
  const http = require('node:http');
  const body = JSON.stringify({ id: '${randomUUID()}', timestamp: new Date().toISOString() });
  http.createServer((req, res) => {
    req.resume();
    req.on('end', () => { res.writeHead(201, { 'content-type': 'application/json' }); res.end(body); });
  }).listen(Number(process.env.PORT), '127.0.0.1');`;

type Load = Omit<autocannon.Options, 'url'> & { path?: string };

async function measure(
  name: string,
  server: ServerProcess,
  { path: urlPath = '/', ...options }: Load,
  runsPerRequest: number,
): Promise<Figure> {
  await waitUntilIdle(server);
  // The first seconds let the JIT and the stores settle; only what completes in the next ones counts.
  const load = await countedLoad(
    { ...options, url: `${server.url}${urlPath}`, connections: CONNECTIONS },
    WARM_UP_SECONDS,
    DURATION_SECONDS,
    () => startProbe(server.cpuSeconds, server.engineDir),
  );
  const requestsPerSecond = load.responses / load.usage.seconds;
  return {
    name,
    runsPerSecond: requestsPerSecond * runsPerRequest,
    requestsPerSecond,
    p50: load.p50,
    p99: load.p99,
    rssMiB: server.rssMiB(),
    usage: load.usage,
    failures: load.failures,
  };
}

const json = (key: string) => ({ 'content-type': 'application/json', authorization: `Bearer ${key}` });
const startBody = () => JSON.stringify({ agent_name: 'bench-agent', input: 'What is the weather in Paris?' });

/** A run's identity, kept per connection between its start and its finish. */
interface RunContext {
  id?: string;
  timestamp?: string;
}

function startFinishRequests(key: string): autocannon.Request[] {
  return [
    {
      method: 'POST',
      path: '/ingest/agent/runs',
      headers: json(key),
      setupRequest: (request, context: RunContext) => {
        context.id = randomUUID();
        context.timestamp = new Date().toISOString();
        return {
          ...request,
          body: JSON.stringify({
            agent_name: 'bench-agent',
            id: context.id,
            timestamp: context.timestamp,
            input: 'plan a trip',
          }),
        };
      },
    },
    {
      method: 'POST',
      headers: json(key),
      setupRequest: (request, context: RunContext) => ({
        ...request,
        path: `/ingest/agent/runs/${context.id}/finish`,
        body: JSON.stringify({
          timestamp: context.timestamp,
          status: 'completed',
          output: 'done',
          steps: [
            { index: 0, type: 'llm', model: 'gpt-x', tokens: 120, cost_usd: 0.0012, output: 'call search' },
            { index: 1, type: 'tool', tool_name: 'search', input: '{"q":"paris"}', output: 'sunny' },
          ],
        }),
      }),
    },
  ];
}

const batchRequest = (key: string, body: string): Load => ({
  method: 'POST',
  path: '/ingest/agent/runs/batch',
  headers: json(key),
  body,
});

/** The bare server under the starts' load, and under the OTLP exports' (the same bodies, answered unread). */
async function measureCeilings(otlp: ReturnType<typeof otlpExport>): Promise<{ ceiling: Figure; otlpCeiling: Figure }> {
  const bare = await startProcess(['-e', BARE_SERVER], {}, 18_080, '/');
  try {
    const ceiling = await measure(
      'ceiling: bare node:http 201',
      bare,
      { method: 'POST', headers: { 'content-type': 'application/json' }, body: startBody() },
      1,
    );
    const otlpCeiling = await measure(
      `ceiling: bare node:http 201, the OTLP exports (${otlp.spans} spans each)`,
      bare,
      { method: 'POST', headers: { 'content-type': 'application/x-protobuf' }, body: otlp.template },
      OTLP_TRACES_PER_EXPORT,
    );
    return { ceiling, otlpCeiling };
  } finally {
    await bare.stop();
  }
}

/** OTLP/HTTP protobuf exports, each of fresh traces (never a re-export). */
const otlpLoad = (key: string, otlp: ReturnType<typeof otlpExport>): Load => ({
  requests: [
    {
      method: 'POST',
      path: '/v1/traces',
      headers: { 'content-type': 'application/x-protobuf', authorization: `Bearer ${key}` },
      setupRequest: (request) => ({ ...request, body: otlp.fresh() }),
    },
  ],
});

/** From the first batch request until the summary of a fresh project counts every run acknowledged. */
async function measureEndToEnd(runwatch: ServerProcess): Promise<{ figure: Figure; detail: EndToEndFigure }> {
  const { projectId, key } = await createProjectKey(runwatch.url);
  await waitUntilIdle(runwatch);
  const now = Date.now();
  // The runs start in the minute before now; the window holds them with minutes to spare on both sides.
  const window = { from: new Date(now - 10 * MINUTE_MS), to: new Date(now + 10 * MINUTE_MS) };
  const detail = await batchEndToEnd(runwatch, {
    projectId,
    key,
    body: batchBody(wholeRunItems(BATCH_SIZE, now)),
    batches: END_TO_END_BATCHES,
    concurrency: CONNECTIONS,
    window,
    timeoutSeconds: END_TO_END_TIMEOUT_SECONDS,
  });
  const complete = detail.counted >= detail.acknowledged;
  const figure: Figure = {
    name: `runwatch: batch end to end (${END_TO_END_BATCHES} batches of ${BATCH_SIZE}, until the summary counts them)`,
    runsPerSecond: complete ? detail.acknowledged / detail.countedAt : 0,
    requestsPerSecond: END_TO_END_BATCHES / detail.acknowledgedAt,
    p50: detail.p50,
    p99: detail.p99,
    rssMiB: runwatch.rssMiB(),
    usage: detail.usage,
    failures: detail.failures,
  };
  return { figure, detail };
}

async function measureRunwatch(dataDir: string, items: readonly WholeRunItem[], otlp: ReturnType<typeof otlpExport>) {
  const runwatch = await startRunwatch(dataDir, 18_081);
  try {
    const { key } = await createProjectKey(runwatch.url);
    const starts = await measure(
      'runwatch: run start',
      runwatch,
      { method: 'POST', path: '/ingest/agent/runs', headers: json(key), body: startBody() },
      1,
    );
    const pairs = await measure(
      'runwatch: start + finish (2 requests a run)',
      runwatch,
      { requests: startFinishRequests(key) },
      0.5,
    );
    const batch = await measure(
      `runwatch: batch of ${BATCH_SIZE} whole runs`,
      runwatch,
      batchRequest(key, batchBody(items)),
      BATCH_SIZE,
    );
    const otlpFigure = await measure(
      `runwatch: OTLP protobuf exports of ${OTLP_TRACES_PER_EXPORT} traces (1 agent span + 5 children)`,
      runwatch,
      otlpLoad(key, otlp),
      OTLP_TRACES_PER_EXPORT,
    );
    const endToEnd = await measureEndToEnd(runwatch);
    return { starts, pairs, batch, otlp: otlpFigure, endToEnd };
  } finally {
    await runwatch.stop();
  }
}

/** Last, once the server has stopped: the two engines never compete for the machine's cores. */
async function measureEngine(dataDir: string, items: readonly WholeRunItem[]): Promise<Figure> {
  const engine = await measureBulkInsert({
    dataDir,
    items,
    chunkRuns: ENGINE_CHUNK_RUNS,
    seconds: DURATION_SECONDS,
    thresholds: loadConfig({}).loopThresholds,
  });
  return {
    name:
      `engine alone: bulk insert of the batch's rows, ` +
      `${ENGINE_CHUNK_RUNS.toLocaleString('en-US')} runs an insert (bench process)`,
    runsPerSecond: engine.runsPerSecond,
    requestsPerSecond: undefined,
    p50: undefined,
    p99: undefined,
    rssMiB: engine.rssMiB,
    usage: engine.usage,
    failures: 0,
  };
}

function printEndToEnd(detail: EndToEndFigure): void {
  const runs = (value: number) => value.toLocaleString('en-US');
  const counted =
    detail.counted >= detail.acknowledged
      ? `the summary counted all of them at ${detail.countedAt.toFixed(1)} s ` +
        `(${(detail.countedAt - detail.acknowledgedAt).toFixed(1)} s after the last acknowledgement, ` +
        `${detail.summaryCalls} summary calls)`
      : `the summary counted only ${runs(detail.counted)} after ${END_TO_END_TIMEOUT_SECONDS} s more ` +
        `(${detail.summaryCalls} calls): no end-to-end figure`;
  console.log(
    `\nbatch end to end: ${runs(detail.acknowledged)} runs acknowledged in ${detail.acknowledgedAt.toFixed(1)} s ` +
      `(${CONNECTIONS} batches in flight, ${detail.failures} failed); ${counted}`,
  );
}

async function main(): Promise<void> {
  // The last run's data is moved aside now and deleted only after this run's measurements: on this machine's
  // file system (ext4 without a journal), creating a file skips the inodes freed in the last minutes, one by one,
  // so deleting a run's tens of thousands of files just before measuring slows every insert measured after it.
  const dataDir = path.resolve('.bench-data', 'ingest');
  const previous = path.resolve('.bench-data', `ingest-previous-${process.pid}`);
  if (fs.existsSync(dataDir)) fs.renameSync(dataDir, previous);
  // One batch's runs: the body the batch scenario sends, and the rows the engine alone inserts.
  const items = wholeRunItems(BATCH_SIZE, Date.now());

  const otlp = otlpExport(OTLP_TRACES_PER_EXPORT);

  const { ceiling, otlpCeiling } = await measureCeilings(otlp);
  const {
    starts,
    pairs,
    batch,
    otlp: otlpFigure,
    endToEnd,
  } = await measureRunwatch(path.join(dataDir, 'service'), items, otlp);
  // The service's and the bench's engines have data directories of their own.
  const engine = await measureEngine(path.join(dataDir, 'engine'), items);

  const scenarios: Scenarios = {
    ceiling,
    starts,
    pairs,
    batch,
    endToEnd: endToEnd.figure,
    engine,
    otlp: otlpFigure,
    otlpCeiling,
    spansPerRun: SPANS_PER_TRACE,
  };
  printTable([ceiling, starts, pairs, batch, endToEnd.figure, engine, otlpCeiling, otlpFigure], {
    connections: CONNECTIONS,
    seconds: DURATION_SECONDS,
  });
  printEndToEnd(endToEnd.detail);
  printGoals(scenarios);
  fs.rmSync(previous, { recursive: true, force: true });
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
