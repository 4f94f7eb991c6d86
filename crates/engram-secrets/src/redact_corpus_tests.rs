//! Tests of the redactor on shapes met in the false-positive corpora, corpus by corpus
//! (SDK code, test values, example passwords, ciphertexts, elided values,
//! route templates and code forms): each left as it is, and the same frame with a
//! random value still redacted. Split from `redact_tests.rs`, whose helpers it uses.

use super::tests::{gone, red};

/// Shapes met in the tuning corpus of 2026-11-23 (SDK clients, OAuth libraries, type
/// declarations): code, markers and samples, not credentials.
#[test]
fn sdk_code_key_markers_and_samples_are_not_flagged() {
    for text in [
        "    httpAuthSchemeProvider: config?.httpAuthSchemeProvider ?? defaultS3HttpAuthSchemeProvider,",
        "    const authSchemes = endpoint.properties?.authSchemes;",
        "    setHttpAuthSchemeProvider(httpAuthSchemeProvider: S3HttpAuthSchemeProvider): void;",
        " *   NextContinuationToken: \"1w41l63U0xa8q7smH50vCxyTQqdxo69O3EmK28Bi5PcROI4wI/EyIJg==\",",
        "    [PerformanceEvents.SilentCacheClientAcquireToken, \"SltCacheClientAT\"],",
        "    readonly WWWAuthenticate: \"WWW-Authenticate\";",
        "    let ccsCredential: CcsCredential | undefined = undefined;",
        "BASIC_AUTH_ENCODING = \"dXNlcm5hbWU6cGFzc3dvcmQ=\"",
        "    (\"gcloud\", \"auth\", \"print-access-token\", \"--account=account\"),",
        "        credential_source=cls.CREDENTIAL_SOURCE,",
        "EXECUTABLE_SAML_TOKEN = \"FAKE_SAML_RESPONSE\"",
        "    correct = ('a=b&oauth_nonce=14205877133089081931378988215&'",
        "    'oauth_signature=\"hH5BWYVqo7QI4EmPBUUe9owRUUQ%3D\"')",
        "    uri = auth_base_uri.format('token', 'list+of+scopes', state)",
        "    'http://back.to/me#access_token=abc&expires_in=' + str(self.expires_in)",
        "    let token = \"eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9\";",
        " * // Prints https://abc:123@example.com/",
        "    payload = 'password=bar&username=foo'",
        "_PKCS1_MARKER = (\"-----BEGIN RSA PRIVATE KEY-----\", \"-----END RSA PRIVATE KEY-----\")",
        "#     \"-----BEGIN PRIVATE KEY-----...\",",
        "    _KEY_REGEX = re.compile(b\"-----BEGIN [A-Z ]*PRIVATE KEY-----.+-----END\")",
        "    \"-----BEGIN EC PRIVATE KEY-----\\n<key bytes>\\n-----END EC PRIVATE KEY-----\"",
        "    filename.write(json.dumps({\"type\": \"service_account\"}))",
    ] {
        let out = red(text);
        assert_eq!(out.text, text, "{text} was redacted: {:?}", out.counts);
    }
}

