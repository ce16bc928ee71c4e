//! Ordinary code that holds nothing to mask, the false-positive corpus: the high-entropy
//! strings source code is full of (hashes in tests, UUIDs, git SHAs, base64 images, lockfile
//! checksums, minified JavaScript) and the code that talks about secrets without holding any
//! (`let token = lexer.next_token()`, `api_key = os.environ["API_KEY"]`).

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use rand::seq::IndexedRandom;
use rand::Rng;

use super::{chars, ALNUM, HEX, LOWER};

/// `count` lines of ordinary code, configuration and lockfiles (a line of minified JavaScript
/// or a data URI can be long).
pub fn lines<R: Rng + ?Sized>(rng: &mut R, count: usize) -> Vec<String> {
    (0..count).map(|_| line(rng)).collect()
}

fn line<R: Rng + ?Sized>(rng: &mut R) -> String {
    match rng.random_range(0..100) {
        0..=29 => code(rng),
        30..=39 => test_hash(rng),
        40..=47 => uuid_line(rng),
        48..=57 => lockfile(rng),
        58..=61 => data_uri(rng),
        62..=67 => minified(rng),
        68..=79 => talks_about_secrets(rng),
        80..=87 => versions_and_numbers(rng),
        _ => prose(rng),
    }
}

fn ident<R: Rng + ?Sized>(rng: &mut R) -> &'static str {
    const WORDS: &[&str] = &[
        "user", "account", "order", "item", "value", "result", "config", "handler", "request",
        "response", "buffer", "index", "count", "node", "parser", "session", "cache", "client",
        "server", "context", "options", "payload", "entry", "record", "stream", "reader",
    ];
    WORDS.choose(rng).copied().unwrap_or("value")
}

fn code<R: Rng + ?Sized>(rng: &mut R) -> String {
    let (a, b) = (ident(rng), ident(rng));
    let n: u32 = rng.random_range(0..10_000);
    let templates = [
        format!("    let {a}_{b} = {a}.get_{b}(&{b}s[{}])?;", n % 16),
        format!("    if {a}.len() > {n} {{ return Err(Error::TooLong({a}.len())); }}"),
        format!(
            "def {a}_{b}(self, {b}: int = {n}) -> Optional[{}]:",
            capital(a)
        ),
        format!(
            "  const {a}{} = await fetch{}({b}Id, {{ timeout: {n} }});",
            capital(b),
            capital(a)
        ),
        format!("    for (const [{a}, {b}] of Object.entries(this.{a}Map)) {{"),
        format!(
            "func ({a} *{}) {}({b} string) error {{",
            capital(a),
            capital(b)
        ),
        format!("        self.{a}_{b}s.insert({b}.id, {b}.clone());"),
        format!(
            "import {{ {}{} }} from './{a}/{b}';",
            capital(a),
            capital(b)
        ),
        format!("    assert {a}.{b} == {n}, f\"unexpected {{{a}.{b}}}\""),
        format!(
            "#[derive(Debug, Clone)] pub struct {}{};",
            capital(a),
            capital(b)
        ),
    ];
    templates.choose(rng).cloned().unwrap_or_default()
}

fn capital(s: &str) -> String {
    let mut c = s.chars();
    c.next()
        .map(|f| f.to_ascii_uppercase().to_string() + c.as_str())
        .unwrap_or_default()
}

fn test_hash<R: Rng + ?Sized>(rng: &mut R) -> String {
    let templates = [
        format!(
            "    assert_eq!(sha256_hex(b\"{}\"), \"{}\");",
            chars(rng, LOWER, 6),
            chars(rng, HEX, 64)
        ),
        format!(
            "        expect(md5(input)).toBe('{}');",
            chars(rng, HEX, 32)
        ),
        format!("    self.assertEqual(digest, \"{}\")", chars(rng, HEX, 40)),
        format!("commit {}", chars(rng, HEX, 40)),
        format!("Merge: {} {}", chars(rng, HEX, 7), chars(rng, HEX, 7)),
        format!("    \"sha1\": \"{}\",", chars(rng, HEX, 40)),
        format!("const FIXTURE_SHA512 = \"{}\";", chars(rng, HEX, 128)),
    ];
    templates.choose(rng).cloned().unwrap_or_default()
}

