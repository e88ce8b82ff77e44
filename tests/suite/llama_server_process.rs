//! A llama.cpp `llama-server` process on a free 127.0.0.1 port, for the real-server tests and
//! the server bench (which includes this file by path). `scripts/build-llama-server.sh`
//! builds the binary once under `target/`; `RALPH_LLAMA_SERVER` names another one.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test and bench setup aborts on errors"
)]

use std::path::{Path, PathBuf};
use std::process::{Child as Process, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

/// A running llama-server; killed when dropped.
pub struct Server {
    process: Process,
    /// Base URL up to and including `/v1`.
    pub url: String,
    /// `http://127.0.0.1:PORT`, for `/health`, `/props` and `/slots`.
    pub origin: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.process.kill();
        let _ = self.process.wait();
    }
}

/// The llama-server binary: `RALPH_LLAMA_SERVER`, else the one the build script makes.
pub fn server_binary() -> PathBuf {
    std::env::var_os("RALPH_LLAMA_SERVER")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR"))
                .join("target/llama-server/build/bin/llama-server")
        })
}

/// `GET url` as JSON; `None` on any failure or a non-success status.
pub fn get(url: &str) -> Option<Value> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let response = reqwest::get(url).await.ok()?;
        if !response.status().is_success() {
            return None;
        }
        serde_json::from_str(&response.text().await.ok()?).ok()
    })
}

impl Server {
    /// Starts `model` with `--jinja`, `threads` threads, a 4096-token context and one slot
    /// (`template` in place of the model's own chat template, when given), and waits until
    /// `/health` answers. Its log goes to a file in the temp dir, named in any failure.
    pub fn start(model: &Path, threads: usize, template: Option<&Path>) -> Self {
        let binary = server_binary();
        assert!(
            binary.is_file(),
            "no llama-server at {}: run scripts/build-llama-server.sh (make test and make bench run it), or set RALPH_LLAMA_SERVER",
            binary.display()
        );
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let log = std::env::temp_dir().join(format!("llama-server-{port}.log"));
        let mut command = Command::new(binary);
        if let Some(template) = template {
            command.arg("--chat-template-file").arg(template);
        }
        let process = command
            .arg("-m")
            .arg(model)
            .args([
                "--jinja",
                "--host",
                "127.0.0.1",
                "--port",
                &port.to_string(),
            ])
            .args([
                "-t",
                &threads.to_string(),
                "-c",
                "4096",
                "--parallel",
                "1",
                "--slots",
            ])
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .unwrap();
        let origin = format!("http://127.0.0.1:{port}");
        let server = Self {
            process,
            url: format!("{origin}/v1"),
            origin,
        };
        let deadline = Instant::now() + Duration::from_secs(60);
        while get(&format!("{}/health", server.origin)).is_none() {
            assert!(
                Instant::now() < deadline,
                "llama-server did not come up; its log is {}",
                log.display()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        server
    }

    /// Whether the server's one slot is still generating (`/slots`).
    pub fn busy(&self) -> bool {
        get(&format!("{}/slots", self.origin))
            .and_then(|s| {
                s.as_array()
                    .map(|a| a.iter().any(|s| s["is_processing"] == true))
            })
            .unwrap_or(true)
    }
}
