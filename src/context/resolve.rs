//! Resolution of import specifiers to project files.
//!
//! Every path here is relative to the project root, and existence is checked against the set of
//! files the walk found, never the disk: resolution is then a pure function of the file set and
//! the `tsconfig`s and crate roots (the [`Layout`]). The graph cache keeps the resolved edges
//! under a fingerprint of exactly those inputs, so an unchanged tree skips resolution and any
//! change to them (a new file, an edited tsconfig) redoes it whole.

use std::collections::{HashMap, HashSet};
use std::ffi::OsString;
use std::hash::{Hash, Hasher};
use std::path::{Component, Path, PathBuf};

use super::imports::Language;

/// Extensions probed for an extensionless JS/TS specifier, in TypeScript's order: sources before
/// declarations, TS before JS.
const JS_PROBE: &[&str] = &["ts", "tsx", "d.ts", "mts", "cts", "js", "jsx", "mjs", "cjs"];

/// `extends` chains longer than this are taken as a loop.
const MAX_EXTENDS: usize = 8;

/// The path-mapping part of one `tsconfig.json` (or `jsconfig.json`), with `extends` applied.
#[derive(Debug, Clone, Default, Hash)]
struct TsConfig {
    /// `compilerOptions.baseUrl`, relative to the project root.
    base_url: Option<PathBuf>,
    /// `compilerOptions.paths`: pattern (at most one `*`) to targets.
    paths: Vec<(String, Vec<String>)>,
    /// What `paths` targets are relative to: `baseUrl` when set, else the defining config's dir.
    paths_base: PathBuf,
}

/// What resolution needs besides the file set: the path mappings of every `tsconfig.json` (with
/// `extends` applied) and the Rust crate roots. Loaded once per build; its fingerprint, with the
/// file set's, keys the resolved edges the cache keeps.
#[derive(Debug, Default)]
pub struct Layout {
    /// tsconfig by the directory holding it.
    tsconfigs: HashMap<PathBuf, TsConfig>,
    /// Directories holding a `Cargo.toml`.
    crates: HashSet<PathBuf>,
}

impl Layout {
    /// `tsconfigs` and `manifests` are the root-relative paths of the `tsconfig.json` /
    /// `jsconfig.json` and `Cargo.toml` files the walk found. A tsconfig that cannot be read or
    /// parsed is ignored: its aliases then resolve to nothing, as a bare package would.
    pub fn load(root: &Path, tsconfigs: &[PathBuf], manifests: &[PathBuf]) -> Layout {
        let mut configs = HashMap::new();
        // A directory may hold both; tsconfig.json wins as TypeScript itself prefers it.
        let mut sorted: Vec<&PathBuf> = tsconfigs.iter().collect();
        sorted.sort_by_key(|p| p.file_name().is_some_and(|n| n == "tsconfig.json"));
        for config in sorted {
            if let Some(parsed) = load_tsconfig(root, config, 0) {
                let dir = config.parent().unwrap_or(Path::new("")).to_path_buf();
                configs.insert(dir, parsed);
            }
        }
        let crates = manifests
            .iter()
            .map(|m| m.parent().unwrap_or(Path::new("")).to_path_buf())
            .collect();
        Layout {
            tsconfigs: configs,
            crates,
        }
    }

    /// Feeds everything resolution depends on here into `state`, in a fixed order. The
    /// effective (merged) mappings are hashed rather than the files, so an edit to a config
    /// that a tsconfig `extends` is seen, and a reformatted tsconfig is not a change.
    pub fn fingerprint(&self, state: &mut impl Hasher) {
        let mut configs: Vec<_> = self.tsconfigs.iter().collect();
        configs.sort_by(|a, b| a.0.cmp(b.0));
        configs.hash(state);
        let mut crates: Vec<_> = self.crates.iter().collect();
        crates.sort();
        crates.hash(state);
    }
}

/// Resolves specifiers against one snapshot of the project's files.
pub struct Resolver<'a> {
    files: &'a HashSet<PathBuf>,
    layout: &'a Layout,
}

