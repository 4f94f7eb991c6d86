//! Tests of judgements spread over the modules that own them: capitals
//! constants with a one-letter part or behind a module (`secret_made_up`), a test
//! vector pairing a word with its hex digest (`secret_keyword`), a password hash named
//! by its scheme (`secret_shape`), base32 of a word and a documented key id with its
//! last letter changed (`secret_inert`), a fallback between two settings
//! (`secret_code`), a format string's literal (`secret_reference`), a PuTTY header
//! with no key lines, an INI key with no value and a Basic header of test words
//! (`secret_framing`, `secret_shape`), and a `-id` name (`secret_value`). Each false
//! positive is shown not firing, a near miss holding a secret firing, and the last
//! test measures how often random values take the new shapes.

use super::redact::Redactor;
use super::secret_code::is_fallback_chain;
use super::secret_inert::{is_doc_example_key_id, is_worded_base32};
use super::secret_made_up::is_constant_reference;
use super::secret_reference::is_format_template;
use super::secret_shape::is_named_hash;
use super::secret_words::is_code_like;
use super::test_random::{random, xorshift, BASE62, BASE64, CAPS, LOWER, PASSWORD};

/// Whether the redactor leaves `text` as it is.
fn kept(r: &Redactor, text: &str) -> bool {
    r.redact(text).unwrap().text == text
}

/// Whether the redactor removes `secret` from `text`.
fn caught(r: &Redactor, text: &str, secret: &str) -> bool {
    !r.redact(text).unwrap().text.contains(secret)
}

#[test]
fn capitals_constants_with_a_one_letter_part_or_a_module() {
    let r = Redactor::builtin().unwrap();
    for text in [
        "        auth_level=RPC_C_AUTHN_LEVEL_PKT_PRIVACY,\n",
        "    authn_level = RPC_C_AUTHN_LEVEL_PKT_INTEGRITY\n",
        "    authn_level = ntlm.NTLM_AUTH_PKT_INTEGRITY\n",
        "    authn_level_packet = rpcrt.RPC_C_AUTHN_LEVEL_PKT_PRIVACY\n",
    ] {
        assert!(kept(r, text), "{text}");
    }
    // One word only, a one-letter part at an end, too many one-letter parts, a
    // capitalised module: not constants by this rule.
    for v in [
        "RPC_C_AUTHN_PKT_QZX",
        "C_AUTHN_LEVEL_PKT",
        "RPC_C_D_E_LEVEL_PRIVACY",
        "Ntlm.NTLM_AUTH_PKT_INTEGRITY",
        "ntlm.ZK5HC9JD0PA6SG2UE4",
    ] {
        assert!(!is_constant_reference(v), "{v}");
    }
    // A secret written in capitals is still caught, bare or behind a module.
    for secret in ["QX7K_Z_PM9WRT2LV8NB4", "ZK5HC9JD0PA6SG2UE4TI"] {
        for text in [
            format!("auth_token = {secret}\n"),
            format!("auth_token = ntlm.{secret}\n"),
        ] {
            assert!(caught(r, &text, secret), "{text}");
        }
    }
}

