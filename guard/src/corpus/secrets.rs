//! Planted secrets: for every rule of the bundled rule set (`rules/secrets.toml`), random values
//! in the vendor's documented format (prefix, charset, length; random otherwise, so never a
//! real credential), under the names programs give them, and the texts that hold them.
//!
//! The generators are written from the token formats, not from the rules' regexes, so that
//! testing one against the other means something.

mod blocks;
mod cloud;
mod ids;
mod keys;
mod llm;
mod saas;
mod util;

use rand::Rng;

use super::Planted;
use crate::kind::Kind;

/// The ids of the rules this module plants values for: every rule of `rules/secrets.toml`, in
/// the file's order.
pub fn rule_ids() -> Vec<&'static str> {
    ids::IDS.to_vec()
}

/// One value of rule `id`.
fn one<R: Rng + ?Sized>(rng: &mut R, id: &str) -> Planted {
    let made = cloud::make(rng, id)
        .or_else(|| saas::make(rng, id))
        .or_else(|| llm::make(rng, id))
        .or_else(|| keys::make(rng, id));
    let (name, value, raw) = made.map_or_else(
        || (id.to_string(), String::new(), false),
        |v| (v.name, v.value, v.raw),
    );
    Planted {
        kind: Kind::secret(id).to_string(),
        value,
        name,
        raw,
    }
}

/// `per_kind` random values of every rule, rule by rule in the rule file's order.
pub fn planted<R: Rng + ?Sized>(rng: &mut R, per_kind: usize) -> Vec<Planted> {
    let mut out = Vec::with_capacity(ids::IDS.len() * per_kind);
    for id in ids::IDS {
        for _ in 0..per_kind {
            out.push(one(rng, id));
        }
    }
    out
}

