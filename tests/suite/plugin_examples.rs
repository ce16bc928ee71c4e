//! The example plugins of `examples/plugins/`, installed as their READMEs say (the folder copied
//! to `plugins/<name>/`, the entry of its `ralph-plugins.yaml` added to the project's) and run
//! end to end through the binary against the mock model: the formatter formats Python,
//! JavaScript and Rust proposals, the security scan vetoes a success bandit objects to and its
//! reason reaches the Artisan, the docs plugin writes the fixed file's API docs.

use std::path::Path;
use std::process::Command;

use serde_json::Value;

use super::support::*;

/// Copies the example plugins `names` into `dir/plugins/` and writes the project's
/// `ralph-plugins.yaml` from their snippets, each changed by `adjust` (what the project needs,
/// such as `read_paths`).
fn install(dir: &Path, names: &[&str], adjust: impl Fn(&str, String) -> String) {
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/plugins");
    let mut yaml = String::from("plugins:\n");
    for name in names {
        copy_dir(&examples.join(name), &dir.join("plugins").join(name));
        let snippet =
            std::fs::read_to_string(examples.join(name).join("ralph-plugins.yaml")).unwrap();
        let (_, entries) = snippet
            .split_once("plugins:\n")
            .unwrap_or_else(|| panic!("{name}'s snippet has no `plugins:` line"));
        yaml.push_str(&adjust(name, entries.to_string()));
    }
    write(dir, "ralph-plugins.yaml", &yaml);
}

/// Trusts the project's hooks as they are now (`ralph-loop hooks trust`), which a run with
/// hooks requires. (`ralph` adds `--no-adversarial`, which a subcommand does not take.)
fn trust(dir: &Path, llm: &MockLlm) {
    ralph_with_chaos(dir, llm)
        .args(["hooks", "trust"])
        .assert()
        .success();
}

/// Trusts the hooks, fixes `target` and returns the exit code and the report.
fn fix(dir: &Path, llm: &MockLlm, target: &str) -> (i32, Value) {
    trust(dir, llm);
    let assert = ralph(dir, llm).args([target, "--output", "json"]).assert();
    let code = assert.get_output().status.code().unwrap_or(-1);
    (code, report(dir))
}

/// Runs [`fix`] and asserts the run succeeded; its report.
#[track_caller]
fn fixed(dir: &Path, llm: &MockLlm, target: &str) -> Value {
    let (code, report) = fix(dir, llm, target);
    assert_eq!(code, 0, "{report:#}");
    assert_eq!(report["status"], "success");
    report
}

