//! A server embedded in the test's process from a configuration file's
//! text (its `[log]` silenced), for the tests that count its heap.

use std::net::SocketAddr;
use std::path::PathBuf;

use brisk::config::{Command, Level, LogTarget};
use brisk::log::LogService;
use brisk::server::{Running, Server};

/// A running server, its logs and its directory.
pub struct Embedded {
    /// Where it listens (its first listener).
    pub addr: SocketAddr,
    running: Running,
    logs: LogService,
    dir: PathBuf,
}

impl Embedded {
    /// A server (one worker, logs off, root in a directory of its own
    /// named by `tag`) whose configuration ends with `rules`.
    pub fn start(tag: &str, rules: &str) -> Embedded {
        let dir = std::env::temp_dir().join(format!("brisk-{tag}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("brisk.toml");
        std::fs::write(
            &file,
            format!(
                "listen = [\"127.0.0.1:0\"]\nroot = \"{}\"\nworkers = 1\n\
                 [log]\naccess = \"off\"\nerror = \"off\"\nlevel = \"off\"\n{rules}",
                dir.display()
            ),
        )
        .unwrap();
        let args = ["--config", file.to_str().unwrap()].map(Into::into);
        let mut cfg = match brisk::config::from_args(args) {
            Ok(Command::Run(cfg)) => cfg,
            Err(e) => panic!("{e}"),
            Ok(_) => panic!("not a configuration to run"),
        };
        cfg.log.access = LogTarget::Off;
        cfg.log.level = Level::Off;
        let logs = LogService::start(&cfg.log).unwrap();
        let server = Server::bind(cfg).unwrap();
        let addr = server.local_addrs()[0];
        let running = server.start(&logs).unwrap();
        Embedded {
            addr,
            running,
            logs,
            dir,
        }
    }

    /// Stops it and removes its directory.
    pub fn stop(self) {
        self.running.stop();
        self.logs.shutdown();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