/// `per_kind` random values of every rule, each with a text that holds it verbatim: an
/// assignment ([`super::embed`]) for most, the URL, connection string, HTTP header, credential
/// file or key file the value belongs in for the others.
pub fn contexts<R: Rng + ?Sized>(rng: &mut R, per_kind: usize) -> Vec<(Planted, String)> {
    let mut out = Vec::with_capacity(ids::IDS.len() * per_kind);
    for id in ids::IDS {
        for _ in 0..per_kind {
            let planted = one(rng, id);
            let text = blocks::context(rng, id, &planted);
            out.push((planted, text));
        }
    }
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    //! The rule file is checked against the generators by emulating the engine: keywords found
    //! case-insensitively, each rule's regex run in the window around each keyword occurrence,
    //! then the entropy bound and the allowlists.

    use super::*;
    use rand::rngs::StdRng;
    use rand::SeedableRng;
    use regex::Regex;
    use std::collections::{HashMap, HashSet};

    const RULES: &str = include_str!("../../rules/secrets.toml");
    /// The engine's windows (`scan.rs`): 256 bytes before a keyword, 4 KiB after, 16 KiB after
    /// for a multi-line rule.
    const BEFORE: usize = 256;
    const AFTER: usize = 4096;
    const DOTALL_WINDOW: usize = 16 * 1024;

    struct Allow {
        target: String,
        regexes: Vec<Regex>,
        stopwords: Vec<String>,
    }

    struct Rule {
        id: String,
        regex: Regex,
        group: usize,
        entropy: Option<f64>,
        keywords: Vec<String>,
        dotall: bool,
        allow: Vec<Allow>,
    }

    fn strings(item: Option<&toml_edit::Item>) -> Vec<String> {
        item.and_then(|i| i.as_array())
            .map(|a| {
                a.iter()
                    .map(|v| v.as_str().expect("a string").to_string())
                    .collect()
            })
            .unwrap_or_default()
    }

    fn rules() -> Vec<Rule> {
        let doc: toml_edit::DocumentMut = RULES.parse().expect("rules/secrets.toml parses");
        let tables = doc["rules"].as_array_of_tables().expect("[[rules]]");
        tables
            .iter()
            .map(|t| {
                let id = t["id"].as_str().expect("id").to_string();
                let source = t["regex"].as_str().expect("regex");
                let regex = Regex::new(source).unwrap_or_else(|e| panic!("{id}: {e}"));
                let allow = t
                    .get("allowlists")
                    .and_then(|a| a.as_array_of_tables())
                    .map(|lists| {
                        lists
                            .iter()
                            .map(|l| Allow {
                                target: l
                                    .get("regexTarget")
                                    .and_then(|x| x.as_str())
                                    .unwrap_or("secret")
                                    .to_string(),
                                regexes: strings(l.get("regexes"))
                                    .iter()
                                    .map(|s| Regex::new(s).unwrap_or_else(|e| panic!("{id}: {e}")))
                                    .collect(),
                                stopwords: strings(l.get("stopwords")),
                            })
                            .collect()
                    })
                    .unwrap_or_default();
                Rule {
                    group: t
                        .get("secretGroup")
                        .and_then(|g| g.as_integer())
                        .map_or(0, |g| usize::try_from(g).expect("secretGroup >= 0")),
                    entropy: t.get("entropy").and_then(|e| e.as_float()),
                    keywords: strings(t.get("keywords")),
                    dotall: source.starts_with("(?s)"),
                    allow,
                    regex,
                    id,
                }
            })
            .collect()
    }

    /// Shannon entropy, in bits per character.
    fn entropy(s: &str) -> f64 {
        let mut counts: HashMap<char, usize> = HashMap::new();
        for c in s.chars() {
            *counts.entry(c).or_default() += 1;
        }
        let n = s.chars().count() as f64;
        counts
            .values()
            .map(|&c| {
                let p = c as f64 / n;
                -p * p.log2()
            })
            .sum()
    }

    fn floor(text: &str, mut i: usize) -> usize {
        while !text.is_char_boundary(i) {
            i -= 1;
        }
        i
    }

    fn ceil(text: &str, mut i: usize) -> usize {
        while !text.is_char_boundary(i) {
            i += 1;
        }
        i
    }

    fn allowed(rule: &Rule, secret: &str, whole: &str, line: &str) -> bool {
        let lower = secret.to_lowercase();
        rule.allow.iter().any(|a| {
            let target = match a.target.as_str() {
                "match" => whole,
                "line" => line,
                _ => secret,
            };
            a.regexes.iter().any(|re| re.is_match(target))
                || a.stopwords
                    .iter()
                    .any(|w| lower.contains(&w.to_lowercase()))
        })
    }

    /// The secrets (byte ranges of `text`) the engine reports for `rule`.
    fn findings(rule: &Rule, text: &str) -> Vec<(usize, usize)> {
        let lower = text.to_ascii_lowercase();
        let mut out = Vec::new();
        for kw in &rule.keywords {
            for (pos, _) in lower.match_indices(kw.as_str()) {
                let line_start = text[..pos].rfind('\n').map_or(0, |i| i + 1);
                let line_end = text[pos..].find('\n').map_or(text.len(), |i| pos + i);
                let start = floor(text, line_start.max(pos.saturating_sub(BEFORE)));
                let end = if rule.dotall {
                    ceil(text, (pos + kw.len() + DOTALL_WINDOW).min(text.len()))
                } else {
                    ceil(text, line_end.min(pos + kw.len() + AFTER))
                };
                let window = &text[start..end];
                for caps in rule.regex.captures_iter(window) {
                    let (Some(whole), Some(secret)) = (caps.get(0), caps.get(rule.group)) else {
                        continue;
                    };
                    if rule
                        .entropy
                        .is_some_and(|min| entropy(secret.as_str()) < min)
                    {
                        continue;
                    }
                    let (s, e) = (start + secret.start(), start + secret.end());
                    let ls = text[..s].rfind('\n').map_or(0, |i| i + 1);
                    let le = text[e..].find('\n').map_or(text.len(), |i| e + i);
                    if allowed(rule, secret.as_str(), whole.as_str(), &text[ls..le.max(ls)]) {
                        continue;
                    }
                    if !out.contains(&(s, e)) {
                        out.push((s, e));
                    }
                }
            }
        }
        out
    }

    #[test]
    fn the_rule_file_is_well_formed() {
        let rules = rules();
        assert!(rules.len() >= 110, "only {} rules", rules.len());
        let ids: Vec<&str> = rules.iter().map(|r| r.id.as_str()).collect();
        let unique: HashSet<&str> = ids.iter().copied().collect();
        assert_eq!(unique.len(), ids.len(), "duplicate rule ids");
        for r in &rules {
            assert!(
                r.id.chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-'),
                "{}: ids are kebab-case",
                r.id
            );
            assert!(!r.keywords.is_empty(), "{}: no keywords", r.id);
            for k in &r.keywords {
                assert!(
                    !k.is_empty() && *k == k.to_lowercase(),
                    "{}: keyword {k:?}",
                    r.id
                );
            }
            assert!(
                r.group < r.regex.captures_len(),
                "{}: no group {}",
                r.id,
                r.group
            );
            // Multi-line rules say so with a leading `(?s)`; a line break written elsewhere
            // would widen the engine's window too (it reads either as multi-line).
            assert_eq!(
                r.dotall,
                crate::rules::spans_lines(r.regex.as_str()),
                "{}: multi-line iff it starts with (?s)",
                r.id
            );
        }
        assert_eq!(
            rule_ids(),
            ids,
            "rule_ids() lists the rule file's ids in order"
        );
    }

    #[test]
    fn every_planted_value_is_found_by_its_own_rule() {
        recall(0x5ec2_e75e, 20);
    }

    fn recall(seed: u64, per_kind: usize) {
        let rules = rules();
        let by_kind: HashMap<String, &Rule> = rules
            .iter()
            .map(|r| (Kind::secret(&r.id).to_string(), r))
            .collect();
        let mut rng = StdRng::seed_from_u64(seed);
        let planted = contexts(&mut rng, per_kind);
        assert_eq!(planted.len(), per_kind * rules.len());
        let mut misses = Vec::new();
        for (p, text) in &planted {
            let rule = by_kind[&p.kind];
            assert!(!p.value.is_empty(), "{}: empty value", rule.id);
            assert!(
                text.contains(&p.value),
                "{}: {:?} not in {text:?}",
                rule.id,
                p.value
            );
            if let Some(min) = rule.entropy {
                let e = entropy(&p.value);
                assert!(
                    e >= min,
                    "{}: entropy {e:.2} < {min} for {:?}",
                    rule.id,
                    p.value
                );
            }
            let found = findings(rule, text)
                .iter()
                .any(|&(s, e)| text[s..e] == p.value);
            if !found {
                misses.push(format!("{}: {:?}\n  in {text:?}", rule.id, p.value));
            }
        }
        let recall = 1.0 - misses.len() as f64 / planted.len() as f64;
        eprintln!(
            "recall {:.4} ({} of {} values, {} rules)",
            recall,
            planted.len() - misses.len(),
            planted.len(),
            rules.len()
        );
        assert!(misses.is_empty(), "missed:\n{}", misses.join("\n"));
    }

    #[test]
    fn planted_values_carry_their_kind_and_name() {
        let mut rng = StdRng::seed_from_u64(7);
        let planted = planted(&mut rng, 3);
        assert_eq!(planted.len(), 3 * rule_ids().len());
        for (p, id) in planted.iter().zip(rule_ids().iter().flat_map(|id| [id; 3])) {
            assert_eq!(p.kind, Kind::secret(id).to_string());
            assert!(!p.name.is_empty() && !p.value.is_empty(), "{id}");
            assert_eq!(
                p.raw,
                p.value.contains('\n'),
                "{id}: raw only for multi-line values"
            );
        }
        let again = super::planted(&mut StdRng::seed_from_u64(7), 3);
        assert_eq!(planted, again, "a seed gives the same values");
    }

    /// Lines of ordinary code and configuration that hold no secret.
    const ORDINARY: &[&str] = &[
        r#"let id = Uuid::parse_str("550e8400-e29b-41d4-a716-446655440000")?;"#,
        r#"commit = "9fceb02d0ae598e95dc970b74767f19372d61af8""#,
        r#"assert_eq!(sha256(b"abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");"#,
        r#"      "integrity": "sha512-v2kDEe57lecTulaDIuNTPy3Ry4gLGJ6Z1O3vE1krgXZNrsQ+susLaPMGRg/2VaLTGAMDTB0pHv9iT6E3M5Y2yw==","#,
        r#"<img src="data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==">"#,
        r#"!function(e,t){"object"==typeof exports&&"undefined"!=typeof module?module.exports=t():"function"==typeof define&&define.amd?define(t):(e=e||self).Vue=t()}(this,function(){"use strict";var e=Object.freeze({});function t(e){return null==e}"#,
        r#"tokenizer = AutoTokenizer.from_pretrained("bert-base-uncased")"#,
        r#"const secretName = "my-app-secrets";"#,
        r#"passwordField.setAttribute("type", "password");"#,
        r#"const apiKey = getApiKey();"#,
        r#"password = os.environ["DB_PASSWORD"]"#,
        r#"api_key = os.environ.get("OPENAI_API_KEY")"#,
        r#"    token: process.env.GITHUB_TOKEN,"#,
        r#"DATABASE_URL=postgres://${DB_USER}:${DB_PASSWORD}@${DB_HOST}:5432/app"#,
        r#"  password: "{{ vault_db_password }}""#,
        r#"secret_key = "<your-secret-key>""#,
        r#"conn = psycopg2.connect("dbname=%(db)s user=%(user)s password=%(pw)s")"#,
        r#"client_secret = None"#,
        r#"    "password": "","#,
        r#"  max_tokens: 4096,"#,
        r#"let hash = blake3::hash(b"hello"); // ea8f163db38682925e4491c5e58d4bb3506ef8c14eb78a86e908c5624a67200f"#,
        r#"SECRET_KEY = get_random_secret_key()"#,
        r#"headers = {"Authorization": f"Bearer {token}"}"#,
        r#"curl -H "Authorization: Bearer $TOKEN" https://api.github.com/user"#,
        r#"redis_url = "redis://localhost:6379/0""#,
        r#"      - ME_CONFIG_MONGODB_URL=mongodb://root:example@mongo:27017/"#,
        r#"CELERY_BROKER_URL = "amqp://guest:guest@localhost:5672//""#,
        r#"password_reset_url = "https://example.com/reset?token=abc""#,
        r#"if (password.length < 8) { throw new Error("password too short"); }"#,
        r#"const token = jwt.sign(payload, process.env.JWT_SECRET, { expiresIn: "1h" });"#,
        r#"PWD=/home/runner/work/project/project"#,
        r#"      - uses: actions/checkout@8e5e7e5ab8b370d6c329ec480221332ada57f0ab # v3.5.2"#,
        r#"      "resolved": "https://registry.npmjs.org/lodash/-/lodash-4.17.21.tgz","#,
        r#"        secretKeyRef: { name: db-credentials, key: password }"#,
        r#"let tokens: Vec<Token> = lexer.tokenize(source)?;"#,
        r#"passphrase = getpass.getpass("Passphrase: ")"#,
        r#"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl user@host"#,
        r#"Content-Security-Policy: script-src 'sha256-B2yPHKaXnvFWtRChIbabYmUBFZdVfKKXHbWtWidDVF8='"#,
        r#"checksum = "sha256:2c26b46b68ffc68ff99b453c1d30413413422d706483bfa0f98a5e886266e7ae""#,
        r#"private_key_path = "~/.ssh/id_ed25519""#,
        r#"auth_token = auth_token_from_header(request)"#,
        r#"  "next_page_token": "CiAKGjBpNDd2Nmp2Zml2cXRwYjBpOXA2MHJ1MXRvEAE","#,
        r#"AWS_REGION=us-east-1"#,
        r#"aws_secret_access_key = os.environ["AWS_SECRET_ACCESS_KEY"]"#,
        r#"    "timezone": "Asia/Tokyo","#,
        r#"	Password string `json:"password" validate:"required,min=8"`"#,
        r#"user.password = bcrypt.hashSync(req.body.password, 10);"#,
        r#"log.info("user %s refreshed token %s", user, token)"#,
        r#"access_token = response.json()["access_token"]"#,
        r#"secret = secrets.token_urlsafe(32)"#,
        r#"  apiKey: import.meta.env.VITE_FIREBASE_API_KEY,"#,
        r#"const newPassword = hashedPassword;"#,
        r#"export GPG_TTY=$(tty)"#,
        r#"image: ghcr.io/org/app@sha256:4f53cda18c2baa0c0354bb5f9a3ecbe5ed12ab4d8e11ba873c2f11161202b945"#,
        r#"token_type = "Bearer""#,
        r#"Authorization: Bearer <token>"#,
        r#"git clone https://github.com/rust-lang/regex.git"#,
        r#"{"id":"chatcmpl-9xYzAbCdEfGh","object":"chat.completion","model":"gpt-4o-mini"}"#,
        r#"      - name: API_TOKEN
        valueFrom: { secretKeyRef: { name: api, key: token } }"#,
        r#"    secret: ${{ secrets.DEPLOY_KEY }}"#,
        // Lines like those a scan of real code turned up.
        r#"let mut passwd = mem::MaybeUninit::<libc::passwd>::uninit();"#,
        r#"    type Token = private::IdentAny;"#,
        r#"pub use crate::token::private::CustomToken;"#,
        r#"let token: cpuid::InitToken = cpuid::init();"#,
        r#"	lastSignificantToken = "?InterpolationInTemplate";"#,
        r#"type OpeningParenToken = OpeningParenToken$1;"#,
        r#"    {"spwd", PyInit_spwd},"#,
        r#"    def add_password(self, realm, uri, user, passwd, is_authenticated=False):"#,
        r#"    "chaos:\n  strategies: [boundary]\n  adversarial_tests_pass: false\nmodels:\n","#,
        r#"    let raw_private_key: Curve25519SeedBin<'_> = private_key"#,
        r#"# http://rt.openssl.org/Ticket/Display.html?id=3021&user=guest&pass=guest."#,
        r#" * const options = new URL('https://abc:xyz@example.com');"#,
        r#""AWS4-HMAC-SHA256 Credential=H20ABqCkLZID4rLe/20220809/us-east-1/s3/aws4_request, SignedHeaders=host""#,
        r#"let aws_secret_access_key = "object_store:fake_secret_key".to_string();"#,
        r#"/// Examples: `AKIAIOSFODNN7EXAMPLE`, `ASIA4ZP5EXAMPLETOKEN`"#,
        r#"    ///     .all("https://Aladdin:opensesame@localhost:8887")"#,
        r#"//!   force_pass: true/false"#,
    ];

    #[test]
    fn ordinary_code_matches_no_rule() {
        let rules = rules();
        let mut hits = Vec::new();
        for line in ORDINARY {
            for rule in &rules {
                for (s, e) in findings(rule, line) {
                    hits.push(format!("{}: {:?} in {line:?}", rule.id, &line[s..e]));
                }
            }
        }
        assert!(hits.is_empty(), "false positives:\n{}", hits.join("\n"));
    }
}
