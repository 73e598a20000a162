-- Commands a stage has applied. Inserted in the same transaction as the command's effect, so a
-- redelivered command finds its id here and is answered from the stored outcome instead of being
-- applied twice.
CREATE TABLE inbox (
    command_id   uuid        PRIMARY KEY,
    stage        text        NOT NULL,
    topic        text        NOT NULL,
    tenant_id    uuid        NOT NULL,
    outcome      jsonb       NOT NULL,
    processed_at timestamptz NOT NULL DEFAULT now()
);

-- Pruning old entries walks this index.
CREATE INDEX inbox_processed_at ON inbox (processed_at);