impl<'a> Resolver<'a> {
    /// `files` is the set of project files (root-relative).
    pub fn new(files: &'a HashSet<PathBuf>, layout: &'a Layout) -> Resolver<'a> {
        Resolver { files, layout }
    }

    /// The project file `spec` (as extracted from `file`) names, or `None` for an external
    /// package, a standard library module, or a path that does not exist.
    pub fn resolve(&self, file: &Path, language: Language, spec: &str) -> Option<PathBuf> {
        let target = match language {
            Language::TypeScript | Language::Tsx | Language::JavaScript => {
                self.resolve_js(file, spec)
            }
            Language::Python => self.resolve_python(file, spec),
            Language::Rust => self.resolve_rust(file, spec),
        }?;
        // A file importing itself (`from . import x` in the `__init__.py` that defines `x`) is
        // no dependency.
        (target != file).then_some(target)
    }

    fn resolve_js(&self, file: &Path, spec: &str) -> Option<PathBuf> {
        let dir = file.parent().unwrap_or(Path::new(""));
        if spec.starts_with("./") || spec.starts_with("../") || spec == "." || spec == ".." {
            return self.probe_js(&normalize(&dir.join(spec))?);
        }
        // An absolute specifier names the file system, not the project; a URL or `node:` is
        // external.
        if spec.starts_with('/') || spec.contains(':') {
            return None;
        }
        let config = self.nearest_tsconfig(dir)?;
        if let Some(found) = self.match_paths(config, spec) {
            return Some(found);
        }
        let base = config.base_url.as_ref()?;
        self.probe_js(&normalize(&base.join(spec))?)
    }

    fn nearest_tsconfig(&self, mut dir: &Path) -> Option<&TsConfig> {
        loop {
            if let Some(config) = self.layout.tsconfigs.get(dir) {
                return Some(config);
            }
            dir = dir.parent()?;
        }
    }

    /// TypeScript's `paths` rule: the pattern with the longest prefix before its `*` wins, and
    /// its targets are tried in order.
    fn match_paths(&self, config: &TsConfig, spec: &str) -> Option<PathBuf> {
        let mut best: Option<(usize, &str, &Vec<String>)> = None;
        for (pattern, targets) in &config.paths {
            let (captured, rank) = match pattern.split_once('*') {
                None if pattern == spec => ("", usize::MAX),
                None => continue,
                Some((prefix, suffix)) => {
                    if spec.len() < prefix.len() + suffix.len()
                        || !spec.starts_with(prefix)
                        || !spec.ends_with(suffix)
                    {
                        continue;
                    }
                    (&spec[prefix.len()..spec.len() - suffix.len()], prefix.len())
                }
            };
            if best.is_none_or(|(r, _, _)| rank > r) {
                best = Some((rank, captured, targets));
            }
        }
        let (_, captured, targets) = best?;
        targets.iter().find_map(|target| {
            let substituted = target.replacen('*', captured, 1);
            self.probe_js(&normalize(&config.paths_base.join(substituted))?)
        })
    }

    fn probe_js(&self, base: &Path) -> Option<PathBuf> {
        if self.files.contains(base) {
            return Some(base.to_path_buf());
        }
        // ESM TypeScript imports `./x.js` for the source `x.ts`.
        if let Some(ext) = base.extension().and_then(|e| e.to_str()) {
            let swaps: &[&str] = match ext {
                "js" | "jsx" => &["ts", "tsx"],
                "mjs" => &["mts"],
                "cjs" => &["cts"],
                _ => &[],
            };
            for swap in swaps {
                let candidate = base.with_extension(swap);
                if self.files.contains(&candidate) {
                    return Some(candidate);
                }
            }
        }
        // Appended, not replaced: `./a.service` means `a.service.ts`.
        for ext in JS_PROBE {
            let candidate = with_suffix(base, &format!(".{ext}"));
            if self.files.contains(&candidate) {
                return Some(candidate);
            }
        }
        JS_PROBE
            .iter()
            .map(|ext| base.join(format!("index.{ext}")))
            .find(|candidate| self.files.contains(candidate))
    }

    fn resolve_python(&self, file: &Path, spec: &str) -> Option<PathBuf> {
        let (module, name) = match spec.split_once(':') {
            Some((m, n)) => (m, Some(n)),
            None => (spec, None),
        };
        let dir = file.parent().unwrap_or(Path::new(""));
        let dots = module.chars().take_while(|c| *c == '.').count();
        let segments: Vec<&str> = module[dots..]
            .split('.')
            .filter(|s| !s.is_empty())
            .collect();
        let bases: Vec<PathBuf> = if dots > 0 {
            // One dot is the file's own package; each further dot goes up one package.
            let mut base = dir.to_path_buf();
            for _ in 1..dots {
                if base.as_os_str().is_empty() {
                    return None;
                }
                base = base.parent()?.to_path_buf();
            }
            vec![base]
        } else {
            // The project root, a `src/` layout, and the file's own directory (a script run
            // directly has it on `sys.path`; so do pytest's rootdir-less tests).
            vec![PathBuf::new(), PathBuf::from("src"), dir.to_path_buf()]
        };
        for base in &bases {
            if let Some(name) = name {
                let mut with_name = segments.clone();
                with_name.push(name);
                if let Some(found) = self.python_module(base, &with_name) {
                    return Some(found);
                }
            }
            if let Some(found) = self.python_module(base, &segments) {
                return Some(found);
            }
        }
        None
    }

    /// `a.b` under `base`: the module `a/b.py` (or a stub `.pyi`), else the package
    /// `a/b/__init__.py`. No segments means the package `base` itself.
    fn python_module(&self, base: &Path, segments: &[&str]) -> Option<PathBuf> {
        let mut path = base.to_path_buf();
        for segment in segments {
            path.push(segment);
        }
        if !segments.is_empty() {
            for ext in [".py", ".pyi"] {
                let candidate = with_suffix(&path, ext);
                if self.files.contains(&candidate) {
                    return Some(candidate);
                }
            }
        }
        let init = path.join("__init__.py");
        self.files.contains(&init).then_some(init)
    }

    fn resolve_rust(&self, file: &Path, spec: &str) -> Option<PathBuf> {
        let (crate_root, base) = self.rust_crate(file);
        let own = rust_module_path(file, &crate_root, &base);
        if let Some(name) = spec.strip_prefix("mod:") {
            let mut segments = own;
            segments.push(name.to_string());
            let (found, matched) = self.rust_module_file(&crate_root, &base, &segments);
            return (matched == segments.len()).then_some(found);
        }
        let mut parts = spec.split("::").peekable();
        let (mut segments, required): (Vec<String>, usize) = match parts.peek().copied() {
            Some("crate") => {
                parts.next();
                (Vec::new(), 0)
            }
            Some("self") => {
                parts.next();
                let n = own.len();
                (own, n)
            }
            Some("super") => {
                let mut segments = own;
                while parts.peek() == Some(&"super") {
                    parts.next();
                    segments.pop()?;
                }
                let n = segments.len();
                (segments, n)
            }
            // A bare path is relative to the current module (2018 uniform paths) when its first
            // segment is a child module; otherwise it names an external crate.
            _ => {
                let n = own.len() + 1;
                (own, n)
            }
        };
        segments.extend(parts.map(str::to_string));
        let (found, matched) = self.rust_module_file(&crate_root, &base, &segments);
        (matched >= required).then_some(found)
    }

    /// The crate root file of `file` and the directory its top-level modules live in: the
    /// nearest `Cargo.toml`'s `src/lib.rs` (else `src/main.rs`) for files under its `src/`; any
    /// other `.rs` file (a binary in `src/bin`, a test, a bench, an example) is its own root.
    fn rust_crate(&self, file: &Path) -> (PathBuf, PathBuf) {
        let own_root = || {
            (
                file.to_path_buf(),
                file.parent().unwrap_or(Path::new("")).to_path_buf(),
            )
        };
        let mut dir = file.parent();
        while let Some(d) = dir {
            if self.layout.crates.contains(d) {
                let src = d.join("src");
                if !file.starts_with(&src) || file.starts_with(src.join("bin")) {
                    return own_root();
                }
                let lib = src.join("lib.rs");
                let main = src.join("main.rs");
                // `main.rs` beside a `lib.rs` is a separate crate that uses the library by name.
                if file == main || !self.files.contains(&lib) {
                    return if self.files.contains(&main) {
                        (main, src)
                    } else {
                        own_root()
                    };
                }
                return (lib, src);
            }
            dir = d.parent();
        }
        own_root()
    }

    /// Walks `segments` from the crate root: each one is `dir/seg.rs` or `dir/seg/mod.rs`. The
    /// walk stops at the first segment that is no file (the rest names items), returning the
    /// last module file found and how many segments matched.
    fn rust_module_file(
        &self,
        crate_root: &Path,
        base: &Path,
        segments: &[String],
    ) -> (PathBuf, usize) {
        let mut dir = base.to_path_buf();
        let mut found = crate_root.to_path_buf();
        let mut matched = 0;
        for segment in segments {
            let flat = dir.join(format!("{segment}.rs"));
            let nested = dir.join(segment).join("mod.rs");
            if self.files.contains(&flat) {
                found = flat;
            } else if self.files.contains(&nested) {
                found = nested;
            } else {
                break;
            }
            dir.push(segment);
            matched += 1;
        }
        (found, matched)
    }
}

