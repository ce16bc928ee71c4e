//! The module graph the layout checks read: each crate's modules loaded from its sources with
//! `syn` (children, items, re-exports, imports and the paths its code uses), and its cycles.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};

use syn::visit::Visit;

pub(super) type ModPath = Vec<String>;

#[derive(Default, Debug)]
pub(super) struct Module {
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

pub(super) struct Crate {
    pub(super) modules: BTreeMap<ModPath, Module>,
}

pub(super) fn is_test_cfg(attrs: &[syn::Attribute]) -> bool {
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
    pub(super) fn load(src: &Path) -> Crate {
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
    pub(super) fn edges(&self) -> BTreeMap<ModPath, BTreeSet<ModPath>> {
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

pub(super) fn name(p: &ModPath) -> String {
    if p.is_empty() {
        "crate".into()
    } else {
        p.join("::")
    }
}

/// Every cycle among the children (with their subtrees) and own code of each module.
pub(super) fn cycles(krate: &Crate) -> Vec<String> {
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
