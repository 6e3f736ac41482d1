//! `GET /v2/exports`, `GET /v2/exports/{daoId}/{file}` and `GET /v2/export-tables`: whole tables
//! of a DAO as files (Parquet, CSV, NDJSON), the list of them, and their schemas.
//!
//! A download is served as data tools expect of a file over HTTP: `Content-Length`, a strong
//! `ETag` from the file's SHA-256 (an unchanged table keeps it across publications),
//! `If-None-Match` (304), single `Range` requests with `If-Range` (206, 416), `Accept-Ranges`,
//! `Cache-Control: no-cache` (a revision may change the file at any time: revalidate, cheaply),
//! and the text formats gzip-encoded on `Accept-Encoding: gzip` (a copy kept beside the file,
//! so that ranges and lengths hold for it too).
use std::io::SeekFrom;
use std::time::Duration;

use headers::{ETag, HeaderMapExt, IfNoneMatch, IfRange, Range};
use poem::{Body, IntoResponse, Request, Response, http::StatusCode, http::header, web::Data};
use poem_openapi::{
    ApiResponse, Enum, Object, OpenApi,
    param::{Path, Query},
    payload::Json,
    registry::{MetaHeader, MetaMediaType, MetaResponse, MetaResponses, MetaSchema, MetaSchemaRef, Registry},
    types::Type,
};
use tokio::io::{AsyncReadExt, AsyncSeekExt};

use super::{Listing, V2Tag};
use crate::api::AppState;
use crate::contract::{
    api_error::ApiError,
    cursor_shape::cursor_shape,
    envelope::{CacheStatus, Freshness, V2List, V2Single},
    errors::{ErrorCode, FieldError, PROBLEM_CONTENT_TYPE, ParamLocation, Problem},
    exports::{
        self as decl, BUILD_WAIT_SECONDS, ColumnType, ExportFile, ExportFormat, ExportTable, GRANT_HEADER,
        GRANT_SECONDS,
    },
    limits::MostLists,
    operations::{ExportTablesListV2, ExportsGetV2, ExportsListV2},
    params::{DAO_ID_PARAM, DaoFilter, DaoIdParam, DaoScope, ExportFileParam, V2Limit},
    time::{Timestamp, now_ms},
};
use crate::edge::payment::PaidByPayment;
use crate::exports::files::ReadyFile;
use crate::store::{self, exports::ExportState, keysets::ExportAfter};

/// Whether a file holds the DAO's serving revision.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Enum)]
#[oai(rename_all = "snake_case")]
pub enum ExportStatus {
    /// Built for the DAO's serving revision: `rows`, `bytes` and `sha256` are the file's.
    Ready,
    /// Not built for the serving revision yet: the first download builds it (or waits while
    /// another request does), and the list then shows it.
    OnRequest,
}

/// One downloadable file of a DAO.
#[derive(Debug, Clone, PartialEq, Eq, Object)]
#[oai(rename_all = "camelCase", skip_serializing_if_is_none, example)]
pub struct ExportFileItem {
    pub dao_id: String,
    /// The table (see `GET /v2/export-tables`).
    pub table: String,
    pub format: ExportFormat,
    /// Where to download it.
    pub url: String,
    /// The media type it is served as.
    pub media_type: String,
    /// The table's columns, types and meanings.
    pub schema_url: String,
    pub status: ExportStatus,
    /// The DAO revision the file holds (the one that last changed the DAO); absent until built.
    pub revision: Option<i64>,
    /// The revision whose publication last changed the file's bytes (an unchanged table keeps
    /// its bytes, `sha256` and `ETag` across later revisions).
    pub changed_in_revision: Option<i64>,
    /// The data time of the revision the file holds.
    pub data_as_of: Option<Timestamp>,
    pub rows: Option<i64>,
    pub bytes: Option<i64>,
    /// Lowercase hex SHA-256 of the file's bytes (its `ETag` is this, quoted).
    pub sha256: Option<String>,
    /// The size of the gzip-encoded text file (`Accept-Encoding: gzip`).
    pub gzip_bytes: Option<i64>,
}

