//! The built-in handlers for load balancers and orchestrators, mounted by
//! `[[handlers]]` (`handler = "health"`, …; registered by the `brisk`
//! command, see `crate::process`):
//!
//! - `health`: liveness. `200 ok` whenever a worker can answer at all.
//! - `ready`: readiness. `200 ready`, and `503 stopping` from the moment
//!   a stop begins (SIGTERM, through `timeouts.stop_delay` and the drain),
//!   so that a balancer stops sending new requests while the listeners
//!   are still open.
//! - `metrics`: the Prometheus text exposition of the server's counters
//!   (see [`super::stats`]).
//! - `status`: a small status page, HTML, or JSON with `?json` or
//!   `Accept: application/json` (lighttpd's mod_status).
//!
//! All answer every method, with `Cache-Control: no-store`; none takes a
//! `config` table.

use crate::ascii::IgnoreCase;
use std::fmt::Write as _;
use std::sync::Arc;

use super::app::{Handler, Init, Request, Response};
use super::stats::{self, Lifecycle, CLASSES};

/// Refuses any `config` table: these handlers have no settings.
fn no_config(init: &Init<'_>) -> Result<(), String> {
    match init.config.keys().next() {
        Some(key) => Err(format!(
            "config.{key}: unknown key; this handler takes no settings"
        )),
        None => Ok(()),
    }
}

/// A plain-text answer that no cache keeps.
fn plain(resp: &mut Response<'_>, status: u16, text: &str) {
    resp.set_status(status);
    let _ = resp.header("Content-Type", "text/plain; charset=utf-8");
    let _ = resp.header("Cache-Control", "no-store");
    resp.write(text.as_bytes());
}

/// `health`: liveness.
#[derive(Debug, Clone, Default)]
pub struct Health;

impl Handler for Health {
    fn init(&mut self, init: &Init<'_>) -> Result<(), String> {
        no_config(init)
    }

    fn handle(&self, _: &Request<'_>, resp: &mut Response<'_>) {
        plain(resp, 200, "ok\n");
    }
}

/// `ready`: readiness, 503 once a stop has begun.
#[derive(Debug, Clone)]
pub struct Ready(pub Arc<Lifecycle>);

impl Handler for Ready {
    fn init(&mut self, init: &Init<'_>) -> Result<(), String> {
        no_config(init)
    }

    fn handle(&self, _: &Request<'_>, resp: &mut Response<'_>) {
        if self.0.stopping() {
            let _ = resp.header("Retry-After", "1");
            plain(resp, 503, "stopping\n");
        } else {
            plain(resp, 200, "ready\n");
        }
    }
}

/// `metrics`: Prometheus text format.
#[derive(Debug, Clone)]
pub struct Metrics(pub Arc<Lifecycle>);

impl Handler for Metrics {
    fn init(&mut self, init: &Init<'_>) -> Result<(), String> {
        no_config(init)
    }

    fn handle(&self, _: &Request<'_>, resp: &mut Response<'_>) {
        let _ = resp.header("Content-Type", "text/plain; version=0.0.4; charset=utf-8");
        let _ = resp.header("Cache-Control", "no-store");
        resp.write(stats::prometheus(&self.0).as_bytes());
    }
}

/// `status`: HTML, or JSON.
#[derive(Debug, Clone)]
pub struct Status(pub Arc<Lifecycle>);

impl Handler for Status {
    fn init(&mut self, init: &Init<'_>) -> Result<(), String> {
        no_config(init)
    }

    fn handle(&self, req: &Request<'_>, resp: &mut Response<'_>) {
        let json = req
            .query
            .is_some_and(|q| q.split(|&b| b == b'&').any(|p| p == b"json"))
            || req
                .header("accept")
                .is_some_and(|a| a.windows(16).any(|w| w.eq_ignore_case(b"application/json")));
        let _ = resp.header("Cache-Control", "no-store");
        let page = if json {
            let _ = resp.header("Content-Type", "application/json");
            status_json(&self.0)
        } else {
            let _ = resp.header("Content-Type", "text/html; charset=utf-8");
            status_html(&self.0)
        };
        resp.write(page.as_bytes());
    }
}