fn uuid<R: Rng + ?Sized>(rng: &mut R) -> String {
    format!(
        "{}-{}-4{}-{}{}-{}",
        chars(rng, HEX, 8),
        chars(rng, HEX, 4),
        chars(rng, HEX, 3),
        chars(rng, "89ab", 1),
        chars(rng, HEX, 3),
        chars(rng, HEX, 12)
    )
}

fn uuid_line<R: Rng + ?Sized>(rng: &mut R) -> String {
    let id = uuid(rng);
    let templates = [
        format!("    id: \"{id}\","),
        format!("const REQUEST_ID = '{id}';"),
        format!("INSERT INTO orders (id, status) VALUES ('{id}', 'open');"),
        format!(
            "  <ProjectGuid>{{{}}}</ProjectGuid>",
            id.to_ascii_uppercase()
        ),
        format!("session_id = uuid.UUID(\"{id}\")"),
    ];
    templates.choose(rng).cloned().unwrap_or_default()
}

fn lockfile<R: Rng + ?Sized>(rng: &mut R) -> String {
    let name = format!("{}-{}", ident(rng), ident(rng));
    let version = format!(
        "{}.{}.{}",
        rng.random_range(0..9),
        rng.random_range(0..30),
        rng.random_range(0..20)
    );
    let bytes: Vec<u8> = (0..64).map(|_| rng.random()).collect();
    let sri = STANDARD.encode(bytes);
    let templates = [
        format!("      \"integrity\": \"sha512-{sri}\","),
        format!("      \"resolved\": \"https://registry.npmjs.org/{name}/-/{name}-{version}.tgz\","),
        format!("checksum = \"{}\"", chars(rng, HEX, 64)),
        format!("source = \"registry+https://github.com/rust-lang/crates.io-index\"\nname = \"{name}\"\nversion = \"{version}\""),
        format!("    {{file = \"{name}-{version}-py3-none-any.whl\", hash = \"sha256:{}\"}},", chars(rng, HEX, 64)),
        format!("\"{name}@^{version}\":\n  version \"{version}\"\n  resolved \"https://registry.yarnpkg.com/{name}/-/{name}-{version}.tgz#{}\"", chars(rng, HEX, 40)),
        format!("{name} @ git+https://github.com/acme/{name}.git@{}", chars(rng, HEX, 40)),
    ];
    templates.choose(rng).cloned().unwrap_or_default()
}

fn data_uri<R: Rng + ?Sized>(rng: &mut R) -> String {
    let len = rng.random_range(100..1500);
    let mut bytes: Vec<u8> = vec![0x89, b'P', b'N', b'G', 0x0d, 0x0a, 0x1a, 0x0a];
    bytes.extend((0..len).map(|_| rng.random::<u8>()));
    let b64 = STANDARD.encode(bytes);
    let templates = [
        format!("  background-image: url(\"data:image/png;base64,{b64}\");"),
        format!("const ICON = 'data:image/png;base64,{b64}';"),
        format!("<img alt=\"logo\" src=\"data:image/png;base64,{b64}\" />"),
    ];
    templates.choose(rng).cloned().unwrap_or_default()
}

fn minified<R: Rng + ?Sized>(rng: &mut R) -> String {
    let mut out = String::from("!function(e,t){");
    let parts = rng.random_range(10..60);
    for _ in 0..parts {
        let (a, b, c) = (
            chars(rng, LOWER, 1),
            chars(rng, LOWER, 1),
            chars(rng, ALNUM, 2),
        );
        let piece = match rng.random_range(0..6) {
            0 => format!("var {a}=t.{}({b},\"{}\");", ident(rng), ident(rng)),
            1 => format!("function {a}{c}({b}){{return {b}&&{b}.__esModule?{b}:{{default:{b}}}}}"),
            2 => format!(
                "{a}.prototype.{}=function(){{return this._{}||(this._{}={{}})}};",
                ident(rng),
                ident(rng),
                ident(rng)
            ),
            3 => format!(
                "if(\"undefined\"!=typeof {a})throw new TypeError(\"{} is not a {}\");",
                ident(rng),
                ident(rng)
            ),
            4 => format!(
                "{a}[{}]={b}.charCodeAt({})^{};",
                rng.random_range(0..99),
                rng.random_range(0..99),
                rng.random_range(0..255)
            ),
            _ => format!("e.exports={{{}:{a},{}:{b}}};", ident(rng), ident(rng)),
        };
        out.push_str(&piece);
    }
    out.push_str("}(this,function(){});");
    out
}

