//! Compiled modules, by the sha256 that names them: in memory (a bounded LRU of linked
//! modules) and on disk (compiled artifacts), so a restart does not recompile every module.
//! A miss fetches the bytes from the API's internal listener, checks them against their hash and
//! the module rules, and compiles them (in the bounded compiler child) once however many calls
//! asked at the same time.

use std::hash::{DefaultHasher, Hash, Hasher};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use schema::module::Sha256;
use tokio::sync::Semaphore;
use wasmtime::Module;

use crate::Error;
use crate::compiler::{Compiler, artifact};
use crate::engine::{Compiled, Engine};
use crate::internal_api::{FetchError, InternalApi};

#[derive(Debug)]
pub(crate) struct ModuleCache {
    engine: Arc<Engine>,
    compiler: Compiler,
    api: Option<Arc<InternalApi>>,
    memory: moka::future::Cache<Sha256, Arc<Compiled>>,
    /// Modules refused when they were loaded (the module rules, the compiler's limits): a
    /// refusal is the module's own, so calls answer it again at once for a while instead of
    /// fetching and compiling it again, holding the one compile turn each time.
    refused: moka::future::Cache<Sha256, Error>,
    disk: Option<DiskCache>,
    /// Loads that fetch and compile at once. A load goes on after its caller's deadline (so the
    /// retry finds the module ready); this bounds how many such loads, and their bytes, exist.
    loading: Semaphore,
}

/// How long a refused module is answered from memory.
const REFUSAL_TTL: std::time::Duration = std::time::Duration::from_secs(600);
/// Loads that fetch and compile at once (each holds up to 32 MiB of module bytes).
const CONCURRENT_LOADS: usize = 4;

impl ModuleCache {
    pub(crate) fn new(
        engine: Arc<Engine>,
        compiler: Compiler,
        api: Option<Arc<InternalApi>>,
        entries: u64,
        disk_dir: Option<PathBuf>,
    ) -> Self {
        let disk = disk_dir.and_then(|dir| DiskCache::open(dir, &engine));
        Self {
            engine,
            compiler,
            api,
            memory: moka::future::Cache::builder().max_capacity(entries).build(),
            refused: moka::future::Cache::builder()
                .max_capacity(1024)
                .time_to_live(REFUSAL_TTL)
                .build(),
            disk,
            loading: Semaphore::new(CONCURRENT_LOADS),
        }
    }

    pub(crate) fn engine(&self) -> &Arc<Engine> {
        &self.engine
    }

    /// The linked module named by `sha256`.
    pub(crate) async fn get(&self, sha256: &Sha256) -> Result<Arc<Compiled>, Error> {
        if let Some(refusal) = self.refused.get(sha256).await {
            return Err(refusal);
        }
        let loaded = self
            .memory
            .try_get_with(sha256.clone(), self.load(sha256))
            .await
            .map_err(|error: Arc<Error>| (*error).clone());
        if let Err(error @ (Error::InvalidModule { .. } | Error::MissingExport(_))) = &loaded {
            self.refused.insert(sha256.clone(), error.clone()).await;
        }
        loaded
    }

    /// The linked module if it is in memory now; never fetches or compiles.
    pub(crate) async fn ready(&self, sha256: &Sha256) -> Option<Arc<Compiled>> {
        self.memory.get(sha256).await
    }

    /// Compiles bytes that are already in hand (inspection), without caching them.
    pub(crate) async fn compile(&self, bytes: &[u8]) -> Result<Compiled, Error> {
        let compilation = self.compiler.compile(bytes).await?;
        self.link_off_thread(Arc::new(compilation.artifact)).await
    }

