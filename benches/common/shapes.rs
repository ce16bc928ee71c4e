//! Bug shapes for the time-to-a-fix matrix: a generated project in Python (pytest), JavaScript
//! (`node --test`) or Rust (a crate's library and its integration tests) whose target holds small functions, one test each, with a given
//! number failing at the start, and the Artisan's replies that fix it in a given number of
//! attempts (each attempt leaves half of the failures, rounded up, until the last fixes all).
//!
//! The functions are deliberately plain: what varies is what a run's time depends on — the
//! size of the file the Artisan rewrites, how many tests fail and how their report reads, how
//! many iterations the fix takes — not what the code does.

use std::path::Path;

/// A project's language and how its tests run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lang {
    Python,
    JavaScript,
    Rust,
}

impl Lang {
    pub fn name(self) -> &'static str {
        match self {
            Lang::Python => "py",
            Lang::JavaScript => "js",
            Lang::Rust => "rs",
        }
    }

    /// The fence's language tag, as the Artisan writes it.
    pub fn tag(self) -> &'static str {
        match self {
            Lang::Python => "python",
            Lang::JavaScript => "javascript",
            Lang::Rust => "rust",
        }
    }

    pub fn target(self) -> &'static str {
        match self {
            Lang::Python => "calc.py",
            Lang::JavaScript => "src/calc.js",
            Lang::Rust => "src/lib.rs",
        }
    }

    pub fn test_file(self) -> &'static str {
        match self {
            Lang::Python => "test_calc.py",
            Lang::JavaScript => "test/calc.test.js",
            Lang::Rust => "tests/calc.rs",
        }
    }

    /// The test command, `python` the interpreter's path: the benchmark names it whole, so
    /// that no version manager's shim (pyenv's is a bash script) runs before each test run.
    pub fn test_command(self, python: &str) -> String {
        match self {
            Lang::Python => format!("{python} -m pytest -q test_calc.py"),
            Lang::JavaScript => "node --test test/".to_string(),
            Lang::Rust => "cargo test".to_string(),
        }
    }
}

/// One shape of bug: how many tests fail at the start and how many attempts fix them.
#[derive(Clone, Copy, Debug)]
pub struct Shape {
    pub lang: Lang,
    pub failing: usize,
    pub iterations: usize,
}

impl Shape {
    /// Functions (and tests) in the file: a dozen, or a few more than fail.
    pub fn functions(&self) -> usize {
        self.failing.max(8) + 4
    }

    /// The functions still wrong after attempt `attempt` (0: the file as it starts).
    pub fn wrong_after(&self, attempt: usize) -> usize {
        if attempt >= self.iterations {
            return 0;
        }
        let mut wrong = self.failing;
        for _ in 0..attempt {
            wrong = wrong.div_ceil(2);
        }
        wrong
    }

    /// The target with the first `wrong` functions wrong.
    pub fn target(&self, wrong: usize) -> String {
        let n = self.functions();
        let slip = |i: usize| if i < wrong { " + 1" } else { "" };
        match self.lang {
            Lang::Python => listing(
                "\"\"\"Small conversions the rest of the program relies on.\"\"\"\n",
                n,
                |i, (a, b)| {
                    let slip = slip(i);
                    format!("\n\ndef step_{i:02}(x):\n    \"\"\"Step {i}: {a} times x, plus {b}.\"\"\"\n    return x * {a} + {b}{slip}\n")
                },
            ),
            Lang::JavaScript => {
                let mut out = listing(
                    "// Small conversions the rest of the program relies on.\n",
                    n,
                    |i, (a, b)| {
                        let slip = slip(i);
                        format!("\n// Step {i}: {a} times x, plus {b}.\nfunction step{i:02}(x) {{\n  return x * {a} + {b}{slip};\n}}\n")
                    },
                );
                let names: Vec<String> = (0..n).map(|i| format!("step{i:02}")).collect();
                out.push_str(&format!("\nmodule.exports = {{ {} }};\n", names.join(", ")));
                out
            }
            Lang::Rust => listing(
                "//! Small conversions the rest of the program relies on.\n",
                n,
                |i, (a, b)| {
                    let slip = slip(i);
                    format!("\n/// Step {i}: {a} times x, plus {b}.\npub fn step_{i:02}(x: i64) -> i64 {{\n    x * {a} + {b}{slip}\n}}\n")
                },
            ),
        }
    }

