-- The inbox holds the reply every command got: the stage's outcome, or why it was
-- dead-lettered. A stage takes the command's inbox row first in its transaction (outcome still
-- empty), so a second apply of the same command waits on that row and then finds it taken;
-- the outcome is set before the same transaction commits.
ALTER TABLE inbox
    ALTER COLUMN outcome DROP NOT NULL,
    ADD COLUMN dead_letter_reason text;
