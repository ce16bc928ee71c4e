//! Import extraction with tree-sitter: which specifiers a file names, in a form the resolver
//! understands, and the exported signatures of a file.
//!
//! Specifier forms (also what the cache stores):
//! - JS/TS: the string as written (`./util`, `@/lib/x`, `react`).
//! - Python: the dotted module (`a.b`, `..pkg.mod`, `.`), then for `from M import n` a `:` and the
//!   imported name (`..pkg:mod`), because `n` may be a submodule or an attribute of `M`.
//! - Rust: `mod:foo` for `mod foo;`, otherwise the `use` path with groups expanded
//!   (`crate::a::b`, `super::x`, `self::y`, `a::b`).

use std::cell::RefCell;
use std::path::Path;
use std::sync::OnceLock;

use serde::{Deserialize, Serialize};
use streaming_iterator::StreamingIterator;
use tree_sitter::{Node, Parser, Query, QueryCursor, Tree};

/// A language whose imports the graph follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Language {
    /// `.ts`, `.mts`, `.cts` (including `.d.ts`).
    TypeScript,
    /// `.tsx`.
    Tsx,
    /// `.js`, `.jsx`, `.mjs`, `.cjs`: the JavaScript grammar parses JSX too.
    JavaScript,
    /// `.py`, `.pyi`.
    Python,
    /// `.rs`.
    Rust,
}

impl Language {
    /// The language of a file, from its extension; `None` for files the graph does not hold.
    pub fn from_path(path: &Path) -> Option<Language> {
        let ext = path.extension()?.to_str()?;
        match ext {
            "ts" | "mts" | "cts" => Some(Language::TypeScript),
            "tsx" => Some(Language::Tsx),
            "js" | "jsx" | "mjs" | "cjs" => Some(Language::JavaScript),
            "py" | "pyi" => Some(Language::Python),
            "rs" => Some(Language::Rust),
            _ => None,
        }
    }

    fn index(self) -> usize {
        match self {
            Language::TypeScript => 0,
            Language::Tsx => 1,
            Language::JavaScript => 2,
            Language::Python => 3,
            Language::Rust => 4,
        }
    }

    fn grammar(self) -> tree_sitter::Language {
        match self {
            Language::TypeScript => tree_sitter_typescript::LANGUAGE_TYPESCRIPT.into(),
            Language::Tsx => tree_sitter_typescript::LANGUAGE_TSX.into(),
            Language::JavaScript => tree_sitter_javascript::LANGUAGE.into(),
            Language::Python => tree_sitter_python::LANGUAGE.into(),
            Language::Rust => tree_sitter_rust::LANGUAGE.into(),
        }
    }

    fn query_source(self) -> &'static str {
        match self {
            Language::TypeScript | Language::Tsx | Language::JavaScript => JS_QUERY,
            Language::Python => PY_QUERY,
            Language::Rust => RUST_QUERY,
        }
    }
}

