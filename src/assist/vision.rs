//! Error screenshots: an image (a file path or base64) is identified by its sha256 and
//! size, and — when a vision model is configured — read for the error's type, message,
//! file, line and stack trace.
//!
//! The image itself is never stored: a memory holds only its hash and size. This
//! module reads the image, never writes it anywhere, and sends it only to the
//! configured vision model.

use std::path::Path;

use base64::Engine as _;
use serde::Serialize;
use sha2::{Digest, Sha256};

use super::parse::{field_str, json_object};

/// The sha256 of `bytes`, hex.
pub fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}
use super::{AssistError, Assistant};
use crate::memory::AuditLog;

/// Largest screenshot read (bytes).
pub const MAX_SCREENSHOT_BYTES: usize = 8 << 20;

/// A screenshot's identity and its bytes for the model (never stored).
#[derive(Clone)]
pub struct Screenshot {
    /// Hex sha256 of the image bytes.
    pub sha256: String,
    /// Size in bytes.
    pub bytes: u64,
    /// `image/png`, `image/jpeg`, `image/gif` or `image/webp`.
    pub media_type: &'static str,
    base64: String,
}

impl std::fmt::Debug for Screenshot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.reference())
    }
}

impl Screenshot {
    /// What a memory stores instead of the image: `sha256:<hex> (<n> bytes, <type>)`.
    pub fn reference(&self) -> String {
        format!(
            "sha256:{} ({} bytes, {})",
            self.sha256, self.bytes, self.media_type
        )
    }
}

fn media_type(b: &[u8]) -> Option<&'static str> {
    if b.starts_with(b"\x89PNG\r\n\x1a\n") {
        Some("image/png")
    } else if b.starts_with(&[0xff, 0xd8, 0xff]) {
        Some("image/jpeg")
    } else if b.starts_with(b"GIF87a") || b.starts_with(b"GIF89a") {
        Some("image/gif")
    } else if b.len() >= 12 && &b[..4] == b"RIFF" && &b[8..12] == b"WEBP" {
        Some("image/webp")
    } else {
        None
    }
}

/// Whether `value` reads as base64 image data rather than a path.
pub fn is_base64(value: &str) -> bool {
    value.starts_with("data:")
        || (value.len() >= 64
            && value.bytes().all(|c| {
                c.is_ascii_alphanumeric() || matches!(c, b'+' | b'/' | b'=' | b'\n' | b'\r')
            }))
}