/// The module path of a Rust file below its crate's base directory: `src/a/b.rs` and
/// `src/a/b/mod.rs` are both `a::b`; the crate root is the empty path.
fn rust_module_path(file: &Path, crate_root: &Path, base: &Path) -> Vec<String> {
    if file == crate_root {
        return Vec::new();
    }
    let Ok(rel) = file.strip_prefix(base) else {
        return Vec::new();
    };
    let mut segments: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    match segments.last().map(String::as_str) {
        Some("mod.rs") => {
            segments.pop();
        }
        Some(last) => {
            let stem = last.strip_suffix(".rs").unwrap_or(last).to_string();
            segments.pop();
            segments.push(stem);
        }
        None => {}
    }
    segments
}

fn with_suffix(path: &Path, suffix: &str) -> PathBuf {
    let mut s: OsString = path.as_os_str().to_owned();
    s.push(suffix);
    PathBuf::from(s)
}

/// Lexical normalisation of a root-relative path; `None` when it climbs out of the root.
pub(crate) fn normalize(path: &Path) -> Option<PathBuf> {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() {
                    return None;
                }
            }
            Component::Normal(part) => out.push(part),
            Component::RootDir | Component::Prefix(_) => return None,
        }
    }
    Some(out)
}

fn load_tsconfig(root: &Path, config: &Path, depth: usize) -> Option<TsConfig> {
    if depth > MAX_EXTENDS {
        return None;
    }
    let text = std::fs::read_to_string(root.join(config)).ok()?;
    let json: serde_json::Value = serde_json::from_str(&strip_jsonc(&text)).ok()?;
    let dir = config.parent().unwrap_or(Path::new("")).to_path_buf();
    // Only a relative `extends` is followed: a package (`@tsconfig/node20`) holds no aliases
    // into this project.
    let mut merged = json
        .get("extends")
        .and_then(|e| e.as_str())
        .filter(|e| e.starts_with('.'))
        .and_then(|e| {
            let mut path = normalize(&dir.join(e))?;
            if path.extension().is_none_or(|x| x != "json") {
                path = with_suffix(&path, ".json");
            }
            load_tsconfig(root, &path, depth + 1)
        })
        .unwrap_or_else(|| TsConfig {
            paths_base: dir.clone(),
            ..TsConfig::default()
        });
    let options = json.get("compilerOptions");
    if let Some(base) = options
        .and_then(|o| o.get("baseUrl"))
        .and_then(|b| b.as_str())
    {
        let base = normalize(&dir.join(base))?;
        merged.base_url = Some(base.clone());
        merged.paths_base = base;
    }
    if let Some(paths) = options
        .and_then(|o| o.get("paths"))
        .and_then(|p| p.as_object())
    {
        merged.paths = paths
            .iter()
            .map(|(pattern, targets)| {
                let targets = targets
                    .as_array()
                    .map(|a| {
                        a.iter()
                            .filter_map(|t| t.as_str().map(str::to_string))
                            .collect()
                    })
                    .unwrap_or_default();
                (pattern.clone(), targets)
            })
            .collect();
        if merged.base_url.is_none() {
            merged.paths_base = dir;
        }
    }
    Some(merged)
}

