//! Which repository files a module name means, per language: `a.b` →
//! `…/a/b.py` or `…/a/b/__init__.py`, a path from the Rust crate root (`x::y`) → `src/x/y.rs` or
//! `src/x/y/mod.rs`, `./util` → `util.ts`, `util/index.js` …, a Go import path → the
//! files of the directory it ends with, `a.b.C` → `…/a/b/C.java`, `x.h` → `…/x.h`
//! and its `x.c`.
//!
//! Path conventions only: no build files (`Cargo.toml`, `tsconfig.json`, `go.mod`,
//! `sys.path`) are read, so a module placed by configuration is not found, and is
//! treated as outside the repository.

use std::collections::HashMap;

use rusqlite::Connection;

use crate::store::Result;

/// How a language joins a module and an item in it, as an import writes it.
pub(crate) fn module_separator(lang: &str) -> &'static str {
    match lang {
        "rust" | "cpp" => "::",
        "go" | "javascript" | "typescript" | "tsx" | "c" => "/",
        "php" => "\\",
        _ => ".",
    }
}

/// The repository's files, loaded once per query, and the answers given so far.
pub(crate) struct Files {
    /// Every indexed path by its file name (`b.py` → `src/a/b.py`, …).
    by_name: Option<HashMap<String, Vec<String>>>,
    /// Every indexed path by its directory.
    by_dir: HashMap<String, Vec<String>>,
    cache: HashMap<(String, String, String), Vec<String>>,
}

impl Files {
    pub fn new() -> Files {
        Files {
            by_name: None,
            by_dir: HashMap::new(),
            cache: HashMap::new(),
        }
    }

    fn load(&mut self, db: &Connection) -> Result<()> {
        if self.by_name.is_some() {
            return Ok(());
        }
        let mut by_name: HashMap<String, Vec<String>> = HashMap::new();
        let mut stmt = db.prepare("SELECT path FROM code_files ORDER BY path")?;
        let rows = stmt.query_map([], |r| r.get::<_, String>(0))?;
        for p in rows {
            let p = p?;
            let (dir, file) = split(&p);
            by_name.entry(file.to_string()).or_default().push(p.clone());
            self.by_dir.entry(dir.to_string()).or_default().push(p);
        }
        self.by_name = Some(by_name);
        Ok(())
    }

    /// Paths equal to `rel` or ending with `/rel`.
    fn with_suffix(&self, rel: &str) -> Vec<String> {
        let (_, file) = split(rel);
        let Some(by_name) = &self.by_name else {
            return Vec::new();
        };
        by_name
            .get(file)
            .map(|v| {
                v.iter()
                    .filter(|p| *p == rel || p.ends_with(&format!("/{rel}")))
                    .cloned()
                    .collect()
            })
            .unwrap_or_default()
    }

    fn exact(&self, rel: &str) -> Vec<String> {
        self.with_suffix(rel)
            .into_iter()
            .filter(|p| p == rel)
            .collect()
    }

    /// Files of a directory equal to `dir` or ending with `/dir`, with extension `ext`.
    fn in_dir(&self, dir: &str, ext: &str) -> Vec<String> {
        let mut out: Vec<String> = self
            .by_dir
            .iter()
            .filter(|(d, _)| *d == dir || d.ends_with(&format!("/{dir}")))
            .flat_map(|(_, files)| files.iter())
            .filter(|p| p.ends_with(ext))
            .cloned()
            .collect();
        out.sort();
        out
    }

    /// The files `module` names, imported by `importer` (a `lang` file).
    pub fn resolve(
        &mut self,
        db: &Connection,
        lang: &str,
        importer: &str,
        module: &str,
    ) -> Result<Vec<String>> {
        let k = (lang.to_string(), importer.to_string(), module.to_string());
        if let Some(v) = self.cache.get(&k) {
            return Ok(v.clone());
        }
        self.load(db)?;
        let dir = split(importer).0;
        let found = match lang {
            "python" => self.python(dir, module),
            "rust" => self.rust(importer, module),
            "go" => {
                let m = module.trim_matches('/');
                let mut out: Vec<String> = self
                    .by_dir
                    .iter()
                    .filter(|(d, _)| !d.is_empty() && (m == *d || m.ends_with(&format!("/{d}"))))
                    .flat_map(|(_, f)| f.iter())
                    .filter(|p| p.ends_with(".go") && !p.ends_with("_test.go"))
                    .cloned()
                    .collect();
                out.sort();
                out
            }
            "javascript" | "typescript" | "tsx" => self.ecma(dir, module),
            "java" => {
                let rel = module.replace('.', "/");
                let mut out = self.with_suffix(&format!("{rel}.java"));
                if out.is_empty() {
                    out = self.in_dir(&rel, ".java");
                }
                out
            }
            "c" | "cpp" => {
                let mut out = self.with_suffix(module);
                // A header's definitions are in its source file.
                let stems: Vec<String> = out
                    .iter()
                    .filter_map(|h| h.rsplit_once('.').map(|(s, _)| s.to_string()))
                    .collect();
                for stem in stems {
                    for ext in ["c", "cc", "cpp", "cxx"] {
                        out.extend(self.exact(&format!("{stem}.{ext}")));
                    }
                }
                out
            }
            "php" => {
                let segs: Vec<&str> = module.split('\\').filter(|s| !s.is_empty()).collect();
                let mut out = Vec::new();
                for skip in 0..segs.len() {
                    let rel = segs[skip..].join("/");
                    out = self.with_suffix(&format!("{rel}.php"));
                    if out.is_empty() {
                        out = self.in_dir(&rel, ".php");
                    }
                    if !out.is_empty() {
                        break;
                    }
                }
                out
            }
            _ => Vec::new(),
        };
        self.cache.insert(k, found.clone());
        Ok(found)
    }

