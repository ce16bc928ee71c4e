//! The value checks the schema's `deserialize_with` attributes and hand-written `Deserialize`
//! impls call: model names, temperatures, counts of at least one, shares and percentages, URLs,
//! directories, and the `prices:` map.
//!
//! Values are checked while they are deserialised rather than afterwards, so that a bad value's
//! error carries the line, column and key path the YAML deserialiser knows at that moment. Each
//! check runs inside the visitor of its value: yaml_serde places an error raised there at the
//! value itself, whereas an error raised after `T::deserialize` returned would be placed at the
//! start of the enclosing map, possibly lines away from the key at fault.

use std::collections::BTreeMap;
use std::fmt;
use std::marker::PhantomData;

use ralph_actors::policy::budget::Price;
use ralph_actors::settings::Analyze;
use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::Deserialize;

use crate::models::ModelName;

fn canonical_model(name: &str) -> Result<String, String> {
    ModelName::parse(name)
        .map(|m| m.to_string())
        .map_err(|e| e.to_string())
}

/// A string passed through `check`.
pub(super) struct Text {
    pub(super) expecting: &'static str,
    pub(super) check: fn(&str) -> Result<String, String>,
}

impl Visitor<'_> for Text {
    type Value = String;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(self.expecting)
    }
    fn visit_str<E: de::Error>(self, s: &str) -> Result<String, E> {
        (self.check)(s).map_err(E::custom)
    }
}

/// A number (integer or not) that `ok` accepts; one it refuses is an error that says `must`
/// and the number (`must be …, got 3`).
struct Number {
    expecting: &'static str,
    ok: fn(f64) -> bool,
    must: &'static str,
}

impl Visitor<'_> for Number {
    type Value = f64;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(self.expecting)
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<f64, E> {
        if (self.ok)(v) {
            Ok(v)
        } else {
            Err(E::custom(format!("{}, got {v}", self.must)))
        }
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<f64, E> {
        self.visit_f64(v as f64)
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<f64, E> {
        self.visit_f64(v as f64)
    }
}

/// A count where 0 would make the run meaningless (no iteration, no time, no output).
struct AtLeastOne<T>(PhantomData<T>);

impl<T: TryFrom<u64>> Visitor<'_> for AtLeastOne<T> {
    type Value = T;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an integer of at least 1")
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<T, E> {
        if v == 0 {
            return Err(E::custom("must be at least 1, got 0"));
        }
        T::try_from(v).map_err(|_| E::custom(format!("{v} is too large")))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<T, E> {
        match u64::try_from(v) {
            Ok(v) => self.visit_u64(v),
            Err(_) => Err(E::custom(format!("must be at least 1, got {v}"))),
        }
    }
}

/// `null` or what the inner visitor accepts.
struct Optional<V>(V);

impl<'de, V: Visitor<'de>> Visitor<'de> for Optional<V> {
    type Value = Option<V::Value>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        self.0.expecting(f)?;
        f.write_str(" or null")
    }
    fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self.0).map(Some)
    }
}

pub(super) const MODEL: Text = Text {
    expecting: "a model name (provider/model or an alias)",
    check: canonical_model,
};

pub(super) fn model_name<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    d.deserialize_str(MODEL)
}

/// A list of model names, each made canonical; an error names the entry's index.
pub(super) fn model_names<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    #[derive(Deserialize)]
    struct Name(#[serde(deserialize_with = "model_name")] String);
    Ok(Vec::<Name>::deserialize(d)?
        .into_iter()
        .map(|n| n.0)
        .collect())
}

pub(super) fn at_least_one<'de, D: Deserializer<'de>, T: TryFrom<u64>>(
    d: D,
) -> Result<T, D::Error> {
    d.deserialize_u64(AtLeastOne(PhantomData))
}

pub(super) fn opt_at_least_one<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u32>, D::Error> {
    d.deserialize_option(Optional(AtLeastOne(PhantomData)))
}

pub(super) fn opt_at_least_one_u64<'de, D: Deserializer<'de>>(
    d: D,
) -> Result<Option<u64>, D::Error> {
    d.deserialize_option(Optional(AtLeastOne(PhantomData)))
}

pub(super) fn opt_at_least_one_usize<'de, D: Deserializer<'de>>(
    d: D,
) -> Result<Option<usize>, D::Error> {
    d.deserialize_option(Optional(AtLeastOne(PhantomData)))
}

