import {
  canonicalJson,
  DEFAULT_LOOP_THRESHOLDS,
  detectLoop,
  type LoopRule,
  type LoopStep,
  type LoopThresholds,
} from '../../src/ingest/loops';

type StepSpec = Omit<LoopStep, 'index'>;

/** Steps indexed by their position, as a run would send them. */
const run = (...specs: StepSpec[]): LoopStep[] => specs.map((spec, index) => ({ index, ...spec }));
const times = (count: number, ...specs: StepSpec[]): StepSpec[] => Array.from({ length: count }, () => specs).flat();

const tool = (
  name: string,
  input: string | null = '',
  output: string | null = 'ok',
  error: string | null = null,
): StepSpec => ({ type: 'tool', tool_name: name, input, output, error });
const failing = (name: string, input: string, error = 'boom'): StepSpec => tool(name, input, '', error);
const llm = (output: string | null): StepSpec => ({ type: 'llm', output });
const retrieval: StepSpec = { type: 'retrieval', output: 'docs' };
const other: StepSpec = { type: 'other' };

const A = tool('search', '{"q":"a"}', 'result a');
const B = tool('fetch', '{"url":"b"}', 'result b');
const C = tool('read', 'c.txt', 'result c');
const D = tool('write', 'd.txt', 'result d');

const loopAt = (loopStepIndex: number, rule: LoopRule) => ({ loopDetected: true, loopStepIndex, rule });
const noLoop = { loopDetected: false, loopStepIndex: null, rule: null };

interface Case {
  name: string;
  steps: LoopStep[];
  expected: ReturnType<typeof detectLoop>;
}

const check = ({ steps, expected }: Case, thresholds?: LoopThresholds) =>
  expect(detectLoop(steps, thresholds)).toEqual(expected);

describe('detectLoop: each rule at its exact minimum window', () => {
  it.each<Case>([
    { name: 'repeat: 4 identical tool calls', steps: run(...times(4, A)), expected: loopAt(0, 'repeat') },
    {
      name: 'repeated errors: 3 failing calls with the same signature',
      steps: run(...times(3, failing('search', '{"q":1}'))),
      expected: loopAt(0, 'repeated_errors'),
    },
    {
      name: 'repeated errors: error messages may differ',
      steps: run(
        failing('search', 'x', 'timeout'),
        failing('search', 'x', 'rate limited'),
        failing('search', 'x', '500'),
      ),
      expected: loopAt(0, 'repeated_errors'),
    },
    { name: 'cycle of period 2: A B A B A B', steps: run(...times(3, A, B)), expected: loopAt(0, 'cycle') },
    { name: 'cycle of period 3: A B C A B C A B C', steps: run(...times(3, A, B, C)), expected: loopAt(0, 'cycle') },
    {
      name: 'monologue: 3 llm steps with the same output',
      steps: run(...times(3, llm('Let me think again.'))),
      expected: loopAt(0, 'monologue'),
    },
  ])('$name', (testCase) => check(testCase));
});

