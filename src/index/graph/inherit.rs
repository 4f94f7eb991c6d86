//! Following a type to its members: a receiver's declared type (`o: Foo`, then
//! `o.f()`), and a class's declared bases for `self.f()` / `this.f()` calls whose
//! method the class itself does not define. The bases are read from the class's
//! signature (`class A(B, m.C)`, `class A extends B implements C`, `class A : B`,
//! `class A < B`); a type is resolved like any name, from the file that writes it,
//! and searched for the method, up to three levels of bases. Syntax only: a base
//! computed at run time is not followed.

use super::resolve::{CallRow, Found, Resolver};
use super::types::{is_type, separator};
use crate::index::symbol_search::SymbolInfo;
use crate::store::Result;

/// How many levels of bases are followed.
const MAX_LEVELS: u32 = 3;

impl Resolver<'_> {
    /// `name` as a member of one of `class`'s bases (transitively), with the weakest
    /// confidence on the way.
    pub(crate) fn through_bases(
        &mut self,
        class: &SymbolInfo,
        name: &str,
        level: u32,
    ) -> Result<Option<Found>> {
        if level >= MAX_LEVELS {
            return Ok(None);
        }
        for base in bases(&class.signature, &class.lang) {
            let last = base.rsplit(['.', ':', '\\']).next().unwrap_or(&base);
            if last == class.name {
                continue;
            }
            let found = self.member_of_type(
                (&class.path, &class.lang, class.start_line),
                &base,
                name,
                level,
            )?;
            if found.is_some() {
                return Ok(found);
            }
        }
        Ok(None)
    }
}

impl Resolver<'_> {
    /// `name` as a member of the type written `written` (`Foo`, `m.Foo`,
    /// `a::Foo`) in the file at `path` (a `lang` file, the type named at `line`),
    /// or of its bases; with the confidence of the type's resolution.
    pub(crate) fn member_of_type(
        &mut self,
        (path, lang, line): (&str, &str, u64),
        written: &str,
        name: &str,
        level: u32,
    ) -> Result<Option<Found>> {
        let (qual, last) = match written.rfind(['.', ':', '\\']) {
            Some(i) => (
                written[..i].trim_end_matches([':', '.', '\\']),
                &written[i + 1..],
            ),
            None => ("", written),
        };
        if last.is_empty() {
            return Ok(None);
        }
        let row = CallRow {
            path: path.to_string(),
            lang: lang.to_string(),
            name: last.to_string(),
            qual: qual.to_string(),
            line,
            column: 1,
            kind: "call".into(),
            caller: None,
            recv: None,
        };
        let Some((defs, conf)) = self.resolve(&row)? else {
            return Ok(None);
        };
        let types: Vec<SymbolInfo> = defs.iter().filter(|d| is_type(&d.kind)).cloned().collect();
        let mut members = Vec::new();
        for d in &types {
            let want = format!("{}{}{name}", d.qualified_name, separator(&d.lang));
            members.extend(
                self.defs_in(&d.path)?
                    .iter()
                    .filter(|m| m.qualified_name == want)
                    .cloned(),
            );
        }
        if !members.is_empty() {
            return Ok(Some((members.into(), conf)));
        }
        for d in &types {
            if let Some((m, c)) = self.through_bases(d, name, level + 1)? {
                return Ok(Some((m, c.min(conf))));
            }
        }
        Ok(None)
    }
}

impl Resolver<'_> {
    /// `c`'s name as a member of the type that `callee` (`f`, `a.f`, called at `c`'s
    /// place) is declared to return (`def f() -> Foo`), no surer than the callee's
    /// own resolution.
    pub(crate) fn member_of_returned(
        &mut self,
        c: &CallRow,
        callee: &str,
    ) -> Result<Option<Found>> {
        let (qual, last) = callee.rsplit_once('.').unwrap_or(("", callee));
        let row = CallRow {
            name: last.to_string(),
            qual: qual.to_string(),
            kind: "call".into(),
            // The callee's own receiver is not typed here: one step only.
            recv: None,
            ..c.clone()
        };
        let Some((defs, conf)) = self.resolve(&row)? else {
            return Ok(None);
        };
        for d in defs.iter() {
            let Some(ty) = returned_type(&d.signature, &d.lang) else {
                continue;
            };
            // The annotation is written in the definition's file: read it there.
            let at = (d.path.as_str(), d.lang.as_str(), d.start_line);
            if let Some((m, mc)) = self.member_of_type(at, &ty, &c.name, 1)? {
                return Ok(Some((m, mc.min(conf))));
            }
        }
        Ok(None)
    }
}

