//! The docs kept honest where a program can check them: every flag the README and `docs/`
//! show for ralph-loop or micro-agent is one the binary takes, every dotted config key they
//! name is one `ralph.config.yaml` takes, and every exit code they document is one some test
//! of this suite sees a run end with.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use clap::CommandFactory;
use regex::Regex;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// README.md and every page of `docs/`, with their text.
fn pages() -> Vec<(PathBuf, String)> {
    let mut paths = vec![root().join("README.md")];
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root().join("docs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    docs.sort();
    paths.extend(docs);
    paths
        .into_iter()
        .map(|p| {
            let text = std::fs::read_to_string(&p).unwrap();
            (p, text)
        })
        .collect()
}

/// The code of a page: each line of its fenced blocks, then each inline code span.
fn code_of(text: &str) -> Vec<String> {
    let fenced = Regex::new(r"(?s)```[^\n]*\n(.*?)```").unwrap();
    let mut code: Vec<String> = fenced
        .captures_iter(text)
        .flat_map(|c| c[1].lines().map(str::to_string).collect::<Vec<_>>())
        .collect();
    let prose = fenced.replace_all(text, "");
    let span = Regex::new(r"`([^`\n]+)`").unwrap();
    code.extend(span.captures_iter(&prose).map(|c| c[1].to_string()));
    code
}

/// Flags of other programs that the docs show on their own (a span that is only the flag),
/// with the program: a code line that starts with a program's name is that program's and is
/// not checked at all.
const FOREIGN: &[(&str, &str)] = &[
    ("--all", "cargo llvm-cov"),
    ("--all-targets", "cargo"),
    ("--auth-type", "Qwen Code"),
    ("--auto", "OpenCode"),
    ("--bench", "cargo"),
    ("--branch", "coverage.py"),
    ("--coverageThreshold", "jest"),
    ("--dangerously-skip-permissions", "Claude Code"),
    ("--debug-assertions", "cargo fuzz"),
    ("--full-auto", "Codex"),
    ("--ignore-run-fail", "cargo llvm-cov"),
    ("--in-place", "cargo-mutants"),
    ("--init", "docker"),
    ("--label", "docker"),
    ("--list", "cargo-mutants"),
    ("--memory", "docker"),
    ("--memory-swap", "docker"),
    ("--name", "docker"),
    ("--no-auto-commits", "Aider"),
    ("--no-cache", "ruff"),
    ("--no-config", "cargo-mutants"),
    ("--no-install", "npx"),
    ("--no-tests", "cargo nextest"),
    ("--omit", "coverage.py"),
    ("--output-format", "Claude Code"),
    ("--pids-limit", "docker"),
    ("--re", "cargo-mutants"),
    ("--report", "bandit"),
    ("--rm", "docker"),
    ("--sandbox", "Codex"),
    ("--sanitizer", "cargo fuzz"),
    ("--silent", "npm"),
    ("--test-reporter", "node --test"),
    ("--test-reporter-destination", "node --test"),
    ("--user", "docker"),
    ("--yolo", "Qwen Code"),
];

/// Every long flag of `ralph-loop` (each subcommand's too) and of `micro-agent`.
fn our_flags() -> BTreeSet<String> {
    fn walk(cmd: &clap::Command, out: &mut BTreeSet<String>) {
        for arg in cmd.get_arguments() {
            for long in arg.get_long_and_visible_aliases().into_iter().flatten() {
                out.insert(format!("--{long}"));
            }
        }
        for sub in cmd.get_subcommands() {
            walk(sub, out);
        }
    }
    let mut flags = BTreeSet::from(["--help".to_string(), "--version".to_string()]);
    walk(&ralph_loop::cli::Cli::command(), &mut flags);
    // micro-agent's parser is its binary's own: read off its help, and its config's.
    let long = Regex::new(r"(?:^|[\s,\[])(--[a-zA-Z][\w-]*)").unwrap();
    for args in [vec!["--help"], vec!["config", "--help"]] {
        let out = assert_cmd::Command::cargo_bin("micro-agent")
            .unwrap()
            .args(&args)
            .output()
            .unwrap();
        let help = String::from_utf8_lossy(&out.stdout);
        flags.extend(long.captures_iter(&help).map(|c| c[1].to_string()));
    }
    flags
}

/// Asserts a scan of the docs checked more than `at_least` `what` and found none of them
/// `unknown`, which `problem` names.
#[track_caller]
fn assert_scanned(checked: usize, at_least: usize, what: &str, unknown: &[String], problem: &str) {
    assert!(
        checked > at_least,
        "only {checked} {what} found: is the scan broken?"
    );
    assert!(unknown.is_empty(), "{problem}:\n{}", unknown.join("\n"));
}

#[test]
fn every_documented_flag_is_one_the_binaries_take() {
    let ours = our_flags();
    let flag = Regex::new(r"(?:^|[^\w-])(--[a-zA-Z][\w-]*)").unwrap();
    let mut unknown = Vec::new();
    let mut checked = 0;
    for (path, text) in pages() {
        for code in code_of(&text) {
            let code = code.trim().trim_start_matches("$ ");
            let first = code.split_whitespace().next().unwrap_or("");
            let ours_or_bare = matches!(first, "ralph-loop" | "micro-agent")
                || first.starts_with('-')
                || first.starts_with('[');
            if !ours_or_bare {
                continue;
            }
            for c in flag.captures_iter(code) {
                let f = &c[1];
                checked += 1;
                let foreign =
                    !first.starts_with("ralph-loop") && FOREIGN.iter().any(|(name, _)| *name == f);
                if !ours.contains(f) && !foreign {
                    unknown.push(format!("{}: {f} in `{code}`", path.display()));
                }
            }
        }
    }
    assert_scanned(
        checked,
        100,
        "flags",
        &unknown,
        "documented flags neither binary takes (fix the doc, or add another program's flag to FOREIGN)",
    );
    // The allow-list holds no flag of ours: one of ours is checked wherever it is shown.
    for (name, _) in FOREIGN {
        assert!(
            !ours.contains(*name),
            "{name} is ralph-loop's: drop it from FOREIGN"
        );
    }
}

/// Dotted paths of `v`'s keys, every prefix included (`budgets`, `budgets.max_cost_usd`).
fn key_paths(v: &serde_json::Value, prefix: &str, out: &mut BTreeSet<String>) {
    if let serde_json::Value::Object(map) = v {
        for (k, v) in map {
            let path = match prefix {
                "" => k.clone(),
                p => format!("{p}.{k}"),
            };
            out.insert(path.clone());
            key_paths(v, &path, out);
        }
    }
}

/// Dotted names the docs show that start like a config section but are something else.
const NOT_CONFIG: &[(&str, &str)] = &[
    ("memory.recalls", "the report's `memory` section"),
    ("memory.recalled", "the report's `memory` section"),
    ("memory.status", "the report's `memory` section"),
    ("memory.max", "a cgroup's file"),
];

/// File names: a dotted span ending in one of these is a file, not a key.
const FILE_ENDINGS: &[&str] = &[
    "rs", "json", "jsonl", "db", "yaml", "yml", "md", "log", "bin", "toml", "py", "ts", "js",
];

#[test]
fn every_documented_config_key_is_one_the_config_takes() {
    let defaults = serde_json::to_value(ralph_loop::config::Config::default()).unwrap();
    let mut known = BTreeSet::new();
    key_paths(&defaults, "", &mut known);
    // What the example file spells out that the defaults leave empty (a price, a model entry).
    let example: serde_json::Value =
        serde_yaml::from_str(&std::fs::read_to_string(root().join("ralph.config.yaml")).unwrap())
            .unwrap();
    key_paths(&example, "", &mut known);
    let sections: BTreeSet<&str> = defaults
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    // `section.key` (and deeper), as a whole span or a span's `key: value` form's key.
    let dotted = Regex::new(r"^([a-z_]+(?:\.[a-z_0-9]+)+)(?::.*)?$").unwrap();
    let mut unknown = Vec::new();
    let mut checked = 0;
    for (path, text) in pages() {
        for code in code_of(&text) {
            let Some(c) = dotted.captures(code.trim()) else {
                continue;
            };
            let key = &c[1];
            let section = key.split('.').next().unwrap_or("");
            // `models.<role>` and `prices.<model>` name entries, not keys; file names
            // (`report.json`) and other dotted words start with no section.
            if !sections.contains(section) || section == "prices" {
                continue;
            }
            if section == "models" && key.split('.').count() == 2 {
                continue;
            }
            let last = key.rsplit('.').next().unwrap_or("");
            if FILE_ENDINGS.contains(&last) || NOT_CONFIG.iter().any(|(k, _)| *k == key) {
                continue;
            }
            checked += 1;
            if !known.contains(key) {
                unknown.push(format!("{}: {key}", path.display()));
            }
        }
    }
    assert_scanned(
        checked,
        50,
        "keys",
        &unknown,
        "documented config keys ralph.config.yaml does not take",
    );
}

/// Exit codes the docs give for other programs (a test command's), not for ralph-loop.
const OTHER_PROGRAMS_CODES: &[(i32, &str)] = &[
    (
        127,
        "a shell's `command not found`, read from a test command's output",
    ),
    (
        137,
        "a test process killed by SIGKILL, as the sandbox reports it",
    ),
];

#[test]
fn every_documented_exit_code_ends_some_test_s_run() {
    let mut documented: BTreeSet<i32> = BTreeSet::new();
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let list = readme
        .split("**Exit codes**:")
        .nth(1)
        .and_then(|rest| rest.split("\n- **").next())
        .expect("the README's exit codes");
    let code = Regex::new(r"(?:^|·)\s*(\d+) [a-z]").unwrap();
    documented.extend(
        code.captures_iter(list)
            .map(|c| c[1].parse::<i32>().unwrap()),
    );
    assert!(documented.len() >= 8, "{documented:?}");
    // In prose, and in the tables of statuses and their codes (`| \`agent_failed\` | 6 |`).
    let mention = Regex::new(
        r"(?m)\(exit (\d+)[),;]|\bexits (\d+)\b|\bexit code (\d+)\b|^\| `[a-z_]+` \| (\d+) \|",
    )
    .unwrap();
    for (_, text) in pages() {
        for c in mention.captures_iter(&text) {
            let n = c.iter().skip(1).flatten().next().unwrap();
            documented.insert(n.as_str().parse().unwrap());
        }
    }
    for (n, _) in OTHER_PROGRAMS_CODES {
        documented.remove(n);
    }

    // What the suite's tests assert a run ended with.
    let mut tested: BTreeSet<i32> = BTreeSet::new();
    let patterns = [
        r"\.code\((\d+)\)",
        r"code\(\),\s*Some\((\d+)\)",
        r"exit_code\x22\],\s*(\d+)",
        r"assert_eq!\(\s*(?:code|status|exit|exited)\w*,\s*(\d+)",
        r"wait_exit\([^;\n]*?\),\s*(\d+)\s*\)",
        r"\(Signal::\w+,\s*(\d+),",
        // The loop's helpers that run to an exit code and assert it (`regent.rs`).
        r"\brun(?:_loop)?_to\((?:&\w+,\s*)?(\d+)\)",
    ];
    let patterns: Vec<Regex> = patterns.iter().map(|p| Regex::new(p).unwrap()).collect();
    for entry in std::fs::read_dir(root().join("tests/suite")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "rs") || path.ends_with("docs.rs") {
            continue;
        }
        let source = std::fs::read_to_string(&path).unwrap();
        for p in &patterns {
            tested.extend(
                p.captures_iter(&source)
                    .map(|c| c[1].parse::<i32>().unwrap()),
            );
        }
    }
    let untested: Vec<i32> = documented.difference(&tested).copied().collect();
    assert!(
        untested.is_empty(),
        "documented exit codes no test sees: {untested:?} (documented {documented:?}, tested {tested:?})"
    );
}