pub(super) fn similarity<'de, D: Deserializer<'de>>(d: D) -> Result<f32, D::Error> {
    d.deserialize_f64(Number {
        expecting: "a cosine similarity above 0 and at most 1",
        ok: |v| v > 0.0 && v <= 1.0,
        must: "must be above 0 and at most 1",
    })
    .map(|v| v as f32)
}

/// The shared store is a directory in this build: LanceDB's object-store back-ends (s3, gs, az)
/// are optional features left out to keep the build within CI's time.
pub(super) fn opt_directory<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    let dir = Text {
        expecting: "a directory path",
        check: |u| {
            if u.trim().is_empty() {
                Err("must not be empty".to_string())
            } else if let Some((scheme, _)) = u.split_once("://").filter(|(s, _)| *s != "file") {
                Err(format!(
                    "`{scheme}://` stores are not supported by this build; use a directory (a shared or synced file system works)"
                ))
            } else {
                Ok(u.strip_prefix("file://").unwrap_or(u).to_string())
            }
        },
    };
    d.deserialize_option(Optional(dir))
}

/// Above 0.40 the prompt alone would leave the "smart zone" every agent is kept in.
pub(super) fn context_share<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    d.deserialize_f64(Number {
        expecting: "a share of the context window, above 0 and at most 0.4",
        ok: |v| v > 0.0 && v <= 0.4,
        must: "must be above 0 and at most 0.4",
    })
}

pub(super) fn opt_percent<'de, D: Deserializer<'de>>(d: D) -> Result<Option<f64>, D::Error> {
    d.deserialize_option(Optional(Number {
        expecting: "a percentage between 0 and 100",
        ok: |v| (0.0..=100.0).contains(&v),
        must: "must be between 0 and 100",
    }))
}

/// A mutation score gate: the seed's CON-009 bounds it to 70..=100 (below 70 a gate says
/// little; above 100 nothing passes).
pub(super) fn opt_mutation_score<'de, D: Deserializer<'de>>(d: D) -> Result<Option<f64>, D::Error> {
    d.deserialize_option(Optional(Number {
        expecting: "a mutation score between 70 and 100",
        ok: |v| (70.0..=100.0).contains(&v),
        must: "must be between 70 and 100",
    }))
}

pub(super) fn opt_language<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    d.deserialize_option(Optional(Text {
        expecting: "typescript, javascript, python or rust",
        check: |s| {
            s.parse::<crate::runner::language::Language>()
                .map(|l| l.as_str().to_string())
        },
    }))
}

/// A list that must hold at least one item (`chaos.strategies`: to try nothing, turn Chaos off).
pub(super) fn non_empty_list<'de, D, T>(d: D) -> Result<Vec<T>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    let list = Vec::<T>::deserialize(d)?;
    if list.is_empty() {
        return Err(de::Error::custom(
            "the list is empty: name at least one (to use none, set chaos.enabled: false)",
        ));
    }
    Ok(list)
}

/// `tests_pass` cannot be turned off: a run that ignores its tests has nothing to aim at.
pub(super) fn must_be_true<'de, D: Deserializer<'de>>(d: D) -> Result<bool, D::Error> {
    struct True;
    impl Visitor<'_> for True {
        type Value = bool;
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("true")
        }
        fn visit_bool<E: de::Error>(self, v: bool) -> Result<bool, E> {
            if v {
                Ok(true)
            } else {
                Err(E::custom(
                    "tests_pass cannot be false: the tests passing is always required",
                ))
            }
        }
    }
    d.deserialize_bool(True)
}

const POSITIVE: Number = Number {
    expecting: "a number greater than 0",
    ok: |v| v.is_finite() && v > 0.0,
    must: "must be a number greater than 0",
};

pub(super) fn positive<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    d.deserialize_f64(POSITIVE)
}

pub(super) fn opt_positive<'de, D: Deserializer<'de>>(d: D) -> Result<Option<f64>, D::Error> {
    d.deserialize_option(Optional(POSITIVE))
}

const NON_NEGATIVE: Number = Number {
    expecting: "a number, 0 or more",
    ok: |v| v.is_finite() && v >= 0.0,
    must: "must be a number, 0 or more",
};

fn non_negative<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    d.deserialize_f64(NON_NEGATIVE)
}