/// The same frames with random values, and keys whose body follows the header across
/// string-literal joins, still go.
#[test]
fn the_same_frames_with_random_values_and_joined_key_literals_are_flagged() {
    for (text, secret) in [
        (
            "  \"access_token\":\"2YotnFZFEjr1zCsicMWpAA\",",
            "2YotnFZFEjr1zCsicMWpAA",
        ),
        (
            "    ('oauth_token', \"kkk9d7dh3k39sjv7\"),",
            "kkk9d7dh3k39sjv7",
        ),
        (
            "https://example.com/cb?access_token=Zk5Hc9Jd0Pa6Sg2U&state=xyz",
            "Zk5Hc9Jd0Pa6Sg2U",
        ),
        (
            "    apiToken: Zk5Hc9Jd0Pa6Sg2Ue4Ti | rest",
            "Zk5Hc9Jd0Pa6Sg2Ue4Ti",
        ),
        (
            "KEY = (\"-----BEGIN RSA PRIVATE KEY-----\\n\"\n       b\"MIICXgIBAAKBgQDk1bxyS8Q8jiheHeYYp4rEKJopeQRRKKpZI4s5iUPwVpupG\\n\")",
            "MIICXgIBAAKBgQDk1bxyS8Q8jiheHeYYp4rEKJopeQRRKKpZI4s5iUPwVpupG",
        ),
        (
            "-----BEGIN RSA PRIVATE KEY-----\nProc-Type: 4,ENCRYPTED\nDEK-Info: AES-128-CBC,0F1E2D3C4B5A69788796A5B4C3D2E1F0\n\nMIICXgIBAAKBgQDk1bxyS8Q8jiheHeYYp4rEKJopeQ\n-----END RSA PRIVATE KEY-----",
            "MIICXgIBAAKBgQDk1bxyS8Q8jiheHeYYp4rEKJopeQ",
        ),
        (
            "{\"type\": \"service_account\", \"private_key_id\": \"x\", \"private_key\": \"-----BEGIN PRIVATE KEY-----\\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7\\n-----END PRIVATE KEY-----\\n\"}",
            "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7",
        ),
    ] {
        let out = red(text);
        assert!(gone(&out.text, secret, 8), "{text} -> {}", out.text);
    }
}

/// Test values in credential frames, regexes of tokens, interpolated templates and
/// documented example keys are left; the same frames with random values are not.
#[test]
fn test_values_regexes_templates_and_doc_examples_are_not_flagged() {
    for text in [
        "            \"SessionToken\": \"IQote///test\",",
        "    \"clientSecret\": \"YSBzZWNyZXQ=\",",
        "const TOKEN_STRINGS = \"[A-Za-z0-9._~+/-]+=*\";",
        "  const token = `auth:jwk-thumbprint:sha-${alg}`;",
        "        headers={\"Authorization\": \"Basic notabase64token\"},",
        "        headers={\"Authorization\": \"Basic notreally\"},",
        "aws_access_key_id = AKIAIOSFODNN7EXAMPLE",
    ] {
        let out = red(text);
        assert_eq!(out.text, text, "{text} was redacted: {:?}", out.counts);
    }
    for (text, secret) in [
        (
            "            \"SessionToken\": \"IQote///Zk5Hc9Jd\",",
            "IQote///Zk5Hc9Jd",
        ),
        (
            "    \"clientSecret\": \"Zk5Hc9Jd0Pa6Sg2U\",",
            "Zk5Hc9Jd0Pa6Sg2U",
        ),
        (
            "        headers={\"Authorization\": \"Basic Zk5Hc9Jd0Pa6Sg2Ue4Ti8Ox\"},",
            "Zk5Hc9Jd0Pa6Sg2Ue4Ti8Ox",
        ),
        (
            "aws_access_key_id = AKIAHNHEOABTCPM7PCMI",
            "AKIAHNHEOABTCPM7PCMI",
        ),
    ] {
        let out = red(text);
        assert!(gone(&out.text, secret, 8), "{text} -> {}", out.text);
    }
}

/// Passwords of URL parsers' tests and database docs, `.netrc` lines of tests,
/// bracketed placeholders and keyword arguments are left; real-looking ones go.
#[test]
fn example_passwords_in_urls_netrc_and_connection_strings_are_not_flagged() {
    for text in [
        "    url = \"dbtype://username:apples%2Foranges@hostspec/database\"",
        "    \"mysql+pymysql://some_user:some_pass@some_host/test\"",
        "GET http://a%12:b!&*$@example.com/ HTTP/1.1",
        "    netrc_contents = \"machine example.com login username password pass\\n\",",
        "        f.write(\"machine 127.0.0.1 login {} password {}\".format(user, pw))",
        "    \"DRIVER={MySQL ODBC 8.0 ANSI Driver};SERVER=localhost;UID=root;PWD=(whatever)\"",
        "                password=b\"letmei\",",
    ] {
        let out = red(text);
        assert_eq!(out.text, text, "{text} was redacted: {:?}", out.counts);
    }
    for (text, secret) in [
        (
            "    url = \"postgres://app:Zk5Hc9Jd0Pa6@db/prod\"",
            "Zk5Hc9Jd0Pa6",
        ),
        (
            "machine example.com login deploy password Zk5Hc9Jd0Pa6Sg",
            "Zk5Hc9Jd0Pa6Sg",
        ),
        ("Server=db;UID=root;PWD=Zk5Hc9Jd0Pa6;", "Zk5Hc9Jd0Pa6"),
    ] {
        let out = red(text);
        assert!(gone(&out.text, secret, 8), "{text} -> {}", out.text);
    }
}

