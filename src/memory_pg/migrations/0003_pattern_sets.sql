-- engram schema 3: the pattern sets a repository loaded (`engram pattern load`, the
-- MCP tool pattern_load), as the local store keeps them under `pat:{name}`. Only the
-- definitions live here: compiling and scanning stay local, over the code index.
--
-- Row-level security as in schema 1.

CREATE TABLE engram_pattern_sets (
    repo        text NOT NULL CHECK (repo <> ''),
    -- The set's slug (its key is `pat:{name}`).
    name        text NOT NULL CHECK (name ~ '^[a-z0-9_-]{1,64}$'),
    -- The set in engram's spelling, as the local store's record body holds it.
    definition  json NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (repo, name)
);

ALTER TABLE engram_pattern_sets ENABLE ROW LEVEL SECURITY;
ALTER TABLE engram_pattern_sets FORCE ROW LEVEL SECURITY;
CREATE POLICY engram_repo ON engram_pattern_sets
    USING (repo = current_setting('engram.repo', true))
    WITH CHECK (repo = current_setting('engram.repo', true));
