// Loop detection end to end (contract §6): through the steps call (mid-run), at finish and in batch whole runs.
import { startTestApp, type TestApp } from '../support/app';
import { setUpProject } from '../support/fixtures';
import {
  type StepBody,
  failingTool,
  llm,
  postBatch,
  postFinish,
  postSteps,
  readRun,
  startRun,
  TEST_ENV,
  tool,
} from './run-helpers';

let app: TestApp;
beforeAll(async () => {
  app = await startTestApp(TEST_ENV);
});
afterAll(() => app.close());

type Spec = Omit<StepBody, 'index'>;
/** Steps numbered from `first` in the order given. */
const numbered = (specs: Spec[], first = 0): StepBody[] =>
  specs.map((spec, i) => ({ ...spec, index: first + i }) as StepBody);
const times = (count: number, ...specs: Spec[]): Spec[] => Array.from({ length: count }, () => specs).flat();

const strip = ({ index: _index, ...rest }: StepBody): Spec => rest;
const A = strip(tool(0, 'search', '{"q":"a","page":1}', 'results for a'));
const B = strip(tool(0, 'fetch', '{"url":"https://b"}', 'page b'));
const C = strip(tool(0, 'read', 'c.txt', 'contents of c'));
const D = strip(tool(0, 'write', 'd.txt', 'written d'));
const E = strip(tool(0, 'list', '/', 'a b c'));
const think = (output: string): Spec => strip(llm(0, output));
const failing = (error: string): Spec => strip(failingTool(0, 'deploy', '{"env":"prod"}', error));

interface Case {
  name: string;
  steps: StepBody[];
  loopStepIndex: number | null;
}

const loops: Case[] = [
  { name: 'rule 1: 4 identical tool calls with identical results', steps: numbered(times(4, A)), loopStepIndex: 0 },
  {
    name: 'rule 1: the same call written differently (key order, whitespace, tool name case) with llm steps between',
    steps: numbered([
      think('plan'),
      A,
      think('again'),
      { ...A, tool_name: ' Search ', input: '{ "page": 1, "q": "a" }' },
      think('and again'),
      { ...A, tool_name: 'SEARCH' },
      think('once more'),
      { ...A, input: '{"page":1,\n "q":"a"}' },
    ]),
    loopStepIndex: 1,
  },
  {
    name: 'rule 2: 3 calls with the same signature, all failing (errors may differ)',
    steps: numbered([think('go'), failing('timeout'), failing('503'), failing('rate limited')]),
    loopStepIndex: 1,
  },
  { name: 'rule 3: a period-2 cycle A B A B A B', steps: numbered([C, ...times(3, A, B)]), loopStepIndex: 1 },
  { name: 'rule 3: a period-3 cycle A B C ×3', steps: numbered(times(3, A, B, C)), loopStepIndex: 0 },
  {
    name: 'rule 4: 3 consecutive llm steps with the same output',
    steps: numbered([
      A,
      think('I should check the logs'),
      think('I should check the logs'),
      think('I should check the logs'),
    ]),
    loopStepIndex: 1,
  },
  {
    name: 'the earliest-starting window wins when several rules match',
    // Rule 1 over tool steps 0, 4, 5, 6 starts at 0; the monologue 1–3 starts later.
    steps: numbered([A, think('same'), think('same'), think('same'), A, A, A]),
    loopStepIndex: 0,
  },
];

