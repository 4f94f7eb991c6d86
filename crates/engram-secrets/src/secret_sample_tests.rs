//! Tests of the judgements made for held-out-17's classes (`secret_sample` and
//! `secret_excerpt`): a known-answer test vector's token, the start of an RSA key shown
//! in a docstring, values that disown themselves, a made-up account's credentials, a
//! possessive placeholder, a message string's keyword followed by concatenation, a
//! list of names, a type's name as Basic credentials and a `$skiptoken`. Each false
//! positive is shown not firing, a real secret of the same shape firing, and the last
//! test counts how often random values take the new shapes.

use super::redact::Redactor;
use super::secret_excerpt::is_pem_excerpt;
use super::secret_sample::{
    closes_message_literal, in_known_answer_vector, is_disowned, is_name_list, is_possessive_name,
};
use super::test_random::{random, xorshift, B64URL, BASE62, BASE64, LOWER, PASSWORD};

/// Whether the redactor leaves `text` as it is.
fn kept(r: &Redactor, text: &str) -> bool {
    r.redact(text).unwrap().text == text
}

/// Whether the redactor removes `secret` from `text`.
fn caught(r: &Redactor, text: &str, secret: &str) -> bool {
    !r.redact(text).unwrap().text.contains(secret)
}

/// A PASETO test vector's record around `token`, as the suites write it.
fn vector(token: &str) -> String {
    format!(
        "    {{\n      \"name\": \"4-E-1\",\n      \"expect-fail\": false,\n      \"key\": \"707172737475767778797a7b7c7d7e7f808182838485868788898a8b8c8d8e8f\",\n      \"nonce\": \"0000000000000000000000000000000000000000000000000000000000000000\",\n      \"token\": \"{token}\",\n      \"payload\": \"{{\\\"data\\\":\\\"this is a secret message\\\"}}\",\n      \"footer\": \"\",\n      \"implicit-assertion\": \"\"\n    }},\n"
    )
}

#[test]
fn known_answer_vectors_tokens_are_public() {
    let r = Redactor::builtin().unwrap();
    let token = "v4.local.32VIErrEkmY4JVILovbmfPXKW9wT1OdQepjMTC_MOtjA4kiqw7_tcaOM5GNEcnTxl60WkwMsYXw6FSNb_UdJPXjpzm0KW9ojM5f4O2mRvE2IcweP-PRdoHjd5-RHCiExR1IK6t6-tyebyWG6Ov7kKvBdkrrAJ837lKP3iDag2hzUPHu";
    let text = vector(token);
    assert!(!caught(r, &text, token), "{text}");
    assert!(in_known_answer_vector(
        &text,
        text.find("token").unwrap(),
        "token"
    ));
    // Without the key before it or the payload after it, the same token is an issued
    // one: caught.
    let alone = format!("{{\"token\": \"{token}\", \"expires\": 3600}}\n");
    assert!(caught(r, &alone, token), "{alone}");
    let no_key = text.replace("\"key\"", "\"kid\"");
    assert!(caught(r, &no_key, token), "{no_key}");
    let no_payload = text.replace("\"payload\"", "\"claims\"");
    assert!(caught(r, &no_payload, token), "{no_payload}");
    // Another record's key does not count: a `"token"` field between ends the record.
    let neighbour = format!(
        "{{\"key\": \"k\", \"token\": \"x\"}}\n{{\"token\": \"{token}\", \"payload\": 1}}\n"
    );
    assert!(caught(r, &neighbour, token), "{neighbour}");
    // Only a field named `token` is judged so.
    let mut next = xorshift(0x510E_527F_ADE6_82D1);
    for _ in 0..20 {
        let secret = random(&mut next, B64URL, 40);
        let text = vector("v").replace("\"token\": \"v\"", &format!("\"secret\": \"{secret}\""));
        assert!(caught(r, &text, &secret), "{text}");
    }
}

