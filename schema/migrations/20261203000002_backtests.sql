-- Backtests (SPEC §2.7, §3.5; README "Backtests"): a rule, rule set or workflow version replayed
-- over recorded evaluations (rule_evaluations), apps never called. The backtests stage inserts
-- the row `queued` (POST /backtests, once per command) with a lease (lease_id, running_until)
-- reserved for the worker that recorded it, which starts it; any worker's sweep claims one
-- whose lease is free or expired. Progress writes renew the lease, and only its holder
-- finishes the backtest. A worker that dies leaves a lease that expires: the next claim starts
-- the backtest again from nothing (progress back to 0, `attempts` + 1), so nothing is counted
-- twice, and two workers never run one backtest at once. After a failed attempt, running_until
-- is when the next may start.
CREATE TABLE backtests (
    id                 uuid        PRIMARY KEY,
    tenant_id          uuid        NOT NULL,
    kind               text        NOT NULL CHECK (kind IN ('rule', 'rule_set', 'workflow')),
    key                text        NOT NULL,
    version            integer     NOT NULL CHECK (version > 0),
    last_days          integer     NOT NULL CHECK (last_days BETWEEN 1 AND 180),
    sample_limit       integer     NOT NULL CHECK (sample_limit BETWEEN 1 AND 5000),
    status             text        NOT NULL
        CHECK (status IN ('queued', 'running', 'completed', 'failed')),
    progress_done      integer     NOT NULL DEFAULT 0 CHECK (progress_done >= 0),
    progress_total     integer     NOT NULL DEFAULT 0 CHECK (progress_total >= 0),
    summary            jsonb,
    error              text,
    engine_workflow_id text,
    requested_by       text        NOT NULL,
    requested_by_name  text        NOT NULL,
    created_at         timestamptz NOT NULL,
    started_at         timestamptz,
    finished_at        timestamptz,
    attempts           integer     NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    lease_id           uuid,
    running_until      timestamptz
);

CREATE INDEX backtests_tenant_time ON backtests (tenant_id, created_at DESC, id DESC);
-- The approval detail's latest completed backtest of a version.
CREATE INDEX backtests_version_finished ON backtests (tenant_id, kind, key, version, finished_at DESC)
    WHERE status = 'completed';
-- What sweeps claim (oldest first): queued ones, and running ones whose lease expired.
CREATE INDEX backtests_claimable ON backtests (created_at) WHERE status IN ('queued', 'running');
