//! Ranking and packing: which of the target's neighbours in the import graph go into the
//! Artisan's prompt, within a token budget, and why.
//!
//! The rules (also in `docs/context.md`, "Ranking and packing"):
//! - The target and its test file have their own places in a prompt; they are counted against
//!   the budget but not repeated among the related files.
//! - Every file at distance 1 (the target's imports and the files importing it) is included,
//!   even past the budget: without them the Artisan cannot see the names the target uses.
//! - The rest follow by distance; within a distance the target's imports come before its
//!   importers and files related both ways, then smaller files, then by path. The first file
//!   that does not fit ends the inclusion, so a farther file is never shown while a nearer one
//!   is left out.
//! - Files left out are listed, nearest first, with their exported signatures while those fit a
//!   tenth of the budget, then by name while names fit; the rest are only counted.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use ralph_actors::prompt::bundle::language_of;
use ralph_actors::schema::context::{
    ContextChoice, ContextPack, ContextRelation, ExcludedFile, RelatedFile,
};

use super::{exported_signatures, Distance, ImportGraph, Relation};

/// The listing of files left out may take this share of the budget on top of it.
pub const EXCLUDED_ALLOWANCE: f64 = 0.10;

/// A related file exactly as `prompts/artisan.md` shows it, so that what is counted is what is
/// sent.
pub fn block(path: &str, reason: &str, language: &str, content: &str) -> String {
    format!("## `{path}` ({reason})\n```{language}\n{content}\n```\n")
}

/// A file left out, as the prompts list it.
fn listing(path: &str, signatures: &[String]) -> String {
    if signatures.is_empty() {
        format!("- `{path}`\n")
    } else {
        format!("- `{path}`: {}\n", signatures.join("; "))
    }
}

/// What to pack around: the target and its test file (absolute, or relative to the graph's
/// root), and the budget in tokens for the project's files, the target's included.
#[derive(Debug, Clone, Copy)]
pub struct PackRequest<'a> {
    pub target: &'a Path,
    pub test_file: Option<&'a Path>,
    pub budget: u32,
}

/// A candidate once ranked: its graph distance and its size, read only when needed.
struct Candidate {
    path: PathBuf,
    distance: u32,
    relation: Relation,
    bytes: u64,
}

/// Ranks the target's neighbours and packs them within `request.budget` tokens as `count`
/// counts a text. Unreadable files (removed since the graph was built, not UTF-8) are skipped:
/// the graph is a guide, and one stale entry must not cost the iteration its context.
pub fn pack(
    graph: &ImportGraph,
    request: &PackRequest,
    count: &dyn Fn(&str) -> u64,
) -> ContextPack {
    let root = graph.root();
    let target = relative(root, request.target);
    let test_file = request.test_file.map(|t| relative(root, t));
    let tokens_of = |text: &str| u32::try_from(count(text)).unwrap_or(u32::MAX);
    let read = |path: &Path| std::fs::read_to_string(root.join(path)).ok();

    let distances = graph.distances(&target);
    let by_path: HashMap<&Path, &Distance> =
        distances.iter().map(|d| (d.path.as_path(), d)).collect();

    let mut used: u32 = 0;
    let mut placed = Vec::new();
    let target_name = shown(&target);
    if let Some(content) = read(&target) {
        used = used.saturating_add(tokens_of(&block(
            &target_name,
            "target",
            language_of(&target_name),
            &content,
        )));
    }
    placed.push(ContextChoice {
        path: target_name,
        distance: 0,
        relation: ContextRelation::Target,
        reason: "target".into(),
    });
    if let Some(test) = &test_file {
        let name = shown(test);
        let reason = "test file".to_string();
        if let Some(content) = read(test) {
            used = used.saturating_add(tokens_of(&block(
                &name,
                &reason,
                language_of(&name),
                &content,
            )));
        }
        // A test file that does not import the target directly (it goes through a package
        // `__init__`, say) is still one step from it for the reader.
        let (distance, relation) = by_path
            .get(test.as_path())
            .map_or((1, ContextRelation::Importer), |d| {
                (d.distance, relation_of(d.relation))
            });
        placed.push(ContextChoice {
            path: name,
            distance,
            relation,
            reason,
        });
    }

    let others = distances
        .iter()
        .filter(|d| d.path != target && Some(&d.path) != test_file.as_ref());
    let candidates = ranked(root, others);

    let mut related = Vec::new();
    let mut left_out: Vec<(Candidate, Option<String>)> = Vec::new();
    let mut cut = false;
    for candidate in candidates {
        if cut {
            left_out.push((candidate, None));
            continue;
        }
        let Some(content) = read(&candidate.path) else {
            continue;
        };
        let name = shown(&candidate.path);
        let reason = reason(graph, &by_path, &candidate, &target);
        let language = language_of(&name);
        let tokens = tokens_of(&block(&name, &reason, language, &content));
        if candidate.distance > 1 && used.saturating_add(tokens) > request.budget {
            cut = true;
            left_out.push((candidate, Some(content)));
            continue;
        }
        used = used.saturating_add(tokens);
        related.push(RelatedFile {
            choice: ContextChoice {
                path: name.clone(),
                distance: candidate.distance,
                relation: relation_of(candidate.relation),
                reason,
            },
            content,
            language: language.to_string(),
            tokens,
        });
    }

    let excluded_count = u32::try_from(left_out.len()).unwrap_or(u32::MAX);
    let allowance = (f64::from(request.budget) * EXCLUDED_ALLOWANCE).floor() as u32;
    let excluded = listed(graph, left_out, allowance, &read, &tokens_of);

    ContextPack {
        placed,
        related,
        excluded,
        excluded_count,
        tokens: used,
        budget: request.budget,
        warnings: graph.warnings().to_vec(),
    }
}

