//! PostgreSQL's binary `COPY` format, read: the tuples of a `COPY … TO STDOUT (FORMAT binary)`
//! (<https://www.postgresql.org/docs/current/sql-copy.html>, "Binary Format"). sqlx hands the
//! stream over as its `CopyData` messages, and nothing in the format ties a tuple to a message,
//! so bytes are kept until their tuple is whole. No crate reads this format off sqlx's copy-out
//! stream (`postgres-binary-copy` is tokio-postgres's), and the format is four rules.
use bytes::{Buf, BytesMut};

/// The header's fixed signature; a 32-bit flags field and a 32-bit extension length follow.
const SIGNATURE: &[u8; 11] = b"PGCOPY\n\xff\r\n\0";
/// The field count that ends the data.
const TRAILER: i16 = -1;

/// The tuples of one `COPY`'s output of `N` columns, as its messages arrive.
pub struct Tuples<const N: usize> {
    buf: BytesMut,
    /// Bytes of `buf` already read (the tuples handed out).
    read: usize,
    header: bool,
    ended: bool,
}

/// One tuple: each field's bytes, `None` for SQL `NULL`.
pub type Fields<'a, const N: usize> = [Option<&'a [u8]>; N];

impl<const N: usize> Default for Tuples<N> {
    fn default() -> Self {
        Self { buf: BytesMut::new(), read: 0, header: false, ended: false }
    }
}

impl<const N: usize> Tuples<N> {
    /// Takes the next message's bytes.
    pub fn feed(&mut self, bytes: &[u8]) {
        self.buf.advance(self.read);
        self.read = 0;
        self.buf.extend_from_slice(bytes);
    }

    /// The next whole tuple, or `None` until more bytes are fed (or after the trailer).
    pub fn next_tuple(&mut self) -> anyhow::Result<Option<Fields<'_, N>>> {
        if !self.header {
            let Some(len) = header_len(&self.buf[self.read..])? else { return Ok(None) };
            self.read += len;
            self.header = true;
        }
        if self.ended {
            anyhow::ensure!(self.read == self.buf.len(), "bytes after the COPY's trailer");
            return Ok(None);
        }
        let data = &self.buf[self.read..];
        let Some(count) = data.get(..2) else { return Ok(None) };
        let count = i16::from_be_bytes([count[0], count[1]]);
        if count == TRAILER {
            self.read += 2;
            self.ended = true;
            anyhow::ensure!(self.read == self.buf.len(), "bytes after the COPY's trailer");
            return Ok(None);
        }
        anyhow::ensure!(count as usize == N, "a COPY tuple of {count} fields where {N} were expected");
        let mut spans = [None; N];
        let mut at = 2;
        for span in &mut spans {
            let Some(len) = data.get(at..at + 4) else { return Ok(None) };
            let len = i32::from_be_bytes([len[0], len[1], len[2], len[3]]);
            at += 4;
            if len == -1 {
                continue;
            }
            let len = usize::try_from(len).map_err(|_| anyhow::anyhow!("a COPY field of length {len}"))?;
            if data.len() < at + len {
                return Ok(None);
            }
            *span = Some((at, len));
            at += len;
        }
        let start = self.read;
        self.read += at;
        let data = &self.buf[start..];
        Ok(Some(spans.map(|s| s.map(|(at, len)| &data[at..at + len]))))
    }

    /// Whether the trailer was read (the output was whole).
    pub fn ended(&self) -> bool {
        self.ended
    }
}

/// The header's length, once it is whole.
fn header_len(data: &[u8]) -> anyhow::Result<Option<usize>> {
    if data.len() < SIGNATURE.len() + 8 {
        return Ok(None);
    }
    anyhow::ensure!(data.starts_with(SIGNATURE), "not PostgreSQL's binary COPY format");
    let at = SIGNATURE.len();
    let flags = u32::from_be_bytes(data[at..at + 4].try_into()?);
    // Bit 16 says OIDs are included; the lower bits are reserved, the upper ones ignorable.
    anyhow::ensure!(flags & 0x1_ffff == 0, "a binary COPY header with flags {flags:#x}");
    let extension = u32::from_be_bytes(data[at + 4..at + 8].try_into()?) as usize;
    let len = at + 8 + extension;
    Ok((data.len() >= len).then_some(len))
}

/// A `bool` field.
pub fn boolean(field: &[u8]) -> anyhow::Result<bool> {
    match field {
        [b] => Ok(*b != 0),
        _ => anyhow::bail!("a boolean of {} bytes", field.len()),
    }
}

