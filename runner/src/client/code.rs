//! The runner failure codes of SPEC §7, named once: the runner answers them, its client reads
//! them, the API and the worker decide from them whether to retry and what counts against an
//! app's circuit.

/// A runner failure (`details.reason` of `app_call_failed`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RunnerCode {
    Unauthorized,
    BadRequest,
    ModuleNotFound,
    InvalidModule,
    MissingExport,
    Timeout,
    Trapped,
    BadOutput,
    Busy,
    ModuleUnavailable,
    Internal,
    /// The runner did not answer (added by its callers, never answered by the runner).
    Unreachable,
}

impl RunnerCode {
    pub const ALL: [RunnerCode; 12] = [
        RunnerCode::Unauthorized,
        RunnerCode::BadRequest,
        RunnerCode::ModuleNotFound,
        RunnerCode::InvalidModule,
        RunnerCode::MissingExport,
        RunnerCode::Timeout,
        RunnerCode::Trapped,
        RunnerCode::BadOutput,
        RunnerCode::Busy,
        RunnerCode::ModuleUnavailable,
        RunnerCode::Internal,
        RunnerCode::Unreachable,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            RunnerCode::Unauthorized => "unauthorized",
            RunnerCode::BadRequest => "bad_request",
            RunnerCode::ModuleNotFound => "module_not_found",
            RunnerCode::InvalidModule => "invalid_module",
            RunnerCode::MissingExport => "missing_export",
            RunnerCode::Timeout => "timeout",
            RunnerCode::Trapped => "trapped",
            RunnerCode::BadOutput => "bad_output",
            RunnerCode::Busy => "busy",
            RunnerCode::ModuleUnavailable => "module_unavailable",
            RunnerCode::Internal => "internal",
            RunnerCode::Unreachable => "unreachable",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|code| code.as_str() == text)
    }

    /// Another attempt may succeed: the runner was busy, away, or failed itself (SPEC §7).
    pub fn is_retried(self) -> bool {
        matches!(
            self,
            RunnerCode::Busy
                | RunnerCode::ModuleUnavailable
                | RunnerCode::Internal
                | RunnerCode::Unreachable
        )
    }

    /// The module ran and failed: counts against the app's circuit (SPEC §7).
    pub fn counts_against_circuit(self) -> bool {
        matches!(
            self,
            RunnerCode::Timeout
                | RunnerCode::Trapped
                | RunnerCode::BadOutput
                | RunnerCode::InvalidModule
                | RunnerCode::MissingExport
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_code_reads_back_and_the_classes_follow_the_spec() {
        for code in RunnerCode::ALL {
            assert_eq!(RunnerCode::parse(code.as_str()), Some(code));
            assert!(
                !(code.is_retried() && code.counts_against_circuit()),
                "{}",
                code.as_str()
            );
        }
        assert!(RunnerCode::Unreachable.is_retried());
        assert!(!RunnerCode::Busy.counts_against_circuit());
        assert!(RunnerCode::Trapped.counts_against_circuit());
        assert_eq!(RunnerCode::parse("weird"), None);
    }
}
