//! What a pattern set is, how it is read from JSON or TOML, and how it is checked.
//!
//! A set is named by a slug (stored under `pat:{name}`), has a description and tags,
//! and an ordered list of patterns, each with an id and a Hyperscan regex. This module
//! validates shape only; compiling is `compile`'s job.
//!
//! Two spellings are read, one is written. Besides engram's own (`name`, patterns as
//! `{id, regex, description, caseless}` objects), the Galaxybrain seed's is accepted:
//! `id` for the name (`"pat:security-smells"`) and patterns as bare regex strings, which
//! get the ids `p0`, `p1`, … by position. Both may be mixed in one list. Any other
//! unknown field is refused. Sets are always written back in engram's spelling.

use serde::{Deserialize, Serialize};

use super::PatternError;

/// A named set of regexes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, from = "RawSet")]
pub struct PatternSet {
    /// Slug: the set's key is `pat:{name}`.
    pub name: String,
    #[serde(default)]
    pub description: String,
    #[serde(default)]
    pub tags: Vec<String>,
    /// Matches are secrets: reports show only a masked prefix, never the text.
    #[serde(default)]
    pub secret: bool,
    pub patterns: Vec<PatternDef>,
}

/// One regex of a set.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PatternDef {
    /// Short id, unique in its set (`aws_access_key`, `eval`).
    pub id: String,
    /// Hyperscan (PCRE-subset) syntax; no back-references or look-around.
    pub regex: String,
    #[serde(default)]
    pub description: String,
    /// Match regardless of case.
    #[serde(default)]
    pub caseless: bool,
}

/// A set as read: `name` or `id`, patterns as strings or objects.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSet {
    #[serde(alias = "id")]
    name: String,
    #[serde(default)]
    description: String,
    #[serde(default)]
    tags: Vec<String>,
    #[serde(default)]
    secret: bool,
    patterns: Vec<RawPattern>,
}

/// A pattern as read: a bare regex (the seed's form) or engram's object.
enum RawPattern {
    Regex(String),
    Def(PatternDef),
}

impl<'de> Deserialize<'de> for RawPattern {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<RawPattern, D::Error> {
        // By hand rather than `untagged`, so an object's own error (an unknown or
        // missing field) reaches the user instead of "did not match any variant".
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = RawPattern;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a regex string or a {id, regex, description, caseless} table")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<RawPattern, E> {
                Ok(RawPattern::Regex(v.to_string()))
            }
            fn visit_string<E: serde::de::Error>(self, v: String) -> Result<RawPattern, E> {
                Ok(RawPattern::Regex(v))
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, m: A) -> Result<RawPattern, A::Error> {
                PatternDef::deserialize(serde::de::value::MapAccessDeserializer::new(m))
                    .map(RawPattern::Def)
            }
        }
        d.deserialize_any(V)
    }
}

impl From<RawSet> for PatternSet {
    fn from(r: RawSet) -> PatternSet {
        PatternSet {
            name: r.name,
            description: r.description,
            tags: r.tags,
            secret: r.secret,
            patterns: r
                .patterns
                .into_iter()
                .enumerate()
                .map(|(i, p)| match p {
                    RawPattern::Regex(regex) => PatternDef {
                        id: format!("p{i}"),
                        regex,
                        description: String::new(),
                        caseless: false,
                    },
                    RawPattern::Def(d) => d,
                })
                .collect(),
        }
    }
}

impl PatternSet {
    /// Parse a definition, JSON or TOML by its content: JSON when the first non-blank
    /// character is `{`, TOML otherwise. The file name plays no part.
    pub fn parse_detect(text: &str) -> Result<PatternSet, PatternError> {
        let json = text
            .trim_start_matches('\u{feff}')
            .trim_start()
            .starts_with('{');
        PatternSet::parse(text, !json)
    }

    /// Parse a definition; TOML when `toml` is true, else JSON.
    pub fn parse(text: &str, toml: bool) -> Result<PatternSet, PatternError> {
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        let set: PatternSet = if toml {
            ::toml::from_str(text)
                .map_err(|e| PatternError::Invalid(format!("not a valid TOML pattern set: {e}")))?
        } else {
            serde_json::from_str(text)
                .map_err(|e| PatternError::Invalid(format!("not a valid JSON pattern set: {e}")))?
        };
        set.check()?;
        Ok(set)
    }

    /// Check names and ids (not the regexes themselves).
    pub fn check(&self) -> Result<(), PatternError> {
        let slug_ok = valid_slug;
        let name = self.name.strip_prefix("pat:").unwrap_or(&self.name);
        if !slug_ok(name) {
            return Err(PatternError::Invalid(format!(
                "set name {:?} must be 1-64 of a-z, 0-9, '-', '_'",
                self.name
            )));
        }
        if self.patterns.is_empty() {
            return Err(PatternError::Invalid(format!("set {name} has no patterns")));
        }
        for (i, p) in self.patterns.iter().enumerate() {
            if !slug_ok(&p.id) {
                return Err(PatternError::Invalid(format!(
                    "pattern {i} of {name}: id {:?} must be 1-64 of a-z, 0-9, '-', '_'",
                    p.id
                )));
            }
            if self.patterns[..i].iter().any(|q| q.id == p.id) {
                return Err(PatternError::Invalid(format!(
                    "pattern {i} of {name}: id {:?} is used twice",
                    p.id
                )));
            }
            if p.regex.is_empty() {
                return Err(PatternError::Invalid(format!(
                    "pattern {i} ({}) of {name}: empty regex",
                    p.id
                )));
            }
        }
        Ok(())
    }

