//! A worker's exchanges: each request that cannot be answered at once
//! (it waits, [`Wait`], or a producer answers it, [`Run`]), whatever its
//! protocol, in one table per worker. Protocol state names an exchange by
//! its [`ExchangeId`] (8 bytes) rather than holding it, so an idle
//! connection holds no room for one, and the worker can go over every
//! exchange at once (its timers) without going over its connections.
//!
//! A slot is reused once its exchange is removed; its generation changes
//! then, so an id kept past its exchange (a password check's outcome
//! that comes back after its client left) names nothing rather than the
//! slot's next exchange.

use std::num::NonZeroU32;

use super::run::Run;
use super::waits::Wait;

/// Names one exchange of a worker's [`Exchanges`] for as long as it is
/// there. (8 bytes, and as many as an `Option` of it: protocol state
/// holds one where it held a `Box`, and grows none.)
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct ExchangeId {
    /// Its slot.
    index: u32,
    /// The slot's generation when it was inserted.
    gen: NonZeroU32,
}

impl ExchangeId {
    /// It as one number (for a channel of numbers; see
    /// [`ExchangeId::from_bits`]).
    #[cfg(feature = "cold-lookups")]
    pub fn bits(self) -> usize {
        (self.gen.get() as usize) << 32 | self.index as usize
    }

    /// The id [`ExchangeId::bits`] made `bits` of.
    #[cfg(feature = "cold-lookups")]
    pub fn from_bits(bits: usize) -> Option<ExchangeId> {
        Some(ExchangeId {
            index: bits as u32,
            gen: NonZeroU32::new((bits >> 32) as u32)?,
        })
    }

    /// Its slot (stable for as long as the exchange is there: pipe
    /// tokens are made from it).
    pub fn index(self) -> usize {
        self.index as usize
    }
}

/// What an exchange is at: waiting, or answered by a producer.
#[derive(Debug)]
pub enum Task {
    /// It waits (for its password check, its body).
    Wait(Wait),
    /// A producer answers it. (Not boxed: a slot is as large as a
    /// [`Wait`] anyway, and slots are reused, so neither allocates.)
    Run(Run),
}

/// One request on its way, out of its connection's protocol state.
#[derive(Debug)]
pub struct Exchange {
    /// Its connection's index in the worker's slab.
    pub conn: usize,
    /// Its HTTP/2 stream; `None` for HTTP/1.1.
    pub stream: Option<u32>,
    /// What it is at.
    pub task: Task,
}

/// A worker's exchanges, in reused slots.
#[derive(Debug, Default)]
pub struct Exchanges {
    /// Each slot's generation, and its exchange if one is there.
    slots: Vec<(NonZeroU32, Option<Exchange>)>,
    /// The empty slots, the last emptied on top.
    free: Vec<u32>,
}

impl Exchanges {
    /// No exchanges (allocates nothing until the first).
    pub fn new() -> Exchanges {
        Exchanges::default()
    }

    /// Puts `ex` in an empty slot (a new one only when none is empty).
    pub fn insert(&mut self, ex: Exchange) -> ExchangeId {
        let index = match self.free.pop() {
            Some(index) => index,
            None => {
                let index = u32::try_from(self.slots.len()).expect("fewer than 2^32 exchanges");
                self.slots.push((NonZeroU32::MIN, None));
                index
            }
        };
        let slot = &mut self.slots[index as usize];
        slot.1 = Some(ex);
        ExchangeId { index, gen: slot.0 }
    }

    /// The slot the next [`Exchanges::insert`] fills.
    pub fn vacant(&self) -> usize {
        match self.free.last() {
            Some(index) => *index as usize,
            None => self.slots.len(),
        }
    }

    /// The exchange `id` names, if it is still there.
    pub fn get(&self, id: ExchangeId) -> Option<&Exchange> {
        match self.slots.get(id.index())? {
            (gen, Some(ex)) if *gen == id.gen => Some(ex),
            _ => None,
        }
    }

    /// As [`Exchanges::get`], to change it.
    pub fn get_mut(&mut self, id: ExchangeId) -> Option<&mut Exchange> {
        match self.slots.get_mut(id.index())? {
            (gen, Some(ex)) if *gen == id.gen => Some(ex),
            _ => None,
        }
    }

    /// Takes the exchange `id` names out, if it is still there; its slot
    /// is reused under a new generation (`id` names nothing from now on).
    pub fn remove(&mut self, id: ExchangeId) -> Option<Exchange> {
        let ex = self.slot_of(id)?.take();
        self.free.push(id.index);
        ex
    }

    /// Drops the exchange `id` names where it lies, if it is still there
    /// (as [`Exchanges::remove`]): a run is a few hundred bytes, and each
    /// move of one copies them all.
    pub fn discard(&mut self, id: ExchangeId) {
        if let Some(slot) = self.slot_of(id) {
            *slot = None;
            self.free.push(id.index);
        }
    }

