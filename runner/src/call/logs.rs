//! The module's log lines: at most 200 per call, each cut at 2,000 characters, secrets
//! scrubbed, emitted as the runner's own JSON log lines with the call's fields (SPEC
//! "Operations reference: Logs": `tenantId`, `appName`, `callId`).

use crate::call::CallLabels;
use crate::secrets::Secrets;

pub const MAX_LINES_PER_CALL: u32 = 200;
pub const MAX_LINE_CHARS: usize = 2000;

/// Levels a module may log at, in Extism's numbering (`get_log_level`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    Trace = 0,
    Debug = 1,
    Info = 2,
    Warn = 3,
    Error = 4,
}

impl Level {
    /// Lines below this level are dropped without being counted.
    pub const LOWEST_KEPT: Level = Level::Info;

    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "trace" => Some(Level::Trace),
            "debug" => Some(Level::Debug),
            "info" => Some(Level::Info),
            "warn" | "warning" => Some(Level::Warn),
            "error" => Some(Level::Error),
            _ => None,
        }
    }
}

#[derive(Debug, Default)]
pub struct LogSink {
    kept: u32,
    dropped: u32,
}

impl LogSink {
    /// Lines that were emitted (`usage.logLines`).
    pub fn lines(&self) -> u32 {
        self.kept
    }

    pub fn dropped(&self) -> u32 {
        self.dropped
    }

    pub fn write(&mut self, labels: &CallLabels, secrets: &Secrets, level: Level, message: &str) {
        if level < Level::LOWEST_KEPT {
            return;
        }
        if self.kept >= MAX_LINES_PER_CALL {
            self.dropped += 1;
            return;
        }
        self.kept += 1;
        let message = truncate(&secrets.scrub_text(message), MAX_LINE_CHARS);
        let tenant = labels.tenant_id.map(|t| t.to_string()).unwrap_or_default();
        let (app, call) = (labels.app_name.as_str(), labels.call_id.as_str());
        match level {
            Level::Error => {
                tracing::error!(tenantId = %tenant, appName = app, callId = call, source = "module", "{message}")
            }
            Level::Warn => {
                tracing::warn!(tenantId = %tenant, appName = app, callId = call, source = "module", "{message}")
            }
            _ => {
                tracing::info!(tenantId = %tenant, appName = app, callId = call, source = "module", "{message}")
            }
        }
    }
}

fn truncate(text: &str, max_chars: usize) -> String {
    match text.char_indices().nth(max_chars) {
        Some((cut, _)) => text[..cut].to_owned(),
        None => text.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_two_hundred_and_first_line_is_dropped_and_debug_is_not_counted() {
        let labels = CallLabels::default();
        let secrets = Secrets::default();
        let mut sink = LogSink::default();
        sink.write(&labels, &secrets, Level::Debug, "noise");
        for i in 0..201 {
            sink.write(&labels, &secrets, Level::Info, &format!("line {i}"));
        }
        assert_eq!(sink.lines(), 200);
        assert_eq!(sink.dropped(), 1);
    }

    #[test]
    fn long_lines_are_cut_on_a_character_boundary() {
        let text = "é".repeat(2500);
        let cut = truncate(&text, MAX_LINE_CHARS);
        assert_eq!(cut.chars().count(), MAX_LINE_CHARS);
    }
}
