use std::process::Command;

use ring::rand::SystemRandom;
use ring::signature::{KeyPair as _, RsaKeyPair, RSA_PKCS1_2048_8192_SHA256, RSA_PKCS1_SHA256};

use super::*;

/// Random limbs (test values, not secrets).
fn limbs<const L: usize>(rng: &SystemRandom) -> Uint<L> {
    Uint::random(rng, 64 * L as u32).unwrap()
}

fn as_u128(u: &Uint<2>) -> u128 {
    u128::from(u.0[1]) << 64 | u128::from(u.0[0])
}

fn of_u128(v: u128) -> Uint<2> {
    Uint([v as u64, (v >> 64) as u64])
}

fn pow_mod(base: u64, mut exp: u64, m: u64) -> u64 {
    let (mut acc, mut base) = (1u128 % u128::from(m), u128::from(base) % u128::from(m));
    while exp > 0 {
        if exp & 1 == 1 {
            acc = acc * base % u128::from(m);
        }
        base = base * base % u128::from(m);
        exp >>= 1;
    }
    acc as u64
}

/// `a·k mod m` (`a < m`) by doubling and adding, never past 2^128.
fn mul_mod(a: u128, k: u64, m: u128) -> u128 {
    let add = |x: u128, y: u128| if x >= m - y { x - (m - y) } else { x + y };
    let (mut acc, mut a) = (0, a);
    for i in 0..64 {
        if k >> i & 1 == 1 {
            acc = add(acc, a);
        }
        a = add(a, a);
    }
    acc
}

fn gcd_u128(mut a: u128, mut b: u128) -> u128 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

#[test]
fn the_arithmetic_agrees_with_u128() {
    let rng = SystemRandom::new();
    for i in 0..2_000 {
        let (a, b) = (limbs::<2>(&rng), limbs::<2>(&rng));
        // Smaller divisors too (long division's short quotients).
        let b = b.shr(i % 128);
        let (x, y) = (as_u128(&a), as_u128(&b).max(1));
        let y_u = of_u128(y);
        let (q, r) = div_rem(&a, &y_u);
        assert_eq!((as_u128(&q), as_u128(&r)), (x / y, x % y), "{x} / {y}");
        assert_eq!(as_u128(&gcd(&a, &y_u)), gcd_u128(x, y), "gcd({x}, {y})");
        assert_eq!(a.sub(&y_u), (of_u128(x.wrapping_sub(y)), x < y));
        assert_eq!(a.bits(), 128 - x.leading_zeros());
        assert_eq!(a.rem_small(E), (x % u128::from(E)) as u64);
        assert_eq!(a.to_be(), x.to_be_bytes());
        // e⁻¹ mod y, when there is one.
        if y > 1 {
            match inverse_of_e(&y_u) {
                Some(d) => {
                    assert!(as_u128(&d) < y);
                    assert_eq!(mul_mod(as_u128(&d), E, y), 1 % y, "e⁻¹ mod {y}");
                }
                None => assert_eq!(y % u128::from(E), 0),
            }
        }
    }
    // 2^128 − 1 is divisible by 3, 5, 17, 257, 641, 65537, …: no inverse.
    assert!(inverse_of_e(&of_u128(u128::MAX)).is_none());
}

#[test]
fn montgomery_products_and_powers_agree_with_u128() {
    let rng = SystemRandom::new();
    for _ in 0..300 {
        let m = limbs::<1>(&rng).0[0] | 1;
        if m < 3 {
            continue;
        }
        let mont = Mont::new(&Uint([m]));
        let (a, b) = (limbs::<1>(&rng).0[0] % m, limbs::<1>(&rng).0[0] % m);
        let product = mont.leave(&mont.mul(&mont.enter(&Uint([a])), &mont.enter(&Uint([b]))));
        assert_eq!(
            product.0[0],
            (u128::from(a) * u128::from(b) % u128::from(m)) as u64
        );
        let e = limbs::<1>(&rng).0[0];
        let power = mont.leave(&mont.pow(&mont.enter(&Uint([a])), &Uint([e])));
        assert_eq!(power.0[0], pow_mod(a, e, m), "{a}^{e} mod {m}");
    }
}

/// 2^k − 1 in 16 limbs.
fn mersenne(k: u32) -> Uint<HALF> {
    let mut u = Uint::<HALF>::zero();
    for i in 0..k {
        u.0[i as usize / 64] |= 1 << (i % 64);
    }
    u
}

#[test]
fn miller_rabin_knows_primes_from_carmichael_numbers() {
    let rng = SystemRandom::new();
    // (40 rounds: a composite passes with probability at most 2^-80.)
    for k in [61, 89, 107, 127, 521] {
        assert!(probably_prime(&mersenne(k), 40, &rng).unwrap(), "2^{k} − 1");
    }
    for k in [67, 101, 1021] {
        assert!(
            !probably_prime(&mersenne(k), 40, &rng).unwrap(),
            "2^{k} − 1"
        );
    }
    // Carmichael numbers (Fermat's test is fooled by every coprime base),
    // and 2047 and 3215031751, strong pseudoprimes to small bases.
    for n in [
        561u64,
        41_041,
        825_265,
        321_197_185,
        5_394_826_801,
        232_250_619_601,
        9_746_347_772_161,
        2047,
        3_215_031_751,
    ] {
        assert!(
            !probably_prime(&Uint::<HALF>::small(n), 40, &rng).unwrap(),
            "{n}"
        );
    }
    for p in [5u64, 7, 65_537, 2_147_483_647, 18_446_744_073_709_551_557] {
        assert!(
            probably_prime(&Uint::<HALF>::small(p), 40, &rng).unwrap(),
            "{p}"
        );
    }
}

