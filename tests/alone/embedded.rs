//! A server embedded in the test's process from a configuration file's
//! text (its `[log]` silenced), for the tests that count its heap.

use std::net::SocketAddr;
use std::path::PathBuf;

use brisk::config::{AccessFormat, Command, Level, LogField, LogTarget};
use brisk::log::LogService;
use brisk::server::{Running, Server};

/// A running server, its logs and its directory.
pub struct Embedded {
    /// Where it listens (its first listener).
    pub addr: SocketAddr,
    /// Every address it listens on, in the order of `Server::local_addrs`
    /// (plain listeners, then `[tls]`'s).
    #[cfg_attr(not(feature = "tls"), allow(dead_code))]
    pub addrs: Vec<SocketAddr>,
    running: Running,
    logs: LogService,
    dir: PathBuf,
}

impl Embedded {
    /// A server (one worker, logs off, root in a directory of its own
    /// named by `tag`) whose configuration ends with `rules`.
    pub fn start(tag: &str, rules: &str) -> Embedded {
        Embedded::start_logging(tag, rules, None)
    }

    /// As [`Embedded::start`], with its access log written to
    /// `access.log` in its directory in the format `access` names, if any,
    /// with every optional field (the upstream's among them).
    pub fn start_logging(tag: &str, rules: &str, access: Option<AccessFormat>) -> Embedded {
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
        cfg.log.access = match access {
            Some(format) => {
                cfg.log.format = format;
                cfg.log.fields = LogField::ALL.to_vec();
                LogTarget::File(dir.join("access.log"))
            }
            None => LogTarget::Off,
        };
        cfg.log.level = Level::Off;
        let logs = LogService::start(&cfg.log).unwrap();
        let server = Server::bind(cfg).unwrap();
        let addrs = server.local_addrs();
        let addr = addrs[0];
        let running = server.start(&logs).unwrap();
        Embedded {
            addr,
            addrs,
            running,
            logs,
            dir,
        }
    }

    /// Stops it and removes its directory: what its access log holds
    /// (empty without one).
    pub fn stop(self) -> String {
        self.running.stop();
        self.logs.shutdown();
        let log = std::fs::read_to_string(self.dir.join("access.log")).unwrap_or_default();
        let _ = std::fs::remove_dir_all(&self.dir);
        log
    }
}
