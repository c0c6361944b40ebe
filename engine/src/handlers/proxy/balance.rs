//! Which upstream of a rule a request goes to (`balance`), and which are
//! down (passive health, `max_fails` / `fail_timeout`, and the active
//! checks' verdicts, `health`). One [`Group`] per rule per worker, as
//! nginx keeps its peers' state per worker without `zone`: the turn of
//! `round_robin` is the rule's (not the worker's, nor shared by rules),
//! `least_conn` counts the requests in progress in this worker
//! ([`Lease`]), `ip_hash` sends a client address to the same upstream
//! while it is up, `first` takes the first that is up.

use std::cell::RefCell;
use std::net::IpAddr;
use std::rc::Rc;
use std::time::{Duration, Instant};

use super::health::Check;
use crate::config::{Balance, FastcgiRule, Health, ProxyRule, Upstream};

/// What is known of one upstream in this worker.
#[derive(Debug, Default)]
pub(super) struct Peer {
    /// Requests in progress on it ([`Lease`]).
    active: u32,
    /// Failures since its last answer (or since it was marked down).
    fails: u32,
    /// Skipped until then after `max_fails` failures.
    down_until: Option<Instant>,
    /// The last active check failed: down until one succeeds.
    pub(super) check_down: bool,
    /// Its active check: the one in flight, or when the next starts.
    pub(super) check: Check,
}

/// One rule's upstreams in one worker (see the module documentation).
#[derive(Debug)]
pub struct Group {
    /// The rule's `to`.
    pub to: Vec<Upstream>,
    /// How log lines name each (see [`super::dial::label`]), made once.
    pub labels: Vec<Rc<str>>,
    balance: Balance,
    max_fails: u32,
    fail_timeout: Duration,
    /// `round_robin`'s (and `least_conn`'s ties') next turn.
    turn: usize,
    pub(super) peers: Vec<Peer>,
    /// `health`, with how long a check may take (`connect_timeout` and
    /// `read_timeout`).
    pub(super) health: Option<(Health, Duration)>,
    /// The rule's TLS client: its checks of https upstreams speak TLS.
    pub(super) tls: super::link::Tls,
    /// What the active checks changed since the router last took it
    /// ([`Group::take_news`]): an upstream marked down (`true`) and why,
    /// or up again (`false`), for the error log.
    pub(super) news: Vec<(usize, bool, String)>,
}

/// A group shared by the router (which picks) and the answers (which
/// count, fail, and pick again).
pub type Shared = Rc<RefCell<Group>>;

impl Group {
    /// The state of `rule`'s upstreams, all up.
    pub fn new(rule: &ProxyRule) -> Group {
        Group {
            health: rule
                .health
                .clone()
                .map(|h| (h, rule.connect_timeout + rule.read_timeout)),
            #[cfg(feature = "tls")]
            tls: rule.tls_client.clone(),
            ..Group::passive(&rule.to, rule.balance, rule.max_fails, rule.fail_timeout)
        }
    }

    /// The state of a `[[fastcgi]]` rule's application servers, all up
    /// (passive health only).
    pub fn fastcgi(rule: &FastcgiRule) -> Group {
        Group::passive(&rule.to, rule.balance, rule.max_fails, rule.fail_timeout)
    }

    /// Upstreams `to`, all up, without active checks.
    fn passive(to: &[Upstream], balance: Balance, max_fails: u32, fail_timeout: Duration) -> Group {
        Group {
            to: to.to_vec(),
            labels: to.iter().map(|to| super::dial::label(to).into()).collect(),
            balance,
            max_fails,
            fail_timeout,
            turn: 0,
            peers: to.iter().map(|_| Peer::default()).collect(),
            health: None,
            tls: Default::default(),
            news: Vec::new(),
        }
    }

    /// The lines for the error log that the active checks' changes call
    /// for since the last call (an upstream a check marked down, and
    /// why; one up again): `(down, line)`, once per change, not per check.
    pub fn take_news(&mut self) -> Vec<(bool, String)> {
        let path = self.health.as_ref().map_or("", |(h, _)| &*h.path);
        let news = std::mem::take(&mut self.news);
        news.into_iter()
            .map(|(i, down, why)| {
                let line = match down {
                    true => format!(
                        "{}: health check GET {path}: {why}; down until a check succeeds",
                        self.labels[i]
                    ),
                    false => format!(
                        "{}: health check GET {path} passed; up again",
                        self.labels[i]
                    ),
                };
                (down, line)
            })
            .collect()
    }

