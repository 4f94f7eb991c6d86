//! Reading model text, property-tested: whatever a model (or a server pretending to be
//! one) returns, parsing never panics and never yields a score outside 0 to 1.

#![cfg(feature = "llm")]

use engram::assist::parse::{json_object, parse_scores, read_score, score_after, strip_fences};
use engram::assist::{parse_fields, parse_items, parse_suggestion};
use engram::llm::{parse_reply, Api};
use proptest::prelude::*;

/// Text shaped like model answers: score lines, JSON fragments, numbers, noise.
fn modelish() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        any::<String>(),
        "(Memory|memory|Item|#) ?[0-9]{0,3}:? ?(Score|score|SCORE)[:=]? ?[-+]?[0-9]{0,4}(\\.[0-9]{0,6})?(%|/[0-9]{0,3})? ?(Reason:)? ?[a-z ]{0,20}",
        "\\[?\\{\"(id|index|memory|score|reason|confidence|solution|items|kind|text)\": ?(-?[0-9.e+]{1,12}|\"[^\"]{0,12}\"|null|\\[\\]|\\{\\})[,}\\]]{0,3}",
        "[0-9.eE+-]{1,30}",
        "```(json|markdown)?\n",
        Just("NaN".to_string()),
        Just("1e999".to_string()),
        Just("Score: 1e999".to_string()),
        Just("{\"score\": 1e308}".to_string()),
        Just("{\"score\": -5}".to_string()),
    ];
    proptest::collection::vec(piece, 0..8).prop_map(|v| v.join("\n"))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn scores_are_always_in_the_unit_interval(text in modelish(), n in 0usize..12) {
        let scores = parse_scores(&text, n);
        prop_assert_eq!(scores.len(), n);
        for (s, _) in scores.into_iter().flatten() {
            prop_assert!((0.0..=1.0).contains(&s), "score {} from {:?}", s, text);
        }
        for x in [read_score(&text), score_after(&text, "score"), score_after(&text, "confidence")]
            .into_iter()
            .flatten()
        {
            prop_assert!((0.0..=1.0).contains(&x), "{} from {:?}", x, text);
        }
    }

    #[test]
    fn nothing_a_model_says_makes_parsing_panic(text in modelish()) {
        let _ = strip_fences(&text);
        let _ = json_object(&text);
        if let Some(p) = parse_suggestion(&text) {
            if let Some(c) = p.confidence {
                prop_assert!((0.0..=1.0).contains(&c));
            }
        }
        let _ = parse_items(&text);
        let _ = parse_fields(&text);
        for api in [Api::OpenAi, Api::Anthropic] {
            for streamed in [false, true] {
                let _ = parse_reply(api, &text, streamed);
            }
        }
    }

    #[test]
    fn arbitrary_bytes_never_panic(text in any::<String>(), n in 0usize..5) {
        let _ = parse_scores(&text, n);
        let _ = parse_suggestion(&text);
        let _ = parse_items(&text);
        let _ = parse_fields(&text);
        let _ = parse_reply(Api::OpenAi, &text, true);
        let _ = parse_reply(Api::Anthropic, &text, true);
    }
}

#[test]
fn hostile_scores_are_clamped_or_dropped() {
    let s = parse_scores(
        "[{\"id\": 1, \"score\": 1e308}, {\"id\": 2, \"score\": -3}, {\"id\": 3, \"score\": \"NaN\"}, {\"id\": 99, \"score\": 0.5}]",
        3,
    );
    assert_eq!(s[0].as_ref().map(|x| x.0), Some(1.0));
    assert_eq!(s[1].as_ref().map(|x| x.0), Some(0.0));
    assert_eq!(s[2], None);
    assert_eq!(parse_scores("Memory 0: Score: 0.5", 2), vec![None, None]);
}