#[test]
fn password_hashes_are_no_passwords() {
    let r = Redactor::builtin().unwrap();
    for text in [
        "        (\"password\", '5f4dcc3b5aa765d61d8327deb882cf99'),\n",
        "        (\"password\", '5e884898da28047151d0e56f8dc6292773603d0d6aabbdd62a11ef721d1542d8'),\n",
        "        ('passphrase', '855c3697d9979e78ac404c4ba2c66533'),\n",
        "    >>> mysql323.verify(\"secret\", '5d2e19393cc5ef67')\n",
        "        (\"Password\",  'sha1$54123$893cf12e134c3c215f3a76bd50d13f92404a54d3'),\n",
        "        (\"password\", 'crypt$c2$c2M87q...WWcU'),\n",
        "    password = 'md5$123abcdef$c8272612932975ee80e8a35995708e80'\n",
    ] {
        assert!(kept(r, text), "{text}");
    }
    // Hex under a setting's name, or assigned, is judged as before: `openssl rand -hex`
    // makes passwords of that shape.
    let hex = "3f9ac02e71d4b85a6e0f1c92d7a4b3e8";
    for text in [
        format!("(\"DB_PASSWORD\", '{hex}')\n"),
        format!("(\"db_password\", '{hex}')\n"),
        format!("(\"PASSWORD\", '{hex}')\n"),
        format!("password = '{hex}'\n"),
        format!("POSTGRES_PASSWORD={hex}\n"),
    ] {
        assert!(caught(r, &text, hex), "{text}");
    }
    // A `$` in a password does not make a hash: one field, or no hash's name.
    for v in [
        "sha1$Zk5Hc9Jd0Pa6Sg2U",
        "shaq$Zk5Hc9Jd$0Pa6Sg2Ue4",
        "Zk5H$c9Jd0Pa6$Sg2Ue4Ti8",
        "sha1$Zk5$Hc9",
    ] {
        assert!(!is_named_hash(v), "{v}");
        let text = format!("password = '{v}'\n");
        assert!(caught(r, &text, v), "{text}");
    }
}

#[test]
fn documented_example_keys() {
    let r = Redactor::builtin().unwrap();
    for text in [
        "otpauth://totp/Example:alice@google.com?secret=JBSWY3DPEHPK3PXP&issuer=Example\n",
        "    secret=JBSWY3DPEHPK3PXP\n",
        "            \"AKIAIOSFODNN7EXAMPLF\",\n",
    ] {
        assert!(kept(r, text), "{text}");
    }
    assert!(is_worded_base32("JBSWY3DPEHPK3PXP"));
    // Base32 of random bytes, of digits, or of a word's letters run on into others.
    for v in ["GEZDGNBVGY3TQOJQ", "NBSWY3DPOVZXKZLH", "KZ4XQWLM7RT2PA5N"] {
        assert!(!is_worded_base32(v), "{v}");
    }
    let secret = "KZ4XQWLM7RT2PA5N";
    assert!(caught(r, &format!("secret={secret}\n"), secret));
    assert!(!is_doc_example_key_id(b"AKIAIOSFODNN7EXAMQLF"));
    assert!(caught(
        r,
        "key = \"AKIAIOSFODNN7EXAMQLF\"\n",
        "AKIAIOSFODNN7EXAMQLF"
    ));
}

#[test]
fn code_and_templates_are_no_values() {
    let r = Redactor::builtin().unwrap();
    assert!(is_format_template("dpapi_machinekey:0x{0}"));
    for text in [
        "{var a=e.auth||t.auth,r;i.auth=g.auth||v.auth,i.x=1}\n",
        "            secret = \"dpapi_machinekey:0x{0}\\ndpapi_userkey:0x{1}\".format(a, b)\n",
        "    secret = 'client_secret=%(client_secret)s&grant=%s'\n",
    ] {
        assert!(kept(r, text), "{text}");
    }
    assert!(is_fallback_chain("auth", "g.auth||v.auth"));
    assert!(!is_fallback_chain("auth", "g.auth||Zk5Hc9Jd0Pa6Sg2Ue4"));
    assert!(!is_fallback_chain("auth", "g.auth"));
    let secret = "Zk5Hc9Jd0Pa6Sg2Ue4";
    assert!(caught(r, &format!("i.auth=g.auth||{secret}\n"), secret));
    assert!(is_format_template("dpapi_machinekey:0x{0}"));
    for v in [
        "Zk5Hc9Jd{0}Pa6Sg2Ue4Ti8Ox",
        "{0}Zk5Hc9Jd0Pa6Sg2Ue4",
        "%sZk5Hc9Jd0Pa6Sg2Ue4",
        "dpapi_machinekey:0x",
    ] {
        assert!(!is_format_template(v), "{v}");
    }
    // A random value cut at an escape in a format string is still caught.
    let text = "secret = \"Zk5Hc9Jd0Pa6Sg2Ue4Ti8Ox\\ndpapi_userkey:0x{1}\".format(a)\n";
    assert!(caught(r, text, "Zk5Hc9Jd0Pa6Sg2Ue4Ti8Ox"), "{text}");
}

