//! Tests of the judgements made for held-out-16's classes (`secret_context`): a type in
//! a string, an ACME challenge's token, a Web Push subscription's `auth`, a Docker
//! `auth` that is no `user:password`, a line of a public PEM body read as a Twitter
//! bearer token, an empty string literal followed by code, and a keyword argument's
//! name. Each false positive is shown not firing, a near miss of the same shape holding
//! random characters firing, and the last test counts how often random values take
//! the new shapes.

use super::redact::Redactor;
use super::secret_context::{
    decodes_to_user_pass, in_public_pem_block, is_keyword_argument, is_type_expression,
};
use super::test_random::{random, xorshift, B64URL, BASE62, BASE64, PASSWORD};

/// Whether the redactor leaves `text` as it is.
fn kept(r: &Redactor, text: &str) -> bool {
    r.redact(text).unwrap().text == text
}

/// Whether the redactor removes `secret` from `text`.
fn caught(r: &Redactor, text: &str, secret: &str) -> bool {
    !r.redact(text).unwrap().text.contains(secret)
}

#[test]
fn python_string_annotations_are_types() {
    let r = Redactor::builtin().unwrap();
    for text in [
        "    input_tokens: \"Optional[int]\" = None,\n",
        "    secret_key: \"Optional[str]\" = None\n",
        "    streaming_message_total_token_usage: \"Optional[CompletionUsage]\",\n",
        "    token_usage: \"Union[CompletionUsage, ResponseUsage]\", attr_name: str\n",
        "    count_tokens: \"Callable[..., Any]\",\n",
        "    access_token: \"typing.Optional[dict[str, list[int]]]\" = None\n",
        "    api_tokens: \"Callable[[], None]\"\n",
    ] {
        assert!(kept(r, text), "{text}");
    }
    for v in [
        "int | None",
        "Optional[int]",
        "list[str]",
        "Dict[str, Any] | None",
    ] {
        assert!(is_type_expression(v), "{v}");
    }
    // A subscript must open with a typing constructor, a union name a builtin type.
    for v in [
        "Xk9Qz[Ab7]",
        "Foo[int]",
        "Ab | Cd",
        "Optional[int",
        "Optional[]]",
    ] {
        assert!(!is_type_expression(v), "{v}");
    }
    let mut next = xorshift(0x1F83_D9AB_FB41_BD6B);
    for _ in 0..20 {
        let key = random(&mut next, BASE62, 24);
        assert!(
            caught(r, &format!("secret_key: \"{key}\"\n"), &key),
            "{key}"
        );
        let bracketed = format!(
            "{}[{}]",
            random(&mut next, BASE62, 8),
            random(&mut next, BASE62, 12)
        );
        assert!(
            caught(r, &format!("token = \"{bracketed}\"\n"), &bracketed),
            "{bracketed}"
        );
    }
}

#[test]
fn acme_challenge_tokens_are_public() {
    let r = Redactor::builtin().unwrap();
    let rfc = "        const CHALLENGE: &str = r#\"{\n          \"type\": \"dns-01\",\n          \"url\": \"https://example.com/acme/chall/Rg5dV14Gh1Q\",\n          \"status\": \"pending\",\n          \"token\": \"evaGxfADs6pSRb2LAv9IZf17Dt3juxGJ-PCt92wr-oA\"\n        }\"#;\n";
    let python = "        from acme.challenges import DNS\n        jmsg = {\n            'type': 'dns',\n            'token': 'evaGxfADs6pSRb2LAv9IZf17Dt3juxGJ-PCt92wr-oA',\n        }\n";
    assert!(kept(r, rfc), "{rfc}");
    assert!(kept(r, python), "{python}");
    let mut next = xorshift(0x5851_F42D_4C95_7F2D);
    for _ in 0..20 {
        let token = random(&mut next, B64URL, 43);
        // Without an ACME challenge near it, the same token is a secret.
        let bare = format!("{{\n  \"type\": \"bearer\",\n  \"token\": \"{token}\"\n}}\n");
        assert!(caught(r, &bare, &token), "{token}");
        // Beside one, a credential's name is still judged: only `token` is the challenge's.
        let named = format!("{{\"type\": \"http-01\", \"access_token\": \"{token}\"}}\n");
        assert!(caught(r, &named, &token), "{token}");
        // Standard base64 with padding is no ACME token (those are unpadded base64url).
        let std = format!("{}==", random(&mut next, BASE64, 42));
        let padded = format!("{{\"type\": \"http-01\", \"token\": \"{std}\"}}\n");
        assert!(caught(r, &padded, &std), "{std}");
    }
}

#[test]
fn a_push_subscriptions_auth_is_no_credential() {
    let r = Redactor::builtin().unwrap();
    let readme = "    \"keys\": {\n      \"p256dh\": \"BL7ELU24fJTAlH5Kyl8N6BDCac8u8li_U5PIwG963MOvdYs9s7LSzj8x_7v7RFdLZ9Eap50PiiyF5K0TDAis7t0\",\n      \"auth\": \"juarI8x__VnHvsOgfeAPHg\"\n    }\n";
    assert!(kept(r, readme), "{readme}");
    let shell = "  web-push send-notification --vapid-subject=mailto:a@example.com \\\n    --auth=juarI8x__VnHvsOgfeAPHg \\\n";
    assert!(kept(r, shell), "{shell}");
    let mut next = xorshift(0x2F7B_1E3A_77C5_90D1);
    for _ in 0..20 {
        // A 16-byte value under `auth` with no subscription near it is judged as before.
        let auth = random(&mut next, B64URL, 22);
        assert!(
            caught(r, &format!("\"auth\": \"{auth}\"\n"), &auth),
            "{auth}"
        );
        // Beside `p256dh`, a longer value is no subscription's secret.
        let long = random(&mut next, B64URL, 43);
        let sub = format!("{{\"p256dh\": \"BL7E\", \"auth\": \"{long}\"}}\n");
        assert!(caught(r, &sub, &long), "{long}");
    }
}

