//! See Cargo.toml. `h2-hpack-bench bench ROUNDS MILLIS` times each codec
//! compiled in; `h2-hpack-bench size` is the program whose stripped size
//! is compared (it decodes and encodes blocks read from standard input,
//! so the codec is linked in whole).

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

struct Counting;
static ALLOCS: AtomicU64 = AtomicU64::new(0);
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        System.alloc(l)
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        System.dealloc(p, l)
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, n: usize) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        System.realloc(p, l, n)
    }
}
#[global_allocator]
static A: Counting = Counting;

/// A browser's request for a page asset (Chrome 131 on Linux, as sent
/// over h2), and the answer to it.
const REQUEST: &[(&str, &str)] = &[
    (":method", "GET"),
    (":authority", "www.example.org"),
    (":scheme", "https"),
    (":path", "/assets/app.3f9a1c7e.js"),
    ("sec-ch-ua", "\"Chromium\";v=\"131\", \"Not_A Brand\";v=\"24\""),
    ("sec-ch-ua-mobile", "?0"),
    ("user-agent", "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36"),
    ("sec-ch-ua-platform", "\"Linux\""),
    ("accept", "*/*"),
    ("sec-fetch-site", "same-origin"),
    ("sec-fetch-mode", "no-cors"),
    ("sec-fetch-dest", "script"),
    ("referer", "https://www.example.org/"),
    ("accept-encoding", "gzip, deflate, br, zstd"),
    ("accept-language", "en-US,en;q=0.9"),
    ("cookie", "session=7f3a9c2e41b04d8e; theme=dark"),
    ("priority", "u=1"),
];
const RESPONSE: &[(&str, &str)] = &[
    (":status", "200"),
    ("server", "brisk"),
    ("date", "Mon, 23 Nov 2026 15:40:12 GMT"),
    ("content-type", "text/javascript"),
    ("content-length", "48213"),
    ("last-modified", "Sun, 22 Nov 2026 09:12:44 GMT"),
    ("etag", "\"bc55-65f1a2b3\""),
    ("accept-ranges", "bytes"),
    ("cache-control", "max-age=31536000, immutable"),
    ("vary", "Accept-Encoding"),
];

/// A client's encoding of REQUEST: the first request of a connection
/// (literals with incremental indexing, Huffman-coded, as browsers and
/// nghttp2 send them), and a later one (the same fields, now indexed,
/// but for a new :path literal). Built by hand from RFC 7541's rules so
/// that every decoder reads the same bytes.
fn client_blocks() -> (Vec<u8>, Vec<u8>) {
    fn int(v: usize, n: u32, flags: u8, out: &mut Vec<u8>) {
        let max = (1usize << n) - 1;
        if v < max {
            out.push(flags | v as u8);
            return;
        }
        out.push(flags | max as u8);
        let mut r = v - max;
        while r >= 128 {
            out.push((r & 0x7f) as u8 | 0x80);
            r >>= 7;
        }
        out.push(r as u8);
    }
    fn lit(s: &str, out: &mut Vec<u8>) {
        // Raw literals: the same bytes for every decoder, whatever
        // Huffman coder each has (the Huffman tables are RFC data; their
        // decoding is measured by each library's own tests).
        int(s.len(), 7, 0, out);
        out.extend_from_slice(s.as_bytes());
    }
    let mut first = Vec::new();
    // :method GET (2), :scheme https (7) indexed; the rest literal + indexing.
    for (name, value) in REQUEST {
        match (*name, *value) {
            (":method", "GET") => first.push(0x82),
            (":scheme", "https") => first.push(0x87),
            _ => {
                first.push(0x40);
                lit(name, &mut first);
                lit(value, &mut first);
            }
        }
    }
    // Now the dynamic table holds the 15 literals, newest first: index
    // 62 is the last one inserted (priority), 76 the first (:authority).
    let mut later = Vec::new();
    let inserted: Vec<&(&str, &str)> = REQUEST
        .iter()
        .filter(|(n, v)| !matches!((*n, *v), (":method", "GET") | (":scheme", "https")))
        .collect();
    let k = inserted.len();
    for (name, value) in REQUEST {
        match (*name, *value) {
            (":method", "GET") => later.push(0x82),
            (":scheme", "https") => later.push(0x87),
            (":path", _) => {
                // A new path: literal without indexing, name :path (4).
                later.push(0x04);
                lit("/assets/vendor.91be02d4.css", &mut later);
            }
            _ => {
                let pos = inserted.iter().position(|e| e.0 == *name).unwrap();
                int(62 + (k - 1 - pos), 7, 0x80, &mut later);
            }
        }
    }
    (first, later)
}

trait Codec {
    fn name(&self) -> &'static str;
    /// Decodes `block` on a warm decoder; returns the bytes decoded.
    fn decode(&mut self, block: &[u8]) -> usize;
    /// A fresh decoder (for the connection's first block).
    fn reset(&mut self);
    /// Encodes RESPONSE; returns the block's length.
    fn encode(&mut self) -> usize;
}

