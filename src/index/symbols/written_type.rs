//! A type as written in a declaration (`: Foo`, `&mut Foo`, `Optional[Foo]`,
//! `Foo | None`, `"Foo"`), read as the name of a type a repository may define, with
//! the wrappers a method call sees through removed; `None` for a builtin, a union of
//! several types, a function type, a collection. Text only: it never looks anything
//! up (resolving the name is the graph's business).

/// Types nothing in a repository defines, or whose methods are the language's.
const NOT_A_TYPE: &[&str] = &[
    "str",
    "int",
    "float",
    "bool",
    "bytes",
    "None",
    "Any",
    "object",
    "dict",
    "list",
    "tuple",
    "set",
    "type",
    "string",
    "number",
    "boolean",
    "any",
    "unknown",
    "never",
    "void",
    "undefined",
    "null",
    "bigint",
    "symbol",
    "Object",
    "Function",
    "Array",
    "Promise",
    "Map",
    "Set",
    "Record",
    "Partial",
    "Readonly",
    "i8",
    "i16",
    "i32",
    "i64",
    "i128",
    "isize",
    "u8",
    "u16",
    "u32",
    "u64",
    "u128",
    "usize",
    "f32",
    "f64",
    "char",
    "String",
    "Self",
    "self",
    "Vec",
    "Option",
    "Result",
    "HashMap",
    "HashSet",
    "BTreeMap",
    "byte",
    "rune",
    "error",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
    "float32",
    "float64",
    "Integer",
    "Long",
    "Double",
    "Boolean",
    "var",
    "Dict",
    "List",
    "Callable",
    "Iterable",
    "Iterator",
    "Sequence",
    "Mapping",
    "Tuple",
    "Type",
];

/// Wrappers whose methods are the wrapped type's (a call goes through them).
const SEE_THROUGH: &[&str] = &[
    "Optional[",
    "t.Optional[",
    "typing.Optional[",
    "Box<",
    "Rc<",
    "Arc<",
];

/// A written type as the name of a type a repository may define: `Foo`, `m.Foo`,
/// `a::b::Foo`; `None` for a builtin, a union of several types, a function type.
pub(crate) fn declared(written: &str) -> Option<String> {
    let mut t = written.trim().trim_start_matches(':').trim();
    t = t.trim_matches(|c| c == '"' || c == '\'');
    // `Foo | None`, `Foo | undefined`: the one type that is not nothing.
    if t.contains('|') {
        let mut parts = t
            .split('|')
            .map(str::trim)
            .filter(|p| !matches!(*p, "None" | "null" | "undefined" | ""));
        let first = parts.next()?;
        if parts.next().is_some() {
            return None;
        }
        t = first;
    }
    loop {
        let before = t;
        for prefix in ["&", "*", "mut ", "dyn ", "impl ", "readonly ", "const "] {
            t = t.strip_prefix(prefix).unwrap_or(t).trim_start();
        }
        if let Some(rest) = t.strip_prefix('\'') {
            // A lifetime: `&'a Foo`.
            t = rest.split_once(' ').map_or("", |(_, r)| r).trim_start();
        }
        if let Some(w) = SEE_THROUGH.iter().find(|w| t.starts_with(**w)) {
            let close = if w.ends_with('[') { ']' } else { '>' };
            t = t[w.len()..].trim_end().strip_suffix(close)?.trim();
        }
        if t == before {
            break;
        }
    }
    let end = t.find(['<', '[', '(', ' ', '{', ',']).unwrap_or(t.len());
    let t = &t[..end];
    let ok = !t.is_empty()
        && t.split(['.', ':']).filter(|s| !s.is_empty()).all(|s| {
            s.chars()
                .all(|c| c.is_alphanumeric() || c == '_' || c == '$')
        })
        && !t.starts_with(|c: char| c.is_ascii_digit())
        && !NOT_A_TYPE.contains(&t.rsplit(['.', ':']).next().unwrap_or(t));
    ok.then(|| t.to_string())
}

#[cfg(test)]
mod tests {
    use super::declared;

    #[test]
    fn written_types_read_as_the_type_a_method_call_reaches() {
        for (written, want) in [
            (": Foo", Some("Foo")),
            ("&mut Foo", Some("Foo")),
            ("&'a Foo<T>", Some("Foo")),
            ("Arc<Mutex<Foo>>", Some("Mutex")),
            ("Box<dyn Store>", Some("Store")),
            ("Optional[Client]", Some("Client")),
            ("Client | None", Some("Client")),
            ("*Server", Some("Server")),
            ("\"Session\"", Some("Session")),
            ("requests.Session", Some("requests.Session")),
            ("crate::store::Store", Some("crate::store::Store")),
            ("Subscriber<T> | undefined", Some("Subscriber")),
            ("str", None),
            ("Foo | Bar", None),
            ("(a: number) => void", None),
            ("Vec<Foo>", None),
            ("Option<Foo>", None),
        ] {
            assert_eq!(declared(written).as_deref(), want, "{written}");
        }
    }
}
