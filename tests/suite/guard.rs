//! LocalGuard end to end: a project full of planted secrets and personal data is fixed through
//! the mock server, and nothing planted reaches the server, the session folder, the report or
//! the recording, while the fixed file still holds every value. Then the modes, a model that
//! mangles a placeholder, the allowlist and patterns, and `ralph-loop guard scan`.

use std::path::Path;

use ralph_guard::corpus::{self, Planted};
use rand::SeedableRng;
use serde_json::Value;

use super::support::*;

/// The bug the model fixes and how: the rest of the file it gives back as it was shown it.
const BUG: &str = "    ordered = values\n";
const FIX: &str = "    ordered = sorted(values)\n";

const MEDIAN: &str = "\n\ndef median(values):\n    ordered = values\n    mid = len(ordered) // 2\n    if len(ordered) % 2:\n        return ordered[mid]\n    return (ordered[mid - 1] + ordered[mid]) / 2\n";

/// Environment variables whose names say they hold secrets and whose values no rule would
/// catch (a low-entropy password, a plain phrase); a test prints them.
const ENV: [(&str, &str); 5] = [
    ("LEGACY_SIGNING_KEY", "purple-monkey-dishwasher-42"),
    ("APP_PASSPHRASE", "correct horse battery staple"),
    ("SESSION_COOKIE", "remember-me-forever-please"),
    ("BILLING_CREDENTIALS", "accounts-payable-2026"),
    ("OLD_DB_PASS_KEY", "swordfish-swordfish-9"),
];

/// The planted corpus: every secret rule and personal-data kind, five values each, as the
/// contexts code and configuration hold them; and where each goes.
struct Planting {
    /// Every planted value.
    values: Vec<String>,
    target: String,
    tests: String,
    prompt: String,
    output: String,
}

fn planting() -> Planting {
    let mut rng = rand::rngs::StdRng::seed_from_u64(1516);
    let mut all: Vec<(Planted, String)> = corpus::secrets::contexts(&mut rng, 5);
    all.extend(corpus::pii::planted(&mut rng, 5).into_iter().map(|p| {
        let text = corpus::embed(&mut rng, &p);
        (p, text)
    }));
    // Spread over the target, its tests, the prompt file and the test output, in turn.
    let mut parts = [String::new(), String::new(), String::new(), String::new()];
    for (i, (_, text)) in all.iter().enumerate() {
        parts[i % 4].push_str(text);
        if !text.ends_with('\n') {
            parts[i % 4].push('\n');
        }
    }
    let mut values: Vec<String> = all.into_iter().map(|(p, _)| p.value).collect();
    values.extend(ENV.iter().map(|(_, v)| v.to_string()));
    let [target, tests, prompt, output] = parts;
    Planting {
        values,
        target: format!("CONFIG = r'''\n{target}'''\n{MEDIAN}"),
        tests: format!(
            "import os\n\nfrom settings import median\n\nFIXTURES = r'''\n{tests}'''\n\n\ndef test_odd():\n    assert median([3, 1, 2]) == 2\n\n\ndef test_even_prints_what_it_loads():\n    with open('loaded.txt') as f:\n        print(f.read())\n    for name in {names:?}:\n        print(name, os.environ.get(name))\n    assert median([4, 1, 3, 2]) == 2.5\n",
            names = ENV.iter().map(|(n, _)| *n).collect::<Vec<_>>()
        ),
        prompt: format!("Fix the median. The configuration below must stay as it is.\n\n{prompt}"),
        output,
    }
}

/// Every file under `dir`, with its bytes.
fn files_under(dir: &Path) -> Vec<(String, Vec<u8>)> {
    files_below(dir)
        .into_iter()
        .filter_map(|path| Some((path.display().to_string(), std::fs::read(&path).ok()?)))
        .collect()
}

