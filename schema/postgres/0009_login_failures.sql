-- Failed logins, counted per client address and per client address + e-mail (docs/foundation.md#login-throttling):
-- kept in Postgres so that every instance of a deployment throttles the same guesses. A row is forgotten a day after
-- its last failure.
CREATE TABLE login_failures (
  key             text PRIMARY KEY,
  failures        integer NOT NULL,
  last_failure_at timestamptz NOT NULL
);
CREATE INDEX login_failures_last_idx ON login_failures (last_failure_at);
