// The runs of the dashboard's browser test, and the figures the test expects of them: 24 runs every 3 minutes of
// two agents (a quarter failed, with a reason), a looping run, a run of an agent quiet for the last hour, a run
// reported over OpenTelemetry's conventions (chat messages), and one still running. Every llm step costs $0.0125.
const MINUTE = 60_000;
const messages = (role: string, text: string) => JSON.stringify([{ role, parts: [{ type: 'text', content: text }] }]);

export function journeyRuns(now: number) {
  const at = (ms: number) => new Date(now - ms).toISOString();
  const llm = (index: number, startMs: number, extra: object = {}) => ({
    index,
    type: 'llm',
    model: 'gpt-4o-mini',
    tokens: 300 + index,
    cost_usd: 0.0125,
    duration_ms: 400,
    started_at: at(startMs),
    output: 'search',
    ...extra,
  });
  const runs = Array.from({ length: 24 }, (_, i) => {
    const start = (i + 1) * 3 * MINUTE;
    const failed = i % 4 === 0;
    return {
      agent_name: i % 3 === 0 ? 'planner' : 'support',
      timestamp: at(start),
      finished_at: at(start - 1000 - i * 400),
      status: failed ? 'failed' : 'completed',
      ...(failed ? { termination_detail: 'ToolError: search timed out' } : {}),
      input: `question ${i}`,
      output: failed ? '' : `answer ${i}`,
      steps: [
        llm(0, start - 10),
        { index: 1, type: 'tool', tool_name: 'search', input: `{"q":${i}}`, output: 'found', duration_ms: 200 },
      ],
    };
  });
  const looping = {
    agent_name: 'support',
    timestamp: at(90_000),
    finished_at: at(60_000),
    status: 'completed',
    input: 'where is my order?',
    output: 'gave up',
    steps: [
      llm(0, 89_000, { output: 'look it up' }),
      ...[1, 2, 3, 4].map((index) => ({
        index,
        type: 'tool',
        tool_name: 'lookup_order',
        input: '{"id":42}',
        output: 'not found',
      })),
    ],
  };
  // Ran in the hour before the last one only: quiet in the 1h window.
  const nightly = {
    agent_name: 'nightly',
    timestamp: at(100 * MINUTE),
    finished_at: at(99 * MINUTE),
    status: 'completed',
  };
  const concierge = {
    agent_name: 'concierge',
    timestamp: at(70_000),
    finished_at: at(68_000),
    status: 'completed',
    input: messages('user', 'Where is my order 42?'),
    output: messages('assistant', 'It has shipped.'),
    steps: [
      llm(0, 69_500, {
        input: messages('user', 'Where is my order 42?'),
        output: JSON.stringify([
          { role: 'assistant', parts: [{ type: 'tool_call', id: 'c1', name: 'lookup_order', arguments: { id: 42 } }] },
        ]),
      }),
    ],
  };
  const running = {
    start: { agent_name: 'support', input: 'still thinking', timestamp: at(30_000) },
    steps: [{ index: 0, type: 'llm', model: 'gpt-4o-mini', tokens: 100, cost_usd: 0.0125 }],
  };
  return { batch: [...runs, looping, nightly, concierge], running };
}
