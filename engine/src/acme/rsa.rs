//! RSA 2048 keys, made by brisk (`[acme] key_type = "rsa2048"`): *ring*
//! signs with RSA keys but makes none, so the primes are found here, as
//! FIPS 186-5 §A.1.3 and Appendix B.3.3 say (probable primes):
//!
//! - each prime is 1024 random bits (from *ring*'s `SystemRandom`) with
//!   the top two bits set, so that `n = p·q` has exactly 2048 bits, and
//!   odd;
//! - a candidate is first divided by the primes below [`SIEVE`] (most
//!   composites stop there), then `gcd(p − 1, e) = 1` is checked (`e` is
//!   prime: `p − 1` is not a multiple of it), then [`ROUNDS`] rounds of
//!   Miller–Rabin with random bases (Table B.1: five for 1024-bit primes
//!   of a 2048-bit modulus, error probability at most 2^-112);
//! - `|p − q| > 2^924` (§A.1.3 step 5.4);
//! - `e = 65537`, `d = e⁻¹ mod lcm(p − 1, q − 1)` with `d > 2^1024`
//!   (§A.1.1), `dP = e⁻¹ mod (p − 1)`, `dQ = e⁻¹ mod (q − 1)` (equal to
//!   `d mod (p − 1)`, `d mod (q − 1)`), `qInv = q⁻¹ mod p` (Fermat:
//!   `q^(p−2)`), with `p > q` (RFC 8017 §3.2).
//!
//! The key is written as PKCS#8 (RFC 5208) holding an `RSAPrivateKey`
//! (RFC 8017 Appendix A.1.2); the caller loads it into *ring*, which
//! checks it again (`p·q = n`, the sizes, `qInv`, `d > 2^1024`) and signs
//! with it.
//!
//! The arithmetic is a small fixed-width one: [`Uint`] of 64-bit limbs,
//! Montgomery multiplication (CIOS) for the modular powers of
//! Miller–Rabin and `qInv`, the power by a fixed 4-bit window whose table
//! entry is selected by masks (no index or branch on the exponent), the
//! final subtraction of each product by a mask too. The rest (trial
//! division, gcd, long division) branches on secret values: the key is
//! made once, off the event loops, with nothing to measure it from a
//! connection. Every [`Uint`] writes zeros over itself when dropped, so
//! the primes, `d` and the intermediate values do not outlive their use
//! (but for copies the compiler leaves on the stack when it moves them,
//! which nothing wipes).
//!
//! Why not the `rsa` crate: with it (0.9, and num-bigint-dig, pkcs1,
//! pkcs8, rand and the rest: 24 new entries in Cargo.lock) the default
//! release build grows by 168,576 bytes; with this module, by 37,280
//! (`cargo build --release`, stripped; the rest of `key_type`, 1,280
//! more). The wipe and the small limb loops are kept out of line
//! (`inline(never)`: 54,208 bytes inlined everywhere); limb loops on
//! slices instead of the fixed widths came out larger, not smaller.

use ring::rand::{SecureRandom, SystemRandom};

use crate::tls::der::{Writer, NULL, OCTET_STRING};

/// The public exponent (FIPS 186-5 §A.1.1: odd, 2^16 < e < 2^256; the one
/// every library uses, and the least *ring* takes).
pub const E: u64 = 65_537;
/// rsaEncryption (RFC 8017 Appendix C), the key's algorithm in PKCS#8 and
/// X.509 (its parameters NULL).
pub const RSA_ENCRYPTION: &[u64] = &[1, 2, 840, 113_549, 1, 1, 1];
/// sha256WithRSAEncryption (RFC 8017 Appendix C): PKCS#1 v1.5 signatures
/// with SHA-256 (parameters NULL, RFC 4055 §5).
pub const SHA256_WITH_RSA: &[u64] = &[1, 2, 840, 113_549, 1, 1, 11];

/// Limbs of a prime (1024 bits).
const HALF: usize = 16;
/// Limbs of the modulus (2048 bits).
const FULL: usize = 32;
/// Miller–Rabin rounds for each prime (FIPS 186-5 Table B.1).
pub const ROUNDS: usize = 5;
/// Candidates are first divided by the odd primes below this.
pub const SIEVE: u64 = 2048;
/// Candidates tried for one prime before giving up (FIPS 186-5 §A.1.3
/// step 4.7: 5·nlen/2; about 350 are needed on average).
const TRIES: usize = 5 * 1024;