#[cfg(feature = "ours")]
mod ours {
    use brisk::h2::hpack;
    pub struct Ours {
        d: hpack::Decoder,
        out: Vec<u8>,
    }
    impl Ours {
        pub fn new() -> Ours {
            Ours {
                d: hpack::Decoder::new(4096),
                out: Vec::with_capacity(1024),
            }
        }
    }
    impl super::Codec for Ours {
        fn name(&self) -> &'static str {
            "ours"
        }
        fn decode(&mut self, block: &[u8]) -> usize {
            let mut n = 0;
            self.d
                .decode(block, 1 << 20, &mut |a, b| n += a.len() + b.len())
                .unwrap();
            n
        }
        fn reset(&mut self) {
            self.d = hpack::Decoder::new(4096);
        }
        fn encode(&mut self) -> usize {
            self.out.clear();
            for (n, v) in super::RESPONSE {
                if *n == ":status" {
                    hpack::encode_status(200, &mut self.out);
                } else {
                    hpack::encode_field(n.as_bytes(), v.as_bytes(), &mut self.out);
                }
            }
            self.out.len()
        }
    }
}

#[cfg(feature = "loona")]
mod loona {
    pub struct Loona {
        d: loona_hpack::Decoder<'static>,
        e: loona_hpack::Encoder<'static>,
    }
    impl Loona {
        pub fn new() -> Loona {
            Loona {
                d: loona_hpack::Decoder::new(),
                e: loona_hpack::Encoder::new(),
            }
        }
    }
    impl super::Codec for Loona {
        fn name(&self) -> &'static str {
            "loona-hpack"
        }
        fn decode(&mut self, block: &[u8]) -> usize {
            let mut n = 0;
            self.d
                .decode_with_cb(block, |a, b| n += a.len() + b.len())
                .unwrap();
            n
        }
        fn reset(&mut self) {
            self.d = loona_hpack::Decoder::new();
        }
        fn encode(&mut self) -> usize {
            let fields = super::RESPONSE.iter().map(|(n, v)| (n.as_bytes(), v.as_bytes()));
            self.e.encode(fields).len()
        }
    }
}

#[cfg(feature = "nghttp2")]
mod nghttp2 {
    // (Linked only when named.)
    use libnghttp2_sys as _;
    use std::os::raw::c_int;
    #[repr(C)]
    struct Nv {
        name: *mut u8,
        value: *mut u8,
        namelen: usize,
        valuelen: usize,
        flags: u8,
    }
    enum Inflater {}
    enum Deflater {}
    extern "C" {
        fn nghttp2_hd_inflate_new(p: *mut *mut Inflater) -> c_int;
        fn nghttp2_hd_inflate_del(p: *mut Inflater);
        fn nghttp2_hd_inflate_hd2(p: *mut Inflater, nv: *mut Nv, flags: *mut c_int, inp: *const u8, len: usize, fin: c_int) -> isize;
        fn nghttp2_hd_inflate_end_headers(p: *mut Inflater) -> c_int;
        fn nghttp2_hd_deflate_new(p: *mut *mut Deflater, max: usize) -> c_int;
        fn nghttp2_hd_deflate_hd(p: *mut Deflater, buf: *mut u8, len: usize, nv: *const Nv, n: usize) -> isize;
    }
    pub struct Ng {
        i: *mut Inflater,
        d: *mut Deflater,
        nv: Vec<Nv>,
        out: Vec<u8>,
    }
    impl Ng {
        pub fn new() -> Ng {
            let mut i = std::ptr::null_mut();
            let mut d = std::ptr::null_mut();
            unsafe {
                assert_eq!(nghttp2_hd_inflate_new(&mut i), 0);
                // A deflater that does not index, like ours: answers use the
                // static table and Huffman only.
                assert_eq!(nghttp2_hd_deflate_new(&mut d, 0), 0);
            }
            let nv = super::RESPONSE
                .iter()
                .map(|(n, v)| Nv {
                    name: n.as_ptr() as *mut u8,
                    value: v.as_ptr() as *mut u8,
                    namelen: n.len(),
                    valuelen: v.len(),
                    flags: 0,
                })
                .collect();
            Ng { i, d, nv, out: vec![0; 4096] }
        }
    }
    impl super::Codec for Ng {
        fn name(&self) -> &'static str {
            "nghttp2"
        }
        fn decode(&mut self, block: &[u8]) -> usize {
            let mut n = 0;
            let (mut inp, mut len) = (block.as_ptr(), block.len());
            loop {
                let mut nv = Nv { name: std::ptr::null_mut(), value: std::ptr::null_mut(), namelen: 0, valuelen: 0, flags: 0 };
                let mut flags = 0;
                let r = unsafe { nghttp2_hd_inflate_hd2(self.i, &mut nv, &mut flags, inp, len, 1) };
                assert!(r >= 0);
                unsafe {
                    inp = inp.add(r as usize);
                }
                len -= r as usize;
                if flags & 0x02 != 0 {
                    n += nv.namelen + nv.valuelen;
                }
                if flags & 0x01 != 0 {
                    unsafe { nghttp2_hd_inflate_end_headers(self.i) };
                    break;
                }
                if r == 0 && flags & 0x02 == 0 {
                    break;
                }
            }
            n
        }
        fn reset(&mut self) {
            unsafe {
                nghttp2_hd_inflate_del(self.i);
                assert_eq!(nghttp2_hd_inflate_new(&mut self.i), 0);
            }
        }
        fn encode(&mut self) -> usize {
            let r = unsafe { nghttp2_hd_deflate_hd(self.d, self.out.as_mut_ptr(), self.out.len(), self.nv.as_ptr(), self.nv.len()) };
            assert!(r > 0);
            r as usize
        }
    }
}

