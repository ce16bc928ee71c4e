//! `~/.micro-agent`: micro-agent's INI file of settings, read under the environment, and the
//! `config set` / `config get` commands that write and read it.

use std::collections::BTreeMap;
use std::path::PathBuf;

use clap::Subcommand;

use crate::error::{Error, Result, UsageError};

/// The keys micro-agent's config file and environment know.
pub const KEYS: &[&str] = &[
    "OPENAI_KEY",
    "ANTHROPIC_KEY",
    "MODEL",
    "ANTHROPIC_MODEL",
    "OPENAI_API_ENDPOINT",
    "LANGUAGE",
    "MOCK_LLM_RECORD_FILE",
    "USE_MOCK_LLM",
];

#[derive(Debug, Subcommand)]
pub(crate) enum ConfigAction {
    /// `micro-agent config set KEY=VALUE ...`
    Set { pairs: Vec<String> },
    /// `micro-agent config get [KEY ...]`
    Get { keys: Vec<String> },
}

pub(crate) fn config_path() -> Result<PathBuf> {
    std::env::var_os("HOME")
        .map(|h| PathBuf::from(h).join(".micro-agent"))
        .ok_or(Error::Usage(UsageError::MicroAgent(
            "HOME is not set, so ~/.micro-agent cannot be found".into(),
        )))
}

/// `~/.micro-agent`, empty when it does not exist.
pub(crate) fn load_ini(path: &std::path::Path) -> Result<ini::Ini> {
    if !path.exists() {
        return Ok(ini::Ini::new());
    }
    ini::Ini::load_from_file(path)
        .map_err(|e| Error::Usage(UsageError::MicroAgent(format!("{}: {e}", path.display()))))
}

/// The values of micro-agent's keys: the INI file, then the environment over it.
pub fn settings(env: impl Fn(&str) -> Option<String>) -> Result<BTreeMap<String, String>> {
    let ini = load_ini(&config_path()?)?;
    let mut values: BTreeMap<String, String> = ini
        .general_section()
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    for key in KEYS {
        if let Some(v) = env(key).filter(|v| !v.is_empty()) {
            values.insert((*key).to_string(), v);
        }
    }
    Ok(values)
}

pub(crate) fn config_command(action: ConfigAction) -> Result<i32> {
    let path = config_path()?;
    let mut ini = load_ini(&path)?;
    match action {
        ConfigAction::Set { pairs } => {
            for pair in pairs {
                let Some((k, v)) = pair.split_once('=') else {
                    return Err(Error::Usage(UsageError::MicroAgent(format!(
                        "`{pair}` is not KEY=VALUE"
                    ))));
                };
                if !KEYS.contains(&k) {
                    return Err(Error::Usage(UsageError::MicroAgent(format!(
                        "Invalid config property: {k} (known: {})",
                        KEYS.join(", ")
                    ))));
                }
                ini.with_general_section().set(k, v);
            }
            let mut bytes = Vec::new();
            ini.write_to(&mut bytes)
                .map_err(|e| Error::io("cannot format ~/.micro-agent", e))?;
            crate::fsutil::write_atomic(&path, &bytes)
                .map_err(|e| Error::io(format!("cannot write {}", path.display()), e))?;
        }
        ConfigAction::Get { keys } => {
            let keys: Vec<String> = if keys.is_empty() {
                KEYS.iter().map(|k| k.to_string()).collect()
            } else {
                keys
            };
            for k in keys {
                if let Some(v) = ini.general_section().get(&k) {
                    println!("{k}={v}");
                }
            }
        }
    }
    Ok(0)
}