impl poem_openapi::types::Example for ExportFileItem {
    fn example() -> Self {
        Self {
            dao_id: "uniswap".to_owned(),
            table: "votes".to_owned(),
            format: ExportFormat::Parquet,
            url: "/v2/exports/uniswap/votes.parquet".to_owned(),
            media_type: ExportFormat::Parquet.media_type().to_owned(),
            schema_url: "/v2/export-tables#votes".to_owned(),
            status: ExportStatus::Ready,
            revision: Some(42),
            changed_in_revision: Some(40),
            data_as_of: Some(Timestamp::from_ms(1_764_000_000_000)),
            rows: Some(12_418),
            bytes: Some(1_048_210),
            sha256: Some("9f2c1e0b7a5d4c3b2a19081726354453627180918a7b6c5d4e3f2a1b0c9d8e7f".to_owned()),
            gzip_bytes: None,
        }
    }
}

/// One column of an exported table.
#[derive(Debug, Clone, PartialEq, Eq, Object)]
#[oai(rename_all = "camelCase")]
pub struct ExportColumnItem {
    pub name: String,
    /// `string`, `int64`, `boolean`, `timestamp[ms, UTC]` (RFC 3339 with milliseconds in the text
    /// formats), `decimal-string` (an exact decimal as text) or `decimal(38,0)` (an integer in a
    /// token's smallest unit: Parquet `DECIMAL(38,0)`, digits in the text formats).
    #[oai(rename = "type")]
    pub ty: String,
    /// Whether a row may have no value here (null; an empty field in CSV).
    pub optional: bool,
    pub description: String,
}

/// One exported table: what a row is, the order rows are written in, and its columns.
#[derive(Debug, Clone, PartialEq, Eq, Object)]
#[oai(rename_all = "camelCase", example)]
pub struct ExportTableItem {
    pub table: String,
    pub description: String,
    pub order: String,
    pub columns: Vec<ExportColumnItem>,
}

impl poem_openapi::types::Example for ExportTableItem {
    fn example() -> Self {
        Self::of(&decl::VOTES)
    }
}

impl ExportTableItem {
    fn of(t: &ExportTable) -> Self {
        Self {
            table: t.name.to_owned(),
            description: t.meaning.to_owned(),
            order: t.order.to_owned(),
            columns: t
                .columns
                .iter()
                .map(|c| ExportColumnItem {
                    name: c.name.to_owned(),
                    ty: ColumnType::as_str(c.ty).to_owned(),
                    optional: c.nullable,
                    description: c.meaning.to_owned(),
                })
                .collect(),
        }
    }
}

/// Every exported table.
#[derive(Debug, Clone, PartialEq, Eq, Object)]
#[oai(rename_all = "camelCase", example)]
pub struct ExportTables {
    pub tables: Vec<ExportTableItem>,
}

impl poem_openapi::types::Example for ExportTables {
    fn example() -> Self {
        Self { tables: vec![ExportTableItem::of(&decl::VOTES)] }
    }
}

/// A file, or what a conditional or range request of it answers.
pub enum Download {
    Whole(Served),
    Part(Served, String),
    NotModified(String),
    Unsatisfiable(Problem, u64),
}

/// The bytes of a file a response carries, and its headers.
pub struct Served {
    body: Body,
    length: u64,
    media_type: &'static str,
    etag: String,
    gzip: bool,
    text: bool,
    disposition: String,
    grant: Option<String>,
}

fn header_meta(name: &str, description: &str, ty: &'static str) -> MetaHeader {
    MetaHeader {
        name: name.to_owned(),
        description: Some(description.to_owned()),
        required: false,
        deprecated: false,
        schema: MetaSchemaRef::Inline(Box::new(MetaSchema::new(ty))),
    }
}

