//! The search eval's corpus and queries, built deterministically from the pinned packages
//! of `tools/search-eval/manifest.tsv` and the hand-written `paraphrases.tsv`.
//!
//! Targets are the functions and methods (as engram's tree-sitter extraction finds them)
//! of each package's language that carry a doc comment: `///` lines in Rust, a `/** */`
//! block in JavaScript and TypeScript, a docstring in Python. Their docs are stripped
//! from the copy that is indexed (the lines blanked, a docstring replaced by `pass`, so
//! every line keeps its number), and a target is kept only when engram, parsing the
//! stripped copy, no longer sees a doc on it. Each target gives:
//!
//! - a doc query: the doc's first sentence, markup removed (at least 3 words, at most 30);
//! - an identifier query: the name as written (`interleave_shortest`, `getQueryData`),
//!   as an agent that knows the name types it; when the package defines that name more
//!   than once (any symbol, documented or not), the qualified name (`BytesMut::reserve`,
//!   `Command.invoke`) if that is unique, else no identifier query.
//!
//! Doc queries whose text is shared by two targets of a package (aliases, overloads) are
//! dropped: they have no one right answer. Paraphrases come from `paraphrases.tsv`,
//! written by hand before any search was run. A hit is a result in the right file whose
//! lines overlap the target's.
//!
//! Queries are split into a tune half and a held-out half by a hash of their target
//! (package, file, first line), not of the query, so a function's doc, identifier and
//! paraphrase queries are always in the same half and tuning on one half learns nothing
//! about the other half's functions.

#![allow(dead_code)] // the smoke test uses a subset

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use engram::index::symbols::{extract, SymbolKind};

/// Files larger than this are not indexed by engram's default either.
pub const MAX_FILE_BYTES: u64 = 1 << 20;

/// Doc queries shorter than this many words say too little to find anything.
const MIN_DOC_WORDS: usize = 3;
/// Longer first sentences are cut to this many words.
const MAX_DOC_WORDS: usize = 30;

/// One pinned package of the manifest.
#[derive(Debug, Clone, PartialEq)]
pub struct Package {
    pub name: String,
    pub registry: String,
    pub version: String,
    /// The language whose functions become queries (engram's name: `rust`, `python` …).
    pub lang: String,
    /// Paths inside the unpacked archive to index, and paths under them to leave out.
    pub include: Vec<String>,
    pub exclude: Vec<String>,
}

impl Package {
    /// The directory the fetch script unpacks it to, under `src/`.
    pub fn dir_name(&self) -> String {
        format!("{}-{}", self.name, self.version)
    }

    fn included(&self, rel: &str) -> bool {
        let under = |p: &String| rel == p || rel.starts_with(&format!("{p}/"));
        self.include.iter().any(under) && !self.exclude.iter().any(under)
    }
}

/// The packages of a manifest (`#` lines are comments).
pub fn read_manifest(text: &str) -> Result<Vec<Package>, String> {
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        if line.trim().is_empty() || line.starts_with('#') {
            continue;
        }
        let cols: Vec<&str> = line.split('\t').collect();
        let [name, registry, version, _url, sha, lang, include] = cols[..] else {
            return Err(format!(
                "manifest line {}: want 7 tab-separated columns, got {}",
                n + 1,
                cols.len()
            ));
        };
        if sha.len() != 64 || !sha.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(format!("manifest line {}: {sha:?} is not a sha256", n + 1));
        }
        let (mut inc, mut exc) = (Vec::new(), Vec::new());
        for p in include.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            match p.strip_prefix('!') {
                Some(x) => exc.push(x.trim_end_matches('/').to_string()),
                None => inc.push(p.trim_end_matches('/').to_string()),
            }
        }
        out.push(Package {
            name: name.into(),
            registry: registry.into(),
            version: version.into(),
            lang: lang.into(),
            include: inc,
            exclude: exc,
        });
    }
    Ok(out)
}

/// A file of a package: its path inside the unpacked archive and its text.
#[derive(Debug, Clone)]
pub struct SourceFile {
    pub rel: String,
    pub text: String,
}

