//! Test ids as every report reader builds them: `file::name`, made unique within a report.

use std::collections::HashMap;

use ralph_actors::schema::test_run::TestCase;

/// Makes ids unique without losing any test: a second test of the same id (jest allows two
/// tests of one name in one block) gets ` #2`, a third ` #3`. Stable as long as the order is.
pub(crate) fn unique_ids(tests: &mut [TestCase]) {
    // Counted on borrowed ids, renamed after: duplicates are rare, copies of every id are not.
    let mut renames: Vec<(usize, u32)> = Vec::new();
    {
        let mut seen: HashMap<&str, u32> = HashMap::with_capacity(tests.len());
        for (i, t) in tests.iter().enumerate() {
            let n = seen.entry(t.id.as_str()).or_insert(0);
            *n += 1;
            if *n > 1 {
                renames.push((i, *n));
            }
        }
    }
    for (i, n) in renames {
        if let Some(t) = tests.get_mut(i) {
            t.id = format!("{} #{n}", t.id);
        }
    }
}

/// `file::name`, or whichever of the two is known.
pub(crate) fn join_id(file: Option<&str>, name: &str) -> String {
    match file {
        Some(f) if !f.is_empty() && !name.is_empty() && f != name => format!("{f}::{name}"),
        Some(f) if !f.is_empty() => f.to_string(),
        _ => name.to_string(),
    }
}