/// The numbers the status page shows, all workers together and each.
struct Summary {
    workers: Vec<stats::Counts>,
    all: stats::Counts,
}

fn summary(life: &Lifecycle) -> Summary {
    let workers = life.per_worker();
    let mut all = stats::Counts::default();
    for c in &workers {
        for (a, b) in all.requests.iter_mut().zip(&c.requests) {
            *a += b;
        }
        all.sent += c.sent;
        all.open += c.open;
        all.idle += c.idle;
        all.cgi += c.cgi;
        all.throttled += c.throttled;
        all.auth_failures += c.auth_failures;
    }
    Summary { workers, all }
}

/// Requests of each status class, all methods together.
fn by_class(c: &stats::Counts) -> [u64; CLASSES.len()] {
    let mut out = [0; CLASSES.len()];
    for (i, n) in c.requests.iter().enumerate() {
        out[i % CLASSES.len()] += n;
    }
    out
}

fn status_json(life: &Lifecycle) -> String {
    let s = summary(life);
    let classes = |c: &stats::Counts| {
        let by = by_class(c);
        let parts: Vec<String> = CLASSES
            .iter()
            .zip(by)
            .map(|(k, n)| format!("\"{k}\":{n}"))
            .collect();
        format!("{{{}}}", parts.join(","))
    };
    let worker = |c: &stats::Counts| {
        format!(
            "{{\"requests\":{},\"by_class\":{},\"sent_bytes\":{},\"open_connections\":{},\"idle_connections\":{},\"cgi_processes\":{}}}",
            c.requests_total(),
            classes(c),
            c.sent,
            c.open,
            c.idle,
            c.cgi
        )
    };
    let workers: Vec<String> = s.workers.iter().map(worker).collect();
    format!(
        "{{\"version\":\"{}\",\"uptime_seconds\":{},\"stopping\":{},\"reloads\":{},\"requests\":{},\"by_class\":{},\"sent_bytes\":{},\"throttled_bytes\":{},\"auth_failures\":{},\"open_connections\":{},\"idle_connections\":{},\"cgi_processes\":{},\"workers\":[{}]}}\n",
        env!("CARGO_PKG_VERSION"),
        life.uptime().as_secs(),
        life.stopping(),
        life.reloads(),
        s.all.requests_total(),
        classes(&s.all),
        s.all.sent,
        s.all.throttled,
        s.all.auth_failures,
        s.all.open,
        s.all.idle,
        s.all.cgi,
        workers.join(",")
    )
}

fn status_html(life: &Lifecycle) -> String {
    let s = summary(life);
    let mut h = String::with_capacity(2048);
    let up = life.uptime().as_secs();
    let _ = write!(
        h,
        "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>brisk status</title></head><body>\n<h1>brisk {} status</h1>\n<p>Up {}d {:02}:{:02}:{:02}; {}; {} reloads.</p>\n",
        env!("CARGO_PKG_VERSION"),
        up / 86400,
        up / 3600 % 24,
        up / 60 % 60,
        up % 60,
        if life.stopping() { "stopping" } else { "serving" },
        life.reloads()
    );
    let _ = write!(
        h,
        "<table border=\"1\">\n<tr><th>worker</th><th>requests</th>{}<th>bytes sent</th><th>open</th><th>idle</th><th>CGI</th></tr>\n",
        CLASSES.iter().map(|c| format!("<th>{c}</th>")).collect::<String>()
    );
    let row =
        |h: &mut String, name: &str, c: &stats::Counts| {
            let _ =
                writeln!(
            h,
            "<tr><td>{name}</td><td>{}</td>{}<td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            c.requests_total(),
            by_class(c).iter().map(|n| format!("<td>{n}</td>")).collect::<String>(),
            c.sent,
            c.open,
            c.idle,
            c.cgi
        );
        };
    for (i, c) in s.workers.iter().enumerate() {
        row(&mut h, &i.to_string(), c);
    }
    row(&mut h, "all", &s.all);
    let _ = write!(
        h,
        "</table>\n<p>Throttled bytes: {}. Failed logins: {}.</p>\n</body></html>\n",
        s.all.throttled, s.all.auth_failures
    );
    h
}
