// Detects when an agent run is stuck in a loop, from the shape of its steps alone.

export interface LoopStep {
  index: number;
  type: 'llm' | 'tool' | 'retrieval' | 'other';
  tool_name?: string | null;
  input?: string | null;
  output?: string | null;
  error?: string | null;
}

/** Per-deployment settings; values are expected to be at least 2 (config validates them). */
export interface LoopThresholds {
  repeat: number;
  repeatedErrors: number;
  cyclePeriods: number[];
  cycleRepeats: number;
  monologue: number;
}

export const DEFAULT_LOOP_THRESHOLDS: LoopThresholds = {
  repeat: 4,
  repeatedErrors: 3,
  cyclePeriods: [2, 3],
  cycleRepeats: 3,
  monologue: 3,
};

export type LoopRule = 'repeat' | 'repeated_errors' | 'cycle' | 'monologue';

export interface LoopResult {
  loopDetected: boolean;
  loopStepIndex: number | null;
  rule: LoopRule | null;
}

/** A tool step reduced to what the rules compare, computed once per step. */
interface ToolCall {
  position: number;
  call: string;
  outcome: string;
  failed: boolean;
}

interface Match {
  position: number;
  rule: LoopRule;
}

/**
 * JSON with keys sorted at every depth, so inputs differing only in key order compare equal; other text is returned as
 * is.
 */
export function canonicalJson(text: string): string {
  try {
    return stringifySorted(JSON.parse(text));
  } catch {
    // Not JSON, or nested too deeply to re-serialise: the raw text is still a stable signature.
    return text;
  }
}

function stringifySorted(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(stringifySorted).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const record = value as Record<string, unknown>;
    // Built by hand because JSON.stringify puts integer-like keys first whatever their insertion order.
    const members = Object.keys(record)
      .sort()
      .map((key) => `${JSON.stringify(key)}:${stringifySorted(record[key])}`);
    return `{${members.join(',')}}`;
  }
  return JSON.stringify(value);
}

export function detectLoop(
  steps: readonly LoopStep[],
  thresholds: LoopThresholds = DEFAULT_LOOP_THRESHOLDS,
): LoopResult {
  const ordered = [...steps].sort((a, b) => a.index - b.index);
  const calls = toolCalls(ordered);
  // Listed in the contract's order, which also settles ties between rules starting at the same step.
  const candidates: (Match | null)[] = [
    repeatMatch(calls, thresholds.repeat),
    repeatedErrorsMatch(calls, thresholds.repeatedErrors),
    ...thresholds.cyclePeriods.map((period) => cycleMatch(calls, period, thresholds.cycleRepeats)),
    monologueMatch(ordered, thresholds.monologue),
  ];
  const earliest = candidates.reduce<Match | null>(
    (best, match) => (match && (!best || match.position < best.position) ? match : best),
    null,
  );
  if (!earliest) return { loopDetected: false, loopStepIndex: null, rule: null };
  return { loopDetected: true, loopStepIndex: ordered[earliest.position].index, rule: earliest.rule };
}

function toolCalls(ordered: readonly LoopStep[]): ToolCall[] {
  const calls: ToolCall[] = [];
  ordered.forEach((step, position) => {
    if (step.type !== 'tool') return;
    const failed = Boolean(step.error);
    // JSON arrays keep the parts apart, so no two different (name, input) or (kind, text) pairs share a key.
    const call = JSON.stringify([(step.tool_name ?? '').trim().toLowerCase(), canonicalJson(step.input ?? '')]);
    const outcome = JSON.stringify(failed ? ['error', step.error] : ['output', step.output ?? '']);
    calls.push({ position, call, outcome, failed });
  });
  return calls;
}

function sameCallAndOutcome(a: ToolCall, b: ToolCall): boolean {
  return a.call === b.call && a.outcome === b.outcome;
}

function repeatMatch(calls: readonly ToolCall[], repeat: number): Match | null {
  const start = earliestRunStart(
    calls.length,
    repeat,
    () => true,
    (i) => sameCallAndOutcome(calls[i], calls[i - 1]),
  );
  return start === null ? null : { position: calls[start].position, rule: 'repeat' };
}

function repeatedErrorsMatch(calls: readonly ToolCall[], repeatedErrors: number): Match | null {
  const start = earliestRunStart(
    calls.length,
    repeatedErrors,
    (i) => calls[i].failed,
    (i) => calls[i].call === calls[i - 1].call,
  );
  return start === null ? null : { position: calls[start].position, rule: 'repeated_errors' };
}

/**
 * A window of period × repeats calls repeats with that period when every call matches the one a period later inside it.
 */
function cycleMatch(calls: readonly ToolCall[], period: number, repeats: number): Match | null {
  const comparisonsPerWindow = period * (repeats - 1);
  const start = earliestRunStart(
    Math.max(calls.length - period, 0),
    comparisonsPerWindow,
    (i) => sameCallAndOutcome(calls[i], calls[i + period]),
    () => true,
  );
  return start === null ? null : { position: calls[start].position, rule: 'cycle' };
}

function monologueMatch(ordered: readonly LoopStep[], monologue: number): Match | null {
  const start = earliestRunStart(
    ordered.length,
    monologue,
    (i) => ordered[i].type === 'llm' && Boolean(ordered[i].output),
    (i) => ordered[i].output === ordered[i - 1].output,
  );
  return start === null ? null : { position: start, rule: 'monologue' };
}

/**
 * Start of the first run of `length` consecutive qualifying items, each joining the one before it.
 * Maximal runs never overlap, so the first run to reach the length is also the earliest-starting one.
 */
function earliestRunStart(
  count: number,
  length: number,
  qualifies: (i: number) => boolean,
  joinsPrevious: (i: number) => boolean,
): number | null {
  let start = 0;
  for (let i = 0; i < count; i++) {
    if (!qualifies(i)) {
      start = i + 1;
      continue;
    }
    if (i > start && !joinsPrevious(i)) start = i;
    if (i - start + 1 >= length) return start;
  }
  return null;
}