/// An `int8` field.
pub fn int8(field: &[u8]) -> anyhow::Result<i64> {
    Ok(i64::from_be_bytes(field.try_into().map_err(|_| anyhow::anyhow!("an int8 of {} bytes", field.len()))?))
}

/// A `text` field (the database's encoding is UTF-8).
pub fn text(field: &[u8]) -> anyhow::Result<&str> {
    Ok(std::str::from_utf8(field)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A whole `COPY` output of two-field tuples, as PostgreSQL writes it.
    fn output(tuples: &[[Option<&[u8]>; 2]]) -> Vec<u8> {
        let mut out = SIGNATURE.to_vec();
        out.extend(0u32.to_be_bytes());
        out.extend(4u32.to_be_bytes());
        out.extend(b"ext!");
        for t in tuples {
            out.extend(2i16.to_be_bytes());
            for f in t {
                match f {
                    Some(b) => {
                        out.extend((b.len() as i32).to_be_bytes());
                        out.extend(*b);
                    }
                    None => out.extend((-1i32).to_be_bytes()),
                }
            }
        }
        out.extend(TRAILER.to_be_bytes());
        out
    }

    /// A tuple's fields, owned.
    type Owned = [Option<Vec<u8>>; 2];

    fn read_all(bytes: &[u8], chunk: usize) -> anyhow::Result<(Vec<Owned>, bool)> {
        let mut tuples = Tuples::<2>::default();
        let mut got = Vec::new();
        for part in bytes.chunks(chunk) {
            tuples.feed(part);
            while let Some(f) = tuples.next_tuple()? {
                got.push(f.map(|f| f.map(<[u8]>::to_vec)));
            }
        }
        Ok((got, tuples.ended()))
    }

    #[test]
    fn tuples_are_read_whatever_the_messages_boundaries() {
        let rows: [[Option<&[u8]>; 2]; 3] =
            [[Some(b"\x00\x01"), Some("välja".as_bytes())], [None, Some(b"")], [Some(&7i64.to_be_bytes()), None]];
        let bytes = output(&rows);
        let want: Vec<Owned> = rows.iter().map(|r| r.map(|f| f.map(<[u8]>::to_vec))).collect();
        for chunk in 1..=bytes.len() {
            let (got, ended) = read_all(&bytes, chunk).unwrap();
            assert_eq!(got, want, "messages of {chunk} bytes");
            assert!(ended, "messages of {chunk} bytes");
        }
    }

    #[test]
    fn output_cut_short_is_not_whole() {
        let bytes = output(&[[Some(b"a"), Some(b"b")]]);
        let (got, ended) = read_all(&bytes[..bytes.len() - 2], 5).unwrap();
        assert_eq!(got.len(), 1);
        assert!(!ended, "no trailer: the output was cut");
        let (got, ended) = read_all(&bytes[..bytes.len() - 4], 5).unwrap();
        assert!(got.is_empty() && !ended, "a tuple cut inside its last field is not handed out");
    }

    #[test]
    fn what_is_not_this_format_is_refused() {
        let mut bytes = output(&[[Some(b"a"), None]]);
        assert!(read_all(&bytes[1..], 64).is_err(), "no signature");
        let three = {
            let mut b = bytes.clone();
            b[SIGNATURE.len() + 12..SIGNATURE.len() + 14].copy_from_slice(&3i16.to_be_bytes());
            b
        };
        assert!(read_all(&three, 64).is_err(), "three fields where two were declared");
        bytes.extend(b"more");
        assert!(read_all(&bytes, 64).is_err(), "bytes after the trailer");
        let oids = {
            let mut b = output(&[]);
            b[SIGNATURE.len() + 1] = 1; // bit 16: OIDs included
            b
        };
        assert!(read_all(&oids, 64).is_err(), "a header with OIDs");
    }

    #[test]
    fn fields_decode_as_postgresql_sends_them() {
        assert!(boolean(&[1]).unwrap() && !boolean(&[0]).unwrap());
        assert!(boolean(&[1, 0]).is_err());
        assert_eq!(int8(&(-42i64).to_be_bytes()).unwrap(), -42);
        assert!(int8(&[0; 4]).is_err());
        assert_eq!(text("π".as_bytes()).unwrap(), "π");
        assert!(text(&[0xff]).is_err());
    }
}
