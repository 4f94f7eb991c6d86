//! The MCP tools: names, what each is for (written for the agent choosing one), its
//! parameters, which profiles list it, and checking a call's arguments against them.
//!
//! One table is the source of the JSON schemas shown to clients and of the checks
//! applied to every call, so the two never disagree.

use serde_json::{json, Map, Value};

pub use super::tool_table::TOOLS;

/// A parameter's JSON type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ty {
    Str,
    Int,
    Num,
    Bool,
    StrList,
    /// A JSON object (free-form metadata).
    Object,
}

/// One parameter of a tool.
#[derive(Clone, Copy)]
pub struct Param {
    pub name: &'static str,
    pub ty: Ty,
    pub required: bool,
    pub help: &'static str,
    /// Other names the seeds use for it: accepted by [`super::normalise`], never
    /// shown in the schema (the help mentions them).
    pub aliases: &'static [&'static str],
}

impl Param {
    /// The same parameter, also accepted under `aliases`.
    pub(super) const fn aka(self, aliases: &'static [&'static str]) -> Param {
        Param { aliases, ..self }
    }
}

pub(super) const fn req(name: &'static str, ty: Ty, help: &'static str) -> Param {
    Param {
        name,
        ty,
        required: true,
        help,
        aliases: &[],
    }
}

pub(super) const fn opt(name: &'static str, ty: Ty, help: &'static str) -> Param {
    Param {
        name,
        ty,
        required: false,
        help,
        aliases: &[],
    }
}

/// Tool profiles: `--tools default|core|code|memory|coding|all|compat`, or several
/// joined by commas (`all,compat`). A set of bits: `default` (the default) lists the
/// dozen tools agents use most and lets every tool be called; `all` lists every tool
/// but the compat names, `compat` adds the TeleCoder tool names (callable whatever
/// the profile). The other profiles list, and let be called, only their tools.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Profile(u8);

#[allow(non_upper_case_globals)]
impl Profile {
    pub const Core: Profile = Profile(1);
    pub const Code: Profile = Profile(2);
    pub const Memory: Profile = Profile(4);
    pub const Coding: Profile = Profile(8);
    pub const All: Profile = Profile(16);
    pub const Compat: Profile = Profile(32);
    pub const Default: Profile = Profile(64);

    /// Whether this profile lists a tool that `profiles` name.
    fn lists(self, profiles: &[Profile]) -> bool {
        let compat_only = profiles.contains(&Profile::Compat);
        (self.0 & Profile::All.0 != 0 && !compat_only) || profiles.iter().any(|p| self.0 & p.0 != 0)
    }

    /// Whether this profile lets every tool be called, listed or not.
    fn calls_all(self) -> bool {
        self.0 & (Profile::All.0 | Profile::Default.0) != 0
    }
}

/// A tool profile name that is none.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("tool profile {part:?} is not one of default, core, code, memory, coding, all, compat (join several with commas)")]
pub struct UnknownProfile {
    pub part: String,
}

impl std::str::FromStr for Profile {
    type Err = UnknownProfile;
    fn from_str(s: &str) -> Result<Self, UnknownProfile> {
        let mut bits = 0;
        for part in s.split(',').map(str::trim) {
            bits |= match part {
                "core" => Profile::Core,
                "code" => Profile::Code,
                "memory" => Profile::Memory,
                "coding" => Profile::Coding,
                "all" => Profile::All,
                "compat" => Profile::Compat,
                "default" => Profile::Default,
                _ => return Err(UnknownProfile { part: part.into() }),
            }
            .0;
        }
        Ok(Profile(bits))
    }
}

/// One tool.
pub struct ToolSpec {
    pub name: &'static str,
    pub description: &'static str,
    pub params: &'static [Param],
    /// Profiles (besides `all`) that list it.
    pub profiles: &'static [Profile],
}

/// Every tool: the main table, the small tools added for the seeds
/// (`extra.rs`) and the TeleCoder names (`compat.rs`).
pub fn all_specs() -> impl Iterator<Item = &'static ToolSpec> {
    TOOLS
        .iter()
        .chain(super::extra::EXTRA_TOOLS)
        .chain(super::compat::COMPAT_TOOLS)
}

/// A tool by name.
pub fn find(name: &str) -> Option<&'static ToolSpec> {
    all_specs().find(|t| t.name == name)
}

/// The tools a profile lists.
pub fn tools_for(profile: Profile) -> Vec<&'static ToolSpec> {
    all_specs().filter(|t| profile.lists(t.profiles)).collect()
}

/// The tools a server with `profile` lets be called: those it lists, or every tool
/// for `default` and `all` (the TeleCoder names are routed whatever the profile).
pub fn callable_for(profile: Profile) -> Vec<&'static ToolSpec> {
    if profile.calls_all() {
        all_specs().collect()
    } else {
        tools_for(profile)
    }
}

