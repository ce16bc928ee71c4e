//! The table's columns: the Arrow schema of a vault table, and attempts with their vectors
//! turned into record batches and back.

use std::sync::Arc;

use arrow::array::{
    Array, ArrayRef, BooleanArray, FixedSizeListArray, Float32Array, Float64Array, Int64Array,
    ListArray, ListBuilder, RecordBatch, StringArray, StringBuilder, UInt64Array,
};
use arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use ralph_actors::schema::attempt::FixAttempt;
use ralph_actors::schema::test_run::Category;

use super::error::{Result, VaultError};
use super::rowset::Rowset;

/// The layout of a table whose vectors have `dims` dimensions.
pub(super) fn schema(dims: usize) -> Result<SchemaRef> {
    let dims = i32::try_from(dims).map_err(|_| VaultError::Schema(format!("{dims} dimensions")))?;
    let text = |name: &str| Field::new(name, DataType::Utf8, false);
    Ok(Arc::new(Schema::new(vec![
        text("id"),
        text("project_id"),
        text("signature"),
        Field::new("category", DataType::Utf8, true),
        Field::new(
            "test_ids",
            DataType::List(Arc::new(Field::new("item", DataType::Utf8, true))),
            false,
        ),
        text("hypothesis"),
        text("diff"),
        Field::new("success", DataType::Boolean, false),
        Field::new("timestamp_ms", DataType::Int64, false),
        Field::new("tokens", DataType::UInt64, false),
        Field::new("cost_usd", DataType::Float64, false),
        text("model"),
        text("language"),
        Field::new(
            "vector",
            DataType::FixedSizeList(Arc::new(Field::new("item", DataType::Float32, true)), dims),
            false,
        ),
    ])))
}

/// `rows` as one record batch of a table with `schema`.
pub(super) fn batch(schema: &SchemaRef, rows: &Rowset) -> Result<RecordBatch> {
    let attempts = rows.attempts();
    let text = |f: fn(&FixAttempt) -> &str| -> ArrayRef {
        Arc::new(StringArray::from_iter_values(attempts.iter().map(f)))
    };
    let mut tests = ListBuilder::new(StringBuilder::new());
    for a in attempts {
        for id in &a.test_ids {
            tests.values().append_value(id);
        }
        tests.append(true);
    }
    let dims = i32::try_from(rows.dims()).map_err(|_| VaultError::Schema("dims".into()))?;
    let values = Float32Array::from_iter_values(rows.iter().flat_map(|(_, v)| v.iter().copied()));
    let vectors = FixedSizeListArray::try_new(
        Arc::new(Field::new("item", DataType::Float32, true)),
        dims,
        Arc::new(values),
        None,
    )?;
    let columns: Vec<ArrayRef> = vec![
        text(|a| &a.id),
        text(|a| &a.project_id),
        text(|a| &a.signature),
        Arc::new(StringArray::from_iter(
            attempts.iter().map(|a| a.category.map(|c| c.as_str())),
        )),
        Arc::new(tests.finish()),
        text(|a| &a.hypothesis),
        text(|a| &a.diff),
        Arc::new(BooleanArray::from_iter(
            attempts.iter().map(|a| Some(a.success)),
        )),
        Arc::new(Int64Array::from_iter_values(
            attempts.iter().map(|a| a.timestamp_ms),
        )),
        Arc::new(UInt64Array::from_iter_values(
            attempts.iter().map(|a| a.tokens),
        )),
        Arc::new(Float64Array::from_iter_values(
            attempts.iter().map(|a| a.cost_usd),
        )),
        text(|a| &a.model),
        text(|a| &a.language),
        Arc::new(vectors),
    ];
    Ok(RecordBatch::try_new(schema.clone(), columns)?)
}

/// Adds the attempts of a batch with their vectors (scaled to length 1) to `rows`.
pub(super) fn read_into(rows: &mut Rowset, batch: &RecordBatch) -> Result<()> {
    let dims = rows.dims();
    let vectors = batch
        .column_by_name("vector")
        .and_then(|c| c.as_any().downcast_ref::<FixedSizeListArray>())
        .ok_or_else(|| VaultError::Schema("column vector is missing or mistyped".into()))?;
    let values = vectors
        .values()
        .as_any()
        .downcast_ref::<Float32Array>()
        .ok_or_else(|| VaultError::Schema("vector holds no 32-bit floats".into()))?;
    for (i, attempt) in attempts(batch)?.into_iter().enumerate() {
        let start = vectors.value_offset(i) as usize;
        let vector = values
            .values()
            .get(start..start + dims)
            .ok_or_else(|| VaultError::Schema("a vector is shorter than the table's".into()))?;
        rows.push(attempt, vector);
    }
    Ok(())
}

/// The attempts of a batch read back (every column but the vector).
fn attempts(batch: &RecordBatch) -> Result<Vec<FixAttempt>> {
    fn column<'a, T: 'static>(batch: &'a RecordBatch, name: &str) -> Result<&'a T> {
        batch
            .column_by_name(name)
            .and_then(|c| c.as_any().downcast_ref::<T>())
            .ok_or_else(|| VaultError::Schema(format!("column {name} is missing or mistyped")))
    }
    let text = |name| column::<StringArray>(batch, name);
    let (id, project, signature, category) = (
        text("id")?,
        text("project_id")?,
        text("signature")?,
        text("category")?,
    );
    let (hypothesis, diff, model, language) = (
        text("hypothesis")?,
        text("diff")?,
        text("model")?,
        text("language")?,
    );
    let tests = column::<ListArray>(batch, "test_ids")?;
    let success = column::<BooleanArray>(batch, "success")?;
    let timestamp = column::<Int64Array>(batch, "timestamp_ms")?;
    let tokens = column::<UInt64Array>(batch, "tokens")?;
    let cost = column::<Float64Array>(batch, "cost_usd")?;
    let mut out = Vec::with_capacity(batch.num_rows());
    for i in 0..batch.num_rows() {
        let ids = tests.value(i);
        let ids = ids
            .as_any()
            .downcast_ref::<StringArray>()
            .ok_or_else(|| VaultError::Schema("test_ids is not a list of strings".into()))?;
        out.push(FixAttempt {
            id: id.value(i).to_string(),
            project_id: project.value(i).to_string(),
            signature: signature.value(i).to_string(),
            category: (!category.is_null(i))
                .then(|| Category::parse(category.value(i)))
                .flatten(),
            test_ids: ids.iter().flatten().map(str::to_string).collect(),
            hypothesis: hypothesis.value(i).to_string(),
            diff: diff.value(i).to_string(),
            success: success.value(i),
            timestamp_ms: timestamp.value(i),
            tokens: tokens.value(i),
            cost_usd: cost.value(i),
            model: model.value(i).to_string(),
            language: language.value(i).to_string(),
        });
    }
    Ok(out)
}
