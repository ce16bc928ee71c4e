//! [`Rowset`]: attempts with their vectors, the vectors in one buffer; and recall over rowsets
//! ([`nearest`]).
//!
//! Recall compares the query with every vector at each search. 10,000 vectors of 256
//! dimensions are 10 MB, more than this machine's caches hold, so the scan runs at the speed of
//! memory and the vectors' layout decides its cost: each in its own allocation, between the
//! strings of its attempt, a search took 0.99 ms at the median; in one buffer read front to
//! back, 0.59 ms (issue 18, `benches/vault.rs`).

use ralph_actors::schema::attempt::{FixAttempt, Scored};
use serde::{Deserialize, Serialize};

/// An attempt and its vector, as recorded and as written to the log.
pub(super) type Row = (FixAttempt, Vec<f32>);

/// Attempts and their vectors of `dims` dimensions each, scaled to length 1 (so that cosine
/// similarity is a dot product): vector `i` is `vectors[i * dims..(i + 1) * dims]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(super) struct Rowset {
    dims: usize,
    attempts: Vec<FixAttempt>,
    /// As little-endian bytes: read back in one copy, not one float at a time.
    #[serde(with = "le_floats")]
    vectors: Vec<f32>,
}

impl Rowset {
    pub fn new(dims: usize) -> Rowset {
        Rowset::with_capacity(dims, 0)
    }

    pub fn with_capacity(dims: usize, rows: usize) -> Rowset {
        Rowset {
            dims,
            attempts: Vec::with_capacity(rows),
            vectors: Vec::with_capacity(rows * dims),
        }
    }

    /// `rows` with their vectors scaled to length 1; those of another length than `dims` are
    /// left out.
    #[cfg(test)]
    pub fn from_rows(dims: usize, rows: Vec<Row>) -> Rowset {
        let mut set = Rowset::with_capacity(dims, rows.len());
        set.extend(rows);
        set
    }

    pub fn dims(&self) -> usize {
        self.dims
    }

    pub fn len(&self) -> usize {
        self.attempts.len()
    }

    pub fn is_empty(&self) -> bool {
        self.attempts.is_empty()
    }

    /// Whether this holds vectors of `dims` dimensions, one per attempt (a set read from a
    /// file is checked before it is trusted).
    pub fn fits(&self, dims: usize) -> bool {
        self.dims == dims && self.vectors.len() == self.attempts.len() * dims
    }

    pub fn attempts(&self) -> &[FixAttempt] {
        &self.attempts
    }

    /// The attempts with their vectors, in order.
    pub fn iter(&self) -> impl Iterator<Item = (&FixAttempt, &[f32])> {
        // `max(1)`: a set of no dimensions holds no vectors, and `chunks_exact(0)` panics.
        self.attempts
            .iter()
            .zip(self.vectors.chunks_exact(self.dims.max(1)))
    }

    /// Adds an attempt, its vector scaled to length 1; a vector of another length than the
    /// set's is left out, with its attempt, and `false` returned.
    pub fn push(&mut self, attempt: FixAttempt, vector: &[f32]) -> bool {
        if vector.len() != self.dims {
            return false;
        }
        let start = self.vectors.len();
        self.vectors.extend_from_slice(vector);
        scale_to_unit(&mut self.vectors[start..]);
        self.attempts.push(attempt);
        true
    }

    /// [`Rowset::push`] for each row.
    pub fn extend(&mut self, rows: impl IntoIterator<Item = Row>) {
        for (attempt, vector) in rows {
            self.push(attempt, &vector);
        }
    }

    /// Adds every row of `other`, whose vectors are already of length 1; nothing when its
    /// vectors are of other dimensions.
    pub fn append(&mut self, other: &Rowset) {
        if other.dims == self.dims {
            self.attempts.extend_from_slice(&other.attempts);
            self.vectors.extend_from_slice(&other.vectors);
        }
    }

    /// Keeps the rows whose attempt `keep` accepts, in order, in place.
    pub fn retain(&mut self, mut keep: impl FnMut(&FixAttempt) -> bool) {
        let dims = self.dims;
        let mut kept = 0;
        for i in 0..self.attempts.len() {
            if keep(&self.attempts[i]) {
                if kept != i {
                    self.attempts.swap(kept, i);
                    self.vectors
                        .copy_within(i * dims..(i + 1) * dims, kept * dims);
                }
                kept += 1;
            }
        }
        self.attempts.truncate(kept);
        self.vectors.truncate(kept * dims);
    }
}

/// Up to `limit` of the rows of `parts` (the table's, the log's) with cosine similarity ≥
/// `min_similarity` to `query` (scaled to length 1), most similar first.
pub(super) fn nearest(
    parts: &[&Rowset],
    query: &[f32],
    limit: usize,
    min_similarity: f32,
) -> Vec<Scored> {
    let mut hits: Vec<(f32, &FixAttempt)> = Vec::new();
    for rows in parts {
        for (a, v) in rows.iter() {
            let similarity = dot(query, v);
            if similarity >= min_similarity {
                hits.push((similarity, a));
            }
        }
    }
    if hits.len() > limit && limit > 0 {
        hits.select_nth_unstable_by(limit - 1, |a, b| b.0.total_cmp(&a.0));
    }
    hits.truncate(limit);
    hits.sort_by(|a, b| b.0.total_cmp(&a.0));
    hits.into_iter()
        .map(|(similarity, a)| Scored {
            attempt: a.clone(),
            similarity,
        })
        .collect()
}

/// `v` scaled to length 1; a zero vector stays zero (it is similar to nothing).
pub(super) fn unit(mut v: Vec<f32>) -> Vec<f32> {
    scale_to_unit(&mut v);
    v
}

