//! What each tool does: arguments (already checked against the tool's schema) in,
//! JSON out, through the gate. Synchronous; the server runs it off the async runtime.
//!
//! Reached through [`Engine::call`] (in `call.rs`), which redacts secrets from
//! the arguments first and audits the call after. What goes out is shaped by
//! `shape.rs` inside the gate's caps; paths that name files are confined to the
//! repository root. Never panics on input (the server also catches panics).

use std::sync::Arc;

use serde_json::{json, Map, Value};

use super::args::{arg_str, bounded_count, err, required_str, str_list, ToolError};
use super::shape;
use crate::embed::Embedder;
use crate::gate::{AuditLog, AuditQueue, Gate};
use crate::index::{self, IndexOptions};
use crate::manager::{BackendProviders, FirstIndex, MemoryManager, StoreProviders, VectorFill};
use crate::memory::{
    parse_since, Decision, FileChange, Memories, Memory, MemoryBackend, MemoryFilter,
};
use crate::patterns::{PatternSetStore, Patterns, ScanTarget};
use crate::search::{self, HitKind, SearchOptions, SearchResults};

/// Everything a tool call may use: one repository's store and its gate.
pub struct Engine {
    /// Group-commits the audit events of read tools and appends the others, into the
    /// local store or, with [`Engine::with_backend`], the team backend. Declared first
    /// so it is dropped first, committing what it holds while the store is still open.
    pub audit: AuditQueue,
    pub memories: Arc<Memories>,
    /// Where the memory tools (write, update, get, search, forget, list, notes,
    /// coding records) read and write, resolved once: the local store, or the team
    /// backend (PostgreSQL, [`Engine::with_backend`]) judged against the local code
    /// index. One body per tool; code tools stay on [`Engine::memories`].
    pub providers: BackendProviders,
    pub gate: Gate,
    pub embedder: Arc<dyn Embedder>,
    pub index_options: IndexOptions,
    /// Composes the providers for `enrich_prompt`.
    pub manager: MemoryManager,
    /// A chat model behind the gate, when one is configured (`llm_model`).
    pub assistant: Option<Arc<crate::assist::Assistant>>,
    /// The team backend's audit log, once [`Engine::with_backend`] set one.
    team_log: Option<Arc<dyn AuditLog>>,
    /// Where loaded pattern-set definitions are kept: the local store, or the team
    /// backend. Sets are compiled and scanned over the local store either way.
    pub pattern_sets: Arc<dyn PatternSetStore>,
    /// How long a code_search in a never-indexed repository waits for its first
    /// index before answering with what is indexed so far ([`FirstIndex`]).
    pub first_index_wait: std::time::Duration,
    first_index: FirstIndex,
    /// Adds a slow embedder's vectors after a keywords-first pass, in the background.
    pub vector_fill: Arc<VectorFill>,
}

impl Engine {
    /// An engine over `memories` behind `gate`, with the built-in providers.
    pub fn new(memories: Memories, gate: Gate, index_options: IndexOptions) -> Engine {
        let memories = Arc::new(memories);
        let embedder = memories.embedder().clone();
        let manager = MemoryManager::new(
            StoreProviders::new(memories.clone(), index_options.clone()),
            gate.clone(),
        );
        let audit = AuditQueue::new(Arc::downgrade(&memories) as std::sync::Weak<dyn AuditLog>);
        let memories_defs: Arc<dyn PatternSetStore> = memories.clone();
        Engine {
            providers: BackendProviders::local(memories.clone()),
            memories,
            gate,
            embedder,
            index_options,
            manager,
            audit,
            assistant: None,
            team_log: None,
            pattern_sets: memories_defs,
            first_index_wait: crate::manager::FIRST_INDEX_WAIT,
            first_index: Default::default(),
            vector_fill: Default::default(),
        }
    }

