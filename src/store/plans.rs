//! Plans PostgreSQL keeps (issue 49, item 3): every list's page bounds written into its SQL, and
//! its values hidden from the planner, so that each list is planned once per connection.
//!
//! A statement is prepared once per connection (sqlx caches it), and PostgreSQL plans its first
//! five executions with the parameters' values (custom plans), then keeps one generic plan when
//! that is estimated to cost no more than the custom ones did. A `LIMIT $n` distorts that
//! estimate: the generic plan must assume a tenth of the rows, and it is planned for that many,
//! not for a page. With the bound a literal, a generic plan is planned for the page it reads.
//! Even so PostgreSQL keeps custom plans for a key with many rows (a busy proposal), whose rows it
//! estimates as cheaper each than an average key's, and for a keyset page, whose position it
//! estimates from the column's histogram: the merged vote list's six walks took 1.1–1.8 ms to plan
//! for 1.3–1.7 ms of execution. [`opaque_parameters`] hides every list's values from the planner,
//! so that the generic plan is kept. A list is a walk of its index whatever the values, so the
//! values cannot improve its plan. (Forcing the generic plan instead, `plan_cache_mode`, changes
//! every statement's plans when set on the connection, and cost as many round trips as it saved
//! when set per statement in a transaction: docs/replicas-and-capacity.md.)
//!
//! A page's bound comes from the declared page sizes (`contract::limits`: 1 to the list's max,
//! plus the row that says whether there is more), so a list has at most that many statements,
//! and sqlx's per-connection statement cache (least recently used first out) bounds what a
//! connection holds. An `OFFSET` (v1's legacy pagination) is inlined only when it is 0 (every v2
//! page and v1's first): another offset stays a parameter, since it is unbounded.
//!
//! SQLite plans a statement when it prepares it and keeps that plan, so its statements are
//! returned as built.
use sea_orm::{DbBackend, EntityTrait, QuerySelect, QueryTrait, Select, Statement, Value, Values};

use crate::contract::limits::PAGE_SIZES;

/// `statement` with each parameter read through an `InitPlan` (`(SELECT $n)`), on PostgreSQL:
/// the planner then knows no parameter's value, in a custom plan as in the generic one, so both
/// cost the same and PostgreSQL keeps the generic plan from the sixth execution on. The index
/// walks are unchanged (an `InitPlan`'s value is an index condition like a parameter), and the
/// `InitPlan`s are evaluated once per execution. Only for a statement whose plan does not depend on
/// its values: a list, each a walk of its index from the position whatever the key
/// (`store::vote_arms`, the lists of [`page`]). Apply after [`literal_bounds`].
pub fn opaque_parameters(statement: Statement) -> Statement {
    if statement.db_backend != DbBackend::Postgres || statement.values.is_none() {
        return statement;
    }
    let mut sql = String::with_capacity(statement.sql.len() + 64);
    let mut bound = false;
    for token in tokens(&statement.sql) {
        match token {
            // A bound left a parameter (an offset, a bound past the declared sizes) stays one.
            Token::Param(n) if bound => sql += &format!("${n}"),
            Token::Param(n) => sql += &format!("(SELECT ${n})"),
            Token::Word(text) | Token::Blank(text) | Token::Other(text) => sql += text,
        }
        match token {
            Token::Blank(_) => {}
            Token::Word(word) => bound = is(word, "LIMIT") || is(word, "OFFSET"),
            _ => bound = false,
        }
    }
    Statement { sql, ..statement }
}

/// The statement of up to `limit` rows of `query`, as [`list`] writes it.
pub fn page<E: EntityTrait>(backend: DbBackend, query: Select<E>, limit: u64) -> Statement {
    list(query.limit(limit).build(backend))
}

/// A list's statement as PostgreSQL keeps its plan: its page bounds literals, its values read
/// through `InitPlan`s ([`literal_bounds`], [`opaque_parameters`]).
pub fn list(statement: Statement) -> Statement {
    opaque_parameters(literal_bounds(statement))
}

