//! The documented JavaScript plugin, run by hand with the SDK from the repository.

use std::path::Path;
use std::process::Command;

use serde_json::{json, Value};

use super::support::*;

/// Runs `node plugin` in `dir` with `request` on stdin and no `NODE_PATH`: its exit code,
/// stdout and stderr.
fn by_hand(dir: &Path, plugin: &str, request: &str) -> (i32, String, String) {
    let out = output_with_stdin(
        Command::new("node")
            .arg(plugin)
            .current_dir(dir)
            .env_remove("NODE_PATH"),
        request,
    );
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A request as docs/plugins.md's "Try it" writes one.
fn request(stage: &str, code: &str, config: Value) -> String {
    json!({
        "protocol": 1, "stage": stage, "hook": "no-todo", "session_id": "try", "iteration": 1,
        "project_dir": ".", "target": "median.py", "code": code,
        "budget": {"spent_usd": 0, "max_cost_usd": 1}, "config": config
    })
    .to_string()
}

/// docs/plugins.md's tutorial: its JavaScript `no-todo` plugin (taken from the page as it is),
/// with the package installed from the repository (`node_modules/ralph-plugin` linked to
/// `sdk/typescript`, as `npm install <checkout>/sdk/typescript` makes it), run by hand: it
/// vetoes the docs' request with the docs' answer, passes with a note or with nothing, and
/// `run` refuses another protocol or a request that is not JSON (exit 1, the error last on
/// stderr, nothing on stdout). `language()` guesses a target's language from its extension.
#[test]
fn the_docs_javascript_plugin_runs_by_hand_with_the_sdk_from_the_repository() {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let docs = std::fs::read_to_string(manifest.join("docs/plugins.md")).unwrap();
    let (_, after) = docs
        .split_once("`plugins/no-todo/plugin.js`:\n\n```js\n")
        .expect("the tutorial's JavaScript plugin");
    let plugin = &after[..after.find("\n```").unwrap() + 1];
    assert!(plugin.contains("require(\"ralph-plugin\")"), "{plugin}");
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("plugins/no-todo")).unwrap();
    std::fs::create_dir_all(dir.path().join("node_modules")).unwrap();
    std::os::unix::fs::symlink(
        manifest.join("sdk/typescript"),
        dir.path().join("node_modules/ralph-plugin"),
    )
    .unwrap();
    write(dir.path(), "plugins/no-todo/plugin.js", plugin);
    let run = |request: &str| by_hand(dir.path(), "plugins/no-todo/plugin.js", request);

    let (code, out, err) = run(&request("on_before_success", "x = 1  # TODO", Value::Null));
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        serde_json::from_str::<Value>(&out).unwrap(),
        json!({"protocol": 1, "action": "veto", "reasons": ["TODO left at median.py:1: finish the fix"]})
    );
    let (code, out, err) = run(&request(
        "on_after_gen",
        "def median(values):\n    pass  # FIXME\n",
        json!({"marker": "FIXME"}),
    ));
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        serde_json::from_str::<Value>(&out).unwrap(),
        json!({"protocol": 1, "action": "pass", "notes": ["the proposal has FIXME at median.py:2"]})
    );
    let (code, out, _) = run(&request("on_before_success", FIXED_PY, Value::Null));
    assert_eq!(code, 0);
    assert_eq!(out, "{\"protocol\":1,\"action\":\"pass\"}\n");

    let other = request("on_before_success", "x = 1", Value::Null)
        .replace("\"protocol\":1", "\"protocol\":2");
    let (code, out, err) = run(&other);
    assert_eq!(code, 1);
    assert_eq!(out, "");
    assert_eq!(
        err.lines().last(),
        Some("Error: this plugin speaks protocol 1, the request is 2"),
        "{err}"
    );
    let (code, out, err) = run("not json");
    assert_eq!(code, 1);
    assert_eq!(out, "");
    assert!(
        err.lines()
            .last()
            .unwrap_or("")
            .starts_with("SyntaxError: "),
        "{err}"
    );

    write(
        dir.path(),
        "plugins/lang.js",
        "const rp = require(\"ralph-plugin\");\nrp.run((req) => rp.pass([String(rp.language(req))]));\n",
    );
    let ask = |target: &str, language: Value| {
        let mut req: Value = serde_json::from_str(&request("on_success", "", Value::Null)).unwrap();
        req["target"] = json!(target);
        req["language"] = language;
        let (code, out, err) = by_hand(dir.path(), "plugins/lang.js", &req.to_string());
        assert_eq!(code, 0, "{err}");
        serde_json::from_str::<Value>(&out).unwrap()["notes"][0].clone()
    };
    assert_eq!(ask("src/view.TSX", Value::Null), "typescript");
    assert_eq!(ask("lib.rs", Value::Null), "rust");
    assert_eq!(ask("Makefile", Value::Null), "undefined");
    assert_eq!(ask("median.py", json!("Python")), "python");
}