    /// The name without any `pat:` prefix.
    pub fn slug(&self) -> &str {
        self.name.strip_prefix("pat:").unwrap_or(&self.name)
    }

    /// The set's key in a store.
    pub fn key(&self) -> String {
        format!("pat:{}", self.slug())
    }
}

/// Whether `s` can be a set's name without `pat:`: 1-64 of a-z, 0-9, `-`, `_`.
pub(crate) fn valid_slug(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 64
        && s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_')
}

#[cfg(test)]
mod tests {
    use super::*;

    const SEED_JSON: &str = r#"{
  "id": "pat:security-smells",
  "description": "Detect common security anti-patterns",
  "patterns": [
    "eval\\s*\\(",
    "exec\\s*\\(",
    "subprocess\\.call.*shell\\s*=\\s*True",
    "password\\s*=\\s*['\"][^'\"]+['\"]"
  ],
  "tags": ["security", "code-smell"]
}"#;

    #[test]
    fn the_seeds_json_reads_with_positional_ids() {
        let set = PatternSet::parse_detect(SEED_JSON).unwrap();
        assert_eq!(set.slug(), "security-smells");
        assert_eq!(set.key(), "pat:security-smells");
        let ids: Vec<_> = set.patterns.iter().map(|p| p.id.as_str()).collect();
        assert_eq!(ids, ["p0", "p1", "p2", "p3"]);
        assert_eq!(set.patterns[0].regex, r"eval\s*\(");
        assert_eq!(set.tags, ["security", "code-smell"]);
        // Written back in engram's spelling, which reads back the same.
        let out = serde_json::to_value(&set).unwrap();
        assert_eq!(out["name"], "pat:security-smells");
        assert!(out.get("id").is_none());
        assert_eq!(out["patterns"][1]["id"], "p1");
        let back: PatternSet = serde_json::from_value(out).unwrap();
        assert_eq!(back, set);
    }

    #[test]
    fn toml_is_told_from_json_by_content() {
        let toml = "\n# seed form\nid = \"pat:x\"\npatterns = ['eval\\s*\\(', { id = \"ex\", regex = 'exec\\(', caseless = true }]\n";
        let set = PatternSet::parse_detect(toml).unwrap();
        assert_eq!(set.key(), "pat:x");
        assert_eq!(set.patterns[0].id, "p0");
        assert_eq!(set.patterns[1].id, "ex");
        assert!(set.patterns[1].caseless);
        let json = "\u{feff}  \n {\"name\":\"y\",\"patterns\":[{\"id\":\"a\",\"regex\":\"b\"}]}";
        assert_eq!(PatternSet::parse_detect(json).unwrap().key(), "pat:y");
    }

    #[test]
    fn structured_arguments_deserialize_from_a_json_value() {
        let v = serde_json::json!({"id": "pat:mine", "patterns": ["a+", {"id": "b", "regex": "b+"}],
                                   "description": "d", "tags": ["t"], "secret": true});
        let set: PatternSet = serde_json::from_value(v).unwrap();
        set.check().unwrap();
        assert!(set.secret);
        assert_eq!(set.patterns[0].id, "p0");
        assert_eq!(set.patterns[1].id, "b");
    }

    #[test]
    fn unknown_fields_and_bad_items_are_still_refused() {
        let e = PatternSet::parse_detect(r#"{"id":"x","patterns":["a"],"compiled_db":null}"#)
            .unwrap_err()
            .to_string();
        assert!(e.contains("unknown field `compiled_db`"), "{e}");
        let e = PatternSet::parse_detect(r#"{"id":"x","patterns":[{"id":"a","regx":"b"}]}"#)
            .unwrap_err()
            .to_string();
        assert!(e.contains("unknown field `regx`"), "{e}");
        let e = PatternSet::parse_detect(r#"{"id":"x","patterns":[3]}"#)
            .unwrap_err()
            .to_string();
        assert!(e.contains("a regex string or"), "{e}");
        let e = PatternSet::parse_detect(r#"{"id":"x","name":"y","patterns":["a"]}"#)
            .unwrap_err()
            .to_string();
        assert!(e.contains("duplicate field"), "{e}");
        // A bare string's positional id may not clash with an object's.
        let e = PatternSet::parse_detect(r#"{"id":"x","patterns":["a",{"id":"p0","regex":"b"}]}"#)
            .unwrap_err()
            .to_string();
        assert!(e.contains("used twice"), "{e}");
    }
}
