//! The streaming writers: one file of one table in one format, written batch by batch, never held
//! whole. Parquet through arrow-rs (`parquet::arrow::ArrowWriter`, row groups bounded by
//! [`ROW_GROUP_ROWS`], Snappy pages), CSV per RFC 4180 (the `csv` crate, CRLF), NDJSON with
//! `serde_json`. Every file's bytes are hashed (SHA-256) as they are written.
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::sync::Arc;

use arrow_array::builder::{
    BooleanBuilder, Decimal128Builder, Int64Builder, StringBuilder, TimestampMillisecondBuilder,
};
use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::{DataType, Field, Schema, TimeUnit};
use parquet::arrow::ArrowWriter;
use parquet::basic::Compression;
use parquet::file::metadata::KeyValue;
use parquet::file::properties::WriterProperties;
use sha2::{Digest, Sha256};

use crate::contract::exports::{ColumnType, ExportFormat, ExportTable, schema_json};
use crate::contract::time::rfc3339_ms;

/// Rows per Parquet row group: what a reader fetches at once for one column chunk, and what the
/// writer buffers (encoded) before it flushes.
pub const ROW_GROUP_ROWS: usize = 128 * 1024;

/// The digits of a `Wei` column's Parquet `DECIMAL(38,0)`.
pub const WEI_DIGITS: u8 = 38;

/// `digits` as the integer a `DECIMAL(38,0)` holds, if it is one.
fn wei(digits: &str) -> Option<i128> {
    let fits = !digits.is_empty() && digits.len() <= WEI_DIGITS as usize && digits.bytes().all(|b| b.is_ascii_digit());
    fits.then(|| digits.parse().ok()).flatten()
}

/// One value of a row, typed by its column's declaration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Cell {
    Null,
    Text(String),
    Integer(i64),
    Boolean(bool),
    /// Milliseconds since the epoch, UTC.
    Timestamp(i64),
    /// Decimal digits of an unsigned integer of at most [`WEI_DIGITS`] digits.
    Wei(String),
}

/// Counts and hashes what passes to the file.
struct Hashing<W> {
    inner: W,
    hasher: Sha256,
    bytes: u64,
}

impl<W: Write> Write for Hashing<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.hasher.update(&buf[..n]);
        self.bytes += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

/// What a finished file holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Written {
    pub rows: u64,
    pub bytes: u64,
    /// Lowercase hex.
    pub sha256: String,
}

enum Sink {
    Parquet(Box<ArrowWriter<Hashing<BufWriter<File>>>>, Arc<Schema>),
    Csv(Box<csv::Writer<Hashing<BufWriter<File>>>>),
    Ndjson(Hashing<BufWriter<File>>),
}

/// A file being written.
pub struct TableWriter {
    table: &'static ExportTable,
    sink: Sink,
    rows: u64,
}

fn arrow_type(ty: ColumnType) -> DataType {
    match ty {
        ColumnType::Text | ColumnType::DecimalText => DataType::Utf8,
        ColumnType::Integer => DataType::Int64,
        ColumnType::Boolean => DataType::Boolean,
        ColumnType::Timestamp => DataType::Timestamp(TimeUnit::Millisecond, Some("UTC".into())),
        ColumnType::Wei => DataType::Decimal128(WEI_DIGITS, 0),
    }
}

/// The Arrow schema of `table`, each field carrying its meaning.
pub fn arrow_schema(table: &ExportTable) -> Schema {
    let fields: Vec<Field> = table
        .columns
        .iter()
        .map(|c| Field::new(c.name, arrow_type(c.ty), c.nullable).with_metadata([("description", c.meaning)]))
        .collect();
    Schema::new(fields)
}

/// How every Parquet file of `table` is written: Snappy pages, row groups of at most
/// [`ROW_GROUP_ROWS`], the table's schema document in the key-value metadata.
pub fn parquet_properties(table: &ExportTable) -> WriterProperties {
    WriterProperties::builder()
        .set_compression(Compression::SNAPPY)
        .set_max_row_group_row_count(Some(ROW_GROUP_ROWS))
        .set_key_value_metadata(Some(vec![KeyValue::new("govdata.schema".to_owned(), schema_json(table).to_string())]))
        .build()
}

fn bad(e: impl std::fmt::Display) -> io::Error {
    io::Error::other(e.to_string())
}

impl TableWriter {
    /// Starts `format`'s file of `table` at `path` (created or truncated).
    pub fn create(path: &std::path::Path, table: &'static ExportTable, format: ExportFormat) -> io::Result<Self> {
        let out = Hashing { inner: BufWriter::new(File::create(path)?), hasher: Sha256::new(), bytes: 0 };
        let sink = match format {
            ExportFormat::Parquet => {
                let schema = Arc::new(arrow_schema(table));
                let writer = ArrowWriter::try_new(out, schema.clone(), Some(parquet_properties(table))).map_err(bad)?;
                Sink::Parquet(Box::new(writer), schema)
            }
            ExportFormat::Csv => {
                let mut w = csv::WriterBuilder::new().terminator(csv::Terminator::CRLF).from_writer(out);
                w.write_record(table.columns.iter().map(|c| c.name))?;
                Sink::Csv(Box::new(w))
            }
            ExportFormat::Ndjson => Sink::Ndjson(out),
        };
        Ok(Self { table, sink, rows: 0 })
    }