    /// Whether upstream `i` may be given requests at `now`.
    pub fn is_up(&self, i: usize, now: Instant) -> bool {
        let p = &self.peers[i];
        !p.check_down && p.down_until.is_none_or(|t| t <= now)
    }

    /// The upstream for a request from `client`, among those up and not
    /// `tried` yet; none when there is no such one (every upstream down
    /// on a first pick: 503; on a retry, none reachable: 502).
    pub fn pick(&mut self, client: IpAddr, tried: &[usize], now: Instant) -> Option<usize> {
        let n = self.to.len();
        let can = |g: &Group, i: usize| !tried.contains(&i) && g.is_up(i, now);
        let from = |start: usize| (0..n).map(move |k| (start + k) % n);
        let chosen = match self.balance {
            Balance::First => (0..n).find(|&i| can(self, i)),
            Balance::IpHash => from(hash(client) % n).find(|&i| can(self, i)),
            Balance::RoundRobin => from(self.turn % n).find(|&i| can(self, i)),
            Balance::LeastConn => from(self.turn % n)
                .filter(|&i| can(self, i))
                .min_by_key(|&i| self.peers[i].active),
        }?;
        if matches!(self.balance, Balance::RoundRobin | Balance::LeastConn) {
            self.turn = chosen + 1;
        }
        Some(chosen)
    }

    /// Upstream `i` failed (refused, not accepted within
    /// `connect_timeout`, silent for `read_timeout` before its answer):
    /// after `max_fails` failures it is skipped for `fail_timeout`. As
    /// nginx does, the only upstream of a rule is never skipped (it
    /// would only turn one failure into `fail_timeout` of 503s).
    pub fn failed(&mut self, i: usize, now: Instant) {
        if self.max_fails == 0 || self.to.len() == 1 {
            return;
        }
        let p = &mut self.peers[i];
        p.fails += 1;
        if p.fails >= self.max_fails {
            p.fails = 0;
            p.down_until = Some(now + self.fail_timeout);
        }
    }

    /// Upstream `i` answered: its failures are forgotten.
    pub fn answered(&mut self, i: usize) {
        self.peers[i].fails = 0;
    }

    /// Why each of its upstreams is down at `now`, for the line that
    /// says no request could be given to any (nginx's "no live
    /// upstreams"): `127.0.0.1:9001 down 10s more after 1 failure,
    /// unix:/run/app.sock failed its health check`.
    pub fn why_down(&self, now: Instant) -> String {
        use std::fmt::Write as _;
        let mut s = String::new();
        for (to, p) in self.to.iter().zip(&self.peers) {
            if !s.is_empty() {
                s.push_str(", ");
            }
            let _ = write!(s, "{}", super::dial::addr(to));
            let left = p.down_until.map(|t| t.saturating_duration_since(now));
            let _ = match left {
                _ if p.check_down => write!(s, " failed its health check"),
                Some(left) if !left.is_zero() => write!(
                    s,
                    " down {}s more after {} failure{}",
                    (left.as_millis() + 500) / 1000,
                    self.max_fails,
                    if self.max_fails == 1 { "" } else { "s" }
                ),
                _ => write!(s, " up"),
            };
        }
        s
    }
}

/// `ip_hash`: the same address, the same number (FNV-1a over its bytes;
/// an IPv4 address as itself, not mapped).
fn hash(ip: IpAddr) -> usize {
    let bytes: &[u8] = match &ip {
        IpAddr::V4(v4) => &v4.octets(),
        IpAddr::V6(v6) => &v6.octets(),
    };
    let h = bytes.iter().fold(0xcbf2_9ce4_8422_2325_u64, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
    });
    (h ^ (h >> 32)) as usize
}

/// One request's way through its rule's upstreams when only a failure to
/// connect sends it to the next (FastCGI's: nothing of it was sent, so
/// any method may go again): the upstream it holds ([`Lease`]) and those
/// it tried.
#[derive(Debug)]
pub struct Tries {
    lease: Lease,
    client: IpAddr,
    /// The upstreams that failed it (none allocated until one does).
    tried: Vec<usize>,
}

impl Tries {
    /// A request from `client` to upstream `index` of `group`.
    pub fn new(group: &Shared, index: usize, client: IpAddr) -> Tries {
        Tries {
            lease: Lease::take(group, index),
            client,
            tried: Vec::new(),
        }
    }

    /// The upstream it holds.
    pub fn to(&self) -> Upstream {
        self.lease.group.borrow().to[self.lease.index].clone()
    }

