//! The cases a new user finds first: a credential in each language's assignment syntax, a
//! vendor's value that is one character off its documented format (so only the name it is
//! assigned to says it is a secret), and the password or key inside each kind of connection
//! string or URL.
//!
//! [`super::secrets`] plants values that match their vendor's format exactly; these are the
//! near misses around them, where a detector has to read the context rather than the value.

use rand::seq::IndexedRandom;
use rand::Rng;

use super::{chars, Planted, ALNUM, DIGITS, LOWER, UPPER};

/// A text that holds one value that must not survive masking.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Case {
    /// What the case is, for a failure's message: `near miss of aws-access-key-id in rust`.
    pub what: String,
    /// The value that must not survive masking.
    pub value: String,
    /// The text that holds it.
    pub text: String,
}

/// The languages and file formats an assignment is written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Syntax {
    Python,
    JavaScript,
    TypeScript,
    Rust,
    Yaml,
    Dotenv,
    Json,
    Toml,
    Shell,
}

impl Syntax {
    pub const ALL: [Syntax; 9] = [
        Syntax::Python,
        Syntax::JavaScript,
        Syntax::TypeScript,
        Syntax::Rust,
        Syntax::Yaml,
        Syntax::Dotenv,
        Syntax::Json,
        Syntax::Toml,
        Syntax::Shell,
    ];

    pub fn word(self) -> &'static str {
        match self {
            Syntax::Python => "python",
            Syntax::JavaScript => "javascript",
            Syntax::TypeScript => "typescript",
            Syntax::Rust => "rust",
            Syntax::Yaml => "yaml",
            Syntax::Dotenv => "dotenv",
            Syntax::Json => "json",
            Syntax::Toml => "toml",
            Syntax::Shell => "shell",
        }
    }

    /// `name` (in snake case) assigned `value`, as a line of this language, the name written
    /// as the language's code writes names.
    pub fn assign(self, name: &str, value: &str) -> String {
        let upper = name.to_ascii_uppercase();
        let camel = camel(name);
        match self {
            Syntax::Python => format!("{name} = \"{value}\"\n"),
            Syntax::JavaScript => format!("const {camel} = '{value}';\n"),
            Syntax::TypeScript => format!("export const {camel}: string = \"{value}\";\n"),
            Syntax::Rust => format!("const {upper}: &str = \"{value}\";\n"),
            Syntax::Yaml => format!("  {}: {value}\n", name.replace('_', "-")),
            Syntax::Dotenv => format!("{upper}={value}\n"),
            Syntax::Json => format!("  \"{camel}\": \"{value}\",\n"),
            Syntax::Toml => format!("{name} = \"{value}\"\n"),
            Syntax::Shell => format!("export {upper}='{value}'\n"),
        }
    }
}

/// `snake_case` as `camelCase`.
fn camel(snake: &str) -> String {
    let mut out = String::with_capacity(snake.len());
    let mut up = false;
    for c in snake.chars() {
        if c == '_' {
            up = true;
        } else if up {
            out.push(c.to_ascii_uppercase());
            up = false;
        } else {
            out.push(c);
        }
    }
    out
}

/// The names programs give credentials, one per pattern the generic rules know (in snake
/// case; [`Syntax::assign`] writes each language's form).
pub const CREDENTIAL_NAMES: [&str; 20] = [
    "access_key_id",
    "secret_access_key",
    "access_key",
    "api_key",
    "api_secret",
    "secret_key",
    "client_secret",
    "auth_token",
    "access_token",
    "refresh_token",
    "bearer_token",
    "private_key",
    "signing_key",
    "encryption_key",
    "account_key",
    "master_key",
    "credentials",
    "password",
    "passphrase",
    "passwd",
];

