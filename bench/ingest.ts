// npm run bench:ingest — ingest throughput and latency over loopback, beside a bare node:http ceiling measured in the same run.
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import autocannon from 'autocannon';
import { createProjectKey, startProcess, startRunwatch, type ServerProcess } from './lib/service-process';

const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 50);
const DURATION_SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const BATCH_SIZE = 1000;

// The ceiling: a server that reads the body and answers 201 with a fixed body, nothing else.
const BARE_SERVER = `
  const http = require('node:http');
  const body = JSON.stringify({ id: '${randomUUID()}', timestamp: new Date().toISOString() });
  http.createServer((req, res) => {
    req.resume();
    req.on('end', () => { res.writeHead(201, { 'content-type': 'application/json' }); res.end(body); });
  }).listen(Number(process.env.PORT), '127.0.0.1');`;

interface Figure {
  name: string;
  runsPerSecond: number;
  requestsPerSecond: number;
  p50: number;
  p99: number;
  rssMiB: number;
  /** Cores the server used during the counted run: its JavaScript thread, and all its other threads (the engine's above all). */
  mainCores: number;
  otherCores: number;
  /** The machine's 1-minute load average when the counted run began: anything else running shows here. */
  loadBefore: number;
  failures: number;
}

type Load = Omit<autocannon.Options, 'url'> & { path?: string };

async function measure(name: string, server: ServerProcess, { path: urlPath = '/', ...options }: Load, runsPerRequest: number): Promise<Figure> {
  const url = `${server.url}${urlPath}`;
  // A short warm-up lets the JIT and the stores settle before the counted run.
  await autocannon({ ...options, url, connections: CONNECTIONS, duration: 2 });
  const loadBefore = os.loadavg()[0];
  const cpuBefore = server.cpuSeconds();
  const result = await autocannon({ ...options, url, connections: CONNECTIONS, duration: DURATION_SECONDS });
  const cpuAfter = server.cpuSeconds();
  return {
    name,
    runsPerSecond: (result.requests.average * runsPerRequest),
    requestsPerSecond: result.requests.average,
    p50: result.latency.p50,
    p99: result.latency.p99,
    rssMiB: server.rssMiB(),
    mainCores: (cpuAfter.main - cpuBefore.main) / DURATION_SECONDS,
    otherCores: (cpuAfter.others - cpuBefore.others) / DURATION_SECONDS,
    loadBefore,
    failures: result.non2xx + result.errors + result.timeouts,
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
      method: 'POST', path: '/ingest/agent/runs', headers: json(key),
      setupRequest: (request, context: RunContext) => {
        context.id = randomUUID();
        context.timestamp = new Date().toISOString();
        return { ...request, body: JSON.stringify({ agent_name: 'bench-agent', id: context.id, timestamp: context.timestamp, input: 'plan a trip' }) };
      },
    },
    {
      method: 'POST', headers: json(key),
      setupRequest: (request, context: RunContext) => ({
        ...request,
        path: `/ingest/agent/runs/${context.id}/finish`,
        body: JSON.stringify({
          timestamp: context.timestamp, status: 'completed', output: 'done',
          steps: [
            { index: 0, type: 'llm', model: 'gpt-x', tokens: 120, cost_usd: 0.0012, output: 'call search' },
            { index: 1, type: 'tool', tool_name: 'search', input: '{"q":"paris"}', output: 'sunny' },
          ],
        }),
      }),
    },
  ];
}

function batchBody(): string {
  const now = Date.now();
  const runs = Array.from({ length: BATCH_SIZE }, (_, i) => ({
    agent_name: `agent-${i % 20}`,
    timestamp: new Date(now - 60_000 + i).toISOString(),
    finished_at: new Date(now - 60_000 + i + 1500).toISOString(),
    status: i % 10 === 0 ? 'failed' : 'completed',
    input: 'summarise the ticket',
    output: 'summary',
    steps: [
      { index: 0, type: 'llm', tokens: 300, cost_usd: 0.003, output: 'thinking' },
      { index: 1, type: 'tool', tool_name: 'lookup', input: '{"ticket":1}', output: 'ok' },
    ],
  }));
  return JSON.stringify({ runs });
}

function print(figures: Figure[]): void {
  const ceiling = figures[0].requestsPerSecond;
  console.log(`\nmachine: ${os.cpus().length} cores, ${(os.totalmem() / 1024 ** 3).toFixed(0)} GiB; node ${process.version}; ${CONNECTIONS} connections, ${DURATION_SECONDS}s each`);
  console.log('| scenario | runs/s | requests/s | p50 ms | p99 ms | server RSS MiB | server cores: JS thread + others | vs ceiling (req/s) | load before | failures |');
  console.log('|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|');
  for (const f of figures) {
    const ratio = `${((f.requestsPerSecond / ceiling) * 100).toFixed(0)}%`;
    const cores = `${f.mainCores.toFixed(2)} + ${f.otherCores.toFixed(2)}`;
    console.log(`| ${f.name} | ${Math.round(f.runsPerSecond)} | ${Math.round(f.requestsPerSecond)} | ${f.p50} | ${f.p99} | ${f.rssMiB.toFixed(0)} | ${cores} | ${ratio} | ${f.loadBefore.toFixed(2)} | ${f.failures} |`);
  }
}

async function main(): Promise<void> {
  // The last run's data is moved aside now and deleted only after this run's measurements: on this machine's
  // file system (ext4 without a journal), creating a file skips the inodes freed in the last minutes, one by one,
  // so deleting a run's tens of thousands of files just before measuring slows every insert measured after it.
  const dataDir = path.resolve('.bench-data', 'ingest');
  const previous = path.resolve('.bench-data', `ingest-previous-${process.pid}`);
  if (fs.existsSync(dataDir)) fs.renameSync(dataDir, previous);
  const figures: Figure[] = [];

  const bare = await startProcess(['-e', BARE_SERVER], {}, 18_080, '/');
  figures.push(await measure('ceiling: bare node:http 201', bare, { method: 'POST', headers: { 'content-type': 'application/json' }, body: startBody() }, 1));
  await bare.stop();

  const runwatch = await startRunwatch(dataDir, 18_081);
  try {
    const { key } = await createProjectKey(runwatch.url);
    figures.push(await measure('runwatch: run start', runwatch, { method: 'POST', path: '/ingest/agent/runs', headers: json(key), body: startBody() }, 1));
    const pairs = await measure('runwatch: start + finish (2 requests a run)', runwatch, { requests: startFinishRequests(key) }, 0.5);
    figures.push(pairs);
    figures.push(await measure(`runwatch: batch of ${BATCH_SIZE} whole runs`, runwatch, { method: 'POST', path: '/ingest/agent/runs/batch', headers: json(key), body: batchBody() }, BATCH_SIZE));
  } finally {
    await runwatch.stop();
  }
  print(figures);
  fs.rmSync(previous, { recursive: true, force: true });
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
