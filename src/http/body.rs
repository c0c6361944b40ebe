//! Request body framing: Content-Length and chunked decoding, sans-IO.
//!
//! STUB: signatures are the contract; bodies are filled in by the parser work.

use super::parse::{BodyFraming, ParseError};

/// Limits applied while reading a body.
#[derive(Debug, Clone, Copy)]
pub struct BodyLimits {
    /// Largest decoded body; larger → 413.
    pub max_body: u64,
    /// Longest chunk-extension per chunk; longer → 400.
    pub max_chunk_ext: usize,
    /// Largest trailer section; larger → 431.
    pub max_trailers: usize,
}

/// Decodes a request body incrementally.
#[derive(Debug)]
pub struct BodyDecoder {
    _private: (),
}

impl BodyDecoder {
    /// Starts decoding a body with this framing. A `Content-Length` over
    /// the limit is refused at once with 413.
    pub fn new(framing: BodyFraming, limits: &BodyLimits) -> Result<BodyDecoder, ParseError> {
        let _ = (framing, limits);
        todo!()
    }

    /// Feeds `input`; every piece of decoded body data is passed to `sink`.
    /// Returns how many bytes of `input` were consumed. Bytes after the end
    /// of the body are not consumed (they belong to the next request).
    pub fn decode(
        &mut self,
        input: &[u8],
        sink: &mut dyn FnMut(&[u8]),
    ) -> Result<usize, ParseError> {
        let _ = (input, sink);
        todo!()
    }

    /// Whether the whole body (and for chunked, the trailers) has been read.
    pub fn is_done(&self) -> bool {
        todo!()
    }
}
