// The alert rules both benchmarks evaluate: what a fleet's rules look like — every signal, most scoped to one agent,
// windows from 5 minutes to 30 days.
import { AGENTS } from './reports-dataset';

export const RULE_WINDOWS = [300, 900, 3600, 21_600, 86_400, 604_800, 2_592_000];
export const SIGNAL_RULES = [
  { signal: 'total_runs', comparator: 'lt', threshold: 50 },
  { signal: 'completion_rate', comparator: 'lt', threshold: 0.85 },
  { signal: 'failure_rate', comparator: 'gt', threshold: 0.07 },
  { signal: 'loop_rate', comparator: 'gt', threshold: 0.03 },
  { signal: 'avg_cost_usd', comparator: 'gt', threshold: 0.05 },
  { signal: 'total_cost_usd', comparator: 'gt', threshold: 500 },
  { signal: 'avg_tokens', comparator: 'gt', threshold: 8000 },
  { signal: 'duration_p50_ms', comparator: 'gt', threshold: 8000 },
  { signal: 'duration_p95_ms', comparator: 'gt', threshold: 60_000 },
  { signal: 'duration_p99_ms', comparator: 'gt', threshold: 300_000 },
];

/** The body of the i-th benchmark rule: signals in turn, a fifth of all agents, windows in turn by tens. */
export const benchRule = (i: number) => ({
  name: `bench ${i} ${SIGNAL_RULES[i % SIGNAL_RULES.length].signal}`,
  class: 'aggregate',
  ...SIGNAL_RULES[i % SIGNAL_RULES.length],
  agent_name: i % 5 === 0 ? null : AGENTS[(i * 7) % AGENTS.length],
  window_seconds: RULE_WINDOWS[Math.floor(i / SIGNAL_RULES.length) % RULE_WINDOWS.length],
  for_seconds: i % 3 === 0 ? 120 : 0,
  keep_firing_for_seconds: i % 4 === 0 ? 300 : 0,
  min_requests: 10,
  severity: 'warning',
  channel: 'webhook',
  channel_config: { url: 'https://hooks.example.com/bench' },
});
