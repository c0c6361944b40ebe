//! brisk as a library in a test: a server started in the test's process
//! with handlers of the test's own, stopped on drop.

use std::net::SocketAddr;

use brisk::config::{Config, Level, LogTarget};
use brisk::log::LogService;
use brisk::server::{Running, Server};

use super::{Client, Response, TempDir};

/// A running embedded server; `dir` holds its files and error log.
pub struct App {
    pub running: Option<Running>,
    pub logs: Option<LogService>,
    pub addr: SocketAddr,
    /// Every listener: `addr`, then the TLS one if configured.
    pub addrs: Vec<SocketAddr>,
    pub dir: TempDir,
}

impl Drop for App {
    fn drop(&mut self) {
        if let Some(r) = self.running.take() {
            r.stop();
        }
        if let Some(l) = self.logs.take() {
            l.shutdown();
        }
    }
}

/// A configuration for an embedded server: one worker on an ephemeral
/// port of 127.0.0.1, the document root `dir/root` (made here), no access
/// log, errors to `dir/error.log`.
pub fn config(dir: &TempDir) -> Config {
    let root = dir.path.join("root");
    std::fs::create_dir_all(&root).unwrap();
    let mut cfg = Config {
        listen: vec!["127.0.0.1:0".parse().unwrap()],
        site: brisk::config::SiteConfig {
            root: root.canonicalize().unwrap(),
            ..Config::default().site
        },
        workers: 1,
        ..Config::default()
    };
    cfg.log.access = LogTarget::Off;
    cfg.log.error = LogTarget::File(dir.path.join("error.log"));
    cfg.log.level = Level::Error;
    cfg
}

impl App {
    /// Binds `cfg`, lets `mount` add handlers, and starts it.
    pub fn start(cfg: Config, dir: TempDir, mount: impl FnOnce(&mut Server)) -> App {
        let logs = LogService::start(&cfg.log).unwrap();
        let mut server = Server::bind(cfg).unwrap();
        mount(&mut server);
        let addrs = server.local_addrs();
        let running = server.start(&logs).unwrap();
        App {
            running: Some(running),
            logs: Some(logs),
            addr: addrs[0],
            addrs,
            dir,
        }
    }

    pub fn connect(&self) -> Client {
        Client::connect(self.addr)
    }

    /// Sends `raw` on a new connection and reads one response.
    pub fn request(&self, raw: &[u8]) -> Response {
        let mut c = self.connect();
        c.send(raw);
        c.response()
    }

    /// The error log (`error.log` in `dir`, where the tests put it).
    pub fn error_log(&self) -> String {
        std::fs::read_to_string(self.dir.path.join("error.log")).unwrap_or_default()
    }
}
