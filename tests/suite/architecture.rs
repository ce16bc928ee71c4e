//! The layout of the three crates, checked on their sources: no module cycles at any level, each
//! top-level module using only those its `lib.rs` declares before it (the layer order; rustfmt's
//! `reorder_modules` is off so the order stays as written), no file over 600 lines of non-test
//! code, and crate docs that name every top-level module.
//!
//! Why a test of our own rather than `cargo-modules --acyclic`: that tool builds rust-analyzer
//! (tens of minutes on a cold machine, within CI's budget only with a cache) and follows macro
//! expansions we do not need. This reads the sources with `syn`, which the build has anyway.
//!
//! The rule, for every module: among its child modules (each with its whole subtree) and the
//! module's own code, the graph of uses must be acyclic. A path in code or a private `use` is a
//! use of the module where the item is defined; `pub use` re-exports are followed to the
//! defining module and are not uses of the module that re-exports. So a `mod.rs` is either a
//! facade (declarations, docs, re-exports) or its own items are not used by its children.
//! Paths inside macro invocations (`format!`, `matches!`) are not seen; test modules
//! (`#[cfg(test)]`) are left out.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};

use syn::visit::Visit;

const MAX_LINES: usize = 600;

pub(super) fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn no_crate_has_a_module_cycle() {
    for src in [
        root().join("src"),
        root().join("actors/src"),
        root().join("guard/src"),
    ] {
        let krate = Crate::load(&src);
        assert!(
            krate.modules.len() > 20,
            "{}: too few modules read",
            src.display()
        );
        let found = cycles(&krate);
        assert!(
            found.is_empty(),
            "module cycles in {}:\n{}",
            src.display(),
            found.join("\n")
        );
    }
}

/// The documented layer order: each crate's `lib.rs` lists its top-level modules so that a module
/// uses only those before it.
#[test]
fn each_top_level_module_uses_only_those_before_it() {
    let mut found = Vec::new();
    for src in [
        root().join("src"),
        root().join("actors/src"),
        root().join("guard/src"),
    ] {
        let krate = Crate::load(&src);
        found.extend(
            layer_breaks(&krate, &lib_order(&src))
                .into_iter()
                .map(|b| format!("{}: {b}", src.display())),
        );
    }
    assert!(
        found.is_empty(),
        "uses against the layer order:\n{}",
        found.join("\n")
    );
}

/// The top-level modules `lib.rs` declares, in its order (test-only ones left out).
fn lib_order(src: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(src.join("lib.rs")).unwrap();
    syn::parse_file(&text)
        .unwrap()
        .items
        .into_iter()
        .filter_map(|item| match item {
            syn::Item::Mod(m) if !is_test_cfg(&m.attrs) => Some(m.ident.to_string()),
            _ => None,
        })
        .collect()
}

/// Each use of a top-level module by one declared before it in `order`.
fn layer_breaks(krate: &Crate, order: &[String]) -> Vec<String> {
    let place = |p: &ModPath| {
        p.first()
            .and_then(|top| order.iter().position(|m| m == top))
    };
    let mut breaks = BTreeSet::new();
    for (from, tos) in krate.edges() {
        for to in tos {
            if let (Some(a), Some(b)) = (place(&from), place(&to)) {
                if a < b {
                    breaks.insert(format!(
                        "{} (layer {}) uses {} (layer {})",
                        name(&from),
                        order[a],
                        name(&to),
                        order[b]
                    ));
                }
            }
        }
    }
    breaks.into_iter().collect()
}

#[test]
fn the_layer_check_finds_a_module_using_one_declared_after_it() {
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, text: &str| std::fs::write(dir.path().join(name), text).unwrap();
    // `leaf` uses nothing; `top` uses `leaf` (fine) and `mid` (declared after it: a break).
    write("lib.rs", "pub mod leaf;\npub mod top;\npub mod mid;\n");
    write("leaf.rs", "pub struct L;\n");
    write("mid.rs", "pub struct M(pub crate::leaf::L);\n");
    write(
        "top.rs",
        "pub fn f(_: crate::leaf::L) -> Option<crate::mid::M> { None }\n",
    );
    let krate = Crate::load(dir.path());
    let order = lib_order(dir.path());
    assert_eq!(order, ["leaf", "top", "mid"]);
    assert_eq!(
        layer_breaks(&krate, &order),
        ["top (layer top) uses mid (layer mid)"]
    );
    let fixed = ["leaf", "mid", "top"].map(String::from);
    assert!(layer_breaks(&krate, &fixed).is_empty());
}