/// The planted values found in `bytes`, as they are or as JSON escapes them.
fn leaked<'v>(values: &'v [String], bytes: &[u8]) -> Vec<&'v str> {
    let text = String::from_utf8_lossy(bytes);
    values
        .iter()
        .filter(|v| {
            let escaped = serde_json::to_string(v).unwrap();
            let escaped = &escaped[1..escaped.len() - 1];
            text.contains(v.as_str()) || text.contains(escaped)
        })
        .map(String::as_str)
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn nothing_planted_reaches_the_provider_or_the_disk_and_the_fix_keeps_every_value() {
    let p = planting();
    assert!(p.values.len() >= 600, "{} values planted", p.values.len());
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "settings.py", &p.target);
    write(dir.path(), "test_settings.py", &p.tests);
    write(dir.path(), "settings.py.prompt.md", &p.prompt);
    write(dir.path(), "loaded.txt", &p.output);
    let llm = artisan_answers(fixer()).await;
    let record = dir.path().join("recording.jsonl");
    // The test command the user typed holds one too.
    let token = p.values.iter().find(|v| v.starts_with("ghp_")).unwrap();
    let test_command = format!("env DEPLOY_TOKEN={token} python3 -m pytest -q");
    let mut cmd = ralph(dir.path(), &llm);
    for (name, value) in ENV {
        cmd.env(name, value);
    }
    cmd.timeout(std::time::Duration::from_secs(300))
        .args([
            "settings.py",
            "-t",
            &test_command,
            "--output",
            "json",
            "--record",
        ])
        .arg(&record)
        .assert()
        .code(0);
    // The fix is in, and every value the file held is back where it was.
    assert_file(dir.path(), "settings.py", p.target.replace(BUG, FIX));
    // Not one planted value in any byte the server received...
    let received = llm.server.received_requests().await.unwrap();
    assert!(received.len() >= 2, "{} requests", received.len());
    for r in &received {
        let found = leaked(&p.values, &r.body);
        assert!(
            found.is_empty(),
            "{} planted values sent, such as {:?}",
            found.len(),
            &found[..found.len().min(5)]
        );
    }
    // ...nor in the session folder (logs, results, state, report, checkpoints), the vault or
    // the recording.
    let mut stored = files_under(&dir.path().join(".ralph"));
    stored.push(("recording".into(), std::fs::read(&record).unwrap()));
    // But one: the backup of the target as it was, the user's own file byte for byte, kept so
    // they can always get back to it, readable by its owner only.
    // And the command line as typed, which a resumed run must run, beside it.
    let (kept, stored): (Vec<_>, Vec<_>) = stored.into_iter().partition(|(path, _)| {
        path.ends_with("/original/settings.py") || path.ends_with("/run.json")
    });
    assert_eq!(kept.len(), 2);
    for (path, bytes) in &kept {
        if path.ends_with("run.json") {
            assert_eq!(leaked(&p.values, bytes), [token.as_str()]);
        } else {
            assert_eq!(bytes, p.target.as_bytes());
        }
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600, "{path}: {mode:o}");
    }
    for (path, bytes) in &stored {
        let found = leaked(&p.values, bytes);
        assert!(
            found.is_empty(),
            "{path} holds {} planted values, such as {:?}",
            found.len(),
            &found[..found.len().min(5)]
        );
    }
    // The model was told about placeholders and shown them.
    let asked = llm.requests_of("artisan").await;
    let prompt = prompt_of(&asked[0]);
    assert!(
        prompt.contains("<<SECRET_AWS_ACCESS_KEY_ID_1>>"),
        "no placeholder shown"
    );
    assert!(
        prompt.contains("they are put back in the file"),
        "no note on placeholders"
    );
    // The report counts kinds and numbers, never values.
    let report = report(dir.path());
    let g = &report["local_guard"];
    assert_eq!(g["enabled"], true);
    assert_eq!(g["mode"], "mask");
    let kinds = g["masked"].as_object().unwrap();
    assert!(kinds.len() >= 100, "{} kinds masked", kinds.len());
    assert!(kinds.contains_key("SECRET_ENV_LEGACY_SIGNING_KEY"), "{g:#}");
    assert!(g["restored"].as_u64().unwrap() > 100, "{g:#}");
    // The report shows the test command masked, and says where it is kept.
    let shown = report["test_command"].as_str().unwrap();
    assert_eq!(
        shown,
        "env DEPLOY_TOKEN=<<SECRET_GITHUB_PAT_1>> python3 -m pytest -q"
    );
    let notes = report["notes"].to_string();
    assert!(
        notes.contains("the test command holds SECRET_GITHUB_PAT")
            && notes.contains("run.json keeps the command line as typed"),
        "{notes}"
    );
}

