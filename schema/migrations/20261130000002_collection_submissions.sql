-- Collection submissions (README "Hand-off"): the minimum SPEC §4.9 needs, a submission bound
-- to a run; an applicant's token names one.
CREATE TABLE collection_submissions (
    id              uuid        PRIMARY KEY,
    tenant_id       uuid        NOT NULL,
    workflow_run_id uuid        NOT NULL REFERENCES workflow_runs (id),
    created_by      text        NOT NULL,
    created_at      timestamptz NOT NULL
);

CREATE INDEX collection_submissions_tenant_run ON collection_submissions (tenant_id, workflow_run_id);