    fn python(&self, dir: &str, module: &str) -> Vec<String> {
        let dots = module.chars().take_while(|&c| c == '.').count();
        let rel = module[dots..].replace('.', "/");
        if dots > 0 {
            let mut base = dir.to_string();
            for _ in 1..dots {
                base = split(&base).0.to_string();
            }
            let join = |tail: &str| -> String {
                match (base.is_empty(), tail.is_empty()) {
                    (true, _) => tail.to_string(),
                    (false, true) => base.clone(),
                    (false, false) => format!("{base}/{tail}"),
                }
            };
            let mut out = Vec::new();
            if !rel.is_empty() {
                out.extend(self.exact(&join(&format!("{rel}.py"))));
            }
            let init = if rel.is_empty() {
                join("__init__.py")
            } else {
                join(&format!("{rel}/__init__.py"))
            };
            out.extend(self.exact(&init));
            return out;
        }
        if rel.is_empty() {
            return Vec::new();
        }
        let mut out = self.with_suffix(&format!("{rel}.py"));
        out.extend(self.with_suffix(&format!("{rel}/__init__.py")));
        out
    }

    fn rust(&self, importer: &str, module: &str) -> Vec<String> {
        // The crate's source root: everything up to `src/` (or the file's folder).
        let (root, inner) = match importer.rfind("src/") {
            Some(i) => (&importer[..i + 4], &importer[i + 4..]),
            None => ("", importer),
        };
        let stem = inner.trim_end_matches(".rs");
        let mut here: Vec<&str> = stem.split('/').collect();
        if matches!(here.last(), Some(&"mod") | Some(&"lib") | Some(&"main")) {
            here.pop();
        }
        let segs: Vec<&str> = module.split("::").filter(|s| !s.is_empty()).collect();
        let mut path: Vec<&str> = Vec::new();
        let mut relative = true;
        let mut rest = segs.as_slice();
        match segs.first() {
            Some(&"crate") => {
                rest = &segs[1..];
            }
            Some(&"self") => {
                path = here.clone();
                rest = &segs[1..];
            }
            Some(&"super") => {
                path = here.clone();
                while let Some((&"super", r)) = rest.split_first() {
                    path.pop();
                    rest = r;
                }
            }
            _ => relative = false,
        }
        let files_of = |this: &Files, p: &[&str]| -> Vec<String> {
            if p.is_empty() {
                let mut out = this.exact(&format!("{root}lib.rs"));
                out.extend(this.exact(&format!("{root}main.rs")));
                return out;
            }
            let rel = p.join("/");
            let mut out = this.exact(&format!("{root}{rel}.rs"));
            out.extend(this.exact(&format!("{root}{rel}/mod.rs")));
            out
        };
        if relative {
            path.extend(rest.iter().copied());
            return files_of(self, &path);
        }
        // `use a::b` names a child module of this one, or (2015 style) one from
        // the crate root; another crate of the workspace by its name last.
        let mut child = here.clone();
        child.extend(segs.iter().copied());
        let mut out = files_of(self, &child);
        if out.is_empty() {
            out = files_of(self, &segs);
        }
        if out.is_empty() && segs.len() > 1 {
            let rel = segs[1..].join("/");
            out = self.with_suffix(&format!("src/{rel}.rs"));
            out.extend(self.with_suffix(&format!("src/{rel}/mod.rs")));
        }
        out
    }

    fn ecma(&self, dir: &str, module: &str) -> Vec<String> {
        if !module.starts_with('.') {
            return Vec::new();
        }
        let mut parts: Vec<&str> = if dir.is_empty() {
            Vec::new()
        } else {
            dir.split('/').collect()
        };
        for seg in module.split('/') {
            match seg {
                "." | "" => {}
                ".." => {
                    parts.pop();
                }
                s => parts.push(s),
            }
        }
        let base = parts.join("/");
        let mut out = self.exact(&base);
        for ext in ["ts", "tsx", "js", "jsx", "mjs", "cjs", "d.ts"] {
            out.extend(self.exact(&format!("{base}.{ext}")));
        }
        for ext in ["ts", "tsx", "js", "jsx"] {
            out.extend(self.exact(&format!("{base}/index.{ext}")));
        }
        out
    }
}

/// `a/b/c.py` → (`a/b`, `c.py`); a top-level file has the folder `""`.
fn split(path: &str) -> (&str, &str) {
    path.rsplit_once('/').unwrap_or(("", path))
}