    /// Appends `rows` (each with one cell per declared column, in order).
    pub fn write(&mut self, rows: &[Vec<Cell>]) -> io::Result<()> {
        let columns = self.table.columns;
        match &mut self.sink {
            Sink::Parquet(writer, schema) => {
                let arrays: Vec<ArrayRef> =
                    columns.iter().enumerate().map(|(i, c)| column_array(c.ty, rows, i)).collect::<io::Result<_>>()?;
                let batch = RecordBatch::try_new(schema.clone(), arrays).map_err(bad)?;
                writer.write(&batch).map_err(bad)?;
            }
            Sink::Csv(w) => {
                for row in rows {
                    w.write_record(row.iter().map(text))?;
                }
            }
            Sink::Ndjson(w) => {
                for row in rows {
                    let object: serde_json::Map<String, serde_json::Value> =
                        columns.iter().zip(row).map(|(c, v)| (c.name.to_owned(), json(v))).collect();
                    serde_json::to_writer(&mut *w, &object)?;
                    w.write_all(b"\n")?;
                }
            }
        }
        self.rows += rows.len() as u64;
        Ok(())
    }

    /// Completes the file and says what it holds.
    pub fn finish(self) -> io::Result<Written> {
        let mut out = match self.sink {
            Sink::Parquet(writer, _) => writer.into_inner().map_err(bad)?,
            Sink::Csv(w) => w.into_inner().map_err(|e| bad(e.error()))?,
            Sink::Ndjson(w) => w,
        };
        out.flush()?;
        out.inner.get_ref().sync_all()?;
        Ok(Written { rows: self.rows, bytes: out.bytes, sha256: hex::encode(out.hasher.finalize()) })
    }
}

/// Column `i` of `rows` as an Arrow array of `ty`.
fn column_array(ty: ColumnType, rows: &[Vec<Cell>], i: usize) -> io::Result<ArrayRef> {
    let cells = rows.iter().map(|r| &r[i]);
    let mismatch = |c: &Cell| bad(format!("column {i} holds {c:?}, not a {}", ty.as_str()));
    Ok(match ty {
        ColumnType::Text | ColumnType::DecimalText => {
            let mut b = StringBuilder::new();
            for c in cells {
                match c {
                    Cell::Text(s) => b.append_value(s),
                    Cell::Null => b.append_null(),
                    other => return Err(mismatch(other)),
                }
            }
            Arc::new(b.finish())
        }
        ColumnType::Integer => {
            let mut b = Int64Builder::new();
            for c in cells {
                match c {
                    Cell::Integer(n) => b.append_value(*n),
                    Cell::Null => b.append_null(),
                    other => return Err(mismatch(other)),
                }
            }
            Arc::new(b.finish())
        }
        ColumnType::Boolean => {
            let mut b = BooleanBuilder::new();
            for c in cells {
                match c {
                    Cell::Boolean(v) => b.append_value(*v),
                    Cell::Null => b.append_null(),
                    other => return Err(mismatch(other)),
                }
            }
            Arc::new(b.finish())
        }
        ColumnType::Timestamp => {
            let mut b = TimestampMillisecondBuilder::new().with_timezone("UTC");
            for c in cells {
                match c {
                    Cell::Timestamp(ms) => b.append_value(*ms),
                    Cell::Null => b.append_null(),
                    other => return Err(mismatch(other)),
                }
            }
            Arc::new(b.finish())
        }
        ColumnType::Wei => {
            let mut b = Decimal128Builder::new().with_precision_and_scale(WEI_DIGITS, 0).map_err(bad)?;
            for c in cells {
                match c {
                    Cell::Wei(digits) => b.append_value(wei(digits).ok_or_else(|| {
                        bad(format!(
                            "{digits} is no integer of at most {WEI_DIGITS} digits (Parquet DECIMAL({WEI_DIGITS},0))"
                        ))
                    })?),
                    Cell::Null => b.append_null(),
                    other => return Err(mismatch(other)),
                }
            }
            Arc::new(b.finish())
        }
    })
}

/// A cell as CSV text: nulls empty, instants RFC 3339 UTC with milliseconds.
fn text(c: &Cell) -> String {
    match c {
        Cell::Null => String::new(),
        Cell::Text(s) | Cell::Wei(s) => s.clone(),
        Cell::Integer(n) => n.to_string(),
        Cell::Boolean(b) => b.to_string(),
        Cell::Timestamp(ms) => rfc3339_ms(*ms),
    }
}

/// A cell as JSON: exact numbers (decimal text, wei) stay strings.
fn json(c: &Cell) -> serde_json::Value {
    match c {
        Cell::Null => serde_json::Value::Null,
        Cell::Text(s) | Cell::Wei(s) => serde_json::Value::String(s.clone()),
        Cell::Integer(n) => serde_json::Value::from(*n),
        Cell::Boolean(b) => serde_json::Value::Bool(*b),
        Cell::Timestamp(ms) => serde_json::Value::String(rfc3339_ms(*ms)),
    }
}

#[cfg(test)]
mod tests {
    use super::wei;

    #[test]
    fn wei_takes_exactly_the_integers_a_decimal_38_holds() {
        assert_eq!(wei("0"), Some(0));
        assert_eq!(wei(&"9".repeat(38)), Some(10i128.pow(38) - 1));
        assert_eq!(wei(&"1".repeat(39)), None, "past 38 digits");
        assert_eq!(wei("-1"), None);
        assert_eq!(wei("1.5"), None);
        assert_eq!(wei(""), None);
    }
}
