//! For the services' integration tests (cargo feature `testing`): the stack's environment, and a
//! service started through `./stack run` on port 0 that reports the ports it got.
//!
//! A service announces each listener in a `listening` log line (`listener`, `addr`; see
//! [`crate::http::serve`]). [`ServiceProcess`] reads the service's standard output on a thread of
//! its own for as long as the service runs (a pipe nobody reads would block its logging), takes
//! the addresses from those lines, and keeps every line in a file when asked. No test binds a
//! port, releases it and hands it to a service that may find it taken.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use crate::config::Env;

/// The environment `./stack up` wrote to `.stack/env`, overridden by the process environment.
#[derive(Debug, Clone)]
pub struct StackEnv {
    vars: HashMap<String, String>,
}

/// The workspace root (the checkout with `./stack`).
pub fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default()
}

/// The stack's environment, read once.
pub fn stack() -> &'static StackEnv {
    static STACK: OnceLock<StackEnv> = OnceLock::new();
    STACK.get_or_init(|| {
        let path = repo_root().join(".stack/env");
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| {
            panic!(
                "{} not readable ({e}): start the stack with ./stack up",
                path.display()
            )
        });
        let vars = text
            .lines()
            .filter_map(|line| line.split_once('='))
            .map(|(k, v)| {
                let key = k.trim().to_owned();
                let value = std::env::var(&key).unwrap_or_else(|_| v.trim().to_owned());
                (key, value)
            })
            .collect();
        StackEnv { vars }
    })
}

impl StackEnv {
    /// The whole environment, for a service's own configuration reader.
    pub fn env(&self) -> Env {
        Env::from_pairs(self.vars.clone())
    }

    pub fn var(&self, name: &str) -> &str {
        self.vars
            .get(name)
            .unwrap_or_else(|| panic!("{name} missing from .stack/env"))
    }
}

/// A service of the stack's build, started by a test with its own settings; stopped (SIGTERM,
/// then SIGKILL after 10 s) when dropped.
#[derive(Debug)]
pub struct ServiceProcess {
    child: Option<Child>,
    addrs: HashMap<String, SocketAddr>,
}

/// What a service's standard output told so far.
enum Heard {
    Listening(String, SocketAddr),
    Ended,
}