fn file_headers(part: bool) -> Vec<MetaHeader> {
    let mut headers = vec![
        header_meta("ETag", "The file's SHA-256, quoted (`-gzip` added for the gzip encoding).", "string"),
        header_meta("Content-Length", "The bytes of this answer.", "integer"),
        header_meta("Accept-Ranges", "`bytes`: single ranges are served (206).", "string"),
        header_meta(
            "Cache-Control",
            "`no-cache` (`private, no-cache` for paid answers): revalidate with `If-None-Match`.",
            "string",
        ),
        header_meta(
            "Content-Encoding",
            "`gzip` when a text file was asked for with `Accept-Encoding: gzip`.",
            "string",
        ),
        header_meta(
            GRANT_HEADER,
            "On an answer paid with x402: send this value back in the request header of the same name to read the \
             same file's ranges for the next {{EXPORT_GRANT_SECONDS}} s without paying again.",
            "string",
        ),
    ];
    if part {
        headers.push(header_meta("Content-Range", "`bytes first-last/size` of the range served.", "string"));
    }
    headers
}

/// The body of a file of `format`, with an example of its first bytes.
fn binary(format: ExportFormat) -> MetaSchemaRef {
    let example = match format {
        ExportFormat::Parquet => "PAR1… (a Parquet file: row groups, then the footer with the schema, ending PAR1)",
        ExportFormat::Csv => {
            "dao_id,proposal_key,proposal_source,proposal_external_id,voter,choice,voting_power\r\n\
                              uniswap,p_2d1f…,snapshot,0x48e5…,0x683a4f9915d6216f73d6df50151725036bd26c02,1,\
                              10251.0873\r\n"
        }
        ExportFormat::Ndjson => {
            "{\"dao_id\":\"uniswap\",\"proposal_key\":\"p_2d1f…\",\"voter\":\
                                 \"0x683a4f9915d6216f73d6df50151725036bd26c02\",\"voting_power\":\"10251.0873\"}\n"
        }
    };
    MetaSchemaRef::Inline(Box::new(MetaSchema {
        format: Some("binary"),
        example: Some(serde_json::Value::String(example.to_owned())),
        ..MetaSchema::new("string")
    }))
}

fn file_media() -> Vec<MetaMediaType> {
    ExportFormat::ALL.iter().map(|f| MetaMediaType { content_type: media_type_key(*f), schema: binary(*f) }).collect()
}

/// The media type without its parameters (`text/csv`), as the document keys it: the declared
/// one, read from `contract::exports`.
fn media_type_key(f: ExportFormat) -> &'static str {
    let full: &'static str = f.media_type();
    full.split(';').next().unwrap_or(full)
}

impl ApiResponse for Download {
    fn meta() -> MetaResponses {
        MetaResponses {
            responses: vec![
                MetaResponse {
                    description: "The whole file, in the media type of its format.",
                    status: Some(200),
                    status_range: None,
                    content: file_media(),
                    headers: file_headers(false),
                },
                MetaResponse {
                    description: "The range asked for with `Range: bytes=first-last` (one range; `If-Range` with the \
                                  file's `ETag` makes it conditional: a changed file is answered whole, 200).",
                    status: Some(206),
                    status_range: None,
                    content: file_media(),
                    headers: file_headers(true),
                },
                MetaResponse {
                    description: "The file still has the `ETag` sent in `If-None-Match`.",
                    status: Some(304),
                    status_range: None,
                    content: vec![],
                    headers: vec![header_meta("ETag", "The file's `ETag`.", "string")],
                },
                MetaResponse {
                    description: "VALIDATION_ERROR: no part of the range asked for lies within the file; \
                                  `Content-Range: bytes */size` gives its size.",
                    status: Some(416),
                    status_range: None,
                    content: vec![MetaMediaType {
                        content_type: PROBLEM_CONTENT_TYPE,
                        schema: MetaSchemaRef::Reference("Problem".to_owned()),
                    }],
                    headers: vec![header_meta("Content-Range", "`bytes */size`.", "string")],
                },
            ],
        }
    }

