-- Jobs that run once per deployment (alert evaluation, retention deletion, the abandon job): an instance runs a
-- round only while it holds the job's lease; the others skip theirs. A lease past expires_at may be taken over,
-- so a stopped holder hands the job on within one lease.
CREATE TABLE job_leases (
  job text PRIMARY KEY,
  holder text NOT NULL,
  expires_at timestamptz NOT NULL
);
