//! pytest's node ids (`tests/test_x.py::TestClass::test_y[1]`) from a dotted classname and a test
//! name: the JUnit reader reads pytest's reports with them, and the `python -m unittest` text
//! parser names its tests with them, so that a switch of runner keeps the ids.

use std::path::Path;

use super::trace;

/// pytest's node id (`tests/test_x.py::TestClass::test_y[1]`), display name (`TestClass >
/// test_y[1]`) and file, from a JUnit classname (`tests.test_x.TestClass`), test name and, with
/// xunit1, file. An empty classname is a module that failed to collect: `name` is its dotted
/// path and the id is its file, as pytest prints it.
pub(crate) fn python_node_id(
    classname: &str,
    name: &str,
    file: Option<&str>,
    cwd: &Path,
) -> (String, String, Option<String>) {
    let parts: Vec<&str> = classname.split('.').collect();
    let k = module_parts(&parts, file, cwd);
    node_id(classname, &parts, k, name, file, cwd)
}

/// [`python_node_id`] with the classname split: its first `k` parts are the module. Apart so
/// that the JUnit reader works out `k` once per classname: [`module_parts`] may look at the disk.
pub(crate) fn node_id(
    classname: &str,
    parts: &[&str],
    k: usize,
    name: &str,
    file: Option<&str>,
    cwd: &Path,
) -> (String, String, Option<String>) {
    if classname.is_empty() {
        let file = file.map_or_else(|| format!("{}.py", name.replace('.', "/")), String::from);
        return (file.clone(), String::new(), Some(file));
    }
    let file = file.map_or_else(
        || format!("{}.py", parts[..k].join("/")),
        |f| trace::relative(f, cwd),
    );
    let classes = &parts[k..];
    let mut id = file.clone();
    for c in classes {
        id.push_str("::");
        id.push_str(c);
    }
    id.push_str("::");
    id.push_str(name);
    let mut display: Vec<&str> = classes.to_vec();
    display.push(name);
    (id, display.join(" > "), Some(file))
}

/// How many leading parts of a dotted classname name the module (the rest are classes).
pub(crate) fn module_parts(parts: &[&str], file: Option<&str>, cwd: &Path) -> usize {
    if let Some(f) = file {
        let dotted = f.trim_end_matches(".py").replace('/', ".");
        let n = dotted.split('.').count();
        if n <= parts.len() && parts[..n].iter().copied().eq(dotted.split('.')) {
            return n;
        }
    }
    // The module file that exists, longest first; a path longer than a file system takes (4096
    // bytes on Linux) or deeper than 32 packages is not looked for: a classname of a million
    // dots would cost the square of its length, in calls to the file system.
    let longest = parts
        .iter()
        .scan(0, |len, p| {
            *len += p.len() + 1;
            Some(*len)
        })
        .take_while(|len| *len <= 4096)
        .take(32)
        .count();
    for k in (1..=longest).rev() {
        if cwd.join(format!("{}.py", parts[..k].join("/"))).is_file() {
            return k;
        }
    }
    // pytest collects classes named `Test*`: the module ends before the first capitalised part.
    parts
        .iter()
        .position(|p| p.starts_with(|c: char| c.is_ascii_uppercase()))
        .unwrap_or(parts.len())
        .max(1)
}