    fn register(registry: &mut Registry) {
        Problem::register(registry);
    }
}

impl Served {
    fn respond(self, status: StatusCode, range: Option<String>) -> Response {
        let mut b = Response::builder()
            .status(status)
            .content_type(self.media_type)
            .header(header::CONTENT_LENGTH, self.length)
            .header(header::ETAG, self.etag)
            .header(header::ACCEPT_RANGES, "bytes")
            .header(header::CACHE_CONTROL, "no-cache")
            .header(header::CONTENT_DISPOSITION, self.disposition);
        if self.text {
            b = b.header(header::VARY, "accept-encoding");
        }
        if self.gzip {
            b = b.header(header::CONTENT_ENCODING, "gzip");
        }
        if let Some(range) = range {
            b = b.header(header::CONTENT_RANGE, range);
        }
        if let Some(grant) = self.grant {
            b = b.header(GRANT_HEADER, grant);
        }
        b.body(self.body)
    }
}

impl IntoResponse for Download {
    fn into_response(self) -> Response {
        match self {
            Self::Whole(s) => s.respond(StatusCode::OK, None),
            Self::Part(s, range) => s.respond(StatusCode::PARTIAL_CONTENT, Some(range)),
            Self::NotModified(etag) => Response::builder()
                .status(StatusCode::NOT_MODIFIED)
                .header(header::ETAG, etag)
                .header(header::CACHE_CONTROL, "no-cache")
                .finish(),
            Self::Unsatisfiable(problem, size) => {
                let mut r = problem.into_response_with("");
                if let Ok(v) = format!("bytes */{size}").parse() {
                    r.headers_mut().insert(header::CONTENT_RANGE, v);
                }
                r
            }
        }
    }
}

/// Whether `accept` (an `Accept-Encoding`) takes gzip.
fn accepts_gzip(accept: Option<&str>) -> bool {
    accept.is_some_and(|a| {
        a.split(',').any(|part| {
            let mut it = part.split(';');
            let coding = it.next().unwrap_or_default().trim();
            let q = it.find_map(|p| p.trim().strip_prefix("q=")).map_or(1.0, |q| q.trim().parse().unwrap_or(0.0));
            (coding.eq_ignore_ascii_case("gzip") || coding == "*") && q > 0.0
        })
    })
}

fn file_url(dao_id: &str, file: &ExportFile) -> String {
    format!("/v2/exports/{dao_id}/{}", file.name())
}

cursor_shape! {
    /// What a cursor of `GET /v2/exports` is bound to.
    ExportsShape<'a> for ExportsListV2 { dao: &'a DaoScope => DAO_ID_PARAM }
}

pub struct Api;