const nearMisses: Case[] = [
  { name: '3 identical tool calls (rule 1 needs 4)', steps: numbered(times(3, A)), loopStepIndex: null },
  {
    name: '4 identical calls whose results differ',
    steps: numbered([A, A, { ...A, output: 'other' }, A]),
    loopStepIndex: null,
  },
  {
    name: '4 calls, one with another input',
    steps: numbered([A, A, { ...A, input: '{"q":"b","page":1}' }, A]),
    loopStepIndex: null,
  },
  { name: '2 failing calls (rule 2 needs 3)', steps: numbered([failing('x'), failing('y')]), loopStepIndex: null },
  {
    name: '3 failing calls with different inputs',
    steps: numbered([failing('x'), { ...failing('x'), input: '{"env":"dev"}' }, failing('x')]),
    loopStepIndex: null,
  },
  {
    name: '3 calls of the same signature, one succeeding',
    steps: numbered([failing('x'), { ...failing('x'), error: null, output: 'ok' }, failing('x')]),
    loopStepIndex: null,
  },
  {
    name: 'a period-2 cycle repeated 2.5 times (5 steps: A B A B A)',
    steps: numbered([A, B, A, B, A]),
    loopStepIndex: null,
  },
  {
    name: 'a period-5 cycle repeated 3 times (A B C D E ×3)',
    steps: numbered(times(3, A, B, C, D, E)),
    loopStepIndex: null,
  },
  {
    name: 'a period-4 cycle repeated 3 times (A B C D ×3)',
    steps: numbered(times(3, A, B, C, D)),
    loopStepIndex: null,
  },
  {
    name: '2 identical llm outputs (rule 4 needs 3)',
    steps: numbered([think('same'), think('same')]),
    loopStepIndex: null,
  },
  {
    name: 'a monologue broken by a tool step',
    steps: numbered([think('same'), think('same'), A, think('same')]),
    loopStepIndex: null,
  },
  {
    name: 'a monologue broken by a retrieval step',
    steps: numbered([think('same'), { type: 'retrieval', output: 'same' }, think('same'), think('same')]),
    loopStepIndex: null,
  },
  { name: '3 llm steps with empty outputs', steps: numbered([think(''), think(''), think('')]), loopStepIndex: null },
  {
    name: 'a varied, healthy run',
    steps: numbered([think('plan'), A, think('read'), B, C, think('write'), D, think('done')]),
    loopStepIndex: null,
  },
];

const expected = ({ loopStepIndex }: Case) => ({
  loop_detected: loopStepIndex !== null,
  loop_step_index: loopStepIndex,
});

describe('through the steps call', () => {
  it.each([...loops, ...nearMisses])('$name', async (testCase) => {
    const { project, key } = await setUpProject(app);
    const run = await startRun(app, key);
    const res = await postSteps(app, key, run, testCase.steps);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ total_steps: testCase.steps.length, ...expected(testCase) });
    expect(await readRun(app, key, project.id, run)).toMatchObject({ status: 'running', ...expected(testCase) });
  });

  it('detects a loop mid-run on the call that completes it; the index stays as more steps arrive', async () => {
    const { project, key } = await setUpProject(app);
    const run = await startRun(app, key);
    const steps = numbered([think('plan'), A, A, A, A, B, C, think('x'), think('x'), think('x')]);
    expect((await postSteps(app, key, run, steps.slice(0, 2))).body).toMatchObject({
      loop_detected: false,
      loop_step_index: null,
    });
    expect((await postSteps(app, key, run, steps.slice(2, 4))).body).toMatchObject({
      loop_detected: false,
      loop_step_index: null,
    });
    expect((await postSteps(app, key, run, steps.slice(4, 5))).body).toMatchObject({
      loop_detected: true,
      loop_step_index: 1,
    });
    expect(await readRun(app, key, project.id, run)).toMatchObject({
      status: 'running',
      loop_detected: true,
      loop_step_index: 1,
    });
    // Healthy steps, then a later monologue: the first detection stands.
    expect((await postSteps(app, key, run, steps.slice(5))).body).toMatchObject({
      loop_detected: true,
      loop_step_index: 1,
      total_steps: 10,
    });
    // A loop does not change the status the client reports.
    const finished = await postFinish(app, key, run, { status: 'completed' });
    expect(finished.body).toMatchObject({
      status: 'completed',
      termination_reason: 'completed',
      loop_detected: true,
      loop_step_index: 1,
    });
  });

  it('once set, loop_step_index never moves, not even for an earlier window arriving later', async () => {
    const { project, key } = await setUpProject(app);
    const run = await startRun(app, key);
    expect((await postSteps(app, key, run, numbered(times(4, B), 10))).body).toMatchObject({
      loop_detected: true,
      loop_step_index: 10,
    });
    expect((await postSteps(app, key, run, numbered(times(4, A), 0))).body).toMatchObject({
      loop_detected: true,
      loop_step_index: 10,
    });
    expect(await readRun(app, key, project.id, run)).toMatchObject({ loop_step_index: 10 });
    expect((await postFinish(app, key, run)).body).toMatchObject({ loop_detected: true, loop_step_index: 10 });
  });

  it('a loop stays detected when its steps are re-sent with other content', async () => {
    const { project, key } = await setUpProject(app);
    const run = await startRun(app, key);
    await postSteps(app, key, run, numbered(times(3, think('same'))));
    const replaced = await postSteps(app, key, run, numbered([think('one'), think('two'), think('three')]));
    expect(replaced.body).toMatchObject({ loop_detected: true, loop_step_index: 0, total_steps: 3 });
    expect(await readRun(app, key, project.id, run)).toMatchObject({ loop_detected: true, loop_step_index: 0 });
  });

  it('takes steps in index order, whatever order they arrive in', async () => {
    const { key } = await setUpProject(app);
    const run = await startRun(app, key);
    // Arriving as A(3) B(2) A(1) B(0) then A(5) B(4): by index it is B A B A B A, a period-2 cycle from index 0.
    expect(
      (
        await postSteps(app, key, run, [
          { ...A, index: 3 },
          { ...B, index: 2 },
          { ...A, index: 1 },
          { ...B, index: 0 },
        ])
      ).body.loop_detected,
    ).toBe(false);
    expect(
      (
        await postSteps(app, key, run, [
          { ...A, index: 5 },
          { ...B, index: 4 },
        ])
      ).body,
    ).toMatchObject({ loop_detected: true, loop_step_index: 0 });
  });

  it('a re-sent step can complete a loop', async () => {
    const { key } = await setUpProject(app);
    const run = await startRun(app, key);
    expect((await postSteps(app, key, run, numbered([A, A, A, B]))).body.loop_detected).toBe(false);
    expect((await postSteps(app, key, run, [{ ...A, index: 3 }])).body).toMatchObject({
      loop_detected: true,
      loop_step_index: 0,
      total_steps: 4,
    });
  });

  it('detects across steps calls: 3 identical llm outputs sent one at a time', async () => {
    const { key } = await setUpProject(app);
    const run = await startRun(app, key);
    await postSteps(app, key, run, numbered([A]));
    expect((await postSteps(app, key, run, numbered([think('hmm')], 1))).body.loop_detected).toBe(false);
    expect((await postSteps(app, key, run, numbered([think('hmm')], 2))).body.loop_detected).toBe(false);
    expect((await postSteps(app, key, run, numbered([think('hmm')], 3))).body).toMatchObject({
      loop_detected: true,
      loop_step_index: 1,
    });
  });
});

