-- Documents of a subject (README "Documents"; SPEC §4.13 names only their fetch by the runner):
-- the bytes rest in object storage under the tenant and their sha256, this row says what they
-- are. Written only by the documents stage; read by the API's document routes and by the
-- internal routes a call of an app that declares needs: ['documents'] reads through.
-- Subjects are not modelled here (SPEC: not shown), so subject_id is not a foreign key.
CREATE TABLE documents (
    id           uuid        PRIMARY KEY,
    tenant_id    uuid        NOT NULL,
    subject_id   uuid        NOT NULL,
    name         text        NOT NULL CHECK (length(name) BETWEEN 1 AND 255),
    content_type text        NOT NULL CHECK (length(content_type) BETWEEN 3 AND 255),
    size_bytes   bigint      NOT NULL CHECK (size_bytes > 0),
    sha256       text        NOT NULL CHECK (sha256 ~ '^[0-9a-f]{64}$'),
    created_by   text        NOT NULL,
    created_at   timestamptz NOT NULL
);

-- A subject's documents, newest first: the people's list and a call's list.
CREATE INDEX documents_subject ON documents (tenant_id, subject_id, created_at DESC, id DESC);