describe('detectLoop: near misses', () => {
  it.each<Case>([
    { name: 'only 3 identical repeats', steps: run(...times(3, A)), expected: noLoop },
    { name: 'only 2 repeated errors', steps: run(...times(2, failing('search', 'x'))), expected: noLoop },
    {
      name: 'errors with different inputs',
      steps: run(failing('search', 'x'), failing('search', 'y'), failing('search', 'x')),
      expected: noLoop,
    },
    {
      name: 'errors with different tool names',
      steps: run(failing('search', 'x'), failing('fetch', 'x'), failing('search', 'x')),
      expected: noLoop,
    },
    {
      name: 'errors interrupted by a success of the same call',
      steps: run(failing('search', 'x'), failing('search', 'x'), tool('search', 'x'), failing('search', 'x')),
      expected: noLoop,
    },
    { name: 'period-2 cycle of only 5 steps', steps: run(A, B, A, B, A), expected: noLoop },
    { name: 'period-3 cycle of only 8 steps', steps: run(A, B, C, A, B, C, A, B), expected: noLoop },
    {
      name: 'period-2 cycle where one result differs',
      steps: run(A, B, A, tool('fetch', '{"url":"b"}', 'other result'), A, B),
      expected: noLoop,
    },
    {
      name: 'period-3 cycle where one result differs',
      steps: run(A, B, C, A, B, C, A, tool('fetch', '{"url":"b"}', 'other result'), C),
      expected: noLoop,
    },
    {
      name: 'period-2 cycle where one call differs',
      steps: run(A, B, A, B, tool('search', '{"q":"z"}', 'result a'), B),
      expected: noLoop,
    },
    { name: 'period-4 pattern is not a default cycle', steps: run(...times(3, A, B, C, D)), expected: noLoop },
    { name: 'monologue broken by a tool step', steps: run(llm('same'), llm('same'), A, llm('same')), expected: noLoop },
    {
      name: 'monologue broken by a retrieval step',
      steps: run(llm('same'), retrieval, llm('same'), llm('same')),
      expected: noLoop,
    },
    {
      name: 'monologue broken by an other step',
      steps: run(llm('same'), llm('same'), other, llm('same')),
      expected: noLoop,
    },
    { name: 'monologue of empty outputs', steps: run(...times(3, llm(''))), expected: noLoop },
    { name: 'monologue of null outputs', steps: run(...times(3, llm(null))), expected: noLoop },
    { name: 'monologue of absent outputs', steps: run(...times(3, { type: 'llm' })), expected: noLoop },
    { name: 'monologue of only 2', steps: run(llm('same'), llm('same')), expected: noLoop },
    { name: 'llm steps with different outputs', steps: run(llm('one'), llm('two'), llm('one')), expected: noLoop },
    { name: 'same output from non-llm steps is not a monologue', steps: run(...times(3, retrieval)), expected: noLoop },
  ])('$name', (testCase) => check(testCase));
});

describe('detectLoop: non-tool steps between tool steps are skipped by rules 1-3', () => {
  it.each<Case>([
    { name: 'repeat', steps: run(A, llm('a'), A, retrieval, A, other, llm('b'), A), expected: loopAt(0, 'repeat') },
    {
      name: 'repeated errors',
      steps: run(failing('search', 'x'), llm('retry'), failing('search', 'x'), other, failing('search', 'x')),
      expected: loopAt(0, 'repeated_errors'),
    },
    { name: 'cycle', steps: run(A, llm('1'), B, A, retrieval, B, other, A, llm('2'), B), expected: loopAt(0, 'cycle') },
    {
      name: 'window starts at its first tool step, not at the llm step before it',
      steps: run(llm('plan'), A, llm('x'), A, A, A),
      expected: loopAt(1, 'repeat'),
    },
  ])('$name', (testCase) => check(testCase));
});