/// The ES forms share node names across the JS, TS and TSX grammars. `require` is matched by
/// name, so a local function called `require` is followed too (harmless: it rarely takes a
/// string naming a project file).
const JS_QUERY: &str = r#"
(import_statement source: (string) @spec)
(export_statement source: (string) @spec)
((call_expression
   function: (identifier) @fn
   arguments: (arguments . (string) @spec))
 (#eq? @fn "require"))
(call_expression function: (import) arguments: (arguments . (string) @spec))
"#;

/// Python statements are captured whole: a `from` import pairs its module with several names,
/// which is simpler to read from the node's fields than from one match per name.
const PY_QUERY: &str = r#"
(import_statement) @import
(import_from_statement) @from
"#;

/// `mod foo;` has no body; `mod foo { ... }` is inline and names no file.
const RUST_QUERY: &str = r#"
(mod_item name: (identifier) @mod !body)
(use_declaration argument: (_) @use)
"#;

/// Compiled queries, shared by all threads (a `Query` is immutable once built). Each is compiled
/// when its language is first met: compiling all five took about 60 ms of a run's start, and a
/// project usually has one or two of them.
fn query(language: Language) -> Option<&'static Query> {
    static QUERIES: [OnceLock<Option<Query>>; 5] = [const { OnceLock::new() }; 5];
    QUERIES
        .get(language.index())?
        .get_or_init(|| Query::new(&language.grammar(), language.query_source()).ok())
        .as_ref()
}

thread_local! {
    // One parser per language per thread, reused across files: creating a parser and setting
    // its language costs more than parsing a small file.
    static PARSERS: RefCell<[Option<Parser>; 5]> = const { RefCell::new([None, None, None, None, None]) };
}

/// Parses `source`, reusing this thread's parser for the language. `None` when the grammar
/// cannot be loaded (a tree-sitter ABI mismatch) or parsing was cancelled.
fn parse(language: Language, source: &str) -> Option<Tree> {
    PARSERS.with(|cell| {
        let mut parsers = cell.borrow_mut();
        let slot = parsers.get_mut(language.index())?;
        if slot.is_none() {
            let mut parser = Parser::new();
            parser.set_language(&language.grammar()).ok()?;
            *slot = Some(parser);
        }
        slot.as_mut()?.parse(source, None)
    })
}

/// The import specifiers of one file, in source order without duplicates. A file that fails to
/// parse still yields what tree-sitter recovered: its error recovery keeps the other statements.
pub fn extract_imports(language: Language, source: &str) -> Vec<String> {
    let source = &source[..import_prefix_len(language, source)];
    if source.is_empty() {
        return Vec::new();
    }
    let Some(tree) = parse(language, source) else {
        return Vec::new();
    };
    let Some(query) = query(language) else {
        return Vec::new();
    };
    let bytes = source.as_bytes();
    let mut out: Vec<String> = Vec::new();
    let mut cursor = QueryCursor::new();
    let mut matches = cursor.matches(query, tree.root_node(), bytes);
    while let Some(m) = matches.next() {
        for capture in m.captures {
            let name = query.capture_names()[capture.index as usize];
            let node = capture.node;
            match name {
                "spec" => {
                    if let Some(s) = string_literal(node, bytes) {
                        out.push(s);
                    }
                }
                "import" => python_import(node, bytes, &mut out),
                "from" => python_from(node, bytes, &mut out),
                "mod" => {
                    if let Ok(name) = node.utf8_text(bytes) {
                        out.push(format!("mod:{name}"));
                    }
                }
                "use" => expand_use(node, bytes, "", &mut out),
                _ => {}
            }
        }
    }
    let mut seen = std::collections::HashSet::new();
    out.retain(|s| seen.insert(s.clone()));
    out
}

/// Every import form contains one of these words, whole.
fn keywords(language: Language) -> &'static [&'static str] {
    match language {
        // A re-export always has `from`; `export` alone would mark every exported declaration.
        Language::TypeScript | Language::Tsx | Language::JavaScript => {
            &["import", "require", "from"]
        }
        Language::Python => &["import"],
        Language::Rust => &["use", "mod"],
    }
}

/// How much of `source` must be parsed to see all its imports: up to the end of the statement
/// holding the last import keyword (brackets balanced, then the end of that line), or nothing
/// when no keyword occurs. Imports sit at the top of most files, so this parses a few lines
/// instead of the whole file; tree-sitter parses at a few MB/s, and a full parse of every file
/// would dominate the cold build. A keyword in a comment or string only makes the prefix longer.
fn import_prefix_len(language: Language, source: &str) -> usize {
    let bytes = source.as_bytes();
    let is_ident = |b: u8| b.is_ascii_alphanumeric() || b == b'_' || b == b'$' || b >= 0x80;
    let last = keywords(language)
        .iter()
        .filter_map(|keyword| {
            source
                .match_indices(keyword)
                .filter(|(at, _)| {
                    let before = at.checked_sub(1).and_then(|i| bytes.get(i));
                    let after = bytes.get(at + keyword.len());
                    !before.is_some_and(|b| is_ident(*b)) && !after.is_some_and(|b| is_ident(*b))
                })
                .map(|(at, _)| at)
                .last()
        })
        .max();
    let Some(start) = last else {
        return 0;
    };
    let mut depth = 0usize;
    for (i, b) in bytes.iter().enumerate().skip(start) {
        match b {
            b'(' | b'[' | b'{' => depth += 1,
            b')' | b']' | b'}' => depth = depth.saturating_sub(1),
            b'\n' if depth == 0 => return i + 1,
            _ => {}
        }
    }
    source.len()
}

