//! The runner failure codes of SPEC §7, named once: the runner answers them, its client reads
//! them, the API and the worker decide from them whether to retry and what counts against an
//! app's circuit.

service::labels! {
    /// A runner failure (`details.reason` of `app_call_failed`).
    pub enum RunnerCode {
        Unauthorized = "unauthorized",
        BadRequest = "bad_request",
        ModuleNotFound = "module_not_found",
        InvalidModule = "invalid_module",
        MissingExport = "missing_export",
        Timeout = "timeout",
        Trapped = "trapped",
        BadOutput = "bad_output",
        Busy = "busy",
        ModuleUnavailable = "module_unavailable",
        Internal = "internal",
        /// The runner did not answer (added by its callers, never answered by the runner).
        Unreachable = "unreachable",
    }
}

impl RunnerCode {
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
        for &code in RunnerCode::ALL {
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