#[OpenApi(prefix_path = "/v2", tag = "V2Tag::Exports")]
impl Api {
    /// List the export files
    ///
    /// Every downloadable file: for each covered DAO (or the one `daoId` names), each table in
    /// each format, with where to download it and its schema. A file built for the DAO's serving
    /// revision shows its rows, bytes and SHA-256; one not built yet is `on_request` (the first
    /// download builds it). Files are built from the DAO's revision as a whole, so no file mixes
    /// revisions. Keyset-paginated: pass `meta.page.nextCursor` back as `cursor` with the same
    /// `limit` until `hasMore` is false.
    #[oai(path = "/exports", method = "get", operation_id = "v2_exports_list")]
    async fn exports_list(
        &self,
        state: Data<&AppState>,
        /// Only this DAO's files.
        #[oai(name = "daoId")]
        dao_id: Query<Option<DaoFilter>>,
        /// Rows per page.
        limit: Query<Option<V2Limit<MostLists>>>,
        /// `meta.page.nextCursor` of the previous page, unchanged.
        cursor: Query<Option<String>>,
    ) -> Result<Json<V2List<ExportFileItem>>, ApiError<ExportsListV2>> {
        let limit = V2Limit::resolve(limit.0);
        let dao = DaoFilter::resolve(dao_id.0);
        let Some(only) = dao.store_filter() else {
            return Err(Problem::unknown_dao(dao.received().unwrap_or_default()).into());
        };
        let list = Listing::<ExportsListV2, ExportAfter>::new(&state, None, limit).filtered(ExportsShape { dao: &dao });
        let after = list.after(cursor.0.as_deref())?;
        let files_per_dao = ExportFile::all().count() as u64;
        let daos_needed = list.rows_to_read().div_ceil(files_per_dao) + 1;
        let daos = store::exports::daos_from(
            state.primary()?,
            only.map(|d| d.as_str()),
            after.as_ref().map(|a| a.dao_id.as_str()),
            daos_needed,
        )
        .await?;
        if let (Some(id), true) = (only, daos.is_empty()) {
            return Err(Problem::unknown_dao(id.as_str()).into());
        }
        let rows = match (daos.first(), daos.last()) {
            (Some(first), Some(last)) => store::exports::between(state.primary()?, &first.dao_id, &last.dao_id).await?,
            _ => Vec::new(),
        };
        let mut items = Vec::new();
        for d in &daos {
            for file in ExportFile::all() {
                let position = ExportAfter { dao_id: d.dao_id.clone(), file: file.name() };
                if after.as_ref().is_some_and(|a| (a.dao_id.as_str(), a.file.as_str()) >= (&d.dao_id, &position.file)) {
                    continue;
                }
                let row = rows.iter().find(|r| {
                    r.dao_id == d.dao_id && r.table_name == file.table.name && r.format == file.format.as_str()
                });
                let current =
                    row.filter(|r| r.state == ExportState::Ready && r.revision_id >= d.revision_id.unwrap_or(0));
                items.push((position, item(&d.dao_id, &file, current)));
                if items.len() as u64 >= list.rows_to_read() {
                    break;
                }
            }
        }
        Ok(list.page(items, |(k, _)| k.clone(), |(_, i)| i))
    }

