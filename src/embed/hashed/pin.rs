//! Pins `hash-v2-256` to the bits it produced before the embedder was made faster: a
//! wide, fixed set of texts (code in several languages, prose, Unicode whose lower
//! case is longer or shorter, empty and punctuation-only texts, words around the
//! 64-byte limit, identifiers of every style, repetition, texts of about 1 KiB) and a
//! digest of every vector's f32 bits per kind of text, recorded from that code.

use super::HashedEmbedder;
use crate::embed::Embedder;

/// xorshift64: deterministic texts without an RNG crate.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[(self.next() % items.len() as u64) as usize]
    }
}

const CODE: &[&str] = &[
    "fn parse_http_request(buf: &[u8]) -> Result<Request, ParseError> {\n    let mut headers = HashMap::new();\n    for line in buf.split(|b| *b == b'\\n') { headers.insert(line, ()); }\n    Ok(Request { headers })\n}",
    "impl<'a> Iterator for Tokens<'a> { type Item = Token; fn next(&mut self) -> Option<Token> { self.lexer.next_token() } }",
    "def get_user_by_id(session, user_id: int) -> Optional[User]:\n    \"\"\"Fetch the user, or None.\"\"\"\n    return session.query(User).filter(User.id == user_id).first()\n",
    "class HTTPServer2Handler(BaseHTTPRequestHandler):\n    def do_GET(self):\n        self.send_response(200)\n        self.wfile.write(b'ok')\n",
    "export async function fetchUserProfile(userId: string): Promise<UserProfile> {\n  const res = await fetch(`/api/users/${userId}`);\n  if (!res.ok) throw new Error('failed to fetch');\n  return res.json() as UserProfile;\n}",
    "const XMLHttpRequest = window.XMLHttpRequest; xhr.onreadystatechange = () => { if (xhr.readyState === 4) callback(xhr.responseText); };",
    "func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {\n\tctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)\n\tdefer cancel()\n\ts.mux.ServeHTTP(w, r.WithContext(ctx))\n}",
    "static int parse_config_file(const char *path, struct config *cfg) {\n  FILE *f = fopen(path, \"r\");\n  if (!f) return -ENOENT;\n  while (fgets(buf, sizeof buf, f)) { /* TODO: handle comments */ }\n  fclose(f); return 0;\n}",
    "public class UserRepository implements CrudRepository<User, Long> { @Override public Optional<User> findById(Long id) { return em.find(User.class, id); } }",
    "SELECT u.id, u.email, COUNT(o.id) AS order_count FROM users u LEFT JOIN orders o ON o.user_id = u.id WHERE u.deleted_at IS NULL GROUP BY u.id;",
    "#!/bin/sh\nset -eu\nfor f in \"$@\"; do sha256sum \"$f\" >> checksums.txt; done\nexec ./bin/deploy --env=prod --dry-run\n",
    "<div class=\"nav-bar\"><a href=\"/login\">Sign in</a><button onClick={handleLogout}>Log out</button></div>",
    "__init__ __repr__ _private_helper SCREAMING_SNAKE_CASE kebab-case-name camelCaseName PascalCaseName IOError getHTTP2Server v8Engine a1b2c3 2fa utf8 base64Encode sha256Sum",
];

const PROSE: &[&str] = &[
    "The quick brown fox removes deleted entries from the cache before the eviction thread runs.",
    "Parsing configuration files failed because the parser expected a closing bracket; retried three times, then gave up.",
    "We decided to authenticate users with signed tokens, and to refresh sessions when they expire, logging every sign-in.",
    "Deleting, removing, erasing and dropping records all mean the same thing to the person searching for them.",
    "retry retry retry retrying retried retries — the same word, said again and again, is not again and again the topic",
    "Compute the totals; calculate the averages; the arithmetic module does the math for billing and invoices.",
];

const UNICODE: &[&str] = &[
    "İstanbul ÖZEL straße Überprüfung naïve café MAßE ǅemal",
    "Ελληνικά γράμματα ΣΟΦΊΑ σοφία Ωμέγα",
    "Привет мир ПРОВЕРКА проверка Ёжик",
    "日本語のテキスト 中文文本 한국어 텍스트",
    "emoji 🦀 rust 🚀 launch ✨ sparkle 👩‍💻 coder",
    "combining e\u{301}te\u{301} n\u{303}o A\u{30A}ngstro\u{308}m",
    "مرحبا بالعالم שלום עולם",
    "Kelvin \u{212A}elvin ﬁle ﬂow ΐ ẞtraße ǈ ǋ",
    "mixedİdentifierWithİ getÖzelData HTTPÜberServer",
];

const EDGES: &[&str] = &[
    "",
    " ",
    "\n\t\r",
    "{}();",
    "!@#$%^&*()-+=[]{}|;:',.<>/?`~",
    "a b c d e f x y z",
    "12345 67890 3 14 2024 0x1f 1e9",
    "the a an of to in is it fn let var def",
    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
    "ééééééééééééééééééééééééééééééééé éééééééééééééééééééééééééééééééé",
    "thisIsAVeryLongIdentifierNameThatKeepsGoingAndGoingUntilItIsLong thisIsAVeryLongIdentifierNameThatKeepsGoingAndGoingPastSixtyFourBytes",
    "parseHTTPRequest2 HTTPRequest2Parser parse2HTTP ABCDef aBC ABC abc_DEF_ghi",
    "word word word word word word word word word word word word word word word",
    "ab cd ef gh ij kl mn op qr st uv wx yz ab cd ef gh",
    "x",
    "xy",
    "_",
    "__",
    "a_b",
];

