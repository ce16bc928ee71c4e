//! Finding, reading and parsing `ralph.config.yaml`, and the checks that need the whole file
//! (template overrides, keys that only make sense together), placed at the key at fault.

use std::path::{Path, PathBuf};

use ralph_actors::prompt::templates::Templates;
use ralph_actors::role::Role;

use super::error::ConfigError;
use super::sections::Config;

/// The file name looked for in the current directory and its parents.
pub const FILE_NAME: &str = "ralph.config.yaml";

/// The config file to use: `explicit` (which must exist; relative to `cwd`), else
/// `cwd/ralph.config.yaml`, else the nearest one in a parent directory up to and including the
/// git root (the first ancestor holding `.git`). Outside a git repository only `cwd` is searched,
/// so a stray file in a home directory never configures an unrelated project. `None`: use the
/// built-in defaults.
pub fn discover(explicit: Option<&Path>, cwd: &Path) -> Result<Option<PathBuf>, ConfigError> {
    let cwd = std::path::absolute(cwd).unwrap_or_else(|_| cwd.to_path_buf());
    if let Some(path) = explicit {
        let full = cwd.join(path);
        if !full.exists() {
            return Err(ConfigError::NotFound {
                path: path.to_path_buf(),
            });
        }
        return Ok(Some(full));
    }
    let git_root = cwd.ancestors().find(|dir| dir.join(".git").exists());
    for dir in cwd.ancestors() {
        let candidate = dir.join(FILE_NAME);
        if candidate.is_file() {
            return Ok(Some(candidate));
        }
        if git_root.is_none_or(|root| dir == root) {
            break;
        }
    }
    Ok(None)
}

/// Reads, parses and validates the file at `path`.
pub fn load(path: &Path) -> Result<Config, ConfigError> {
    let source = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    parse(&source, path)
}

/// [`discover`] then [`load`]; the defaults when no file is found.
pub fn load_discovered(
    explicit: Option<&Path>,
    cwd: &Path,
) -> Result<(Config, Option<PathBuf>), ConfigError> {
    match discover(explicit, cwd)? {
        Some(path) => Ok((load(&path)?, Some(path))),
        None => Ok((Config::default(), None)),
    }
}

/// Parses and validates `source`, the text of `file`: `file` names it in errors and its
/// directory is the base of the relative paths in it. An empty file gives the defaults.
pub fn parse(source: &str, file: &Path) -> Result<Config, ConfigError> {
    super::nesting::check(source, file)?;
    let de = serde_yaml::Deserializer::from_str(source);
    let mut config: Config =
        serde_path_to_error::deserialize(de).map_err(|e| ConfigError::from_yaml(file, e))?;
    let base = file.parent().map(Path::to_path_buf).unwrap_or_default();
    let resolve = |p: &mut Option<PathBuf>| {
        if let Some(p) = p {
            *p = base.join(&*p);
        }
    };
    resolve(&mut config.testing.test_file);
    resolve(&mut config.testing.prompt_file);
    resolve(&mut config.local_guard.rules);
    resolve(&mut config.agent.worktrees);
    config.testing.baseline_file = base.join(&config.testing.baseline_file);
    for (i, entry) in config.batch.iter_mut().enumerate() {
        if entry.spec.is_some() == entry.file.is_some() {
            return Err(ConfigError::at_key(
                file,
                source,
                "batch",
                format!("entry {} must name one of `spec` or `file`", i + 1),
            ));
        }
        if let Some(models) = &entry.models {
            crate::models::parse_role_models(models).map_err(|e| {
                ConfigError::at_key(
                    file,
                    source,
                    "batch",
                    format!("entry {}: models: {e}", i + 1),
                )
            })?;
        }
        resolve(&mut entry.spec);
        resolve(&mut entry.file);
        resolve(&mut entry.test_file);
    }
    for path in config.prompts.paths_mut() {
        *path = base.join(&*path);
    }
    config.base_dir = Some(base);
    check_templates(&config, source, file)?;
    super::hooks::check_section(&config.hooks, file, source)?;
    for (name, provider) in &config.providers {
        if provider.api_version.is_some() && name != "azure" {
            return Err(ConfigError::at_key(
                file,
                source,
                &format!("providers.{name}.api_version"),
                "api_version applies to azure only".into(),
            ));
        }
    }
    for (i, def) in config.agents.iter().enumerate() {
        if let Err(why) = def.validate() {
            return Err(ConfigError::at_key(
                file,
                source,
                "agents",
                format!("entry {} ({:?}): {why}", i + 1, def.name),
            ));
        }
        if config.agents[..i].iter().any(|d| d.name == def.name) {
            return Err(ConfigError::at_key(
                file,
                source,
                "agents",
                format!("entry {}: {:?} is defined twice", i + 1, def.name),
            ));
        }
    }
    if config.build.bootstrap_detection == super::BootstrapDetection::Manual
        && config.build.bootstrap_check.is_none()
    {
        return Err(ConfigError::at_key(
            file,
            source,
            "build.bootstrap_detection",
            "manual needs build.bootstrap_check, a command whose exit 0 means the project is still bootstrapping".into(),
        ));
    }
    for (key, value) in config.regent.counts() {
        if value == 0 {
            return Err(ConfigError::at_key(
                file,
                source,
                key,
                "must be at least 1".into(),
            ));
        }
    }
    if config.memory.global_sharing && config.memory.global_uri.is_none() {
        return Err(ConfigError::at_key(
            file,
            source,
            "memory.global_sharing",
            "global_sharing needs memory.global_uri, the shared directory".into(),
        ));
    }
    Ok(config)
}

/// Template overrides must exist and compile now, not in the middle of a paid run.
fn check_templates(config: &Config, source: &str, file: &Path) -> Result<(), ConfigError> {
    for role in Role::with_models() {
        let Some(path) = config.prompts.get(role) else {
            continue;
        };
        let key = format!("prompts.{role}");
        let text = std::fs::read_to_string(path).map_err(|e| {
            ConfigError::at_key(
                file,
                source,
                &key,
                format!("cannot read {}: {e}", path.display()),
            )
        })?;
        Templates::check(&text).map_err(|e| {
            ConfigError::at_key(file, source, &key, format!("{}: {e}", path.display()))
        })?;
    }
    Ok(())
}