/// What `program args` prints for `input` on stdin, in `dir`: the formatter as the test runs
/// it, outside ralph-loop.
fn piped(dir: &Path, program: &str, args: &[&str], input: &str) -> String {
    let out = output_with_stdin(Command::new(program).args(args).current_dir(dir), input);
    assert!(
        out.status.success(),
        "{program}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn read(dir: &Path, name: &str) -> String {
    std::fs::read_to_string(dir.join(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn warnings(report: &Value) -> String {
    report["warnings"].to_string()
}

/// A right fix of `median.py`, badly formatted.
const UGLY_PY: &str = "def median( values ):\n    if not values :\n        raise ValueError( 'median of an empty list' )\n    s=sorted( values )\n    mid=len(s)//2\n    if len(s)%2:\n        return s[mid]\n    return (s[mid-1]+s[mid])/2\n";

#[tokio::test(flavor = "multi_thread")]
async fn the_formatter_writes_a_python_fix_as_ruff_formats_it() {
    let dir = fixture("py-median");
    install(dir.path(), &["formatter"], |_, entry| entry);
    let llm = artisan_always("python", UGLY_PY).await;
    let report = fixed(dir.path(), &llm, "median.py");
    let written = read(dir.path(), "median.py");
    let ruff = piped(
        dir.path(),
        "python3",
        &["-m", "ruff", "format", "--stdin-filename", "median.py", "-"],
        UGLY_PY,
    );
    assert_eq!(written, ruff);
    assert_has(
        &written,
        &[
            "    s = sorted(values)\n",
            "raise ValueError(\"median of an empty list\")",
        ],
    );
    assert!(
        !warnings(&report).contains("formatter"),
        "{}",
        warnings(&report)
    );
}

/// A right fix of `src/median.js`, badly formatted.
const UGLY_JS: &str = "function median(values){\n  const ordered=[...values].sort((a,b)=>a-b)\n  const mid=Math.floor(ordered.length/2)\n  return ordered.length%2?ordered[mid]:(ordered[mid-1]+ordered[mid])/2\n}\n\nmodule.exports={median}\n";

#[tokio::test(flavor = "multi_thread")]
async fn the_formatter_writes_a_javascript_fix_as_prettier_formats_it() {
    let dir = fixture("js-median");
    link_node_modules(dir.path());
    // node_modules is a link out of the project: the sandbox must be told prettier may be read.
    install(dir.path(), &["formatter"], |_, entry| {
        entry.replace("read_paths: []", "read_paths: [node_modules]")
    });
    let llm = artisan_always("javascript", UGLY_JS).await;
    fixed(dir.path(), &llm, "src/median.js");
    let written = read(dir.path(), "src/median.js");
    let prettier = piped(
        dir.path(),
        "node_modules/.bin/prettier",
        &["--stdin-filepath", "src/median.js"],
        UGLY_JS,
    );
    assert_eq!(written, prettier);
    assert_has(
        &written,
        &[
            "  const ordered = [...values].sort((a, b) => a - b);\n",
            "module.exports = { median };\n",
        ],
    );
}

/// `rs-median`'s fix, badly formatted.
const UGLY_RS: &str = "/// The median of a list of numbers; `None` for an empty list.\npub fn median(values:&[f64])->Option<f64>{\n    if values.is_empty(){ return None; }\n    let mut ordered=values.to_vec();\n    ordered.sort_by(f64::total_cmp);\n    let mid=ordered.len()/2;\n    if ordered.len()%2==1 { Some(ordered[mid]) } else { Some((ordered[mid-1]+ordered[mid])/2.0) }\n}\n";

#[tokio::test(flavor = "multi_thread")]
async fn the_formatter_writes_a_rust_fix_as_rustfmt_formats_it() {
    let dir = fixture("rs-median");
    install(dir.path(), &["formatter"], |_, entry| entry);
    let llm = artisan_always("rust", UGLY_RS).await;
    fixed(dir.path(), &llm, "src/lib.rs");
    let written = read(dir.path(), "src/lib.rs");
    let rustfmt = piped(
        dir.path(),
        "rustfmt",
        &["--edition", "2021", "--emit", "stdout"],
        UGLY_RS,
    );
    assert_eq!(written, rustfmt);
    assert_eq!(written, FIXED_RS, "rustfmt's layout is the fixture's own");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_formatter_that_fails_warns_and_leaves_the_proposal_as_it_was() {
    let dir = fixture("py-median");
    // A formatter that cannot parse what it is given, as ruff on a syntax error.
    install(dir.path(), &["formatter"], |_, entry| {
        entry.replace(
            "commands: {}",
            "commands: {python: \"python3 -c 'import sys; sys.exit(\\\"cannot parse {file}\\\")'\"}",
        )
    });
    let llm = artisan_always("python", FIXED_PY).await;
    let (code, report) = fix(dir.path(), &llm, "median.py");
    assert_eq!(code, 0, "{report:#}");
    assert_eq!(read(dir.path(), "median.py"), FIXED_PY);
    let warned = warnings(&report);
    assert!(
        warned.contains("formatter: python3 failed on median.py: cannot parse median.py"),
        "{warned}"
    );
    let log = read(dir.path(), ".ralph/plugin-errors.log");
    assert!(log.contains("formatter at on_after_gen"), "{log}");
}

/// Passes the tests, but runs a shell with its argument in the command line (bandit B602).
const SHELL_PY: &str = "import subprocess\n\n\ndef median(values):\n    \"\"\"The median of a non-empty list of numbers.\"\"\"\n    subprocess.run(\"echo \" + str(values), shell=True)\n    if not values:\n        raise ValueError(\"median of an empty list\")\n    ordered = sorted(values)\n    mid = len(ordered) // 2\n    if len(ordered) % 2:\n        return ordered[mid]\n    return (ordered[mid - 1] + ordered[mid]) / 2\n";

#[tokio::test(flavor = "multi_thread")]
async fn the_security_scan_vetoes_a_shell_call_and_bandits_reason_reaches_the_artisan() {
    let dir = fixture("py-median");
    install(dir.path(), &["security-scan"], |_, entry| entry);
    let llm = artisan_writes("python", [SHELL_PY, FIXED_PY]).await;

    let report = fixed(dir.path(), &llm, "median.py");
    assert_eq!(report["iterations"], 2, "the veto cost an iteration");
    assert_eq!(read(dir.path(), "median.py"), FIXED_PY);
    let artisan = prompts_of(&llm, "artisan", 2).await;
    assert!(!artisan[0].contains("B602"));
    let second = &artisan[1];
    assert_has(
        second,
        &[
            "bandit B602 (HIGH): subprocess call with shell=True",
            "at median.py:6",
        ],
    );
    // The import is a LOW finding: a note, not a reason.
    assert!(second.contains("bandit B404 (LOW)"), "{second}");
}

/// `FIXED_PY` with a module docstring and the function's.
const DOCUMENTED_PY: &str = "\"\"\"Statistics of lists of numbers.\"\"\"\n\n\ndef median(values):\n    \"\"\"The median of a list of numbers: the middle one, or the mean of the middle pair.\n\n    Raises ValueError for an empty list.\n    \"\"\"\n    if not values:\n        raise ValueError(\"median of an empty list\")\n    ordered = sorted(values)\n    mid = len(ordered) // 2\n    if len(ordered) % 2:\n        return ordered[mid]\n    return (ordered[mid - 1] + ordered[mid]) / 2\n";

#[tokio::test(flavor = "multi_thread")]
async fn the_docs_plugin_writes_the_fixed_files_api_docs() {
    let dir = fixture("py-median");
    install(dir.path(), &["docs"], |_, entry| entry);
    let llm = artisan_always("python", DOCUMENTED_PY).await;
    let (code, report) = fix(dir.path(), &llm, "median.py");
    assert_eq!(code, 0, "{report:#}");
    let docs = read(dir.path(), "docs/api/median.md");
    let session = report["session_id"].as_str().unwrap();
    assert!(docs.starts_with("# API: `median.py`\n"), "{docs}");
    assert!(
        docs.contains(&format!(
            "Generated by the ralph-loop docs plugin at session `{session}`, iteration 1."
        )),
        "{docs}"
    );
    assert_has(
        &docs,
        &[
            "Statistics of lists of numbers.",
            "## `median`",
            "def median(values)",
        ],
    );
    assert!(
        docs.contains(
            "The median of a list of numbers: the middle one, or the mean of the middle pair.\n\nRaises ValueError for an empty list."
        ),
        "{docs}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn the_three_together_format_scan_and_document_a_fix() {
    let dir = fixture("py-median");
    install(
        dir.path(),
        &["formatter", "security-scan", "docs"],
        |name, entry| match name {
            "docs" => entry.replace("out_dir: docs/api", "out_dir: reference"),
            _ => entry,
        },
    );
    let llm = MockLlm::start().await;
    let ugly_shell = SHELL_PY
        .replace("ordered = sorted(values)", "ordered=sorted( values )")
        .replace("mid = len(ordered) // 2", "mid=len(ordered)//2");
    llm.helpful().script(
        "artisan",
        [
            text(code("python", &ugly_shell)),
            text(code("python", UGLY_PY)),
        ],
    );
    let (code, report) = fix(dir.path(), &llm, "median.py");
    assert_eq!(code, 0, "{report:#}");
    assert_eq!(report["iterations"], 2, "{report:#}");
    let written = read(dir.path(), "median.py");
    assert!(written.contains("    s = sorted(values)\n"), "{written}");
    assert!(!written.contains("subprocess"), "{written}");
    let second = user_prompt(&llm.requests_of("artisan").await[1]);
    assert!(second.contains("bandit B602 (HIGH)"), "{second}");
    let docs = read(dir.path(), "reference/median.md");
    assert_has(&docs, &["def median(values)", "iteration 2."]);
}