    /// The same engine with its memory tools on `backend` (the team backend): the
    /// repository's memories, notes, coding records, audit trail and loaded pattern
    /// sets live there, its code stays in the local store.
    pub fn with_backend<B: MemoryBackend + AuditLog + PatternSetStore + 'static>(
        mut self,
        backend: Arc<B>,
    ) -> Engine {
        if let Err(e) = self.audit.flush() {
            tracing::error!("audit events not written: {e}");
        }
        let log: Arc<dyn AuditLog> = backend.clone();
        self.audit = AuditQueue::new(Arc::downgrade(&log));
        if let Some(a) = &self.assistant {
            a.set_audit_log(log.clone());
        }
        self.team_log = Some(log);
        self.pattern_sets = backend.clone();
        self.providers = BackendProviders::new(backend, Some(self.memories.clone()));
        // enrich_prompt's memories and notes come from the backend too (stale tags
        // from the local code index); the code provider stays on the local store.
        let providers = Arc::new(self.providers.clone());
        self.manager.sessions = providers.clone();
        self.manager.notes = providers;
        #[cfg(feature = "llm")]
        if let Some((_, memories, _)) = &mut self.manager.rerank {
            *memories = self.providers.backend().clone();
        }
        self
    }

    /// Where the memory tools read and write (see [`Engine::providers`]).
    pub fn backend(&self) -> &Arc<dyn MemoryBackend> {
        self.providers.backend()
    }

    /// The same engine with a chat model (the manager reranks with it when the
    /// `rerank` feature is on).
    pub fn with_assistant(mut self, assistant: Option<crate::assist::Assistant>) -> Engine {
        let assistant = assistant.map(Arc::new);
        if let (Some(a), Some(log)) = (&assistant, &self.team_log) {
            a.set_audit_log(log.clone());
        }
        let log: Arc<dyn AuditLog> = self.memories.clone();
        self.manager.rerank = assistant
            .clone()
            .map(|a| (a, self.backend().clone(), log.clone()));
        self.assistant = assistant;
        self
    }
}

impl Engine {
    /// The pattern sets: definitions from [`Engine::pattern_sets`], scanned over the
    /// local store.
    pub fn patterns(&self) -> Patterns<'_> {
        Patterns::with_definitions(self.memories.store(), &*self.pattern_sets)
    }
}

/// What one client connection remembers between its calls: the coding session it
/// started, which its records made without a session id join while it is open (see
/// [`crate::memory::ActiveSession`]). A stdio server has one; over HTTP each MCP
/// session has its own.
#[derive(Debug, Default)]
pub struct Connection {
    started: std::sync::Mutex<Option<String>>,
}

impl Connection {
    /// The session this connection started and has not ended.
    pub fn started(&self) -> Option<String> {
        self.started.lock().map(|s| s.clone()).unwrap_or_default()
    }

    fn set_started(&self, id: Option<String>) {
        if let Ok(mut s) = self.started.lock() {
            *s = id;
        }
    }

    /// Forget `id` as this connection's session (it ended).
    pub(super) fn ended(&self, id: &str) {
        if self.started().as_deref() == Some(id) {
            self.set_started(None);
        }
    }
}

/// A tool that ran and failed, with the reason for the caller.
pub type ToolResult = Result<Value, String>;

impl Engine {
    pub(super) fn search(&self, query: &str, opts: SearchOptions) -> ToolResult {
        let r = search::search(self.memories.store(), query, &opts).map_err(err)?;
        Ok(self.hits(&r))
    }

    /// Search results shaped for output under one budget.
    pub(super) fn hits(&self, r: &SearchResults) -> Value {
        let mut budget = self.gate.budget();
        let hits = shape::hits(&r.hits, &mut budget);
        let mut v = shape::listed("hits", hits, &budget);
        v["degraded"] = json!(r.degraded);
        if let Some(space) = &r.vector_space {
            v["vector_space"] = json!(space);
        }
        v
    }

    /// Index the repository first when it never was, within
    /// [`Engine::first_index_wait`]; the note to add to the answer, if any.
    pub(super) fn index_first(&self) -> Result<Option<String>, ToolError> {
        Ok(self.first_index.ensure(
            &self.memories,
            self.gate.root(),
            &self.index_options,
            &self.vector_fill,
            self.first_index_wait,
        )?)
    }

