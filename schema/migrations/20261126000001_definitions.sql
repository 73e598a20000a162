-- Versioned definitions (SPEC §1): workflows, rules, rule sets, collection flows. Written only
-- by the definitions stage, one writer per (tenant, kind, key), so version numbers are handed
-- out without gaps or races. A version is immutable once created; publishing points the key
-- at one of its versions.
CREATE TABLE definition_versions (
    tenant_id    uuid        NOT NULL,
    kind         text        NOT NULL CHECK (kind IN ('workflow', 'rule', 'rule_set', 'collection_flow')),
    key          text        NOT NULL,
    version      integer     NOT NULL CHECK (version > 0),
    body         jsonb       NOT NULL,
    created_by   text        NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    -- When the version was last made the published one (it may have been replaced since).
    published_at timestamptz,
    published_by text,
    PRIMARY KEY (tenant_id, kind, key, version)
);

-- One row per key: its newest version and the version runs use.
CREATE TABLE definition_keys (
    tenant_id         uuid    NOT NULL,
    kind              text    NOT NULL,
    key               text    NOT NULL,
    latest_version    integer NOT NULL CHECK (latest_version > 0),
    published_version integer CHECK (published_version > 0),
    PRIMARY KEY (tenant_id, kind, key),
    FOREIGN KEY (tenant_id, kind, key, latest_version)
        REFERENCES definition_versions (tenant_id, kind, key, version),
    FOREIGN KEY (tenant_id, kind, key, published_version)
        REFERENCES definition_versions (tenant_id, kind, key, version)
);

-- The app calls of each key's published version, replaced when another version is published:
-- GET /apps/:name/usage reads it by app.
CREATE TABLE definition_app_calls (
    tenant_id uuid    NOT NULL,
    app_name  text    NOT NULL,
    kind      text    NOT NULL,
    key       text    NOT NULL,
    version   integer NOT NULL,
    action    text    NOT NULL,
    PRIMARY KEY (tenant_id, app_name, kind, key, action),
    FOREIGN KEY (tenant_id, kind, key) REFERENCES definition_keys (tenant_id, kind, key)
);
