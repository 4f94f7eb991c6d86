//! Unit tests of the seed spellings of memory lines (`jsonl_compat`).

use super::*;

#[test]
fn iso8601_forms() {
    assert_eq!(
        iso8601_ms("2025-01-15T10:30:00Z").unwrap(),
        1_736_937_000_000
    );
    assert_eq!(
        iso8601_ms("2025-01-15T10:30:00").unwrap(),
        1_736_937_000_000
    );
    assert_eq!(
        iso8601_ms("2025-01-15 10:30:00.123456").unwrap(),
        1_736_937_000_123
    );
    assert_eq!(
        iso8601_ms("2025-01-15T12:30:00.5+02:00").unwrap(),
        1_736_937_000_500
    );
    assert_eq!(
        iso8601_ms("2025-01-15T05:30:00-0500").unwrap(),
        1_736_937_000_000
    );
    assert_eq!(iso8601_ms("1970-01-01T00:00:00Z").unwrap(), 0);
    assert_eq!(
        iso8601_ms("2024-02-29T00:00:00Z").unwrap(),
        1_709_164_800_000
    );
    for bad in [
        "2025-01-15",
        "2025-13-01T00:00:00Z",
        "2023-02-29T00:00:00Z",
        "2025-01-15T10:30:00Q",
        "2025-01-15T10:30:00.Z",
        "2025-01-15T24:00:00Z",
        "yesterday",
        "2025-01-15T10:30:00+2:00",
    ] {
        assert_eq!(
            iso8601_ms(bad),
            Err(TimeError::NotIso8601 { text: bad.into() }),
            "{bad}"
        );
    }
}

fn none(_: u64) -> Result<Option<String>, StoreError> {
    Ok(None)
}

