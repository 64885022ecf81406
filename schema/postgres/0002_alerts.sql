-- Alert rules with their evaluation state, their event history, and the notification delivery queue.
CREATE TABLE alert_rules (
  id                      uuid PRIMARY KEY,
  project_id              uuid NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
  name                    text NOT NULL,
  class                   text NOT NULL CHECK (class IN ('aggregate', 'per_run')),
  signal                  text NOT NULL,
  comparator              text NOT NULL CHECK (comparator IN ('gt', 'gte', 'lt', 'lte')),
  threshold               double precision NOT NULL,
  agent_name              text,
  window_seconds          integer NOT NULL,
  for_seconds             integer NOT NULL,
  keep_firing_for_seconds integer NOT NULL,
  cooldown_seconds        integer NOT NULL,
  min_requests            integer NOT NULL,
  severity                text NOT NULL CHECK (severity IN ('critical', 'warning', 'info')),
  channel                 text NOT NULL CHECK (channel IN ('webhook', 'slack')),
  channel_config          jsonb NOT NULL,
  enabled                 boolean NOT NULL DEFAULT true,
  created_at              timestamptz NOT NULL DEFAULT now(),
  updated_at              timestamptz NOT NULL DEFAULT now(),
  -- Evaluation state (aggregate rules): inactive → pending → firing → recovering → inactive.
  state                   text NOT NULL DEFAULT 'inactive' CHECK (state IN ('inactive', 'pending', 'firing', 'recovering')),
  active_at               timestamptz,
  keep_firing_since       timestamptz,
  episode_event_id        uuid,
  last_evaluated_at       timestamptz,
  last_error              text,
  -- Cooldown bookkeeping: when the last firing notification went out, and what waits or was held back.
  last_notified_at        timestamptz,
  deferred_event_id       uuid,
  suppressed_count        integer NOT NULL DEFAULT 0
);
CREATE INDEX alert_rules_project_idx ON alert_rules (project_id, created_at, id);
CREATE INDEX alert_rules_enabled_idx ON alert_rules (project_id) WHERE enabled;

CREATE TABLE alert_events (
  id           uuid PRIMARY KEY,
  rule_id      uuid NOT NULL REFERENCES alert_rules (id) ON DELETE CASCADE,
  kind         text NOT NULL CHECK (kind IN ('firing', 'resolved', 'triggered')),
  state_from   text NOT NULL,
  state_to     text NOT NULL,
  value        double precision,
  sample_count integer,
  threshold    double precision NOT NULL,
  comparator   text NOT NULL,
  window_start timestamptz,
  window_end   timestamptz,
  run_id       uuid,
  reason       text,
  severity     text NOT NULL,
  created_at   timestamptz NOT NULL
);
CREATE INDEX alert_events_rule_idx ON alert_events (rule_id, created_at DESC, id DESC);

-- One delivery per event that notifies; kept in Postgres so that none is lost when the service restarts.
CREATE TABLE alert_deliveries (
  event_id         uuid PRIMARY KEY REFERENCES alert_events (id) ON DELETE CASCADE,
  rule_id          uuid NOT NULL REFERENCES alert_rules (id) ON DELETE CASCADE,
  channel          text NOT NULL CHECK (channel IN ('webhook', 'slack')),
  status           text NOT NULL CHECK (status IN ('queued', 'sent', 'failed', 'suppressed')),
  attempts         integer NOT NULL DEFAULT 0,
  last_status_code integer,
  last_error       text,
  next_attempt_at  timestamptz NOT NULL,
  created_at       timestamptz NOT NULL,
  updated_at       timestamptz NOT NULL
);
CREATE INDEX alert_deliveries_due_idx ON alert_deliveries (next_attempt_at) WHERE status = 'queued';
