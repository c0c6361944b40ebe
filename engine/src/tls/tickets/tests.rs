use super::*;
use std::os::unix::fs::PermissionsExt as _;

const PERIOD: u64 = 6 * 3600;

struct Dir(PathBuf);

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn dir(tag: &str) -> Dir {
    let d = std::env::temp_dir().join(format!("brisk-tickets-{}-{tag}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    Dir(d)
}

fn open(path: &Path, holder: &str) -> (Watcher, Arc<Ticketer>) {
    let mut w = Watcher::open(path, Duration::from_secs(PERIOD), holder).unwrap();
    let t = w.ticketer();
    (w, t)
}

#[test]
fn a_ticket_opens_with_its_key_only() {
    let d = dir("seal");
    let (w, t) = open(&d.0.join("keys"), "a 1");
    let now = w.keys.rotated;
    let ticket = t.encrypt(b"session state").unwrap();
    assert_eq!(ticket.len(), 13 + OVERHEAD);
    assert_eq!(ticket[..NAME_LEN], w.keys.current.name);
    assert!(!ticket.windows(13).any(|s| s == b"session state"));
    assert_eq!(t.open_at(&ticket, now).unwrap(), b"session state");
    assert_eq!(t.decrypt(&ticket).unwrap(), b"session state");
    // Each ticket its own nonce.
    assert_ne!(t.encrypt(b"session state").unwrap(), ticket);
    assert_eq!(t.lifetime(), PERIOD as u32);
    // Any byte changed (name, nonce, sealed session, tag), or cut short.
    for i in [0, NAME_LEN, NAME_LEN + NONCE_LEN, ticket.len() - 1] {
        let mut bad = ticket.clone();
        bad[i] ^= 1;
        assert_eq!(t.open_at(&bad, now), None, "byte {i}");
    }
    assert_eq!(t.open_at(&ticket[..ticket.len() - 1], now), None);
    assert_eq!(t.open_at(&ticket[..OVERHEAD - 1], now), None);
    assert_eq!(t.open_at(b"", now), None);
    // Another fleet's keys (another file) know no such name.
    let (_, other) = open(&d.0.join("other"), "a 1");
    assert_eq!(other.open_at(&ticket, now), None);
    // The same name with another secret fails authentication.
    let mut forged = w.keys.clone();
    forged.current.secret[0] ^= 1;
    let forger = Ticketer {
        loaded: Arc::new(RwLock::new(Loaded::of(&forged))),
        period: PERIOD,
        rng: SystemRandom::new(),
    };
    let ticket = forger.encrypt(b"x").unwrap();
    assert_eq!(ticket[..NAME_LEN], w.keys.current.name);
    assert_eq!(t.open_at(&ticket, now), None);
}

#[test]
fn the_file_is_made_once_0600_and_read_by_the_others() {
    let d = dir("fleet");
    let path = d.0.join("ticket_keys");
    let (a, ta) = open(&path, "a 1");
    let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.contains(&format!("\ncurrent {} ", hex(&a.keys.current.name))));
    let (b, tb) = open(&path, "b 2");
    assert_eq!(a.keys, b.keys);
    let now = a.keys.rotated;
    let ticket = ta.encrypt(b"made by a").unwrap();
    assert_eq!(tb.open_at(&ticket, now).unwrap(), b"made by a");
    // The directory holds the keys only: no lock, no temporary file.
    let names: Vec<_> = std::fs::read_dir(&d.0)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, ["ticket_keys"]);
}

#[test]
fn rotation_by_one_server_is_taken_up_by_the_others() {
    let d = dir("rotate");
    let path = d.0.join("ticket_keys");
    let (mut a, ta) = open(&path, "a 1");
    let (mut b, tb) = open(&path, "b 2");
    let t0 = a.keys.rotated;
    let old = ta.encrypt(b"before").unwrap();
    // Not due: nothing happens, the next look within a minute.
    let (wait, said) = a.refresh(t0 + 10);
    assert_eq!((wait, said), (CHECK, vec![]));
    assert_eq!(a.refresh(t0 + PERIOD - 5).0, Duration::from_secs(5));
    // Due: a rotates; `next` is current now.
    let before = a.keys.clone();
    let (_, said) = a.refresh(t0 + PERIOD);
    assert!(said.is_empty(), "{said:?}");
    assert_eq!(a.keys.rotated, t0 + PERIOD);
    assert_eq!(a.keys.current, before.next);
    assert_eq!(a.keys.previous, before.current);
    assert_ne!(a.keys.next, before.next);
    let new = ta.encrypt(b"after").unwrap();
    assert_eq!(new[..NAME_LEN], before.next.name);
    // b has not looked yet: it opens a's new ticket (its `next`) and a
    // opens b's (a's `previous`).
    assert_eq!(tb.open_at(&new, t0 + PERIOD).unwrap(), b"after");
    let from_b = tb.encrypt(b"b, late").unwrap();
    assert_eq!(ta.open_at(&from_b, t0 + PERIOD + 1).unwrap(), b"b, late");
    // b's look finds the new file (not due any more: no second rotation).
    let (_, said) = b.refresh(t0 + PERIOD + 1);
    assert!(said.is_empty(), "{said:?}");
    assert_eq!(b.keys, a.keys);
    assert_eq!(tb.encrypt(b"b").unwrap()[..NAME_LEN], before.next.name);
    // A ticket of the key before is good for one more period...
    assert_eq!(tb.open_at(&old, t0 + 2 * PERIOD - 1).unwrap(), b"before");
    // ...not after it, even if no rotation happened,
    assert_eq!(tb.open_at(&old, t0 + 2 * PERIOD), None);
    // and not once the keys rotated again.
    a.refresh(t0 + 2 * PERIOD);
    assert_eq!(ta.open_at(&old, t0 + 2 * PERIOD), None);
    assert_eq!(ta.open_at(&new, t0 + 2 * PERIOD).unwrap(), b"after");
}

