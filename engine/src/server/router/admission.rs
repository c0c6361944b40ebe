//! The router's admission stage: `[[access]]`, then `[[rate_limit]]`
//! (see the module documentation of [`super`]).

use super::{Router, Routing};
use crate::access::admission;
use crate::access::rate::{self, Limit};
use crate::config::admission::RateKey;
use crate::config::Level;
use crate::handlers::Plan;
use crate::http::Status;

impl Router {
    /// The admission stage, on the client's real address (after `[proxy]`
    /// has named it): 403 from an `[[access]]` rule that refuses it, then
    /// 429 with `Retry-After` from the first `[[rate_limit]]` rule whose
    /// bucket is full. Every matching `[[rate_limit]]` rule counts the
    /// request, once (not again when it is routed again after its
    /// password check).
    pub(super) fn admit(&mut self, routing: &mut Routing<'_>) -> Option<Plan> {
        let site = routing.req.site();
        let rules = &self.cfg.site(site).admission;
        let folding = &self.cfg.site(site).folding;
        let path = routing.req.path().ok()?;
        let client = routing.client.peer.ip();
        // (A COPY or MOVE writes at its Destination too, and an If header
        // reads what it names: judged alike.)
        let mut also = Vec::new();
        let dav = &self.cfg.site(site).webdav;
        let reach = match super::judged_too(routing.req, dav, &mut also) {
            Ok(reach) => reach,
            Err(status) => return Some(Plan::error(status, routing.scratch)),
        };
        let paths = std::iter::once(path).chain(also.iter().map(Vec::as_slice));
        let judged = paths
            .map(|p| {
                admission::judge(&rules.access, (p, reach), folding, client).map_err(|r| (r, p))
            })
            .find(Result::is_err)
            .unwrap_or(Ok(()));
        if let Err((rule, refused)) = judged {
            let dest = if refused == path {
                ""
            } else {
                " (named by the request)"
            };
            let to = (&mut *routing.log, &mut *routing.scratch);
            return Some(access_refused(to, client, (refused, dest), &rule.origin));
        }
        if rules.rate.is_empty() || routing.req.rate_counted() {
            return None;
        }
        let table = self.rates.as_ref()?;
        let mut refused = None;
        // The bucket each matching rule takes from, and at what pace.
        let bucket = |i: usize, rule: &crate::config::admission::RateRule| {
            // (One bucket for every spelling of a path found in any case.)
            let spelt = match folding.covers(path) {
                true => crate::http::glob::fold(path),
                false => std::borrow::Cow::Borrowed(path),
            };
            let by_path = (rule.key == RateKey::AddressPath).then_some(&*spelt);
            let key = table.key((site as u64) << 32 | i as u64, client, by_path);
            let limit = Limit {
                interval: rule.interval,
                burst: rule.burst,
            };
            (key, limit)
        };
        for (i, rule) in rules.rate.iter().enumerate() {
            if !rule.matcher.matches_in(path, folding) {
                continue;
            }
            let (key, limit) = bucket(i, rule);
            if let Err(wait) = table.take(key, limit, routing.client.now) {
                refused = Some((wait, i));
                break;
            }
        }
        if let Some((_, at)) = refused {
            // A refused request is not counted by the rules before the
            // one that refused it either (nginx's limit_req accounts a
            // request to its zones once they all let it through).
            for (i, rule) in rules.rate.iter().enumerate().take(at) {
                if rule.matcher.matches_in(path, folding) {
                    let (key, limit) = bucket(i, rule);
                    table.give_back(key, limit);
                }
            }
        }
        let Some((wait, i)) = refused else {
            routing.req.set_rate_counted();
            return None;
        };
        let secs = rate::retry_after_secs(wait);
        if routing.log.enabled(Level::Debug) {
            routing.log.log(
                Level::Debug,
                format_args!(
                    "client {client} over [[rate_limit]] {} ({}) for {}; 429, retry after {secs} s",
                    i + 1,
                    rules.rate[i].rate_text,
                    String::from_utf8_lossy(path),
                ),
            );
        }
        routing.req.set_rate_counted();
        let mut v = Vec::with_capacity(20);
        crate::http::push_u64(&mut v, secs);
        routing.scratch.header("Retry-After", &v);
        Some(Plan::error(Status::TOO_MANY_REQUESTS, routing.scratch))
    }
}

/// The 403 of a request an `[[access]]` rule (at `origin`) refused at
/// `path` (`dest` says when that is not its own), with its `info` line.
#[cold]
#[inline(never)]
pub(super) fn access_refused(
    (log, scratch): (&mut crate::log::Logger, &mut crate::handlers::Scratch),
    client: std::net::IpAddr,
    (path, dest): (&[u8], &str),
    origin: &str,
) -> Plan {
    if log.enabled(Level::Info) {
        log.log(
            Level::Info,
            format_args!(
                "client {client} refused {}{dest} by the [[access]] rule at {origin}; 403",
                String::from_utf8_lossy(path),
            ),
        );
    }
    Plan::error(Status::FORBIDDEN, scratch)
}