impl ServiceProcess {
    /// Starts `./stack run <service>` with `env` on top of the stack's, and waits until each of
    /// `listeners` has announced its address. The caller's `env` sets the listeners' ports to 0.
    /// With `log`, every line the service writes is kept there.
    pub async fn start(
        service: &str,
        env: &[(&str, &str)],
        listeners: &[&str],
        log: Option<&Path>,
    ) -> Self {
        let mut command = Command::new(repo_root().join("stack"));
        command
            .arg("run")
            .arg(service)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        // Metrics on ports of its own, not the stack's instance's (the caller may say otherwise).
        command.env("METRICS_PORT", "0");
        // A later setting of the same variable wins, as in a shell.
        for (key, value) in env {
            command.env(key, value);
        }
        // The `listening` lines are info lines of the serving module, whatever else is logged.
        let level = env
            .iter()
            .rev()
            .find(|(key, _)| *key == "LOG_LEVEL")
            .map_or("info", |(_, level)| level);
        command.env("LOG_LEVEL", format!("{level},service::http::serve=info"));
        let mut child = command.spawn().expect("./stack run starts");
        let stdout = child.stdout.take().expect("piped stdout");
        let (heard, mut hearing) = tokio::sync::mpsc::unbounded_channel();
        let mut kept = log.map(|path| std::fs::File::create(path).expect("log file"));
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if let Some(file) = kept.as_mut() {
                    let _ = writeln!(file, "{line}");
                }
                if let Some((listener, addr)) = listening(&line) {
                    let _ = heard.send(Heard::Listening(listener, addr));
                }
            }
            let _ = heard.send(Heard::Ended);
        });

        let mut process = Self {
            child: Some(child),
            addrs: HashMap::new(),
        };
        let deadline = Instant::now() + Duration::from_secs(60);
        while listeners.iter().any(|l| !process.addrs.contains_key(*l)) {
            let left = deadline.saturating_duration_since(Instant::now());
            match tokio::time::timeout(left, hearing.recv()).await {
                Ok(Some(Heard::Listening(listener, addr))) => {
                    process.addrs.insert(listener, addr);
                }
                Ok(Some(Heard::Ended) | None) => panic!("{service} exited while starting"),
                Err(_) => panic!("{service} did not announce {listeners:?} within 60 s"),
            }
        }
        process
    }

    /// The address `listener` is bound to.
    pub fn addr(&self, listener: &str) -> SocketAddr {
        self.addrs[listener]
    }

    /// `http://<addr of listener><path>`.
    pub fn url(&self, listener: &str, path: &str) -> String {
        format!("http://{}{path}", self.addr(listener))
    }

    pub fn pid(&self) -> u32 {
        self.child.as_ref().map_or(0, Child::id)
    }

    /// Sends SIGTERM and waits for the exit status (at most 40 s).
    pub fn terminate(&mut self) -> ExitStatus {
        let mut child = self.child.take().expect("running");
        signal(&child, "TERM");
        let deadline = Instant::now() + Duration::from_secs(40);
        loop {
            if let Some(status) = child.try_wait().expect("wait") {
                return status;
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                panic!("the service did not exit after SIGTERM");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for ServiceProcess {
    fn drop(&mut self) {
        let Some(mut child) = self.child.take() else {
            return;
        };
        signal(&child, "TERM");
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = child.kill();
        let _ = child.wait();
    }
}

fn signal(child: &Child, name: &str) {
    let _ = Command::new("kill")
        .arg(format!("-{name}"))
        .arg(child.id().to_string())
        .status();
}

/// The listener and address of a `listening` line.
fn listening(line: &str) -> Option<(String, SocketAddr)> {
    let value: serde_json::Value = serde_json::from_str(line).ok()?;
    if value.get("message")?.as_str()? != "listening" {
        return None;
    }
    let listener = value.get("listener")?.as_str()?.to_owned();
    let addr = value.get("addr")?.as_str()?.parse().ok()?;
    Some((listener, addr))
}

/// Asserts that README's configuration table documents exactly the variables `service` reads
/// (`read`, the service's own reader, and the telemetry settings every service reads), each with
/// the default the code uses. Rows are `` | `NAME` | services | default | meaning | ``; `all`
/// stands for every service. A default in backticks must be the code's default; a variable the
/// service cannot run without says `required`; one without a default says what happens instead
/// (`required for HS256` when only some settings need it), not in backticks.
pub fn assert_readme_documents(readme: &str, service: &str, read: impl FnOnce(&mut Env)) {
    let mut env = Env::from_pairs(Vec::<(String, String)>::new());
    let _ = crate::telemetry::Settings::read(&mut env);
    read(&mut env);
    assert_readme_rows(readme, service, env.variables());
}

fn assert_readme_rows(readme: &str, service: &str, read: &[crate::config::Variable]) {
    use crate::config::Fallback;
    let rows: Vec<(String, String)> = readme
        .lines()
        .filter_map(|line| {
            let cells: Vec<&str> = line.split('|').map(str::trim).collect();
            // "", name, used by, default, meaning, ""
            if cells.len() < 6 {
                return None;
            }
            let name = cells[1].strip_prefix('`')?.strip_suffix('`')?;
            let users = cells[2];
            let serves = users == "all" || users.split(',').any(|u| u.trim() == service);
            serves.then(|| (name.to_owned(), cells[3].to_owned()))
        })
        .collect();
    let mut problems = Vec::new();
    for variable in read {
        let documented: Vec<&String> = rows
            .iter()
            .filter(|(name, _)| name == variable.name)
            .map(|(_, default)| default)
            .collect();
        let [default] = documented.as_slice() else {
            problems.push(format!(
                "{} is read by {service} but documented {} times for it",
                variable.name,
                documented.len()
            ));
            continue;
        };
        let agrees = match &variable.fallback {
            Fallback::Value(value) => default.starts_with(&format!("`{value}`")),
            Fallback::Required => default.as_str() == "required",
            // "none", "unset (off)", or a condition such as "required for HS256".
            Fallback::Unset => !default.starts_with('`') && default.as_str() != "required",
        };
        if !agrees {
            problems.push(format!(
                "{}: README says {default:?}, the code {:?}",
                variable.name, variable.fallback
            ));
        }
    }
    for (name, _) in &rows {
        if !read.iter().any(|v| v.name == name) {
            problems.push(format!(
                "README lists {name} for {service}, which does not read it"
            ));
        }
    }
    assert!(
        problems.is_empty(),
        "README's configuration table disagrees with {service}:\n  {}",
        problems.join("\n  ")
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listening_lines_name_the_listener_and_its_address() {
        let line = r#"{"time":"t","level":"info","message":"listening","listener":"public","addr":"127.0.0.1:40123"}"#;
        assert_eq!(
            listening(line),
            Some((
                "public".to_owned(),
                "127.0.0.1:40123".parse().expect("addr")
            ))
        );
        assert_eq!(listening(r#"{"message":"request"}"#), None);
        assert_eq!(listening("not json"), None);
    }
}