/// Why a screenshot could not be read; the text says what was wrong.
#[derive(Debug, thiserror::Error)]
pub enum ScreenshotError {
    #[error("the screenshot is larger than {MAX_SCREENSHOT_BYTES} bytes")]
    TooLarge,
    #[error("the screenshot is not valid base64: {0}")]
    NotBase64(#[source] base64::DecodeError),
    /// The path was refused (e.g. outside the repository), in the refuser's words.
    #[error("{0}")]
    Refused(String),
    /// `file` is the file's name only (the path is not shown).
    #[error("screenshot {file}: {source}")]
    Read {
        file: String,
        source: std::io::Error,
    },
    #[error("the screenshot is not a PNG, JPEG, GIF or WebP image")]
    NotAnImage,
}

/// What is kept of image data that could not be read as an image: its length and
/// sha256, never the data.
pub fn unread_image(value: &str, why: &ScreenshotError) -> String {
    let data = value
        .trim()
        .strip_prefix("data:")
        .and_then(|v| v.split_once(',').map(|(_, d)| d))
        .unwrap_or(value.trim());
    format!(
        "image data not read ({why}); {} characters, sha256 {}",
        data.len(),
        sha256_hex(data.as_bytes())
    )
}

/// A screenshot from `value`: a `data:` URL, bare base64, or a path (read through
/// `confine`, which may refuse it, e.g. outside the repository).
pub fn screenshot_from(
    value: &str,
    confine: impl Fn(&str) -> Result<std::path::PathBuf, String>,
) -> Result<Screenshot, ScreenshotError> {
    let value = value.trim();
    let bytes = if is_base64(value) {
        let data = value
            .strip_prefix("data:")
            .and_then(|v| v.split_once(',').map(|(_, d)| d))
            .unwrap_or(value);
        let clean: String = data.chars().filter(|c| !c.is_whitespace()).collect();
        if clean.len() > MAX_SCREENSHOT_BYTES * 4 / 3 + 4 {
            return Err(ScreenshotError::TooLarge);
        }
        base64::engine::general_purpose::STANDARD
            .decode(clean.as_bytes())
            .map_err(ScreenshotError::NotBase64)?
    } else {
        let path = confine(value).map_err(ScreenshotError::Refused)?;
        let unreadable = |source: std::io::Error| ScreenshotError::Read {
            file: show(&path),
            source,
        };
        let len = std::fs::metadata(&path).map_err(unreadable)?.len();
        if len > MAX_SCREENSHOT_BYTES as u64 {
            return Err(ScreenshotError::TooLarge);
        }
        std::fs::read(&path).map_err(unreadable)?
    };
    let media_type = media_type(&bytes).ok_or(ScreenshotError::NotAnImage)?;
    Ok(Screenshot {
        sha256: sha256_hex(&bytes),
        bytes: bytes.len() as u64,
        media_type,
        base64: base64::engine::general_purpose::STANDARD.encode(&bytes),
    })
}

fn show(p: &Path) -> String {
    p.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// What a vision model read from a screenshot.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ScreenshotFields {
    pub error_type: Option<String>,
    pub message: Option<String>,
    pub file: Option<String>,
    /// 1-based.
    pub line: Option<u64>,
    pub stack_trace: Option<String>,
}

const SYSTEM: &str = "You read screenshots of programming errors precisely. Copy text exactly \
as shown; never guess what is not visible.";

const PROMPT: &str = "Extract the error shown in this screenshot. Answer with JSON only:
{\"error_type\": \"e.g. TypeError\", \"message\": \"the error message\", \"file\": \"path or null\", \
\"line\": line number or null, \"stack_trace\": \"the visible stack trace or null\"}";

/// The fields of a vision model's answer.
pub fn parse_fields(text: &str) -> Option<ScreenshotFields> {
    let o = json_object(text)?;
    let cap = |s: String| -> String { s.chars().take(4000).collect() };
    let f = ScreenshotFields {
        error_type: field_str(&o, &["error_type", "type"]).map(cap),
        message: field_str(&o, &["message", "error_message"]).map(cap),
        file: field_str(&o, &["file", "file_path", "path"])
            .filter(|f| f != "null")
            .map(cap),
        line: o
            .get("line")
            .or_else(|| o.get("line_number"))
            .and_then(|v| {
                v.as_u64()
                    .or_else(|| v.as_str().and_then(|s| s.trim().parse().ok()))
            })
            .filter(|l| *l > 0),
        stack_trace: field_str(&o, &["stack_trace", "traceback"])
            .filter(|f| f != "null")
            .map(cap),
    };
    (f != ScreenshotFields::default()).then_some(f)
}

impl Assistant {
    /// What the vision model reads in `shot`; the call is audited in `log` (or the
    /// team log, when one is set).
    pub fn read_screenshot(
        &self,
        log: &dyn AuditLog,
        shot: &Screenshot,
    ) -> Result<ScreenshotFields, AssistError> {
        let answer = self.ask_image(
            log,
            "error_screenshot",
            SYSTEM,
            PROMPT,
            shot.media_type,
            shot.base64.clone(),
        )?;
        parse_fields(&answer.text)
            .ok_or_else(|| AssistError::Unusable("no error fields in the answer".into()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_is_no_screenshot_says_why() {
        let no_paths = |_: &str| Err("outside the repository".to_string());
        let e = screenshot_from("shots/error.png", no_paths).err().unwrap();
        assert!(
            matches!(&e, ScreenshotError::Refused(why) if why == "outside the repository"),
            "{e:?}"
        );
        let e = screenshot_from("data:;base64,aGVsbG8=", no_paths)
            .err()
            .unwrap();
        assert!(matches!(e, ScreenshotError::NotAnImage), "{e:?}");
        assert!(unread_image("data:;base64,aGVsbG8=", &e)
            .starts_with("image data not read (the screenshot is not a PNG, JPEG, GIF or WebP image); 8 characters"));
    }
}
