//! Event loops, listeners, connections, timers, shutdown.
