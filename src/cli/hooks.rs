//! `engram hooks`: Claude Code's hooks wired to engram, so a session is captured
//! whether or not the agent calls engram's tools.
//!
//! `install` writes engram's entries into `.claude/settings.json` of the repository
//! (`--user`: `~/.claude/settings.json`), `--print` shows the file as it would be,
//! `uninstall` takes them out again. Each entry runs the hidden `engram hooks run
//! EVENT`, which reads the JSON Claude Code sends on stdin (`session_id`, `cwd`,
//! `tool_name`, `tool_input`, …):
//! - SessionStart starts (or resumes) the engram session of that Claude Code session
//!   and prints `engram context`, which Claude Code adds to the agent's context;
//! - PostToolUse on Edit|Write|MultiEdit records the file change in that session;
//! - SessionEnd (and Stop, when wired by hand) ends it and prints its summary.
//!
//! Stop is not installed: Claude Code runs it after every reply, so ending the
//! session there would cut one conversation into many.
//!
//! engram's entries are the ones whose command is `engram … hooks run …`; the file's
//! other settings and hooks are never changed.

use std::io::{IsTerminal, Read};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{bail, Context, Result};
use engram::memory::{FileChange, Memory, MemoryBackend, MemoryFilter};
use serde::Deserialize;
use serde_json::{json, Map, Value};

use super::output::Output;
use super::{Cli, Command, HooksCommand, SessionCommand};

/// The hooks `install` writes: event, matcher.
const INSTALLED: &[(&str, Option<&str>)] = &[
    ("SessionStart", None),
    ("PostToolUse", Some(EDIT_TOOLS)),
    ("SessionEnd", None),
];

/// The tools that change files, as a PostToolUse matcher.
const EDIT_TOOLS: &str = "Edit|Write|MultiEdit";

/// The tag every session a hook starts carries; `claude-session:ID` names its
/// Claude Code session.
const TAG: &str = "claude-code";

/// Most bytes of hook input read from stdin (a Write's input holds the whole file).
const MAX_INPUT: u64 = 64 << 20;

pub fn run(cli: &Cli, out: &Output, command: &HooksCommand) -> Result<ExitCode> {
    match command {
        HooksCommand::Install { user, print } => edit(cli, out, *user, *print, true),
        HooksCommand::Uninstall { user, print } => edit(cli, out, *user, *print, false),
        HooksCommand::Run { event } => run_hook(cli, out, event),
    }
}

/// Install (or uninstall) engram's entries in the settings file.
fn edit(cli: &Cli, out: &Output, user: bool, print: bool, install: bool) -> Result<ExitCode> {
    let path = settings_path(user)?;
    let mut settings = read_settings(&path)?;
    let removed = remove_ours(&mut settings)?;
    if install {
        add_ours(&mut settings, cli)?;
    }
    let text = format!("{}\n", serde_json::to_string_pretty(&settings)?);
    if print {
        print!("{text}");
        return Ok(ExitCode::SUCCESS);
    }
    if install || removed > 0 {
        write_atomically(&path, &text)?;
    }
    let events: Vec<&str> = INSTALLED.iter().map(|(e, _)| *e).collect();
    out.value(
        &json!({"settings": path, "installed": if install { events.clone() } else { vec![] }, "removed": removed}),
        || match (install, removed) {
            (true, _) => format!(
                "engram's Claude Code hooks ({}) are in {}",
                events.join(", "),
                path.display()
            ),
            (false, 0) => format!("no engram hooks in {}", path.display()),
            (false, n) => format!("removed {n} engram hooks from {}", path.display()),
        },
    )?;
    Ok(ExitCode::SUCCESS)
}

/// `.claude/settings.json` of the repository containing the current directory (or
/// of the directory itself), or of the home directory with `user`.
fn settings_path(user: bool) -> Result<PathBuf> {
    let base = if user {
        std::env::var_os("HOME")
            .filter(|h| !h.is_empty())
            .map(PathBuf::from)
            .context("--user needs HOME set")?
    } else {
        let cwd = std::env::current_dir().context("reading the current directory")?;
        engram::location::repo_root(&cwd).unwrap_or(cwd)
    };
    Ok(base.join(".claude").join("settings.json"))
}

