-- engram schema 2: the audit trail, one row per audited call (MCP tools, chat-model
-- calls), as the local store's log keeps its audit events.
--
-- Row-level security as in schema 1, except that the trail is append-only for the
-- application: there are policies to read and to insert a repository's rows, none to
-- update or delete them (with security forced, UPDATE and DELETE touch no row).

CREATE TABLE engram_audit (
    repo         text    NOT NULL CHECK (repo <> ''),
    -- The order of appends across the database.
    seq          bigint  GENERATED ALWAYS AS IDENTITY,
    -- The event's own time (Unix milliseconds, stamped by engram) and the server's
    -- time of the insert.
    time_ms      bigint  NOT NULL,
    recorded_at  timestamptz NOT NULL DEFAULT now(),
    op           text    NOT NULL,
    session      text,
    user_id      text,
    -- Cut to 200 characters and redacted before it leaves the process.
    query        text,
    results      bigint  NOT NULL DEFAULT 0,
    redactions   bigint  NOT NULL DEFAULT 0,
    flagged      text[]  NOT NULL DEFAULT '{}',
    error        text,
    -- A chat-model call: what was sent and what it cost (never what was said).
    llm          jsonb,
    PRIMARY KEY (repo, seq)
);
CREATE INDEX engram_audit_by_time ON engram_audit (repo, time_ms, seq);

ALTER TABLE engram_audit ENABLE ROW LEVEL SECURITY;
ALTER TABLE engram_audit FORCE ROW LEVEL SECURITY;
CREATE POLICY engram_repo_read ON engram_audit FOR SELECT
    USING (repo = current_setting('engram.repo', true));
CREATE POLICY engram_repo_append ON engram_audit FOR INSERT
    WITH CHECK (repo = current_setting('engram.repo', true));
