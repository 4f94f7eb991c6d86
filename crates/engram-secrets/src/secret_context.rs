//! Values that the text around them says are public (held-out-16's
//! classes: Python's string annotations, ACME clients, Web Push, certificates).
//!
//! - [`is_type_expression`]: a quoted value that parses as a type
//!   (`input_tokens: "Optional[int]" = None`, `secret_key: "Optional[str]"`,
//!   `"Union[CompletionUsage, ResponseUsage]"`, `"int | None"`): Python's forward
//!   references and `TYPE_CHECKING` annotations are strings. A subscript must open with
//!   a typing constructor (`Optional`, `Union`, `list`, `dict`, …) or a union must name
//!   a builtin type, so a random value with a bracket or a bar in it is still judged.
//! - [`in_acme_challenge`]: the `token` of an ACME challenge (RFC 8555 section 8), which
//!   the server hands out and the client serves over plain HTTP or DNS: public by
//!   design. Only a `token` whose value is unpadded base64url, with an ACME challenge
//!   type (`http-01`, `dns-01`, `tls-alpn-01`) or the ACME library's own name
//!   (`acme.challenges`, `acme::`, `/acme/`) within a kilobyte before it.
//! - [`is_push_subscription_auth`]: a Web Push subscription's `auth` (RFC 8291: 16
//!   random bytes that the browser hands to every application server beside its public
//!   `p256dh` key; it keys the payload's encryption and admits nobody to anything),
//!   only 16 bytes of base64url with `p256dh` or `vapid` near it.
//! - [`decodes_to_user_pass`]: a Docker config's `auth` is `base64(user:password)`; a
//!   value that does not decode to text with a `:` is not one (the generic rule still
//!   judges it by its name and entropy).
//! - [`in_public_pem_block`]: a line of a certificate's, a CSR's or a public key's PEM
//!   body (`AAAAAAAAAAAAAAAAAAAAAYcQo74y…` in a CSR read as a Twitter bearer token).

use super::secret_shape::decode_base64;

/// Typing constructors a subscripted annotation opens with (the last dotted part:
/// `typing.Optional` too).
const TYPE_HEADS: &[&str] = &[
    "Optional",
    "Union",
    "List",
    "Dict",
    "Tuple",
    "Set",
    "FrozenSet",
    "Type",
    "Callable",
    "Sequence",
    "MutableSequence",
    "Iterable",
    "Iterator",
    "Mapping",
    "MutableMapping",
    "Literal",
    "Annotated",
    "Awaitable",
    "Coroutine",
    "Generator",
    "AsyncIterator",
    "AsyncIterable",
    "AsyncGenerator",
    "ClassVar",
    "Final",
    "Deque",
    "DefaultDict",
    "Collection",
    "TypeGuard",
    "Required",
    "NotRequired",
    "list",
    "dict",
    "tuple",
    "set",
    "frozenset",
    "type",
];

/// Builtin types a union names (`"int | None"`).
const BUILTIN_TYPES: &[&str] = &[
    "int", "str", "bytes", "float", "bool", "None", "Any", "object", "complex",
];

/// What a type expression held, as [`Parser`] read it.
#[derive(Default)]
struct Seen {
    typing_head: bool,
    union: bool,
    builtin: bool,
}

/// A recursive-descent reader of Python's type expressions over bytes.
struct Parser<'a> {
    b: &'a [u8],
    i: usize,
    depth: usize,
    seen: Seen,
}

impl Parser<'_> {
    fn spaces(&mut self) {
        while self.b.get(self.i) == Some(&b' ') {
            self.i += 1;
        }
    }

    /// A dotted name; its last part, if there was one.
    fn name(&mut self) -> Option<&str> {
        let mut last;
        loop {
            let s = self.i;
            if !self
                .b
                .get(self.i)
                .is_some_and(|c| c.is_ascii_alphabetic() || *c == b'_')
            {
                return None;
            }
            while self
                .b
                .get(self.i)
                .is_some_and(|c| c.is_ascii_alphanumeric() || *c == b'_')
            {
                self.i += 1;
            }
            last = s;
            if self.b.get(self.i) == Some(&b'.') {
                self.i += 1;
            } else {
                break;
            }
        }
        // The bytes read are ASCII, so this never fails.
        std::str::from_utf8(&self.b[last..self.i]).ok()
    }

    /// `type := atom ('|' atom)*`
    fn union(&mut self) -> bool {
        // Nesting deeper than a person writes is no annotation (and bounds the stack).
        self.depth += 1;
        if self.depth > 8 || !self.atom() {
            return false;
        }
        loop {
            self.spaces();
            if self.b.get(self.i) != Some(&b'|') {
                break;
            }
            self.i += 1;
            self.spaces();
            self.seen.union = true;
            if !self.atom() {
                return false;
            }
        }
        self.depth -= 1;
        true
    }

    /// `atom := '...' | '[' args ']' | name ('[' args ']')?`
    fn atom(&mut self) -> bool {
        if self.b[self.i..].starts_with(b"...") {
            self.i += 3;
            return true;
        }
        if self.b.get(self.i) == Some(&b'[') {
            return self.args();
        }
        let Some(name) = self.name() else {
            return false;
        };
        let head = TYPE_HEADS.contains(&name);
        self.seen.builtin |= BUILTIN_TYPES.contains(&name);
        if self.b.get(self.i) == Some(&b'[') {
            self.seen.typing_head |= head;
            return head && self.args();
        }
        true
    }

    /// `'[' type (',' type)* ']'` (`[]` too: `Callable[[], None]`).
    fn args(&mut self) -> bool {
        self.i += 1;
        self.spaces();
        if self.b.get(self.i) == Some(&b']') {
            self.i += 1;
            return true;
        }
        loop {
            if !self.union() {
                return false;
            }
            self.spaces();
            match self.b.get(self.i) {
                Some(b',') => {
                    self.i += 1;
                    self.spaces();
                }
                Some(b']') => {
                    self.i += 1;
                    return true;
                }
                _ => return false,
            }
        }
    }
}

