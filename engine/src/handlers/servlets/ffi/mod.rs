//! Servlets through Lua's C API, where mlua's safe API costs too much per
//! request or cannot do it: the CPU-time budget's hook, the allocation
//! function, the request table, the `res` object, `string.find`/`match`/
//! `gmatch`, and `brisk.json.encode`'s walk (with its C part,
//! `c/brisk_lj.c`, compiled into the vendored LuaJIT).
//!
//! With `sys/` the only place `unsafe` is allowed (servlets/mod.rs:
//! `#[allow(unsafe_code)] mod ffi;`); each block carries a `// SAFETY:`
//! line saying why it is sound.

pub mod cpu;
pub mod heap;
pub mod raw;
pub mod req;
pub mod res;
pub mod run;
pub mod stack;
pub mod str;
