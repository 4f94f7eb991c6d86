//! Tests of the judgements made for held-out-19's classes (`secret_locator`): entry
//! points, words with a counting run, key files in URLs, host names, the shell's
//! `$PWD`, types named after the credential word, XPath queries, a minified setting's
//! fallback to `null`, a possessive Basic password, a masked token and a token prefix
//! inside base64url data. Each false positive is shown not firing, a real secret of the
//! same shape firing, and the last test counts how often random values take the new
//! shapes.

use super::redact::Redactor;
use super::secret_locator::{
    has_masked_tail, is_defaulted_binding, is_entry_point, is_glued_in_base64url, is_host_setting,
    is_key_file, is_named_type, is_worded_counter, is_xpath,
};
use super::test_random::{random, xorshift, B64URL, BASE62, PASSWORD};

/// Standard base64 with padding, for Basic headers of random passwords.
fn base64(data: &[u8]) -> String {
    const A: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in data.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, &b)| n | u32::from(b) << (16 - 8 * i));
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(A[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// Whether the redactor leaves `text` as it is.
fn kept(r: &Redactor, text: &str) -> bool {
    r.redact(text).unwrap().text == text
}

/// Whether the redactor removes `secret` from `text`.
fn caught(r: &Redactor, text: &str, secret: &str) -> bool {
    !r.redact(text).unwrap().text.contains(secret)
}

#[test]
fn entry_points_and_type_names_are_code() {
    let r = Redactor::builtin().unwrap();
    for text in [
        "v3oauth2clientcredential = keystoneauth1.loading._plugins.identity.v3:OAuth2ClientCredential\n",
        "v3samlpassword = keystoneauth1.extras._saml2._loading:Saml2Password\n",
        "v3samlpassword = \"keystoneauth1.extras._saml2._loading:Saml2Password\"\n",
        "__all__ = ('V3Saml2Password', 'V3ADFSPassword')\n",
        "    def _sign(self, request: httpx2.Request, *, auth: BedrockAwsAuth, body: bytes) -> None:\n",
        ".extraSigners):null,this.networkPassphrase=r.networkPassphrase||null,this.sorobanData=r.\n",
    ] {
        assert!(kept(r, text), "{text}");
    }
    assert!(is_entry_point("keystoneauth1.loading:Plugin.load"));
    assert!(!is_entry_point("loading:Attr"));
    assert!(!is_entry_point("Keystone.Loading:Attr"));
    assert!(is_named_type("auth", "BedrockAwsAuth"));
    assert!(!is_named_type("auth", "Auth"));
    assert!(!is_named_type("pwd", "BedrockPwd"));
    assert!(is_defaulted_binding(
        "networkPassphrase",
        "r.networkPassphrase||null"
    ));
    assert!(!is_defaulted_binding(
        "networkPassphrase",
        "r.networkPassphrase||x9Kq"
    ));
    let mut next = xorshift(0x1319_8A2E_0370_7344);
    for _ in 0..20 {
        // A random value after the same keywords is caught, quoted or not.
        let key = random(&mut next, BASE62, 24);
        for (text, secret) in [
            (format!("v3samlpassword = {key}\n"), key.clone()),
            (format!("v3samlpassword = \"{key}\"\n"), key.clone()),
            (format!("__all__ = ('Password', '{key}')\n"), key.clone()),
            (format!("auth: {key}\n"), key.clone()),
            (
                format!("this.networkPassphrase=\"{key}\"||null\n"),
                key.clone(),
            ),
        ] {
            assert!(caught(r, &text, &secret), "{text}");
        }
    }
}

#[test]
fn made_up_tokens_hosts_and_the_working_directory_are_no_secrets() {
    let r = Redactor::builtin().unwrap();
    for text in [
        "    TOKEN_RESPONSE = {\"access_token\": \"hf_oauth_123\", \"refresh_token\": \"rt_123\", \"expires_in\": 2592000}\n",
        "_AUTH_HOST = \"mtls.auth.openai.com\"\n",
        "          docker run --rm -v \"$PWD:/workspace:ro\" -w /tmp -e RID \\\n",
        "        'password': '/String/Key[text()=\"Password\"]/../Value[text()=\"{}\"]/../..',\n",
        "TOKEN = \"hf_HubCITokenXXXXXXXXXXXXXXXXXXXXX\"\n",
    ] {
        assert!(kept(r, text), "{text}");
    }
    assert!(is_worded_counter("hf_oauth_123"));
    assert!(!is_worded_counter("hf_oauth_124"));
    assert!(!is_worded_counter("hf_xq_123"));
    assert!(is_host_setting("AUTH_HOST", "mtls.auth.openai.com"));
    assert!(!is_host_setting("AUTH_TOKEN", "mtls.auth.openai.com"));
    assert!(!is_host_setting("AUTH_HOST", "Xk9.q2Lm.7Zp"));
    assert!(is_xpath("/String/Key[text()="));
    assert!(is_xpath("/a/b[@id"));
    assert!(!is_xpath("/String[text()="));
    assert!(has_masked_tail(b"hf_HubCITokenXXXXXXXXXXXXXXXXXXXXX\""));
    assert!(!has_masked_tail(b"hf_HubCITokenXXXXXXXXXXX"));
    let mut next = xorshift(0xA409_3822_299F_31D0);
    for _ in 0..20 {
        let body = random(&mut next, BASE62, 34);
        for (text, secret) in [
            // A random token of the same issuer, with or without a partial mask.
            (format!("TOKEN = \"hf_{body}\"\n"), body.clone()),
            (format!("TOKEN = \"hf_{body}XXXXXXXX\"\n"), body.clone()),
            // A random value under a host's name, and `PWD=` set, not read.
            (format!("_AUTH_HOST = \"{body}\"\n"), body.clone()),
            (format!("PWD={body}\n"), body.clone()),
            // A random token beside words and a counting run.
            (
                format!("{{\"access_token\": \"hf_oauth_{body}\"}}\n"),
                body.clone(),
            ),
        ] {
            assert!(caught(r, &text, &secret), "{text}");
        }
    }
}

#[test]
fn key_files_possessive_basic_passwords_and_base64url_slices_are_no_credentials() {
    let r = Redactor::builtin().unwrap();
    let sig = "fo4fx8S0NiTsVa9wIat3BBlck3HmwbduMP7Web7Rhf_Pj3lfhVrZ0p5nKFizbacQcK4mVwCM8MPaFEN6xAIwqLzFYWIwc_sUKxRq2WLg3RvIbBl0-TesJfzSPWMJGcq4iropcn-JW8XFQVJyf4KBFuwImpXq1wrOalOjIgAk5nGiYxLxK3feeOoG22uBNkfg_q";
    for text in [
        "#\tcu = KerberosClientFactory.from_url('kerberos+keytab://www.test.corp:app2.keytab@10.10.10.2')\n".to_string(),
        "            'Authorization', 'Basic bXlOYW1lOm15UGFzc3dvcmQ='\n".to_string(),
        format!("    \"signature\": \"{sig}\",\n"),
    ] {
        assert!(kept(r, &text), "{text}");
    }
    assert!(is_key_file("app2.keytab"));
    assert!(!is_key_file("app2.KEYTAB"));
    let bytes = sig.as_bytes();
    let at = sig.find("hf_").unwrap();
    assert!(is_glued_in_base64url(bytes, at, at + 52, bytes.len()));
    assert!(!is_glued_in_base64url(b"%3Dhf_abc-d", 3, 9, 11));
    let mut next = xorshift(0x0823_2F0A_4C3A_2B1E);
    for _ in 0..20 {
        let pw = random(&mut next, BASE62, 18);
        let token = random(&mut next, BASE62, 34);
        for (text, secret) in [
            // A random password in a keytab URL, before a key file's name or after it.
            (
                format!("kerberos+keytab://www.test.corp:{pw}@10.10.10.2\n"),
                pw.clone(),
            ),
            (
                format!("kerberos+password://user:{pw}.keytab.{pw}@host\n"),
                pw.clone(),
            ),
            // A token after a short run or a `%3D`, or glued with no base64url after it.
            (format!("url?x=ab12hf_{token}&y=1\n"), token.clone()),
            (format!("token%3Dhf_{token}-x\n"), token.clone()),
        ] {
            assert!(caught(r, &text, &secret), "{text}");
        }
        // A random Basic password after `my`.
        let basic = base64(format!("myName:my{pw}").as_bytes());
        let text = format!("Authorization: Basic {basic}\n");
        assert!(caught(r, &text, &basic), "{text}");
    }
}

#[test]
fn random_values_rarely_take_these_shapes() {
    let mut next = xorshift(0x3F84_D5B5_B547_0917);
    let (mut entry, mut counter, mut key_file, mut host, mut typed) = (0, 0, 0, 0, 0);
    let (mut xpath, mut masked) = (0, 0);
    let dotted = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJ0123456789._:/[@-";
    for _ in 0..200_000 {
        let pw = random(&mut next, PASSWORD, 16);
        counter += usize::from(is_worded_counter(&pw));
        key_file += usize::from(is_key_file(&pw));
        host += usize::from(is_host_setting("AUTH_HOST", &pw));
        let shaped = random(&mut next, dotted, 24);
        entry += usize::from(is_entry_point(&shaped));
        xpath += usize::from(is_xpath(&shaped));
        host += usize::from(is_host_setting("AUTH_HOST", &shaped.to_ascii_lowercase()));
        key_file += usize::from(is_key_file(&format!("{}.pem", &pw[..1])));
        typed += usize::from(is_named_type("auth", &random(&mut next, BASE62, 20)));
        let token = random(&mut next, B64URL, 40);
        masked += usize::from(has_masked_tail(token.as_bytes()));
    }
    assert_eq!(entry, 0);
    assert_eq!(counter, 0);
    assert_eq!(key_file, 0);
    assert_eq!(host, 0);
    assert_eq!(typed, 0);
    assert_eq!(xpath, 0);
    assert_eq!(masked, 0);
}
