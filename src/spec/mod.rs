//! Specs: a task written as Markdown, with YAML front matter naming the files to fix and the
//! run's settings. The body is the task's prompt, as a `<file>.prompt.md` is for a single run.
//!
//! ```markdown
//! ---
//! targets:
//!   - src/median.py
//!   - file: src/stats.py
//!     test_file: tests/test_stats.py
//! budget: 0.50
//! max_iterations: 10
//! models: { librarian: gemini, artisan: claude }
//! ---
//! The median of an even-length list must average the two middle values.
//! ```
//!
//! Target paths are relative to the project root (the git root above the spec). A spec without
//! `targets` is *planned*: [`planner`] asks the Librarian's model which files to fix. Bad front
//! matter is refused naming the file, line and key, as the config is.

pub(crate) mod planner;

use std::path::{Path, PathBuf};

use ralph_actors::settings::Profile;
use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::{Deserialize, Serialize};

use crate::cli::{LimitArgs, OnFailureArg, RunArgs, TapeArgs, ViewArgs};
use crate::config::ConfigError;
use crate::models::RoleModels;

/// A spec read and checked.
#[derive(Debug, Clone)]
pub struct Spec {
    /// Where it was read from (absolute).
    pub path: PathBuf,
    /// The file's name without `.md`: what commits and logs call it.
    pub name: String,
    pub front: FrontMatter,
    /// The task, as the Artisan reads it.
    pub body: String,
}

/// The settings a spec may give, each as the flag of the same name.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FrontMatter {
    /// The files to fix, in order; empty: planned.
    #[serde(default)]
    pub targets: Vec<Target>,
    pub test_command: Option<String>,
    /// Dollars, for each target's run.
    pub budget: Option<f64>,
    pub max_iterations: Option<u32>,
    /// `librarian=gemini,artisan=claude`, or a map of role to model.
    pub models: Option<RoleModels>,
    pub language: Option<String>,
    /// Minutes, for each target's run.
    pub max_duration: Option<f64>,
    pub on_failure: Option<OnFailureArg>,
    pub allow_test_edits: Option<bool>,
    /// Chaos on (`true`) or off (`false`); unset: as the config says.
    pub adversarial: Option<bool>,
    /// `quick` (the tests and the Critic only) or `full` (the default promise); unset: as
    /// `--quick` and the config say.
    pub profile: Option<Profile>,
    /// A config file, relative to the project root.
    pub config: Option<PathBuf>,
}

/// One file to fix, and the test file shown with it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Target {
    pub file: PathBuf,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub test_file: Option<PathBuf>,
}

/// Why a spec cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum SpecError {
    #[error("{}: spec not found", .0.display())]
    NotFound(PathBuf),
    #[error(transparent)]
    Invalid(#[from] ConfigError),
}

impl FrontMatter {
    /// The spec's own settings, as `key=value, ...` (empty when it has none).
    pub fn settings(&self) -> String {
        let f = self;
        let mut parts = Vec::new();
        if let Some(b) = f.budget {
            parts.push(format!("budget=${b:.2}"));
        }
        if let Some(m) = f.max_iterations {
            parts.push(format!("max_iterations={m}"));
        }
        if let Some(m) = &f.models {
            parts.push(format!("models={}", m.0));
        }
        if let Some(t) = &f.test_command {
            parts.push(format!("test_command={t}"));
        }
        if let Some(l) = &f.language {
            parts.push(format!("language={l}"));
        }
        parts.join(", ")
    }
}

impl Spec {
    /// Reads and checks the spec at `path`.
    pub fn load(path: &Path) -> Result<Spec, SpecError> {
        if !path.is_file() {
            return Err(SpecError::NotFound(path.to_path_buf()));
        }
        let source = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        let path = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
        Self::parse(&source, &path)
    }

