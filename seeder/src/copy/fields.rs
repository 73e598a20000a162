//! The values of a COPY text line, formatted by hand (timestamps, durations): the generator
//! and this encoder share two cores with Postgres, so every microsecond per row counts ten
//! seconds over 10 M rows.

use uuid::Uuid;

/// Appends one COPY text line to `out`: each `write(values..)` as `write(out, values..)`, in
/// order, a tab between two, a newline after the last.
macro_rules! copy_line {
    ($out:expr; $first:ident($($a:expr),* $(,)?) $(, $write:ident($($b:expr),* $(,)?))* $(,)?) => {{
        $first($out, $($a),*);
        $( $out.push(b'\t'); $write($out, $($b),*); )*
        $out.push(b'\n');
    }};
}
pub(super) use copy_line;

pub(super) fn optional<T>(out: &mut Vec<u8>, value: Option<T>, write: impl Fn(&mut Vec<u8>, T)) {
    match value {
        Some(value) => write(out, value),
        None => out.extend_from_slice(b"\\N"),
    }
}

/// `value` with COPY's escapes; most values need none and are copied whole.
pub(super) fn text(out: &mut Vec<u8>, value: &str) {
    let bytes = value.as_bytes();
    if !bytes.iter().any(|&b| needs_escape(b)) {
        out.extend_from_slice(bytes);
        return;
    }
    for &byte in bytes {
        match byte {
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'\t' => out.extend_from_slice(b"\\t"),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            byte => out.push(byte),
        }
    }
}

fn needs_escape(byte: u8) -> bool {
    matches!(byte, b'\\' | b'\t' | b'\n' | b'\r')
}

pub(super) fn uuid(out: &mut Vec<u8>, id: Uuid) {
    out.extend_from_slice(
        id.hyphenated()
            .encode_lower(&mut Uuid::encode_buffer())
            .as_bytes(),
    );
}

pub(super) fn integer(out: &mut Vec<u8>, value: i64) {
    if value < 0 {
        out.push(b'-');
    }
    digits(out, value.unsigned_abs(), 1);
}

/// `value` in decimal, zero-padded to at least `width` digits.
fn digits(out: &mut Vec<u8>, mut value: u64, width: usize) {
    let mut buffer = [b'0'; 20];
    let mut at = buffer.len();
    while value > 0 || buffer.len() - at < width {
        at -= 1;
        buffer[at] = b'0' + (value % 10) as u8;
        value /= 10;
    }
    out.extend_from_slice(&buffer[at..]);
}

/// Milliseconds with three decimals (the generator rounds durations to the microsecond).
pub(super) fn milliseconds(out: &mut Vec<u8>, ms: f64) {
    let micros = (ms.max(0.0) * 1000.0).round() as u64;
    digits(out, micros / 1000, 1);
    out.push(b'.');
    digits(out, micros % 1000, 3);
}

/// `micros` since the Unix epoch as `YYYY-MM-DD HH:MM:SS.ffffff+00`.
pub(super) fn timestamp(out: &mut Vec<u8>, micros: i64) {
    const DAY: i64 = 86_400_000_000;
    let days = micros.div_euclid(DAY);
    let of_day = micros.rem_euclid(DAY) as u64;
    let (year, month, day) = civil_date(days);
    digits(out, year as u64, 4);
    out.push(b'-');
    digits(out, month, 2);
    out.push(b'-');
    digits(out, day, 2);
    out.push(b' ');
    let seconds = of_day / 1_000_000;
    digits(out, seconds / 3600, 2);
    out.push(b':');
    digits(out, seconds / 60 % 60, 2);
    out.push(b':');
    digits(out, seconds % 60, 2);
    out.push(b'.');
    digits(out, of_day % 1_000_000, 6);
    out.extend_from_slice(b"+00");
}

/// The proleptic Gregorian date `days` after 1970-01-01 (Howard Hinnant's `civil_from_days`),
/// for years 0 to 9999.
fn civil_date(days: i64) -> (i64, u64, u64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let day_of_era = z.rem_euclid(146_097);
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let shifted_month = (5 * day_of_year + 2) / 153;
    let day = (day_of_year - (153 * shifted_month + 2) / 5 + 1) as u64;
    let month = if shifted_month < 10 {
        shifted_month + 3
    } else {
        shifted_month - 9
    } as u64;
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

/// What Postgres reads back from a line (without its newline): `None` for `\N`, escapes
/// undone.
#[cfg(test)]
pub(super) fn decode(line: &[u8]) -> Vec<Option<String>> {
    let line = std::str::from_utf8(line).expect("utf-8");
    line.split('\t')
        .map(|field| {
            if field == "\\N" {
                return None;
            }
            let mut value = String::new();
            let mut chars = field.chars();
            while let Some(c) = chars.next() {
                if c != '\\' {
                    value.push(c);
                    continue;
                }
                match chars.next() {
                    Some('t') => value.push('\t'),
                    Some('n') => value.push('\n'),
                    Some('r') => value.push('\r'),
                    Some(other) => value.push(other),
                    None => panic!("a line ends in a lone backslash"),
                }
            }
            Some(value)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use chrono::DateTime;

    use super::*;

    #[test]
    fn timestamps_match_chrono_across_the_calendar() {
        let mut micros = -62_000_000_000_000_000i64 / 10;
        while micros < 253_402_300_799_000_000 {
            let mut out = Vec::new();
            timestamp(&mut out, micros);
            let expected = DateTime::from_timestamp_micros(micros)
                .expect("in range")
                .format("%Y-%m-%d %H:%M:%S%.6f+00")
                .to_string();
            assert_eq!(String::from_utf8(out).expect("ascii"), expected);
            micros += 7_777_777_777_777;
        }
    }

    #[test]
    fn numbers_are_plain_decimals() {
        let mut out = Vec::new();
        integer(&mut out, 0);
        out.push(b' ');
        integer(&mut out, -42);
        out.push(b' ');
        milliseconds(&mut out, 0.0004);
        out.push(b' ');
        milliseconds(&mut out, 30_012.345);
        assert_eq!(out, b"0 -42 0.000 30012.345");
    }
}