/// The JSON schema of a tool's arguments.
pub fn schema(spec: &ToolSpec) -> Map<String, Value> {
    let mut props = Map::new();
    for p in spec.params {
        let ty = match p.ty {
            Ty::Str => json!({"type": "string", "description": p.help}),
            Ty::Int => json!({"type": "integer", "minimum": 0, "description": p.help}),
            Ty::Num => json!({"type": "number", "description": p.help}),
            Ty::Bool => json!({"type": "boolean", "description": p.help}),
            Ty::StrList => {
                json!({"type": "array", "items": {"type": "string"}, "description": p.help})
            }
            Ty::Object => json!({"type": "object", "description": p.help}),
        };
        props.insert(p.name.into(), ty);
    }
    let required: Vec<&str> = spec
        .params
        .iter()
        .filter(|p| p.required)
        .map(|p| p.name)
        .collect();
    let mut m = Map::new();
    m.insert("type".into(), json!("object"));
    m.insert("properties".into(), Value::Object(props));
    m.insert("required".into(), json!(required));
    m.insert("additionalProperties".into(), json!(false));
    m
}

/// Arguments that do not fit a tool's schema; the text says which and what to do.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ArgsError {
    #[error("{tool}: unknown argument {name:?}; it takes {}", takes(known))]
    Unknown {
        tool: &'static str,
        name: String,
        known: Vec<&'static str>,
    },
    #[error("{tool}: missing required argument {name:?} ({help})")]
    Missing {
        tool: &'static str,
        name: &'static str,
        help: &'static str,
    },
    #[error("{tool}: argument {name:?} must be {want}, got {got}")]
    WrongType {
        tool: &'static str,
        name: &'static str,
        want: &'static str,
        got: Value,
    },
}

fn takes(known: &[&str]) -> String {
    if known.is_empty() {
        "no arguments".to_string()
    } else {
        known.join(", ")
    }
}

/// Check a call's arguments against the tool's parameters: every required one
/// present, no unknown one, each of its type.
pub fn validate(spec: &ToolSpec, args: &Map<String, Value>) -> Result<(), ArgsError> {
    for name in args.keys() {
        if !spec.params.iter().any(|p| p.name == name) {
            return Err(ArgsError::Unknown {
                tool: spec.name,
                name: name.clone(),
                known: spec.params.iter().map(|p| p.name).collect(),
            });
        }
    }
    for p in spec.params {
        match args.get(p.name) {
            None | Some(Value::Null) if p.required => {
                return Err(ArgsError::Missing {
                    tool: spec.name,
                    name: p.name,
                    help: p.help,
                });
            }
            None | Some(Value::Null) => {}
            Some(v) => {
                let ok = match p.ty {
                    Ty::Str => v.is_string(),
                    Ty::Int => v.as_u64().is_some(),
                    Ty::Num => v.is_number(),
                    Ty::Bool => v.is_boolean(),
                    Ty::StrList => v.as_array().is_some_and(|a| a.iter().all(Value::is_string)),
                    Ty::Object => v.is_object(),
                };
                if !ok {
                    let want = match p.ty {
                        Ty::Str => "a string",
                        Ty::Int => "a non-negative integer",
                        Ty::Num => "a number",
                        Ty::Bool => "true or false",
                        Ty::StrList => "an array of strings",
                        Ty::Object => "an object",
                    };
                    return Err(ArgsError::WrongType {
                        tool: spec.name,
                        name: p.name,
                        want,
                        got: v.clone(),
                    });
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_tool_has_a_schema_and_profiles_are_subsets() {
        assert_eq!(TOOLS.len(), 35);
        let all = tools_for(Profile::All).len();
        let with_compat = tools_for("all,compat".parse().unwrap()).len();
        assert_eq!(with_compat, all + super::super::compat::COMPAT_TOOLS.len());
        for p in [
            Profile::Core,
            Profile::Code,
            Profile::Memory,
            Profile::Coding,
        ] {
            let n = tools_for(p).len();
            assert!(n > 0 && n < all, "{p:?}");
        }
        // The default lists a dozen tools and lets every one be called.
        let listed = tools_for(Profile::Default);
        assert!(!listed.is_empty() && listed.len() <= 12, "{}", listed.len());
        assert_eq!("default".parse::<Profile>().unwrap(), Profile::Default);
        assert_eq!(callable_for(Profile::Default).len(), all_specs().count());
        assert_eq!(
            callable_for(Profile::Core).len(),
            tools_for(Profile::Core).len()
        );
        let spec = TOOLS.iter().find(|t| t.name == "code_search").unwrap();
        assert_eq!(schema(spec)["required"], json!(["query"]));
        let args = |v: Value| v.as_object().unwrap().clone();
        assert!(validate(spec, &args(json!({"query": "x", "top_k": 3}))).is_ok());
        let e = validate(spec, &args(json!({"query": 1}))).unwrap_err();
        assert_eq!(
            e,
            ArgsError::WrongType {
                tool: spec.name,
                name: "query",
                want: "a string",
                got: json!(1)
            }
        );
        let e = e.to_string();
        assert!(e.contains("must be a string"), "{e}");
        let e = validate(spec, &args(json!({"top_k": 3})))
            .unwrap_err()
            .to_string();
        assert!(e.contains("missing required argument \"query\""), "{e}");
        let e = validate(spec, &args(json!({"query": "x", "evil": true})))
            .unwrap_err()
            .to_string();
        assert!(e.contains("unknown argument \"evil\""), "{e}");
    }
}