fn read_settings(path: &Path) -> Result<Value> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(json!({})),
        Err(e) => return Err(e).with_context(|| format!("reading {}", path.display())),
    };
    if text.trim().is_empty() {
        return Ok(json!({}));
    }
    let v: Value = serde_json::from_str(&text).with_context(|| {
        format!(
            "{} is not valid JSON; fix it (or move it away) and run this again",
            path.display()
        )
    })?;
    if !v.is_object() {
        bail!(
            "{} holds no JSON object; fix it and run this again",
            path.display()
        );
    }
    Ok(v)
}

fn write_atomically(path: &Path, text: &str) -> Result<()> {
    let dir = path.parent().context("a settings file has a directory")?;
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let tmp = dir.join(".settings.json.engram-tmp");
    std::fs::write(&tmp, text).with_context(|| format!("writing {}", tmp.display()))?;
    std::fs::rename(&tmp, path).with_context(|| format!("replacing {}", path.display()))
}

/// Whether a hook command is one of engram's: `engram … hooks run EVENT`.
fn is_ours(command: &str) -> bool {
    let program = command.split_whitespace().next().unwrap_or("");
    let name = Path::new(program.trim_matches(['\'', '"']))
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("");
    name == "engram" && command.contains(" hooks run ")
}

/// `settings.hooks`, an object when present.
fn hooks_of(settings: &mut Value) -> Result<Option<&mut Map<String, Value>>> {
    match settings.get_mut("hooks") {
        None => Ok(None),
        Some(Value::Object(h)) => Ok(Some(h)),
        Some(_) => bail!("the settings' \"hooks\" is not an object; fix it and run this again"),
    }
}

/// Take engram's entries out; what held only them (a matcher group, an event, the
/// `hooks` object) goes too. Returns how many were taken.
fn remove_ours(settings: &mut Value) -> Result<usize> {
    let Some(hooks) = hooks_of(settings)? else {
        return Ok(0);
    };
    let mut removed = 0;
    for groups in hooks.values_mut() {
        let Some(groups) = groups.as_array_mut() else {
            continue;
        };
        groups.retain_mut(|group| {
            let Some(list) = group.get_mut("hooks").and_then(Value::as_array_mut) else {
                return true;
            };
            let before = list.len();
            list.retain(|h| {
                !h.get("command")
                    .and_then(Value::as_str)
                    .is_some_and(is_ours)
            });
            removed += before - list.len();
            !(list.is_empty() && before > 0)
        });
    }
    if removed > 0 {
        hooks.retain(|_, groups| groups.as_array().is_none_or(|g| !g.is_empty()));
        if hooks.is_empty() {
            if let Some(all) = settings.as_object_mut() {
                all.remove("hooks");
            }
        }
    }
    Ok(removed)
}

fn add_ours(settings: &mut Value, cli: &Cli) -> Result<()> {
    let Some(all) = settings.as_object_mut() else {
        bail!("the settings hold no JSON object");
    };
    let hooks = all.entry("hooks").or_insert_with(|| json!({}));
    let Some(hooks) = hooks.as_object_mut() else {
        bail!("the settings' \"hooks\" is not an object; fix it and run this again");
    };
    for (event, matcher) in INSTALLED {
        let mut group = json!({"hooks": [{"type": "command", "command": command_for(cli, event)}]});
        if let Some(m) = matcher {
            group["matcher"] = json!(m);
        }
        let groups = hooks.entry(*event).or_insert_with(|| json!([]));
        let Some(groups) = groups.as_array_mut() else {
            bail!("the settings' hooks.{event} is not a list; fix it and run this again");
        };
        groups.push(group);
    }
    Ok(())
}

