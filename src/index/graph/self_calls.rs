//! Calls through `self`, `this` and their kin, and through `super`: the enclosing
//! type's own member, else one of the bases its signature names, else by name. Part
//! of the resolver (`resolve`); reads the code tables through it, writes nothing.

use super::resolve::{defined_here, family, parent_of, separator, CallRow, Found, Resolver};
use super::types::is_type;
use crate::index::symbol_search::SymbolInfo;
use crate::store::Result;

impl Resolver<'_> {
    /// A call through `self`, `this` or their kin: the enclosing type's own member.
    pub(super) fn resolve_self(
        &mut self,
        c: &CallRow,
        caller: Option<&SymbolInfo>,
        in_file: &[SymbolInfo],
    ) -> Result<Option<Found>> {
        let sep = separator(&c.lang);
        let class = enclosing_type(caller, in_file, sep);
        if let Some(class) = &class {
            let want = format!("{class}{sep}{}", c.name);
            if let Some(found) = defined_here(in_file, &want, false) {
                return Ok(Some(found));
            }
        }
        // A base class the signature names.
        if let Some(found) = self.in_bases(class.as_deref(), in_file, &c.name)? {
            return Ok(Some(found));
        }
        // Defined elsewhere (another `impl` block, a base out of reach): by name,
        // members of a type named as the enclosing one, else any method so named.
        let fam = family(&c.lang);
        let class_last = class
            .as_deref()
            .map(|c| c.rsplit(sep).next().unwrap_or(c).to_string());
        let rule = format!("self {fam} {}", class_last.as_deref().unwrap_or("\n"));
        self.by_name(&c.name, rule, |named| {
            let same_type: Vec<SymbolInfo> = named
                .iter()
                .filter(|d| family(&d.lang) == fam)
                .filter(|d| {
                    let dsep = separator(&d.lang);
                    parent_of(&d.qualified_name, dsep).map(|p| p.rsplit(dsep).next().unwrap_or(p))
                        == class_last.as_deref()
                })
                .cloned()
                .collect();
            if same_type.is_empty() {
                methods_of(named, fam)
            } else {
                same_type
            }
        })
    }

    /// A call through `super()` / `super`: a member of the enclosing type's bases
    /// (never its own: that is what `super` skips), as the bases' signatures name
    /// them; else, by name, any method so called.
    pub(super) fn resolve_super(
        &mut self,
        c: &CallRow,
        caller: Option<&SymbolInfo>,
        in_file: &[SymbolInfo],
    ) -> Result<Option<Found>> {
        let class = enclosing_type(caller, in_file, separator(&c.lang));
        if let Some(found) = self.in_bases(class.as_deref(), in_file, &c.name)? {
            return Ok(Some(found));
        }
        let fam = family(&c.lang);
        self.by_name(&c.name, format!("methods {fam}"), |named| {
            methods_of(named, fam)
        })
    }

    /// `name` as a member of the bases that `class`'s signature names (`class` a type
    /// this file defines), nearest first.
    fn in_bases(
        &mut self,
        class: Option<&str>,
        in_file: &[SymbolInfo],
        name: &str,
    ) -> Result<Option<Found>> {
        let class_def = class.and_then(|cl| {
            in_file
                .iter()
                .find(|d| d.qualified_name == cl && is_type(&d.kind))
                .cloned()
        });
        match class_def {
            Some(class_def) => self.through_bases(&class_def, name, 0),
            None => Ok(None),
        }
    }
}

/// One candidate is `same-name`, several `ambiguous`, none nothing.
/// The nearest type enclosing `caller` that this file defines, else the caller's
/// parent (a Rust `impl` of a type defined elsewhere).
fn enclosing_type(
    caller: Option<&SymbolInfo>,
    in_file: &[SymbolInfo],
    sep: &str,
) -> Option<String> {
    let mut scope = caller.and_then(|s| parent_of(&s.qualified_name, sep));
    let first = scope;
    while let Some(s) = scope {
        if in_file
            .iter()
            .any(|d| d.qualified_name == s && is_type(&d.kind))
        {
            return Some(s.to_string());
        }
        scope = parent_of(s, sep);
    }
    first.map(String::from)
}

/// Whether a call's receiver is the parent class: `super()` and `super(Cls, self)`
/// in Python, `super` in the languages that spell it so. Rust's `super::` is a
/// module path, read with the other paths.
pub(super) fn is_super(lang: &str, qual: &str) -> bool {
    lang != "rust"
        && (qual == "super"
            || qual == "super()"
            || (lang == "python" && qual.starts_with("super(") && qual.ends_with(')')))
}

/// The methods among `named` in the language family `fam`.
fn methods_of(named: &[SymbolInfo], fam: &str) -> Vec<SymbolInfo> {
    named
        .iter()
        .filter(|d| family(&d.lang) == fam && d.kind == "method")
        .cloned()
        .collect()
}