#[test]
fn an_rsa_keys_first_line_is_an_excerpt() {
    let r = Redactor::builtin().unwrap();
    let doc = "        :param private_key: [APN only] The URL encoded representation of the private key. For example,\n`-----BEGIN RSA PRIVATE KEY----- MIIEpQIBAAKCAQEAuyf/lNrH9ck8DmNyo3fGgvCI1l9s+cmBY3WIz+cUDqmxiieR. -----END RSA PRIVATE KEY-----`\n";
    assert!(kept(r, doc), "{doc}");
    let header_end = doc.find("KEY-----").unwrap() + 8;
    assert!(is_pem_excerpt(doc.as_bytes(), header_end));
    // The same key in full (a 2048-bit body's length) is caught, and so is its start
    // without an END line (a key cut by whatever wrote the text).
    let mut next = xorshift(0x9B05_688C_2B3E_6C1F);
    let body = format!("MIIEpQIBAAKCAQEAuyf{}", random(&mut next, BASE64, 1573));
    let lines: Vec<&str> = body
        .as_bytes()
        .chunks(64)
        .map(|c| std::str::from_utf8(c).unwrap())
        .collect();
    let full = format!(
        "-----BEGIN RSA PRIVATE KEY-----\n{}\n-----END RSA PRIVATE KEY-----\n",
        lines.join("\n")
    );
    assert!(caught(r, &full, lines[5]), "{full}");
    assert!(!is_pem_excerpt(full.as_bytes(), 31));
    let cut = format!(
        "key = \"\"\"-----BEGIN RSA PRIVATE KEY-----\n{}\n",
        lines[..3].join("\n")
    );
    assert!(caught(r, &cut, lines[1]), "{cut}");
    // An EC key's secret scalar comes right after its header: even its first line is
    // caught.
    let ec = format!(
        "-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEI{}\n-----END EC PRIVATE KEY-----\n",
        random(&mut next, BASE64, 40)
    );
    assert!(caught(r, &ec, &ec[35..70]), "{ec}");
    assert!(!is_pem_excerpt(ec.as_bytes(), 30));
    // Nor is the same excerpt without a mark of the cut.
    let unmarked = doc.replace("R. -----END", "R -----END");
    assert!(!kept(r, &unmarked), "{unmarked}");
    // A key elided in its middle shows its end, where the private values are: caught.
    let tail = "gtUcukumVPtrDhGK9i/PG3Q=";
    let middle = format!("KEY = \"\"\"\n-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQCiStSwvoSk61uf\n...\nrfnteLIERvzd4rLi9WjTahfKA2Mq3YNIe3Hw8IDrrczJgd/XkEaENGYXmmNCX22B\n{tail}\n-----END PRIVATE KEY-----\n\"\"\"\n");
    assert!(caught(r, &middle, tail), "{middle}");
    // An encrypted PEM's armour is never judged.
    let armoured = "-----BEGIN RSA PRIVATE KEY-----\nProc-Type: 4,ENCRYPTED\nDEK-Info: AES-128-CBC,3F17\n\nMIIEpQIBAAKCAQEAuyf/lNrH9ck8DmNyo3fGgvCI1l9s\n-----END RSA PRIVATE KEY-----\n";
    assert!(!is_pem_excerpt(armoured.as_bytes(), 31));
}

#[test]
fn documentation_samples_say_what_they_are() {
    let r = Redactor::builtin().unwrap();
    for text in [
        "[bot1]\nclient_id=revokedpDQy3xZ\nclient_secret=revokedoqsMk5nHCJTHLrwgvHpr\npassword=invalidht4wd50gk\nusername=fakebot1\n",
        "    reddit = praw.Reddit(\n        client_id=\"SI8pN3DSbt0zor\",\n        client_secret=\"xaxkj7HNh8kwg8e5t4m6KvSrbTI\",\n        password=\"1guiwevlfo00esyy\",\n        user_agent=\"testscript by u/fakebot3\",\n        username=\"fakebot3\",\n    )\n",
        "    const passphrase = `yourPassphrase`; // what the private key is encrypted with\n",
    ] {
        assert!(kept(r, text), "{text}");
    }
    assert!(is_disowned("revokedoqsMk5nHCJTHLrwgvHpr"));
    assert!(is_disowned("INVALIDht4wd50gk"));
    assert!(!is_disowned("invalid"));
    assert!(!is_disowned("iNvAlIdht4wd50gk"));
    assert!(is_possessive_name("yourPassphrase", "passphrase"));
    assert!(is_possessive_name("myClientSecret", "secret"));
    assert!(!is_possessive_name("yourXk9QzLm2", "passphrase"));
    // The same credentials for a real-looking account, or values that do not disown
    // themselves, are caught.
    let mut next = xorshift(0x1F83_D9AB_5BE0_CD19);
    for _ in 0..20 {
        let secret = random(&mut next, BASE62, 27);
        let pw = random(&mut next, PASSWORD, 16);
        let text = format!(
            "    reddit = praw.Reddit(\n        client_secret=\"{secret}\",\n        password=\"{pw}\",\n        username=\"alice_w\",\n    )\n"
        );
        assert!(caught(r, &text, &secret), "{text}");
        assert!(caught(r, &text, &pw), "{text}");
        let ini = format!("[bot]\nclient_secret=re{secret}\nusername=alice_fake\n");
        assert!(caught(r, &ini, &secret), "{ini}");
    }
    // A made-up account further than five lines away does not count.
    let far = format!(
        "password=\"{}\"\n\n\n\n\n\n\nusername=\"fakebot3\"\n",
        random(&mut next, BASE62, 20)
    );
    assert!(!kept(r, &far), "{far}");
}

