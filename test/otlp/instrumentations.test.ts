// OTLP ingest (contract §8) from the real clients agents use, each in its own process as an agent runs: Vercel's AI
// SDK 7 with its mock model; the official OpenAI client under OpenTelemetry's OpenAI instrumentation, under Arize's
// OpenInference instrumentation, and under Traceloop's SDK. The model server is the only thing faked (a local
// OpenAI-compatible endpoint); the instrumentations, SDKs and exporters are real, and export to the real service.
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { loadPriceTable } from '../../src/pricing/prices';
import { getSteps, listRuns } from '../ingest/run-helpers';
import { startTestApp, type TestApp } from '../support/app';
import { setUpProject } from '../support/fixtures';
import { QUESTION } from './clients/support-agent';
import { ANSWER, FAKE_MODEL, startFakeOpenAi, TURNS } from './fake-openai';
import { listen } from './otel';

const CLIENTS = path.join(__dirname, 'clients');
// An agent's process starts tsx and its SDK: seconds, and many more on a busy machine.
const CLIENT_TIMEOUT_MS = 90_000;
const runFile = promisify(execFile);
const prices = loadPriceTable();

let app: TestApp;
let server: Awaited<ReturnType<typeof listen>>;
let model: Awaited<ReturnType<typeof startFakeOpenAi>>;
beforeAll(async () => {
  app = await startTestApp();
  server = await listen(app);
  model = await startFakeOpenAi();
});
afterAll(async () => {
  await model?.close();
  await server?.close();
  await app?.close();
});

/** Runs a client as an agent's process: its key and endpoints in its environment, nothing else of the test's. */
async function runClient(file: string, key: string): Promise<void> {
  await runFile(process.execPath, ['--import', 'tsx', path.join(CLIENTS, file)], {
    timeout: CLIENT_TIMEOUT_MS,
    env: {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      // The OpenTelemetry exporter's settings, as the README has them; Traceloop's SDK has its own.
      OTEL_EXPORTER_OTLP_ENDPOINT: server.url,
      OTEL_EXPORTER_OTLP_HEADERS: `Authorization=Bearer ${key}`,
      TRACELOOP_BASE_URL: server.url,
      TRACELOOP_API_KEY: key,
      OPENAI_BASE_URL: model.baseUrl,
      OPENAI_API_KEY: 'sk-test-not-a-real-key',
    },
  }).catch((error: { stderr?: string; message: string }) => {
    throw new Error(`${file} failed: ${error.stderr || error.message}`);
  });
}

interface Step {
  type: string;
  name: string;
  model: string | null;
  tool_name: string | null;
  input: string;
  output: string;
  input_tokens: number | null;
  output_tokens: number | null;
  cost_usd: number | null;
}

/** Runs the client against a new project; the project's runs, each with its steps. */
async function runsOf(file: string) {
  const { key, project } = await setUpProject(app);
  await runClient(file, key);
  const { runs } = await listRuns(app, key, project.id);
  return Promise.all(
    (runs as { id: string; timestamp: string; [field: string]: unknown }[]).map(async (run) => ({
      run,
      steps: (await getSteps(app, key, project.id, run.id, run.timestamp)).body as Step[],
    })),
  );
}

/** The conversation and user a client names (contract §10), as the run reads them. */
const SESSIONS: Record<string, { session_id: string | null; user_id: string | null }> = {
  'openinference-openai.ts': { session_id: 'conv-openinference', user_id: 'alice' },
  'traceloop-openai.ts': { session_id: 'conv-traceloop', user_id: 'bob' },
};

const turnCost = ({ prompt_tokens, completion_tokens }: (typeof TURNS)[number]) =>
  prices.costOf(FAKE_MODEL, { inputTokens: prompt_tokens, outputTokens: completion_tokens });

describe.each([
  ['ai-sdk.mts', "Vercel's AI SDK 7 (@ai-sdk/otel), its mock model"],
  ['otel-openai.ts', "the OpenAI client under OpenTelemetry's OpenAI instrumentation"],
  ['openinference-openai.ts', "the OpenAI client under Arize's OpenInference instrumentation"],
  ['traceloop-openai.ts', "the OpenAI client under Traceloop's SDK"],
])('%s: %s', (file) => {
  it(
    'one run of the agent: its model call, the tool it asked for, its answer — with tokens and costs',
    async () => {
      const requestsBefore = model.requests.length;
      const runs = await runsOf(file);
      expect(runs).toHaveLength(1);
      const [{ run, steps }] = runs;
      expect(run).toMatchObject({
        agent_name: 'support-bot',
        status: 'completed',
        total_steps: 3,
        total_tokens: TURNS.reduce((sum, turn) => sum + turn.prompt_tokens + turn.completion_tokens, 0),
        loop_detected: false,
      });
      expect({ session_id: run.session_id, user_id: run.user_id }).toEqual(
        SESSIONS[file] ?? { session_id: null, user_id: null },
      );
      expect(run.input).toContain(QUESTION);
      expect(run.output).toContain(ANSWER);
      expect(run.total_cost_usd).toBeCloseTo(turnCost(TURNS[0]) + turnCost(TURNS[1]), 12);

      // The steps in the order they ran; the AI SDK's agent_step spans ("step 1", "step 2") are none of them.
      expect(steps.map((step) => [step.type, step.model ?? step.tool_name])).toEqual([
        ['llm', FAKE_MODEL],
        ['tool', 'lookup_order'],
        ['llm', FAKE_MODEL],
      ]);
      const [ask, lookUp, answer] = steps;
      expect([ask, answer].map((step) => [step.input_tokens, step.output_tokens])).toEqual(
        TURNS.map((turn) => [turn.prompt_tokens, turn.completion_tokens]),
      );
      expect(ask.cost_usd).toBeCloseTo(turnCost(TURNS[0]), 12);
      // Traceloop's SDK records a tool's arguments and result as JSON of its own ({"args":[…]}).
      // Traceloop's SDK records a tool's arguments and result as JSON of its own ({"args":[…]}).
      expect(lookUp.input).toMatch(/"order\\?":42/);
      expect(lookUp.output).toContain('shipped');
      // The OpenAI clients called the model server twice; the AI SDK's mock model is its own.
      expect(model.requests.length - requestsBefore).toBe(file === 'ai-sdk.mts' ? 0 : 2);
    },
    CLIENT_TIMEOUT_MS + 30_000,
  );
});
