//! QPACK test vectors from a real encoder, for the table's and the
//! connection's tests.

/// What a real encoder (ls-qpack, through Python's pylsqpack, with this
/// server's settings: capacity 4096, no blocked streams) put on its
/// encoder stream for a request it sent twice: Set Dynamic Table
/// Capacity 4096, then four insertions (`:authority` and `:path` by
/// static name, `x-custom` and `user-agent`).
const ENCODER_STREAM: &str = "3fe11fc0882f91d35d055c87a7c1022f6166f2b12d424f4f981a928cd651e94\
                              a0f54ca12d424f4a93947216c53b8e8b4bfff208a8ec323aac92a12c05707";

/// Its next section once the four were acknowledged: Required Insert
/// Count 4 (encoded 5), base 4, two static lines and four dynamic ones.
const DYNAMIC_SECTION: &str = "0500d1d783828180";

fn hex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

/// The encoder stream's bytes (without the stream's type).
pub fn encoder_stream() -> Vec<u8> {
    hex(ENCODER_STREAM)
}

/// The section that references the four entries.
pub fn dynamic_section() -> Vec<u8> {
    hex(DYNAMIC_SECTION)
}