/// A high-entropy value of 20 to 40 characters, as a generated credential is.
fn credential<R: Rng + ?Sized>(rng: &mut R) -> String {
    let n = rng.random_range(20..=40);
    let mut value = chars(rng, ALNUM, n);
    // Always one of each class, so that no draw falls under the entropy bound by chance.
    value.replace_range(
        0..3,
        &format!(
            "{}{}{}",
            chars(rng, UPPER, 1),
            chars(rng, LOWER, 1),
            chars(rng, DIGITS, 1)
        ),
    );
    value
}

/// Every credential name in every syntax, with a random credential, under a prefix a project
/// might put before it (`PROD_API_KEY`).
pub fn assignments<R: Rng + ?Sized>(rng: &mut R) -> Vec<Case> {
    let mut out = Vec::with_capacity(CREDENTIAL_NAMES.len() * Syntax::ALL.len());
    for name in CREDENTIAL_NAMES {
        for syntax in Syntax::ALL {
            let prefix = ["", "prod_", "stripe_", "app_", "db_"]
                .choose(rng)
                .copied()
                .unwrap_or_default();
            let value = credential(rng);
            out.push(Case {
                what: format!("{prefix}{name} in {}", syntax.word()),
                text: syntax.assign(&format!("{prefix}{name}"), &value),
                value,
            });
        }
    }
    out
}

/// `value` one character off its format: a character past the first quarter changed to one of
/// another class (a digit for a letter, a lower-case letter for an upper-case one and back),
/// and its last character dropped, so a fixed length and a fixed alphabet both fail.
pub fn near_miss<R: Rng + ?Sized>(rng: &mut R, value: &str) -> String {
    let mut chars_of: Vec<char> = value.chars().collect();
    chars_of.pop();
    let from = chars_of.len() / 4;
    let swappable: Vec<usize> = (from..chars_of.len())
        .filter(|&i| chars_of[i].is_ascii_alphanumeric())
        .collect();
    if let Some(&i) = swappable.choose(rng) {
        let c = chars_of[i];
        chars_of[i] = if c.is_ascii_uppercase() {
            c.to_ascii_lowercase()
        } else if c.is_ascii_lowercase() {
            if rng.random_bool(0.5) {
                c.to_ascii_uppercase()
            } else {
                *['1', '8', '9', '0'].choose(rng).unwrap_or(&'1')
            }
        } else {
            *['x', 'Q', 'z'].choose(rng).unwrap_or(&'x')
        };
    }
    chars_of.into_iter().collect()
}

/// For each planted token long enough to be told by its randomness alone (20 characters or
/// more, of the characters tokens are written in; not a key block, a URL, or a password of any
/// printable characters, which have no vendor format to miss; nor a value of letters alone, which
/// the generic rules cannot tell from an identifier: only its vendor's exact format says it is
/// a key): its near miss assigned to a credential name in a random
/// syntax, under the vendor's name (`aws_access_key_id`, `stripe_api_secret`).
pub fn near_misses<R: Rng + ?Sized>(rng: &mut R, planted: &[Planted]) -> Vec<Case> {
    let mut out = Vec::new();
    for p in planted {
        let token = !p.raw
            && p.value.is_ascii()
            && !p.value.contains("://")
            && !p.value.contains("BEGIN")
            && p.value
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_.+/=~".contains(c))
            && p.value.contains(|c: char| c.is_ascii_digit());
        if !token || p.value.len() < 21 {
            continue;
        }
        let value = near_miss(rng, &p.value);
        let syntax = *Syntax::ALL.choose(rng).unwrap_or(&Syntax::Dotenv);
        let credential = CREDENTIAL_NAMES.choose(rng).copied().unwrap_or("api_key");
        let vendor = p.kind.strip_prefix("SECRET_").unwrap_or(&p.kind);
        let prefix = vendor
            .split('_')
            .next()
            .unwrap_or("app")
            .to_ascii_lowercase();
        out.push(Case {
            what: format!("near miss of {vendor} in {}", syntax.word()),
            text: syntax.assign(&format!("{prefix}_{credential}"), &value),
            value,
        });
    }
    out
}