    /// The full slot `id` names, its generation moved on (`id` names
    /// nothing from now on): the caller empties it and frees its index.
    fn slot_of(&mut self, id: ExchangeId) -> Option<&mut Option<Exchange>> {
        let slot = self.slots.get_mut(id.index())?;
        if slot.0 != id.gen || slot.1.is_none() {
            return None;
        }
        slot.0 = slot.0.checked_add(1).unwrap_or(NonZeroU32::MIN);
        Some(&mut slot.1)
    }

    /// What exchange `id` waits for, if it is there and waits.
    pub fn wait(&self, id: ExchangeId) -> Option<&Wait> {
        match &self.get(id)?.task {
            Task::Wait(w) => Some(w),
            Task::Run(_) => None,
        }
    }

    /// As [`Exchanges::wait`], to change it.
    pub fn wait_mut(&mut self, id: ExchangeId) -> Option<&mut Wait> {
        match &mut self.get_mut(id)?.task {
            Task::Wait(w) => Some(w),
            Task::Run(_) => None,
        }
    }

    /// Takes exchange `id` out if it waits: what it waits for.
    pub fn take_wait(&mut self, id: ExchangeId) -> Option<Wait> {
        self.wait(id)?;
        match self.remove(id)?.task {
            Task::Wait(w) => Some(w),
            Task::Run(_) => None,
        }
    }

    /// The producer answering exchange `id`, if it is there and one does.
    pub fn run(&self, id: ExchangeId) -> Option<&Run> {
        match &self.get(id)?.task {
            Task::Run(run) => Some(run),
            Task::Wait(_) => None,
        }
    }

    /// As [`Exchanges::run`], to change it.
    pub fn run_mut(&mut self, id: ExchangeId) -> Option<&mut Run> {
        match &mut self.get_mut(id)?.task {
            Task::Run(run) => Some(run),
            Task::Wait(_) => None,
        }
    }

    /// Takes exchange `id` out if a producer answers it: that producer.
    pub fn take_run(&mut self, id: ExchangeId) -> Option<Run> {
        self.run_mut(id)?;
        match self.remove(id)?.task {
            Task::Run(run) => Some(run),
            Task::Wait(_) => None,
        }
    }

    /// The id of the exchange in slot `index`, if one is there (to go over
    /// them by index while the worker acts on each: see
    /// [`Exchanges::slots`]; a pipe token names a slot).
    pub fn id_at(&self, index: usize) -> Option<ExchangeId> {
        match self.slots.get(index)? {
            (gen, Some(_)) => Some(ExchangeId {
                index: index as u32,
                gen: *gen,
            }),
            (_, None) => None,
        }
    }

    /// How many slots there are, full or empty (the bound of
    /// [`Exchanges::id_at`]).
    pub fn slots(&self) -> usize {
        self.slots.len()
    }

    /// How many exchanges are there.
    pub fn len(&self) -> usize {
        self.slots.len() - self.free.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Every exchange there, with its id, in slot order.
    pub fn iter_mut(&mut self) -> impl Iterator<Item = (ExchangeId, &mut Exchange)> {
        self.slots
            .iter_mut()
            .enumerate()
            .filter_map(|(index, (gen, ex))| {
                let id = ExchangeId {
                    index: index as u32,
                    gen: *gen,
                };
                ex.as_mut().map(|ex| (id, ex))
            })
    }
}

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use super::*;
    use crate::http::request::OwnedRequest;
    use crate::server::waits::{HandlerWait, Held};

    /// An exchange of connection `conn` waiting for its body, for mount
    /// `mount` (which tells the exchanges apart here).
    fn waiting(conn: usize, stream: Option<u32>, mount: u64) -> Exchange {
        Exchange {
            conn,
            stream,
            task: Task::Wait(Wait::Handler(HandlerWait {
                mount: mount as usize,
                held: Held {
                    req: OwnedRequest::default(),
                    started: Instant::now(),
                    redirects: 0,
                    body_max: u64::MAX,
                    #[cfg(feature = "cold-lookups")]
                    colds: 0,
                },
                body: Vec::new(),
                counted: 0,
            })),
        }
    }

    /// The mount `ex` waits for.
    fn check(ex: &Exchange) -> u64 {
        match &ex.task {
            Task::Wait(Wait::Handler(w)) => w.mount as u64,
            other => panic!("not a handler's: {other:?}"),
        }
    }

    #[test]
    fn an_exchange_is_found_by_its_id_until_it_is_removed() {
        let mut all = Exchanges::new();
        assert!(all.is_empty());
        let a = all.insert(waiting(3, None, 10));
        let b = all.insert(waiting(4, Some(5), 11));
        assert_ne!(a, b);
        assert_eq!(all.len(), 2);
        assert_eq!(check(all.get(a).unwrap()), 10);
        let got = all.get(b).unwrap();
        assert_eq!((got.conn, got.stream, check(got)), (4, Some(5), 11));
        all.get_mut(a).unwrap().conn = 7;
        assert_eq!(all.get(a).unwrap().conn, 7);

        let gone = all.remove(a).unwrap();
        assert_eq!((gone.conn, check(&gone)), (7, 10));
        assert!(all.get(a).is_none() && all.get_mut(a).is_none());
        assert!(all.remove(a).is_none(), "removed once only");
        assert_eq!(all.len(), 1);
        assert_eq!(check(all.get(b).unwrap()), 11);
    }