/// A key that could not be made (no random source, or no prime found in
/// [`TRIES`] candidates).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NoKey(pub &'static str);

/// An unsigned integer of `L` 64-bit limbs, least significant first.
#[derive(Clone, PartialEq, Eq)]
struct Uint<const L: usize>([u64; L]);

impl<const L: usize> std::fmt::Debug for Uint<L> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // (Its value only in tests: these are secrets.)
        if cfg!(test) {
            self.to_be().iter().try_for_each(|b| write!(f, "{b:02x}"))
        } else {
            write!(f, "Uint<{L}>")
        }
    }
}

impl<const L: usize> Drop for Uint<L> {
    fn drop(&mut self) {
        wipe(&mut self.0);
    }
}

/// Zeros over `limbs` (`black_box` keeps the stores, dead as they are).
#[inline(never)]
fn wipe(limbs: &mut [u64]) {
    limbs.fill(0);
    std::hint::black_box(&limbs);
}

/// All ones if `bit`, else zero.
fn mask(bit: bool) -> u64 {
    0u64.wrapping_sub(u64::from(bit))
}

impl<const L: usize> Uint<L> {
    fn zero() -> Self {
        Uint([0; L])
    }

    /// `v`.
    fn small(v: u64) -> Self {
        let mut u = Self::zero();
        u.0[0] = v;
        u
    }

    /// Its big-endian bytes, `8·L` of them.
    fn to_be(&self) -> Vec<u8> {
        self.0.iter().rev().flat_map(|l| l.to_be_bytes()).collect()
    }

    /// `bits` random bits.
    fn random(rng: &dyn SecureRandom, bits: u32) -> Result<Self, NoKey> {
        let mut bytes = [0u8; 8];
        let mut u = Self::zero();
        for limb in &mut u.0 {
            rng.fill(&mut bytes)
                .map_err(|_| NoKey("no random source"))?;
            *limb = u64::from_le_bytes(bytes);
        }
        bytes.fill(0);
        std::hint::black_box(&bytes);
        for (i, limb) in u.0.iter_mut().enumerate() {
            let below = bits.saturating_sub(64 * i as u32).min(64);
            *limb &= if below == 64 { !0 } else { (1u64 << below) - 1 };
        }
        Ok(u)
    }

    fn is_zero(&self) -> bool {
        self.0.iter().all(|&l| l == 0)
    }

    /// Its length in bits (0 for zero).
    fn bits(&self) -> u32 {
        match self.0.iter().rposition(|&l| l != 0) {
            Some(i) => 64 * i as u32 + 64 - self.0[i].leading_zeros(),
            None => 0,
        }
    }

    fn bit(&self, i: u32) -> bool {
        self.0[i as usize / 64] >> (i % 64) & 1 == 1
    }

    fn trailing_zeros(&self) -> u32 {
        match self.0.iter().position(|&l| l != 0) {
            Some(i) => 64 * i as u32 + self.0[i].trailing_zeros(),
            None => 64 * L as u32,
        }
    }

    /// `self − o` (modulo 2^64L) and the borrow out (`self < o`).
    #[inline(never)]
    fn sub(&self, o: &Self) -> (Self, bool) {
        let mut r = Self::zero();
        let mut borrow = false;
        for i in 0..L {
            let (s, b1) = self.0[i].overflowing_sub(o.0[i]);
            let (s, b2) = s.overflowing_sub(u64::from(borrow));
            r.0[i] = s;
            borrow = b1 | b2;
        }
        (r, borrow)
    }

    fn lt(&self, o: &Self) -> bool {
        self.sub(o).1
    }

    /// `a` where `pick` is all ones, `b` where it is zero.
    #[inline(never)]
    fn select(pick: u64, a: &Self, b: &Self) -> Self {
        let mut r = Self::zero();
        for i in 0..L {
            r.0[i] = (a.0[i] & pick) | (b.0[i] & !pick);
        }
        r
    }