/// The files left out, nearest first, each with its exported signatures while they fit in
/// `allowance` tokens, then by name alone, until not even a name fits.
fn listed(
    graph: &ImportGraph,
    left_out: Vec<(Candidate, Option<String>)>,
    mut allowance: u32,
    read: &dyn Fn(&Path) -> Option<String>,
    tokens_of: &dyn Fn(&str) -> u32,
) -> Vec<ExcludedFile> {
    let mut excluded = Vec::new();
    for (candidate, content) in left_out {
        let name = shown(&candidate.path);
        let signatures = match (
            content.or_else(|| read(&candidate.path)),
            graph.language(&candidate.path),
        ) {
            (Some(source), Some(language)) => {
                exported_signatures(&candidate.path, &source, language)
            }
            _ => Vec::new(),
        };
        let full = tokens_of(&listing(&name, &signatures));
        let entry = if full <= allowance {
            allowance -= full;
            signatures
        } else {
            let bare = tokens_of(&listing(&name, &[]));
            if bare > allowance {
                // Names are listed nearest first: once one does not fit, the rest are farther
                // and only counted.
                break;
            }
            allowance -= bare;
            Vec::new()
        };
        excluded.push(ExcludedFile {
            path: name,
            distance: candidate.distance,
            signatures: entry,
        });
    }
    excluded
}

/// The target's neighbours ranked: nearest first; at one distance what the target imports,
/// then what imports it, then the rest; then the smaller file, then by path.
fn ranked<'a>(root: &Path, others: impl Iterator<Item = &'a Distance>) -> Vec<Candidate> {
    let mut candidates: Vec<Candidate> = others
        .map(|d| Candidate {
            path: d.path.clone(),
            distance: d.distance,
            relation: d.relation,
            bytes: std::fs::metadata(root.join(&d.path)).map_or(u64::MAX, |m| m.len()),
        })
        .collect();
    candidates.sort_by(|a, b| {
        (a.distance, a.relation, a.bytes, &a.path).cmp(&(b.distance, b.relation, b.bytes, &b.path))
    });
    candidates
}

/// A path as the prompt names it, with forward slashes.
fn shown(p: &Path) -> String {
    p.to_string_lossy().replace('\\', "/")
}

/// [`pack`] with two counters: `bound`, cheap and never below the true count (bytes: every
/// token covers at least one byte), and `exact`, the model's tokenizer. When everything fits
/// the budget by the bound, the bound's pack is the exact one's too (same files, same order)
/// and the tokenizer is never asked (an exact count costs about 5 ms per 20 KB, and
/// `cl100k_base`'s table 0.3 s and 48 MiB to build). Otherwise the budget decides what goes in, and
/// the pack is made again with exact counts. The pack's `tokens` are then an upper bound in the
/// first case and exact in the second.
pub fn pack_counted(
    graph: &ImportGraph,
    request: &PackRequest,
    bound: &dyn Fn(&str) -> u64,
    exact: &dyn Fn(&str) -> u64,
) -> ContextPack {
    let by_bound = pack(graph, request, bound);
    if by_bound.excluded_count == 0 && by_bound.tokens <= request.budget {
        return by_bound;
    }
    pack(graph, request, exact)
}