#[test]
fn keys_a_period_too_old_are_all_replaced_but_next() {
    let d = dir("stale");
    let path = d.0.join("keys");
    let (mut a, ta) = open(&path, "a 1");
    let t0 = a.keys.rotated;
    let old = ta.encrypt(b"old").unwrap();
    let before = a.keys.clone();
    a.refresh(t0 + 3 * PERIOD);
    assert_eq!(a.keys.current, before.next);
    assert_ne!(a.keys.previous, before.current);
    assert_eq!(ta.open_at(&old, t0 + 3 * PERIOD), None);
}

#[test]
fn a_server_finding_the_lock_taken_waits_for_the_others_file() {
    let d = dir("locked");
    let path = d.0.join("keys");
    let (mut a, _) = open(&path, "a 1");
    let t0 = a.keys.rotated;
    let held = crate::sys::fs::lock(&d.0.join("keys.lock"), "b 2", STALE_LOCK).unwrap();
    assert!(held.is_some());
    let before = a.keys.clone();
    assert_eq!(a.refresh(t0 + PERIOD), (Duration::from_secs(1), vec![]));
    assert_eq!(a.keys, before, "no rotation without the lock");
    drop(held);
    a.refresh(t0 + PERIOD);
    assert_eq!(a.keys.current, before.next);
}

#[test]
fn a_damaged_file_is_an_error_at_start_and_a_line_later() {
    let d = dir("damaged");
    let path = d.0.join("keys");
    std::fs::write(&path, "rotated 12\nprevious 00 11\n").unwrap();
    let err = Watcher::open(&path, Duration::from_secs(PERIOD), "a 1").unwrap_err();
    assert_eq!(
        err,
        format!(
            "ticket_keys {}: line 2: expected a 16-byte name in hex",
            path.display()
        )
    );
    std::fs::write(&path, "rotated 12\n").unwrap();
    let err = Watcher::open(&path, Duration::from_secs(PERIOD), "a 1").unwrap_err();
    assert!(
        err.ends_with("expected the keys previous, current and next"),
        "{err}"
    );
    std::fs::remove_file(&path).unwrap();
    let (mut a, ta) = open(&path, "a 1");
    let t0 = a.keys.rotated;
    let ticket = ta.encrypt(b"kept").unwrap();
    let good = a.keys.clone();
    std::fs::write(&path, "current zz\n").unwrap();
    let (_, said) = a.refresh(t0 + 1);
    assert_eq!(
        said,
        [format!(
            "ticket keys {}: line 1: expected rotated, previous, current or next; the keys in memory serve on until it is mended (the next rotation writes it whole)",
            path.display()
        )]
    );
    assert_eq!(a.keys, good);
    assert_eq!(ta.open_at(&ticket, t0 + 1).unwrap(), b"kept");
    // Said once, not at every look.
    assert_eq!(a.refresh(t0 + 2).1, Vec::<String>::new());
    // The next rotation writes the file whole again.
    a.refresh(t0 + PERIOD);
    let (b, _) = open(&path, "b 2");
    assert_eq!(b.keys, a.keys);
    // A file gone is written again from the keys in memory.
    std::fs::remove_file(&path).unwrap();
    a.refresh(t0 + PERIOD + 1);
    let (b, _) = open(&path, "b 2");
    assert_eq!(b.keys, a.keys);
}

#[test]
fn the_text_reads_back() {
    let keys = Keys::fresh(1_796_000_000, &SystemRandom::new()).unwrap();
    assert_eq!(Keys::parse(&keys.text()).unwrap(), keys);
    let twice = format!(
        "{}current {} {}\n",
        keys.text(),
        hex(&[1; 16]),
        hex(&[2; 32])
    );
    assert_eq!(
        Keys::parse(&twice).unwrap_err(),
        "line 7: current given twice"
    );
    assert_eq!(unhex::<2>("0aF1"), Some([0x0a, 0xf1]));
    assert_eq!(unhex::<2>("0aF"), None);
    assert_eq!(unhex::<2>("0g00"), None);
}