    /// `self · 2` and the bit shifted out.
    #[inline(never)]
    fn shl1(&self) -> (Self, bool) {
        let mut r = Self::zero();
        let mut carry = 0;
        for i in 0..L {
            r.0[i] = self.0[i] << 1 | carry;
            carry = self.0[i] >> 63;
        }
        (r, carry == 1)
    }

    /// `self / 2^n` (`n` below 64·L).
    #[inline(never)]
    fn shr(&self, n: u32) -> Self {
        let (limbs, bits) = (n as usize / 64, n % 64);
        let mut r = Self::zero();
        for i in 0..L - limbs {
            let lo = self.0[i + limbs] >> bits;
            let hi = match (bits, self.0.get(i + limbs + 1)) {
                (0, _) | (_, None) => 0,
                (_, Some(&h)) => h << (64 - bits),
            };
            r.0[i] = lo | hi;
        }
        r
    }

    /// `self · k + add` and the limb carried out.
    #[inline(never)]
    fn mul_small(&self, k: u64, add: u64) -> (Self, u64) {
        let mut r = Self::zero();
        let mut carry = add;
        for i in 0..L {
            let t = u128::from(self.0[i]) * u128::from(k) + u128::from(carry);
            r.0[i] = t as u64;
            carry = (t >> 64) as u64;
        }
        (r, carry)
    }

    /// `(high·2^64L + self) / d` and the remainder (`high < d`).
    #[inline(never)]
    fn div_small(&self, d: u64, high: u64) -> (Self, u64) {
        let mut r = Self::zero();
        let mut rem = high;
        for i in (0..L).rev() {
            let t = u128::from(rem) << 64 | u128::from(self.0[i]);
            r.0[i] = (t / u128::from(d)) as u64;
            rem = (t % u128::from(d)) as u64;
        }
        (r, rem)
    }

    /// `self mod d`.
    fn rem_small(&self, d: u64) -> u64 {
        self.div_small(d, 0).1
    }

    /// The same value in `M` limbs (its high limbs beyond `M` must be
    /// zero).
    fn resize<const M: usize>(&self) -> Uint<M> {
        let mut r = Uint::<M>::zero();
        for (i, &l) in self.0.iter().enumerate() {
            match r.0.get_mut(i) {
                Some(slot) => *slot = l,
                None => debug_assert_eq!(l, 0, "resize loses limbs"),
            }
        }
        r
    }
}

/// `a · b`, whole.
fn mul_wide(a: &Uint<HALF>, b: &Uint<HALF>) -> Uint<FULL> {
    let mut r = Uint::<FULL>::zero();
    for i in 0..HALF {
        let mut carry = 0u64;
        for j in 0..HALF {
            let t = u128::from(a.0[j]) * u128::from(b.0[i])
                + u128::from(r.0[i + j])
                + u128::from(carry);
            r.0[i + j] = t as u64;
            carry = (t >> 64) as u64;
        }
        r.0[i + HALF] = carry;
    }
    r
}

/// `a / m` and `a mod m` (`m` not zero), bit by bit.
fn div_rem<const L: usize>(a: &Uint<L>, m: &Uint<L>) -> (Uint<L>, Uint<L>) {
    let mut q = Uint::<L>::zero();
    let mut r = Uint::<L>::zero();
    for i in (0..64 * L as u32).rev() {
        let (shifted, carry) = r.shl1();
        r = shifted;
        r.0[0] |= u64::from(a.bit(i));
        let (diff, borrow) = r.sub(m);
        if carry || !borrow {
            r = diff;
            q.0[i as usize / 64] |= 1 << (i % 64);
        }
    }
    (q, r)
}

/// `gcd(a, b)` (binary: Stein's), for `a`, `b` not both zero.
fn gcd<const L: usize>(a: &Uint<L>, b: &Uint<L>) -> Uint<L> {
    if a.is_zero() || b.is_zero() {
        return if a.is_zero() { b.clone() } else { a.clone() };
    }
    let shift = a.trailing_zeros().min(b.trailing_zeros());
    let mut a = a.shr(a.trailing_zeros());
    let mut b = b.clone();
    loop {
        b = b.shr(b.trailing_zeros());
        if b.lt(&a) {
            std::mem::swap(&mut a, &mut b);
        }
        b = b.sub(&a).0;
        if b.is_zero() {
            break;
        }
    }
    // a · 2^shift (the common factors of two).
    for _ in 0..shift {
        a = a.shl1().0;
    }
    a
}

