// The model price table (contract §4): name matching, prices, overrides; and priced steps through the REST API.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import shipped from '../../src/pricing/model-prices.json';
import { canonicalModelName, loadPriceTable } from '../../src/pricing/prices';
import { getSteps, keyAuth, readRun, startRun } from '../ingest/run-helpers';
import { anotherService, startTestApp, type TestApp } from '../support/app';
import { setUpProject } from '../support/fixtures';

const entry = (model: string) => shipped.models.find((candidate) => candidate.model === model)!;
const perMillion = (tokens: number, price: number) => (tokens * price) / 1_000_000;

describe('the price table', () => {
  const prices = loadPriceTable();

  it.each([
    ['gpt-4o-2024-08-06', 'gpt-4o'],
    ['openai/gpt-4o', 'gpt-4o'],
    ['gpt-4o-mini-2024-07-18', 'gpt-4o-mini'],
    ['anthropic/claude-3-5-sonnet-20241022', 'claude-3-5-sonnet'],
    ['us.anthropic.claude-3-5-sonnet-20241022-v2:0', 'claude-3-5-sonnet'],
    ['claude-3-5-sonnet@20241022', 'claude-3-5-sonnet'],
    ['models/gemini-2.5-pro', 'gemini-2.5-pro'],
    ['claude-3-5-haiku-latest', 'claude-3-5-haiku'],
  ])('%s is priced as %s', (name, model) => {
    const { input, output } = entry(model);
    expect(prices.costOf(name, { inputTokens: 2_000_000, outputTokens: 1_000_000 })).toBeCloseTo(2 * input + output, 9);
  });

  it('every shipped entry has its source and date; names are canonical', () => {
    for (const model of shipped.models) {
      expect(model).toMatchObject({
        source: expect.stringMatching(/^https:\/\//),
        date: expect.stringMatching(/^\d{4}-\d{2}-\d{2}$/),
      });
      expect(canonicalModelName(model.model)).toBe(model.model);
    }
  });

  it('cached input tokens are priced at the cached rate; an unknown model costs 0', () => {
    const { input, output, cached_input: cached } = entry('gpt-4o');
    expect(prices.costOf('gpt-4o', { inputTokens: 1000, outputTokens: 10, cachedInputTokens: 400 })).toBeCloseTo(
      perMillion(600, input) + perMillion(400, cached!) + perMillion(10, output),
      12,
    );
    expect(prices.costOf('my-own-model', { inputTokens: 1000, outputTokens: 1000 })).toBe(0);
  });

  it('PRICE_TABLE_FILE adds models and overrides shipped ones', () => {
    const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'prices-')), 'prices.json');
    fs.writeFileSync(
      file,
      JSON.stringify({
        models: [
          { model: 'my-own-model', input: 1, output: 2 },
          { model: 'gpt-4o', input: 100, output: 100 },
        ],
      }),
    );
    const overridden = loadPriceTable(file);
    expect(overridden.costOf('my-own-model-v3', { inputTokens: 1_000_000, outputTokens: 1_000_000 })).toBe(3);
    expect(overridden.costOf('gpt-4o-2024-08-06', { inputTokens: 1_000_000, outputTokens: 0 })).toBe(100);
    fs.writeFileSync(file, JSON.stringify({ models: [{ model: 'x', input: -1, output: 0 }] }));
    expect(() => loadPriceTable(file)).toThrow(/models\.0\.input/);
  });
});

describe('steps through the REST API', () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await startTestApp();
  });
  afterAll(() => app.close());

  it('carry input/output tokens, summed if tokens is unsent; an llm step gets priced; a sent cost wins', async () => {
    const { project, key } = await setUpProject(app);
    const run = await startRun(app, key);
    const res = await app.http
      .post(`/ingest/agent/runs/${run.id}/steps`)
      .set(keyAuth(key))
      .send({
        timestamp: run.timestamp,
        steps: [
          { index: 0, type: 'llm', model: 'gpt-4o-2024-08-06', input_tokens: 1000, output_tokens: 200 },
          { index: 1, type: 'llm', model: 'gpt-4o', input_tokens: 1000, output_tokens: 200, cost_usd: 0.01 },
          { index: 2, type: 'llm', model: 'unknown-model', input_tokens: 5, output_tokens: 5, tokens: 7 },
          { index: 3, type: 'tool', tool_name: 'search', input_tokens: 3 },
        ],
      });
    expect(res.status).toBe(200);
    const steps = (await getSteps(app, key, project.id, run.id, run.timestamp)).body as Record<string, number | null>[];
    const { input, output } = entry('gpt-4o');
    expect(steps.map((step) => [step.input_tokens, step.output_tokens, step.tokens])).toEqual([
      [1000, 200, 1200],
      [1000, 200, 1200],
      [5, 5, 7],
      [3, null, 3],
    ]);
    expect(steps[0].cost_usd).toBeCloseTo(perMillion(1000, input) + perMillion(200, output), 12);
    expect(steps.slice(1).map((step) => step.cost_usd)).toEqual([0.01, 0, null]);
    const finished = await app.http
      .post(`/ingest/agent/runs/${run.id}/finish`)
      .set(keyAuth(key))
      .send({ timestamp: run.timestamp, status: 'completed' });
    expect(finished.body.total_cost_usd).toBeCloseTo(steps[0].cost_usd! + 0.01, 12);
    expect((await readRun(app, key, project.id, run)).total_tokens).toBe(1200 + 1200 + 7 + 3);
  });

  it("PRICE_TABLE_FILE prices a deployment's own model", async () => {
    const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'prices-')), 'prices.json');
    fs.writeFileSync(
      file,
      JSON.stringify({
        models: [{ model: 'house-model', input: 4, output: 8, source: 'our contract', date: '2026-11-01' }],
      }),
    );
    const priced = anotherService(app, { priceTableFile: file });
    const { project, key } = await setUpProject(priced);
    const res = await priced.http
      .post('/ingest/agent/runs/batch')
      .set(keyAuth(key))
      .send({
        runs: [
          {
            agent_name: 'house',
            status: 'completed',
            steps: [
              { index: 0, type: 'llm', model: 'house-model-2026-10-01', input_tokens: 500_000, output_tokens: 250_000 },
            ],
          },
        ],
      });
    const [{ id, timestamp }] = res.body.results;
    expect((await readRun(priced, key, project.id, { id, timestamp })).total_cost_usd).toBe(4);
  });
});