/// The contents of a JS string literal, without quotes; a template or escaped string is rare in
/// an import and is taken as written.
fn string_literal(node: Node, bytes: &[u8]) -> Option<String> {
    let text = node.utf8_text(bytes).ok()?;
    let inner = text.strip_prefix(['"', '\''])?.strip_suffix(['"', '\''])?;
    (!inner.is_empty()).then(|| inner.to_string())
}

fn python_import(node: Node, bytes: &[u8], out: &mut Vec<String>) {
    out.extend(python_names(node, bytes).into_iter().map(str::to_string));
}

/// The dotted names a Python `import` or `from` statement binds (`a.b` of `import a.b as ab`).
fn python_names<'a>(node: Node, bytes: &'a [u8]) -> Vec<&'a str> {
    let mut cursor = node.walk();
    node.children_by_field_name("name", &mut cursor)
        .filter_map(|name| {
            let dotted = if name.kind() == "aliased_import" {
                name.child_by_field_name("name")
            } else {
                Some(name)
            };
            dotted.and_then(|n| n.utf8_text(bytes).ok())
        })
        .collect()
}

fn python_from(node: Node, bytes: &[u8], out: &mut Vec<String>) {
    let Some(module) = node
        .child_by_field_name("module_name")
        .and_then(|n| n.utf8_text(bytes).ok())
    else {
        return;
    };
    let module: String = module.chars().filter(|c| !c.is_whitespace()).collect();
    let names = python_names(node, bytes);
    // `from m import *` has no `name` field: the module itself is the import.
    if names.is_empty() {
        out.push(module);
    } else {
        out.extend(names.into_iter().map(|name| format!("{module}:{name}")));
    }
}

/// Expands a `use` tree into flat paths: `crate::{a, b::{c, d as e}}` gives `crate::a`,
/// `crate::b::c`, `crate::b::d`.
fn expand_use(node: Node, bytes: &[u8], prefix: &str, out: &mut Vec<String>) {
    let join = |path: &str| -> String {
        let path: String = path.chars().filter(|c| !c.is_whitespace()).collect();
        let full = if prefix.is_empty() {
            path
        } else {
            format!("{prefix}::{path}")
        };
        // `use a::{self}` names the module `a` itself.
        full.strip_suffix("::self")
            .map(str::to_string)
            .unwrap_or(full)
    };
    match node.kind() {
        "use_as_clause" => {
            if let Some(path) = node.child_by_field_name("path") {
                expand_use(path, bytes, prefix, out);
            }
        }
        "use_wildcard" => {
            if let Some(path) = node.named_child(0) {
                expand_use(path, bytes, prefix, out);
            }
        }
        "scoped_use_list" => {
            let inner = match node
                .child_by_field_name("path")
                .and_then(|p| p.utf8_text(bytes).ok())
            {
                Some(path) => join(path),
                None => prefix.to_string(),
            };
            if let Some(list) = node.child_by_field_name("list") {
                expand_use(list, bytes, &inner, out);
            }
        }
        "use_list" => {
            let mut cursor = node.walk();
            for child in node.named_children(&mut cursor) {
                expand_use(child, bytes, prefix, out);
            }
        }
        "scoped_identifier" | "identifier" | "crate" | "self" | "super" => {
            if let Ok(text) = node.utf8_text(bytes) {
                out.push(join(text));
            }
        }
        _ => {}
    }
}