#[test]
fn the_sieve_holds_the_odd_primes_below_its_bound() {
    let all: Vec<u64> = small_primes().into_iter().flat_map(|(_, ps)| ps).collect();
    assert_eq!(all.len(), 308); // π(2048) = 309, less 2
    assert_eq!(&all[..5], [3, 5, 7, 11, 13]);
    assert_eq!(all.last(), Some(&2039));
    for (product, primes) in small_primes() {
        assert_eq!(primes.iter().product::<u64>(), product);
    }
}

/// `openssl` with `args` and `input` on its stdin; its output, or None
/// (said as a skip) without openssl.
fn openssl(args: &[&str], input: &[u8]) -> Option<String> {
    use std::io::Write as _;
    let child = Command::new("openssl")
        .args(args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn();
    let Ok(mut child) = child else {
        crate::test_skip::skip("no openssl to check the RSA key with");
        return None;
    };
    child.stdin.take().unwrap().write_all(input).unwrap();
    let out = child.wait_with_output().unwrap();
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "openssl {args:?}: {text}");
    Some(text)
}

#[test]
fn a_key_is_consistent_loads_in_ring_and_rustls_and_passes_openssl_check() {
    let rng = SystemRandom::new();
    let started = std::time::Instant::now();
    let k = generate(&rng).unwrap();
    eprintln!("RSA 2048 key made in {:?}", started.elapsed());
    // Its numbers, checked with the arithmetic tested above.
    assert_eq!(k.n.bits(), 2048);
    assert_eq!((k.p.bits(), k.q.bits()), (1024, 1024));
    assert!(k.p.0[HALF - 1] >> 62 == 3 && k.q.0[HALF - 1] >> 62 == 3);
    assert!(k.q.lt(&k.p));
    assert!(k.p.sub(&k.q).0.bits() > 924);
    assert_eq!(mul_wide(&k.p, &k.q), k.n);
    let one = Uint::<HALF>::small(1);
    let (p1, q1) = (k.p.sub(&one).0, k.q.sub(&one).0);
    let lambda = div_rem(&mul_wide(&p1, &q1), &gcd(&p1, &q1).resize()).0;
    let (de, carry) = k.d.mul_small(E, 0);
    let mut de_wide = Uint::<33>::zero();
    de_wide.0[..FULL].copy_from_slice(&de.0);
    de_wide.0[FULL] = carry;
    assert_eq!(
        div_rem(&de_wide, &lambda.resize()).1,
        Uint::small(1),
        "e·d mod λ"
    );
    assert!(k.d.lt(&lambda) && k.d.bits() > 1024);
    assert_eq!(div_rem(&k.d, &p1.resize()).1, k.dp.resize(), "dP");
    assert_eq!(div_rem(&k.d, &q1.resize()).1, k.dq.resize(), "dQ");
    assert_eq!(
        div_rem(&mul_wide(&k.q, &k.q_inv), &k.p.resize()).1,
        Uint::small(1),
        "qInv"
    );
    for prime in [&k.p, &k.q] {
        assert!(probably_prime(prime, 40, &rng).unwrap());
        assert_ne!(prime.rem_small(E), 1, "gcd(p − 1, e)");
    }

    // ring takes it (and checks it: the sizes, p·q = n, qInv, d), signs.
    let der = pkcs8(&k);
    let pair = RsaKeyPair::from_pkcs8(&der).unwrap();
    assert_eq!(pair.public().modulus_len(), 256);
    // Its public key: RSAPublicKey { n, e } (RFC 8017 Appendix A.1.1).
    let mut public = Writer::new();
    public.seq(|w| {
        w.uint(&k.n.to_be());
        w.uint(&E.to_be_bytes());
    });
    assert_eq!(pair.public_key().as_ref(), public.finish());
    let msg = b"to be signed";
    let mut sig = vec![0; 256];
    pair.sign(&RSA_PKCS1_SHA256, &rng, msg, &mut sig).unwrap();
    ring::signature::UnparsedPublicKey::new(
        &RSA_PKCS1_2048_8192_SHA256,
        pair.public_key().as_ref(),
    )
    .verify(msg, &sig)
    .unwrap();
    // So does rustls.
    let signer = crate::tls::provider()
        .key_provider
        .load_private_key(rustls::pki_types::PrivateKeyDer::Pkcs8(der.clone().into()))
        .unwrap();
    assert_eq!(signer.algorithm(), rustls::SignatureAlgorithm::RSA);

    // OpenSSL's own check: p and q prime, n = p·q, d·e ≡ 1 mod λ, dP, dQ
    // and qInv.
    let pem = crate::acme::cert::pem("PRIVATE KEY", &der);
    let Some(text) = openssl(&["rsa", "-check", "-noout", "-text"], pem.as_bytes()) else {
        return;
    };
    assert!(text.contains("RSA key ok"), "{text}");
    assert!(text.contains("Private-Key: (2048 bit, 2 primes)"), "{text}");
    assert!(text.contains("publicExponent: 65537 (0x10001)"), "{text}");
}
