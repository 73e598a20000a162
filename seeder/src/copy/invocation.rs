//! An invocation as a line of `COPY app_invocations`.

use super::fields::{copy_line, integer, milliseconds, optional, text, timestamp, uuid};
use crate::history::Invocation;

/// The statement invocations are sent with; its columns are in the order [`encode`] writes
/// them. COPY runs the table's statement triggers once per batch, so the rollups stay exact.
pub(super) const STATEMENT: &str = "COPY app_invocations (id, tenant_id, app_name, version_id, \
     action, subject_id, workflow_run_id, input, output, status, error, duration_ms, invoked_at, \
     idempotency_key, attempt, usage_http_requests, usage_document_reads, usage_log_lines) \
     FROM STDIN";

/// Appends `row` as one line to `out`.
pub(super) fn encode(row: &Invocation<'_>, out: &mut Vec<u8>) {
    let usage = row.usage;
    copy_line!(out;
        uuid(row.id),
        uuid(row.tenant_id),
        text(row.app_name),
        uuid(row.version_id),
        text(row.action),
        optional(row.subject_id, uuid),
        optional(row.workflow_run_id, uuid),
        text(row.input),
        optional(row.output, text),
        text(row.status.as_str()),
        optional(row.error, text),
        milliseconds(row.duration_ms),
        timestamp(row.invoked_at),
        optional(row.idempotency_key, text),
        integer(i64::from(row.attempt)),
        optional(usage.map(|u| i64::from(u.http_requests)), integer),
        optional(usage.map(|u| i64::from(u.document_reads)), integer),
        optional(usage.map(|u| i64::from(u.log_lines)), integer),
    );
}

#[cfg(test)]
mod tests {
    use readers::invocations::{InvocationStatus, Usage};
    use uuid::Uuid;

    use super::super::fields::decode;
    use super::*;

    fn tricky_row<'a>(input: &'a str, key: &'a str) -> Invocation<'a> {
        Invocation {
            id: Uuid::from_u128(1),
            tenant_id: Uuid::from_u128(2),
            app_name: "kyc-check",
            version_id: Uuid::from_u128(3),
            action: "verify-identity",
            subject_id: None,
            workflow_run_id: Some(Uuid::from_u128(4)),
            input,
            output: None,
            status: InvocationStatus::Error,
            error: Some("upstream:\n<html>\r\n\tC:\\path \\N"),
            duration_ms: 1234.5,
            invoked_at: 1_700_000_000_000_001,
            idempotency_key: Some(key),
            attempt: 2,
            usage: Some(Usage {
                http_requests: 3,
                document_reads: 0,
                log_lines: 17,
            }),
        }
    }

    #[test]
    fn a_row_with_every_special_character_reads_back_as_written() {
        let input =
            "{\"note\":\"line\\nbreak \\\"quoted\\\" C:\\\\dir\",\"name\":\"Zoë\tO'Brien\"}";
        let row = tricky_row(input, "run:x:step:kyc-check");
        let mut out = Vec::new();
        encode(&row, &mut out);
        assert_eq!(out.last(), Some(&b'\n'));
        let line = &out[..out.len() - 1];
        assert!(!line.contains(&b'\n') && !line.contains(&b'\r'));
        let fields = decode(line);
        assert_eq!(fields.len(), 18);
        assert_eq!(
            fields[0].as_deref(),
            Some("00000000-0000-0000-0000-000000000001")
        );
        assert_eq!(fields[5], None);
        assert_eq!(fields[7].as_deref(), Some(input));
        assert_eq!(fields[8], None);
        assert_eq!(fields[9].as_deref(), Some("error"));
        assert_eq!(fields[10].as_deref(), row.error);
        assert_eq!(fields[11].as_deref(), Some("1234.500"));
        assert_eq!(fields[12].as_deref(), Some("2023-11-14 22:13:20.000001+00"));
        assert_eq!(fields[14].as_deref(), Some("2"));
        assert_eq!(
            fields[15..],
            [Some("3".into()), Some("0".into()), Some("17".into())]
        );
        // The text `\N` inside a value is not NULL: its backslash is doubled.
        assert!(String::from_utf8_lossy(line).contains("\\\\N"));
    }
}