/// The largest page bound written into a statement: the largest declared page size, and the row
/// read past it that says whether there is more. A larger bound (v1's activity reads
/// `offset + limit` rows of each side) stays a parameter, so a list has at most this many
/// statements.
const LARGEST_BOUND: i128 = {
    let mut largest = 0;
    let mut i = 0;
    while i < PAGE_SIZES.len() {
        if PAGE_SIZES[i].max > largest {
            largest = PAGE_SIZES[i].max;
        }
        i += 1;
    }
    largest as i128 + 1
};

/// `statement` with every `LIMIT $n` up to [`LARGEST_BOUND`] (and `OFFSET $n` of 0) written as
/// its integer, the other parameters renumbered in order; unchanged on SQLite.
pub fn literal_bounds(statement: Statement) -> Statement {
    if statement.db_backend != DbBackend::Postgres || statement.values.is_none() {
        return statement;
    }
    let values = statement.values.map(|Values(v)| v).unwrap_or_default();
    let tokens = tokens(&statement.sql);
    let mut inline = vec![None; values.len()];
    let mut before = None;
    for token in &tokens {
        match *token {
            Token::Blank(_) => continue,
            Token::Param(n) => {
                if let (Some(word), Some(value)) = (before, values.get(n.wrapping_sub(1)).and_then(integer))
                    && ((is(word, "LIMIT") && (0..=LARGEST_BOUND).contains(&value))
                        || (is(word, "OFFSET") && value == 0))
                {
                    inline[n - 1] = Some(value);
                }
                before = None;
            }
            Token::Word(word) => before = Some(word),
            Token::Other(_) => before = None,
        }
    }
    // The parameters kept, renumbered in their order.
    let mut renumbered = vec![0; values.len()];
    let mut kept = Vec::with_capacity(values.len());
    for (i, value) in values.into_iter().enumerate() {
        if inline[i].is_none() {
            kept.push(value);
            renumbered[i] = kept.len();
        }
    }
    let mut sql = String::with_capacity(statement.sql.len());
    for token in tokens {
        match token {
            Token::Param(n) => match (inline.get(n.wrapping_sub(1)), renumbered.get(n.wrapping_sub(1))) {
                (Some(Some(value)), _) => sql += &value.to_string(),
                (_, Some(new)) => sql += &format!("${new}"),
                _ => sql += &format!("${n}"),
            },
            Token::Word(text) | Token::Blank(text) | Token::Other(text) => sql += text,
        }
    }
    Statement::from_sql_and_values(DbBackend::Postgres, sql, kept)
}

fn is(word: &str, keyword: &str) -> bool {
    word.eq_ignore_ascii_case(keyword)
}

/// An integer value, as a page bound is bound.
fn integer(value: &Value) -> Option<i128> {
    match value {
        Value::BigUnsigned(Some(n)) => Some(i128::from(*n)),
        Value::BigInt(Some(n)) => Some(i128::from(*n)),
        Value::Unsigned(Some(n)) => Some(i128::from(*n)),
        Value::Int(Some(n)) => Some(i128::from(*n)),
        _ => None,
    }
}