fn talks_about_secrets<R: Rng + ?Sized>(rng: &mut R) -> String {
    const LINES: &[&str] = &[
        "    let token = lexer.next_token()?;",
        "api_key = os.environ[\"API_KEY\"]",
        "const secretName = process.env.SECRET_NAME;",
        "    if (!apiKey) throw new Error('missing api key: set OPENAI_API_KEY');",
        "password_field.set_placeholder(\"Enter your password\")",
        "def get_api_key(self) -> str:",
        "    passwordHash, err := bcrypt.GenerateFromPassword([]byte(pw), bcrypt.DefaultCost)",
        "  token: ${{ secrets.GITHUB_TOKEN }}",
        "DATABASE_URL=postgres://${DB_USER}:${DB_PASSWORD}@${DB_HOST}:5432/app",
        "    \"password\": \"<your-password>\",",
        "SECRET_KEY = env(\"DJANGO_SECRET_KEY\")",
        "        auth_token = request.headers.get(\"Authorization\")",
        "  private_key_path: ~/.ssh/id_ed25519",
        "// Rotate the access key every 90 days (see docs/security.md).",
        "pub fn tokenizer_for(model: &str) -> Tokenizer {",
        "    client_secret: Option<String>,",
        "export AWS_SECRET_ACCESS_KEY=\"$(vault read -field=secret aws/creds)\"",
        "password = getpass.getpass(\"Password: \")",
        "    const { token, refreshToken } = await auth.login(username, password);",
        "jwt_secret = config.jwt_secret or generate_secret()",
        "  - name: API_TOKEN\n    valueFrom:\n      secretKeyRef: {name: api, key: token}",
        "    KeyError: 'secret_access_key'",
    ];
    LINES.choose(rng).map(|s| s.to_string()).unwrap_or_default()
}

fn versions_and_numbers<R: Rng + ?Sized>(rng: &mut R) -> String {
    let (a, b, c, d) = (
        rng.random_range(0..20),
        rng.random_range(0..40),
        rng.random_range(0..100),
        rng.random_range(0..9999),
    );
    let templates = [
        format!("  \"version\": \"{a}.{b}.{c}\","),
        format!("FileVersion: {a}.{b}.{c}.{d}"),
        format!("    timeout_ms: {d}{c},"),
        format!(
            "created_at = \"2026-{:02}-{:02}T{:02}:{:02}:{:02}Z\"",
            a % 12 + 1,
            b % 28 + 1,
            c % 24,
            b,
            c % 60
        ),
        format!("  listen: 127.0.0.1:{}", 1024 + d),
        format!("    color: #{};", chars(rng, HEX, 6)),
        format!(
            "    let n = {}u64 * {d};",
            rng.random_range(1_000_000_000u64..9_999_999_999)
        ),
        format!(
            "    \"\\u{:04x}\" => '{}',",
            rng.random_range(0x20..0x7e),
            chars(rng, LOWER, 1)
        ),
        format!(
            "test_{}_{} ... ok <{}.{:03}s>",
            ident(rng),
            ident(rng),
            a,
            d % 1000
        ),
    ];
    templates.choose(rng).cloned().unwrap_or_default()
}

fn prose<R: Rng + ?Sized>(rng: &mut R) -> String {
    const LINES: &[&str] = &[
        "/// Returns the median of the values, or `None` when there are none.",
        "# Installation: run `npm install` then `npm test` from the repository root.",
        "    // The cache is keyed by the request's path and its query, never by its body.",
        "The token bucket refills at a steady rate; a burst may spend what has accumulated.",
        "  * @param {string} name - the user's display name, as they typed it",
        "See RFC 7519 for the structure of a JSON Web Token and its signature.",
        "",
        "}",
    ];
    LINES.choose(rng).map(|s| s.to_string()).unwrap_or_default()
}