    #[test]
    fn a_wait_is_reached_and_taken_by_its_id() {
        let mut all = Exchanges::new();
        let a = all.insert(waiting(1, None, 4));
        all.wait_mut(a)
            .unwrap()
            .push(b"ab", std::path::Path::new("/nonexistent"));
        assert!(matches!(all.wait(a), Some(Wait::Handler(w)) if w.body == b"ab"));
        assert!(matches!(all.take_wait(a), Some(Wait::Handler(w)) if w.mount == 4));
        assert!(all.wait(a).is_none() && all.take_wait(a).is_none() && all.is_empty());
    }

    #[test]
    fn an_id_costs_protocol_state_no_more_than_a_box() {
        assert_eq!(std::mem::size_of::<Option<ExchangeId>>(), 8);
    }

    #[test]
    fn a_slot_is_reused_and_its_old_id_names_nothing() {
        let mut all = Exchanges::new();
        let old = all.insert(waiting(1, None, 1));
        all.insert(waiting(2, None, 2));
        all.remove(old).unwrap();
        let new = all.insert(waiting(3, None, 3));
        // The same slot (no new one), under another generation.
        assert_eq!(new.index(), old.index());
        assert_eq!(all.slots(), 2);
        assert_ne!(new, old);
        // A stale id (a check's outcome after its client left) reaches
        // neither the slot's new exchange nor removes it.
        assert!(all.get(old).is_none());
        assert!(all.remove(old).is_none());
        assert_eq!(check(all.get(new).unwrap()), 3);
        // An id from another table, past the end, names nothing either.
        let mut other = Exchanges::new();
        for k in 0..3 {
            other.insert(waiting(0, None, k));
        }
        let far = other.insert(waiting(0, None, 9));
        assert!(all.get(far).is_none() && all.remove(far).is_none());
    }

    #[test]
    fn a_discarded_exchange_is_gone_and_its_slot_freed_once() {
        let mut all = Exchanges::new();
        let a = all.insert(waiting(1, None, 1));
        let b = all.insert(waiting(2, None, 2));
        all.discard(a);
        assert!(all.get(a).is_none() && all.remove(a).is_none());
        assert_eq!(all.len(), 1);
        // Again, and by a stale id once the slot is reused: nothing.
        all.discard(a);
        let c = all.insert(waiting(3, None, 3));
        assert_eq!(c.index(), a.index());
        all.discard(a);
        assert_eq!(check(all.get(c).unwrap()), 3);
        // The slot was freed once: the next exchange takes a new one.
        let d = all.insert(waiting(4, None, 4));
        assert_eq!((d.index(), all.slots(), all.len()), (2, 3, 3));
        assert_eq!(check(all.get(b).unwrap()), 2);
    }

    #[test]
    fn the_exchanges_are_gone_over_by_index_or_all_at_once() {
        let mut all = Exchanges::new();
        let ids: Vec<_> = (0..4)
            .map(|k| all.insert(waiting(k, None, k as u64)))
            .collect();
        all.remove(ids[1]).unwrap();
        let by_index: Vec<_> = (0..all.slots()).filter_map(|i| all.id_at(i)).collect();
        assert_eq!(by_index, [ids[0], ids[2], ids[3]]);
        assert!(all.id_at(1).is_none() && all.id_at(4).is_none());
        let seen: Vec<_> = all.iter_mut().map(|(id, ex)| (id, ex.conn)).collect();
        assert_eq!(seen, [(ids[0], 0), (ids[2], 2), (ids[3], 3)]);
        for (_, ex) in all.iter_mut() {
            ex.stream = Some(1);
        }
        assert!(by_index
            .iter()
            .all(|id| all.get(*id).unwrap().stream == Some(1)));
    }

    #[test]
    fn a_slot_is_no_larger_than_a_run_needs() {
        // Every slot is as large as the largest task, and an exchange
        // that lasts (a WebSocket tunnel's run) holds one for its life:
        // no wait may be much larger than a run (its request held and a
        // few fields; 504 bytes a slot were taken while a chunked body
        // held whole kept its script inline).
        let run = std::mem::size_of::<crate::server::run::Run>();
        let slot = std::mem::size_of::<(std::num::NonZeroU32, Option<Exchange>)>();
        eprintln!("run {run} bytes, slot {slot} bytes");
        assert!(slot <= run + 64, "{slot} bytes a slot, for a run of {run}");
    }
}