/// A piece of SQL text: a word (keyword or identifier), a placeholder `$n`, whitespace, or
/// anything else (punctuation, a quoted literal or identifier, kept whole).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Token<'a> {
    Word(&'a str),
    Param(usize),
    Blank(&'a str),
    Other(&'a str),
}

/// `sql` as [`Token`]s; concatenated, they are `sql` again.
fn tokens(sql: &str) -> Vec<Token<'_>> {
    let bytes = sql.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let start = i;
        let c = bytes[i];
        if c == b'\'' || c == b'"' {
            // A quoted literal or identifier; a doubled quote inside is part of it.
            i += 1;
            while i < bytes.len() {
                if bytes[i] == c {
                    if bytes.get(i + 1) == Some(&c) {
                        i += 2;
                        continue;
                    }
                    i += 1;
                    break;
                }
                i += 1;
            }
            out.push(Token::Other(&sql[start..i]));
        } else if c == b'$' && bytes.get(i + 1).is_some_and(u8::is_ascii_digit) {
            i += 1;
            while bytes.get(i).is_some_and(u8::is_ascii_digit) {
                i += 1;
            }
            match sql[start + 1..i].parse() {
                Ok(n) => out.push(Token::Param(n)),
                Err(_) => out.push(Token::Other(&sql[start..i])),
            }
        } else if c.is_ascii_alphabetic() || c == b'_' {
            while bytes.get(i).is_some_and(|b| b.is_ascii_alphanumeric() || *b == b'_' || *b == b'$') {
                i += 1;
            }
            out.push(Token::Word(&sql[start..i]));
        } else if c.is_ascii_whitespace() {
            while bytes.get(i).is_some_and(u8::is_ascii_whitespace) {
                i += 1;
            }
            out.push(Token::Blank(&sql[start..i]));
        } else {
            // Any other character (UTF-8 continuation bytes included) up to the next boundary.
            i += 1;
            while i < bytes.len() && !sql.is_char_boundary(i) {
                i += 1;
            }
            out.push(Token::Other(&sql[start..i]));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pg(sql: &str, values: Vec<Value>) -> Statement {
        Statement::from_sql_and_values(DbBackend::Postgres, sql, values)
    }

    #[test]
    fn limits_are_inlined_and_the_rest_renumbered() {
        let s = literal_bounds(pg(
            r#"SELECT * FROM (SELECT * FROM "votes" WHERE "proposal_id" = $1 LIMIT $2) a WHERE 'LIMIT $3' <> $3 ORDER BY x limit $4 OFFSET $5"#,
            vec![7i64.into(), 26u64.into(), "v".into(), 26u64.into(), 0u64.into()],
        ));
        assert_eq!(
            s.sql,
            r#"SELECT * FROM (SELECT * FROM "votes" WHERE "proposal_id" = $1 LIMIT 26) a WHERE 'LIMIT $3' <> $2 ORDER BY x limit 26 OFFSET 0"#
        );
        assert_eq!(s.values.unwrap().0, vec![Value::from(7i64), Value::from("v")]);
    }

    #[test]
    fn a_nonzero_offset_and_a_non_integer_stay_parameters() {
        let s = literal_bounds(pg("SELECT 1 LIMIT $1 OFFSET $2", vec![101i64.into(), 40i64.into()]));
        assert_eq!(s.sql, "SELECT 1 LIMIT 101 OFFSET $1");
        assert_eq!(opaque_parameters(s.clone()).sql, "SELECT 1 LIMIT 101 OFFSET $1");
        assert_eq!(s.values.unwrap().0, vec![Value::from(40i64)]);
        let s = literal_bounds(pg("SELECT 1 LIMIT $1", vec!["10".into()]));
        assert_eq!(s.sql, "SELECT 1 LIMIT $1");
        let s = literal_bounds(pg("SELECT 1 LIMIT $1", vec![Value::from(LARGEST_BOUND as i64 + 1)]));
        assert_eq!(s.sql, "SELECT 1 LIMIT $1");
        assert_eq!(LARGEST_BOUND, 501);
    }

    #[test]
    fn a_bound_used_twice_is_inlined_everywhere() {
        let s = literal_bounds(pg(
            "SELECT * FROM (SELECT 1 WHERE é = $1 LIMIT $2) a UNION ALL (SELECT 2 LIMIT $2) LIMIT $2",
            vec!["é".into(), 5i64.into()],
        ));
        assert_eq!(s.sql, "SELECT * FROM (SELECT 1 WHERE é = $1 LIMIT 5) a UNION ALL (SELECT 2 LIMIT 5) LIMIT 5");
    }

    #[test]
    fn parameters_are_read_through_init_plans() {
        let s = opaque_parameters(literal_bounds(pg(
            r#"SELECT * FROM "votes" WHERE "proposal_id" = $1 AND "choice" = '$2' AND "vp_sort" <= $2 LIMIT $3"#,
            vec![7i64.into(), "0001".into(), 26u64.into()],
        )));
        assert_eq!(
            s.sql,
            r#"SELECT * FROM "votes" WHERE "proposal_id" = (SELECT $1) AND "choice" = '$2' AND "vp_sort" <= (SELECT $2) LIMIT 26"#
        );
        assert_eq!(s.values.unwrap().0.len(), 2);
    }

    #[test]
    fn sqlite_is_left_as_built() {
        let s = Statement::from_sql_and_values(DbBackend::Sqlite, "SELECT 1 LIMIT ?", vec![Value::from(3u64)]);
        assert_eq!(literal_bounds(s.clone()).sql, s.sql);
        assert_eq!(opaque_parameters(s.clone()).sql, s.sql);
    }
}