/// `e⁻¹ mod m`, if `e` and `m` are coprime (`m` above 1). With `e` small:
/// `k = −m⁻¹ mod e` makes `k·m + 1` a multiple of `e`, and
/// `(k·m + 1) / e` is the inverse (below `m`, as `k < e`).
fn inverse_of_e<const L: usize>(m: &Uint<L>) -> Option<Uint<L>> {
    let r = m.rem_small(E);
    if r == 0 {
        return None;
    }
    // r⁻¹ mod e by Fermat (e is prime).
    let mut inv = 1u64;
    let (mut base, mut exp) = (r, E - 2);
    while exp > 0 {
        if exp & 1 == 1 {
            inv = inv * base % E;
        }
        base = base * base % E;
        exp >>= 1;
    }
    let (km1, carry) = m.mul_small(E - inv, 1);
    let (d, rem) = km1.div_small(E, carry);
    debug_assert_eq!(rem, 0);
    Some(d)
}

/// Arithmetic modulo an odd `m` in Montgomery form (`a·R mod m`,
/// `R = 2^64L`).
struct Mont<const L: usize> {
    m: Uint<L>,
    /// `−m⁻¹ mod 2^64`.
    inv: u64,
    /// `R² mod m`: into the form.
    rr: Uint<L>,
    /// `R mod m`: one, in the form.
    one: Uint<L>,
}

impl<const L: usize> Mont<L> {
    /// For an odd `m` above 1.
    fn new(m: &Uint<L>) -> Self {
        // Newton's iteration doubles the correct low bits: 1, 2, 4, … 64.
        let mut x = 1u64;
        for _ in 0..6 {
            x = x.wrapping_mul(2u64.wrapping_sub(m.0[0].wrapping_mul(x)));
        }
        // R² mod m: 1 doubled 2·64L times, reduced each time.
        let mut rr = Uint::<L>::small(1);
        for _ in 0..128 * L {
            let (twice, carry) = rr.shl1();
            let (diff, borrow) = twice.sub(m);
            rr = Uint::select(mask(carry || !borrow), &diff, &twice);
        }
        let mut mont = Mont {
            m: m.clone(),
            inv: x.wrapping_neg(),
            rr,
            one: Uint::zero(),
        };
        mont.one = mont.enter(&Uint::small(1));
        mont
    }

    /// `a·b·R⁻¹ mod m`, for `a`, `b` below `m` (coarsely integrated
    /// operand scanning).
    fn mul(&self, a: &Uint<L>, b: &Uint<L>) -> Uint<L> {
        let mut t = Uint::<L>::zero();
        // t's two limbs above L.
        let mut t_l = 0u64;
        for i in 0..L {
            let mut c = 0u64;
            for j in 0..L {
                let s =
                    u128::from(t.0[j]) + u128::from(a.0[j]) * u128::from(b.0[i]) + u128::from(c);
                t.0[j] = s as u64;
                c = (s >> 64) as u64;
            }
            let s = u128::from(t_l) + u128::from(c);
            t_l = s as u64;
            let t_l1 = (s >> 64) as u64;
            let q = t.0[0].wrapping_mul(self.inv);
            let s = u128::from(t.0[0]) + u128::from(q) * u128::from(self.m.0[0]);
            let mut c = (s >> 64) as u64;
            for j in 1..L {
                let s =
                    u128::from(t.0[j]) + u128::from(q) * u128::from(self.m.0[j]) + u128::from(c);
                t.0[j - 1] = s as u64;
                c = (s >> 64) as u64;
            }
            let s = u128::from(t_l) + u128::from(c);
            t.0[L - 1] = s as u64;
            t_l = t_l1 + (s >> 64) as u64;
        }
        let (diff, borrow) = t.sub(&self.m);
        Uint::select(mask(t_l != 0 || !borrow), &diff, &t)
    }