/// Base64 ciphertexts that start with zero bytes are not Twitter bearer tokens, URLs
/// behind percent escapes and keyboard-run test passwords are not secrets; a bearer
/// token of letters and digits, and a random value with an escape in it, still go.
#[test]
fn ciphertexts_escaped_urls_and_keyboard_runs_are_not_flagged() {
    for text in [
        "  \"$binary\": { \"base64\": \"AAAAAAAAAAAAAAAAAAAAACDdw4KFz3ZLquhsbt7RmDjD0N67n0uSXx7IGnQNCLeIKvot6s/ouI21Eo84IOtb6lhwUNPlSEBNY0/hbszWAKJg==\",",
        "  \"uri\": \"mongodb://localhost/?authMechanismProperties=TOKEN_RESOURCE:mongodb%3A%2F%2Ftest-cluster\",",
        "      \"TOKEN_RESOURCE\": \"abcd%ef:g&hi\"",
        "  \"uri\": \"mongodb://user:pass!@#$%^&*()_+@localhost\",",
    ] {
        let out = red(text);
        assert_eq!(out.text, text, "{text} was redacted: {:?}", out.counts);
    }
    for (text, secret) in [
        (
            "BEARER=AAAAAAAAAAAAAAAAAAAAAMLheAAAAAAA0uSeidULvsea4JtiGRiSDSJSIEUifiRBkKG5E2XzMDjRfl76ZC9Ub0wnz4XsNiRVBChTYbJcE3Fx",
            "EUifiRBkKG5E2XzMDjRfl76ZC9Ub0wnz4XsNiRVBChTYbJcE3F",
        ),
        (
            "  \"TOKEN_RESOURCE\": \"Zk5Hc9Jd%3A0Pa6Sg2Ue4\"",
            "Zk5Hc9Jd%3A0Pa6Sg2Ue4",
        ),
    ] {
        let out = red(text);
        assert!(gone(&out.text, secret, 8), "{text} -> {}", out.text);
    }
}

/// Held-out-8's shapes (its false positives, in the tuning set since): values cut
/// short with `...`, route templates, a name bound to itself or to a receiver's member,
/// type annotations, a made-up AWS key id; the same frames with random values go.
#[test]
fn elided_values_templates_code_and_made_up_key_ids_are_not_flagged() {
    for text in [
        "                \"token\": \"ya29.c.b0Aaekm1Le-n2NCqrzZjdMtjpbgRji2yhiJkO...\",",
        "        \"private_key_data\": \"ewogICJ0eXBlIjogInNlcnZpY2VfYWNjb3VudCIsCiAgIn...\",",
        "URL_ADMIN_USER_CREDENTIALS = \"admin/realms/{realm-name}/users/{id}/credentials\"",
        "        auth = \"/v1/auth/{mount_point}/config/identity\"",
        "    const gcsUseDownscopedCredential = options.gcsUseDownscopedCredential;",
        "exports.isWebAuthnError = isWebAuthnError;",
        "fetch(u,{credentials:this.opts.withCredentials?\"include\":\"omit\"})",
        "    authn: MFAVerifyWebauthnParams;",
        "    oauth2_client_cls = StarletteOAuth2App",
        "        access_key=\"AKIAABCDEFGUE1234567\",",
    ] {
        let out = red(text);
        assert_eq!(out.text, text, "{text} was redacted: {:?}", out.counts);
    }
    for (text, secret) in [
        (
            "                \"token\": \"ya29.c.b0Aaekm1Le-n2NCqrzZjdMtjpbgRji2yhiJkO\",",
            "b0Aaekm1Le-n2NCqrzZjdMtjpbgRji2yhiJkO",
        ),
        (
            "        auth = \"/v1/auth/{mount_point}/Zk5Hc9Jd0Pa6Sg2Ue4Ti8Ox\"",
            "Zk5Hc9Jd0Pa6Sg2Ue4Ti8Ox",
        ),
        (
            "    const gcsUseDownscopedCredential = Zk5Hc9Jd0Pa6Sg2Ue4Ti8Ox;",
            "Zk5Hc9Jd0Pa6Sg2Ue4Ti8Ox",
        ),
        (
            "    authn: Zk5Hc9Jd0Pa6Sg2Ue4Ti8Ox;",
            "Zk5Hc9Jd0Pa6Sg2Ue4Ti8Ox",
        ),
        (
            "        access_key=\"AKIAHNHEOABTCPM7PCMI\",",
            "AKIAHNHEOABTCPM7PCMI",
        ),
    ] {
        let out = red(text);
        assert!(gone(&out.text, secret, 8), "{text} -> {}", out.text);
    }
}