fn opt_non_negative<'de, D: Deserializer<'de>>(d: D) -> Result<Option<f64>, D::Error> {
    d.deserialize_option(Optional(NON_NEGATIVE))
}

pub(super) fn temperature<'de, D: Deserializer<'de>>(d: D) -> Result<Option<f32>, D::Error> {
    let range = Number {
        expecting: "a temperature between 0 and 2",
        ok: |t| (0.0..=2.0).contains(&t),
        must: "must be between 0 and 2",
    };
    Ok(d.deserialize_option(Optional(range))?.map(|t| t as f32))
}

fn non_empty(s: &str) -> Result<String, String> {
    if s.trim().is_empty() {
        return Err("must not be empty (use null for the default)".into());
    }
    Ok(s.to_string())
}

pub(super) fn opt_non_empty<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    d.deserialize_option(Optional(Text {
        expecting: "a non-empty string",
        check: non_empty,
    }))
}

pub(super) fn opt_url<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    let url = Text {
        expecting: "an http:// or https:// URL",
        check: |u| {
            if u.starts_with("http://") || u.starts_with("https://") {
                Ok(u.to_string())
            } else {
                Err(format!("`{u}` is not an http:// or https:// URL"))
            }
        },
    };
    d.deserialize_option(Optional(url))
}

/// A key of `prices:`: a model name, canonicalised so it matches the names the run looks up,
/// and not one already priced: two names of one model (`gpt`, `openai/gpt-4.1`) would silently
/// shadow each other. Checked in the key's own visitor so the error points at the key.
struct NewPriceKey<'a>(&'a BTreeMap<String, Price>);

impl<'de> de::DeserializeSeed<'de> for NewPriceKey<'_> {
    type Value = String;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<String, D::Error> {
        d.deserialize_str(self)
    }
}

impl Visitor<'_> for NewPriceKey<'_> {
    type Value = String;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a model name (provider/model or an alias)")
    }
    fn visit_str<E: de::Error>(self, s: &str) -> Result<String, E> {
        let model = MODEL.visit_str::<E>(s)?;
        if self.0.contains_key(&model) {
            return Err(E::custom(format!("{model} is priced twice")));
        }
        Ok(model)
    }
}

/// [`Price`] with each number checked; the same keys.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PriceEntry {
    #[serde(deserialize_with = "non_negative")]
    input: f64,
    #[serde(deserialize_with = "non_negative")]
    output: f64,
    #[serde(default, deserialize_with = "opt_non_negative")]
    cache_read: Option<f64>,
    #[serde(default, deserialize_with = "opt_non_negative")]
    cache_write: Option<f64>,
}

pub(super) fn price_map<'de, D: Deserializer<'de>>(
    d: D,
) -> Result<BTreeMap<String, Price>, D::Error> {
    struct PriceMap;
    impl<'de> Visitor<'de> for PriceMap {
        type Value = BTreeMap<String, Price>;
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("a map of model name to {input, output, cache_read, cache_write}")
        }
        fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok(BTreeMap::new())
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
            let mut prices = BTreeMap::new();
            while let Some(model) = map.next_key_seed(NewPriceKey(&prices))? {
                let p: PriceEntry = map.next_value()?;
                let price = Price {
                    input: p.input,
                    output: p.output,
                    cache_read: p.cache_read,
                    cache_write: p.cache_write,
                };
                prices.insert(model, price);
            }
            Ok(prices)
        }
    }
    d.deserialize_map(PriceMap)
}

/// `librarian.analyze`: `auto`, `always` or `never`; `true` and `false` (the setting's values
/// before `auto`) mean `always` and `never`.
pub(super) fn analyze_mode<'de, D: Deserializer<'de>>(d: D) -> Result<Analyze, D::Error> {
    struct Mode;
    impl Visitor<'_> for Mode {
        type Value = Analyze;
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("auto, always or never")
        }
        fn visit_bool<E: de::Error>(self, v: bool) -> Result<Analyze, E> {
            Ok(if v { Analyze::Always } else { Analyze::Never })
        }
        fn visit_str<E: de::Error>(self, v: &str) -> Result<Analyze, E> {
            match v {
                "auto" => Ok(Analyze::Auto),
                "always" => Ok(Analyze::Always),
                "never" => Ok(Analyze::Never),
                other => Err(E::custom(format!(
                    "must be auto, always or never, got `{other}`"
                ))),
            }
        }
    }
    d.deserialize_any(Mode)
}