/// The package's included text files under `root` (its unpacked directory), sorted by
/// path. Hidden files, files over [`MAX_FILE_BYTES`], binaries and files that are not
/// UTF-8 are left out (engram skips the first three; the last are too few to matter).
pub fn package_files(root: &Path, pkg: &Package) -> std::io::Result<Vec<SourceFile>> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir)? {
            let entry = entry?;
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.starts_with('.') {
                continue;
            }
            let path = entry.path();
            let ft = entry.file_type()?;
            if ft.is_dir() {
                stack.push(path);
                continue;
            }
            if !ft.is_file() || entry.metadata()?.len() > MAX_FILE_BYTES {
                continue;
            }
            let rel = path
                .strip_prefix(root)
                .expect("walked under root")
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect::<Vec<_>>()
                .join("/");
            if !pkg.included(&rel) {
                continue;
            }
            let bytes = std::fs::read(&path)?;
            if bytes[..bytes.len().min(8192)].contains(&0) {
                continue;
            }
            if let Ok(text) = String::from_utf8(bytes) {
                out.push(SourceFile { rel, text });
            }
        }
    }
    out.sort_by(|a, b| a.rel.cmp(&b.rel));
    Ok(out)
}

/// A documented function whose doc was stripped from the indexed copy.
#[derive(Debug, Clone, PartialEq)]
pub struct Target {
    pub package: String,
    pub lang: String,
    /// Path inside the unpacked archive (`itertools-0.15.0/src/lib.rs`), which is also
    /// its path in the index.
    pub file: String,
    pub name: String,
    pub qualified_name: String,
    /// 1-based, inclusive: the definition's lines as engram extracts them.
    pub start_line: u64,
    pub end_line: u64,
    /// The doc as engram extracted it from the original file.
    pub doc: String,
}

impl Target {
    /// What identifies the target, and decides its half.
    pub fn id(&self) -> String {
        format!("{}:{}:{}", self.package, self.file, self.start_line)
    }
}

/// A package prepared for indexing: every included file (docs of targets stripped) and
/// the targets.
#[derive(Debug, Clone, Default)]
pub struct Prepared {
    pub files: Vec<SourceFile>,
    pub targets: Vec<Target>,
    /// Documented functions left out because their doc could not be stripped cleanly
    /// (engram still saw a doc on the stripped copy, or the doc is not a doc comment).
    pub dropped: usize,
    /// How many symbols of any kind, documented or not, have each name and each
    /// qualified name in the package's files of its language: an identifier query
    /// needs a name defined once.
    pub names: HashMap<String, usize>,
    pub qualified_names: HashMap<String, usize>,
}

/// Strip the docs of a package's documented functions and list them as targets.
pub fn prepare(pkg: &Package, files: Vec<SourceFile>) -> Prepared {
    let mut out = Prepared::default();
    for f in files {
        let lang = engram::index::language(&f.rel);
        if lang != pkg.lang {
            out.files.push(f);
            continue;
        }
        let Some(syms) = extract(lang, &f.text) else {
            out.files.push(f);
            continue;
        };
        for s in &syms.symbols {
            *out.names.entry(s.name.clone()).or_default() += 1;
            *out.qualified_names
                .entry(s.qualified_name.clone())
                .or_default() += 1;
        }
        let lines = split_lines(&f.text);
        let mut edits: Vec<Edit> = Vec::new();
        let mut cands = Vec::new();
        for s in &syms.symbols {
            if !matches!(s.kind, SymbolKind::Function | SymbolKind::Method) {
                continue;
            }
            let Some(doc) = &s.doc else { continue };
            match locate_doc(lang, &lines, s.start_line as usize) {
                Some(e) => {
                    edits.push(e);
                    cands.push(s);
                }
                None => {
                    if std::env::var_os("ENGRAM_EVAL_DEBUG").is_some() {
                        eprintln!(
                            "no doc found: {}:{} {}",
                            f.rel, s.start_line, s.qualified_name
                        );
                    }
                    out.dropped += 1
                }
            }
            let _ = doc;
        }
        if cands.is_empty() {
            out.files.push(f);
            continue;
        }
        let stripped = apply(&lines, &mut edits);
        let after = extract(lang, &stripped).unwrap_or_default();
        let still: HashMap<(&str, u64), bool> = after
            .symbols
            .iter()
            .map(|s| ((s.qualified_name.as_str(), s.start_line), s.doc.is_some()))
            .collect();
        for s in cands {
            if still.get(&(s.qualified_name.as_str(), s.start_line)) == Some(&false) {
                out.targets.push(Target {
                    package: pkg.name.clone(),
                    lang: pkg.lang.clone(),
                    file: f.rel.clone(),
                    name: s.name.clone(),
                    qualified_name: s.qualified_name.clone(),
                    start_line: s.start_line,
                    end_line: s.end_line,
                    doc: s.doc.clone().unwrap_or_default(),
                });
            } else {
                if std::env::var_os("ENGRAM_EVAL_DEBUG").is_some() {
                    eprintln!(
                        "doc survives: {}:{} {}",
                        f.rel, s.start_line, s.qualified_name
                    );
                }
                out.dropped += 1;
            }
        }
        out.files.push(SourceFile {
            rel: f.rel,
            text: stripped,
        });
    }
    out
}

