//! Access control: throttling (and, next to it, authentication).

pub mod throttle;