/// The top-level exported declarations of a file, one line each and without bodies, to list a
/// file that did not fit in a prompt: exported JS/TS declarations, public Python functions,
/// classes and UPPER_CASE constants, `pub` Rust items. `path` matters for `.d.ts` files, whose
/// `declare` statements are exported without the keyword.
pub fn exported_signatures(path: &Path, source: &str, language: Language) -> Vec<String> {
    let declaration_file = path.to_string_lossy().ends_with(".d.ts");
    let Some(tree) = parse(language, source) else {
        return Vec::new();
    };
    let bytes = source.as_bytes();
    let root = tree.root_node();
    let mut out = Vec::new();
    let mut cursor = root.walk();
    for item in root.named_children(&mut cursor) {
        let signature = match language {
            Language::TypeScript | Language::Tsx | Language::JavaScript => {
                if declaration_file && item.kind() == "ambient_declaration" {
                    head(item, None, bytes)
                } else {
                    js_export(item, bytes)
                }
            }
            Language::Python => python_public(item, bytes),
            Language::Rust => rust_public(item, bytes),
        };
        out.extend(signature);
    }
    out
}

/// The text of `node` up to its body (if any), on one line with whitespace collapsed, so a
/// signature spread over several lines reads as one.
fn head(node: Node, body: Option<Node>, bytes: &[u8]) -> Option<String> {
    let end = body.map_or(node.end_byte(), |b| b.start_byte());
    let text = std::str::from_utf8(bytes.get(node.start_byte()..end)?).ok()?;
    // Without a body (a `const`, a `type`), the first line is enough: the rest is the value.
    let text = if body.is_none() {
        text.lines().next().unwrap_or_default()
    } else {
        text
    };
    let one_line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let trimmed = one_line.trim_end_matches(['{', '=', ' ']).to_string();
    (!trimmed.is_empty()).then_some(trimmed)
}

fn js_export(item: Node, bytes: &[u8]) -> Option<String> {
    if item.kind() != "export_statement" {
        return None;
    }
    // Re-exports (`export * from`) list no declaration of their own.
    if item.child_by_field_name("source").is_some() {
        return None;
    }
    let body = item
        .child_by_field_name("declaration")
        .and_then(|d| d.child_by_field_name("body"));
    head(item, body, bytes)
}

fn python_public(item: Node, bytes: &[u8]) -> Option<String> {
    let def = if item.kind() == "decorated_definition" {
        item.child_by_field_name("definition")?
    } else {
        item
    };
    match def.kind() {
        "function_definition" | "class_definition" => {
            let name = def.child_by_field_name("name")?.utf8_text(bytes).ok()?;
            if name.starts_with('_') {
                return None;
            }
            head(def, def.child_by_field_name("body"), bytes)
        }
        "expression_statement" => {
            let assign = def.named_child(0).filter(|n| n.kind() == "assignment")?;
            let name = assign.child_by_field_name("left")?.utf8_text(bytes).ok()?;
            let constant = name.chars().next().is_some_and(|c| c.is_ascii_uppercase())
                && name
                    .chars()
                    .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_');
            constant.then(|| head(def, None, bytes)).flatten()
        }
        _ => None,
    }
}