/// Lines with their line endings, so joining them gives the text back.
fn split_lines(text: &str) -> Vec<&str> {
    text.split_inclusive('\n').collect()
}

/// A change to a file: lines `first..=last` (0-based) blanked, or for a docstring, the
/// bytes `from..to` of line `first` … line `last` replaced by `pass` and spaces.
#[derive(Debug, Clone)]
struct Edit {
    first: usize,
    last: usize,
    /// A docstring: byte offset in the first line where it starts, and in the last
    /// line where it ends.
    docstring: Option<(usize, usize)>,
}

fn apply(lines: &[&str], edits: &mut [Edit]) -> String {
    edits.sort_by_key(|e| e.first);
    let mut out: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
    for e in edits.iter() {
        for (i, line) in out.iter_mut().enumerate().take(e.last + 1).skip(e.first) {
            let eol = &lines[i][lines[i].trim_end_matches(['\n', '\r']).len()..];
            let body = &lines[i][..lines[i].len() - eol.len()];
            *line = match e.docstring {
                None => eol.to_string(),
                Some((from, to)) => {
                    let start = if i == e.first { from } else { 0 };
                    let end = if i == e.last { to } else { body.len() };
                    let keep_tail = body[end..].trim_end();
                    let mut s = body[..start].to_string();
                    if i == e.first {
                        s.push_str("pass");
                    }
                    if !keep_tail.is_empty() {
                        s.push_str(keep_tail);
                    }
                    let s = s.trim_end().to_string();
                    format!("{s}{eol}")
                }
            };
        }
    }
    out.concat()
}

/// Where the doc of the definition starting on 1-based line `start` is, if it is a doc
/// comment of the kind this eval strips.
fn locate_doc(lang: &str, lines: &[&str], start: usize) -> Option<Edit> {
    let def = start.checked_sub(1)?;
    match lang {
        "python" => python_docstring(lines, def),
        "rust" | "javascript" | "typescript" => {
            // Attributes and decorators sit between a doc and its definition, and so
            // do bundler annotations (`/*#__PURE__*/`), which are blanked with the doc
            // (engram would take them for part of it).
            let mut i = def;
            let mut annotations = 0;
            loop {
                let above = lines.get(i.checked_sub(1)?)?.trim();
                if lang != "rust" && is_annotation(above) {
                    annotations += 1;
                } else if (lang == "rust" && above.starts_with("#["))
                    || (lang != "rust" && above.starts_with('@'))
                {
                    annotations = 0;
                } else {
                    break;
                }
                i -= 1;
            }
            let last = i.checked_sub(1)?;
            if lang == "rust" {
                let is_doc = |l: &str| {
                    let t = l.trim_start();
                    t.starts_with("///") && !t.starts_with("////")
                };
                let mut first = last;
                if !is_doc(lines[last]) {
                    return None;
                }
                while first > 0 && is_doc(lines[first - 1]) {
                    first -= 1;
                }
                Some(Edit {
                    first,
                    last,
                    docstring: None,
                })
            } else {
                if !lines[last].trim_end().ends_with("*/") {
                    return None;
                }
                let mut first = last;
                loop {
                    let t = lines[first].trim_start();
                    if t.starts_with("/*") {
                        return t.starts_with("/**").then_some(Edit {
                            first,
                            last: last + annotations,
                            docstring: None,
                        });
                    }
                    if first == 0 || (first < last && lines[first].contains("*/")) {
                        return None;
                    }
                    first -= 1;
                }
            }
        }
        _ => None,
    }
}

