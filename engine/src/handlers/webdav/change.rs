//! COPY, MOVE, DELETE, MKCOL and PROPPATCH made off the event loop:
//! each may take as long as the disk takes (a COPY of a film reads and
//! writes all of it; a DELETE frees every block of what it removes; a
//! sync waits for the disk, and the sidecar store of dead properties
//! syncs at each change, a PROPPATCH's too), and every other connection
//! of the worker would wait for it. The router checks the request
//! (locks, preconditions, where the `Destination` points) on the loop,
//! then hands the change to one of the [`CHANGING`] threads, which
//! answers through a [`Later`], as a PUT's end does (`super::end_put`).

use std::sync::Arc;

use super::props::Op;
use super::{changed, copymove, follow_props, forget, mark_collection, proppatch, trim, Dav};
use crate::handlers::stream::Later;
use crate::handlers::{Plan, Scratch};
use crate::http::parse::BodyFraming;
use crate::offload::{Job, Offload};

/// A change to a `[[webdav]]` tree, with what it needs of its request.
#[derive(Debug)]
pub enum Change {
    /// COPY or MOVE (RFC 4918 §9.8, §9.9).
    Transfer {
        /// MOVE rather than COPY.
        moving: bool,
        /// The source, relative to the root.
        from: Vec<u8>,
        /// The destination, relative to the same root.
        to: Vec<u8>,
        /// The destination's href, as a 207 names it.
        to_href: Vec<u8>,
        /// The request's `Depth`.
        depth: Option<Vec<u8>>,
        /// Its `Overwrite`.
        overwrite: Option<Vec<u8>>,
    },
    /// DELETE (RFC 4918 §9.6).
    Delete {
        /// What goes, relative to the root.
        rel: Vec<u8>,
        /// Its href, as a 207 names it.
        href: Vec<u8>,
        /// The request's `Depth`.
        depth: Option<Vec<u8>>,
    },
    /// PROPPATCH (RFC 4918 §9.2), its body read.
    Proppatch {
        /// Whose properties, relative to the root.
        rel: Vec<u8>,
        /// Its href, as the 207 names it.
        href: Vec<u8>,
        /// What to set and remove, in order.
        ops: Vec<Op>,
    },
    /// MKCOL (RFC 4918 §9.3).
    Mkcol {
        /// The new collection, relative to the root.
        rel: Vec<u8>,
        /// How the request's body is framed (a body is refused).
        framing: BodyFraming,
    },
}

impl Change {
    /// Makes the change in `dav`'s tree; the answer, its body in `s`.
    pub fn make(&self, dav: &Dav, s: &mut Scratch) -> Plan {
        let plan = match self {
            Change::Transfer {
                moving,
                from,
                to,
                to_href,
                depth,
                overwrite,
            } => {
                let t = copymove::Transfer {
                    moving: *moving,
                    from,
                    depth: depth.as_deref(),
                    overwrite: overwrite.as_deref(),
                };
                let plan = copymove::transfer(dav, &t, to, to_href, s);
                if matches!(plan.status.0, 201 | 204) {
                    let to = trim(to);
                    follow_props(dav, trim(from), Some(to), !moving);
                    // (Its dead properties went along: the destination's
                    // collection lists them.)
                    mark_collection(dav, to, false);
                    if *moving {
                        forget(dav, from);
                    }
                }
                plan
            }
            Change::Delete { rel, href, depth } => {
                let plan = super::delete(dav, rel, depth.as_deref(), href, s);
                if plan.status.0 == 204 {
                    forget(dav, rel);
                }
                plan
            }
            Change::Proppatch { rel, href, ops } => proppatch(dav, rel, href, ops, s),
            Change::Mkcol { rel, framing } => super::mkcol(dav, rel, *framing, s),
        };
        // (Made: no listing kept from before serves.)
        changed();
        plan
    }
}

/// Threads that make changes ([`CHANGE_THREADS`] of them, shared by
/// every worker, started by the first change); more changes at once wait
/// their turn. Their own pool, not the PUTs' (`super::ENDING`): a long
/// COPY keeps no upload from ending.
static CHANGING: Offload<Changing> = Offload::new("brisk-dav", CHANGE_THREADS);

/// How many changes are made at once (see [`CHANGING`]).
pub const CHANGE_THREADS: usize = 4;

/// A change to make off the event loop, and where its answer goes.
struct Changing {
    dav: Arc<Dav>,
    change: Change,
    later: Later,
}

impl Job for Changing {
    /// Makes the change and answers: its status and, for a 207, its
    /// document. (An answer whose client left is not taken: the change
    /// is made all the same, as it would have been on the loop.)
    fn run(self) {
        let mut s = Scratch::default();
        let plan = self.change.make(&self.dav, &mut s);
        let _ = super::answer_later(self.later, plan, s);
    }
}

/// Makes `change` in `dav`'s tree on one of the [`CHANGING`] threads
/// (here, if none can be started); its answer goes to `later`.
pub fn make_later(dav: Arc<Dav>, change: Change, later: Later) {
    if let Err(changing) = CHANGING.submit(Changing { dav, change, later }) {
        changing.run();
    }
}
