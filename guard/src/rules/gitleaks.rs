//! Reading rules in gitleaks' TOML format: `[[rules]]` with `id`, `regex`, `secretGroup`,
//! `entropy`, `keywords` and `[[rules.allowlists]]` (or the older `[rules.allowlist]`); the
//! global `[allowlist]` / `[[allowlists]]`; `[extend]` with `disabledRules`. The bundled set is
//! written in it too, so one reader serves both.
//!
//! Fields gitleaks has and a text scanner cannot use (`path`, `commits`, `paths`, `tags`,
//! `title`, `description`) are accepted and left aside: a team's existing file loads as it is.
//! A rule that matches file paths only (no `regex`) is skipped, with a note. Any other key, and
//! any value of the wrong type, is an error naming the file, the line and the key.

use std::ops::Range;

use toml_edit::{Document, Item, TableLike, Value};

use super::spec::{AllowSpec, RuleError, RuleSpec, Target};

/// What one file holds.
#[derive(Debug, Default)]
pub struct RuleFile {
    pub rules: Vec<RuleSpec>,
    /// The global allowlists: a match any of them allows is not a finding, whatever its rule.
    pub allow: Vec<AllowSpec>,
    /// `[extend] disabledRules`: ids of bundled rules to leave out.
    pub disabled: Vec<String>,
    /// What was left aside, for the user to read (path-only rules).
    pub notes: Vec<String>,
}

const RULE_KEYS: &[&str] = &[
    "id",
    "description",
    "regex",
    "secretGroup",
    "entropy",
    "keywords",
    "allowlist",
    "allowlists",
    "path",
    "tags",
];
const ALLOW_KEYS: &[&str] = &[
    "description",
    "condition",
    "regexTarget",
    "regexes",
    "stopwords",
    "paths",
    "commits",
];
const TOP_KEYS: &[&str] = &["title", "rules", "allowlist", "allowlists", "extend"];
const EXTEND_KEYS: &[&str] = &["useDefault", "path", "disabledRules"];

/// Reads `text`, the contents of `file` (named in errors).
pub fn parse(file: &str, text: &str) -> Result<RuleFile, RuleError> {
    let doc = Document::parse(text).map_err(|e| RuleError {
        file: file.to_string(),
        line: e.span().map_or(0, |s| line_of(text, s.start)),
        key: String::new(),
        message: e.message().to_string(),
    })?;
    let r = Reader { file, text };
    let root = doc.as_table();
    r.known_keys(root, TOP_KEYS, "")?;
    let mut out = RuleFile::default();
    if let Some(extend) = root.get("extend") {
        let t = r.table(extend, "extend")?;
        r.known_keys(t, EXTEND_KEYS, "extend")?;
        if let Some(item) = t.get("disabledRules") {
            out.disabled = r.strings(item, "extend.disabledRules")?;
        }
    }
    for key in ["allowlist", "allowlists"] {
        if let Some(item) = root.get(key) {
            out.allow.extend(r.allowlists(item, key)?);
        }
    }
    if let Some(item) = root.get("rules") {
        let Some(rules) = item.as_array_of_tables() else {
            return Err(r.error(
                item.span(),
                "rules",
                "must be an array of tables ([[rules]])",
            ));
        };
        for (i, rule) in rules.iter().enumerate() {
            let at = format!("rules[{i}]");
            r.known_keys(rule, RULE_KEYS, &at)?;
            let id = match rule.get("id") {
                Some(item) => r.string(item, &format!("{at}.id"))?,
                None => return Err(r.error(rule.span(), &at, "has no `id`")),
            };
            let at = format!("rules.{id}");
            let Some(regex) = rule.get("regex") else {
                out.notes.push(format!(
                    "{file}: rule `{id}` matches file paths only: a text scanner cannot use it"
                ));
                continue;
            };
            let line = line_of(text, rule.span().map_or(0, |s| s.start));
            let mut spec = RuleSpec {
                regex: r.string(regex, &format!("{at}.regex"))?,
                id,
                secret_group: 0,
                entropy: None,
                keywords: Vec::new(),
                allow: Vec::new(),
                origin: format!("{file}:{line}"),
            };
            if let Some(item) = rule.get("secretGroup") {
                spec.secret_group = r.count(item, &format!("{at}.secretGroup"))?;
            }
            if let Some(item) = rule.get("entropy") {
                spec.entropy = Some(r.number(item, &format!("{at}.entropy"))?);
            }
            if let Some(item) = rule.get("keywords") {
                spec.keywords = r.lower_strings(item, &format!("{at}.keywords"))?;
            }
            for key in ["allowlist", "allowlists"] {
                if let Some(item) = rule.get(key) {
                    spec.allow
                        .extend(r.allowlists(item, &format!("{at}.{key}"))?);
                }
            }
            out.rules.push(spec);
        }
    }
    Ok(out)
}

