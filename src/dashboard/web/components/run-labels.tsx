// A run's session, user and tags (contract §10) among the facts of its page; the session links to its timeline.
import type { Run } from '../types';

export function RunLabels({ run, sessionHref }: { run: Run; sessionHref: (sessionId: string) => string }) {
  return (
    <>
      {run.session_id && (
        <>
          <dt>Session</dt>
          <dd>
            <a href={sessionHref(encodeURIComponent(run.session_id))}>{run.session_id}</a>
          </dd>
        </>
      )}
      {run.user_id && (
        <>
          <dt>User</dt>
          <dd>{run.user_id}</dd>
        </>
      )}
      {run.tags.length > 0 && (
        <>
          <dt>Tags</dt>
          <dd>
            {run.tags.map((tag) => (
              <span class="badge" key={tag}>
                {tag}
              </span>
            ))}
          </dd>
        </>
      )}
    </>
  );
}