/// A base64 key of a length in `range`, with its padding.
fn base64_key<R: Rng + ?Sized>(rng: &mut R, range: std::ops::Range<usize>, pad: &str) -> String {
    let n = rng.random_range(range);
    format!("{}{pad}", chars(rng, super::BASE64, n))
}

/// Connection strings that hold a password, `{pw}` where it goes.
const PASSWORD_STRINGS: [(&str, &str); 5] = [
    ("ADO.NET", "\"Server=tcp:sql.acme-corp.com,1433;Database=app;User ID=app;Password={pw};Encrypt=True;\"\n"),
    ("ODBC", "DRIVER={ODBC Driver 18 for SQL Server};SERVER=sql.acme-corp.com;UID=app;PWD={pw};\n"),
    ("JDBC query", "jdbc:postgresql://db.acme-corp.com:5432/app?user=app&password={pw}&ssl=true\n"),
    ("JDBC userinfo", "spring.datasource.url=jdbc:mysql://app:{pw}@db.acme-corp.com:3306/app\n"),
    ("Oracle thin", "jdbc:oracle:thin:app/{pw}@db.acme-corp.com:1521/ORCL\n"),
];

/// Connection strings that hold a base64 key (its length and padding), `{key}` where it goes.
/// Azure's account keys are 88 characters; a shorter one (a test account's, a rotated key
/// pasted in part) is still a key.
const KEY_STRINGS: [(&str, std::ops::Range<usize>, &str, &str); 3] = [
    ("Azure storage", 30..60, "==", "AZURE_STORAGE_CONNECTION_STRING=\"DefaultEndpointsProtocol=https;AccountName=acmestore;AccountKey={key};EndpointSuffix=core.windows.net\"\n"),
    ("Cosmos DB", 30..60, "==", "AccountEndpoint=https://acme.documents.azure.com:443/;AccountKey={key};\n"),
    ("Service Bus", 30..43, "=", "Endpoint=sb://acme.servicebus.windows.net/;SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey={key}\n"),
];

/// The password or key of each kind of connection string and URL a project configures: the
/// databases, caches and brokers by URL (with and without a user name), ADO.NET and ODBC
/// strings, JDBC URLs, Azure's storage, Cosmos DB and Service Bus strings, mail and FTP URLs.
/// The host names have real top-level domains, so the text also looks like an e-mail address
/// to a careless detector.
pub fn connection_strings<R: Rng + ?Sized>(rng: &mut R) -> Vec<Case> {
    let mut out = Vec::new();
    let mut push = |what: &str, value: String, text: String| {
        out.push(Case {
            what: what.to_string(),
            value,
            text,
        })
    };
    for scheme in [
        "postgres",
        "postgresql",
        "mysql",
        "mariadb",
        "mongodb",
        "mongodb+srv",
        "redis",
        "rediss",
        "amqp",
        "amqps",
        "smtp",
        "smtps",
        "ftp",
        "sftp",
        "ldap",
        "https",
        "nats",
        "clickhouse",
    ] {
        let pw = credential(rng);
        let user = ["app", "admin_user", "svc-backend", "default"]
            .choose(rng)
            .copied()
            .unwrap_or("app");
        push(
            &format!("{scheme} URL"),
            pw.clone(),
            format!("DATABASE_URL={scheme}://{user}:{pw}@db.acme-corp.com:5432/app\n"),
        );
        let pw = credential(rng);
        push(
            &format!("{scheme} URL without a user"),
            pw.clone(),
            format!("url: \"{scheme}://:{pw}@cache.example.io:6379/0\"\n"),
        );
    }
    for (what, template) in PASSWORD_STRINGS {
        let pw = credential(rng);
        push(what, pw.clone(), template.replace("{pw}", &pw));
    }
    for (what, lengths, pad, template) in KEY_STRINGS {
        let key = base64_key(rng, lengths, pad);
        push(what, key.clone(), template.replace("{key}", &key));
    }
    out
}
