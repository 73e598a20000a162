//! A database and a Kafka broker of a test's own, for a test whose services must not share the
//! stack's: its pipeline would otherwise share the stack's consumer groups (and the stack's
//! pipeline take its commands), and relay the stack's outbox.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use service::testing::{repo_root, stack};
use uuid::Uuid;

/// A turn at running a broker of one's own: one test at a time, across test processes (nextest)
/// and checkouts on one machine. Two JVMs starting together beside the suite on two cores have
/// taken over 180 s; one alone takes seconds. Held for the whole test (a test may restart its
/// broker).
pub struct BrokerTurn {
    _lock: std::fs::File,
}

impl BrokerTurn {
    pub async fn take() -> Self {
        let path = std::env::temp_dir().join("apps-platform-test-broker.lock");
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .expect("broker lock file");
        let file = tokio::task::spawn_blocking(move || {
            file.lock().expect("broker lock");
            file
        })
        .await
        .expect("lock task");
        Self { _lock: file }
    }
}

/// A Kafka of the test's own (`./stack kafka DIR PORT`), stopped (SIGTERM, then SIGKILL) when
/// dropped.
pub struct Broker {
    dir: PathBuf,
    port: u16,
    child: Option<Child>,
}

impl Broker {
    /// Starts one keeping its data in `dir` (a restart on the same `dir` finds its topics), on
    /// `port` (and `port + 1`, its controller's).
    pub fn start(dir: PathBuf, port: u16) -> Self {
        std::fs::create_dir_all(&dir).expect("broker dir");
        // The broker's own lines (it logs to standard output), for a test whose broker did not
        // start to say why.
        let output = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(dir.join("broker.out"))
            .expect("broker output file");
        let child = Command::new(repo_root().join("stack"))
            .args(["kafka", dir.to_str().expect("utf-8"), &port.to_string()])
            .stdin(Stdio::null())
            .stdout(output)
            .stderr(Stdio::inherit())
            .spawn()
            .expect("./stack kafka starts");
        Self {
            dir,
            port,
            child: Some(child),
        }
    }

    /// `host:port` for `KAFKA_BROKERS`.
    pub fn address(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    pub async fn wait_accepting(&mut self) {
        // A JVM starting on two cores shared with the whole suite has taken over 90 s.
        let deadline = Instant::now() + Duration::from_secs(180);
        while tokio::net::TcpStream::connect(("127.0.0.1", self.port))
            .await
            .is_err()
        {
            let ended = self
                .child
                .as_mut()
                .and_then(|c| c.try_wait().ok().flatten());
            assert!(
                Instant::now() < deadline && ended.is_none(),
                "the broker did not start in 180 s (ended: {ended:?}); its last lines:\n{}",
                self.last_lines()
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// The end of what the broker wrote.
    fn last_lines(&self) -> String {
        let output = std::fs::read_to_string(self.dir.join("broker.out")).unwrap_or_default();
        let start = output.len().saturating_sub(4000);
        output[output.ceil_char_boundary(start)..].to_owned()
    }

    /// Stops it as an operator does (SIGTERM: a controlled shutdown) and waits for the exit,
    /// without holding up the test's other tasks (the writers keep writing meanwhile).
    pub async fn stop(&mut self) {
        let Some(mut child) = self.child.take() else {
            return;
        };
        let _ = Command::new("kill")
            .args(["-TERM", &child.id().to_string()])
            .status();
        let deadline = Instant::now() + Duration::from_secs(40);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = child.try_wait() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let _ = child.kill();
        let _ = child.wait();
    }
}

impl Drop for Broker {
    /// A test that failed first leaves its broker running: killed here.
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A database of the test's own on the stack's Postgres, dropped at the end, so the test's
/// pipeline relays no other test's outbox rows to its broker, nor the stack's pipeline its.
pub struct Database {
    name: String,
    pub url: String,
}

impl Database {
    /// A new database named `<prefix>_<uuid>`.
    pub async fn create(prefix: &str) -> Self {
        let name = format!("{prefix}_{}", Uuid::new_v4().simple());
        let stack_url = stack().var("DATABASE_URL");
        let (server, _) = stack_url.rsplit_once('/').expect("a database name");
        let pool = sqlx::PgPool::connect(stack_url).await.expect("postgres");
        // The name is ours: a test's fixed prefix and a UUID's hex.
        sqlx::query(sqlx::AssertSqlSafe(format!("CREATE DATABASE {name}")))
            .execute(&pool)
            .await
            .expect("database created");
        Self {
            url: format!("{server}/{name}"),
            name,
        }
    }
}

impl Drop for Database {
    /// Dropped with the test, passed or failed (`WITH (FORCE)`: the test's services may still
    /// hold connections). On a thread of its own: a test's runtime cannot block on it.
    fn drop(&mut self) {
        let drop = format!("DROP DATABASE IF EXISTS {} WITH (FORCE)", self.name);
        let dropping = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("runtime");
            runtime.block_on(async {
                if let Ok(pool) = sqlx::PgPool::connect(stack().var("DATABASE_URL")).await {
                    let _ = sqlx::query(sqlx::AssertSqlSafe(drop)).execute(&pool).await;
                }
            });
        });
        let _ = dropping.join();
    }
}