#[test]
fn messages_names_types_and_cursors_are_no_values() {
    let r = Redactor::builtin().unwrap();
    for text in [
        "if(h.hex.length%2!=0){throw\"Mac: wrong hex password: \"+h.hex}g=h.hex}if(h.utf8!==undefined){g=utf8tohex(h.utf8)}\n",
        "{\"version\":3,\"names\":[\"secretSubkeyPackets\",\"subkeyPassphrase\",\"decrypt\"]}\n",
        "        It injects the 'Authorization: Basic Base64String===' header\n",
        "\"nextLink\": \"https://management.azure.com/subscriptions/9999/providers/Microsoft.Compute/disks?api-version=2021-11-01&$skiptoken=1!/Subscriptions/99999999-9999-9999-9999-999999999999/ResourceGroups/000\"\n",
    ] {
        assert!(kept(r, text), "{text}");
    }
    let text = "throw\"Mac: wrong hex password: \"+h.hex}";
    assert!(closes_message_literal(
        text,
        text.find("password").unwrap(),
        "+h.hex}",
        b'"'
    ));
    assert!(is_name_list("subkeyPassphrase", "secretSubkeyPackets"));
    assert!(!is_name_list("subkeyXq9Lmz", "secretSubkeyPackets"));
    let mut next = xorshift(0x6A09_E667_BB67_AE85);
    for _ in 0..20 {
        // A password that opens with `+`, assigned outside any message, is caught.
        let pw = format!("+{}", random(&mut next, BASE62, 18));
        let text = format!("config = {{password: \"{pw}\"}}\n");
        assert!(caught(r, &text, &pw), "{text}");
        // A secret paired with a name, and real Basic credentials, are caught.
        let secret = random(&mut next, BASE62, 24);
        let pair = format!("(\"secret\", \"{secret}\")\n");
        assert!(caught(r, &pair, &secret), "{pair}");
        let user_pass = format!("svc:{}", random(&mut next, BASE62, 20));
        let basic = base64_of(user_pass.as_bytes());
        let header = format!("Authorization: Basic {basic}\n");
        assert!(caught(r, &header, &basic), "{header}");
        // An access token in a query is caught, a skip token is not.
        let token = random(&mut next, BASE62, 32);
        let query = format!("https://api.example.net/items?access_token={token}&n=1\n");
        assert!(caught(r, &query, &token), "{query}");
    }
}

#[test]
fn random_values_rarely_take_these_shapes() {
    let mut next = xorshift(0x3C6E_F372_A54F_F53A);
    let mut disowned = 0;
    let mut possessive = 0;
    let mut names = 0;
    let mut concatenation = 0;
    for _ in 0..200_000 {
        let v = random(&mut next, BASE62, 20);
        disowned += usize::from(is_disowned(&v));
        // Random values after `your` or `my`, and after a lower-case word.
        possessive += usize::from(is_possessive_name(&format!("your{v}"), "passphrase"));
        // Letters only, as a name is written.
        let letters = random(&mut next, &BASE62[..52], 16);
        names += usize::from(is_name_list(
            &format!("{}{letters}", random(&mut next, LOWER, 4)),
            "secret",
        ));
        // A random password that opens with `+`, assigned outside a message string.
        let pw = format!("+{}", random(&mut next, PASSWORD, 15));
        let text = format!("password: \"{pw}");
        concatenation += usize::from(closes_message_literal(
            &text,
            text.find("password").unwrap(),
            &pw,
            b'"',
        ));
    }
    assert_eq!(disowned, 0);
    assert_eq!(possessive, 0);
    assert_eq!(names, 0);
    // Without a message string's opening quote before the keyword, no value is
    // concatenation, whatever it holds.
    assert_eq!(concatenation, 0);
}

/// Standard base64 with padding (the scanner's decoder is the other way only).
fn base64_of(data: &[u8]) -> String {
    let mut out = String::new();
    for chunk in data.chunks(3) {
        let n =
            chunk.iter().fold(0u32, |acc, &b| acc << 8 | u32::from(b)) << (8 * (3 - chunk.len()));
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(BASE64[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}