#[test]
fn the_check_finds_a_planted_cycle_and_accepts_a_facade() {
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, text: &str| {
        let path = dir.path().join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    };
    // `a` uses `b` through its parent's re-export, `b` uses `a`: a cycle. `c/mod.rs` is a
    // facade its children reach through: no cycle.
    write(
        "lib.rs",
        "pub mod a;\npub mod b;\npub mod c;\npub use b::B;\n",
    );
    write(
        "a.rs",
        "pub struct A;\npub fn f() -> crate::B { crate::B }\n",
    );
    write(
        "b.rs",
        "pub struct B;\nuse crate::a::A;\npub fn g(_: A) {}\n",
    );
    write(
        "c/mod.rs",
        "//! A facade.\npub mod x;\npub mod y;\npub use x::X;\n",
    );
    write("c/x.rs", "pub struct X;\n");
    write("c/y.rs", "pub fn h() -> super::X { super::X }\n");
    let found = cycles(&Crate::load(dir.path()));
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].starts_with("in crate: a, b"), "{}", found[0]);
    assert!(found[0].contains("a -> b  (a uses b)"), "{}", found[0]);
}

/// `build.rs` links the binaries without PIE on Linux, so the loader relocates nothing at start
/// (docs/performance.md): the ELF header's type is `ET_EXEC` (2), not `ET_DYN` (3).
#[test]
#[cfg(target_os = "linux")]
fn the_binaries_are_linked_position_dependent() {
    for bin in [
        env!("CARGO_BIN_EXE_ralph-loop"),
        env!("CARGO_BIN_EXE_micro-agent"),
    ] {
        let header = std::fs::read(bin).unwrap();
        assert_eq!(&header[..4], b"\x7fELF", "{bin}");
        let e_type = u16::from_le_bytes([header[16], header[17]]);
        assert_eq!(e_type, 2, "{bin} is not ET_EXEC");
    }
}

#[test]
fn no_file_has_over_600_lines_of_non_test_code() {
    let mut over = Vec::new();
    for src in [
        root().join("src"),
        root().join("actors/src"),
        root().join("guard/src"),
    ] {
        for file in rust_files(&src) {
            // Test-only files: the actors' test suite and `mod tests;` files.
            let text = std::fs::read_to_string(&file).unwrap();
            if file.components().any(|c| c.as_os_str() == "tests") || is_test_file(&file) {
                continue;
            }
            let lines = non_test_lines(&text);
            if lines > MAX_LINES {
                over.push(format!("{}: {lines}", file.display()));
            }
        }
    }
    assert!(
        over.is_empty(),
        "files over {MAX_LINES} lines of non-test code:\n{}",
        over.join("\n")
    );
}

#[test]
fn the_crate_docs_name_every_top_level_module() {
    for src in [
        root().join("src"),
        root().join("actors/src"),
        root().join("guard/src"),
    ] {
        let lib = std::fs::read_to_string(src.join("lib.rs")).unwrap();
        let docs: String = lib
            .lines()
            .filter(|l| l.starts_with("//!"))
            .collect::<Vec<_>>()
            .join("\n");
        let parsed = syn::parse_file(&lib).unwrap();
        for item in parsed.items {
            if let syn::Item::Mod(m) = item {
                if is_test_cfg(&m.attrs) {
                    continue;
                }
                let name = m.ident.to_string();
                assert!(
                    docs.contains(&format!("[`{name}`]")),
                    "{}/lib.rs: the crate docs do not list module `{name}`",
                    src.display()
                );
            }
        }
    }
}