/// A bundler's annotation comment alone on its line (`/*#__PURE__*/`).
fn is_annotation(line: &str) -> bool {
    let t = line.trim();
    t.starts_with("/*") && t.ends_with("*/") && t.contains("__") && !t.starts_with("/**")
}

/// The docstring of the Python function whose `def` is on 0-based line `def`.
fn python_docstring(lines: &[&str], def: usize) -> Option<Edit> {
    // The header ends at the first `:` outside brackets and strings after `def`.
    let (mut depth, mut seen_def) = (0i32, false);
    let mut quote: Option<char> = None;
    let mut body_at: Option<(usize, usize)> = None;
    'outer: for (i, line) in lines.iter().enumerate().skip(def).take(60) {
        let mut prev = ' ';
        for (b, c) in line.char_indices() {
            if let Some(q) = quote {
                if c == q && prev != '\\' {
                    quote = None;
                }
                prev = if prev == '\\' { ' ' } else { c };
                continue;
            }
            match c {
                '#' => break,
                '\'' | '"' => quote = Some(c),
                '(' | '[' | '{' => depth += 1,
                ')' | ']' | '}' => depth -= 1,
                ':' if depth == 0 && seen_def => {
                    body_at = Some((i, b + 1));
                    break 'outer;
                }
                _ => {}
            }
            if !seen_def && line[b..].starts_with("def") {
                seen_def = true;
            }
            prev = c;
        }
        quote = None; // strings in a header never span lines
    }
    let (hl, hb) = body_at?;
    if !lines[hl][hb..].trim().is_empty() && !lines[hl][hb..].trim().starts_with('#') {
        return None; // `def f(): return 1`
    }
    let first = (hl + 1..lines.len()).find(|&i| {
        let t = lines[i].trim();
        !t.is_empty() && !t.starts_with('#')
    })?;
    let line = lines[first];
    let indent = line.len() - line.trim_start().len();
    let t = &line[indent..];
    let prefix = t
        .find(['"', '\''])
        .filter(|&p| t[..p].chars().all(|c| "rRuUbB".contains(c)) && p <= 2)?;
    let q = &t[prefix..];
    let delim = ["\"\"\"", "'''", "\"", "'"]
        .into_iter()
        .find(|d| q.starts_with(d))?;
    let open = indent + prefix + delim.len();
    // Find the closing delimiter, on this line or a later one.
    let mut i = first;
    let mut from = open;
    loop {
        let l = lines[i];
        let mut k = from;
        while let Some(p) = l[k..].find(delim) {
            let at = k + p;
            let escaped = l[..at].chars().rev().take_while(|&c| c == '\\').count() % 2 == 1;
            if !escaped {
                let end = at + delim.len();
                // Only a docstring alone on its lines is stripped.
                if !l[end..].trim().is_empty() {
                    return None;
                }
                return Some(Edit {
                    first,
                    last: i,
                    docstring: Some((indent, end)),
                });
            }
            k = at + delim.len();
        }
        if delim.len() == 1 {
            return None;
        }
        i += 1;
        from = 0;
        if i >= lines.len() || i > first + 400 {
            return None;
        }
    }
}

/// The first sentence of a doc, markup removed, as a search query; `None` when it is
/// shorter than [`MIN_DOC_WORDS`] words.
pub fn first_sentence(doc: &str) -> Option<String> {
    let mut para = Vec::new();
    for line in doc.lines() {
        let t = line.trim();
        let stop = t.is_empty()
            || t.starts_with('#')
            || t.starts_with('@')
            || t.starts_with("```")
            || t.starts_with(">>>")
            || is_field(t)
            || t.starts_with("..")
            || t.ends_with("::");
        if stop {
            if para.is_empty() && !t.is_empty() && !t.starts_with('@') {
                continue;
            }
            break;
        }
        para.push(t);
    }
    let text = clean_markup(&para.join(" "));
    let sentence = cut_sentence(&text);
    let words: Vec<&str> = sentence.split_whitespace().collect();
    let wordy = words
        .iter()
        .filter(|w| w.chars().any(char::is_alphabetic))
        .count();
    if wordy < MIN_DOC_WORDS {
        return None;
    }
    let s = words[..words.len().min(MAX_DOC_WORDS)].join(" ");
    Some(s.trim_end_matches(['.', ':', ',', ';']).to_string())
}