describe('detectLoop: signatures', () => {
  it.each<Case>([
    {
      name: 'tool names are trimmed and lower-cased',
      steps: run(tool(' Search ', 'x'), tool('search', 'x'), tool('SEARCH', 'x'), tool('search\t', 'x')),
      expected: loopAt(0, 'repeat'),
    },
    {
      name: 'JSON inputs are equal whatever their key order and whitespace',
      steps: run(
        tool('search', '{"b":1,"a":{"d":2,"c":[1,{"y":1,"x":2}]}}'),
        tool('search', '{"a":{"c":[1,{"x":2,"y":1}],"d":2},"b":1}'),
        tool('search', ' { "a" : { "d" : 2, "c" : [ 1, { "y" : 1, "x" : 2 } ] }, "b" : 1 } '),
        tool('search', '{"a":{"c":[1,{"x":2,"y":1}],"d":2},"b":1.0}'),
      ),
      expected: loopAt(0, 'repeat'),
    },
    {
      name: 'JSON arrays keep their order',
      steps: run(tool('s', '[1,2]'), tool('s', '[2,1]'), tool('s', '[1,2]'), tool('s', '[2,1]')),
      expected: noLoop,
    },
    {
      name: 'equal raw (non-JSON) inputs',
      steps: run(...times(4, tool('search', 'search foo'))),
      expected: loopAt(0, 'repeat'),
    },
    {
      name: 'raw inputs are not normalised',
      steps: run(tool('s', 'search foo'), tool('s', 'search  foo'), tool('s', 'search foo'), tool('s', 'Search foo')),
      expected: noLoop,
    },
    {
      name: 'absent, null and empty inputs are equal',
      steps: run(tool('s', ''), tool('s', null), { type: 'tool', tool_name: 's', output: 'ok' }, tool('s', '')),
      expected: loopAt(0, 'repeat'),
    },
    {
      name: 'absent tool names are equal',
      steps: run(...times(4, { type: 'tool', input: 'x' })),
      expected: loopAt(0, 'repeat'),
    },
    {
      name: 'different outputs prevent a repeat',
      steps: run(tool('s', 'x', 'r1'), tool('s', 'x', 'r2'), tool('s', 'x', 'r3'), tool('s', 'x', 'r4')),
      expected: noLoop,
    },
    {
      name: 'null and empty outputs are equal',
      steps: run(tool('s', 'x', ''), tool('s', 'x', null), tool('s', 'x', ''), {
        type: 'tool',
        tool_name: 's',
        input: 'x',
      }),
      expected: loopAt(0, 'repeat'),
    },
    {
      name: 'an error and an output with the same text are different results',
      steps: run(tool('s', 'x', 'boom'), failing('s', 'x', 'boom'), tool('s', 'x', 'boom'), failing('s', 'x', 'boom')),
      expected: noLoop,
    },
    {
      name: 'a failed step is compared by its error, not its output',
      steps: run(
        tool('s', 'x', 'partial 1', 'boom'),
        tool('s', 'x', 'partial 2', 'boom'),
        tool('s', 'x', 'partial 3', 'boom'),
        tool('s', 'x', 'partial 4', 'boom'),
      ),
      expected: loopAt(0, 'repeat'),
    },
    { name: 'an empty error is no error', steps: run(...times(3, tool('s', 'x', 'ok', ''))), expected: noLoop },
    {
      name: 'an empty error leaves the output as the result',
      steps: run(tool('s', 'x', 'ok', ''), tool('s', 'x', 'ok', null), tool('s', 'x', 'ok'), tool('s', 'x', 'ok', '')),
      expected: loopAt(0, 'repeat'),
    },
    {
      name: 'tool name and input cannot run into each other',
      steps: run(tool('a', 'b c'), tool('a b', 'c'), tool('a', 'b c'), tool('a b', 'c')),
      expected: noLoop,
    },
  ])('$name', (testCase) => check(testCase));
});

