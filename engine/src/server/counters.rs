//! What the workers of a configuration count in together: open
//! connections (in all and per client address), failed logins per
//! client, requests per client (`[[rate_limit]]`), and the shared bucket
//! of each `[[throttle]]` rate. Unlike the
//! static handler's settings these are state, and a reload keeps them
//! where its limits are unchanged.

use std::sync::Arc;
use std::time::Instant;

use crate::access::limits::ConnLimits;
use crate::access::rate::RateTable;
use crate::access::throttle::Rate;
use crate::access::SharedFailures;
use crate::config::Config;

/// The counters shared by every worker of one configuration.
#[derive(Debug)]
pub struct Counters {
    /// The shared rate of each `[[throttle]]` rule (all workers draw on
    /// it): the default site's rules, then each `[[site]]`'s, in order.
    pub throttles: Vec<Option<Arc<Rate>>>,
    /// Open connections, counted across workers (and across a reload).
    pub conn_limits: Arc<ConnLimits>,
    /// Failed logins per client, counted across workers.
    pub auth_failures: SharedFailures,
    /// The `[[rate_limit]]` buckets, shared by every worker; `None`
    /// without a rule (no table is made).
    pub rates: Option<Arc<RateTable>>,
    /// `limits.max_connections` and `max_connections_per_ip` they count
    /// against.
    conn_caps: (usize, u32),
    /// `limits.auth_failures` and `timeouts.auth_failure_window`.
    failure_caps: (u32, std::time::Duration),
}

impl Counters {
    /// Fresh counters for `cfg`.
    pub fn new(cfg: &Config) -> Counters {
        let now = Instant::now();
        let conn_caps = (
            cfg.limits.max_connections,
            cfg.limits.max_connections_per_ip,
        );
        Counters {
            throttles: crate::config::SiteConfig::all(cfg)
                .flat_map(|site| &site.throttle)
                .map(|t| t.rate.map(|r| Arc::new(Rate::new(r, now))))
                .collect(),
            conn_limits: Arc::new(ConnLimits::new(conn_caps.0, conn_caps.1)),
            auth_failures: SharedFailures::new(
                cfg.limits.auth_failures,
                cfg.timeouts.auth_failure_window,
            ),
            rates: crate::config::SiteConfig::all(cfg)
                .any(|site| !site.admission.rate.is_empty())
                .then(|| Arc::new(RateTable::new())),
            conn_caps,
            failure_caps: (cfg.limits.auth_failures, cfg.timeouts.auth_failure_window),
        }
    }

    /// After a reload: keeps counting open connections and failed logins
    /// where `old` counts them, when the limits are the same, so that the
    /// connections the previous workers still serve count against the
    /// same `limits.max_connections` (new limits start new counts).
    pub fn carry_over(&mut self, old: &Counters) {
        if self.conn_caps == old.conn_caps {
            self.conn_limits = Arc::clone(&old.conn_limits);
        }
        if self.failure_caps == old.failure_caps {
            self.auth_failures = old.auth_failures.clone();
        }
        // (Buckets are keyed by site and rule number: a reload that
        // reorders the rules starts those clients over, no worse.)
        if let (Some(_), Some(table)) = (&self.rates, &old.rates) {
            self.rates = Some(Arc::clone(table));
        }
    }
}