/// A `#[cfg(test)] mod tests;` file: declared test-only by its parent.
pub(super) fn is_test_file(file: &Path) -> bool {
    let Some(stem) = file.file_stem().and_then(|s| s.to_str()) else {
        return false;
    };
    let Some(dir) = file.parent() else {
        return false;
    };
    let parent = if stem == "mod" {
        return false;
    } else if dir.join("mod.rs").exists() {
        dir.join("mod.rs")
    } else {
        dir.with_extension("rs")
    };
    let Ok(text) = std::fs::read_to_string(parent) else {
        return false;
    };
    text.contains(&format!("#[cfg(test)]\nmod {stem};"))
        || text.contains(&format!("#[cfg(test)]\npub(crate) mod {stem};"))
}

pub(super) fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

/// Lines of `text` outside `#[cfg(test)] mod ... { }` blocks, every line counted.
fn non_test_lines(text: &str) -> usize {
    let lines: Vec<&str> = text.lines().collect();
    let mut count = 0;
    let mut i = 0;
    while i < lines.len() {
        let next_is_mod = lines.get(i + 1).is_some_and(|l| {
            let l = l.trim_start();
            l.starts_with("mod ") || l.starts_with("pub(crate) mod ") || l.starts_with("pub mod ")
        });
        if lines[i].trim() == "#[cfg(test)]" && next_is_mod {
            if lines[i + 1].trim_end().ends_with(';') {
                i += 2;
                continue;
            }
            let mut depth = 0i64;
            let mut j = i + 1;
            let mut opened = false;
            while j < lines.len() {
                depth += lines[j].matches('{').count() as i64;
                depth -= lines[j].matches('}').count() as i64;
                opened |= lines[j].contains('{');
                j += 1;
                if opened && depth <= 0 {
                    break;
                }
            }
            i = j;
            continue;
        }
        count += 1;
        i += 1;
    }
    count
}

type ModPath = Vec<String>;

#[derive(Default, Debug)]
struct Module {
    children: BTreeSet<String>,
    items: BTreeSet<String>,
    /// `pub use` names → the path they stand for.
    reexports: HashMap<String, ModPath>,
    globs: Vec<ModPath>,
    /// Every name a `use` brings in → its absolute path.
    imports: HashMap<String, ModPath>,
    /// Paths the module's own code (and its private `use`s) refers to, absolute.
    refs: Vec<ModPath>,
}

struct Crate {
    modules: BTreeMap<ModPath, Module>,
}

fn is_test_cfg(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| {
        a.path().is_ident("cfg")
            && a.meta.require_list().is_ok_and(|l| {
                let t = l.tokens.to_string();
                t == "test" || t.starts_with("any (test") || t.starts_with("all (test")
            })
    })
}

fn path_attr(attrs: &[syn::Attribute]) -> Option<String> {
    attrs.iter().find_map(|a| match &a.meta {
        syn::Meta::NameValue(nv) if a.path().is_ident("path") => match &nv.value {
            syn::Expr::Lit(syn::ExprLit {
                lit: syn::Lit::Str(s),
                ..
            }) => Some(s.value()),
            _ => None,
        },
        _ => None,
    })
}

/// `segs` as written in module `at`, made absolute; `None` for paths outside this crate.
fn absolute(at: &ModPath, m: &Module, segs: &[String]) -> Option<ModPath> {
    let first = segs.first()?;
    match first.as_str() {
        "crate" => Some(segs[1..].to_vec()),
        "self" => Some(at.iter().chain(&segs[1..]).cloned().collect()),
        "super" => {
            let mut base = at.clone();
            let mut rest = segs;
            while rest.first().map(String::as_str) == Some("super") {
                base.pop()?;
                rest = &rest[1..];
            }
            Some(base.into_iter().chain(rest.iter().cloned()).collect())
        }
        name if m.children.contains(name) => Some(at.iter().chain(segs).cloned().collect()),
        name => m
            .imports
            .get(name)
            .map(|p| p.iter().chain(&segs[1..]).cloned().collect()),
    }
}