describe('detectLoop: ordering and the reported step', () => {
  it.each<Case>([
    {
      name: 'unsorted input is taken in index order',
      steps: [
        { index: 3, type: 'tool', tool_name: 's', input: 'x', output: 'ok' },
        { index: 0, type: 'other' },
        { index: 5, type: 'tool', tool_name: 's', input: 'x', output: 'ok' },
        { index: 2, type: 'tool', tool_name: 's', input: 'x', output: 'ok' },
        { index: 1, type: 'llm', output: 'plan' },
        { index: 4, type: 'tool', tool_name: 's', input: 'x', output: 'ok' },
      ],
      expected: loopAt(2, 'repeat'),
    },
    {
      name: 'unsorted input whose array order would loop earlier',
      steps: [
        { index: 0, type: 'llm', output: 'same' },
        { index: 2, type: 'llm', output: 'same' },
        { index: 4, type: 'llm', output: 'same' },
        { index: 1, type: 'llm', output: 'different' },
        { index: 3, type: 'llm', output: 'same' },
      ],
      expected: loopAt(2, 'monologue'),
    },
    {
      name: 'sparse indexes report the step index, not the position',
      steps: [10, 20, 30, 40].map((index) => ({
        index,
        type: 'tool' as const,
        tool_name: 's',
        input: 'x',
        output: 'ok',
      })),
      expected: loopAt(10, 'repeat'),
    },
    {
      name: 'monologue at 0-2 wins over a later repeat',
      steps: run(...times(3, llm('same')), ...times(4, A)),
      expected: loopAt(0, 'monologue'),
    },
    {
      name: 'repeat at 0 wins over a later monologue',
      steps: run(...times(4, A), ...times(3, llm('same'))),
      expected: loopAt(0, 'repeat'),
    },
    {
      name: 'repeat window starting at index 5 after other steps',
      steps: run(...times(5, other), ...times(4, A)),
      expected: loopAt(5, 'repeat'),
    },
    { name: 'repeat after a first, different call', steps: run(B, ...times(4, A)), expected: loopAt(1, 'repeat') },
    {
      name: 'repeated errors before a repeat',
      steps: run(...times(3, failing('s', 'x')), ...times(4, A)),
      expected: loopAt(0, 'repeated_errors'),
    },
    {
      name: 'cycle before a repeat that shares its last step',
      steps: run(...times(3, A, B), B, B, B),
      expected: loopAt(0, 'cycle'),
    },
    {
      name: 'earliest start wins, not earliest completion',
      steps: run(A, B, A, B, ...times(3, llm('same')), A, B),
      expected: loopAt(0, 'cycle'),
    },
    {
      name: 'a repeat starting at the same step as a cycle is reported as a repeat',
      steps: run(...times(6, A)),
      expected: loopAt(0, 'repeat'),
    },
    {
      name: 'repeat and repeated errors at the same step: repeat comes first',
      steps: run(...times(4, failing('s', 'x'))),
      expected: loopAt(0, 'repeat'),
    },
    {
      name: 'period-2 cycle after a non-repeating prefix',
      steps: run(C, D, ...times(3, A, B)),
      expected: loopAt(2, 'cycle'),
    },
    { name: 'period-3 cycle starting mid-run', steps: run(D, ...times(3, A, B, C)), expected: loopAt(1, 'cycle') },
  ])('$name', (testCase) => check(testCase));
});