    /// Memories shaped for output under one budget, listed under `field`, each with
    /// its `stale` marks.
    fn memory_list(&self, field: &str, found: &[Memory]) -> ToolResult {
        let mut budget = self.gate.budget();
        let mut items = shape::memories(found, &mut budget);
        self.annotate_stale(found, items.iter_mut())?;
        Ok(shape::listed(field, items, &budget))
    }

    /// The file-path arguments of a coding record made repository-relative (and
    /// refused when they lead outside the repository).
    fn relative_paths(&self, a: &Map<String, Value>) -> Result<Map<String, Value>, ToolError> {
        let mut a = a.clone();
        for k in ["path", "file"] {
            if let Some(p) = arg_str(&a, k) {
                let rel = self.gate.relative(p)?;
                a.insert(k.into(), json!(rel));
            }
        }
        if let Some(files) = a.get("related_files").and_then(Value::as_array) {
            let rel = files
                .iter()
                .filter_map(Value::as_str)
                .map(|p| self.gate.relative(p))
                .collect::<Result<Vec<_>, _>>()?;
            a.insert("related_files".into(), json!(rel));
        }
        Ok(a)
    }

    fn search_options(&self, a: &Map<String, Value>) -> Result<SearchOptions, ToolError> {
        Ok(SearchOptions {
            top_k: bounded_count(a, "top_k", 10, 100) as usize,
            lang: arg_str(a, "lang").map(String::from),
            path_glob: arg_str(a, "path").map(String::from),
            kind: arg_str(a, "kind").map(str::parse::<HitKind>).transpose()?,
            embedder: self.embedder.clone(),
            ..SearchOptions::default()
        })
    }

    pub(super) fn memory_filter(&self, a: &Map<String, Value>) -> Result<MemoryFilter, ToolError> {
        Ok(MemoryFilter {
            kind: arg_str(a, "kind").map(String::from),
            task: arg_str(a, "task").map(String::from),
            insights: str_list(a, "insights"),
            contexts: str_list(a, "contexts"),
            tags: str_list(a, "tags"),
            session: arg_str(a, "session").map(String::from),
            since_ms: arg_str(a, "since")
                .map(|t| parse_since(t, crate::store::now_ms()))
                .transpose()?,
        }
        .normalised()?)
    }

    fn reindex(&self) -> ToolResult {
        let root = self
            .gate
            .root()
            .ok_or("this server has no repository root to index")?;
        if !self.index_options.splits_keywords_first() {
            let r = index::index(self.memories.store(), root, &self.index_options).map_err(err)?;
            return serde_json::to_value(r).map_err(err);
        }
        // A slow embedder (a model): answer once the keywords are in, within a tool
        // call's deadline, and add its vectors in the background.
        let r =
            index::index_keywords(self.memories.store(), root, &self.index_options).map_err(err)?;
        self.vector_fill.request(
            self.memories.clone(),
            root.to_path_buf(),
            &self.index_options,
        );
        let mut v = serde_json::to_value(r).map_err(err)?;
        v["vectors"] = json!(format!(
            "{}'s vectors are being added in the background; until they are complete search uses the built-in ones",
            self.index_options.embedder.name()
        ));
        Ok(v)
    }

    fn index_path(&self, a: &Map<String, Value>, dir: bool) -> ToolResult {
        let path = arg_str(a, "path").unwrap_or(".");
        let p = self.gate.confine(path).map_err(err)?;
        if dir && !p.is_dir() {
            return Err(format!("{path} is not a directory of the repository"));
        }
        if !dir && !p.is_file() {
            return Err(format!("{path} is not a file of the repository"));
        }
        // Indexing is incremental: unchanged files cost a stat, so bringing the
        // whole repository level is as cheap as indexing the one path.
        self.reindex()
    }

