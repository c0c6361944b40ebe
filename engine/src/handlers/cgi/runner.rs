//! One worker's CGI: which script a path names, and starting it for a
//! request, whose answer is then a [`Pipe`] body.

use std::io::{self, Read as _};
use std::net::SocketAddr;
use std::path::Path;
use std::rc::Rc;
use std::sync::Arc;
#[cfg(feature = "cold-lookups")]
use std::time::Duration;
use std::time::Instant;

use super::env::{content_length, request_env};
use super::process::Children;
use super::reply::ScriptReply;
use super::resolve::{Resolved, Resolver, Script};
use crate::config::{Config, Level};
use crate::handlers::pipe::Pipe;
use crate::handlers::protected::Protected;
use crate::handlers::spool::Spool;
use crate::http::parse::BodyFraming;
use crate::http::request::OwnedRequest;
use crate::http::{Status, TlsSession};
use crate::log::Logger;
use crate::sys::launcher::Launchers;

/// The `[[cgi]]` rules of one worker and the programs it runs.
#[derive(Debug)]
pub struct Cgi {
    cfg: Arc<Config>,
    /// The site whose `[[cgi]]` rules these are (0: the default site).
    site: usize,
    resolver: Resolver,
    children: Rc<Children>,
    /// What paths resolved to off the loop ([`Cgi::cold_lookups`]), and
    /// until when that is trusted.
    #[cfg(feature = "cold-lookups")]
    looked: std::collections::HashMap<Vec<u8>, (Resolved, Instant)>,
}

/// The two ends of the connection a request came on.
#[derive(Debug, Clone, Copy)]
pub struct Ends {
    /// The client (`REMOTE_ADDR`, `REMOTE_PORT`).
    pub remote: SocketAddr,
    /// Where it connected to (`SERVER_ADDR`, `SERVER_PORT`).
    pub local: SocketAddr,
    /// What TLS negotiated, over TLS (`HTTPS`, `SSL_PROTOCOL`, `SSL_CIPHER`).
    pub tls: Option<TlsSession>,
}

impl Cgi {
    /// CGI processes running now (this worker's).
    pub fn running(&self) -> usize {
        self.children.running()
    }

    /// Opens the rules' directories; programs are started by `launcher`
    /// if given, else by the worker itself; the files `protected` never
    /// run.
    pub fn new(
        cfg: &Arc<Config>,
        site: usize,
        launcher: Option<Arc<Launchers>>,
        protected: &Arc<Protected>,
    ) -> io::Result<Cgi> {
        let sc = cfg.site(site);
        Ok(Cgi {
            cfg: Arc::clone(cfg),
            site,
            resolver: Resolver::new(&sc.cgi, &sc.root)?.protecting(Arc::clone(protected)),
            children: Children::new(launcher, cfg.timeouts.cgi),
            #[cfg(feature = "cold-lookups")]
            looked: Default::default(),
        })
    }

    /// The rules of the configuration's site `site`, whose programs count
    /// with these (`limits.cgi_processes` is the worker's, whatever the
    /// site).
    pub fn for_site(&self, site: usize) -> io::Result<Cgi> {
        let sc = self.cfg.site(site);
        Ok(Cgi {
            cfg: Arc::clone(&self.cfg),
            site,
            resolver: Resolver::new(&sc.cgi, &sc.root)?
                .protecting(Arc::clone(&self.resolver.protected)),
            children: Rc::clone(&self.children),
            #[cfg(feature = "cold-lookups")]
            looked: Default::default(),
        })
    }

    /// Which script, if any, the decoded path `path` names (`now`: the
    /// event loop's clock, for what was resolved off the loop lately).
    pub fn resolve(&self, path: &[u8], now: Instant) -> Resolved {
        #[cfg(feature = "cold-lookups")]
        if let Some((resolved, until)) = self.looked.get(path) {
            if now < *until {
                return resolved.clone();
            }
        }
        let _ = now;
        self.resolver.resolve(path)
    }

    /// Whether resolving `path` ([`Cgi::resolve`]) would wait for the
    /// disk ([`Resolver::would_wait`]), not resolved off the loop lately.
    #[cfg(feature = "cold-lookups")]
    pub fn would_wait(&self, path: &[u8], now: Instant) -> bool {
        let lately = self.looked.get(path).is_some_and(|(_, until)| now < *until);
        !lately && self.resolver.would_wait(path)
    }

