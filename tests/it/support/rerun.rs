//! Re-running one test of this binary in a child process, as the kill, crash and
//! multi-process tests do: libtest names a test by its module path without the
//! crate's name (`crash::child_process`), and `--exact` needs that whole name.

/// The name `--exact` takes for the test `name` in the module whose `module_path!()`
/// is `module` (`it::crash` gives `crash::name`).
pub fn test_name(module: &str, name: &str) -> String {
    match module.split_once("::") {
        Some((_, rest)) => format!("{rest}::{name}"),
        None => name.to_string(),
    }
}

#[test]
fn a_test_name_drops_the_crate_and_keeps_the_module() {
    assert_eq!(
        test_name("it::crash", "child_process"),
        "crash::child_process"
    );
    assert_eq!(test_name("it::a::b", "t"), "a::b::t");
    assert_eq!(test_name("solo", "t"), "t");
}
