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
use arrow_array::cast::AsArray;
use arrow_array::{Array, ArrayRef, BooleanArray, Int64Array, RecordBatch, StringArray, TimestampMillisecondArray};
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

/// The time zone of every `Timestamp` column.
const UTC: &str = "UTC";

/// One batch of a table's rows as its columns: one Arrow array per declared column, in order.
/// Text and decimal text are `Utf8`, a `Wei` column its digits as `Utf8` too (made the
/// `DECIMAL(38,0)` Parquet holds only by the Parquet writer, so CSV and NDJSON write the digits
/// as stored), integers `Int64`, booleans `Boolean`, instants milliseconds in [`UTC`]. Readers
/// build them directly from the store's rows, or from [`Cell`]s with [`columns`].
pub type Columns = Vec<ArrayRef>;

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
        ColumnType::Timestamp => DataType::Timestamp(TimeUnit::Millisecond, Some(UTC.into())),
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

    /// Appends one batch of rows, as its [`Columns`].
    pub fn write(&mut self, columns: &[ArrayRef]) -> io::Result<()> {
        let declared = self.table.columns;
        let rows = columns.first().map_or(0, |c| c.len());
        if columns.len() != declared.len() || columns.iter().any(|c| c.len() != rows) {
            return Err(bad(format!(
                "a batch of {} columns, not the {} declared, or of uneven rows",
                columns.len(),
                declared.len()
            )));
        }
        match &mut self.sink {
            Sink::Parquet(writer, schema) => {
                let arrays: Vec<ArrayRef> = declared
                    .iter()
                    .zip(columns)
                    .map(|(c, a)| match c.ty {
                        ColumnType::Wei => decimal(a),
                        _ => Ok(a.clone()),
                    })
                    .collect::<io::Result<_>>()?;
                let batch = RecordBatch::try_new(schema.clone(), arrays).map_err(bad)?;
                writer.write(&batch).map_err(bad)?;
            }
            Sink::Csv(w) => {
                let views = views(self.table, columns)?;
                let mut buf = String::new();
                for i in 0..rows {
                    for v in &views {
                        w.write_field(v.value(i).text(&mut buf))?;
                    }
                    w.write_record(None::<&[u8]>)?;
                }
            }
            Sink::Ndjson(w) => {
                let views = views(self.table, columns)?;
                for i in 0..rows {
                    let object: serde_json::Map<String, serde_json::Value> =
                        declared.iter().zip(&views).map(|(c, v)| (c.name.to_owned(), v.value(i).json())).collect();
                    serde_json::to_writer(&mut *w, &object)?;
                    w.write_all(b"\n")?;
                }
            }
        }
        self.rows += rows as u64;
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

/// `rows` (each with one cell per column of `table`, in order) as [`Columns`].
pub fn columns(table: &ExportTable, rows: &[Vec<Cell>]) -> io::Result<Columns> {
    table.columns.iter().enumerate().map(|(i, c)| column_array(c.ty, rows, i)).collect()
}

/// Column `i` of `rows` as the Arrow array [`Columns`] holds for `ty`.
fn column_array(ty: ColumnType, rows: &[Vec<Cell>], i: usize) -> io::Result<ArrayRef> {
    let cells = rows.iter().map(|r| &r[i]);
    let mismatch = |c: &Cell| bad(format!("column {i} holds {c:?}, not a {}", ty.as_str()));
    Ok(match ty {
        ColumnType::Text | ColumnType::DecimalText | ColumnType::Wei => {
            let mut b = StringBuilder::new();
            for c in cells {
                match (c, ty) {
                    (Cell::Text(s), ColumnType::Text | ColumnType::DecimalText) | (Cell::Wei(s), ColumnType::Wei) => {
                        b.append_value(s)
                    }
                    (Cell::Null, _) => b.append_null(),
                    (other, _) => return Err(mismatch(other)),
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
            let mut b = timestamps(rows.len());
            for c in cells {
                match c {
                    Cell::Timestamp(ms) => b.append_value(*ms),
                    Cell::Null => b.append_null(),
                    other => return Err(mismatch(other)),
                }
            }
            Arc::new(b.finish())
        }
    })
}

/// A builder of a `Timestamp` column as [`Columns`] holds it (and Parquet writes it).
pub fn timestamps(capacity: usize) -> TimestampMillisecondBuilder {
    TimestampMillisecondBuilder::with_capacity(capacity).with_timezone(UTC)
}

/// A `Wei` column's digits as Parquet's `DECIMAL(38,0)`.
fn decimal(digits: &ArrayRef) -> io::Result<ArrayRef> {
    let digits = digits.as_string_opt::<i32>().ok_or_else(|| bad("a wei column not of text"))?;
    let mut b = Decimal128Builder::with_capacity(digits.len()).with_precision_and_scale(WEI_DIGITS, 0).map_err(bad)?;
    for d in digits {
        match d {
            Some(d) => b.append_value(wei(d).ok_or_else(|| {
                bad(format!("{d} is no integer of at most {WEI_DIGITS} digits (Parquet DECIMAL({WEI_DIGITS},0))"))
            })?),
            None => b.append_null(),
        }
    }
    Ok(Arc::new(b.finish()))
}

/// A column of a batch, typed by its declaration.
enum View<'a> {
    Text(&'a StringArray),
    Integer(&'a Int64Array),
    Boolean(&'a BooleanArray),
    Timestamp(&'a TimestampMillisecondArray),
}

/// The columns of a batch of `table`, each as its declared type.
fn views<'a>(table: &ExportTable, columns: &'a [ArrayRef]) -> io::Result<Vec<View<'a>>> {
    table
        .columns
        .iter()
        .zip(columns)
        .map(|(c, a)| {
            let wrong = || bad(format!("the column {} is {}, not a {}", c.name, a.data_type(), c.ty.as_str()));
            Ok(match c.ty {
                ColumnType::Text | ColumnType::DecimalText | ColumnType::Wei => {
                    View::Text(a.as_string_opt::<i32>().ok_or_else(wrong)?)
                }
                ColumnType::Integer => View::Integer(a.as_primitive_opt().ok_or_else(wrong)?),
                ColumnType::Boolean => View::Boolean(a.as_boolean_opt().ok_or_else(wrong)?),
                ColumnType::Timestamp => View::Timestamp(a.as_primitive_opt().ok_or_else(wrong)?),
            })
        })
        .collect()
}

impl View<'_> {
    fn value(&self, i: usize) -> Value<'_> {
        let null = match self {
            View::Text(a) => a.is_null(i),
            View::Integer(a) => a.is_null(i),
            View::Boolean(a) => a.is_null(i),
            View::Timestamp(a) => a.is_null(i),
        };
        if null {
            return Value::Null;
        }
        match self {
            View::Text(a) => Value::Text(a.value(i)),
            View::Integer(a) => Value::Integer(a.value(i)),
            View::Boolean(a) => Value::Boolean(a.value(i)),
            View::Timestamp(a) => Value::Timestamp(a.value(i)),
        }
    }
}

/// One value of a batch, borrowed.
#[derive(Clone, Copy)]
enum Value<'a> {
    Null,
    /// Text, decimal text, or a wei integer's digits.
    Text(&'a str),
    Integer(i64),
    Boolean(bool),
    /// Milliseconds since the epoch, UTC.
    Timestamp(i64),
}

impl<'a> Value<'a> {
    /// As CSV text: nulls empty, instants RFC 3339 UTC with milliseconds; `buf` holds what is
    /// not already text.
    fn text<'b>(self, buf: &'b mut String) -> &'b str
    where
        'a: 'b,
    {
        use std::fmt::Write as _;
        buf.clear();
        match self {
            Value::Null => {}
            Value::Text(s) => return s,
            Value::Integer(n) => write!(buf, "{n}").expect("a String takes every write"),
            Value::Boolean(b) => write!(buf, "{b}").expect("a String takes every write"),
            Value::Timestamp(ms) => buf.push_str(&rfc3339_ms(ms)),
        }
        buf
    }

    /// As JSON: exact numbers (decimal text, wei) stay strings.
    fn json(&self) -> serde_json::Value {
        match self {
            Value::Null => serde_json::Value::Null,
            Value::Text(s) => serde_json::Value::String((*s).to_owned()),
            Value::Integer(n) => serde_json::Value::from(*n),
            Value::Boolean(b) => serde_json::Value::Bool(*b),
            Value::Timestamp(ms) => serde_json::Value::String(rfc3339_ms(*ms)),
        }
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