/// The 1-based line of byte `offset`.
fn line_of(text: &str, offset: usize) -> usize {
    text.as_bytes()[..offset.min(text.len())]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
        + 1
}

struct Reader<'a> {
    file: &'a str,
    text: &'a str,
}

impl Reader<'_> {
    fn error(&self, span: Option<Range<usize>>, key: &str, message: &str) -> RuleError {
        RuleError {
            file: self.file.to_string(),
            line: span.map_or(0, |s| line_of(self.text, s.start)),
            key: key.to_string(),
            message: message.to_string(),
        }
    }

    fn known_keys(&self, t: &dyn TableLike, known: &[&str], at: &str) -> Result<(), RuleError> {
        for (key, item) in t.iter() {
            if !known.contains(&key) {
                let path = if at.is_empty() {
                    key.to_string()
                } else {
                    format!("{at}.{key}")
                };
                let span = t.key(key).and_then(|k| k.span()).or_else(|| item.span());
                return Err(self.error(
                    span,
                    &path,
                    &format!("unknown key (known: {})", known.join(", ")),
                ));
            }
        }
        Ok(())
    }

    fn table<'i>(&self, item: &'i Item, at: &str) -> Result<&'i dyn TableLike, RuleError> {
        item.as_table_like()
            .ok_or_else(|| self.error(item.span(), at, "must be a table"))
    }

    fn value<'i>(&self, item: &'i Item, at: &str) -> Result<&'i Value, RuleError> {
        item.as_value()
            .ok_or_else(|| self.error(item.span(), at, "must be a value, not a table"))
    }

    fn string(&self, item: &Item, at: &str) -> Result<String, RuleError> {
        let v = self.value(item, at)?;
        v.as_str()
            .map(str::to_string)
            .ok_or_else(|| self.error(v.span(), at, "must be a string"))
    }

    fn number(&self, item: &Item, at: &str) -> Result<f32, RuleError> {
        let v = self.value(item, at)?;
        v.as_float()
            .or_else(|| v.as_integer().map(|i| i as f64))
            .map(|f| f as f32)
            .ok_or_else(|| self.error(v.span(), at, "must be a number"))
    }

    fn count(&self, item: &Item, at: &str) -> Result<usize, RuleError> {
        let v = self.value(item, at)?;
        v.as_integer()
            .and_then(|i| usize::try_from(i).ok())
            .ok_or_else(|| self.error(v.span(), at, "must be a whole number, 0 or more"))
    }

    fn strings(&self, item: &Item, at: &str) -> Result<Vec<String>, RuleError> {
        let v = self.value(item, at)?;
        let array = v
            .as_array()
            .ok_or_else(|| self.error(v.span(), at, "must be an array of strings"))?;
        array
            .iter()
            .map(|s| {
                s.as_str()
                    .map(str::to_string)
                    .ok_or_else(|| self.error(s.span(), at, "must be an array of strings"))
            })
            .collect()
    }

    /// An array of strings in lower case: keywords and stopwords match regardless of case.
    fn lower_strings(&self, item: &Item, at: &str) -> Result<Vec<String>, RuleError> {
        Ok(self
            .strings(item, at)?
            .into_iter()
            .map(|s| s.to_ascii_lowercase())
            .collect())
    }

    /// The value `got`, read from `item`, names among `choices`; an error listing the names
    /// when it names none.
    fn one_of<T: Copy>(
        &self,
        item: &Item,
        key: &str,
        got: &str,
        choices: &[(&str, T)],
    ) -> Result<T, RuleError> {
        if let Some(&(_, value)) = choices.iter().find(|(name, _)| *name == got) {
            return Ok(value);
        }
        let names: Vec<&str> = choices.iter().map(|(name, _)| *name).collect();
        let listed = match names.split_last() {
            Some((last, [])) => (*last).to_string(),
            Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
            None => String::new(),
        };
        Err(self.error(item.span(), key, &format!("must be {listed}, got `{got}`")))
    }

    /// An allowlist table, or an array of them (`[[rules.allowlists]]`).
    fn allowlists(&self, item: &Item, at: &str) -> Result<Vec<AllowSpec>, RuleError> {
        if let Some(tables) = item.as_array_of_tables() {
            return tables
                .iter()
                .enumerate()
                .map(|(i, t)| self.allowlist(t, &format!("{at}[{i}]")))
                .collect();
        }
        if let Some(Value::Array(array)) = item.as_value() {
            return array
                .iter()
                .enumerate()
                .map(|(i, v)| match v.as_inline_table() {
                    Some(t) => self.allowlist(t, &format!("{at}[{i}]")),
                    None => Err(self.error(v.span(), at, "must hold tables")),
                })
                .collect();
        }
        Ok(vec![self.allowlist(self.table(item, at)?, at)?])
    }

    fn allowlist(&self, t: &dyn TableLike, at: &str) -> Result<AllowSpec, RuleError> {
        self.known_keys(t, ALLOW_KEYS, at)?;
        let mut spec = AllowSpec::default();
        if let Some(item) = t.get("regexTarget") {
            let key = format!("{at}.regexTarget");
            let got = self.string(item, &key)?;
            let targets = [
                ("secret", Target::Secret),
                ("match", Target::Match),
                ("line", Target::Line),
            ];
            spec.target = self.one_of(item, &key, &got, &targets)?;
        }
        if let Some(item) = t.get("condition") {
            let key = format!("{at}.condition");
            let got = self.string(item, &key)?.to_ascii_uppercase();
            spec.all = self.one_of(item, &key, &got, &[("OR", false), ("AND", true)])?;
        }
        if let Some(item) = t.get("regexes") {
            spec.regexes = self.strings(item, &format!("{at}.regexes"))?;
        }
        if let Some(item) = t.get("stopwords") {
            spec.stopwords = self.lower_strings(item, &format!("{at}.stopwords"))?;
        }
        Ok(spec)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEAM: &str = r#"
title = "a team's rules"

[extend]
useDefault = true
disabledRules = ["generic-api-key"]

[[rules]]
id = "acme-token"
description = "ACME internal token"
regex = '''\b(acme_[a-z0-9]{24})\b'''
secretGroup = 1
keywords = ["ACME_"]
tags = ["internal"]

[[rules.allowlists]]
regexTarget = "match"
regexes = ['''acme_0{24}''']
stopwords = ["TEST"]

[[rules]]
id = "pem-file"
path = '''\.pem$'''

[allowlist]
description = "fixtures"
paths = ['''fixtures/''']
regexes = ['''dummy''']
"#;

    #[test]
    #[allow(clippy::expect_used)]
    fn a_team_s_file_loads_with_what_a_scanner_cannot_use_left_aside() {
        let f = parse("team.toml", TEAM).expect("parses");
        assert_eq!(f.disabled, ["generic-api-key"]);
        assert_eq!(f.rules.len(), 1);
        let r = &f.rules[0];
        assert_eq!(r.id, "acme-token");
        assert_eq!(r.secret_group, 1);
        assert_eq!(r.keywords, ["acme_"]);
        assert_eq!(r.origin, "team.toml:8");
        assert_eq!(r.allow.len(), 1);
        assert_eq!(r.allow[0].target, Target::Match);
        assert_eq!(r.allow[0].stopwords, ["test"]);
        assert_eq!(f.allow.len(), 1);
        assert_eq!(f.allow[0].regexes, ["dummy"]);
        assert!(f.notes[0].contains("`pem-file` matches file paths only"));
    }

    #[test]
    fn errors_name_the_file_line_and_key() {
        let e = parse(
            "r.toml",
            "[[rules]]\nid = \"x\"\nregex = 'a'\nsecretGroup = \"one\"\n",
        )
        .expect_err("bad type");
        assert_eq!(
            e.to_string(),
            "r.toml:4: rules.x.secretGroup: must be a whole number, 0 or more"
        );
        let e = parse("r.toml", "[[rules]]\nid = \"x\"\nregexp = 'a'\n").expect_err("unknown");
        assert!(
            e.to_string()
                .starts_with("r.toml:3: rules[0].regexp: unknown key"),
            "{e}"
        );
        let e = parse("r.toml", "[[rules]\n").expect_err("syntax");
        assert!(e.to_string().starts_with("r.toml:1: "), "{e}");
        let e = parse(
            "r.toml",
            "[[rules]]\nid = \"x\"\nregex = 'a'\n[[rules.allowlists]]\nregexTarget = \"file\"\n",
        )
        .expect_err("bad target");
        assert_eq!(
            e.to_string(),
            "r.toml:5: rules.x.allowlists[0].regexTarget: must be secret, match or line, got `file`"
        );
        let e = parse(
            "r.toml",
            "[[rules]]\nid = \"x\"\nregex = 'a'\n[rules.allowlist]\ncondition = \"xor\"\n",
        )
        .expect_err("bad condition");
        assert_eq!(
            e.to_string(),
            "r.toml:5: rules.x.allowlist.condition: must be OR or AND, got `XOR`"
        );
    }
}