/// Words and separators the 1 KiB texts are drawn from: every kind above, mixed.
const WORDS: &[&str] = &[
    "parse",
    "parsing",
    "parsed",
    "request",
    "response",
    "handler",
    "user",
    "users",
    "delete",
    "remove",
    "erase",
    "drop",
    "auth",
    "login",
    "signin",
    "token",
    "tokens",
    "config",
    "configuration",
    "cache",
    "cached",
    "caching",
    "thread",
    "threads",
    "getUserById",
    "get_user_by_id",
    "HTTPServer",
    "parseHTTPRequest2",
    "XMLHttpRequest",
    "base64Encode",
    "utf8",
    "sha256",
    "Http2Server",
    "__init__",
    "SCREAMING_CASE",
    "the",
    "a",
    "of",
    "fn",
    "let",
    "return",
    "if",
    "else",
    "for",
    "while",
    "self",
    "straße",
    "Überprüfung",
    "İstanbul",
    "проверка",
    "日本語",
    "🦀",
    "café",
    "ǅemal",
    "42",
    "2024",
    "0xff",
    "x",
    "ab",
    "retry",
    "retries",
    "retrying",
    "compute",
    "math",
    "serialize",
    "deserialization",
    "encoder",
    "decoders",
    "database",
    "query",
    "queries",
];

const SEPARATORS: &[&str] = &[
    " ", " ", " ", "\n", "(", ")", ".", "::", ", ", "; ", "->", "\"", "{ ", " }", "_", "-",
];

/// `n` texts of about 1 KiB drawn from [`WORDS`].
fn kib_texts(n: usize) -> Vec<String> {
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    (0..n)
        .map(|_| {
            let mut t = String::with_capacity(1100);
            while t.len() < 1000 {
                t.push_str(rng.pick(WORDS));
                t.push_str(rng.pick(SEPARATORS));
            }
            t
        })
        .collect()
}

/// FNV-1a over the bits of every vector of `texts`, embedded one at a time.
pub(super) fn digest<S: AsRef<str>>(e: &HashedEmbedder, texts: &[S]) -> u64 {
    digest_vectors(texts.iter().map(|t| e.embed_one(t.as_ref())))
}

fn digest_vectors(vectors: impl IntoIterator<Item = Vec<f32>>) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for v in vectors {
        for x in v {
            for b in x.to_bits().to_le_bytes() {
                h ^= u64::from(b);
                h = h.wrapping_mul(0x0000_0100_0000_01b3);
            }
        }
    }
    h
}

#[test]
fn every_kind_of_text_embeds_to_the_bits_it_always_did() {
    let e = HashedEmbedder::default();
    let kib = kib_texts(60);
    assert!(kib.iter().all(|t| (1000..1100).contains(&t.len())));
    let got = [
        ("code", digest(&e, CODE)),
        ("prose", digest(&e, PROSE)),
        ("unicode", digest(&e, UNICODE)),
        ("edges", digest(&e, EDGES)),
        ("kib", digest(&e, &kib)),
    ];
    let want = [
        ("code", 17_255_187_720_216_267_511u64),
        ("prose", 6_239_933_608_586_577_035),
        ("unicode", 3_732_233_233_161_024_055),
        ("edges", 14_904_025_789_167_128_905),
        ("kib", 3_390_170_420_995_725_150),
    ];
    assert_eq!(got, want);
    // Other dimensions stay pinned too: 100 takes the remainder path (not a power of
    // two), and 16 puts dozens of features in each slot, where the order they are
    // summed in shows in the last bits.
    let other: Vec<(usize, u64)> = [100, 16]
        .into_iter()
        .map(|dims| (dims, digest(&HashedEmbedder::new(dims), &kib[..10])))
        .collect();
    assert_eq!(
        other,
        [
            (100, 9_532_918_891_809_485_904),
            (16, 6_402_321_614_560_482_817)
        ]
    );
}

#[test]
fn a_batch_of_200_embeds_as_each_text_alone() {
    let e = HashedEmbedder::default();
    let kib = kib_texts(60);
    let all: Vec<&str> = CODE
        .iter()
        .chain(PROSE)
        .chain(UNICODE)
        .chain(EDGES)
        .copied()
        .chain(kib.iter().map(String::as_str))
        .cycle()
        .take(200)
        .collect();
    let alone: Vec<Vec<f32>> = all.iter().map(|t| e.embed_one(t)).collect();
    let batch = e.embed(&all).expect("embed");
    assert_eq!(batch, alone);
    let here = crate::embed::on_this_thread(|| e.embed(&all)).expect("embed");
    assert_eq!(here, alone);
    assert_eq!(batch.len(), 200);
    assert!(batch.iter().all(|v| v.len() == 256));
}