    async fn load(&self, sha256: &Sha256) -> Result<Arc<Compiled>, Error> {
        if let Some(module) = self.read_disk(sha256).await {
            return self.engine.link(module).map(Arc::new);
        }
        let api = self
            .api
            .as_ref()
            .ok_or_else(|| Error::ModuleUnavailable("API_INTERNAL_URL is not configured".into()))?;
        let _loading = self.loading.acquire().await.map_err(internal)?;
        let bytes = api.module(sha256).await.map_err(|error| match error {
            FetchError::NotFound => Error::ModuleNotFound(sha256.to_string()),
            other => Error::ModuleUnavailable(other.to_string()),
        })?;
        let bytes = Arc::new(bytes.to_vec());
        check_off_thread(bytes.clone()).await?;
        let artifact = Arc::new(self.compiler.compile(&bytes).await?.artifact);
        let compiled = self.link_off_thread(artifact.clone()).await?;
        if let Some(disk) = self.disk.clone() {
            let sha256 = sha256.clone();
            tokio::task::spawn_blocking(move || disk.write(&sha256, &artifact));
        }
        Ok(Arc::new(compiled))
    }

    /// Loading an artifact maps and relocates its code: milliseconds for a large module.
    async fn link_off_thread(&self, artifact: Arc<Vec<u8>>) -> Result<Compiled, Error> {
        let engine = self.engine.clone();
        tokio::task::spawn_blocking(move || {
            let module = artifact::load(engine.wasmtime(), &artifact)
                .map_err(|e| internal(format!("loading a compiled module: {e}")))?;
            engine.link(module)
        })
        .await
        .map_err(internal)?
    }

    async fn read_disk(&self, sha256: &Sha256) -> Option<Module> {
        let disk = self.disk.clone()?;
        let engine = self.engine.clone();
        let sha256 = sha256.clone();
        tokio::task::spawn_blocking(move || disk.read(&engine, &sha256))
            .await
            .ok()
            .flatten()
    }
}

/// The module rules take about 14 ms per MB: off the async threads.
pub(crate) async fn check_off_thread(
    bytes: Arc<Vec<u8>>,
) -> Result<crate::inspect::ModuleShape, Error> {
    tokio::task::spawn_blocking(move || crate::inspect::check_module(&bytes))
        .await
        .map_err(internal)?
}

fn internal(error: impl std::fmt::Display) -> Error {
    Error::Internal(format!("module cache: {error}"))
}

/// Serialized modules under a directory only this process's user can write.
#[derive(Debug, Clone)]
struct DiskCache {
    dir: PathBuf,
    /// Names the engine configuration: artifacts of another configuration are never read.
    engine_tag: String,
}

impl DiskCache {
    fn open(dir: PathBuf, engine: &Engine) -> Option<Self> {
        if let Err(error) = create_private_dir(&dir) {
            tracing::warn!(%error, dir = %dir.display(), "module disk cache disabled");
            return None;
        }
        let mut hasher = DefaultHasher::new();
        engine
            .wasmtime()
            .precompile_compatibility_hash()
            .hash(&mut hasher);
        Some(Self {
            dir,
            engine_tag: format!("{:016x}", hasher.finish()),
        })
    }

    fn path(&self, sha256: &Sha256) -> PathBuf {
        self.dir.join(format!("{sha256}-{}.cwasm", self.engine_tag))
    }

    fn read(&self, engine: &Engine, sha256: &Sha256) -> Option<Module> {
        let path = self.path(sha256);
        let metadata = std::fs::symlink_metadata(&path).ok()?;
        if let Err(why) = owned_privately(&metadata) {
            tracing::warn!(path = %path.display(), why, "cached module not trusted; recompiling");
            let _ = std::fs::remove_file(&path);
            return None;
        }
        match artifact::load_file(engine.wasmtime(), &path) {
            Ok(module) => Some(module),
            Err(error) => {
                tracing::warn!(%error, path = %path.display(), "unreadable cached module; recompiling");
                let _ = std::fs::remove_file(&path);
                None
            }
        }
    }

    /// Best effort: a failed write only costs a recompilation later. Written to a name of its
    /// own, flushed to disk, then renamed: a crash leaves either the old state or a whole file.
    fn write(&self, sha256: &Sha256, artifact: &[u8]) {
        use std::io::Write;
        use std::os::unix::fs::OpenOptionsExt;
        let path = self.path(sha256);
        let partial = path.with_extension(format!(
            "{}-{}.partial",
            std::process::id(),
            uuid::Uuid::new_v4().simple()
        ));
        let result = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&partial)
            .and_then(|mut file| {
                file.write_all(artifact)?;
                file.sync_all()
            })
            .and_then(|()| std::fs::rename(&partial, &path));
        if let Err(error) = result {
            let _ = std::fs::remove_file(&partial);
            tracing::warn!(%error, path = %path.display(), "could not cache a compiled module");
        }
    }
}

