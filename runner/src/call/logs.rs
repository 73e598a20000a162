//! The module's log lines: at most 200 per call, each cut at 2,000 characters, secrets
//! scrubbed, emitted as the runner's own JSON log lines with the call's fields (SPEC
//! "Operations reference: Logs": `tenantId`, `appName`, `callId`).

use crate::secrets::Secrets;

pub(crate) const MAX_LINES_PER_CALL: u32 = 200;
pub(crate) const MAX_LINE_CHARS: usize = 2000;

/// Levels a module may log at, in Extism's numbering (`get_log_level`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Level {
    Trace = 0,
    Debug = 1,
    Info = 2,
    Warn = 3,
    Error = 4,
}

impl Level {
    /// Lines below this level are dropped without being counted.
    pub(crate) const LOWEST_KEPT: Level = Level::Info;

    pub(crate) fn parse(text: &str) -> Option<Self> {
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
pub(crate) struct LogSink {
    kept: u32,
}

impl LogSink {
    /// Lines that were emitted (`usage.logLines`).
    pub(crate) fn lines(&self) -> u32 {
        self.kept
    }

    /// Logs one line of the module, inside the call's span (which names tenant, app and call).
    pub(crate) fn write(&mut self, secrets: &Secrets, level: Level, message: &str) {
        if level < Level::LOWEST_KEPT {
            return;
        }
        if self.kept >= MAX_LINES_PER_CALL {
            return;
        }
        self.kept += 1;
        let message = truncate(&secrets.scrub_text(message), MAX_LINE_CHARS);
        match level {
            Level::Error => tracing::error!(source = "module", "{message}"),
            Level::Warn => tracing::warn!(source = "module", "{message}"),
            _ => tracing::info!(source = "module", "{message}"),
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
        let secrets = Secrets::default();
        let mut sink = LogSink::default();
        sink.write(&secrets, Level::Debug, "noise");
        for i in 0..201 {
            sink.write(&secrets, Level::Info, &format!("line {i}"));
        }
        assert_eq!(
            sink.lines(),
            200,
            "the 201st line is neither written nor counted"
        );
    }

    #[test]
    fn long_lines_are_cut_on_a_character_boundary() {
        let text = "é".repeat(2500);
        let cut = truncate(&text, MAX_LINE_CHARS);
        assert_eq!(cut.chars().count(), MAX_LINE_CHARS);
    }
}
