//! The module under test in each variant, per language.

use super::{Kind, Variant};

/// The module of `variant` in `kind`'s language; `None` for the base project's own.
pub(crate) fn module_source(kind: Kind, variant: Variant) -> Option<String> {
    let source = match (kind, variant) {
        (_, Variant::Passing) => return None,
        (Kind::TypeScript | Kind::JavaScript, _) => {
            let export = |body: &str| match kind {
                Kind::TypeScript => {
                    format!("export function median(values: number[]): number {{\n{body}\n}}\n")
                }
                _ => format!(
                    "function median(values) {{\n{body}\n}}\n\nmodule.exports = {{ median }};\n"
                ),
            };
            let sorted = "  if (values.length === 0) {\n    throw new RangeError('median of an empty list');\n  }\n  const ordered = [...values].sort((a, b) => a - b);\n  const mid = Math.floor(ordered.length / 2);";
            let import = |what: &str, from: &str| match kind {
                Kind::TypeScript => format!("import {what} from '{from}';\n"),
                _ => format!("const {what} = require('{from}');\n"),
            };
            match variant {
                // The even case takes the upper middle value instead of the average.
                Variant::Failing => export(&format!("{sorted}\n  return ordered[mid];")),
                Variant::Syntax => export(&format!("{sorted}\n  return (ordered[mid - 1] + ordered[mid] / 2;")),
                Variant::MissingDependency => format!(
                    "{}{}",
                    import("leftPad", "left-pad-not-installed"),
                    export(&format!("{sorted}\n  leftPad('', 0);\n  return ordered.length % 2 ? ordered[mid] : (ordered[mid - 1] + ordered[mid]) / 2;"))
                ),
                // Wrong for an even list the first time only: a marker file in the project
                // (the tests' working directory) remembers the first call.
                Variant::Flaky => format!(
                    "{}{}",
                    import("fs", "node:fs"),
                    export(&format!("{sorted}\n  if (ordered.length % 2 === 0 && !fs.existsSync('.flaky-marker')) {{\n    fs.writeFileSync('.flaky-marker', 'failed once\\n');\n    return ordered[mid];\n  }}\n  return ordered.length % 2 ? ordered[mid] : (ordered[mid - 1] + ordered[mid]) / 2;"))
                ),
                Variant::Hanging => export("  for (;;) {\n    values = values.slice();\n  }"),
                // Buffers live outside V8's heap, so node's own heap limit does not stop them
                // first; `fill` touches every page.
                Variant::MemoryHungry => export("  const hog = [];\n  for (;;) {\n    hog.push(Buffer.alloc(16 << 20, values.length + 1));\n  }"),
                Variant::Passing => return None,
            }
        }
        (Kind::Python, _) => {
            let sorted = "    if not values:\n        raise ValueError(\"median of an empty list\")\n    ordered = sorted(values)\n    mid = len(ordered) // 2\n";
            let average = "    if len(ordered) % 2:\n        return ordered[mid]\n    return (ordered[mid - 1] + ordered[mid]) / 2\n";
            match variant {
                Variant::Failing => format!("def median(values):\n{sorted}    return ordered[mid]\n"),
                Variant::Syntax => format!("def median(values)\n{sorted}{average}"),
                Variant::MissingDependency => format!("import leftpad_not_installed\n\n\ndef median(values):\n{sorted}{average}"),
                Variant::Flaky => format!("import os\n\n\ndef median(values):\n{sorted}    if len(ordered) % 2 == 0 and not os.path.exists(\".flaky-marker\"):\n        with open(\".flaky-marker\", \"w\") as marker:\n            marker.write(\"failed once\\n\")\n        return ordered[mid]\n{average}"),
                Variant::Hanging => "def median(values):\n    while True:\n        values = list(values)\n".to_string(),
                // `bytes * n` writes every byte, so the memory is really used.
                Variant::MemoryHungry => "def median(values):\n    hog = []\n    while True:\n        hog.append(b\"x\" * (16 << 20))\n".to_string(),
                Variant::Passing => return None,
            }
        }
        (Kind::Rust, _) => {
            let sorted = "    if values.is_empty() {\n        return None;\n    }\n    let mut ordered = values.to_vec();\n    ordered.sort_by(f64::total_cmp);\n    let mid = ordered.len() / 2;\n";
            let average = "    Some(if ordered.len() % 2 == 1 {\n        ordered[mid]\n    } else {\n        (ordered[mid - 1] + ordered[mid]) / 2.0\n    })\n";
            let sig = "pub fn median(values: &[f64]) -> Option<f64> {\n";
            match variant {
                Variant::Failing => format!("{sig}{sorted}    Some(ordered[mid])\n}}\n"),
                Variant::Syntax => format!("pub fn median(values: &[f64] -> Option<f64> {{\n{sorted}{average}}}\n"),
                Variant::MissingDependency => format!("use left_pad_not_in_cargo_toml::pad;\n\n{sig}{sorted}    let _ = pad(\"\", 0);\n{average}}}\n"),
                // `create_new` makes the first call win even with tests on parallel threads.
                Variant::Flaky => format!("{sig}{sorted}    let marker = concat!(env!(\"CARGO_MANIFEST_DIR\"), \"/.flaky-marker\");\n    if ordered.len() % 2 == 0\n        && std::fs::OpenOptions::new().write(true).create_new(true).open(marker).is_ok()\n    {{\n        return Some(ordered[mid]);\n    }}\n{average}}}\n"),
                Variant::Hanging => format!("{sig}    let mut n = values.len();\n    loop {{\n        n = std::hint::black_box(n.wrapping_add(1));\n    }}\n}}\n"),
                Variant::MemoryHungry => format!("{sig}    let mut hog = Vec::new();\n    loop {{\n        hog.push(std::hint::black_box(vec![values.len() as u8 + 1; 16 << 20]));\n    }}\n}}\n"),
                Variant::Passing => return None,
            }
        }
    };
    Some(source)
}