/// The leaves of a `use` tree: each path and the name it binds (`None` for a glob).
fn use_leaves(
    tree: &syn::UseTree,
    prefix: &mut Vec<String>,
    out: &mut Vec<(ModPath, Option<String>)>,
) {
    match tree {
        syn::UseTree::Path(p) => {
            prefix.push(p.ident.to_string());
            use_leaves(&p.tree, prefix, out);
            prefix.pop();
        }
        syn::UseTree::Name(n) => {
            let name = n.ident.to_string();
            if name == "self" {
                out.push((prefix.clone(), prefix.last().cloned()));
            } else {
                let mut p = prefix.clone();
                p.push(name.clone());
                out.push((p, Some(name)));
            }
        }
        syn::UseTree::Rename(r) => {
            let mut p = prefix.clone();
            p.push(r.ident.to_string());
            out.push((p, Some(r.rename.to_string())));
        }
        syn::UseTree::Glob(_) => out.push((prefix.clone(), None)),
        syn::UseTree::Group(g) => {
            for t in &g.items {
                use_leaves(t, prefix, out);
            }
        }
    }
}

/// The raw paths of a module's own code, test items left out.
#[derive(Default)]
struct Paths {
    paths: Vec<ModPath>,
    nested_uses: Vec<syn::ItemUse>,
}