/// Held-out-9's false positives (`secret_made_up`, `secret_inert`,
/// `secret_code`, `secret_framing`): constants and enum members, a renamed import's
/// member, a percent-encoded SigV4 scope, a JWT's claims cut at a line's end and one
/// signed with words, an accented sample, a key id of one character and a
/// service-account file whose key has no body are left; the same frames with random
/// values go.
#[test]
fn constants_claims_scopes_and_made_up_values_are_not_flagged() {
    for text in [
        "AUTH_MODE_SYSASM: AuthMode = AuthMode.SYSASM",
        "        authMode = DPI_OCI_AUTH;",
        "        auth_mode = TNS_AUTH_MODE_LOGON",
        "  vsCodeCredentialControl: import_msalPlugins.msalNodeFlowVSCodeCredentialControl,",
        "X-Amz-Credential=minio%2F20150620%2Fus-east-1%2Fs3%2Faws4_request&X-Amz-Date=20150620T010203Z",
        "            \\\"id_token\\\":\\\"eyJhbGciOiJSUzI1NiJ9.eyJpc3MiOiJodHRwczovL3NlcnZlci5leGFtcGxlLmNvbSIsImF\\",
        "  \"token\": \"eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiIyNDQwMDMyMCJ9.aW52YWxpZF9zaWduYXR1cmU\"",
        "    assert load() == {'token': 'café-pässwörd'}",
        "  \"private_key_id\": \"ffffffffffffffffffffffffffffffffffffffff\",",
        "{\"type\": \"service_account\", \"private_key_id\": \"test-private-key-id\", \"private_key\": \"-----BEGIN PRIVATE KEY-----\\nBLAHBLAHBLAH\\n-----END PRIVATE KEY-----\\n\"}",
    ] {
        let out = red(text);
        assert_eq!(out.text, text, "{text} was redacted: {:?}", out.counts);
    }
    for (text, secret) in [
        ("AUTH_MODE: AuthMode = Zk5Hc9Jd0Pa6Sg2Ue4Ti8Ox", "Zk5Hc9Jd0Pa6Sg2Ue4Ti8Ox"),
        ("        authMode = QXJ_PLMZWKT_9DV4;", "QXJ_PLMZWKT_9DV4"),
        (
            "  vsCodeCredentialControl: Zk5Hc9Jd0Pa6Sg2Ue4Ti8OxQb3Vc7Nm,",
            "Zk5Hc9Jd0Pa6Sg2Ue4Ti8OxQb3Vc7Nm",
        ),
        (
            "  \"token\": \"eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiIyNDQwMDMyMCJ9.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U\"",
            "dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
        ),
        (
            "    assert load() == {'token': 'qéxzvkjwq-pöl7Zk5Hc9'}",
            "xzvkjwq-p",
        ),
        (
            "  \"private_key_id\": \"3f2a9c0d81e4b5a6c7d8e9f00112233445566778\",",
            "3f2a9c0d81e4b5a6c7d8e9f00112233445566778",
        ),
    ] {
        let out = red(text);
        assert!(gone(&out.text, secret, 8), "{text} -> {}", out.text);
    }
    // A service-account file whose key has a body still counts.
    let file = "{\"type\": \"service_account\", \"private_key\": \"-----BEGIN PRIVATE KEY-----\\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\\n-----END PRIVATE KEY-----\\n\"}";
    assert!(
        red(file).counts.contains_key("gcp_service_account"),
        "{file}"
    );
}
