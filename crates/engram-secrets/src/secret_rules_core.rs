//! The widespread kinds of secret (cloud providers, code hosts, chat, payments, AI
//! APIs, package registries, and the generic framings: URLs, connection strings,
//! keyword assignments), one `secret_rules::SecretRule` row each. The rest are in
//! `secret_rules_extra`; the constraints every regex obeys are in `secret_rules`'s
//! module comment.

use super::secret_rules::{assign, rule, Check, SecretRule};

/// The kinds met most often: cloud providers, code hosts, chat, payments, AI APIs,
/// package registries, generic framings (URLs, connection strings, assignments).
pub const CORE: &[SecretRule] = &[
    rule(
        "aws_access_key",
        "AWS access key id (long-term AKIA, temporary ASIA, ABIA/ACCA; not the non-secret user/role ids)",
        r"\b(?:AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16}\b",
        "key = AKIAHNHEOABTCPM7PCMI",
        "AKIAshort and AKIA_not_a_key",
    )
    .check(Check::DocExample),
    rule(
        "aws_secret_key",
        "AWS secret access key in an assignment",
        r#"aws[\w.\-]{0,10}secret[\w.\-]{0,20}['"]?[ \t]*(?:=|:=|:|=>)[ \t]*['"]?[0-9a-zA-Z/+]{40}"#,
        "aws_secret_access_key = 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY'",
        "aws region = 'us-east-1'",
    )
    .caseless(),
    rule(
        "aws_session_token",
        "AWS session token in an assignment",
        r#"aws[\w.\-]{0,10}session[\w.\-]{0,10}token['"]?[ \t]*(?:=|:=|:|=>)[ \t]*['"]?[A-Za-z0-9/+=]{24,}"#,
        "AWS_SESSION_TOKEN=IQoJb3JpZ2luX2VjEJr//////////wEaCXVzLWVhc3QtMSJHMEUCIQDkRzYwOTk1MzI2NjcxNTc0OTg0NzY2MDQ2MTIxMjA1NTY2NTcy",
        "aws_session_token = None",
    )
    .caseless(),
    rule(
        "gcp_api_key",
        "Google API key (also Firebase web keys)",
        r"AIza[0-9A-Za-z_\-]{35}",
        "AIzaSyA1234567890abcdefghijklmnopqrstuv",
        "AIza too short",
    ),
    rule(
        "gcp_service_account",
        "Google service-account key file: its type beside a private_key field (the key itself is redacted as private_key)",
        r#""type"[ \t]*:[ \t]*"service_account""#,
        "{\"type\": \"service_account\", \"project_id\": \"p\", \"private_key\": \"\"}",
        "{\"type\": \"user\"}",
    )
    .check(Check::ServiceAccount),
    rule(
        "gcp_private_key_id",
        "Google service-account private key id",
        r#""private_key_id"[ \t]*:[ \t]*"[0-9a-f]{40}""#,
        r#""private_key_id": "3f2a9c0d81e4b5a6c7d8e9f00112233445566778","#,
        r#""private_key_id": "","#,
    ),
    rule(
        "google_oauth",
        "Google OAuth client secret, refresh or access token",
        r"GOCSPX-[A-Za-z0-9_\-]{28}|1//0[A-Za-z0-9_\-]{40,}|ya29\.[0-9A-Za-z_\-]{30,}",
        "client_secret: GOCSPX-abcdefghijklmnopqrstuvwxyz12",
        "GOCSPX-short and ya29.short",
    ),
    rule(
        "azure_storage_key",
        "Azure storage or Service Bus key (AccountKey=, SharedAccessKey=)",
        r"(?:AccountKey|SharedAccessKey)=[A-Za-z0-9+/]{40,100}={0,2}",
        "AccountKey=Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==",
        "AccountKey=short",
    ),
    rule(
        "azure_sas_token",
        "Azure shared access signature (sig= of a SAS URL or connection string)",
        r"[?&;]sig=[A-Za-z0-9%+/]{40,100}(?:%3[Dd]|=){0,2}",
        "https://a.blob.core.windows.net/c?sv=2022-11-02&sig=Xq8bVf2Lm4Nn7Rt1Yw3Zk5Hc9Jd0Pa6Sg2Ue4Ti8Ox%2Bq%3D",
        "https://a.blob.core.windows.net/c?sv=2022-11-02&comp=list",
    ),
    rule(
        "azure_ad_client_secret",
        "Azure AD (Entra) application client secret",
        r"[A-Za-z0-9_~.]{3}[0-9]Q~[A-Za-z0-9_~.\-]{31,34}",
        "AZURE_CLIENT_SECRET=abc8Q~Xk2Lm4Nn7Rt1Yw3Zk5Hc9Jd0Pa6Sg2Ue4T",
        "Q~ alone and 8Q~short",
    ),
    rule(
        "github_token",
        "GitHub token (personal, OAuth, user-to-server, server-to-server, refresh)",
        r"(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{36}",
        "token: ghp_abcdefghijklmnopqrstuvwxyz0123456789",
        "ghp_short",
    ),
    rule(
        "github_pat",
        "GitHub fine-grained personal access token",
        r"github_pat_[A-Za-z0-9_]{82}",
        "github_pat_11ABCDEFG0123456789abc_abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456",
        "github_pat_short",
    ),
    rule(
        "gitlab_token",
        "GitLab personal access token",
        r"glpat-[A-Za-z0-9_\-]{20,}(?:\.[0-9a-z]{2}\.[0-9a-z]{9})?",
        "glpat-abcdefghij0123456789",
        "glpat-short",
    ),
    rule(
        "gitlab_other_token",
        "GitLab deploy, pipeline trigger, runner, CI build, feed, SCIM or OAuth token",
        r"(?:gldt|glptt|glrt|glcbt|glft|glsoat|gloas)-[A-Za-z0-9_\-]{20,}",
        "GITLAB_DEPLOY_TOKEN=gldt-Xk2Lm4Nn7Rt1Yw3Zk5Hc",
        "gldt-short",
    ),
    rule(
        "gitlab_runner_registration",
        "GitLab runner registration token",
        r"GR1348941[A-Za-z0-9_\-]{20,}",
        "registration-token: GR1348941Xk2Lm4Nn7Rt1Yw3Zk5Hc",
        "GR1348941short",
    ),
    rule(
        "bitbucket_app_password",
        "Bitbucket app password",
        r"ATBB[A-Za-z0-9_=.\-]{32,}",
        "BITBUCKET_APP_PASSWORD=ATBBXk2Lm4Nn7Rt1Yw3Zk5Hc9Jd0Pa6Sg2Ue4",
        "ATBB short",
    ),
    rule(
        "bitbucket_client_secret",
        "Bitbucket OAuth client secret",
        assign!("bitbucket", r"[a-z0-9=_\-]{64}"),
        "bitbucket_secret = \"xk2lm4nn7rt1yw3zk5hc9jd0pa6sg2ue4ti8ox1qb3vc5xk2lm4nn7rt1yw3zk5hc9\"",
        "bitbucket_url = \"https://bitbucket.org\"",
    )
    .caseless(),
    rule(
        "slack_token",
        "Slack bot, user, app, refresh or configuration token",
        r"xox[abposre]-[A-Za-z0-9\-]{10,}|xoxe\.xox[bp]-[A-Za-z0-9\-]{10,}",
        "xoxb-1234567890-abcdefghij",
        "xoxz-123",
    ),
    rule(
        "slack_app_token",
        "Slack app-level token",
        r"xapp-[0-9]-[A-Za-z0-9\-]{20,}",
        "SLACK_APP_TOKEN=xapp-1-A0123456789-1234567890123-abcdef0123456789",
        "xapp-1-short",
    ),
    rule(
        "slack_webhook",
        "Slack incoming webhook or workflow trigger",
        r"hooks\.slack\.com/(?:services/T[A-Z0-9]{6,}/B[A-Z0-9]{6,}/[A-Za-z0-9]{20,}|(?:workflows|triggers)/T[A-Z0-9]{6,}/A[A-Z0-9]{6,}/[0-9]{6,}/[A-Za-z0-9]{20,})",
        "https://hooks.slack.com/services/T0ABCDEFG/B0ABCDEFG/abcdefghijklmnopqrstuvwx",
        "https://hooks.slack.com/apps",
    ),
    rule(
        "stripe_key",
        "Stripe secret or restricted key",
        r"[rs]k_(?:live|test|prod)_[0-9a-zA-Z]{24,}",
        "sk_live_abcdefghijklmnopqrstuvwx",
        "sk_live_short",
    ),
    rule(
        "stripe_webhook_secret",
        "Stripe webhook signing secret",
        r"whsec_[A-Za-z0-9]{32,}",
        "STRIPE_WEBHOOK_SECRET=whsec_Xk2Lm4Nn7Rt1Yw3Zk5Hc9Jd0Pa6Sg2Ue4",
        "whsec_short",
    ),
    rule(
        "twilio_api_key",
        "Twilio API key SID",
        r"\bSK[0-9a-fA-F]{32}\b",
        "TWILIO_API_KEY=SK0123456789abcdef0123456789abcdef",
        "SKU-0123",
    ),
    rule(
        "twilio_account_sid",
        "Twilio account SID (half of a credential pair)",
        r"\bAC[0-9a-f]{32}\b",
        "account_sid = 'AC0123456789abcdef0123456789abcdef'",
        "ACCOUNT = 'AC_DC'",
    ),
    rule(
        "twilio_auth_token",
        "Twilio auth token in an assignment",
        assign!("twilio", r"[0-9a-f]{32}"),
        "TWILIO_AUTH_TOKEN=\"0f1e2d3c4b5a69788796a5b4c3d2e1f0\"",
        "twilio_region = \"us1\"",
    )
    .caseless(),
    rule(
        "sendgrid_key",
        "SendGrid API key",
        r"SG\.[A-Za-z0-9_\-]{22}\.[A-Za-z0-9_\-]{43}",
        "SENDGRID_API_KEY=SG.abcdefghijklmnopqrstuv.abcdefghijklmnopqrstuvwxyz0123456789ABCDEFG",
        "SG.short.key",
    ),
    rule(
        "mailgun_key",
        "Mailgun private or public validation key",
        r"\b(?:pub)?key-[0-9a-f]{32}\b",
        "MAILGUN_KEY = 'key-0123456789abcdef0123456789abcdef'",
        "primary-key-column",
    ),
    rule(
        "mailchimp_key",
        "Mailchimp API key",
        r"\b[0-9a-f]{32}-us[0-9]{1,2}\b",
        "MAILCHIMP_KEY=0123456789abcdef0123456789abcdef-us21",
        "region: us-east-1",
    ),
    rule(
        "openai_key",
        "OpenAI API key (legacy, project, service account, admin)",
        r"sk-(?:proj-|svcacct-|admin-|None-)?[A-Za-z0-9_\-]{20,}T3BlbkFJ[A-Za-z0-9_\-]{20,}|sk-(?:proj|svcacct|admin)-[A-Za-z0-9_\-]{40,}",
        "sk-proj-abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGH",
        "sk-proj-short",
    ),
    rule(
        "anthropic_key",
        "Anthropic API or admin key (sk-ant-api03-, sk-ant-admin01-)",
        r"sk-ant-[A-Za-z0-9_\-]{32,}",
        "sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123456789",
        "sk-ant-short",
    ),
    rule(
        "huggingface_token",
        "Hugging Face access or organisation token",
        r"hf_[A-Za-z0-9]{30,}|api_org_[A-Za-z0-9]{30,}",
        "HF_TOKEN=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",
        "self.hf_model_name",
    ),
    rule(
        "npm_token",
        "npm access token",
        r"npm_[A-Za-z0-9]{36}",
        "//registry.npmjs.org/:_authToken=npm_Xk2Lm4Nn7Rt1Yw3Zk5Hc9Jd0Pa6Sg2Ue4Ti8",
        "npm_config_cache",
    ),
    rule(
        "npmrc_auth",
        "Registry credential in an .npmrc or .yarnrc (_authToken, _auth, _password)",
        r#"(?:_a|npmA)uthToken[ \t]*[=:][ \t]*['"]?[A-Za-z0-9_\-+/=.:]{8,}|(?::_auth|:_password)[ \t]*[=:][ \t]*['"]?[A-Za-z0-9_\-+/=.:]{8,}"#,
        "//npm.example.com/:_authToken=Zk5Hc9Jd0Pa6Sg2Ue4Ti8Ox1Qb",
        "//registry.npmjs.org/:_authToken=${NPM_TOKEN}",
    ),
    rule(
        "pypi_token",
        "PyPI or TestPyPI upload token",
        r"pypi-(?:AgEIcHlwaS5vcmc|AgENdGVzdC5weXBpLm9yZw)[A-Za-z0-9_\-]{50,}",
        "password = pypi-AgEIcHlwaS5vcmcCJDk3ZjY0YzE4LTk3MzItNDU4Ny05YjQ1LTRlYjE2ZTVlMTU3MgACKlsz",
        "pypi-project-name",
    ),
    rule(
        "docker_config_auth",
        "Registry credential in a Docker config.json (auth, identitytoken)",
        r#""(?:auth|identitytoken)"[ \t]*:[ \t]*"[A-Za-z0-9+/_\-.]{12,}={0,2}""#,
        r#""auths": {"ghcr.io": {"auth": "dXNlcjpnaHBfc2VjcmV0cGFzc3dvcmQ="}}"#,
        r#""auth": "","#,
    )
    .check(Check::UserPass),
    rule(
        "jwt",
        "JSON Web Token (no word boundary needed, so found inside escaped literals too)",
        r"eyJ[A-Za-z0-9_\-]{8,}\.ey[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-+/=]*",
        "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
        "eyJ alone",
    )
    .check(Check::Signed),
    rule(
        "private_key",
        "Private key block (PEM, OpenSSH, PGP; redacted to its END line; a header with no body after it is a marker in code, not a key)",
        r"-----BEGIN[ A-Z0-9]{0,40}PRIVATE KEY(?: BLOCK)?-----",
        "-----BEGIN OPENSSH PRIVATE KEY----- b3BlbnNzaC1rZXktdjEAAAAABG5vbmU=",
        "-----BEGIN PUBLIC KEY-----",
    )
    .check(Check::PrivateKey),
    rule(
        "putty_private_key",
        "PuTTY private key file (a header with no key lines after it is code that writes the format)",
        r"PuTTY-User-Key-File-[0-9]:[ \t]*[a-z0-9\-]{3,40}",
        "PuTTY-User-Key-File-3: ssh-ed25519\\nEncryption: none\\nComment: k\\nPublic-Lines: 2\\nAAAAC3NzaC1lZDI1NTE5AAAAIBz5Qx7Lm4Nn",
        "PuTTY-Config: default",
    )
    .check(Check::PrivateKey),
    rule(
        "age_secret_key",
        "age encryption secret key",
        r"AGE-SECRET-KEY-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}",
        "AGE-SECRET-KEY-1QQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQQ",
        "AGE-SECRET-KEY-1short",
    ),
    rule(
        "database_url_password",
        "URL with a password, any scheme (scheme://user:password@host; the password runs to the authority's last `@`, raw `#` and `@` included)",
        // The password class admits `#` and `@`: RFC 3986 wants them percent-encoded,
        // but people write `postgres://admin:Zq8#mP2v@db` raw, and a client reads the
        // password up to the last `@` before the path. Hyperscan reports a match at
        // every `@`, so the longest (the whole password) is among the spans.
        r#"[A-Za-z][A-Za-z0-9+.\-]{1,30}://[^\s:/?#@'"`]+:[^\s/?'"`]+@"#,
        "postgres://app:s3cretpw@db.internal:5432/app",
        "postgres://db.internal:5432/app",
    )
    .check(Check::UrlPassword),
    rule(
        "connection_string_password",
        "Password=…; or Pwd=…; in a connection string",
        r#"(?:password|pwd)[ \t]*=[ \t]*[^;\r\n'"]+[;'"]"#,
        r#"conn = "Server=db;Database=app;User Id=sa;Password=Tr0ub4dor&3;""#,
        r#"conn = "Server=db;Database=app;Integrated Security=true;""#,
    )
    .caseless()
    .check(Check::ConnString),
    rule(
        "netrc_password",
        "A .netrc entry with a password on one line (multi-line entries are found by the redactor)",
        r"\b(?:machine|login|default)[ \t]+[^\s]+[ \t]+(?:login[ \t]+[^\s]+[ \t]+)?password[ \t]+[^\s]+",
        "machine api.example.com login deploy password Zk5Hc9Jd0Pa6",
        "machine learning models need a login page",
    )
    .check(Check::Netrc),
    rule(
        "basic_auth_header",
        "HTTP Basic credentials in an Authorization header",
        r#"authorization['"]?[ \t]*[:=,][ \t]*['"]?basic[ \t]+[A-Za-z0-9+/]{8,}={0,2}"#,
        "Authorization: Basic dXNlcjpzM2NyZXRwYXNz",
        "Authorization: Basic realm",
    )
    .check(Check::BasicAuth)
    .caseless(),
    rule(
        "bearer_token",
        "A bearer token (Authorization: Bearer …), when random enough",
        r"bearer[ \t]+[A-Za-z0-9\-._~+/]{16,}=*",
        "Authorization: Bearer Zk5Hc9Jd0Pa6Sg2Ue4Ti8Ox1Qb3Vc",
        "use a Bearer token here",
    )
    .caseless()
    .check(Check::Entropy),
    rule(
        "password_assignment",
        "A password assigned a value, when the value is random enough",
        assign!(
            "passw|passphrase|pwd",
            r#"['"][^'"\r\n]{6,}['"]|[^\s'"`;,()\[\]{}<>]{6,}"#
        ),
        "PASSWORD = \"hX9kL2mQ7vR4pW8z\"",
        "password = None",
    )
    .caseless()
    .check(Check::Entropy),
    rule(
        "generic_secret",
        "A secret, token, key or credential assigned a value, when the value is random enough",
        assign!(
            "secret|token|auth|credential|api_key|apikey|api-key|access_key|private_key|signing_key|encryption_key",
            r#"['"][^'"\r\n]{8,}['"]|[^\s'"`;,()\[\]{}<>]{8,}"#
        ),
        "client_secret: \"Zk5Hc9Jd0Pa6Sg2Ue4Ti8Ox1Qb3Vc7Nm\"",
        "token = None",
    )
    .caseless()
    .check(Check::Entropy),
];
