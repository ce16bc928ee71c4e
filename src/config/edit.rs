//! The config file edited as text, so that its comments and the order of its keys stay as the
//! user wrote them: an entry added to a top-level list (`ralph-loop agents add`).

use serde::Serialize;

/// `value` as one entry of a top-level list, indented under the list's key.
pub(crate) fn list_entry(value: &impl Serialize) -> Result<String, serde_yaml::Error> {
    let yaml = serde_yaml::to_string(&[value])?;
    Ok(yaml.lines().map(|l| format!("  {l}\n")).collect::<String>())
}

/// `text` with `entry` (a [`list_entry`]) added to its top-level `key:` list: after the list's
/// last entry, in place of an empty `[]`, or under a new `key:` at the end.
pub(crate) fn append_to_list(text: &str, key: &str, entry: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let Some(at) = lines.iter().position(|l| is_key(l, key)) else {
        let mut out = text.to_string();
        if !out.is_empty() && !out.ends_with('\n') {
            out.push('\n');
        }
        if !out.is_empty() {
            out.push('\n');
        }
        out.push_str(&format!("{key}:\n"));
        out.push_str(entry);
        return out;
    };
    let head = lines[at];
    let value = head[key.len() + 1..].trim_start();
    let mut out: Vec<String> = lines[..at].iter().map(|l| l.to_string()).collect();
    if let Some(rest) = value.strip_prefix("[]") {
        // `agents: []  # comment`: the list starts here, the comment stays.
        let comment = rest.trim_start();
        out.push(format!(
            "{key}:{}{comment}",
            if comment.is_empty() { "" } else { " " }
        ));
        out.extend(entry.lines().map(str::to_string));
        out.extend(lines[at + 1..].iter().map(|l| l.to_string()));
    } else {
        // The block runs while lines are indented, blank or comments; the entry goes after
        // its last entry line, indented as its entries are.
        out.push(head.to_string());
        let mut last_item = at;
        let mut indent = "  ";
        for (i, l) in lines.iter().enumerate().skip(at + 1) {
            if !l.is_empty() && !l.starts_with([' ', '\t', '#', '-']) {
                break;
            }
            let body = l.trim_start();
            if body.is_empty() || body.starts_with('#') {
                continue;
            }
            if last_item == at && body.starts_with('-') {
                indent = &l[..l.len() - body.len()];
            }
            last_item = i;
        }
        out.extend(lines[at + 1..=last_item].iter().map(|l| l.to_string()));
        out.extend(
            entry
                .lines()
                .map(|l| format!("{indent}{}", l.strip_prefix("  ").unwrap_or(l))),
        );
        out.extend(lines[last_item + 1..].iter().map(|l| l.to_string()));
    }
    let mut joined = out.join("\n");
    joined.push('\n');
    joined
}

fn is_key(line: &str, key: &str) -> bool {
    line.strip_prefix(key)
        .is_some_and(|rest| rest.starts_with(':'))
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::agents::definition::AgentDef;

    fn def() -> AgentDef {
        serde_yaml::from_str(
            "name: mine\nbinaries: [my-agent]\nargs: [run, '{prompt}']\nprompt: argument\nformat: plain\n",
        )
        .unwrap()
    }

    #[test]
    fn an_entry_goes_into_an_empty_list_a_block_or_a_new_key() {
        let e = list_entry(&def()).unwrap();
        let empty = append_to_list(
            "budgets:\n  max_iterations: 3\nagents: []   # yours\noutput: json\n",
            "agents",
            &e,
        );
        assert!(
            empty.contains("agents: # yours\n  - name: mine\n"),
            "{empty}"
        );
        assert!(empty.ends_with("output: json\n"), "{empty}");
        let parsed = crate::config::parse(&empty, Path::new("ralph.config.yaml")).unwrap();
        assert_eq!(parsed.agents[0].name, "mine");
        assert_eq!(parsed.output.as_str(), "json");

        let block = "agents:\n  - name: first\n    binaries: [a]\n    args: [x]\n    format: plain\n  # a comment\n\noutput: json\n";
        let two = append_to_list(block, "agents", &e);
        let parsed = crate::config::parse(&two, Path::new("ralph.config.yaml")).unwrap();
        let names: Vec<&str> = parsed.agents.iter().map(|a| a.name.as_str()).collect();
        assert_eq!(names, ["first", "mine"]);
        assert!(two.contains("# a comment"), "{two}");

        let flush = append_to_list(
            "agents:\n- name: first\n  binaries: [a]\n  args: [x]\n  format: plain\n",
            "agents",
            &e,
        );
        let parsed = crate::config::parse(&flush, Path::new("ralph.config.yaml")).unwrap();
        assert_eq!(parsed.agents.len(), 2, "{flush}");

        let none = append_to_list("output: json", "agents", &e);
        let parsed = crate::config::parse(&none, Path::new("ralph.config.yaml")).unwrap();
        assert_eq!(parsed.agents.len(), 1);
        assert_eq!(append_to_list("", "agents", &e), format!("agents:\n{e}"));
    }
}
