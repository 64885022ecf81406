// How a rule's scope reads to people (the preview's scope_label, Slack messages): `agent planner · last 5m`.

/** Readable window lengths: the largest unit that divides the window (`5m`, `1h`, `30d`, `90s`). */
export function formatWindow(seconds: number): string {
  if (seconds > 0 && seconds % 86_400 === 0) return `${seconds / 86_400}d`;
  if (seconds > 0 && seconds % 3600 === 0) return `${seconds / 3600}h`;
  if (seconds > 0 && seconds % 60 === 0) return `${seconds / 60}m`;
  return `${seconds}s`;
}

/** A scope as people read it: `agent planner · last 5m`, `all agents · last 1h`. */
export const scopeLabel = (agentName: string | null, windowSeconds: number): string =>
  `${agentName === null ? 'all agents' : `agent ${agentName}`} · last ${formatWindow(windowSeconds)}`;
