//! Recall and list filters return exactly the memories a plain model selects.

use std::collections::BTreeSet;

use engram::memory::{Memories, Memory, MemoryFilter};
use proptest::prelude::*;

const TASKS: &[&str] = &["debug", "refactor", "optimize"];
const INSIGHTS: &[&str] = &["decision", "pitfall", "todo"];
const CONTEXTS: &[&str] = &["auth", "billing", "api"];
const TAGS: &[&str] = &["red", "green", "blue"];
const SESSIONS: &[&str] = &["s1", "s2"];

#[derive(Debug, Clone)]
struct Entry {
    task: Option<usize>,
    insights: Vec<usize>,
    contexts: Vec<usize>,
    tags: Vec<usize>,
    session: Option<usize>,
}

fn entry() -> impl Strategy<Value = Entry> {
    (
        proptest::option::of(0..TASKS.len()),
        proptest::collection::vec(0..INSIGHTS.len(), 0..3),
        proptest::collection::vec(0..CONTEXTS.len(), 0..3),
        proptest::collection::vec(0..TAGS.len(), 0..3),
        proptest::option::of(0..SESSIONS.len()),
    )
        .prop_map(|(task, insights, contexts, tags, session)| Entry {
            task,
            insights,
            contexts,
            tags,
            session,
        })
}

#[derive(Debug, Clone)]
struct Filter {
    task: Option<usize>,
    insight: Option<usize>,
    context: Option<usize>,
    tag: Option<usize>,
    session: Option<usize>,
}

fn filter() -> impl Strategy<Value = Filter> {
    (
        proptest::option::of(0..TASKS.len()),
        proptest::option::of(0..INSIGHTS.len()),
        proptest::option::of(0..CONTEXTS.len()),
        proptest::option::of(0..TAGS.len()),
        proptest::option::of(0..SESSIONS.len()),
    )
        .prop_map(|(task, insight, context, tag, session)| Filter {
            task,
            insight,
            context,
            tag,
            session,
        })
}

fn selects(f: &Filter, e: &Entry) -> bool {
    f.task.is_none_or(|t| e.task == Some(t))
        && f.insight.is_none_or(|i| e.insights.contains(&i))
        && f.context.is_none_or(|c| e.contexts.contains(&c))
        && f.tag.is_none_or(|t| e.tags.contains(&t))
        && f.session.is_none_or(|s| e.session == Some(s))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 16, ..ProptestConfig::default() })]

    #[test]
    fn filters_select_exactly_what_the_model_selects(entries in proptest::collection::vec(entry(), 1..25),
                                                      filters in proptest::collection::vec(filter(), 1..8)) {
        let dir = tempfile::tempdir().unwrap();
        let m = Memories::open(dir.path()).unwrap();
        let mut ids = Vec::new();
        for (n, e) in entries.iter().enumerate() {
            let mut mem = Memory::new(format!("shared word entry{n}"));
            mem.task = e.task.map(|t| TASKS[t].to_string());
            mem.insights = e.insights.iter().map(|&i| INSIGHTS[i].to_string()).collect();
            mem.contexts = e.contexts.iter().map(|&c| CONTEXTS[c].to_string()).collect();
            mem.tags = e.tags.iter().map(|&t| TAGS[t].to_string()).collect();
            mem.session = e.session.map(|s| SESSIONS[s].to_string());
            ids.push(m.write(mem).unwrap().id);
        }
        for f in &filters {
            let mf = MemoryFilter {
                kind: None,
                task: f.task.map(|t| TASKS[t].to_string()),
                insights: f.insight.map(|i| INSIGHTS[i].to_string()).into_iter().collect(),
                contexts: f.context.map(|c| CONTEXTS[c].to_string()).into_iter().collect(),
                tags: f.tag.map(|t| TAGS[t].to_string()).into_iter().collect(),
                session: f.session.map(|s| SESSIONS[s].to_string()),
                since_ms: None,
            };
            let want: BTreeSet<String> = entries.iter().zip(&ids).filter(|(e, _)| selects(f, e)).map(|(_, id)| id.clone()).collect();
            let listed: BTreeSet<String> = m.list_filtered(&mf, 1000, 0).unwrap().into_iter().map(|x| x.id).collect();
            let recalled: BTreeSet<String> = m.recall_filtered("shared word", &mf, 1000).unwrap().into_iter().map(|h| h.memory.id).collect();
            prop_assert_eq!(&listed, &want, "list with {:?}", f);
            prop_assert_eq!(&recalled, &want, "recall with {:?}", f);
        }
        // A filter on time: everything was written just now.
        let later = MemoryFilter { since_ms: Some(engram::store::now_ms() + 60_000), ..MemoryFilter::default() };
        prop_assert!(m.list_filtered(&later, 1000, 0).unwrap().is_empty());
    }
}

#[test]
fn unknown_filter_values_are_refused() {
    let f = MemoryFilter {
        task: Some("dance".into()),
        ..MemoryFilter::default()
    };
    assert!(f.normalised().is_err());
    let f = MemoryFilter {
        contexts: vec!["context:auth".into()],
        ..MemoryFilter::default()
    };
    assert_eq!(f.normalised().unwrap().contexts, ["auth"]);
    assert!(engram::memory::parse_since("7d", 10 * 86_400_000).unwrap() == 3 * 86_400_000);
    assert!(engram::memory::parse_since("soon", 0).is_err());
}