    /// The upstream it holds could not be reached at `now` (counted
    /// among its failures): the next one up that it has not tried, held
    /// in its place; none when there is none left (502).
    pub fn next(&mut self, now: Instant) -> Option<Upstream> {
        let group = Rc::clone(&self.lease.group);
        let mut g = group.borrow_mut();
        g.failed(self.lease.index, now);
        self.tried.push(self.lease.index);
        let i = g.pick(self.client, &self.tried, now)?;
        drop(g);
        self.lease = Lease::take(&group, i);
        Some(self.to())
    }

    /// The upstream it holds failed otherwise at `now` (silent for
    /// `read_timeout` before its answer).
    pub fn failed(&self, now: Instant) {
        self.lease.group.borrow_mut().failed(self.lease.index, now);
    }

    /// The upstream it holds answered.
    pub fn answered(&self) {
        self.lease.group.borrow_mut().answered(self.lease.index);
    }
}

/// One request's hold on upstream `index` of `group`: counted among its
/// requests in progress (`least_conn`) until dropped.
#[derive(Debug)]
pub struct Lease {
    group: Shared,
    /// The upstream held.
    pub index: usize,
}

impl Lease {
    /// Holds upstream `index` of `group`.
    pub fn take(group: &Shared, index: usize) -> Lease {
        group.borrow_mut().peers[index].active += 1;
        Lease {
            group: Rc::clone(group),
            index,
        }
    }

    /// Its group.
    pub fn group(&self) -> &Shared {
        &self.group
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        let mut g = self.group.borrow_mut();
        let p = &mut g.peers[self.index];
        p.active = p.active.saturating_sub(1);
    }
}

#[cfg(test)]
mod tests {
    use std::net::SocketAddr;

    use super::*;

    fn group(balance: Balance, n: usize) -> Shared {
        let rule = ProxyRule {
            to: (0..n)
                .map(|i| Upstream::Tcp {
                    addr: SocketAddr::from(([127, 0, 0, 1], 9001 + i as u16)),
                    host: "127.0.0.1".into(),
                    also: [].into(),
                    reached: Default::default(),
                    tls: false,
                })
                .collect(),
            balance,
            ..ProxyRule::default()
        };
        Rc::new(RefCell::new(Group::new(&rule)))
    }

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    fn picks(g: &Shared, client: &str, count: usize, now: Instant) -> Vec<usize> {
        (0..count)
            .map(|_| g.borrow_mut().pick(ip(client), &[], now).unwrap())
            .collect()
    }

    #[test]
    fn why_each_upstream_is_down_is_said_for_the_503s_line() {
        let now = Instant::now();
        let g = group(Balance::RoundRobin, 3);
        g.borrow_mut().failed(0, now);
        g.borrow_mut().peers[1].check_down = true;
        let later = now + Duration::from_millis(2_600);
        assert_eq!(
            g.borrow().why_down(later),
            "127.0.0.1:9001 down 7s more after 1 failure, \
             127.0.0.1:9002 failed its health check, 127.0.0.1:9003 up"
        );
    }

    #[test]
    fn round_robin_takes_each_in_turn_and_skips_one_down() {
        let now = Instant::now();
        let g = group(Balance::RoundRobin, 3);
        assert_eq!(picks(&g, "192.0.2.1", 7, now), [0, 1, 2, 0, 1, 2, 0]);
        g.borrow_mut().failed(2, now);
        assert!(!g.borrow().is_up(2, now));
        assert_eq!(picks(&g, "192.0.2.1", 4, now), [1, 0, 1, 0]);
        // (Back after fail_timeout, 10 s.)
        let later = now + Duration::from_secs(10);
        assert!(g.borrow().is_up(2, later));
        assert_eq!(picks(&g, "192.0.2.1", 3, later), [1, 2, 0]);
    }

    #[test]
    fn each_rule_has_its_own_turn() {
        let now = Instant::now();
        let (a, b) = (group(Balance::RoundRobin, 2), group(Balance::RoundRobin, 2));
        assert_eq!(picks(&a, "192.0.2.1", 1, now), [0]);
        assert_eq!(picks(&b, "192.0.2.1", 1, now), [0]);
        assert_eq!(picks(&a, "192.0.2.1", 1, now), [1]);
        assert_eq!(picks(&b, "192.0.2.1", 1, now), [1]);
    }