    /// `a` (below `m`) into the form.
    fn enter(&self, a: &Uint<L>) -> Uint<L> {
        self.mul(a, &self.rr)
    }

    /// `a` out of the form.
    fn leave(&self, a: &Uint<L>) -> Uint<L> {
        self.mul(a, &Uint::small(1))
    }

    /// `base^exp` (`base` and the result in the form), by 4-bit windows
    /// over all of `exp`'s limbs, each window's power picked from the
    /// table by masks.
    fn pow(&self, base: &Uint<L>, exp: &Uint<L>) -> Uint<L> {
        let mut table: Vec<Uint<L>> = Vec::with_capacity(16);
        table.push(self.one.clone());
        for i in 1..16 {
            let next = self.mul(&table[i - 1], base);
            table.push(next);
        }
        let mut acc = self.one.clone();
        for w in (0..16 * L).rev() {
            for _ in 0..4 {
                acc = self.mul(&acc, &acc);
            }
            let index = (exp.0[w / 16] >> (4 * (w % 16))) & 15;
            let mut pick = Uint::<L>::zero();
            for (i, entry) in table.iter().enumerate() {
                pick = Uint::select(mask(i as u64 == index), entry, &pick);
            }
            acc = self.mul(&acc, &pick);
        }
        acc
    }
}

/// Whether the odd `w` (above 3) is a probable prime after `rounds`
/// rounds of Miller–Rabin with random bases (FIPS 186-5 §B.3.1).
fn probably_prime<const L: usize>(
    w: &Uint<L>,
    rounds: usize,
    rng: &dyn SecureRandom,
) -> Result<bool, NoKey> {
    let mont = Mont::new(w);
    let w1 = w.sub(&Uint::small(1)).0;
    let a = w1.trailing_zeros();
    let m = w1.shr(a);
    let minus_one = mont.enter(&w1);
    let two = Uint::small(2);
    for _ in 0..rounds {
        // 1 < b < w − 1, from wlen random bits.
        let b = loop {
            let b = Uint::<L>::random(rng, w.bits())?;
            if !b.lt(&two) && b.lt(&w1) {
                break b;
            }
        };
        let mut z = mont.pow(&mont.enter(&b), &m);
        if z == mont.one || z == minus_one {
            continue;
        }
        let mut passed = false;
        for _ in 1..a {
            z = mont.mul(&z, &z);
            if z == minus_one {
                passed = true;
                break;
            }
            if z == mont.one {
                return Ok(false);
            }
        }
        if !passed {
            return Ok(false);
        }
    }
    Ok(true)
}

/// The odd primes below [`SIEVE`], grouped so that each group's product
/// fits a limb (one long division a group, then one per prime of a limb).
fn small_primes() -> Vec<(u64, Vec<u64>)> {
    let mut composite = vec![false; SIEVE as usize];
    let mut groups: Vec<(u64, Vec<u64>)> = Vec::new();
    for n in (3..SIEVE).step_by(2) {
        if composite[n as usize] {
            continue;
        }
        for multiple in (n * n..SIEVE).step_by(2 * n as usize) {
            composite[multiple as usize] = true;
        }
        match groups.last_mut() {
            Some((product, primes)) if product.checked_mul(n).is_some() => {
                *product *= n;
                primes.push(n);
            }
            _ => groups.push((n, vec![n])),
        }
    }
    groups
}

/// A prime for a 2048-bit modulus (1024 bits, the top two set), with
/// `gcd(p − 1, e) = 1`, and far enough from `other` (the first prime).
fn prime(
    rng: &dyn SecureRandom,
    small: &[(u64, Vec<u64>)],
    other: Option<&Uint<HALF>>,
) -> Result<Uint<HALF>, NoKey> {
    // |p − q| must be above 2^(nlen/2 − 100) (FIPS 186-5 §A.1.3 5.4).
    let mut distance = Uint::<HALF>::zero();
    distance.0[924 / 64] = 1 << (924 % 64);
    for _ in 0..TRIES {
        let mut c = Uint::<HALF>::random(rng, 1024)?;
        c.0[HALF - 1] |= 0b11 << 62;
        c.0[0] |= 1;
        if let Some(p) = other {
            let (d, under) = c.sub(p);
            let d = if under { p.sub(&c).0 } else { d };
            if !distance.lt(&d) {
                continue;
            }
        }
        let divisible = small.iter().any(|(product, primes)| {
            let r = c.rem_small(*product);
            primes.iter().any(|p| r % p == 0)
        });
        // gcd(c − 1, e) = 1: c − 1 is no multiple of the prime e.
        if divisible || c.rem_small(E) == 1 {
            continue;
        }
        if probably_prime(&c, ROUNDS, rng)? {
            return Ok(c);
        }
    }
    Err(NoKey("no prime found"))
}

