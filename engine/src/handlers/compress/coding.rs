//! The three codings, whole (a static file's variant, made once on the
//! compression threads) and streamed (a process's or handler's output,
//! compressed on the worker as it passes, in bounded memory).

use std::io::{self, Write};

use crate::config::Coding;

/// Brotli's window for streamed output: 256 KiB (`lgwin` 18) bounds the
/// memory a stream holds; whole files get a window fitted to their size.
const STREAM_LGWIN: u32 = 18;
/// zstd's window for streamed output: 512 KiB (RFC 8878 §3.1.1.1.2 lets
/// a decoder refuse windows above 8 MiB; this keeps both sides small).
const STREAM_WINDOW_LOG: u32 = 19;

/// `data` compressed whole with `coding` at `level`.
pub fn compress(coding: Coding, level: u32, data: &[u8]) -> io::Result<Vec<u8>> {
    let out = Vec::with_capacity(data.len() / 3 + 64);
    match coding {
        Coding::Gzip => {
            let mut e = flate2::write::GzEncoder::new(out, flate2::Compression::new(level));
            e.write_all(data)?;
            e.finish()
        }
        Coding::Br => {
            // The smallest window that holds the whole file (10..=24 bits).
            let bits = 64 - (data.len().max(1) as u64 - 1).leading_zeros();
            let lgwin = bits.clamp(10, 24);
            let mut e = brotli::CompressorWriter::new(out, 4096, level, lgwin);
            e.write_all(data)?;
            Ok(e.into_inner())
        }
        Coding::Zstd => {
            let mut c = zstd::bulk::Compressor::new(level as i32)?;
            if level > 19 {
                // Levels 20 to 22 take a window of up to 128 MiB (as much
                // as the file): RFC 9659 §3 forbids an encoder frames that
                // need more than 8 MB for `Content-Encoding: zstd`, and
                // browsers refuse them. (Levels up to 19 stay within it.)
                c.set_parameter(zstd::zstd_safe::CParameter::WindowLog(ZSTD_HTTP_WINDOW_LOG))?;
            }
            c.compress(data)
        }
    }
}

/// The largest zstd window an HTTP client must decode: 8 MiB (RFC 9659
/// §3).
const ZSTD_HTTP_WINDOW_LOG: u32 = 23;

/// A streamed compressor: each piece given is compressed and flushed
/// (a sync flush), so a client sees a slow producer's output as it comes.
pub enum StreamCoder {
    /// gzip.
    Gzip(flate2::write::GzEncoder<Vec<u8>>),
    /// brotli.
    Br(Box<brotli::CompressorWriter<Vec<u8>>>),
    /// zstd.
    Zstd(zstd::stream::write::Encoder<'static, Vec<u8>>),
}

impl std::fmt::Debug for StreamCoder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            StreamCoder::Gzip(_) => "StreamCoder(gzip)",
            StreamCoder::Br(_) => "StreamCoder(br)",
            StreamCoder::Zstd(_) => "StreamCoder(zstd)",
        })
    }
}

impl StreamCoder {
    /// A stream coder for `coding` at `level`.
    pub fn new(coding: Coding, level: u32) -> io::Result<StreamCoder> {
        Ok(match coding {
            Coding::Gzip => StreamCoder::Gzip(flate2::write::GzEncoder::new(
                Vec::new(),
                flate2::Compression::new(level),
            )),
            Coding::Br => StreamCoder::Br(Box::new(brotli::CompressorWriter::new(
                Vec::new(),
                4096,
                level,
                STREAM_LGWIN,
            ))),
            Coding::Zstd => {
                let mut e = zstd::stream::write::Encoder::new(Vec::new(), level as i32)?;
                e.window_log(STREAM_WINDOW_LOG)?;
                StreamCoder::Zstd(e)
            }
        })
    }

    /// Compresses `data` and appends what it makes of it (flushed) to `out`.
    pub fn push(&mut self, data: &[u8], out: &mut Vec<u8>) -> io::Result<()> {
        match self {
            StreamCoder::Gzip(e) => {
                e.write_all(data)?;
                e.flush()?;
                take(e.get_mut(), out);
            }
            StreamCoder::Br(e) => {
                e.write_all(data)?;
                e.flush()?;
                take(e.get_mut(), out);
            }
            StreamCoder::Zstd(e) => {
                e.write_all(data)?;
                e.flush()?;
                take(e.get_mut(), out);
            }
        }
        Ok(())
    }

    /// Ends the compressed stream, appending its last bytes to `out`.
    pub fn finish(self, out: &mut Vec<u8>) -> io::Result<()> {
        let rest = match self {
            StreamCoder::Gzip(e) => e.finish()?,
            StreamCoder::Br(e) => e.into_inner(),
            StreamCoder::Zstd(e) => e.finish()?,
        };
        out.extend_from_slice(&rest);
        Ok(())
    }
}

/// Moves what a coder wrote to its buffer onto `out` (keeping the
/// buffer's memory for the next piece).
fn take(buf: &mut Vec<u8>, out: &mut Vec<u8>) {
    out.extend_from_slice(buf);
    buf.clear();
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    fn sample() -> Vec<u8> {
        (0..20_000u32)
            .flat_map(|i| format!("<li>item {i} of the list</li>\n").into_bytes())
            .collect()
    }

    fn decode(coding: Coding, data: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        match coding {
            Coding::Gzip => {
                flate2::read::MultiGzDecoder::new(data)
                    .read_to_end(&mut out)
                    .unwrap();
            }
            Coding::Br => {
                brotli::Decompressor::new(data, 4096)
                    .read_to_end(&mut out)
                    .unwrap();
            }
            Coding::Zstd => out = zstd::stream::decode_all(data).unwrap(),
        }
        out
    }

    #[test]
    fn whole_and_streamed_round_trip() {
        let data = sample();
        for coding in Coding::ALL {
            let whole = compress(coding, 6, &data).unwrap();
            assert!(whole.len() < data.len() / 4, "{coding:?}");
            assert_eq!(decode(coding, &whole), data, "{coding:?}");
            let mut s = StreamCoder::new(coding, 3).unwrap();
            let mut out = Vec::new();
            for piece in data.chunks(7000) {
                let before = out.len();
                s.push(piece, &mut out).unwrap();
                assert!(out.len() > before, "{coding:?}: each piece is flushed");
            }
            s.finish(&mut out).unwrap();
            assert_eq!(decode(coding, &out), data, "{coding:?}");
        }
    }

    #[test]
    fn zstd_windows_stay_within_what_http_clients_decode() {
        // 9 MiB: more than the 8 MiB window a client must (and Chromium
        // will at most) decode; repetitive enough to be quick at level 22.
        let block: Vec<u8> = (0..4096u32)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 24) as u8)
            .collect();
        let data: Vec<u8> = block.iter().copied().cycle().take(9 << 20).collect();
        for level in [19, 22] {
            let z = compress(Coding::Zstd, level, &data).unwrap();
            let mut d = zstd::stream::read::Decoder::new(&z[..]).unwrap();
            d.window_log_max(ZSTD_HTTP_WINDOW_LOG).unwrap();
            let mut out = Vec::new();
            d.read_to_end(&mut out)
                .unwrap_or_else(|e| panic!("level {level}: {e}"));
            assert!(out == data, "level {level}");
        }
    }

    #[test]
    fn empty_input() {
        for coding in Coding::ALL {
            assert_eq!(decode(coding, &compress(coding, 1, b"").unwrap()), b"");
        }
    }
}