/// A cached file is run as machine code: it must be a regular file of this user that nobody
/// else can write.
fn owned_privately(metadata: &std::fs::Metadata) -> Result<(), &'static str> {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    if !metadata.is_file() {
        return Err("not a regular file");
    }
    if metadata.uid() != rustix::process::geteuid().as_raw() {
        return Err("owned by another user");
    }
    if metadata.permissions().mode() & 0o022 != 0 {
        return Err("writable by others");
    }
    Ok(())
}

/// The cache's directory: created mode 0700, and refused unless it is a real directory (not a
/// link) owned by this user that nobody else can write: the runner runs what it finds there.
fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)?;
    let metadata = std::fs::symlink_metadata(dir)?;
    if !metadata.is_dir() {
        return Err(std::io::Error::other(format!(
            "{} is not a directory",
            dir.display()
        )));
    }
    let me = rustix::process::geteuid().as_raw();
    if metadata.uid() != me {
        return Err(std::io::Error::other(format!(
            "{} belongs to uid {}, not to this process's uid {me}",
            dir.display(),
            metadata.uid()
        )));
    }
    let mode = metadata.permissions().mode();
    if mode & 0o022 != 0 {
        return Err(std::io::Error::other(format!(
            "{} is writable by others (mode {mode:o})",
            dir.display()
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    #[test]
    fn a_new_directory_is_private() {
        let root = tempfile::tempdir().expect("tempdir");
        let dir = root.path().join("a/b");
        create_private_dir(&dir).expect("created");
        let mode = std::fs::metadata(&dir)
            .expect("exists")
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o700);
        create_private_dir(&dir).expect("an existing private directory is fine");
    }

    #[test]
    fn a_directory_others_can_write_is_refused() {
        let root = tempfile::tempdir().expect("tempdir");
        let dir = root.path().join("open");
        std::fs::create_dir(&dir).expect("created");
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).expect("chmod");
        let error = create_private_dir(&dir).expect_err("refused");
        assert!(error.to_string().contains("writable by others"), "{error}");
    }

    #[test]
    fn a_link_to_a_directory_is_refused() {
        let root = tempfile::tempdir().expect("tempdir");
        let target = root.path().join("target");
        create_private_dir(&target).expect("created");
        let link = root.path().join("link");
        std::os::unix::fs::symlink(&target, &link).expect("symlink");
        let error = create_private_dir(&link).expect_err("refused");
        assert!(error.to_string().contains("not a directory"), "{error}");
    }

    #[test]
    fn a_cached_file_must_be_a_private_regular_file() {
        let root = tempfile::tempdir().expect("tempdir");
        let file = root.path().join("a.cwasm");
        std::fs::write(&file, b"x").expect("written");
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).expect("chmod");
        let metadata = |p: &Path| std::fs::symlink_metadata(p).expect("metadata");
        assert_eq!(owned_privately(&metadata(&file)), Ok(()));
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o666)).expect("chmod");
        assert_eq!(owned_privately(&metadata(&file)), Err("writable by others"));
        let link = root.path().join("b.cwasm");
        std::os::unix::fs::symlink(&file, &link).expect("symlink");
        assert_eq!(owned_privately(&metadata(&link)), Err("not a regular file"));
    }

    #[test]
    fn a_directory_of_another_user_is_refused() {
        if rustix::process::geteuid().as_raw() != 0 {
            // Only root can hand a directory to another user; elsewhere the check is the same
            // comparison as below and the other tests cover the rest.
            return;
        }
        let root = tempfile::tempdir().expect("tempdir");
        let dir = root.path().join("theirs");
        create_private_dir(&dir).expect("created");
        std::os::unix::fs::chown(&dir, Some(1), Some(1)).expect("chown");
        let error = create_private_dir(&dir).expect_err("refused");
        assert!(error.to_string().contains("belongs to uid 1"), "{error}");
    }
}
