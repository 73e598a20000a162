//! An extra ingress with its own settings, started through `./stack run ingress` on ports it
//! picks itself, and stopped (SIGTERM) when dropped.

use std::path::Path;

use service::testing::ServiceProcess;

pub struct Instance {
    process: ServiceProcess,
}

impl Instance {
    /// Starts ingress with `env` on top of the stack's, and waits until both listeners are up.
    pub async fn start(env: &[(&str, &str)]) -> Self {
        Self::start_with_log(env, None).await
    }

    /// As [`Instance::start`], keeping every line the instance logs in `log`.
    pub async fn start_logging_to(env: &[(&str, &str)], log: &Path) -> Self {
        Self::start_with_log(env, Some(log)).await
    }

    async fn start_with_log(env: &[(&str, &str)], log: Option<&Path>) -> Self {
        let mut all = vec![("API_PORT", "0"), ("API_INTERNAL_PORT", "0")];
        all.extend_from_slice(env);
        let process = ServiceProcess::start("ingress", &all, &["public", "internal"], log).await;
        Self { process }
    }

    /// A URL of the public listener.
    pub fn url(&self, path: &str) -> String {
        self.process.url("public", path)
    }

    /// A URL of the internal listener.
    pub fn internal_url(&self, path: &str) -> String {
        self.process.url("internal", path)
    }

    /// The process id (`./stack run` execs the binary).
    pub fn pid(&self) -> u32 {
        self.process.pid()
    }

    /// Sends SIGTERM and waits for the exit status.
    pub fn terminate(&mut self) -> std::process::ExitStatus {
        self.process.terminate()
    }
}