fn rust_public(item: Node, bytes: &[u8]) -> Option<String> {
    const ITEMS: &[&str] = &[
        "function_item",
        "struct_item",
        "enum_item",
        "trait_item",
        "type_item",
        "const_item",
        "static_item",
        "union_item",
        "mod_item",
    ];
    if !ITEMS.contains(&item.kind()) {
        return None;
    }
    let mut cursor = item.walk();
    let public = item
        .named_children(&mut cursor)
        .any(|c| c.kind() == "visibility_modifier");
    if !public {
        return None;
    }
    let body = match item.kind() {
        "const_item" | "static_item" | "type_item" => None,
        _ => item.child_by_field_name("body"),
    };
    head(item, body, bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_query_compiles() {
        for l in [
            Language::TypeScript,
            Language::Tsx,
            Language::JavaScript,
            Language::Python,
            Language::Rust,
        ] {
            assert!(query(l).is_some(), "query for {l:?} does not compile");
        }
    }

    #[test]
    fn js_forms() {
        let src = r#"
import React from 'react';
import './side-effect';
import { a, b } from "./ab";
import type { T } from './types';
export { x } from './x';
export * from './star';
const fs = require('fs');
const lazy = () => import('./lazy');
const notAnImport = foo('./nope');
"#;
        assert_eq!(
            extract_imports(Language::TypeScript, src).join(" "),
            "react ./side-effect ./ab ./types ./x ./star fs ./lazy"
        );
        let tsx = "import { C } from './c';\nexport const App = () => <C />;\n";
        assert_eq!(extract_imports(Language::Tsx, tsx), ["./c"]);
        let jsx = "const m = require('./m');\nexport default () => <div>{import('./d')}</div>;\n";
        assert_eq!(extract_imports(Language::JavaScript, jsx), ["./m", "./d"]);
    }

    #[test]
    fn python_forms() {
        let src = "import os, a.b as ab\nfrom . import sib\nfrom ..pkg.mod import y, z as zz\nfrom pkg import mod\nfrom star import *\n";
        assert_eq!(
            extract_imports(Language::Python, src).join(" "),
            "os a.b .:sib ..pkg.mod:y ..pkg.mod:z pkg:mod star"
        );
    }

    #[test]
    fn rust_forms() {
        let src = "mod foo;\nmod inline { }\nuse crate::{a, b::c as d, e::{self, f::*}};\nuse super::x;\nuse self::y::Z;\nuse std::io;\n";
        assert_eq!(
            extract_imports(Language::Rust, src).join(" "),
            "mod:foo crate::a crate::b::c crate::e crate::e::f super::x self::y::Z std::io"
        );
    }

    #[test]
    fn only_the_prefix_holding_imports_is_parsed() {
        let body = "export function f(x: number) { return x; }\n".repeat(100);
        let ts = format!("import {{ a }} from './a';\nimport {{\n  b,\n}} from './b';\n{body}");
        assert_eq!(
            import_prefix_len(Language::TypeScript, &ts),
            ts.find("export").unwrap_or(0)
        );
        // Words that merely contain a keyword do not extend the prefix.
        assert_eq!(
            import_prefix_len(Language::Rust, "fn user() { modify(); }\n"),
            0
        );
        // A bracketed statement is taken whole.
        let py = "from m import (\n    a,\n    b,\n)\nx = 1\n";
        assert_eq!(
            import_prefix_len(Language::Python, py),
            py.find("x = 1").unwrap_or(0)
        );
        assert_eq!(extract_imports(Language::Python, py), ["m:a", "m:b"]);
        // An import late in a file still counts.
        let late = format!("{body}const lazy = () => import(\n  './late'\n);\n");
        assert_eq!(extract_imports(Language::TypeScript, &late), ["./late"]);
    }

    #[test]
    fn signatures_per_language() {
        let ts = "export function add(a: number,\n  b: number): number { return a + b; }\nexport const N = 3;\nexport interface P { x: number }\nfunction hidden() {}\nexport * from './x';\n";
        assert_eq!(
            exported_signatures(Path::new("a.ts"), ts, Language::TypeScript),
            [
                "export function add(a: number, b: number): number",
                "export const N = 3;",
                "export interface P"
            ]
        );
        let py = "import os\nMAX = 3\nlower = 1\ndef f(a, b):\n    return a\n@dec\nclass C(Base):\n    pass\ndef _private():\n    pass\n";
        assert_eq!(
            exported_signatures(Path::new("a.py"), py, Language::Python),
            ["MAX = 3", "def f(a, b):", "class C(Base):"]
        );
        let rs = "pub fn f(x: u8) -> u8 { x }\nfn g() {}\npub struct S { a: u8 }\npub(crate) const C: u8 = 1;\nimpl S {}\n";
        assert_eq!(
            exported_signatures(Path::new("a.rs"), rs, Language::Rust),
            [
                "pub fn f(x: u8) -> u8",
                "pub struct S",
                "pub(crate) const C: u8 = 1;"
            ]
        );
    }
}
