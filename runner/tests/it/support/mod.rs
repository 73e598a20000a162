//! Shared pieces of the runner's integration tests: WAT fixtures, a stand-in for the API's
//! internal listener (modules by hash, documents), counting vendor servers, and a runner
//! started through `./stack run runner`.

pub mod collector;
pub mod costly;
pub mod instance;
pub mod serve;
pub mod upstream;
pub mod vendor;
pub mod wat;

pub const RUNNER_TOKEN: &str = "runner-test-token";

pub use service::testing::{repo_root, stack};

/// The name of a module's bytes.
pub fn sha256_hex(bytes: &[u8]) -> String {
    schema::module::Sha256::of(bytes).to_string()
}