/// Whether `value` parses as a Python type expression opened by a typing constructor
/// or a union naming a builtin type; see the module comment.
pub(super) fn is_type_expression(value: &str) -> bool {
    let mut p = Parser {
        b: value.as_bytes(),
        i: 0,
        depth: 0,
        seen: Seen::default(),
    };
    p.union() && p.i == p.b.len() && (p.seen.typing_head || (p.seen.union && p.seen.builtin))
}

/// The text within `before` bytes before `at` and `after` bytes after it, cut to
/// character boundaries.
fn around(text: &str, at: usize, before: usize, after: usize) -> &str {
    let mut s = at.saturating_sub(before);
    while s > 0 && !text.is_char_boundary(s) {
        s -= 1;
    }
    let mut e = (at + after).min(text.len());
    while e < text.len() && !text.is_char_boundary(e) {
        e += 1;
    }
    text.get(s..e).unwrap_or("")
}

/// Whether `value` is unpadded base64url of `min` to `max` characters.
fn is_base64url(value: &str, min: usize, max: usize) -> bool {
    (min..=max).contains(&value.len())
        && value
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// Whether `value`, assigned to `name` at `start`, is an ACME challenge's token; see
/// the module comment.
pub(super) fn in_acme_challenge(text: &str, start: usize, name: &str, value: &str) -> bool {
    if name != "token" || !is_base64url(value, 16, 64) {
        return false;
    }
    let near = around(text, start, 1024, 256);
    [
        "http-01",
        "dns-01",
        "tls-alpn-01",
        "dns-account-01",
        "acme-challenge",
        "acme.",
        "acme::",
        "/acme/",
        "instant_acme",
    ]
    .iter()
    .any(|w| near.contains(w))
}

/// Whether `value`, assigned to `name` at `start`, is a Web Push subscription's `auth`
/// secret; see the module comment.
pub(super) fn is_push_subscription_auth(text: &str, start: usize, name: &str, value: &str) -> bool {
    let body = value.strip_suffix("==").unwrap_or(value);
    if !name.eq_ignore_ascii_case("auth") || !is_base64url(body, 22, 22) {
        return false;
    }
    let near = around(text, start, 1024, 1024).to_ascii_lowercase();
    near.contains("p256dh") || near.contains("vapid")
}

/// Whether `value` (base64, either alphabet) decodes to text holding a `:`, as a
/// Docker config's `auth` (`user:password`) does.
pub(super) fn decodes_to_user_pass(value: &str) -> bool {
    decode_base64(value).is_some_and(|d| {
        d.contains(&b':') && std::str::from_utf8(&d).is_ok_and(|s| !s.starts_with(':'))
    })
}

/// Whether a Docker config match (`"auth": "…"`, `"identitytoken": "…"`) is a
/// credential: an identity token always, an `auth` when it decodes to `user:password`.
pub(super) fn docker_auth_is_secret(text: &str, start: usize, end: usize) -> bool {
    let Some(m) = text.get(start..end) else {
        return true;
    };
    if !m.starts_with("\"auth\"") {
        return true;
    }
    let value = m
        .rsplit_once(':')
        .map_or("", |(_, v)| v)
        .trim()
        .trim_matches('"');
    decodes_to_user_pass(value)
}

/// PEM labels whose body is public data.
const PUBLIC_PEM: &[&[u8]] = &[
    b"CERTIFICATE-----",
    b"CERTIFICATE REQUEST-----",
    b"NEW CERTIFICATE REQUEST-----",
    b"TRUSTED CERTIFICATE-----",
    b"X509 CRL-----",
    b"PUBLIC KEY-----",
    b"RSA PUBLIC KEY-----",
    b"PKCS7-----",
];

/// How far before a match a PEM header is looked for (a 4096-bit certificate chain's
/// body is a few kilobytes).
const PEM_REACH: usize = 16 * 1024;

/// Whether `at` lies inside the body of a PEM block of public data (a certificate, a
/// CSR, a public key): the last `-----BEGIN ` before it has one of those labels and
/// no `-----END ` comes between.
pub(super) fn in_public_pem_block(bytes: &[u8], at: usize) -> bool {
    let from = at.saturating_sub(PEM_REACH);
    let Some(window) = bytes.get(from..at) else {
        return false;
    };
    let Some(begin) = window.windows(11).rposition(|w| w == b"-----BEGIN ") else {
        return false;
    };
    let label = &window[begin + 11..];
    let ended = label.windows(9).any(|w| w == b"-----END ");
    !ended && PUBLIC_PEM.iter().any(|l| label.starts_with(l))
}

/// Whether an unquoted `value` is a lower-case name and `=`, with a quote right after
/// (`op="view.authenticate": description="authenticate"`, logfmt's `key="…"`): the
/// value's name, not the value.
pub(super) fn is_keyword_argument(value: &str, next: Option<char>) -> bool {
    let Some(name) = value.strip_suffix('=') else {
        return false;
    };
    matches!(next, Some('"' | '\''))
        && name.starts_with(|c: char| c.is_ascii_lowercase())
        && name.bytes().all(|b| b.is_ascii_lowercase() || b == b'_')
}