/// A reStructuredText field (`:param x:`, `:returns:`) starts the doc's details; a role
/// (`:class:`Name``) is inline text.
fn is_field(line: &str) -> bool {
    let Some(rest) = line.strip_prefix(':') else {
        return false;
    };
    match rest.find(':') {
        Some(p) => !rest[p + 1..].starts_with('`'),
        None => false,
    }
}

/// Up to the first `.`, `?` or `!` followed by a space (not after `e.g`, `i.e`, `etc`,
/// `vs`), or all of it.
fn cut_sentence(text: &str) -> &str {
    let b = text.as_bytes();
    for i in 0..b.len() {
        if matches!(b[i], b'.' | b'?' | b'!') && b.get(i + 1).is_none_or(|&c| c == b' ') {
            let before = &text[..i];
            let word = before.rsplit(' ').next().unwrap_or("").to_ascii_lowercase();
            if ["e.g", "i.e", "etc", "vs", "eg", "ie"].contains(&word.as_str()) {
                continue;
            }
            return &text[..=i];
        }
    }
    text
}

/// Markdown, JSDoc and reStructuredText markup out of a doc line: code spans, links
/// (`[text](url)` and `[`Name`]` keep their text), `{@link X}`, `:func:`x``, emphasis.
fn clean_markup(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while !rest.is_empty() {
        if let Some(r) = rest.strip_prefix("]{@") {
            // [label]{@link target}: the label was already kept.
            let end = r.find('}').unwrap_or(r.len());
            rest = r.get(end + 1..).unwrap_or("");
            continue;
        }
        if let Some(r) = rest.strip_prefix("{@") {
            // {@link target}, {@link target text}, {@link target|text}: the text, or
            // else the target.
            let end = r.find('}').unwrap_or(r.len());
            let inner = r[..end].split_once(' ').map_or("", |(_, t)| t).trim();
            let shown = match inner.split_once(['|', ' ']) {
                Some((_, text)) => text.to_string(),
                None => inner.trim_start_matches("module:").replace('#', "."),
            };
            out.push_str(&shown);
            rest = r.get(end + 1..).unwrap_or("");
            continue;
        }
        if rest.starts_with("](") {
            let end = rest.find(')').unwrap_or(rest.len());
            rest = rest.get(end + 1..).unwrap_or("");
            continue;
        }
        if rest.starts_with(':') {
            // :func:`x` -> x
            let r = &rest[1..];
            if let Some(p) = r.find(":`") {
                if r[..p]
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == ':')
                    && p > 0
                {
                    rest = &r[p + 1..];
                    continue;
                }
            }
        }
        let c = rest.chars().next().expect("not empty");
        if !matches!(c, '`' | '[' | ']' | '*' | '~' | '\\') {
            out.push(c);
        }
        rest = &rest[c.len_utf8()..];
    }
    out.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// A query's kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum QueryType {
    Doc,
    Identifier,
    Paraphrase,
}

impl QueryType {
    pub fn as_str(self) -> &'static str {
        match self {
            QueryType::Doc => "doc",
            QueryType::Identifier => "identifier",
            QueryType::Paraphrase => "paraphrase",
        }
    }
    pub const ALL: [QueryType; 3] = [QueryType::Doc, QueryType::Identifier, QueryType::Paraphrase];
}

/// One query and its answer.
#[derive(Debug, Clone, PartialEq)]
pub struct Query {
    pub qtype: QueryType,
    pub package: String,
    pub lang: String,
    pub file: String,
    pub start_line: u64,
    pub end_line: u64,
    pub text: String,
    /// In the held-out half (else the tune half).
    pub held_out: bool,
}

impl Query {
    /// Whether a result at `path`, lines `start..=end`, answers it.
    pub fn is_hit(&self, path: &str, start: u64, end: u64) -> bool {
        path == self.file && start <= self.end_line && end >= self.start_line
    }
}