    /// The unit tests: one per function, each at `x` = 2 to 6.
    pub fn tests(&self) -> String {
        let n = self.functions();
        let at = |i: usize, (a, b): (usize, usize)| (2 + i % 5, (2 + i % 5) * a + b);
        match self.lang {
            Lang::Python => listing("import calc\n", n, |i, ab| {
                let (x, want) = at(i, ab);
                format!("\n\ndef test_step_{i:02}():\n    assert calc.step_{i:02}({x}) == {want}\n")
            }),
            Lang::JavaScript => listing(
                "const test = require('node:test');\nconst assert = require('node:assert');\nconst calc = require('../src/calc');\n",
                n,
                |i, ab| {
                    let (x, want) = at(i, ab);
                    format!("\ntest('step{i:02}', () => {{\n  assert.strictEqual(calc.step{i:02}({x}), {want});\n}});\n")
                },
            ),
            Lang::Rust => listing("use calc::*;\n", n, |i, ab| {
                let (x, want) = at(i, ab);
                format!("\n#[test]\nfn step_{i:02}_works() {{\n    assert_eq!(step_{i:02}({x}), {want});\n}}\n")
            }),
        }
    }

    /// A test file Chaos might write against the fixed file: boundary values of the first
    /// functions, all passing, so that its round finds nothing.
    pub fn chaos_suite(&self) -> String {
        let n = self.functions().min(6);
        // The value at -1.
        let below = |(a, b): (usize, usize)| b as i64 - a as i64;
        match self.lang {
            Lang::Python => listing("import calc\n", n, |i, (a, b)| {
                let below = below((a, b));
                format!("\n\ndef test_step_{i:02}_at_zero_and_below():\n    assert calc.step_{i:02}(0) == {b}\n    assert calc.step_{i:02}(-1) == {below}\n")
            }),
            Lang::JavaScript => listing(
                "const test = require('node:test');\nconst assert = require('node:assert');\nconst calc = require('../../../src/calc');\n",
                n,
                |i, (a, b)| {
                    let below = below((a, b));
                    format!("\ntest('step{i:02} at zero and below', () => {{\n  assert.strictEqual(calc.step{i:02}(0), {b});\n  assert.strictEqual(calc.step{i:02}(-1), {below});\n}});\n")
                },
            ),
            Lang::Rust => listing("use calc::*;\n", n, |i, (a, b)| {
                let below = below((a, b));
                format!("\n#[test]\nfn step_{i:02}_at_zero_and_below() {{\n    assert_eq!(step_{i:02}(0), {b});\n    assert_eq!(step_{i:02}(-1), {below});\n}}\n")
            }),
        }
    }

    /// Writes the project into `dir` (a new git repository): the target as it starts, its tests
    /// and its manifest.
    pub fn write(&self, dir: &Path) {
        let put = |name: &str, text: &str| {
            let path = dir.join(name);
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent).expect("project folder");
            }
            std::fs::write(path, text).expect("project file");
        };
        put(self.lang.target(), &self.target(self.wrong_after(0)));
        put(self.lang.test_file(), &self.tests());
        match self.lang {
            Lang::Python => put(
                "pyproject.toml",
                "[project]\nname = \"calc\"\nversion = \"0.1.0\"\n\n[tool.pytest.ini_options]\npythonpath = [\".\"]\n",
            ),
            Lang::JavaScript => put(
                "package.json",
                "{\n  \"name\": \"calc\",\n  \"version\": \"1.0.0\",\n  \"private\": true,\n  \"scripts\": { \"test\": \"node --test test/\" }\n}\n",
            ),
            Lang::Rust => {
                put(
                    "Cargo.toml",
                    "[package]\nname = \"calc\"\nversion = \"0.1.0\"\nedition = \"2021\"\npublish = false\n\n[dependencies]\n",
                );
                put(".gitignore", "target/\n");
            }
        }
        let git = std::process::Command::new("git")
            .args(["init", "-q"])
            .current_dir(dir)
            .status()
            .expect("git init");
        assert!(git.success(), "git init in {}", dir.display());
    }
}

/// Function `i`'s slope and offset.
/// `head`, then `item(i, coefficients(i))` for each of the first `n` functions: the shape of
/// every file a [`Shape`] writes.
fn listing(head: &str, n: usize, item: impl Fn(usize, (usize, usize)) -> String) -> String {
    let mut out = head.to_string();
    for i in 0..n {
        out.push_str(&item(i, coefficients(i)));
    }
    out
}

fn coefficients(i: usize) -> (usize, usize) {
    (2 + i % 5, 3 + i % 7)
}