    /// What resolves `path` off the event loop, on a thread: the path,
    /// and for a directory (`/` at its end) each of `index`, as the CGI
    /// stage resolves them. `None` if the rules' directories cannot be
    /// handed over (out of descriptors).
    #[cfg(feature = "cold-lookups")]
    pub fn cold_lookups(
        &self,
        path: Vec<u8>,
        index: Vec<String>,
    ) -> Option<impl FnOnce() -> Vec<(Vec<u8>, Resolved)> + Send + 'static> {
        let resolver = self.resolver.try_clone().ok()?;
        Some(move || {
            let first = resolver.resolve(&path);
            let dir = first == Resolved::NotCgi && path.ends_with(b"/");
            let mut all = vec![(path.clone(), first)];
            for name in index.iter().filter(|_| dir) {
                let at = [&path[..], name.as_bytes()].concat();
                let resolved = resolver.resolve(&at);
                all.push((at, resolved));
            }
            all
        })
    }

    /// Keeps what [`Cgi::cold_lookups`] resolved, trusted from `now` for
    /// `valid` (the open-file cache's time); what is stale is forgotten.
    #[cfg(feature = "cold-lookups")]
    pub fn install(&mut self, found: Vec<(Vec<u8>, Resolved)>, now: Instant, valid: Duration) {
        self.looked.retain(|_, (_, until)| now < *until);
        for (path, resolved) in found {
            self.looked.insert(path, (resolved, now + valid));
        }
    }

    /// A 503 (logged) when this worker runs as many programs as
    /// `limits.cgi_processes` allows.
    pub fn over_limit(&self, log: &mut Logger) -> Option<Status> {
        let running = self.children.running();
        if running < self.cfg.limits.cgi_processes {
            return None;
        }
        log.log(
            Level::Warn,
            format_args!("cgi: {running} processes running; refusing another"),
        );
        Some(Status::SERVICE_UNAVAILABLE)
    }

    /// Starts `script` for `req`, which came from `ends`: its stdin is
    /// `held` (a body held whole) or else the request's body as it
    /// arrives. The answer's body is the program's output; the status to
    /// answer instead when it cannot be started.
    pub fn start(
        &self,
        script: &Script,
        req: &OwnedRequest,
        ends: Ends,
        mut held: Option<Spool>,
        log: &mut Logger,
    ) -> Result<Pipe, Status> {
        if let Some(status) = self.over_limit(log) {
            return Err(status);
        }
        if let Some(Err(e)) = held.as_mut().map(Spool::rewind) {
            log.log(
                Level::Error,
                format_args!(
                    "cgi: cannot read back the request body held in a temporary file: {e}"
                ),
            );
            return Err(Status::INTERNAL_SERVER_ERROR);
        }
        let content_length = content_length(held.as_ref(), req.body());
        let rule = &self.cfg.site(self.site).cgi[script.rule];
        let root = &self.cfg.site(self.site).root;
        let env = request_env(script, req, ends, root, content_length, &rule.env);
        let label = format!("cgi {}", script.script_filename.display());
        let started = self
            .children
            .spawn(&rule.writable, script.command(&env), &label);
        let (child, process) = match started {
            Ok(started) => started,
            Err(e) => {
                let cmd = script.command(&env);
                log.log(
                    Level::Error,
                    format_args!(
                        "cgi: cannot run {}: {}",
                        script.script_filename.display(),
                        spawn_failure(cmd.program, &script.script_filename, &e)
                    ),
                );
                return Err(Status::INTERNAL_SERVER_ERROR);
            }
        };
        let has_body = match &held {
            Some(body) => !body.is_empty(),
            None => req.body() != BodyFraming::None,
        };
        Ok(Pipe {
            output: child.stdout,
            input: child.stdin,
            diagnostics: child.stderr,
            held: held.filter(|body| !body.is_empty()),
            has_body,
            label,
            idle_timeout: self.cfg.timeouts.cgi,
            reply: Box::new(ScriptReply::new(
                process,
                script.nph,
                self.cfg.limits.cgi_header_bytes,
            )),
        })
    }

    /// Reaps programs that outlived their request, and logs how those
    /// that failed ended (see [`Children::reap`]).
    pub fn reap(&self, now: Instant, all: bool, log: &mut Logger) {
        self.children.reap(now, all, log);
    }

    /// Gives back memory a busier moment left behind.
    pub fn shrink(&self) {
        self.children.shrink();
    }
}

/// Why a program could not be started, naming the file that is missing:
/// exec says ENOENT alike for the script, a configured interpreter, and
/// the interpreter a script names on its first line (`#!`).
fn spawn_failure(program: &Path, script: &Path, e: &io::Error) -> String {
    if e.kind() != io::ErrorKind::NotFound {
        return e.to_string();
    }
    if program != script {
        return format!(
            "its rule's interpreter {} does not exist ({e})",
            program.display()
        );
    }
    let mut head = [0u8; 256];
    let n = match std::fs::File::open(script).and_then(|mut f| f.read(&mut head)) {
        Ok(n) => n,
        Err(_) => return e.to_string(),
    };
    let Some(line) = head[..n].strip_prefix(b"#!") else {
        return e.to_string();
    };
    let line = line.split(|&b| b == b'\n').next().unwrap_or_default();
    let interpreter = line
        .split(|b| b.is_ascii_whitespace() && *b != b'\r')
        .find(|word| !word.is_empty())
        .unwrap_or_default();
    let shown = String::from_utf8_lossy(interpreter);
    if let Some(name) = interpreter.strip_suffix(b"\r") {
        return format!(
            "its first line names the interpreter \"{}\\r\": the file has Windows line endings (CRLF); convert it with dos2unix or sed -i 's/\\r$//'",
            String::from_utf8_lossy(name)
        );
    }
    format!("the interpreter {shown} named on its first line (#!) does not exist ({e})")
}