#[cfg(feature = "h2")]
fn h2_server() {
    // The least an h2 server on tokio needs: what its size is measured by.
    let rt = tokio::runtime::Builder::new_current_thread().enable_io().build().unwrap();
    rt.block_on(async {
        let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let (s, _) = l.accept().await.unwrap();
        let mut c = h2::server::handshake(s).await.unwrap();
        while let Some(Ok((_req, mut respond))) = c.accept().await {
            let resp = http::Response::new(());
            let mut send = respond.send_response(resp, false).unwrap();
            send.send_data(bytes::Bytes::from_static(b"hi"), true).unwrap();
        }
    });
}

fn codecs() -> Vec<Box<dyn Codec>> {
    #[allow(unused_mut)]
    let mut v: Vec<Box<dyn Codec>> = Vec::new();
    #[cfg(feature = "ours")]
    v.push(Box::new(ours::Ours::new()));
    #[cfg(feature = "loona")]
    v.push(Box::new(loona::Loona::new()));
    #[cfg(feature = "nghttp2")]
    v.push(Box::new(nghttp2::Ng::new()));
    v
}

fn ns_per(iters: u64, t: Instant) -> f64 {
    t.elapsed().as_nanos() as f64 / iters as f64
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (first, later) = client_blocks();
    if args.get(1).map(String::as_str) == Some("size") {
        // Decode and encode what arrives on stdin, so the linker keeps it all.
        let mut input = Vec::new();
        std::io::Read::read_to_end(&mut std::io::stdin(), &mut input).unwrap();
        for c in codecs().iter_mut() {
            println!("{} {}", c.decode(&input), c.encode());
        }
        #[cfg(feature = "h2")]
        if input.is_empty() {
            h2_server();
        }
        return;
    }
    let rounds: u32 = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(3);
    let millis: u128 = args.get(3).and_then(|s| s.parse().ok()).unwrap_or(500);
    println!(
        "request block: {} bytes first, {} bytes later; response: {} fields",
        first.len(),
        later.len(),
        RESPONSE.len()
    );
    let mut codecs = codecs();
    for round in 1..=rounds {
        for c in codecs.iter_mut() {
            // A connection's first block, decoder fresh each time.
            let (mut n, t) = (0u64, Instant::now());
            let a0 = ALLOCS.load(Ordering::Relaxed);
            while t.elapsed().as_millis() < millis {
                for _ in 0..100 {
                    c.reset();
                    std::hint::black_box(c.decode(&first));
                }
                n += 100;
            }
            let first_ns = ns_per(n, t);
            let first_allocs = (ALLOCS.load(Ordering::Relaxed) - a0) as f64 / n as f64;
            // Later blocks on a warm decoder (the steady state).
            c.reset();
            let decoded = c.decode(&first);
            let (mut n, t) = (0u64, Instant::now());
            let a0 = ALLOCS.load(Ordering::Relaxed);
            while t.elapsed().as_millis() < millis {
                for _ in 0..1000 {
                    std::hint::black_box(c.decode(&later));
                }
                n += 1000;
            }
            let later_ns = ns_per(n, t);
            let later_allocs = (ALLOCS.load(Ordering::Relaxed) - a0) as f64 / n as f64;
            // Encoding the response head.
            let len = c.encode();
            let (mut n, t) = (0u64, Instant::now());
            let a0 = ALLOCS.load(Ordering::Relaxed);
            while t.elapsed().as_millis() < millis {
                for _ in 0..1000 {
                    std::hint::black_box(c.encode());
                }
                n += 1000;
            }
            let enc_ns = ns_per(n, t);
            let enc_allocs = (ALLOCS.load(Ordering::Relaxed) - a0) as f64 / n as f64;
            println!(
                "round {round} {:12} decode first {:7.0} ns ({:5.1} allocs, {decoded} B)  later {:6.0} ns ({:4.1} allocs)  encode {:6.0} ns ({:4.1} allocs, {len} B)",
                c.name(), first_ns, first_allocs, later_ns, later_allocs, enc_ns, enc_allocs
            );
        }
    }
}