    /// Parses `source`, the text of the spec at `path` (named in errors).
    pub fn parse(source: &str, path: &Path) -> Result<Spec, SpecError> {
        let (yaml, body) = split(source, path)?;
        let front = match yaml {
            Some(yaml) if !yaml.trim().is_empty() => {
                crate::config::nesting::check(yaml, path).map_err(|e| e.shifted(1))?;
                let de = serde_yaml::Deserializer::from_str(yaml);
                let front: FrontMatter = serde_path_to_error::deserialize(de)
                    .map_err(|e| ConfigError::from_yaml(path, e).shifted(1))?;
                check(&front, yaml, path)?;
                front
            }
            _ => FrontMatter::default(),
        };
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy())
            .unwrap_or_default();
        let name = name.strip_suffix(".md").unwrap_or(&name).to_string();
        Ok(Spec {
            path: path.to_path_buf(),
            name,
            front,
            body: body.trim().to_string(),
        })
    }

    /// The flags of the run of `target`, paths relative to the project root.
    /// What the spec asks, in a line: the first line of its body (a heading's text without its
    /// `#`s); empty for a spec without a body.
    pub fn description(&self) -> String {
        self.body
            .lines()
            .map(|l| l.trim().trim_start_matches('#').trim())
            .find(|l| !l.is_empty())
            .unwrap_or_default()
            .to_string()
    }

    pub fn run_args(&self, target: &Target) -> RunArgs {
        let f = &self.front;
        RunArgs {
            file: Some(target.file.clone()),
            test_command: f.test_command.clone(),
            test_file: target.test_file.clone(),
            // The spec itself: its body is the prompt, the front matter is left out when read.
            prompt: (!self.body.is_empty()).then(|| self.path.clone()),
            limits: LimitArgs {
                max_iterations: f.max_iterations,
                budget: f.budget,
                max_duration: f.max_duration,
            },
            models: f.models.as_ref().map(|m| m.0.clone()),
            language: f.language.clone(),
            allow_test_edits: f.allow_test_edits.unwrap_or(false),
            adversarial: f.adversarial == Some(true),
            no_adversarial: f.adversarial == Some(false),
            quick: false,
            profile: f.profile,
            on_failure: f.on_failure,
            config: f.config.clone(),
            output: None,
            view: ViewArgs::default(),
            tape: TapeArgs::default(),
        }
    }
}

/// The text of a Markdown file without its front matter: what a spec used as a prompt file
/// shows the models.
pub fn body_of(text: &str) -> &str {
    match split(text, Path::new("")) {
        Ok((Some(_), body)) => body,
        _ => text,
    }
}

/// The front matter (between a first line `---` and the next `---` or `...`) and the body.
fn split<'a>(source: &'a str, path: &Path) -> Result<(Option<&'a str>, &'a str), ConfigError> {
    let source = source.strip_prefix('\u{feff}').unwrap_or(source);
    let Some(rest) = source
        .strip_prefix("---\n")
        .or_else(|| source.strip_prefix("---\r\n"))
    else {
        return Ok((None, source));
    };
    let mut offset = 0;
    for line in rest.split_inclusive('\n') {
        let bare = line.trim_end_matches(['\n', '\r']);
        if bare == "---" || bare == "..." {
            return Ok((Some(&rest[..offset]), &rest[offset + line.len()..]));
        }
        offset += line.len();
    }
    Err(ConfigError::Invalid {
        file: path.to_path_buf(),
        line: Some(1),
        column: Some(1),
        key: None,
        message: "the front matter opened here is never closed by a line `---`".into(),
    })
}

/// The checks serde cannot make, placed at their key.
fn check(front: &FrontMatter, yaml: &str, path: &Path) -> Result<(), ConfigError> {
    let at = |key: &str, message: String| ConfigError::at_key(path, yaml, key, message).shifted(1);
    let positive = |key: &str, v: Option<f64>, unit: &str| match v {
        Some(v) if !(v.is_finite() && v > 0.0) => Err(at(
            key,
            format!("must be a positive number of {unit}, not {v}"),
        )),
        _ => Ok(()),
    };
    positive("budget", front.budget, "dollars")?;
    positive("max_duration", front.max_duration, "minutes")?;
    if front.max_iterations == Some(0) {
        return Err(at("max_iterations", "must be at least 1".into()));
    }
    if let Some(models) = &front.models {
        crate::models::parse_role_models(&models.0).map_err(|e| at("models", e.to_string()))?;
    }
    if let Some(language) = &front.language {
        language
            .parse::<crate::runner::language::Language>()
            .map_err(|e| at("language", e.to_string()))?;
    }
    if front
        .test_command
        .as_deref()
        .is_some_and(|c| c.trim().is_empty())
    {
        return Err(at("test_command", "must not be empty".into()));
    }
    for (i, target) in front.targets.iter().enumerate() {
        if front.targets[..i].iter().any(|t| t.file == target.file) {
            return Err(at(
                "targets",
                format!("{} is named twice", target.file.display()),
            ));
        }
        if target.file.is_absolute() {
            return Err(at(
                "targets",
                format!(
                    "{} is absolute; name targets relative to the project root",
                    target.file.display()
                ),
            ));
        }
    }
    Ok(())
}

