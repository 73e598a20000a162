//! The release's platform catalogue (SPEC §3.1, §9): at start-up, every module in
//! `APP_CATALOGUE_DIR` (`*.wasm`) is inspected by the runner, stored under its hash and
//! published as a platform version (no tenant); platform versions the release no longer carries
//! are withdrawn. Runs in the background and is retried until it succeeds, because the runner
//! may still be starting (its readiness waits for this API). Idempotent: a version already
//! published stays as it is.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::Duration;

use backon::{ExponentialBuilder, Retryable};
use bytes::Bytes;
use service::shutdown::CancellationToken;
use topics::apps::{AppsCommand, Module, ReleasePlatform, RetirePlatform, Version};
use topics::{Command, Envelope, Outcome, Principal};
use uuid::Uuid;

use crate::commands;
use crate::object_store::ObjectStore;
use crate::state::State;

/// Why one pass over the catalogue failed.
#[derive(Debug, thiserror::Error)]
enum PassError {
    #[error("no app runner or object storage is configured")]
    Unconfigured,
    #[error("{0}: {1}")]
    Folder(PathBuf, std::io::Error),
    #[error("{0}: {1}")]
    Module(String, String),
}

/// Publishes the catalogue once, retrying until it succeeds or `stop`.
pub(crate) async fn publish(state: State, stop: CancellationToken) {
    let Some(folder) = state.config.catalogue_dir.clone() else {
        return;
    };
    let retry = ExponentialBuilder::default()
        .with_min_delay(Duration::from_millis(500))
        .with_max_delay(Duration::from_secs(30))
        .with_jitter()
        .without_max_times();
    let pass = (|| pass(&state, &folder))
        .retry(retry)
        .notify(|error, wait| tracing::warn!(%error, ?wait, "platform catalogue not published yet; retrying"));
    tokio::select! {
        () = stop.cancelled() => {}
        result = pass => match result {
            Ok(count) => tracing::info!(versions = count, folder = %folder.display(), "platform catalogue published"),
            Err(error) => tracing::error!(%error, "platform catalogue not published"),
        },
    }
}

/// One pass: release every module of the folder, retire the rest. Answers how many versions
/// the release carries.
async fn pass(state: &State, folder: &Path) -> Result<usize, PassError> {
    let (runner, objects) = state.apps.ready().map_err(|_| PassError::Unconfigured)?;
    let mut carried = BTreeSet::new();
    for path in modules_in(folder)? {
        let label = path.display().to_string();
        let bytes = std::fs::read(&path).map_err(|e| PassError::Folder(path.clone(), e))?;
        let inspection = runner
            .inspect(Bytes::from(bytes), "catalogue")
            .await
            .map_err(|e| PassError::Module(label.clone(), e.to_string()))?;
        let text = |field: &str| {
            inspection.manifest[field]
                .as_str()
                .unwrap_or_default()
                .to_owned()
        };
        let (name, version) = (text("name"), text("version"));
        objects
            .put(
                &ObjectStore::module_key(&inspection.sha256),
                inspection.module.to_vec(),
            )
            .await
            .map_err(|e| PassError::Module(label.clone(), e.to_string()))?;
        let command = ReleasePlatform {
            version_id: Uuid::now_v7(),
            name: name.clone(),
            version: version.clone(),
            module: Module {
                sha256: inspection.sha256.to_string(),
                size_bytes: inspection.module.len() as u64,
                manifest: inspection.manifest,
            },
        };
        apply(state, command, &label).await?;
        carried.insert((name, version));
    }
    for (id, name, version) in published_platform_versions(state).await? {
        if !carried.contains(&(name.clone(), version)) {
            let command = RetirePlatform {
                version_id: id,
                name,
            };
            apply(state, command, "retire").await?;
        }
    }
    Ok(carried.len())
}

/// Applies a platform version's command (no tenant: the platform's own).
async fn apply<C>(state: &State, command: C, label: &str) -> Result<(), PassError>
where
    C: Command<Body = AppsCommand, Reply = Version>,
{
    let envelope = Envelope::new(
        None,
        Principal::system("catalogue"),
        "catalogue",
        None,
        command.into(),
    );
    match commands::send_and_wait::<C>(&state.commands, &envelope).await {
        Ok(Outcome::Done { .. }) => Ok(()),
        Ok(Outcome::Refused(refusal)) => {
            // A release that reuses a version number for another module: say so, keep going.
            tracing::error!(module = label, reason = %refusal.message, "platform version refused");
            Ok(())
        }
        Err(error) => Err(PassError::Module(label.to_owned(), error.to_string())),
    }
}

/// The `*.wasm` files of the folder, in name order.
fn modules_in(folder: &Path) -> Result<Vec<PathBuf>, PassError> {
    let entries = std::fs::read_dir(folder).map_err(|e| PassError::Folder(folder.into(), e))?;
    let mut modules: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|path| path.extension().is_some_and(|e| e == "wasm"))
        .collect();
    modules.sort();
    Ok(modules)
}

async fn published_platform_versions(
    state: &State,
) -> Result<Vec<(Uuid, String, String)>, PassError> {
    sqlx::query_as(
        "SELECT id, name, version FROM app_versions WHERE tenant_id IS NULL AND status = 'published'",
    )
    .fetch_all(&state.reads.pool)
    .await
    .map_err(|e| PassError::Module("platform versions".into(), e.to_string()))
}