impl<'a> Visit<'a> for Paths {
    fn visit_path(&mut self, p: &'a syn::Path) {
        self.paths
            .push(p.segments.iter().map(|s| s.ident.to_string()).collect());
        syn::visit::visit_path(self, p);
    }
    fn visit_item_use(&mut self, u: &'a syn::ItemUse) {
        if !is_test_cfg(&u.attrs) {
            self.nested_uses.push(u.clone());
        }
    }
    fn visit_item_mod(&mut self, _: &'a syn::ItemMod) {}
    // `pub(super)` names who may see an item, not a module it uses.
    fn visit_visibility(&mut self, _: &'a syn::Visibility) {}
    fn visit_attribute(&mut self, _: &'a syn::Attribute) {}
    fn visit_item(&mut self, i: &'a syn::Item) {
        let attrs = match i {
            syn::Item::Fn(x) => &x.attrs,
            syn::Item::Impl(x) => &x.attrs,
            syn::Item::Struct(x) => &x.attrs,
            syn::Item::Enum(x) => &x.attrs,
            syn::Item::Const(x) => &x.attrs,
            syn::Item::Static(x) => &x.attrs,
            syn::Item::Trait(x) => &x.attrs,
            syn::Item::Use(x) => &x.attrs,
            syn::Item::Type(x) => &x.attrs,
            _ => return syn::visit::visit_item(self, i),
        };
        if !is_test_cfg(attrs) {
            syn::visit::visit_item(self, i);
        }
    }
    fn visit_impl_item_fn(&mut self, f: &'a syn::ImplItemFn) {
        if !is_test_cfg(&f.attrs) {
            syn::visit::visit_impl_item_fn(self, f);
        }
    }
}

struct Loader {
    modules: BTreeMap<ModPath, Module>,
    raw: Vec<(ModPath, Vec<syn::Item>)>,
}

impl Loader {
    fn load_file(&mut self, at: ModPath, file: &Path, children_dir: PathBuf) {
        let text =
            std::fs::read_to_string(file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        let parsed = syn::parse_file(&text).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        self.load_items(at, &children_dir, parsed.items);
    }

    fn load_items(&mut self, at: ModPath, dir: &Path, items: Vec<syn::Item>) {
        let mut module = Module::default();
        let mut kept = Vec::new();
        for item in items {
            let ident = match &item {
                syn::Item::Mod(m) => {
                    if is_test_cfg(&m.attrs) {
                        continue;
                    }
                    let name = m.ident.to_string();
                    module.children.insert(name.clone());
                    let mut child = at.clone();
                    child.push(name.clone());
                    match &m.content {
                        Some((_, inner)) => self.load_items(child, &dir.join(&name), inner.clone()),
                        None => {
                            let (file, children) = match path_attr(&m.attrs) {
                                Some(p) => {
                                    let f = dir.join(p);
                                    let d = f.with_extension("");
                                    (f, d)
                                }
                                None => {
                                    let flat = dir.join(format!("{name}.rs"));
                                    if flat.exists() {
                                        (flat, dir.join(&name))
                                    } else {
                                        (dir.join(&name).join("mod.rs"), dir.join(&name))
                                    }
                                }
                            };
                            self.load_file(child, &file, children);
                        }
                    }
                    continue;
                }
                syn::Item::Fn(x) => Some(&x.sig.ident),
                syn::Item::Struct(x) => Some(&x.ident),
                syn::Item::Enum(x) => Some(&x.ident),
                syn::Item::Trait(x) => Some(&x.ident),
                syn::Item::Const(x) => Some(&x.ident),
                syn::Item::Static(x) => Some(&x.ident),
                syn::Item::Type(x) => Some(&x.ident),
                syn::Item::Union(x) => Some(&x.ident),
                syn::Item::Macro(x) => x.ident.as_ref(),
                _ => None,
            };
            if let Some(ident) = ident {
                module.items.insert(ident.to_string());
            }
            kept.push(item);
        }
        self.modules.insert(at.clone(), module);
        self.raw.push((at, kept));
    }

    /// Once every module's children are known: imports, re-exports, references.
    fn link(mut self) -> Crate {
        for (at, items) in std::mem::take(&mut self.raw) {
            let mut uses = Vec::new();
            let mut paths = Paths::default();
            for item in &items {
                match item {
                    syn::Item::Use(u) if !is_test_cfg(&u.attrs) => uses.push(u.clone()),
                    syn::Item::Use(_) => {}
                    other => paths.visit_item(other),
                }
            }
            uses.append(&mut paths.nested_uses);
            let mut leaves = Vec::new();
            for u in &uses {
                let mut out = Vec::new();
                use_leaves(&u.tree, &mut Vec::new(), &mut out);
                let public = !matches!(u.vis, syn::Visibility::Inherited);
                leaves.extend(out.into_iter().map(|l| (l, public)));
            }
            // Twice: a `use` may start from a name another `use` brings in.
            for _ in 0..2 {
                for ((segs, name), _) in &leaves {
                    let found = absolute(&at, &self.modules[&at], segs);
                    if let (Some(abs), Some(name)) = (found, name) {
                        if let Some(m) = self.modules.get_mut(&at) {
                            m.imports.insert(name.clone(), abs);
                        }
                    }
                }
            }
            let m = &self.modules[&at];
            let (mut reexports, mut globs, mut refs) = (HashMap::new(), Vec::new(), Vec::new());
            for ((segs, name), public) in &leaves {
                let Some(abs) = absolute(&at, m, segs) else {
                    continue;
                };
                match (public, name) {
                    (true, Some(name)) => {
                        reexports.insert(name.clone(), abs);
                    }
                    (true, None) => globs.push(abs),
                    (false, _) => refs.push(abs),
                }
            }
            refs.extend(paths.paths.iter().filter_map(|p| absolute(&at, m, p)));
            if let Some(m) = self.modules.get_mut(&at) {
                m.reexports = reexports;
                m.globs = globs;
                m.refs = refs;
            }
        }
        Crate {
            modules: self.modules,
        }
    }
}

impl Crate {
    fn load(src: &Path) -> Crate {
        let mut loader = Loader {
            modules: BTreeMap::new(),
            raw: Vec::new(),
        };
        loader.load_file(Vec::new(), &src.join("lib.rs"), src.to_path_buf());
        loader.link()
    }

    /// The module an absolute path's item is defined in, following re-exports.
    fn resolve(&self, abs: &[String], depth: u32) -> Option<ModPath> {
        let mut n = 0;
        while n < abs.len() && self.modules.contains_key(&abs[..=n]) {
            n += 1;
        }
        let module = abs[..n].to_vec();
        let m = self.modules.get(&module)?;
        let Some(item) = abs.get(n) else {
            return Some(module);
        };
        if depth > 8 || m.items.contains(item) {
            return Some(module);
        }
        if let Some(target) = m.reexports.get(item) {
            let next: ModPath = target.iter().chain(&abs[n + 1..]).cloned().collect();
            return self.resolve(&next, depth + 1).or(Some(module));
        }
        for glob in &m.globs {
            let defines = self
                .modules
                .get(glob)
                .is_some_and(|g| g.items.contains(item) || g.reexports.contains_key(item));
            if defines {
                let next: ModPath = glob.iter().chain(&abs[n..]).cloned().collect();
                return self.resolve(&next, depth + 1);
            }
        }
        Some(module)
    }

    /// Module → the modules it uses.
    fn edges(&self) -> BTreeMap<ModPath, BTreeSet<ModPath>> {
        let mut edges: BTreeMap<ModPath, BTreeSet<ModPath>> = BTreeMap::new();
        for (at, m) in &self.modules {
            for r in &m.refs {
                if let Some(to) = self.resolve(r, 0).filter(|to| to != at) {
                    edges.entry(at.clone()).or_default().insert(to);
                }
            }
        }
        edges
    }
}

fn name(p: &ModPath) -> String {
    if p.is_empty() {
        "crate".into()
    } else {
        p.join("::")
    }
}

/// Every cycle among the children (with their subtrees) and own code of each module.
fn cycles(krate: &Crate) -> Vec<String> {
    let edges = krate.edges();
    let mut found = Vec::new();
    for (parent, pm) in &krate.modules {
        if pm.children.is_empty() {
            continue;
        }
        let member = |p: &ModPath| -> Option<String> {
            p.starts_with(parent).then(|| {
                p.get(parent.len())
                    .cloned()
                    .unwrap_or_else(|| "<self>".into())
            })
        };
        let mut graph: BTreeMap<String, BTreeMap<String, (ModPath, ModPath)>> = BTreeMap::new();
        for (from, tos) in &edges {
            let Some(a) = member(from) else { continue };
            for to in tos {
                let Some(b) = member(to).filter(|b| *b != a) else {
                    continue;
                };
                graph
                    .entry(a.clone())
                    .or_default()
                    .entry(b)
                    .or_insert((from.clone(), to.clone()));
            }
        }
        for scc in strongly_connected(&graph) {
            if scc.len() < 2 {
                continue;
            }
            let members: Vec<&str> = scc.iter().map(String::as_str).collect();
            let mut lines = vec![format!("in {}: {}", name(parent), members.join(", "))];
            for a in &scc {
                for (b, (from, to)) in graph.get(a).into_iter().flatten() {
                    if scc.contains(b) {
                        lines.push(format!(
                            "    {a} -> {b}  ({} uses {})",
                            name(from),
                            name(to)
                        ));
                    }
                }
            }
            found.push(lines.join("\n"));
        }
    }
    found
}

/// Tarjan's strongly connected components.
fn strongly_connected<V>(graph: &BTreeMap<String, BTreeMap<String, V>>) -> Vec<BTreeSet<String>> {
    struct State<'g, V> {
        graph: &'g BTreeMap<String, BTreeMap<String, V>>,
        index: HashMap<String, usize>,
        low: HashMap<String, usize>,
        stack: Vec<String>,
        on_stack: BTreeSet<String>,
        next: usize,
        out: Vec<BTreeSet<String>>,
    }
    fn visit<V>(s: &mut State<'_, V>, v: &str) {
        s.index.insert(v.into(), s.next);
        s.low.insert(v.into(), s.next);
        s.next += 1;
        s.stack.push(v.into());
        s.on_stack.insert(v.into());
        let successors: Vec<String> = s
            .graph
            .get(v)
            .map(|m| m.keys().cloned().collect())
            .unwrap_or_default();
        for w in successors {
            if !s.index.contains_key(&w) {
                visit(s, &w);
                let lw = s.low[&w];
                let lv = s.low.get_mut(v).unwrap();
                *lv = (*lv).min(lw);
            } else if s.on_stack.contains(&w) {
                let iw = s.index[&w];
                let lv = s.low.get_mut(v).unwrap();
                *lv = (*lv).min(iw);
            }
        }
        if s.low[v] == s.index[v] {
            let mut scc = BTreeSet::new();
            while let Some(w) = s.stack.pop() {
                s.on_stack.remove(&w);
                let done = w == v;
                scc.insert(w);
                if done {
                    break;
                }
            }
            s.out.push(scc);
        }
    }
    let mut s = State {
        graph,
        index: HashMap::new(),
        low: HashMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        next: 0,
        out: Vec::new(),
    };
    let nodes: BTreeSet<String> = graph
        .iter()
        .flat_map(|(k, v)| std::iter::once(k.clone()).chain(v.keys().cloned()))
        .collect();
    for n in nodes {
        if !s.index.contains_key(&n) {
            visit(&mut s, &n);
        }
    }
    s.out
}