/// `path` relative to the graph's root when it is under it (the graph's paths are), else as
/// given.
fn relative(root: &Path, path: &Path) -> PathBuf {
    if path.is_relative() {
        return path.to_path_buf();
    }
    // The root is canonical; the path may reach it through a symlink (`/tmp` on macOS).
    let canonical = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    canonical
        .strip_prefix(root)
        .or_else(|_| path.strip_prefix(root))
        .map_or_else(|_| path.to_path_buf(), Path::to_path_buf)
}

fn relation_of(relation: Relation) -> ContextRelation {
    match relation {
        Relation::Imports => ContextRelation::Imported,
        Relation::ImportedBy => ContextRelation::Importer,
        Relation::Related => ContextRelation::Neighbour,
    }
}

/// Why a file is in the prompt: its link to the target, or for farther files the neighbour one
/// step nearer the target that it was reached through.
fn reason(
    graph: &ImportGraph,
    by_path: &HashMap<&Path, &Distance>,
    candidate: &Candidate,
    target: &Path,
) -> String {
    if candidate.distance <= 1 {
        return match candidate.relation {
            Relation::Imports => "imported by target".into(),
            Relation::ImportedBy | Relation::Related => "imports target (distance 1)".into(),
        };
    }
    let nearer = candidate.distance - 1;
    // Neighbours both ways, since the distance is over both directions; ranked like the
    // candidates so the same file names the same route every iteration.
    let via = graph
        .imports_of(&candidate.path)
        .into_iter()
        .chain(graph.importers_of(&candidate.path))
        .filter(|p| p != target)
        .filter_map(|p| by_path.get(p.as_path()).copied())
        .filter(|d| d.distance == nearer)
        .min_by(|a, b| (a.relation, &a.path).cmp(&(b.relation, &b.path)));
    match via {
        Some(d) => format!(
            "distance {} via {}",
            candidate.distance,
            d.path.to_string_lossy().replace('\\', "/")
        ),
        None => format!("distance {}", candidate.distance),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;
    use crate::context::BuildOptions;

    /// A TypeScript project with a known graph:
    /// target → a → c ← e, target → b → d, user → target, target.test → target; lonely alone.
    /// `a` is smaller than `b`, `d` smaller than `c`, so size breaks the ties both ways.
    const FILES: &[(&str, &str)] = &[
        (
            "src/target.ts",
            "import { a } from \"./a\";\nimport { b } from \"./b\";\nexport function target(x: number): number {\n  return a(x) + b(x);\n}\n",
        ),
        (
            "src/a.ts",
            "import { c } from \"./c\";\nexport function a(x: number): number {\n  return c(x);\n}\n",
        ),
        (
            "src/b.ts",
            "import { d } from \"./d\";\nexport function b(x: number): number {\n  // the longer helper of the two, so it ranks after a\n  return d(x) * 2;\n}\n",
        ),
        (
            "src/c.ts",
            "// c pads itself out so that d, the smaller file, ranks before it at distance 2,\n// and so that e, one step farther, is smaller than c: the cut must still stop at c\nexport function c(x: number): number {\n  return x + 1;\n}\n",
        ),
        ("src/d.ts", "export const d = (x: number): number => x;\n"),
        (
            "src/e.ts",
            "import { c } from \"./c\";\nexport function eOne(): number { return c(1); }\nexport function eTwo(): number { return c(2); }\nexport function eThree(): number { return c(3); }\n",
        ),
        (
            "src/user.ts",
            "import { target } from \"./target\";\nexport const used = target(1);\n",
        ),
        (
            "src/target.test.ts",
            "import { target } from \"./target\";\nconsole.log(target(2));\n",
        ),
        ("src/lonely.ts", "export const lonely = 1;\n"),
    ];

    fn project() -> (tempfile::TempDir, ImportGraph) {
        let dir = tempfile::tempdir().unwrap();
        for (path, content) in FILES {
            let full = dir.path().join(path);
            std::fs::create_dir_all(full.parent().unwrap()).unwrap();
            std::fs::write(full, content).unwrap();
        }
        let graph =
            ImportGraph::build_with(dir.path(), &BuildOptions { use_cache: false }).expect("graph");
        (dir, graph)
    }

    /// One token per byte: easy to reason about, and what matters here is the ranking.
    fn bytes(text: &str) -> u64 {
        text.len() as u64
    }

    fn content(path: &str) -> &'static str {
        FILES.iter().find(|(p, _)| *p == path).unwrap().1
    }

    fn run(graph: &ImportGraph, budget: u32) -> ContextPack {
        let request = PackRequest {
            target: Path::new("src/target.ts"),
            test_file: Some(Path::new("src/target.test.ts")),
            budget,
        };
        pack(graph, &request, &bytes)
    }

    fn related_paths(pack: &ContextPack) -> Vec<&str> {
        pack.related
            .iter()
            .map(|f| f.choice.path.as_str())
            .collect()
    }

    /// Tokens of the target and test blocks, which every pack spends first.
    fn placed_tokens() -> u32 {
        let t = block(
            "src/target.ts",
            "target",
            "typescript",
            content("src/target.ts"),
        );
        let s = block(
            "src/target.test.ts",
            "test file",
            "typescript",
            content("src/target.test.ts"),
        );
        (t.len() + s.len()) as u32
    }

    #[test]
    fn the_exact_counter_is_asked_only_when_the_budget_decides() {
        let (_dir, graph) = project();
        let asked = std::cell::Cell::new(0_u32);
        // A tokenizer that finds a quarter as many tokens as bytes.
        let exact = |t: &str| {
            asked.set(asked.get() + 1);
            t.len() as u64 / 4
        };
        let request = |budget| PackRequest {
            target: Path::new("src/target.ts"),
            test_file: Some(Path::new("src/target.test.ts")),
            budget,
        };
        let all = pack(&graph, &request(u32::MAX), &bytes);
        let fits = pack_counted(&graph, &request(all.tokens), &bytes, &exact);
        assert_eq!(asked.get(), 0);
        assert_eq!(
            fits,
            ContextPack {
                budget: all.tokens,
                ..all.clone()
            }
        );

        // One byte short by the bound: the exact count decides, and everything still fits.
        let tight = pack_counted(&graph, &request(all.tokens - 1), &bytes, &exact);
        assert!(asked.get() > 0);
        assert_eq!(tight.excluded_count, 0);
        assert_eq!(related_paths(&tight), related_paths(&all));
        assert!(
            tight.tokens <= all.tokens / 4 + 10,
            "{} tokens",
            tight.tokens
        );
    }

    #[test]
    fn everything_fits_nearest_first_with_reasons() {
        let (_dir, graph) = project();
        let pack = run(&graph, 100_000);
        assert_eq!(
            related_paths(&pack),
            [
                "src/a.ts",
                "src/b.ts",
                "src/user.ts",
                "src/d.ts",
                "src/c.ts",
                "src/e.ts"
            ],
            "imports before importers, smaller first, then farther; lonely is unrelated"
        );
        let reasons: Vec<(&str, u32, ContextRelation)> = pack
            .related
            .iter()
            .map(|f| {
                (
                    f.choice.reason.as_str(),
                    f.choice.distance,
                    f.choice.relation,
                )
            })
            .collect();
        assert_eq!(
            reasons,
            [
                ("imported by target", 1, ContextRelation::Imported),
                ("imported by target", 1, ContextRelation::Imported),
                ("imports target (distance 1)", 1, ContextRelation::Importer),
                ("distance 2 via src/b.ts", 2, ContextRelation::Imported),
                ("distance 2 via src/a.ts", 2, ContextRelation::Imported),
                ("distance 3 via src/c.ts", 3, ContextRelation::Neighbour),
            ]
        );
        // The target and the test have their own places: listed as placed, never repeated.
        let placed: Vec<(&str, &str)> = pack
            .placed
            .iter()
            .map(|c| (c.path.as_str(), c.reason.as_str()))
            .collect();
        assert_eq!(
            placed,
            [
                ("src/target.ts", "target"),
                ("src/target.test.ts", "test file")
            ]
        );
        assert_eq!(pack.placed[1].distance, 1);
        assert!(pack.excluded.is_empty());
        assert_eq!(pack.excluded_count, 0);

        let d = &pack.related[3];
        assert_eq!(d.content, content("src/d.ts"));
        assert_eq!(d.language, "typescript");
        let expected: u32 = placed_tokens() + pack.related.iter().map(|f| f.tokens).sum::<u32>();
        assert_eq!(pack.tokens, expected);
        assert_eq!(
            d.tokens as usize,
            block(
                "src/d.ts",
                "distance 2 via src/b.ts",
                "typescript",
                d.content.as_str()
            )
            .len()
        );
        assert_eq!(pack.summary().included.len(), 8);
    }

    #[test]
    fn distance_one_is_always_included_even_past_the_budget() {
        let (_dir, graph) = project();
        let pack = run(&graph, 10);
        assert_eq!(
            related_paths(&pack),
            ["src/a.ts", "src/b.ts", "src/user.ts"]
        );
        assert!(pack.tokens > pack.budget, "{} tokens", pack.tokens);
        assert_eq!(pack.budget, 10);
        assert_eq!(pack.excluded_count, 3, "d, c and e left out");
        assert!(
            pack.excluded.is_empty(),
            "a 1-token allowance lists nothing: {:?}",
            pack.excluded
        );
    }

    #[test]
    fn a_middle_budget_cuts_at_the_first_file_that_does_not_fit() {
        let (_dir, graph) = project();
        let all = run(&graph, 100_000);
        let upto_d = placed_tokens() + all.related[..4].iter().map(|f| f.tokens).sum::<u32>();
        let c = all.related[4].tokens;
        let e = all.related[5].tokens;
        // c does not fit by one token; e alone would, but is farther than c and so left out.
        let budget = upto_d + c - 1;
        assert!(e < c, "the fixture needs e smaller than c");
        let pack = run(&graph, budget);
        assert_eq!(
            related_paths(&pack),
            ["src/a.ts", "src/b.ts", "src/user.ts", "src/d.ts"]
        );
        assert_eq!(pack.tokens, upto_d);
        assert!(pack.tokens <= budget);
        assert_eq!(pack.excluded_count, 2);
        assert_eq!(pack.excluded[0].path, "src/c.ts");
        assert_eq!(pack.excluded[0].distance, 2);

        // One token more and c fits.
        let pack = run(&graph, budget + 1);
        assert_eq!(related_paths(&pack).len(), 5);
    }

    #[test]
    fn left_out_files_are_listed_with_signatures_then_by_name() {
        let (_dir, graph) = project();
        let all = run(&graph, 100_000);
        let upto_d = placed_tokens() + all.related[..4].iter().map(|f| f.tokens).sum::<u32>();
        let budget = upto_d + all.related[4].tokens - 1;
        let allowance = (f64::from(budget) * EXCLUDED_ALLOWANCE).floor() as usize;
        let c_signatures = vec!["export function c(x: number): number".to_string()];
        let c_line = listing("src/c.ts", &c_signatures).len();
        let e_signatures = vec![
            "export function eOne(): number".to_string(),
            "export function eTwo(): number".to_string(),
            "export function eThree(): number".to_string(),
        ];
        // The fixture's premise: c fits with its signature, e then only by name.
        let rest = allowance - c_line;
        assert!(
            listing("src/e.ts", &[]).len() <= rest,
            "allowance {allowance}"
        );
        assert!(listing("src/e.ts", &e_signatures).len() > rest);

        let pack = run(&graph, budget);
        assert_eq!(
            pack.excluded,
            [
                ExcludedFile {
                    path: "src/c.ts".into(),
                    distance: 2,
                    signatures: c_signatures,
                },
                ExcludedFile {
                    path: "src/e.ts".into(),
                    distance: 3,
                    signatures: Vec::new(),
                },
            ]
        );
    }

    #[test]
    fn absolute_paths_and_a_target_outside_the_graph() {
        let (dir, graph) = project();
        let target = dir.path().join("src/target.ts");
        let request = PackRequest {
            target: &target,
            test_file: None,
            budget: 100_000,
        };
        let pack = pack(&graph, &request, &bytes);
        assert_eq!(
            pack.related.len(),
            7,
            "the test file is related when not placed"
        );
        assert!(pack
            .related
            .iter()
            .any(|f| f.choice.path == "src/target.test.ts"
                && f.choice.reason == "imports target (distance 1)"));

        std::fs::write(dir.path().join("notes.txt"), "not code").unwrap();
        let request = PackRequest {
            target: Path::new("notes.txt"),
            test_file: None,
            budget: 100,
        };
        let pack = super::pack(&graph, &request, &bytes);
        assert!(pack.related.is_empty());
        assert_eq!(pack.placed.len(), 1);
        assert_eq!(
            pack.tokens as usize,
            block("notes.txt", "target", "text", "not code").len()
        );
    }
}