/// A new RSA 2048 key as a PKCS#8 document.
pub fn generate_pkcs8() -> Result<Vec<u8>, NoKey> {
    generate(&SystemRandom::new()).map(|parts| pkcs8(&parts))
}

/// A new RSA 2048 key's numbers.
fn generate(rng: &dyn SecureRandom) -> Result<Parts, NoKey> {
    let small = small_primes();
    loop {
        let a = prime(rng, &small, None)?;
        let b = prime(rng, &small, Some(&a))?;
        let (p, q) = if b.lt(&a) { (a, b) } else { (b, a) };
        let one = Uint::<HALF>::small(1);
        let (p1, q1) = (p.sub(&one).0, q.sub(&one).0);
        let n = mul_wide(&p, &q);
        let phi = mul_wide(&p1, &q1);
        let g = gcd(&p1, &q1).resize::<FULL>();
        let lambda = div_rem(&phi, &g).0;
        let (Some(d), Some(dp), Some(dq)) =
            (inverse_of_e(&lambda), inverse_of_e(&p1), inverse_of_e(&q1))
        else {
            continue; // (not reached: gcd(p − 1, e) = gcd(q − 1, e) = 1)
        };
        // d > 2^(nlen/2) (FIPS 186-5 §A.1.1); else new primes.
        if d.bits() <= 1024 {
            continue;
        }
        let mont = Mont::new(&p);
        let p2 = p.sub(&Uint::small(2)).0;
        let q_inv = mont.leave(&mont.pow(&mont.enter(&q), &p2));
        return Ok(Parts {
            n,
            d,
            p,
            q,
            dp,
            dq,
            q_inv,
        });
    }
}

/// The numbers of a key (RFC 8017 §3.2, two primes).
struct Parts {
    n: Uint<FULL>,
    d: Uint<FULL>,
    p: Uint<HALF>,
    q: Uint<HALF>,
    dp: Uint<HALF>,
    dq: Uint<HALF>,
    q_inv: Uint<HALF>,
}

/// `INTEGER`s of `bytes`, which are wiped after.
fn secret_uint(w: &mut Writer, mut bytes: Vec<u8>) {
    w.uint(&bytes);
    bytes.fill(0);
    std::hint::black_box(&bytes);
}

/// The key as PKCS#8 (RFC 5208 §5: version 0, rsaEncryption with NULL
/// parameters, the `RSAPrivateKey` of RFC 8017 Appendix A.1.2 in an
/// OCTET STRING).
fn pkcs8(k: &Parts) -> Vec<u8> {
    let mut inner = Writer::new();
    inner.seq(|w| {
        w.uint(&[0]); // two-prime
        w.uint(&k.n.to_be());
        w.uint(&E.to_be_bytes());
        secret_uint(w, k.d.to_be());
        secret_uint(w, k.p.to_be());
        secret_uint(w, k.q.to_be());
        secret_uint(w, k.dp.to_be());
        secret_uint(w, k.dq.to_be());
        secret_uint(w, k.q_inv.to_be());
    });
    let mut inner = inner.finish();
    let mut w = Writer::new();
    w.seq(|w| {
        w.uint(&[0]);
        w.seq(|w| {
            w.oid(RSA_ENCRYPTION);
            w.prim(NULL, &[]);
        });
        w.prim(OCTET_STRING, &inner);
    });
    inner.fill(0);
    std::hint::black_box(&inner);
    w.finish()
}

#[cfg(test)]
mod tests;