describe('detectLoop: custom thresholds', () => {
  it.each<Case & { thresholds: Partial<LoopThresholds> }>([
    { name: 'repeat of 2', thresholds: { repeat: 2 }, steps: run(A, A), expected: loopAt(0, 'repeat') },
    { name: 'repeat of 5 is not met by 4', thresholds: { repeat: 5 }, steps: run(...times(4, A)), expected: noLoop },
    {
      name: 'repeat of 5 is met by 5',
      thresholds: { repeat: 5 },
      steps: run(...times(5, A)),
      expected: loopAt(0, 'repeat'),
    },
    {
      name: 'repeated errors of 5 is not met by 4',
      thresholds: { repeatedErrors: 5 },
      steps: run(...['a', 'b', 'c', 'd'].map((e) => failing('s', 'x', e))),
      expected: noLoop,
    },
    {
      name: 'repeated errors of 2',
      thresholds: { repeatedErrors: 2 },
      steps: run(failing('s', 'x'), failing('s', 'x', 'other')),
      expected: loopAt(0, 'repeated_errors'),
    },
    { name: 'no cycle periods', thresholds: { cyclePeriods: [] }, steps: run(...times(3, A, B)), expected: noLoop },
    {
      name: 'cycle period 4',
      thresholds: { cyclePeriods: [4] },
      steps: run(...times(3, A, B, C, D)),
      expected: loopAt(0, 'cycle'),
    },
    {
      name: 'cycle period 4 of only 11 steps',
      thresholds: { cyclePeriods: [4] },
      steps: run(...times(3, A, B, C, D)).slice(0, 11),
      expected: noLoop,
    },
    {
      name: 'cycle repeats of 2',
      thresholds: { cycleRepeats: 2 },
      steps: run(A, B, A, B),
      expected: loopAt(0, 'cycle'),
    },
    {
      name: 'cycle repeats of 4 is not met by 3',
      thresholds: { cycleRepeats: 4 },
      steps: run(...times(3, A, B)),
      expected: noLoop,
    },
    {
      name: 'monologue of 2',
      thresholds: { monologue: 2 },
      steps: run(llm('same'), llm('same')),
      expected: loopAt(0, 'monologue'),
    },
    {
      name: 'monologue of 5 is not met by 4',
      thresholds: { monologue: 5 },
      steps: run(...times(4, llm('same'))),
      expected: noLoop,
    },
  ])('$name', ({ thresholds, ...testCase }) => check(testCase, { ...DEFAULT_LOOP_THRESHOLDS, ...thresholds }));

  it('uses the default thresholds when none are given', () => {
    const steps = run(...times(4, A));
    expect(detectLoop(steps)).toEqual(detectLoop(steps, DEFAULT_LOOP_THRESHOLDS));
    expect(DEFAULT_LOOP_THRESHOLDS).toEqual({
      repeat: 4,
      repeatedErrors: 3,
      cyclePeriods: [2, 3],
      cycleRepeats: 3,
      monologue: 3,
    });
  });
});

describe('detectLoop: degenerate and large runs', () => {
  const distinctCalls = (count: number) => Array.from({ length: count }, (_, i) => tool('s', JSON.stringify({ i })));

  it.each<Case>([
    { name: 'no steps', steps: [], expected: noLoop },
    { name: 'a single tool step', steps: run(A), expected: noLoop },
    {
      name: 'only non-tool steps with different outputs',
      steps: run(llm('a'), retrieval, other, llm('b')),
      expected: noLoop,
    },
    { name: '5000 distinct calls', steps: run(...distinctCalls(5000)), expected: noLoop },
    {
      name: 'a repeat at the end of 5000 steps',
      steps: run(...distinctCalls(4996), ...times(4, A)),
      expected: loopAt(4996, 'repeat'),
    },
  ])('$name', (testCase) => check(testCase));

  it('does not modify its input', () => {
    const steps: LoopStep[] = [
      { index: 1, type: 'llm', output: 'a' },
      { index: 0, type: 'other' },
    ];
    const copy = structuredClone(steps);
    detectLoop(steps);
    expect(steps).toEqual(copy);
  });
});

describe('canonicalJson', () => {
  it.each<[string, string]>([
    ['{"b":1,"a":{"d":2,"c":[1,{"y":1,"x":2}]}}', '{"a":{"c":[1,{"x":2,"y":1}],"d":2},"b":1}'],
    [' { "a" : [ 1 , 2 ] } ', '{"a":[1,2]}'],
    ['{"b":1,"10":2,"2":3}', '{"10":2,"2":3,"b":1}'],
    ['{"__proto__":{"x":1},"a":null}', '{"__proto__":{"x":1},"a":null}'],
    ['{"a":"\\u00e9\\n"}', '{"a":"é\\n"}'],
    ['"abc"', '"abc"'],
    ['1.0', '1'],
    ['1', '1'],
    ['null', 'null'],
    ['[]', '[]'],
    ['{}', '{}'],
    ['search foo', 'search foo'],
    ['{"a":1', '{"a":1'],
    ['', ''],
  ])('%j -> %j', (text, expected) => expect(canonicalJson(text)).toBe(expected));

  it('keeps text that is nested too deeply to re-serialise', () => {
    const deep = '['.repeat(200_000) + ']'.repeat(200_000);
    expect(canonicalJson(deep)).toBe(deep);
  });
});