describe('at finish', () => {
  it.each([...loops, ...nearMisses])('$name', async (testCase) => {
    const { project, key } = await setUpProject(app);
    const run = await startRun(app, key);
    const res = await postFinish(app, key, run, { status: 'failed', steps: testCase.steps });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      status: 'failed',
      termination_reason: 'error',
      total_steps: testCase.steps.length,
      ...expected(testCase),
    });
    expect(await readRun(app, key, project.id, run)).toMatchObject(expected(testCase));
  });

  it("detects a loop completed by the finish's steps together with earlier ones", async () => {
    const { key } = await setUpProject(app);
    const run = await startRun(app, key);
    expect((await postSteps(app, key, run, numbered([think('go'), A, B, A, B]))).body.loop_detected).toBe(false);
    const res = await postFinish(app, key, run, { steps: numbered([A, B], 5), termination_reason: 'loop_detected' });
    expect(res.body).toMatchObject({
      status: 'completed',
      termination_reason: 'loop_detected',
      loop_detected: true,
      loop_step_index: 1,
    });
  });

  it("keeps a loop found while running when the finish's steps would find an earlier one", async () => {
    const { key } = await setUpProject(app);
    const run = await startRun(app, key);
    await postSteps(app, key, run, numbered(times(3, think('stuck')), 20));
    const res = await postFinish(app, key, run, { steps: numbered(times(4, A)) });
    expect(res.body).toMatchObject({ loop_detected: true, loop_step_index: 20 });
  });
});

describe('in batch whole runs', () => {
  it('detects each rule and no near-miss, item by item', async () => {
    const { project, key } = await setUpProject(app);
    const cases = [...loops, ...nearMisses];
    const res = await postBatch(
      app,
      key,
      cases.map((testCase) => ({ agent_name: 'a', status: 'completed', steps: testCase.steps })),
    );
    expect(res.status).toBe(200);
    for (const [i, testCase] of cases.entries()) {
      const run = await readRun(app, key, project.id, res.body.results[i]);
      expect({ name: testCase.name, ...run }).toMatchObject({
        name: testCase.name,
        status: 'completed',
        ...expected(testCase),
      });
    }
  });

  it('a started run from a batch detects loops through its steps calls', async () => {
    const { key } = await setUpProject(app);
    const [started] = (await postBatch(app, key, [{ agent_name: 'a' }])).body.results;
    expect((await postSteps(app, key, started, numbered(times(3, failing('boom'))))).body).toMatchObject({
      loop_detected: true,
      loop_step_index: 0,
    });
  });
});
