-- engram schema 1: memories, their versions, vectors, edges, notes and error counts.
--
-- Every row carries its repository (`repo`). Row-level security is enabled and forced
-- (it applies to the tables' owner too): a row is visible and writable only while the
-- transaction's setting `engram.repo` names its repository, which engram sets with
-- set_config('engram.repo', …, true) at the start of every transaction. A query that
-- forgets its WHERE on repo still sees one repository only. (A superuser or a role with
-- BYPASSRLS is not subject to this: connect as an ordinary role.)

CREATE EXTENSION IF NOT EXISTS vector;

-- The order of writes across the database: a memory's `seq` is the write that gave it
-- its current value (as a local store's log sequence number).
CREATE SEQUENCE engram_write_seq;

CREATE TABLE engram_memories (
    repo        text   NOT NULL CHECK (repo <> ''),
    id          text   NOT NULL CHECK (id ~ '^mem:[0-9a-f]{8}$'),
    kind        text   NOT NULL,
    text        text   NOT NULL,
    task        text,
    insights    text[] NOT NULL DEFAULT '{}',
    contexts    text[] NOT NULL DEFAULT '{}',
    tags        text[] NOT NULL DEFAULT '{}',
    session     text,
    version     bigint NOT NULL CHECK (version >= 1),
    created_ms  bigint NOT NULL,
    updated_ms  bigint NOT NULL,
    seq         bigint NOT NULL DEFAULT nextval('engram_write_seq'),
    -- The memory's record metadata exactly as the local store keeps it (json, not
    -- jsonb: its text is kept as written, so an export is byte-identical).
    doc         json   NOT NULL,
    -- Keyword index: code-aware words of the text (weight B) and tags (weight A).
    tsv         tsvector NOT NULL,
    PRIMARY KEY (repo, id)
);
CREATE INDEX engram_memories_by_update ON engram_memories (repo, updated_ms DESC, seq DESC);
CREATE INDEX engram_memories_by_creation ON engram_memories (repo, created_ms, seq);
CREATE INDEX engram_memories_by_kind ON engram_memories (repo, kind);
CREATE INDEX engram_memories_by_session ON engram_memories (repo, session);
CREATE INDEX engram_memories_tsv ON engram_memories USING gin (tsv);
CREATE INDEX engram_memories_tags ON engram_memories USING gin (tags);

-- Every version of every live memory; (repo, id, version) is unique, so two writers
-- can never both write version n.
CREATE TABLE engram_memory_versions (
    repo        text   NOT NULL,
    id          text   NOT NULL,
    version     bigint NOT NULL,
    text        text   NOT NULL,
    created_ms  bigint NOT NULL,
    updated_ms  bigint NOT NULL,
    seq         bigint NOT NULL,
    doc         json   NOT NULL,
    PRIMARY KEY (repo, id, version),
    FOREIGN KEY (repo, id) REFERENCES engram_memories (repo, id) ON DELETE CASCADE
);

-- One vector per memory and embedder; `dims` selects the partial HNSW index of that
-- dimension (one is created per dimension in use; 256 is the built-in embedder's).
CREATE TABLE engram_memory_vectors (
    repo        text   NOT NULL,
    id          text   NOT NULL,
    embedder    text   NOT NULL,
    dims        int    NOT NULL,
    embedding   vector NOT NULL,
    PRIMARY KEY (repo, id, embedder),
    FOREIGN KEY (repo, id) REFERENCES engram_memories (repo, id) ON DELETE CASCADE
);
CREATE INDEX engram_memory_vectors_hnsw_256 ON engram_memory_vectors
    USING hnsw ((embedding::vector(256)) vector_cosine_ops) WHERE dims = 256;

-- Relationships an entry states (session includes it, it mentions/affects/relates to
-- code, an error is resolved by a change); `owner` is the entry that states them.
CREATE TABLE engram_memory_edges (
    repo        text NOT NULL,
    src         text NOT NULL,
    rel         text NOT NULL,
    dst         text NOT NULL,
    owner       text NOT NULL,
    PRIMARY KEY (repo, src, rel, dst, owner),
    FOREIGN KEY (repo, owner) REFERENCES engram_memories (repo, id) ON DELETE CASCADE
);
CREATE INDEX engram_memory_edges_by_dst ON engram_memory_edges (repo, dst);
CREATE INDEX engram_memory_edges_by_owner ON engram_memory_edges (repo, owner);

-- Which entry holds note `name`. Setting a note upserts this row first: concurrent
-- setters of one name queue on it and make one entry with several versions.
CREATE TABLE engram_notes (
    repo        text NOT NULL,
    name        text NOT NULL,
    id          text NOT NULL,
    PRIMARY KEY (repo, name),
    FOREIGN KEY (repo, id) REFERENCES engram_memories (repo, id)
        ON DELETE CASCADE DEFERRABLE INITIALLY DEFERRED
);

-- Which entry holds an error signature, and how often it was recorded: one
-- INSERT … ON CONFLICT DO UPDATE SET frequency = frequency + 1 per occurrence.
CREATE TABLE engram_error_counts (
    repo        text   NOT NULL,
    signature   text   NOT NULL,
    id          text   NOT NULL,
    frequency   bigint NOT NULL,
    PRIMARY KEY (repo, signature),
    FOREIGN KEY (repo, id) REFERENCES engram_memories (repo, id)
        ON DELETE CASCADE DEFERRABLE INITIALLY DEFERRED
);

ALTER TABLE engram_memories ENABLE ROW LEVEL SECURITY;
ALTER TABLE engram_memories FORCE ROW LEVEL SECURITY;
CREATE POLICY engram_repo ON engram_memories
    USING (repo = current_setting('engram.repo', true))
    WITH CHECK (repo = current_setting('engram.repo', true));

ALTER TABLE engram_memory_versions ENABLE ROW LEVEL SECURITY;
ALTER TABLE engram_memory_versions FORCE ROW LEVEL SECURITY;
CREATE POLICY engram_repo ON engram_memory_versions
    USING (repo = current_setting('engram.repo', true))
    WITH CHECK (repo = current_setting('engram.repo', true));

ALTER TABLE engram_memory_vectors ENABLE ROW LEVEL SECURITY;
ALTER TABLE engram_memory_vectors FORCE ROW LEVEL SECURITY;
CREATE POLICY engram_repo ON engram_memory_vectors
    USING (repo = current_setting('engram.repo', true))
    WITH CHECK (repo = current_setting('engram.repo', true));

ALTER TABLE engram_memory_edges ENABLE ROW LEVEL SECURITY;
ALTER TABLE engram_memory_edges FORCE ROW LEVEL SECURITY;
CREATE POLICY engram_repo ON engram_memory_edges
    USING (repo = current_setting('engram.repo', true))
    WITH CHECK (repo = current_setting('engram.repo', true));

ALTER TABLE engram_notes ENABLE ROW LEVEL SECURITY;
ALTER TABLE engram_notes FORCE ROW LEVEL SECURITY;
CREATE POLICY engram_repo ON engram_notes
    USING (repo = current_setting('engram.repo', true))
    WITH CHECK (repo = current_setting('engram.repo', true));

ALTER TABLE engram_error_counts ENABLE ROW LEVEL SECURITY;
ALTER TABLE engram_error_counts FORCE ROW LEVEL SECURITY;
CREATE POLICY engram_repo ON engram_error_counts
    USING (repo = current_setting('engram.repo', true))
    WITH CHECK (repo = current_setting('engram.repo', true));