impl<'de> Deserialize<'de> for Target {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Target;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a file path, or a map with `file` and `test_file`")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Target, E> {
                non_empty_path(v).map(|file| Target {
                    file,
                    test_file: None,
                })
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Target, A::Error> {
                #[derive(Deserialize)]
                #[serde(deny_unknown_fields)]
                struct Full {
                    file: String,
                    test_file: Option<String>,
                }
                let full = Full::deserialize(de::value::MapAccessDeserializer::new(map))?;
                Ok(Target {
                    file: non_empty_path(&full.file)?,
                    test_file: full.test_file.as_deref().map(non_empty_path).transpose()?,
                })
            }
        }
        d.deserialize_any(V)
    }
}

fn non_empty_path<E: de::Error>(v: &str) -> Result<PathBuf, E> {
    if v.trim().is_empty() {
        return Err(E::custom("an empty path"));
    }
    Ok(PathBuf::from(v))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Spec, String> {
        Spec::parse(text, Path::new("/p/specs/fix-median.md")).map_err(|e| e.to_string())
    }

    #[test]
    fn reads_targets_settings_and_body() {
        let spec = parse(
            "---\ntargets:\n  - src/median.py\n  - file: src/stats.py\n    test_file: tests/test_stats.py\nbudget: 0.5\nmodels: { librarian: gemini, artisan: claude }\nadversarial: false\n---\n\nAverage the middle pair.\n",
        )
        .expect("parses");
        assert_eq!(spec.name, "fix-median");
        assert_eq!(spec.body, "Average the middle pair.");
        assert_eq!(spec.front.targets.len(), 2);
        assert_eq!(
            spec.front.targets[1].test_file.as_deref(),
            Some(Path::new("tests/test_stats.py"))
        );
        let args = spec.run_args(&spec.front.targets[0]);
        assert_eq!(args.limits.budget, Some(0.5));
        assert_eq!(
            args.models.as_deref(),
            Some("librarian=gemini,artisan=claude")
        );
        assert!(args.no_adversarial && !args.adversarial);
        assert_eq!(
            args.prompt.as_deref(),
            Some(Path::new("/p/specs/fix-median.md"))
        );
    }

    #[test]
    fn a_spec_without_front_matter_or_targets_is_planned() {
        let spec = parse("# Fix it\n\nThe median is wrong.\n").expect("parses");
        assert!(spec.front.targets.is_empty());
        assert_eq!(spec.body, "# Fix it\n\nThe median is wrong.");
        let spec = parse("---\nbudget: 1\n---\nbody").expect("parses");
        assert!(spec.front.targets.is_empty());
    }

    #[test]
    fn bad_front_matter_names_the_file_line_and_key() {
        let cases = [
            (
                "---\ntargets: [a.py]\nbudgett: 1\n---\n",
                "/p/specs/fix-median.md:3:1: budgett: unknown key",
            ),
            (
                "---\ntargets: [a.py]\nbudget: -1\n---\n",
                "/p/specs/fix-median.md:3:1: budget: must be a positive number of dollars, not -1",
            ),
            (
                "---\ntargets:\n  - file: a.py\n    tests: t.py\n---\n",
                "/p/specs/fix-median.md:4:5: targets[0].tests: unknown key, expected `file` or `test_file`",
            ),
            (
                "---\nmax_iterations: lots\n---\n",
                "/p/specs/fix-median.md:2:17: max_iterations: invalid type",
            ),
            (
                "---\nmodels: painter=gpt\n---\n",
                "/p/specs/fix-median.md:2:1: models: unknown role `painter`",
            ),
            (
                "---\nlanguage: cobol\n---\n",
                "/p/specs/fix-median.md:2:1: language: ",
            ),
            (
                "---\ntargets: [a.py, a.py]\n---\n",
                "/p/specs/fix-median.md:2:1: targets: a.py is named twice",
            ),
            (
                "---\nbudget: 1\n",
                "/p/specs/fix-median.md:1:1: the front matter opened here is never closed",
            ),
        ];
        for (text, expected) in cases {
            let message = parse(text).expect_err(text);
            assert!(message.starts_with(expected), "{text:?}\n  got {message}");
        }
    }

    #[test]
    fn a_prompt_file_shows_its_body_only() {
        assert_eq!(body_of("---\na: 1\n---\nDo it.\n"), "Do it.\n");
        assert_eq!(body_of("No front matter.\n"), "No front matter.\n");
        assert_eq!(body_of("---\nnever closed\n"), "---\nnever closed\n");
    }
}
