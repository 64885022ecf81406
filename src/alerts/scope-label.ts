// How a rule's scope reads to people (the preview's scope_label, Slack messages): `agent planner · last 5m`.

/** Readable window lengths: the largest unit that divides the window (`5m`, `1h`, `30d`, `90s`). */
export function formatWindow(seconds: number): string {
  if (seconds > 0 && seconds % 86_400 === 0) return `${seconds / 86_400}d`;
  if (seconds > 0 && seconds % 3600 === 0) return `${seconds / 3600}h`;
  if (seconds > 0 && seconds % 60 === 0) return `${seconds / 60}m`;
  return `${seconds}s`;
}

/** The runs a scope watches: `agent planner`, `all agents`, `user alice · agent planner`. */
export const runsLabel = (agentName: string | null, userId: string | null = null): string =>
  `${userId === null ? '' : `user ${userId} · `}${agentName === null ? 'all agents' : `agent ${agentName}`}`;

/** A scope as people read it: `agent planner · last 5m`, `user alice · all agents · last 1d`. */
export const scopeLabel = (agentName: string | null, windowSeconds: number, userId: string | null = null): string =>
  `${runsLabel(agentName, userId)} · last ${formatWindow(windowSeconds)}`;