/// The type a Python function's signature says it returns (`def f(…) -> Foo:`,
/// `-> "Foo"`, `-> Optional[Foo]`), as `declared` reads a written type.
fn returned_type(signature: &str, lang: &str) -> Option<String> {
    if lang != "python" {
        return None;
    }
    let (_, ret) = signature.rsplit_once("->")?;
    crate::index::symbols::declared(ret.trim().trim_end_matches(':').trim_end())
}

/// The bases a class signature names, as written (`m.Base`, `Base`), generics and
/// modifiers dropped.
pub(crate) fn bases(signature: &str, lang: &str) -> Vec<String> {
    let list: String = match lang {
        "python" => match (signature.find('('), signature.rfind(')')) {
            (Some(a), Some(b)) if a < b => signature[a + 1..b].to_string(),
            _ => return Vec::new(),
        },
        "ruby" => match signature.split_once('<') {
            Some((_, b)) => b.to_string(),
            None => return Vec::new(),
        },
        // `class A(x: Int) : B(), C`: the parameters' colons have no space before.
        "kotlin" => match signature.split_once(" : ") {
            Some((_, b)) => b.to_string(),
            None => return Vec::new(),
        },
        "cpp" | "csharp" | "swift" => match signature.split_once(':') {
            Some((_, b)) if !b.starts_with(':') => b.to_string(),
            _ => return Vec::new(),
        },
        _ => {
            let words: Vec<&str> = signature.split_whitespace().collect();
            match words
                .iter()
                .position(|w| matches!(*w, "extends" | "implements"))
            {
                Some(i) => words[i + 1..]
                    .join(" ")
                    .replace(" implements ", ", ")
                    .replace(" extends ", ", ")
                    // Scala's mixins: `extends B with C`.
                    .replace(" with ", ", "),
                None => return Vec::new(),
            }
        }
    };
    // Split at top-level commas, leaving generic arguments (`Base[T]`, `Base<T>`) whole.
    let mut out = Vec::new();
    let mut depth = 0i32;
    let mut item = String::new();
    for ch in list.chars().chain(std::iter::once(',')) {
        match ch {
            '(' | '[' | '<' | '{' => depth += 1,
            ')' | ']' | '>' | '}' => depth -= 1,
            _ => {}
        }
        if (ch == ',' && depth <= 0) || (ch == '{' && depth == 1) {
            let words: Vec<&str> = item
                .split_whitespace()
                .filter(|w| {
                    !matches!(
                        *w,
                        "public" | "private" | "protected" | "virtual" | "extends" | "implements"
                    )
                })
                .collect();
            if let Some(w) = words.first() {
                let name = *w;
                // Keyword arguments (`metaclass=M`) are not bases.
                if !name.is_empty() && !w.contains('=') {
                    out.push(name.to_string());
                }
            }
            item.clear();
            if ch == '{' {
                break;
            }
            continue;
        }
        if depth == 0 && !matches!(ch, ')' | ']' | '>' | '}') {
            item.push(ch);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::bases;

    #[test]
    fn bases_are_read_from_signatures() {
        assert_eq!(
            bases("class A(B, m.C, Generic[T], metaclass=M)", "python"),
            ["B", "m.C", "Generic"]
        );
        assert_eq!(bases("class A", "python"), Vec::<String>::new());
        assert_eq!(
            bases("public class A extends B<T> implements C, D", "java"),
            ["B", "C", "D"]
        );
        assert_eq!(
            bases("class A : public B, private ns::C", "cpp"),
            ["B", "ns::C"]
        );
        assert_eq!(bases("class A < Base", "ruby"), ["Base"]);
        assert_eq!(bases("export class A extends B", "typescript"), ["B"]);
        assert_eq!(
            bases("class A(private val x: Int) : B(x), C", "kotlin"),
            ["B", "C"]
        );
        assert_eq!(bases("class A: B, C", "swift"), ["B", "C"]);
        assert_eq!(
            bases("class A(x: Int) extends B with C with D", "scala"),
            ["B", "C", "D"]
        );
    }
}
