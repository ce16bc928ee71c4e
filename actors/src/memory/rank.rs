//! How recalled attempts are ranked, and how similar two vectors are.

use std::collections::HashMap;

use crate::schema::attempt::{Origin, RecalledFix, Scored};

/// Ranks recalled attempts: by their signature's success rate among the candidates, then
/// successful before failed, then the most recent, then the most similar; at most `limit`.
pub fn rank(candidates: Vec<(Scored, Origin)>, limit: usize) -> Vec<RecalledFix> {
    let mut patterns: HashMap<&str, (u32, u32)> = HashMap::new();
    for (scored, _) in &candidates {
        let entry = patterns
            .entry(scored.attempt.signature.as_str())
            .or_default();
        entry.0 += u32::from(scored.attempt.success);
        entry.1 += 1;
    }
    let rates: HashMap<String, (f64, u32)> = patterns
        .into_iter()
        .map(|(sig, (ok, all))| (sig.to_string(), (f64::from(ok) / f64::from(all), all)))
        .collect();
    let mut recalled: Vec<RecalledFix> = candidates
        .into_iter()
        .map(|(scored, origin)| {
            let (success_rate, pattern_attempts) = rates
                .get(&scored.attempt.signature)
                .copied()
                .unwrap_or((0.0, 1));
            RecalledFix {
                attempt: scored.attempt,
                similarity: scored.similarity,
                success_rate,
                pattern_attempts,
                origin,
            }
        })
        .collect();
    recalled.sort_by(|a, b| {
        b.success_rate
            .total_cmp(&a.success_rate)
            .then(b.attempt.success.cmp(&a.attempt.success))
            .then(b.attempt.timestamp_ms.cmp(&a.attempt.timestamp_ms))
            .then(b.similarity.total_cmp(&a.similarity))
            .then(a.attempt.id.cmp(&b.attempt.id))
    });
    recalled.truncate(limit);
    recalled
}

/// Cosine similarity of two vectors of the same length (0 when either is all zeros).
pub fn cosine(a: &[f32], b: &[f32]) -> f32 {
    let (mut dot, mut na, mut nb) = (0.0f32, 0.0f32, 0.0f32);
    for (x, y) in a.iter().zip(b) {
        dot += x * y;
        na += x * x;
        nb += y * y;
    }
    if na == 0.0 || nb == 0.0 {
        return 0.0;
    }
    dot / (na.sqrt() * nb.sqrt())
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::schema::attempt::FixAttempt;
    use crate::schema::test_run::Category;

    pub(crate) fn attempt(id: &str, signature: &str, success: bool, at: i64) -> FixAttempt {
        FixAttempt {
            id: id.into(),
            project_id: "p".into(),
            signature: signature.into(),
            category: Some(Category::Logic),
            test_ids: vec!["t".into()],
            hypothesis: format!("hypothesis {id}"),
            diff: format!("-old {id}\n+new {id}\n"),
            success,
            timestamp_ms: at,
            tokens: 100,
            cost_usd: 0.01,
            model: "openai/gpt-4.1".into(),
            language: "python".into(),
        }
    }

    fn scored(a: FixAttempt, similarity: f32) -> (Scored, Origin) {
        (
            Scored {
                attempt: a,
                similarity,
            },
            Origin::Project,
        )
    }

    #[test]
    fn ranking_is_success_rate_then_success_then_recency() {
        let candidates = vec![
            // Pattern A: 1 of 3 worked.
            scored(attempt("a1", "A", false, 10), 1.0),
            scored(attempt("a2", "A", true, 5), 1.0),
            scored(attempt("a3", "A", false, 30), 1.0),
            // Pattern B: 2 of 2 worked, less similar.
            scored(attempt("b1", "B", true, 1), 0.9),
            scored(attempt("b2", "B", true, 2), 0.9),
            // Pattern C: never worked, most recent.
            scored(attempt("c1", "C", false, 99), 0.95),
        ];
        let ranked = rank(candidates, 5);
        let ids: Vec<&str> = ranked.iter().map(|r| r.attempt.id.as_str()).collect();
        assert_eq!(ids, ["b2", "b1", "a2", "a3", "a1"]);
        assert_eq!(ranked[0].success_rate, 1.0);
        assert_eq!(ranked[0].pattern_attempts, 2);
        assert!((ranked[2].success_rate - 1.0 / 3.0).abs() < 1e-9);
        assert_eq!(ranked[2].pattern_attempts, 3);
    }

    #[test]
    fn cosine_of_equal_opposite_and_zero_vectors() {
        assert!((cosine(&[1.0, 2.0], &[2.0, 4.0]) - 1.0).abs() < 1e-6);
        assert!((cosine(&[1.0, 0.0], &[-1.0, 0.0]) + 1.0).abs() < 1e-6);
        assert_eq!(cosine(&[0.0, 0.0], &[1.0, 0.0]), 0.0);
    }
}
