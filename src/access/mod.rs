//! Access control: throttling (and, next to it, authentication).

pub mod limits;
pub mod throttle;