#[test]
fn epoch_seconds_and_conflicts() {
    let m = parse_memory(
        r#"{"text":"t","created_at":1736937000.25,"updated_at":1736937001}"#,
        &none,
    )
    .unwrap();
    assert_eq!(
        (m.created_ms, m.updated_ms),
        (1_736_937_000_250, 1_736_937_001_000)
    );
    let e = parse_memory(r#"{"text":"t","created_at":1,"created_ms":5}"#, &none).unwrap_err();
    assert!(
        matches!(&e, LineError::SeveralTimes { fields } if fields == &["created_at", "created_ms"]),
        "{e:?}"
    );
    assert!(e.to_string().contains("created_at, created_ms"), "{e}");
    let e = parse_memory(r#"{"text":"t","timestamp":-3}"#, &none).unwrap_err();
    assert!(
        matches!(
            &e,
            LineError::Time {
                field: "timestamp",
                problem: TimeError::EpochRange { .. }
            }
        ),
        "{e:?}"
    );
    assert!(e.to_string().contains("timestamp:"), "{e}");
}

#[test]
fn legacy_ids_are_derived_and_kept() {
    let uuid = "550e8400-e29b-41d4-a716-446655440000";
    let line = format!(
        r#"{{"id":"{uuid}","text":"t","metadata":"{{\"a\":1}}","timestamp":"2025-01-15T10:30:00Z"}}"#
    );
    let m = parse_memory(&line, &none).unwrap();
    assert_eq!(m.id, derived_id(uuid, 0));
    assert_eq!(
        m.id,
        format!("mem:{}", &format!("{:016x}", hash64(uuid))[..8])
    );
    assert_eq!(m.metadata["legacy_id"], uuid);
    assert_eq!(m.metadata["a"], 1);
    assert_ne!(derived_id(uuid, 1), derived_id(uuid, 0));
    // A mem: id that is malformed is an error, not a legacy id.
    assert!(parse_memory(r#"{"id":"mem:xyz","text":"t"}"#, &none).is_err());
    // An empty id is no id (a serialised `Memory::new`); blank is still refused.
    assert_eq!(
        parse_memory(r#"{"id":"","text":"t"}"#, &none).unwrap().id,
        ""
    );
    assert!(parse_memory(r#"{"id":" ","text":"t"}"#, &none).is_err());
}

#[test]
fn key_hash_is_checked() {
    let h = hash64("mem:a1b2c3d4");
    parse_memory(
        &format!(r#"{{"id":"mem:a1b2c3d4","key_hash":{h},"text":"t"}}"#),
        &none,
    )
    .unwrap();
    parse_memory(
        &format!(
            r#"{{"id":"mem:a1b2c3d4","key_hash":{},"text":"t"}}"#,
            h as i64
        ),
        &none,
    )
    .unwrap();
    let e = parse_memory(
        &format!(r#"{{"id":"mem:a1b2c3d5","key_hash":{h},"text":"t"}}"#),
        &none,
    )
    .unwrap_err();
    assert!(
        matches!(&e, LineError::KeyHashMismatch { given, id, .. } if *given == h && id == "mem:a1b2c3d5"),
        "{e:?}"
    );
    assert!(e.to_string().contains("key_hash"), "{e}");
    assert!(parse_memory(&format!(r#"{{"key_hash":{h},"text":"t"}}"#), &none).is_err());
}

#[test]
fn symbol_keys_resolve_or_refuse() {
    let k = "file:src/auth.py";
    let h = hash64(k);
    let resolve = |x: u64| -> Result<_, StoreError> { Ok((x == h).then(|| k.to_string())) };
    let line = format!(r#"{{"text":"t","symbol_keys":[{h},"sym:a.py#f:function:1:2",{h}]}}"#);
    let m = parse_memory(&line, &resolve).unwrap();
    assert_eq!(m.symbols, [k, "sym:a.py#f:function:1:2"]);
    let m = parse_memory(
        &format!(r#"{{"text":"t","symbol_keys":[{}]}}"#, h as i64),
        &resolve,
    )
    .unwrap();
    assert_eq!(m.symbols, [k]);
    let e = parse_memory(r#"{"text":"t","symbol_keys":[12345678901234]}"#, &resolve).unwrap_err();
    assert!(
        matches!(
            e,
            LineError::UnknownHash {
                index: 0,
                hash: 12345678901234
            }
        ),
        "{e:?}"
    );
    let e = e.to_string();
    assert!(
        e.contains("symbol_keys[0]") && e.contains("12345678901234"),
        "{e}"
    );
}

#[test]
fn memory_lib_non_code_and_code() {
    let m = parse_memory(
        r#"{"id":"6f1c2b9e-0000-4000-8000-000000000001","type":"non-code","category":"documentation","title":"API Authentication","content":"Tokens expire after 1h","file_path":"src/auth.py","timestamp":"2025-01-15T10:30:00","metadata":{"author":"x"}}"#,
        &none,
    )
    .unwrap();
    assert_eq!(m.text, "Tokens expire after 1h");
    assert_eq!(m.metadata["title"], "API Authentication");
    assert_eq!(m.metadata["category"], "documentation");
    assert_eq!(m.metadata["file_path"], "src/auth.py");
    assert_eq!(m.metadata["author"], "x");
    assert_eq!(m.symbols, ["file:src/auth.py"]);
    let e = parse_memory(
        r#"{"type":"code","file_path":"a.py","entity_name":"f","code_snippet":"def f(): pass"}"#,
        &none,
    )
    .unwrap_err();
    assert!(matches!(e, LineError::CodeEntity), "{e:?}");
    assert!(e.to_string().contains("index the source instead"), "{e}");
    let e = parse_memory(r#"{"type":"non-code","content":"c","text":"t"}"#, &none).unwrap_err();
    assert!(matches!(e, LineError::ContentAndText), "{e:?}");
    let e = parse_memory(r#"{"text":"t","colour":"red"}"#, &none).unwrap_err();
    assert!(matches!(e, LineError::Json(_)), "{e:?}");
    assert!(e.to_string().contains("unknown field `colour`"), "{e}");
}
