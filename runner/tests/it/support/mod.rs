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

use std::path::PathBuf;

pub const RUNNER_TOKEN: &str = "runner-test-token";

pub fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("workspace root")
        .to_path_buf()
}

pub fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    hex::encode(Sha256::digest(bytes))
}