#[test]
fn framings_without_a_secret() {
    let r = Redactor::builtin().unwrap();
    for text in [
        // Minified code writing the PuTTY format.
        "c=\"PuTTY-User-Key-File-2: ssh-rsa\\r\\n\";c+=\"Encryption: \"+a+\"\\r\\n\",c+=\"Comment: \"+(r=r||\"\")+\"\\r\\n\";c+=\"Public-Lines: \"+f+\"\\r\\n\"+l;\n",
        // An INI template's keys with no value.
        "[TCPTransport]\nmachine =\nusername =\npassword =\nhashes =\n",
        // A recorded request's public OAuth client id, and a test's Basic header.
        "('auth-client-id', 'Iv1.a0facee5139c0213'),\n",
        "{'Authorization': 'Basic ZmFrZV9sb2dpbjpmYWtlX3Bhc3N3b3Jk'}\n",
    ] {
        assert!(kept(r, text), "{text}");
    }
    let ppk = "PuTTY-User-Key-File-2: ssh-rsa\nEncryption: none\nComment: rsa-key\nPublic-Lines: 4\nAAAAB3NzaC1yc2EAAAABJQAAAQEAuS8xW3XoK7vvTZ5QyXlwtDl2mJ4\n";
    assert!(!kept(r, ppk));
    let escaped = "key = \"PuTTY-User-Key-File-3: ssh-ed25519\\nEncryption: none\\nComment: k\\nPublic-Lines: 2\\nAAAAC3NzaC1lZDI1NTE5AAAAIBz5\\n\"\n";
    assert!(!kept(r, escaped));
    let secret = "Zk5Hc9Jd0Pa6";
    assert!(caught(
        r,
        &format!("machine api.example.com\nlogin deploy\npassword {secret}\n"),
        secret
    ));
    assert!(caught(
        r,
        "('auth-client-secret', 'Iv1.a0facee5139c0213f7Qz'),\n",
        "a0facee5139c0213f7Qz"
    ));
    // `user:s3cretpass`, and a password that holds a test word inside a random run.
    assert!(!kept(r, "Authorization: Basic dXNlcjpzM2NyZXRwYXNz\n"));
}

/// What the shapes let through, over random values: none at every alphabet and length
/// measured (200,000 values each).
#[test]
fn random_values_never_take_these_shapes() {
    let mut next = xorshift(0x9E37_79B9_7F4A_7C15);
    let printable: Vec<u8> = (b'!'..=b'~').collect();
    let base32 = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
    for alphabet in [
        BASE62,
        BASE64,
        PASSWORD,
        LOWER,
        CAPS,
        &base32[..],
        &printable[..],
    ] {
        for len in [12usize, 16, 24, 40] {
            let mut passed = 0;
            for _ in 0..200_000 {
                let v = random(&mut next, alphabet, len);
                let one = usize::from(
                    is_constant_reference(&v)
                        || is_constant_reference(&format!("ntlm.{v}"))
                        || is_named_hash(&v)
                        || is_worded_base32(&v)
                        || is_fallback_chain("auth", &v)
                        // A value that reads as code is not a secret with or without
                        // the field (`secret_value::looks_secret`): what the template
                        // adds is the rest.
                        || (is_format_template(&format!("{v}{{0}}")) && !is_code_like(&v)),
                );
                if one > 0 {
                    eprintln!("passed: {v}");
                }
                passed += one;
            }
            assert_eq!(passed, 0, "{len} of {} characters", alphabet.len());
        }
    }
}