    /// Download one export file
    ///
    /// One table of one DAO, whole, as of the DAO's serving revision: Parquet (typed columns,
    /// row groups, the schema in its metadata under `govdata.schema`), CSV (RFC 4180) or NDJSON.
    /// Exact values stay exact: voting power as its exact decimal text, integers in a token's
    /// smallest unit also as Parquet `DECIMAL(38,0)` (the widest decimal every reader takes), instants in UTC with milliseconds.
    ///
    /// Served as a file over HTTP should be: `Content-Length`; a strong `ETag` (the file's
    /// SHA-256, kept while the table is unchanged) and `If-None-Match` (304); one `Range` per
    /// request (206; `If-Range` resumes a download only while the file is unchanged; 416 past
    /// the end); `Cache-Control: no-cache`. CSV and NDJSON are gzip-encoded for
    /// `Accept-Encoding: gzip`. A file nobody asked for since its DAO last changed is built by
    /// the first request (waiting up to {{EXPORT_BUILD_WAIT_SECONDS}} s, else 503 with
    /// `Retry-After`, not charged).
    #[oai(path = "/exports/:daoId/:file", method = "get", operation_id = "v2_exports_get")]
    async fn exports_get(
        &self,
        state: Data<&AppState>,
        req: &Request,
        /// The DAO's slug, as `GET /v2/exports` lists it.
        #[oai(name = "daoId")]
        dao_id: Path<DaoIdParam>,
        /// `<table>.<format>`: `votes.parquet`, `proposals.csv`, `forum_topics.ndjson` (the tables of
        /// `GET /v2/export-tables`).
        file: Path<ExportFileParam>,
    ) -> Result<Download, ApiError<ExportsGetV2>> {
        let dao = dao_id.0.parse().map_err(|received| Problem::unknown_dao(&received))?;
        let name = file.0.0;
        let Some(file) = ExportFile::parse(&name) else {
            return Err(Problem::validation(FieldError {
                location: ParamLocation::Path,
                name: "file".to_owned(),
                reason: "names no export file: `<table>.<format>`, a table of GET /v2/export-tables and a format of \
                         parquet, csv, ndjson"
                    .to_owned(),
                expected: Some(ExportFile::pattern()),
                received: Some(name),
            })
            .into());
        };
        let known = store::exports::daos_from(state.primary()?, Some(dao.as_str()), None, 1).await?;
        let Some(known) = known.first() else {
            return Err(Problem::unknown_dao(dao.as_str()).into());
        };
        let revision = known.revision_id.unwrap_or(0);
        let wait = Duration::from_secs(BUILD_WAIT_SECONDS);
        let ready = state.exports.ready(dao.as_str(), file, revision, wait).await.map_err(|e| {
            tracing::error!(error = %e, "export not served");
            Problem::internal()
        })?;
        let Some(ready) = ready else {
            return Err(decl::being_built(dao.as_str(), &file.name()).into());
        };
        let grant = req
            .extensions()
            .get::<PaidByPayment>()
            .map(|_| decl::grant(&state.cursors, req.uri().path(), now_ms() + GRANT_SECONDS as i64 * 1000));
        let gzip =
            file.is_text() && accepts_gzip(req.headers().get(header::ACCEPT_ENCODING).and_then(|v| v.to_str().ok()));
        let answer = serve(req, &file, dao.as_str(), &ready, gzip, grant).await.map_err(|e| {
            if e.kind() == std::io::ErrorKind::NotFound {
                // Removed between the catalogue read and the open (a rebuild replaced it).
                decl::being_built(dao.as_str(), &file.name())
            } else {
                tracing::error!(error = %e, "export file not read");
                Problem::internal()
            }
        })?;
        state.exports.served(&ready.row);
        Ok(answer)
    }

    /// List the exported tables and their schemas
    ///
    /// Every table `GET /v2/exports` offers: what one row is, the order rows are written in, and
    /// each column's name, type, nullability and meaning. The same schema travels in each
    /// Parquet file (its key-value metadata `govdata.schema`, and each field's `description`).
    #[oai(path = "/export-tables", method = "get", operation_id = "v2_export_tables_list")]
    async fn export_tables_list(&self) -> Result<Json<V2Single<ExportTables>>, ApiError<ExportTablesListV2>> {
        let tables = decl::TABLES.iter().map(ExportTableItem::of).collect();
        Ok(Json(V2Single::new(ExportTables { tables }, Freshness::new(None, CacheStatus::Fresh))))
    }
}

fn item(dao_id: &str, file: &ExportFile, row: Option<&store::exports::ExportFileRow>) -> ExportFileItem {
    ExportFileItem {
        dao_id: dao_id.to_owned(),
        table: file.table.name.to_owned(),
        format: file.format,
        url: file_url(dao_id, file),
        media_type: file.format.media_type().to_owned(),
        schema_url: format!("/v2/export-tables#{}", file.table.name),
        status: if row.is_some() { ExportStatus::Ready } else { ExportStatus::OnRequest },
        revision: row.map(|r| r.revision_id),
        changed_in_revision: row.map(|r| r.changed_revision_id),
        data_as_of: row.and_then(|r| r.data_as_of_ms).map(Timestamp::from_ms),
        rows: row.map(|r| r.rows),
        bytes: row.map(|r| r.bytes),
        sha256: row.and_then(|r| r.sha256.clone()),
        gzip_bytes: row.and_then(|r| r.gzip_bytes),
    }
}