fn scale_to_unit(v: &mut [f32]) {
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm > 0.0 {
        v.iter_mut().for_each(|x| *x /= norm);
    }
}

/// The dot product in eight independent lanes: a plain sum is one chain of dependent additions
/// that the compiler may not reorder, so it cannot use SIMD; eight partial sums can.
fn dot(a: &[f32], b: &[f32]) -> f32 {
    let mut lanes = [0.0_f32; 8];
    let (ca, cb) = (a.chunks_exact(8), b.chunks_exact(8));
    let tail: f32 = ca
        .remainder()
        .iter()
        .zip(cb.remainder())
        .map(|(x, y)| x * y)
        .sum();
    for (x, y) in ca.zip(cb) {
        for i in 0..8 {
            lanes[i] += x[i] * y[i];
        }
    }
    lanes.iter().sum::<f32>() + tail
}

/// `Vec<f32>` as serde bytes, little-endian.
mod le_floats {
    use serde::de::{Deserializer, Error, Visitor};
    use serde::Serializer;

    pub fn serialize<S: Serializer>(floats: &[f32], s: S) -> Result<S::Ok, S::Error> {
        let bytes: Vec<u8> = floats.iter().flat_map(|x| x.to_le_bytes()).collect();
        s.serialize_bytes(&bytes)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<f32>, D::Error> {
        struct Floats;
        impl Visitor<'_> for Floats {
            type Value = Vec<f32>;

            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("little-endian 32-bit floats")
            }

            fn visit_bytes<E: Error>(self, bytes: &[u8]) -> Result<Vec<f32>, E> {
                if !bytes.len().is_multiple_of(4) {
                    return Err(E::invalid_length(bytes.len(), &self));
                }
                Ok(bytes
                    .chunks_exact(4)
                    .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                    .collect())
            }
        }
        d.deserialize_bytes(Floats)
    }
}

/// An attempt for the vault's unit tests.
#[cfg(test)]
pub(super) mod fixtures {
    use ralph_actors::schema::attempt::FixAttempt;
    use ralph_actors::schema::test_run::Category;

    pub fn attempt(id: &str) -> FixAttempt {
        FixAttempt {
            id: id.into(),
            project_id: "p".into(),
            signature: "s".into(),
            category: Some(Category::Logic),
            test_ids: vec!["t::a".into()],
            hypothesis: "h".into(),
            diff: "d".into(),
            success: true,
            timestamp_ms: 7,
            tokens: 3,
            cost_usd: 0.5,
            model: "m".into(),
            language: "python".into(),
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::fixtures::attempt;
    use super::*;

    fn ids(set: &Rowset) -> Vec<&str> {
        set.attempts().iter().map(|a| a.id.as_str()).collect()
    }

    #[test]
    fn dot_is_the_plain_sum_of_products_at_any_length() {
        for n in [0, 1, 7, 8, 9, 256, 257] {
            let a: Vec<f32> = (0..n).map(|i| (i as f32 * 0.37).sin()).collect();
            let b: Vec<f32> = (0..n).map(|i| (i as f32 * 0.11).cos()).collect();
            let plain: f32 = a.iter().zip(&b).map(|(x, y)| x * y).sum();
            assert!((dot(&a, &b) - plain).abs() < 1e-4, "{n}");
        }
        assert_eq!(unit(vec![3.0, 4.0]), [0.6, 0.8]);
        assert_eq!(unit(vec![0.0, 0.0]), [0.0, 0.0]);
    }

    /// Each attempt keeps its own vector through pushes, removals and appends.
    #[test]
    fn rows_keep_their_vectors_through_retain_and_append() {
        let mut set = Rowset::from_rows(
            2,
            vec![
                (attempt("a"), vec![3.0, 4.0]),
                (attempt("wide"), vec![1.0, 0.0, 0.0]),
                (attempt("b"), vec![0.0, 2.0]),
                (attempt("c"), vec![5.0, 0.0]),
            ],
        );
        assert_eq!(
            ids(&set),
            ["a", "b", "c"],
            "a vector of 3 is not this set's"
        );
        set.retain(|a| a.id != "b");
        let mut more = Rowset::new(2);
        assert!(more.push(attempt("d"), &[0.0, -1.0]));
        set.append(&more);
        let rows: Vec<(&str, &[f32])> = set.iter().map(|(a, v)| (a.id.as_str(), v)).collect();
        assert_eq!(
            rows,
            [
                ("a", &[0.6, 0.8][..]),
                ("c", &[1.0, 0.0][..]),
                ("d", &[0.0, -1.0][..])
            ]
        );
        assert!(set.fits(2) && !set.fits(3));
        let back: Rowset = postcard::from_bytes(&postcard::to_stdvec(&set).unwrap()).unwrap();
        assert_eq!(back, set);
    }

    #[test]
    fn nearest_keeps_the_threshold_and_the_order_across_parts() {
        let table = Rowset::from_rows(
            2,
            vec![
                (attempt("x"), vec![1.0, 0.0]),
                (attempt("y"), vec![0.0, 1.0]),
            ],
        );
        let log = Rowset::from_rows(2, vec![(attempt("xy"), vec![1.0, 1.0])]);
        let ids = |found: Vec<Scored>| -> Vec<String> {
            found.into_iter().map(|s| s.attempt.id).collect()
        };
        assert_eq!(
            ids(nearest(&[&table, &log], &[1.0, 0.0], 5, 0.5)),
            ["x", "xy"]
        );
        assert_eq!(ids(nearest(&[&table, &log], &[1.0, 0.0], 1, 0.0)), ["x"]);
        assert_eq!(
            ids(nearest(&[&log, &table], &[0.0, 1.0], 5, 0.5)),
            ["y", "xy"]
        );
    }
}