/// A small project with two planted values, its test failing until the median sorts.
fn small_project() -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    let key = "AKIAZ4Q7XW2PLM3NB5VC";
    let target =
        format!("AWS_KEY = \"{key}\"\nOWNER = \"ada.lovelace@analytical.example.org\"\n{MEDIAN}");
    write(dir.path(), "settings.py", &target);
    write(
        dir.path(),
        "test_settings.py",
        "from settings import median\n\n\ndef test_even():\n    assert median([4, 1, 3, 2]) == 2.5\n",
    );
    (dir, target)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_mangled_placeholder_is_sent_back_and_never_guessed() {
    let (dir, target) = small_project();
    let llm = MockLlm::start().await;
    // First a file whose placeholder lost its brackets, then the right one.
    let mangled = from_prompt(|prompt| {
        let fixed = fixed_from(prompt);
        code(
            "python",
            &fixed.replace(
                "<<SECRET_AWS_ACCESS_KEY_ID_1>>",
                "SECRET_AWS_ACCESS_KEY_ID_1",
            ),
        )
    });
    llm.helpful().script("artisan", [mangled, fixer()]);
    fix(dir.path(), &llm);
    assert_file(dir.path(), "settings.py", target.replace(BUG, FIX));
    let second = last_prompt_of(&llm, "artisan", 2).await;
    assert_has(
        &second,
        &[
            "Your file could not be written",
            "SECRET_AWS_ACCESS_KEY_ID_1",
        ],
    );
}

/// Fixes `settings.py` in `dir` through `llm`, which must succeed.
fn fix(dir: &Path, llm: &MockLlm) {
    fix_settings(dir, llm).assert().code(0);
}

/// `ralph-loop settings.py` in `dir` through `llm`, under pytest, its report printed as JSON.
fn fix_settings(dir: &Path, llm: &MockLlm) -> assert_cmd::Command {
    let mut cmd = ralph(dir, llm);
    cmd.args([
        "settings.py",
        "-t",
        "python3 -m pytest -q",
        "--output",
        "json",
    ]);
    cmd
}

/// The file a model would give back, from the target shown in `prompt`.
fn fixed_from(prompt: &str) -> String {
    let start = prompt
        .find("# Target: `settings.py`")
        .and_then(|i| {
            prompt[i..]
                .find("```python\n")
                .map(|j| i + j + "```python\n".len())
        })
        .expect("the target is in the prompt");
    let end = start + prompt[start..].find("\n```").expect("its block ends");
    prompt[start..end].replace(BUG, FIX)
}

/// A model that fixes the target it is shown and gives back the rest of it as it reads it.
fn fixer() -> Answer {
    from_prompt(|prompt| code("python", &fixed_from(prompt)))
}

#[tokio::test(flavor = "multi_thread")]
async fn block_mode_refuses_the_call_and_names_the_kind_and_file() {
    let (dir, target) = small_project();
    write_config(dir.path(), "local_guard:\n  mode: block\n");
    let llm = artisan_answers(fixer()).await;
    let out = fix_settings(dir.path(), &llm).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let report = report(dir.path());
    let reason = report["reason"].as_str().unwrap();
    assert_has(
        reason,
        &[
            "local_guard.mode is block",
            "SECRET_AWS_ACCESS_KEY_ID",
            "settings.py",
        ],
    );
    assert!(
        llm.server.received_requests().await.unwrap().is_empty(),
        "a call was sent"
    );
    assert_file(dir.path(), "settings.py", target);
}

