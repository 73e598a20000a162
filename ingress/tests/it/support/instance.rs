//! An extra ingress with its own settings, started through `./stack run ingress` and stopped
//! (SIGTERM) when dropped.

use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::repo_root;

pub struct Instance {
    child: Option<Child>,
    pub port: u16,
    pub internal_port: u16,
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .expect("bind")
        .local_addr()
        .expect("addr")
        .port()
}

impl Instance {
    /// Starts ingress with `env` on free ports and waits until `/health` answers.
    pub async fn start(env: &[(&str, &str)]) -> Self {
        let port = free_port();
        let internal_port = free_port();
        let mut command = Command::new(repo_root().join("stack"));
        command
            .arg("run")
            .arg("ingress")
            .env("API_PORT", port.to_string())
            .env("API_INTERNAL_PORT", internal_port.to_string())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit());
        for (key, value) in env {
            command.env(key, value);
        }
        let child = command.spawn().expect("./stack run ingress starts");
        let instance = Self {
            child: Some(child),
            port,
            internal_port,
        };
        instance.wait_until_live().await;
        instance
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    async fn wait_until_live(&self) {
        let deadline = Instant::now() + Duration::from_secs(30);
        let http = reqwest::Client::new();
        while Instant::now() < deadline {
            if let Ok(r) = http.get(self.url("/health")).send().await
                && r.status().is_success()
            {
                return;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!("extra ingress on port {} did not come up", self.port);
    }

    pub fn pid(&self) -> u32 {
        self.child.as_ref().expect("running").id()
    }

    /// Sends SIGTERM and waits for the exit status.
    pub fn terminate(&mut self) -> std::process::ExitStatus {
        let mut child = self.child.take().expect("running");
        let _ = Command::new("kill")
            .arg("-TERM")
            .arg(child.id().to_string())
            .status();
        let deadline = Instant::now() + Duration::from_secs(40);
        loop {
            if let Some(status) = child.try_wait().expect("wait") {
                return status;
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                panic!("ingress did not exit after SIGTERM");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Instance {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = Command::new("kill")
                .arg("-TERM")
                .arg(child.id().to_string())
                .status();
            let _ = child.wait();
        }
    }
}
