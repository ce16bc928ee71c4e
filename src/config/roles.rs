//! The sections keyed by model role: `models:` ([`Models`], each a [`ModelEntry`]) and
//! `prompts:` ([`Prompts`]), both read by [`role_map`], so that an unknown role is refused the
//! same way, with the list of model roles, in either.

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;

use ralph_actors::role::Role;
use ralph_actors::settings::ModelSpec;
use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::{Deserialize, Serialize};

use super::checks::{model_name, model_names, opt_at_least_one, temperature, MODEL};
use crate::models;

/// Each model role's model (`models:`), keyed by role. A role left out keeps its default
/// ([`models::default_models`]); a key that names no model role is an error that lists them.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(transparent)]
pub struct Models(BTreeMap<Role, ModelEntry>);

impl Default for Models {
    fn default() -> Self {
        Self(
            Role::with_models()
                .filter_map(|role| {
                    let d = models::default_models(role)?;
                    let entry = ModelEntry {
                        model: d.model.to_string(),
                        temperature: None,
                        max_tokens: Some(role.info().default_max_tokens),
                        fallbacks: d.fallbacks.iter().map(|m| m.to_string()).collect(),
                    };
                    Some((role, entry))
                })
                .collect(),
        )
    }
}

impl Models {
    /// The entry of a model role; `None` for a role that calls no model.
    pub fn get(&self, role: Role) -> Option<&ModelEntry> {
        self.0.get(&role)
    }

    pub fn get_mut(&mut self, role: Role) -> Option<&mut ModelEntry> {
        self.0.get_mut(&role)
    }
}

/// The names of the roles that call a model, for "expected one of" in errors.
fn model_role_names() -> &'static [&'static str] {
    static NAMES: std::sync::LazyLock<Vec<&'static str>> =
        std::sync::LazyLock::new(|| Role::with_models().map(Role::as_str).collect());
    &NAMES
}

/// Reads a map keyed by model role, each value with `T`'s own deserialiser, over `base` (the
/// defaults): the one place where a config section keyed by role is parsed.
fn role_map<'de, D, T>(d: D, base: BTreeMap<Role, T>) -> Result<BTreeMap<Role, T>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    /// A key of the map: the name of a model role. Refused while the key is read, so that the
    /// error's path ends with the key (`prompts.tester`), as a struct's unknown field would.
    struct RoleKey(Role);
    impl<'de> Deserialize<'de> for RoleKey {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            let name = String::deserialize(d)?;
            name.parse::<Role>()
                .map(RoleKey)
                .map_err(|_| de::Error::unknown_field(&name, model_role_names()))
        }
    }
    struct RoleMapVisitor<T>(BTreeMap<Role, T>);
    impl<'de, T: Deserialize<'de>> Visitor<'de> for RoleMapVisitor<T> {
        type Value = BTreeMap<Role, T>;
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("a map from role to its setting")
        }
        fn visit_map<A: MapAccess<'de>>(mut self, mut map: A) -> Result<Self::Value, A::Error> {
            while let Some(RoleKey(role)) = map.next_key()? {
                self.0.insert(role, map.next_value()?);
            }
            Ok(self.0)
        }
        fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok(self.0)
        }
    }
    d.deserialize_map(RoleMapVisitor(base))
}

impl<'de> Deserialize<'de> for Models {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        role_map(d, Models::default().0).map(Models)
    }
}

/// A role's model: written as a bare name (`gpt-mini`) or as a map `{model, temperature,
/// max_tokens}`. `model` is held canonical (`provider/model`), aliases resolved.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ModelEntry {
    pub model: String,
    pub temperature: Option<f32>,
    /// `None`: the role's default ([`RoleInfo::default_max_tokens`](ralph_actors::role::RoleInfo)).
    pub max_tokens: Option<u32>,
    /// Models tried in turn when this one fails (canonical names).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub fallbacks: Vec<String>,
}

impl ModelEntry {
    /// The core's view of this entry for `role`.
    pub fn spec(&self, role: Role) -> ModelSpec {
        ModelSpec {
            model: self.model.clone(),
            temperature: self.temperature,
            max_tokens: self
                .max_tokens
                .unwrap_or_else(|| role.info().default_max_tokens),
            fallbacks: self.fallbacks.clone(),
        }
    }
}

/// The map form of [`ModelEntry`]; a derived impl, so an unknown key in it is reported as such
/// with its path (an `#[serde(untagged)]` enum would hide that behind "did not match any variant").
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ModelEntryMap {
    #[serde(deserialize_with = "model_name")]
    model: String,
    #[serde(default, deserialize_with = "temperature")]
    temperature: Option<f32>,
    #[serde(default, deserialize_with = "opt_at_least_one")]
    max_tokens: Option<u32>,
    #[serde(default, deserialize_with = "model_names")]
    fallbacks: Vec<String>,
}

impl<'de> Deserialize<'de> for ModelEntry {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct EntryVisitor;
        impl<'de> Visitor<'de> for EntryVisitor {
            type Value = ModelEntry;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a model name or a map {model, temperature, max_tokens, fallbacks}")
            }
            fn visit_str<E: de::Error>(self, name: &str) -> Result<ModelEntry, E> {
                let model = MODEL.visit_str(name)?;
                Ok(ModelEntry {
                    model,
                    temperature: None,
                    max_tokens: None,
                    fallbacks: Vec::new(),
                })
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<ModelEntry, A::Error> {
                let m = ModelEntryMap::deserialize(de::value::MapAccessDeserializer::new(map))?;
                Ok(ModelEntry {
                    model: m.model,
                    temperature: m.temperature,
                    max_tokens: m.max_tokens,
                    fallbacks: m.fallbacks,
                })
            }
        }
        d.deserialize_any(EntryVisitor)
    }
}

/// Template overrides (`prompts:`), one file per model role; a role left out (or `null`) keeps
/// its bundled template.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Prompts(BTreeMap<Role, PathBuf>);

/// Every model role, `null` where the bundled template is kept: the shape the example file
/// documents.
impl Serialize for Prompts {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let all: BTreeMap<Role, Option<&PathBuf>> =
            Role::with_models().map(|r| (r, self.0.get(&r))).collect();
        all.serialize(s)
    }
}

impl Prompts {
    pub fn get(&self, role: Role) -> Option<&PathBuf> {
        self.0.get(&role)
    }

    /// Every override, to resolve its path against the config file's directory.
    pub fn paths_mut(&mut self) -> impl Iterator<Item = &mut PathBuf> {
        self.0.values_mut()
    }
}

impl<'de> Deserialize<'de> for Prompts {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let given: BTreeMap<Role, Option<PathBuf>> = role_map(d, BTreeMap::new())?;
        Ok(Prompts(
            given
                .into_iter()
                .filter_map(|(role, path)| Some((role, path?)))
                .collect(),
        ))
    }
}