/// A hash of `s` that is stable across platforms and releases, unlike std's hasher:
/// FNV-1a, 64-bit, then MurmurHash3's finaliser so that every bit depends on every
/// byte (FNV-1a's low bit is only the parity of the bytes' low bits).
pub fn stable_hash(s: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in s.bytes() {
        h ^= b as u64;
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    h ^ (h >> 33)
}

/// Whether the target with this id is in the held-out half. The hash is salted: the
/// unsalted one picks the sample (the lowest hashes), so it would put nearly every
/// sampled target in one half.
pub fn held_out(target_id: &str) -> bool {
    stable_hash(&format!("split:{target_id}")) >> 63 == 1
}

/// The targets a package's queries are made for: all of them, or when there are more
/// than `max`, the `max` whose ids hash lowest (so that no package outweighs the rest
/// of its language), in file order.
pub fn sample(targets: &[Target], max: usize) -> Vec<&Target> {
    let mut by_hash: Vec<(u64, usize)> = targets
        .iter()
        .enumerate()
        .map(|(i, t)| (stable_hash(&t.id()), i))
        .collect();
    by_hash.sort();
    let mut keep: Vec<usize> = by_hash.into_iter().take(max).map(|(_, i)| i).collect();
    keep.sort();
    keep.into_iter().map(|i| &targets[i]).collect()
}

/// Doc and identifier queries for a prepared package's targets (at most `max` of them,
/// see [`sample`]). Ambiguity is judged over the whole package: all its targets for
/// docs, all its symbols for names.
pub fn generated_queries(p: &Prepared, max: usize) -> Vec<Query> {
    let mut docs: HashMap<String, usize> = HashMap::new();
    for t in &p.targets {
        if let Some(s) = first_sentence(&t.doc) {
            *docs.entry(s.to_lowercase()).or_default() += 1;
        }
    }
    let mut out = Vec::new();
    for t in sample(&p.targets, max) {
        let q = |qtype, text: String| Query {
            qtype,
            package: t.package.clone(),
            lang: t.lang.clone(),
            file: t.file.clone(),
            start_line: t.start_line,
            end_line: t.end_line,
            text,
            held_out: held_out(&t.id()),
        };
        if let Some(s) = first_sentence(&t.doc) {
            if docs[&s.to_lowercase()] == 1 {
                out.push(q(QueryType::Doc, s));
            }
        }
        if p.names.get(&t.name) == Some(&1) {
            out.push(q(QueryType::Identifier, t.name.clone()));
        } else if p.qualified_names.get(&t.qualified_name) == Some(&1) {
            out.push(q(QueryType::Identifier, t.qualified_name.clone()));
        }
    }
    out
}

/// One line of `paraphrases.tsv`.
#[derive(Debug, Clone, PartialEq)]
pub struct Paraphrase {
    pub package: String,
    pub file: String,
    pub start_line: u64,
    pub end_line: u64,
    pub text: String,
}

/// The paraphrases of a `paraphrases.tsv` (package, file, `start-end`, query).
pub fn read_paraphrases(text: &str) -> Result<Vec<Paraphrase>, String> {
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        if line.trim().is_empty() || line.starts_with('#') {
            continue;
        }
        let cols: Vec<&str> = line.split('\t').collect();
        let [package, file, range, query] = cols[..] else {
            return Err(format!(
                "paraphrases line {}: want 4 tab-separated columns, got {}",
                n + 1,
                cols.len()
            ));
        };
        let (a, b) = range
            .split_once('-')
            .and_then(|(a, b)| Some((a.parse().ok()?, b.parse().ok()?)))
            .filter(|(a, b): &(u64, u64)| a <= b && *a > 0)
            .ok_or_else(|| format!("paraphrases line {}: bad line range {range:?}", n + 1))?;
        if query.trim().is_empty() {
            return Err(format!("paraphrases line {}: empty query", n + 1));
        }
        out.push(Paraphrase {
            package: package.into(),
            file: file.into(),
            start_line: a,
            end_line: b,
            text: query.trim().into(),
        });
    }
    Ok(out)
}

/// Paraphrase queries of the packages in `langs` (package name to language).
pub fn paraphrase_queries(paras: &[Paraphrase], langs: &BTreeMap<String, String>) -> Vec<Query> {
    paras
        .iter()
        .filter_map(|p| {
            let lang = langs.get(&p.package)?;
            Some(Query {
                qtype: QueryType::Paraphrase,
                package: p.package.clone(),
                lang: lang.clone(),
                file: p.file.clone(),
                start_line: p.start_line,
                end_line: p.end_line,
                text: p.text.clone(),
                held_out: held_out(&format!("{}:{}:{}", p.package, p.file, p.start_line)),
            })
        })
        .collect()
}