/// tsconfig is JSON with comments and trailing commas; strips both outside strings.
fn strip_jsonc(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    let mut in_string = false;
    while let Some(c) = chars.next() {
        if in_string {
            out.push(c);
            if c == '\\' {
                if let Some(next) = chars.next() {
                    out.push(next);
                }
            } else if c == '"' {
                in_string = false;
            }
            continue;
        }
        match c {
            '"' => {
                in_string = true;
                out.push(c);
            }
            '/' if chars.peek() == Some(&'/') => {
                for n in chars.by_ref() {
                    if n == '\n' {
                        out.push('\n');
                        break;
                    }
                }
            }
            '/' if chars.peek() == Some(&'*') => {
                chars.next();
                let mut prev = ' ';
                for n in chars.by_ref() {
                    if prev == '*' && n == '/' {
                        break;
                    }
                    prev = n;
                }
            }
            ',' => {
                // Drop the comma when the next significant character closes the container.
                let rest: String = chars.clone().collect();
                let next = strip_leading_comments(&rest);
                if !(next.starts_with('}') || next.starts_with(']')) {
                    out.push(c);
                }
            }
            _ => out.push(c),
        }
    }
    out
}

fn strip_leading_comments(mut s: &str) -> &str {
    loop {
        s = s.trim_start();
        if let Some(rest) = s.strip_prefix("//") {
            s = rest.split_once('\n').map_or("", |(_, r)| r);
        } else if let Some(rest) = s.strip_prefix("/*") {
            s = rest.split_once("*/").map_or("", |(_, r)| r);
        } else {
            return s;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(paths: &[&str]) -> HashSet<PathBuf> {
        paths.iter().map(PathBuf::from).collect()
    }

    /// Asserts what each `(from, import, file)` resolves to in `language`: `file`, or nothing
    /// for an import outside the project.
    fn assert_resolves(r: &Resolver<'_>, language: Language, cases: &[(&str, &str, Option<&str>)]) {
        for (from, import, file) in cases {
            assert_eq!(
                r.resolve(Path::new(from), language, import),
                file.map(PathBuf::from),
                "{from}: {import}"
            );
        }
    }

    #[test]
    fn jsonc_is_stripped() {
        let text = "{\n // c\n \"a\": \"x//y\", /* b */ \"b\": [1, 2,],\n}";
        let v: serde_json::Value = serde_json::from_str(&strip_jsonc(text)).unwrap_or_default();
        assert_eq!(v["a"], "x//y");
        assert_eq!(v["b"], serde_json::json!([1, 2]));
    }

    #[test]
    fn js_probing() {
        let files = set(&[
            "src/a.ts",
            "src/b/index.tsx",
            "src/c.ts",
            "src/x.service.ts",
        ]);
        let layout = Layout::load(Path::new("/nonexistent"), &[], &[]);
        let r = Resolver::new(&files, &layout);
        let from = "src/main.ts";
        assert_resolves(
            &r,
            Language::TypeScript,
            &[
                (from, "./a", Some("src/a.ts")),
                (from, "./b", Some("src/b/index.tsx")),
                (from, "./c.js", Some("src/c.ts")),
                (from, "./x.service", Some("src/x.service.ts")),
                (from, "../../escape", None),
                (from, "react", None),
            ],
        );
    }

    #[test]
    fn python_resolution() {
        let files = set(&[
            "pkg/__init__.py",
            "pkg/mod.py",
            "pkg/sub/__init__.py",
            "pkg/sub/deep.py",
            "src/lib/core.py",
        ]);
        let layout = Layout::load(Path::new("/nonexistent"), &[], &[]);
        let r = Resolver::new(&files, &layout);
        let deep = "pkg/sub/deep.py";
        assert_resolves(
            &r,
            Language::Python,
            &[
                (deep, "..:mod", Some("pkg/mod.py")),
                (deep, "..mod:thing", Some("pkg/mod.py")),
                (deep, ".:nothing", Some("pkg/sub/__init__.py")),
                (deep, "pkg:missing", Some("pkg/__init__.py")),
                (deep, "lib.core", Some("src/lib/core.py")),
                (deep, "os.path", None),
                (deep, "....:x", None),
            ],
        );
    }

    #[test]
    fn rust_resolution() {
        let files = set(&[
            "src/lib.rs",
            "src/a.rs",
            "src/a/b.rs",
            "src/c/mod.rs",
            "src/c/d.rs",
            "tests/it.rs",
            "tests/common/mod.rs",
        ]);
        let manifests = [PathBuf::from("Cargo.toml")];
        let layout = Layout::load(Path::new("/nonexistent"), &[], &manifests);
        let r = Resolver::new(&files, &layout);
        let b = "src/a/b.rs";
        assert_resolves(
            &r,
            Language::Rust,
            &[
                (b, "crate::c::d::Item", Some("src/c/d.rs")),
                (b, "crate::c::Thing", Some("src/c/mod.rs")),
                (b, "super::X", Some("src/a.rs")),
                (b, "super::super::c", Some("src/c/mod.rs")),
                (b, "crate::Root", Some("src/lib.rs")),
                ("src/a.rs", "mod:b", Some("src/a/b.rs")),
                ("src/c/mod.rs", "self::d", Some("src/c/d.rs")),
                ("src/lib.rs", "a::b::f", Some("src/a/b.rs")),
                ("src/lib.rs", "std::io", None),
                ("src/lib.rs", "mod:missing", None),
                ("tests/it.rs", "mod:common", Some("tests/common/mod.rs")),
            ],
        );
    }
}