    #[test]
    fn least_conn_takes_the_one_with_fewest_requests_in_progress() {
        let now = Instant::now();
        let g = group(Balance::LeastConn, 3);
        let first = g.borrow_mut().pick(ip("192.0.2.1"), &[], now).unwrap();
        let _held = Lease::take(&g, first);
        let second = g.borrow_mut().pick(ip("192.0.2.1"), &[], now).unwrap();
        let _held2 = Lease::take(&g, second);
        assert_ne!(first, second);
        let third = g.borrow_mut().pick(ip("192.0.2.1"), &[], now).unwrap();
        let held3 = Lease::take(&g, third);
        let mut all = vec![first, second, third];
        all.sort_unstable();
        assert_eq!(all, [0, 1, 2], "one each");
        drop(held3);
        let again = g.borrow_mut().pick(ip("192.0.2.1"), &[], now).unwrap();
        assert_eq!(again, third, "the only one with none in progress");
        let _a = Lease::take(&g, again);
        let _b = Lease::take(&g, again);
        for _ in 0..3 {
            let next = g.borrow_mut().pick(ip("192.0.2.1"), &[], now).unwrap();
            assert_ne!(next, third, "it has the most");
        }
    }

    #[test]
    fn ip_hash_keeps_a_client_on_its_upstream_while_it_is_up() {
        let now = Instant::now();
        let g = group(Balance::IpHash, 4);
        let mut seen = std::collections::BTreeSet::new();
        for last in 1..=40u8 {
            let client = format!("192.0.2.{last}");
            let p = picks(&g, &client, 5, now);
            assert!(p.iter().all(|&i| i == p[0]), "{client}: {p:?}");
            seen.insert(p[0]);
        }
        assert!(seen.len() > 1, "clients spread: {seen:?}");
        let home = picks(&g, "2001:db8::7", 1, now)[0];
        g.borrow_mut().failed(home, now);
        let away = picks(&g, "2001:db8::7", 3, now);
        assert!(away.iter().all(|&i| i != home && i == away[0]));
        let later = now + Duration::from_secs(10);
        assert_eq!(picks(&g, "2001:db8::7", 1, later), [home]);
    }

    #[test]
    fn first_takes_the_first_up_and_none_when_all_are_down() {
        let now = Instant::now();
        let g = group(Balance::First, 3);
        assert_eq!(picks(&g, "192.0.2.1", 3, now), [0, 0, 0]);
        g.borrow_mut().failed(0, now);
        assert_eq!(picks(&g, "192.0.2.1", 2, now), [1, 1]);
        assert_eq!(g.borrow_mut().pick(ip("192.0.2.1"), &[1], now), Some(2));
        g.borrow_mut().failed(1, now);
        g.borrow_mut().failed(2, now);
        assert_eq!(g.borrow_mut().pick(ip("192.0.2.1"), &[], now), None);
    }

    #[test]
    fn tries_go_to_each_upstream_up_once_and_hold_the_one_in_use() {
        let now = Instant::now();
        let g = group(Balance::RoundRobin, 3);
        let first = g.borrow_mut().pick(ip("192.0.2.1"), &[], now).unwrap();
        assert_eq!(first, 0);
        let mut tries = Tries::new(&g, first, ip("192.0.2.1"));
        assert_eq!(g.borrow().peers[0].active, 1);
        let next = tries.next(now).unwrap();
        assert_eq!(next, g.borrow().to[1]);
        assert_eq!(tries.to(), next);
        assert!(!g.borrow().is_up(0, now), "the one that failed is down");
        assert_eq!(
            (g.borrow().peers[0].active, g.borrow().peers[1].active),
            (0, 1)
        );
        assert_eq!(tries.next(now), Some(g.borrow().to[2].clone()));
        assert_eq!(tries.next(now), None, "each is tried once");
        drop(tries);
        assert!(g.borrow().peers.iter().all(|p| p.active == 0));
        assert_eq!(g.borrow_mut().pick(ip("192.0.2.1"), &[], now), None);
    }

    #[test]
    fn max_fails_counts_failures_until_an_answer_and_zero_never_marks_down() {
        let now = Instant::now();
        let rule = ProxyRule {
            to: group(Balance::First, 2).borrow().to.clone(),
            max_fails: 3,
            ..ProxyRule::default()
        };
        let mut g = Group::new(&rule);
        g.failed(0, now);
        g.failed(0, now);
        g.answered(0);
        g.failed(0, now);
        g.failed(0, now);
        assert!(g.is_up(0, now), "the answer wiped the first two");
        g.failed(0, now);
        assert!(!g.is_up(0, now));
        let never = ProxyRule {
            max_fails: 0,
            ..rule
        };
        let mut g = Group::new(&never);
        for _ in 0..10 {
            g.failed(1, now);
        }
        assert!(g.is_up(1, now));
    }
}
