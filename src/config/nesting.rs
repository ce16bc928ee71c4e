//! How deep a YAML file's flow collections (`[…]`, `{…}`) may nest, checked before the YAML
//! parser reads it: the parser spends time on each level that grows with the depth (100,000
//! nested `{a: ` took it over two minutes), and no config, plugins file or spec nests past a
//! few levels.

use std::path::Path;

use super::error::ConfigError;

/// The deepest flow nesting taken.
pub const MOST_DEPTH: usize = 64;

/// `Err` naming the line and column where `source`, the text of `file`, nests its flow
/// collections deeper than [`MOST_DEPTH`]. Brackets in quoted strings and comments do not count.
pub(crate) fn check(source: &str, file: &Path) -> Result<(), ConfigError> {
    let (mut depth, mut line, mut column) = (0usize, 1usize, 0usize);
    let mut quote: Option<char> = None;
    let (mut escaped, mut comment, mut after_space) = (false, false, true);
    for c in source.chars() {
        column += 1;
        if c == '\n' {
            (line, column, comment, after_space) = (line + 1, 0, false, true);
            continue;
        }
        match quote {
            Some('"') if escaped => escaped = false,
            Some('"') if c == '\\' => escaped = true,
            Some(q) if c == q => quote = None,
            Some(_) => {}
            None if comment => {}
            None => match c {
                '#' if after_space => comment = true,
                '"' | '\'' => quote = Some(c),
                '[' | '{' => depth += 1,
                ']' | '}' => depth = depth.saturating_sub(1),
                _ => {}
            },
        }
        after_space = c.is_whitespace();
        if depth > MOST_DEPTH {
            return Err(ConfigError::Invalid {
                file: file.to_path_buf(),
                line: Some(line),
                column: Some(column),
                key: None,
                message: format!("nested more than {MOST_DEPTH} levels deep"),
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nesting_past_the_limit_is_refused_where_it_goes_past() {
        let file = Path::new("ralph.config.yaml");
        let deep = format!("models:\n  artisan: {}", "[".repeat(MOST_DEPTH + 1));
        let error = check(&deep, file).unwrap_err().to_string();
        assert_eq!(
            error,
            format!(
                "ralph.config.yaml:2:{}: nested more than 64 levels deep",
                12 + MOST_DEPTH
            )
        );
        assert!(check(&"{a: ".repeat(100_000), file).is_err());
    }

    #[test]
    fn brackets_in_strings_and_comments_and_real_configs_pass() {
        let file = Path::new("ralph.config.yaml");
        let many = "[".repeat(100);
        let text = format!(
            "a: '{many}'\nb: \"{many}\\\"{many}\"\n# {many}\nc: [1, {{d: [2]}}]\ne: x#{}\n",
            "]"
        );
        assert!(check(&text, file).is_ok());
        let repo = include_str!("../../ralph.config.yaml");
        assert!(check(repo, file).is_ok());
    }
}