    pub(super) fn dispatch(
        &self,
        name: &str,
        a: &Map<String, Value>,
        conn: &Connection,
    ) -> ToolResult {
        let started = conn.started();
        let started = started.as_deref();
        if let Some(done) = self.dispatch_extra(name, a) {
            return done;
        }
        if let Some(done) = self.dispatch_graph(name, a) {
            return done;
        }
        let m = &self.memories;
        let b = self.backend();
        match name {
            "code_search" => {
                let mut opts = self.search_options(a)?;
                if opts.kind == Some(HitKind::Memory) {
                    return Err("code_search finds code; use memory_search for memories".into());
                }
                if opts.kind.is_none() {
                    opts.kind = Some(HitKind::Chunk);
                }
                let query = required_str(a, "query")?;
                let note = self.index_first()?;
                let found = if a.get("providers").and_then(Value::as_bool) == Some(true) {
                    self.search_with_providers(query, opts)
                } else {
                    self.search(query, opts)
                };
                Ok(noted(found?, note))
            }
            "symbol_search" => {
                let name = required_str(a, "name")?;
                let note = self.index_first()?;
                let found = index::lookup_symbols(
                    m.store(),
                    name,
                    bounded_count(a, "limit", 20, 200) as usize,
                )
                .map_err(err)?;
                Ok(noted(json!({"symbols": found}), note))
            }
            "jit_index_file" | "register_file" => self.index_path(a, false),
            "jit_index_directory" => self.index_path(a, true),
            "jit_search" => {
                self.reindex()?;
                let mut opts = self.search_options(a)?;
                opts.kind = Some(HitKind::Chunk);
                self.search(required_str(a, "query")?, opts)
            }
            "memory_write" => {
                let metadata = a.get("metadata").and_then(Value::as_object).cloned();
                let written = b
                    .remember(required_str(a, "text")?, &str_list(a, "tags"), metadata)
                    .map_err(err)?;
                Ok(json!({"id": written.id}))
            }
            "memory_write_structured" => {
                let mut mem = Memory::new(required_str(a, "text")?);
                mem.task = arg_str(a, "task").map(String::from);
                mem.insights = str_list(a, "insights");
                mem.contexts = str_list(a, "contexts");
                mem.tags = str_list(a, "tags");
                mem.symbols = str_list(a, "symbols");
                if let Some(p) = arg_str(a, "provenance") {
                    mem.provenance = p.to_string();
                }
                mem.session = arg_str(a, "session").map(String::from);
                if let Some(meta) = a.get("metadata").and_then(Value::as_object) {
                    mem.metadata = meta.clone();
                }
                let written = b.write(mem).map_err(err)?;
                let shown = shape::memory(&written, &mut self.gate.budget());
                Ok(json!({"id": written.id, "memory": shown}))
            }
            "memory_search" | "memory_search_structured" => self.search_memories(a),
            "memory_get" => match b.get(required_str(a, "id")?).map_err(err)? {
                Some(mem) => {
                    let mut budget = self.gate.budget();
                    let mut shown = shape::memory(&mem, &mut budget);
                    self.annotate_stale(std::slice::from_ref(&mem), shown.iter_mut())?;
                    let mut v = json!({"memory": shown});
                    if budget.cut() {
                        v["truncated"] = json!(true);
                    }
                    Ok(v)
                }
                None => Err(format!("no memory {}", required_str(a, "id")?)),
            },
            "memory_list_structured" => {
                let filter = self.memory_filter(a)?;
                let limit = bounded_count(a, "limit", 20, 500) as usize;
                let offset = a.get("offset").and_then(Value::as_u64).unwrap_or(0) as usize;
                let found = b.list_filtered(&filter, limit, offset).map_err(err)?;
                self.memory_list("memories", &found)
            }
            "memory_list_threads" => {
                let filter = MemoryFilter {
                    kind: Some("session".into()),
                    ..MemoryFilter::default()
                };
                let found = b
                    .list_filtered(&filter, bounded_count(a, "limit", 20, 500) as usize, 0)
                    .map_err(err)?;
                self.memory_list("threads", &found)
            }
            "pattern_load" => self.pattern_load(a),
            "pattern_list" => self.pattern_list(),
            "pattern_scan" => {
                let set = required_str(a, "set")?;
                let patterns = self.patterns();
                let found = match arg_str(a, "key") {
                    // A memory is read from wherever the memories are.
                    Some(k) if k.starts_with("mem:") => {
                        crate::manager::scan_memory(&patterns, &**b, set, k).map_err(err)
                    }
                    Some(k) => patterns.scan(set, &ScanTarget::Key(k.into())).map_err(err),
                    None => patterns.scan(set, &ScanTarget::Code).map_err(err),
                }?;
                Ok(json!({"matches": found}))
            }
            "pattern_scan_memories" => self.pattern_scan_memories(a),
            "pattern_delete" => self.pattern_delete(a),
            "audit_read" => self.audit_read(a),
            "get_notes" => match arg_str(a, "name") {
                Some(n) => {
                    let note = b
                        .note_get(n)
                        .map_err(err)?
                        .ok_or_else(|| format!("no note {n:?}"))?;
                    self.memory_list("notes", &[note])
                }
                None => {
                    let notes = b.note_list().map_err(err)?;
                    self.memory_list("notes", &notes)
                }
            },
            "set_note" => {
                let note = b
                    .note_set(
                        required_str(a, "name")?,
                        required_str(a, "value")?,
                        Some("agent_observed"),
                    )
                    .map_err(err)?;
                Ok(json!({"id": note.id}))
            }
            "coding_start_session" => {
                let sess = b
                    .start_session(required_str(a, "description")?, &str_list(a, "tags"))
                    .map_err(err)?;
                conn.set_started(Some(sess.id.clone()));
                Ok(json!({"id": sess.id}))
            }
            "coding_end_session" => self.end_session(a, conn),
            "coding_track_file_change" => {
                let c: FileChange =
                    serde_json::from_value(Value::Object(self.relative_paths(a)?)).map_err(err)?;
                let change = b.track_file_change(&c, started).map_err(err)?;
                Ok(json!({"id": change.id, "session": change.session}))
            }
            "coding_record_error" => self.record_error(self.relative_paths(a)?, started),
            "coding_suggest_solution" => self.suggest_solution(a),
            "coding_record_decision" => {
                let d: Decision =
                    serde_json::from_value(Value::Object(self.relative_paths(a)?)).map_err(err)?;
                let decision = b.record_decision(&d, started).map_err(err)?;
                Ok(json!({"id": decision.id, "session": decision.session}))
            }
            "coding_search_errors" => self.search_errors(a),
            "coding_get_project_context" => self.project_context(a),
            "coding_analyze_patterns" => {
                let r = crate::memory::analyze_patterns_of(&**b).map_err(err)?;
                Ok(serde_json::to_value(r).map_err(err)?)
            }
            "enrich_prompt" => self.enrich_with(
                required_str(a, "prompt")?,
                bounded_count(a, "budget", 8000, self.gate.caps.total_bytes as u64) as usize,
                a.get("providers").and_then(Value::as_bool) == Some(true),
            ),
            other => Err(format!("unknown tool {other:?}")),
        }
    }

    /// The context block for a prompt: code, notes and memories, fused, sanitised,
    /// attributed, within `budget` bytes (the manager and the gate do the work).
    pub fn enrich(&self, prompt: &str, budget: usize) -> ToolResult {
        let e = self
            .manager
            .enrich_prompt(&self.gate.repo, prompt, budget)
            .map_err(err)?;
        serde_json::to_value(e).map_err(err)
    }
}

/// `answer` with `note` added, when there is one.
pub(super) fn noted(mut answer: Value, note: Option<String>) -> Value {
    if let (Some(note), Some(fields)) = (note, answer.as_object_mut()) {
        fields.insert("note".into(), json!(note));
    }
    answer
}