/// The answer to `req` for a ready file: conditional, ranged, gzip-encoded as asked.
async fn serve(
    req: &Request,
    file: &ExportFile,
    dao_id: &str,
    ready: &ReadyFile,
    gzip: bool,
    grant: Option<String>,
) -> std::io::Result<Download> {
    let sha = ready.row.sha256.clone().unwrap_or_default();
    let (path, size) = match (&ready.gzip_path, gzip) {
        (Some(gz), true) => (gz.clone(), ready.row.gzip_bytes.unwrap_or(0) as u64),
        _ => (ready.path.clone(), ready.row.bytes as u64),
    };
    let gzip = gzip && ready.gzip_path.is_some();
    let etag_text = if gzip { format!("\"{sha}-gzip\"") } else { format!("\"{sha}\"") };
    let etag: Option<ETag> = etag_text.parse().ok();
    let headers = req.headers();
    if let (Some(inm), Some(etag)) = (headers.typed_get::<IfNoneMatch>(), etag.as_ref())
        && !inm.precondition_passes(etag)
    {
        return Ok(Download::NotModified(etag_text));
    }
    // `If-Range` with another validator: the file changed since the part the client holds, so
    // the whole file is sent.
    let range_applies = match (headers.typed_get::<IfRange>(), etag.as_ref()) {
        (Some(if_range), Some(etag)) => !if_range.is_modified(Some(etag), None),
        _ => true,
    };
    let range = if range_applies { headers.typed_get::<Range>() } else { None };
    let mut f = tokio::fs::File::open(&path).await?;
    let served = |body: Body, length: u64| Served {
        body,
        length,
        media_type: file.format.media_type(),
        etag: etag_text.clone(),
        gzip,
        text: file.is_text(),
        disposition: format!("attachment; filename=\"{dao_id}-{}{}\"", file.name(), if gzip { ".gz" } else { "" }),
        grant: grant.clone(),
    };
    let Some(range) = range else {
        return Ok(Download::Whole(served(Body::from_async_read(f), size)));
    };
    // The first range within the file, as (first, last) byte positions. `headers` does not
    // drop a range that starts at or past the end, so every bound is checked here.
    use std::ops::Bound::*;
    let mut ranges = range.satisfiable_ranges(size).filter_map(|(start, end)| {
        let first = match start {
            Included(n) => n,
            Excluded(n) => n.checked_add(1)?,
            Unbounded => 0,
        };
        let last = match end {
            Included(n) => n.min(size.checked_sub(1)?),
            Excluded(n) => n.min(size).checked_sub(1)?,
            Unbounded => size.checked_sub(1)?,
        };
        (first < size && first <= last).then_some((first, last))
    });
    let (found, more) = (ranges.next(), ranges.next());
    let Some((first, last)) = found else {
        let mut p = Problem::validation(FieldError {
            location: ParamLocation::Header,
            name: "Range".to_owned(),
            reason: format!("no part of the range lies within the file's {size} bytes"),
            expected: Some(format!("bytes=first-last with first < {size}")),
            received: headers.get(header::RANGE).and_then(|v| v.to_str().ok()).map(str::to_owned),
        });
        p.status = 416;
        p.code = ErrorCode::ValidationError;
        return Ok(Download::Unsatisfiable(p, size));
    };
    if more.is_some() {
        // Several ranges at once (multipart/byteranges) are not served: the whole file is.
        return Ok(Download::Whole(served(Body::from_async_read(f), size)));
    }
    f.seek(SeekFrom::Start(first)).await?;
    let length = last - first + 1;
    Ok(Download::Part(served(Body::from_async_read(f.take(length)), length), format!("bytes {first}-{last}/{size}")))
}

#[cfg(test)]
mod tests {
    use super::accepts_gzip;

    #[test]
    fn gzip_is_taken_as_accept_encoding_says() {
        assert!(accepts_gzip(Some("gzip")));
        assert!(accepts_gzip(Some("br, gzip;q=0.5")));
        assert!(accepts_gzip(Some("*")));
        assert!(!accepts_gzip(Some("gzip;q=0")));
        assert!(!accepts_gzip(Some("br")));
        assert!(!accepts_gzip(None));
    }
}
