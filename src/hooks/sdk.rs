//! The plugin SDK under `sdk/`, compiled in: each run with hooks writes it to the hooks'
//! temporary folder and puts it on `PYTHONPATH` and `NODE_PATH`, so `import ralph_plugin` and
//! `require("ralph-plugin")` work in any plugin without an install, and always speak the
//! protocol of the ralph-loop that runs them.

use std::path::{Path, PathBuf};

const PYTHON: &str = include_str!("../../sdk/python/ralph_plugin.py");
const NODE_INDEX: &str = include_str!("../../sdk/typescript/index.js");
const NODE_TYPES: &str = include_str!("../../sdk/typescript/index.d.ts");
const NODE_PACKAGE: &str = include_str!("../../sdk/typescript/package.json");

/// The SDK as written under a folder: what to add to a hook's environment.
#[derive(Debug, Clone)]
pub struct Installed {
    root: PathBuf,
}

/// Writes the SDK under `dir` (`dir/sdk`).
pub fn install(dir: &Path) -> std::io::Result<Installed> {
    let root = dir.join("sdk");
    let python = root.join("python");
    let node = root.join("node_modules").join("ralph-plugin");
    std::fs::create_dir_all(&python)?;
    std::fs::create_dir_all(&node)?;
    std::fs::write(python.join("ralph_plugin.py"), PYTHON)?;
    std::fs::write(node.join("index.js"), NODE_INDEX)?;
    std::fs::write(node.join("index.d.ts"), NODE_TYPES)?;
    std::fs::write(node.join("package.json"), NODE_PACKAGE)?;
    Ok(Installed { root })
}

impl Installed {
    /// `RALPH_SDK`, and `PYTHONPATH` and `NODE_PATH` with the SDK first (then what they held).
    pub fn vars(&self) -> Vec<(String, String)> {
        let first = |var: &str, dir: PathBuf| {
            let mut paths = vec![dir];
            paths.extend(std::env::var_os(var).iter().flat_map(std::env::split_paths));
            let joined = std::env::join_paths(paths).unwrap_or_default();
            (var.to_string(), joined.to_string_lossy().into_owned())
        };
        vec![
            ("RALPH_SDK".to_string(), self.root.display().to_string()),
            first("PYTHONPATH", self.root.join("python")),
            first("NODE_PATH", self.root.join("node_modules")),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hooks::protocol;

    const SCHEMA_FILE: &str = "sdk/schema/plugin-protocol.v1.json";

    fn manifest(path: &str) -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join(path)
    }

    /// The schema in `sdk/` is the one the types generate; `RALPH_UPDATE_SDK=1` rewrites it.
    #[test]
    fn the_schema_file_is_the_one_the_types_generate() {
        let generated = serde_json::to_string_pretty(&protocol::schema()).unwrap() + "\n";
        let file = manifest(SCHEMA_FILE);
        if std::env::var_os("RALPH_UPDATE_SDK").is_some() {
            std::fs::write(&file, &generated).unwrap();
        }
        let kept = std::fs::read_to_string(&file).unwrap_or_default();
        assert!(
            kept == generated,
            "{SCHEMA_FILE} is out of date: run `RALPH_UPDATE_SDK=1 cargo test --lib sdk` and review the change"
        );
    }

    /// Every field and stage of the schema is in the TypeScript types and the Python module.
    #[test]
    fn the_helpers_name_every_field_and_stage_of_the_schema() {
        let schema = protocol::schema();
        let mut names = std::collections::BTreeSet::new();
        collect(&schema, &mut names);
        assert!(names.contains("max_cost_usd") && names.contains("on_success"));
        for name in &names {
            assert!(
                NODE_TYPES.contains(&format!("{name}:"))
                    || NODE_TYPES.contains(&format!("{name}?:"))
                    || NODE_TYPES.contains(&format!("\"{name}\"")),
                "index.d.ts lacks `{name}`"
            );
            assert!(
                PYTHON.contains(&format!("{name}:")) || PYTHON.contains(&format!("\"{name}\"")),
                "ralph_plugin.py lacks `{name}`"
            );
        }
    }

    /// The property names and enum values of a schema.
    fn collect(value: &serde_json::Value, names: &mut std::collections::BTreeSet<String>) {
        match value {
            serde_json::Value::Object(map) => {
                if let Some(props) = map.get("properties").and_then(|p| p.as_object()) {
                    names.extend(props.keys().cloned());
                }
                for (key, v) in map {
                    match (key.as_str(), v) {
                        ("enum", serde_json::Value::Array(values)) => {
                            names.extend(values.iter().filter_map(|s| s.as_str().map(String::from)))
                        }
                        ("const", serde_json::Value::String(value)) => {
                            names.insert(value.clone());
                        }
                        _ => {}
                    }
                    collect(v, names);
                }
            }
            serde_json::Value::Array(items) => items.iter().for_each(|v| collect(v, names)),
            _ => {}
        }
    }

    #[test]
    fn the_installed_sdk_leads_the_search_paths() {
        let dir = tempfile::tempdir().unwrap();
        let sdk = install(dir.path()).unwrap();
        let vars: std::collections::BTreeMap<_, _> = sdk.vars().into_iter().collect();
        assert!(
            vars["PYTHONPATH"].starts_with(&dir.path().join("sdk/python").display().to_string())
        );
        assert!(dir
            .path()
            .join("sdk/node_modules/ralph-plugin/index.js")
            .is_file());
        assert!(dir.path().join("sdk/python/ralph_plugin.py").is_file());
    }
}