/// The command an entry runs: `engram hooks run EVENT`, with the store named when
/// one was given to `install`.
fn command_for(cli: &Cli, event: &str) -> String {
    match &cli.store {
        Some(store) => format!(
            "engram --store {} hooks run {event}",
            shell_quote(&store.display().to_string())
        ),
        None => format!("engram hooks run {event}"),
    }
}

fn shell_quote(s: &str) -> String {
    if s.bytes()
        .all(|b| b.is_ascii_alphanumeric() || b"/._-+:@".contains(&b))
    {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

/// What Claude Code sends a hook on stdin (the fields engram reads).
#[derive(Debug, Default, Deserialize)]
struct HookInput {
    #[serde(default)]
    session_id: String,
    #[serde(default)]
    cwd: Option<PathBuf>,
    #[serde(default)]
    hook_event_name: Option<String>,
    #[serde(default)]
    source: Option<String>,
    #[serde(default)]
    tool_name: Option<String>,
    #[serde(default)]
    tool_input: Value,
    #[serde(default)]
    tool_response: Value,
}

fn read_input() -> Result<HookInput> {
    let stdin = std::io::stdin();
    if stdin.is_terminal() {
        bail!("`engram hooks run` reads the JSON Claude Code sends on stdin; `engram hooks install` sets it up");
    }
    let mut text = String::new();
    stdin
        .lock()
        .take(MAX_INPUT)
        .read_to_string(&mut text)
        .context("reading the hook's JSON from stdin")?;
    serde_json::from_str(&text).context("the hook's stdin is not Claude Code's hook JSON")
}

fn run_hook(cli: &Cli, out: &Output, event: &str) -> Result<ExitCode> {
    let input = read_input()?;
    if let Some(named) = input.hook_event_name.as_deref().filter(|n| *n != event) {
        tracing::warn!("hook installed for {event} was sent a {named} event");
    }
    if input.session_id.trim().is_empty() {
        bail!("the hook's JSON has no session_id");
    }
    // The store is the repository's that Claude Code works in.
    if let Some(cwd) = input.cwd.as_deref().filter(|c| c.is_dir()) {
        std::env::set_current_dir(cwd)
            .with_context(|| format!("entering the session's directory {}", cwd.display()))?;
    }
    match event {
        "SessionStart" => session_start(cli, &input),
        "PostToolUse" => post_tool_use(cli, out, &input),
        "SessionEnd" | "Stop" => session_end(cli, &input),
        other => bail!("no engram hook for {other:?}; the hooks are SessionStart, PostToolUse, SessionEnd and Stop"),
    }
}

/// The memory backend the CLI's commands use: the team database with database_url
/// set, else the repository's store.
fn backend(cli: &Cli) -> Result<std::sync::Arc<dyn MemoryBackend>> {
    Ok(super::backend::open(cli)?.memories.backend().clone())
}

fn session_tag(input: &HookInput) -> String {
    format!("claude-session:{}", input.session_id.trim())
}

/// The open engram session of this Claude Code session, if any (the newest).
fn open_session(b: &dyn MemoryBackend, input: &HookInput) -> Result<Option<Memory>> {
    let filter = MemoryFilter {
        kind: Some("session".into()),
        tags: vec![session_tag(input)],
        ..MemoryFilter::default()
    }
    .normalised()?;
    Ok(b.list_filtered(&filter, 50, 0)?
        .into_iter()
        .find(|m| m.metadata.get("status").and_then(Value::as_str) == Some("active")))
}

/// The open session, or a new one.
fn session(b: &dyn MemoryBackend, input: &HookInput) -> Result<Memory> {
    if let Some(s) = open_session(b, input)? {
        return Ok(s);
    }
    let how = input.source.as_deref().unwrap_or("startup");
    Ok(b.start_session(
        &format!("Claude Code session {} ({how})", input.session_id.trim()),
        &[TAG.to_string(), session_tag(input)],
    )?)
}

/// `cli` running `command` instead, as plain text.
fn as_command(cli: &Cli, command: Command) -> Cli {
    Cli {
        store: cli.store.clone(),
        json: false,
        durability: cli.durability,
        config: cli.config.clone(),
        verbose: cli.verbose,
        command,
    }
}

fn session_start(cli: &Cli, input: &HookInput) -> Result<ExitCode> {
    let id = {
        let b = backend(cli)?;
        session(&*b, input)?.id
    };
    // Claude Code adds what a SessionStart hook prints to the agent's context.
    println!(
        "engram session {id} records this Claude Code session: file edits join it on their own; pass it as `session` to engram's coding tools.\n"
    );
    super::dispatch(&as_command(
        cli,
        Command::Context {
            budget: 4096,
            compress: None,
            dry_run: false,
        },
    ))
}

fn post_tool_use(cli: &Cli, out: &Output, input: &HookInput) -> Result<ExitCode> {
    let tool = input.tool_name.as_deref().unwrap_or("");
    if !EDIT_TOOLS.split('|').any(|t| t == tool) {
        return Ok(ExitCode::SUCCESS);
    }
    let Some(file) = input.tool_input.get("file_path").and_then(Value::as_str) else {
        return Ok(ExitCode::SUCCESS);
    };
    let Some(path) = repo_relative(file)? else {
        tracing::info!("{file} is outside the repository: not recorded");
        return Ok(ExitCode::SUCCESS);
    };
    let created = input.tool_response.get("type").and_then(Value::as_str) == Some("create");
    let b = backend(cli)?;
    let session = session(&*b, input)?;
    let m = b.track_file_change(
        &FileChange {
            path,
            action: if created { "create" } else { "edit" }.into(),
            reason: format!("{tool} by Claude Code"),
            diff_summary: diff_summary(tool, &input.tool_input),
            session: Some(session.id),
            ..FileChange::default()
        },
        None,
    )?;
    out.value(&m, String::new)?;
    Ok(ExitCode::SUCCESS)
}

/// `file` relative to the repository root, or `None` outside it.
fn repo_relative(file: &str) -> Result<Option<String>> {
    let cwd = std::env::current_dir().context("reading the current directory")?;
    let root = engram::location::repo_root(&cwd).unwrap_or(cwd.clone());
    let root = root.canonicalize().unwrap_or(root);
    let p = cwd.join(file);
    // A deleted file has no canonical path; its directory still does.
    let p = match (p.parent().map(Path::canonicalize), p.file_name()) {
        (Some(Ok(dir)), Some(name)) => dir.join(name),
        _ => p,
    };
    Ok(p.strip_prefix(&root)
        .ok()
        .filter(|r| !r.as_os_str().is_empty())
        .map(|r| r.to_string_lossy().replace('\\', "/")))
}

/// How big the edit was, in lines (never its text: it may hold a secret).
fn diff_summary(tool: &str, input: &Value) -> Option<String> {
    let lines = |k: &str, v: &Value| v.get(k).and_then(Value::as_str).map(|s| s.lines().count());
    match tool {
        "Edit" => Some(format!(
            "replaced {} lines with {}",
            lines("old_string", input)?,
            lines("new_string", input)?
        )),
        "MultiEdit" => Some(format!(
            "{} edits",
            input.get("edits").and_then(Value::as_array)?.len()
        )),
        "Write" => Some(format!("wrote {} lines", lines("content", input)?)),
        _ => None,
    }
}

fn session_end(cli: &Cli, input: &HookInput) -> Result<ExitCode> {
    let open = {
        let b = backend(cli)?;
        open_session(&*b, input)?
    };
    let Some(open) = open else {
        // Nothing was recorded, or it was ended already.
        return Ok(ExitCode::SUCCESS);
    };
    super::dispatch(&as_command(
        cli,
        Command::Session {
            command: SessionCommand::End {
                id: Some(open.id),
                failed: false,
                llm_summary: false,
                extract: false,
                dry_run: false,
            },
        },
    ))
}
