-- Definition approvals (SPEC §2.5, §2.6, §3.4, §4.5): a publish under the tenant's approval
-- settings opens a request instead of publishing; approve publishes, reject and withdraw close
-- it. Written only by the definitions stage, the key's single writer, so an approve racing a
-- withdraw has one winner. At most one open request per key (README "Definition approvals").

CREATE TABLE definition_approval_requests (
    id                uuid        PRIMARY KEY,
    tenant_id         uuid        NOT NULL,
    kind              text        NOT NULL,
    key               text        NOT NULL,
    version           integer     NOT NULL,
    requested_by      text        NOT NULL,
    requested_by_name text        NOT NULL,
    requested_at      timestamptz NOT NULL,
    comment           text,
    decided_by        text,
    decided_by_name   text,
    decided_at        timestamptz,
    decision          text CHECK (decision IN ('approved', 'rejected', 'withdrawn')),
    decision_comment  text,
    CHECK ((decision IS NULL) = (decided_at IS NULL)),
    FOREIGN KEY (tenant_id, kind, key, version)
        REFERENCES definition_versions (tenant_id, kind, key, version)
);

CREATE UNIQUE INDEX definition_approval_requests_one_open
    ON definition_approval_requests (tenant_id, kind, key) WHERE decision IS NULL;
-- GET /approvals: open ones oldest first, decided ones newest decision first.
CREATE INDEX definition_approval_requests_open
    ON definition_approval_requests (tenant_id, requested_at, id) WHERE decision IS NULL;
CREATE INDEX definition_approval_requests_decided
    ON definition_approval_requests (tenant_id, decided_at DESC, id DESC) WHERE decision IS NOT NULL;

-- The discussion of a request, oldest first.
CREATE TABLE definition_approval_comments (
    id          uuid        PRIMARY KEY,
    tenant_id   uuid        NOT NULL,
    approval_id uuid        NOT NULL REFERENCES definition_approval_requests (id),
    author_id   text        NOT NULL,
    author_name text        NOT NULL,
    body        text        NOT NULL,
    created_at  timestamptz NOT NULL
);

CREATE INDEX definition_approval_comments_request
    ON definition_approval_comments (approval_id, created_at, id);

-- The people behind the names (README "The user directory"): every human or machine subject the
-- API has seen a verified token of, per tenant, as its newest token described it. Applicants
-- act on one submission and are not the tenant's people: they are not recorded.
CREATE TABLE tenant_users (
    tenant_id  uuid        NOT NULL,
    subject    text        NOT NULL,
    name       text        NOT NULL,
    kind       text        NOT NULL CHECK (kind IN ('human', 'machine')),
    roles      text[]      NOT NULL,
    perms      text[]      NOT NULL,
    first_seen timestamptz NOT NULL,
    last_seen  timestamptz NOT NULL,
    PRIMARY KEY (tenant_id, subject)
);
