//! The runs stage (issue 10, in progress): a workflow run's steps, one writer per run. What is
//! here so far is how a call's input is built ([`input_mapping`], SPEC §4.12); the stage that
//! calls it arrives next.

// The runs stage is its first caller; until it lands only the unit tests use the module.
#[allow(dead_code)]
mod input_mapping;