/// The small project, with `files` added (its config among them), fixed: what the Artisan
/// was first sent, and the report.
async fn fixed_with(files: &[(&str, &str)]) -> (String, Value) {
    let (dir, _) = small_project();
    for (name, text) in files {
        write(dir.path(), name, text);
    }
    let llm = artisan_answers(fixer()).await;
    fix(dir.path(), &llm);
    (
        prompt_of(&llm.requests_of("artisan").await[0]),
        report(dir.path()),
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn off_sends_the_values_and_the_allowlist_and_patterns_are_honoured() {
    let (sent, report) =
        fixed_with(&[("ralph.config.yaml", "local_guard:\n  enabled: false\n")]).await;
    assert!(sent.contains("AKIAZ4Q7XW2PLM3NB5VC"));
    assert_eq!(report["local_guard"]["enabled"], false);

    let config = "local_guard:\n  allow:\n    - AKIAZ4Q7XW2PLM3NB5VC\n  pii:\n    email: false\n  patterns:\n    acme_ticket: 'ACME-[0-9]{6}'\n";
    let (sent, report) = fixed_with(&[
        ("ralph.config.yaml", config),
        ("settings.py.prompt.md", "See ticket ACME-204866.\n"),
    ])
    .await;
    assert!(sent.contains("AKIAZ4Q7XW2PLM3NB5VC"), "allowlisted");
    assert!(
        sent.contains("ada.lovelace@analytical.example.org"),
        "e-mail switched off"
    );
    assert!(
        sent.contains("See ticket <<SECRET_ACME_TICKET_1>>."),
        "{sent}"
    );
    let g = &report["local_guard"];
    assert_eq!(g["allowlisted"].as_u64(), Some(1), "{g:#}");
}

/// `ralph-loop ARGS` in `dir`.
fn guard_scan(dir: &Path, args: &[&str]) -> std::process::Output {
    assert_cmd::Command::cargo_bin("ralph-loop")
        .unwrap()
        .current_dir(dir)
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn guard_scan_lists_what_would_be_masked_and_exits_1() {
    let (dir, _) = small_project();
    write(
        dir.path(),
        ".env",
        "STRIPE_SECRET_KEY=sk_live_4eC39HqLyjWDarjtT1zdp7dc8Zq2\n",
    );
    let out = guard_scan(dir.path(), &["guard", "scan"]);
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8(out.stdout).unwrap();
    assert_has(
        &text,
        &[
            "settings.py:1:12  SECRET_AWS_ACCESS_KEY_ID  AWS_KEY = \"AKI…(20 chars)\"",
            "settings.py:2:10  PII_EMAIL",
            ".env:1:19  SECRET_STRIPE",
        ],
    );
    assert!(
        !text.contains("AKIAZ4Q7XW2PLM3NB5VC") && !text.contains("sk_live_4eC3"),
        "{text}"
    );
    assert!(text.contains("3 values to mask in 2 files"), "{text}");
    // Clean: exit 0; JSON on request; a bad config names its line.
    let clean = tempfile::tempdir().unwrap();
    write(clean.path(), "median.py", MEDIAN);
    let out = guard_scan(clean.path(), &["guard", "scan", "--json", "."]);
    assert_eq!(out.status.code(), Some(0));
    let json: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["hits"].as_array().unwrap().len(), 0);
    assert_eq!(json["files"], 1);
    write_config(
        clean.path(),
        "local_guard:\n  patterns:\n    bad: '(unclosed'\n",
    );
    let out = guard_scan(clean.path(), &["guard", "scan"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(
        err.contains("ralph.config.yaml:3") && err.contains("local_guard.patterns.bad"),
        "{err}"
    );
    assert!(err.contains("not a valid regex"), "{err}");
}

#[test]
fn the_demo_s_recording_and_example_hold_nothing_to_mask() {
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples");
    let guard = ralph_loop::guard::build(&Default::default()).unwrap();
    let outcome =
        ralph_loop::guard::scan::scan(guard.detector(), std::slice::from_ref(&examples), &examples);
    assert!(outcome.files >= 2, "{} files read", outcome.files);
    assert!(outcome.hits.is_empty(), "{:#?}", outcome.hits);
}