#[test]
fn a_docker_auth_is_user_and_password() {
    let r = Redactor::builtin().unwrap();
    let real = "dXNlcjpnaHBfc2VjcmV0cGFzc3dvcmQ=";
    assert!(decodes_to_user_pass(real));
    let text = format!("{{\"auths\": {{\"ghcr.io\": {{\"auth\": \"{real}\"}}}}}}\n");
    let found = r.find(&text).unwrap();
    assert!(
        found
            .iter()
            .any(|f| r.rule(f.rule).is_some_and(|x| x.id == "docker_config_auth")),
        "{text}"
    );
    assert!(!decodes_to_user_pass("juarI8x__VnHvsOgfeAPHg"));
    // A random `auth` that decodes to no `user:password` is still caught, by the
    // generic rule's entropy.
    let mut next = xorshift(0x8E5A_1C3F_0B7D_2469);
    for _ in 0..20 {
        let auth = random(&mut next, BASE64, 32);
        let config = format!("{{\"auths\": {{\"r.io\": {{\"auth\": \"{auth}\"}}}}}}\n");
        assert!(caught(r, &config, &auth), "{auth}");
    }
}

#[test]
fn a_public_pem_body_holds_no_bearer_token() {
    let r = Redactor::builtin().unwrap();
    let line = "AAAAAAAAAAAAAAAAAAAAAYcQo74y8yBux10JVgzumFhexTANBgkqhkiG9w0B";
    let csr = format!(
        "-----BEGIN CERTIFICATE REQUEST-----\nMIICojCCAYoCAQAwADCCASIwDQYJKoZIhvcNAQEBBQADggEPADCCAQoCggEBAKT\n{line}\n-----END CERTIFICATE REQUEST-----\n"
    );
    assert!(kept(r, &csr), "{csr}");
    assert!(in_public_pem_block(csr.as_bytes(), csr.find(line).unwrap()));
    // After the block ends, or in no block, a Twitter token is caught.
    let issued = "AAAAAAAAAAAAAAAAAAAAAMLheAAAAAAA0%2BuSeid%2BULvsea4JtiGRiSDSJSI%3DEUifiRBkKG5E2XzMDjRfl76ZC9Ub0wnz4XsNiRVBChTYbJcE3F";
    let after = format!("{csr}TWITTER_BEARER={issued}\n");
    assert!(caught(r, &after, issued));
    assert!(!in_public_pem_block(
        after.as_bytes(),
        after.find(issued).unwrap()
    ));
    let mut next = xorshift(0x3C6E_F372_FE94_F82B);
    for _ in 0..20 {
        let token = format!("AAAAAAAAAAAAAAAAAAAAA{}", random(&mut next, BASE62, 80));
        assert!(caught(r, &format!("bearer = {token}\n"), &token), "{token}");
    }
}

#[test]
fn empty_strings_and_argument_names_are_no_values() {
    let r = Redactor::builtin().unwrap();
    for text in [
        "if(password==null){password=\"\"}if(wordlist==null){wordlist=LangEn.wordlist()}assertPrivate(guard,_guard$1,\"fromPhrase\")\n",
        "- op=\"view.authenticate\": description=\"authenticate\"\n",
        "WWW-Authenticate: Bearer error_description=\"The access token expired\"\n",
    ] {
        assert!(kept(r, text), "{text}");
    }
    assert!(is_keyword_argument("description=", Some('"')));
    assert!(!is_keyword_argument("description=", None));
    assert!(!is_keyword_argument("Zk5Hc9JdQw3Lx8Rt=", Some('"')));
    let mut next = xorshift(0x6A09_E667_F3BC_C908);
    for _ in 0..20 {
        let pw = random(&mut next, BASE62, 20);
        assert!(caught(r, &format!("password=\"{pw}\"}}\n"), &pw), "{pw}");
        let key = format!("{}=", random(&mut next, BASE62, 19));
        assert!(caught(r, &format!("secret: {key}\n"), &key), "{key}");
    }
}

#[test]
fn random_values_rarely_take_these_shapes() {
    // 200,000 random values with brackets, bars and commas among their characters:
    // none parses as a type expression (a typing constructor's name must open it).
    let mut next = xorshift(0xBB67_AE85_84CA_A73B);
    let mut alphabet = PASSWORD.to_vec();
    alphabet.extend_from_slice(b"[]|, ");
    let typed = (0..200_000)
        .filter(|_| is_type_expression(&random(&mut next, &alphabet, 16)))
        .count();
    assert_eq!(typed, 0);
    // A random 32-byte value in base64 decodes to text with a `:` about never: the
    // decoded bytes must be valid UTF-8 too.
    let user_pass = (0..200_000)
        .filter(|_| decodes_to_user_pass(&random(&mut next, BASE64, 44)))
        .count();
    assert!(user_pass < 20, "{user_pass}");
}
