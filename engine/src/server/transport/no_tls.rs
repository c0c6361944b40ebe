//! A build without the cargo feature `tls`: the TLS transport's types
//! exist, so that the engine needs no feature gates, but none can be
//! made (the configuration refuses `[tls]`, so there is never a setup).

use std::io;
use std::net::SocketAddr;
use std::time::Instant;

use super::queue::Out;
use super::{Flushed, Tcp, Transport};
use crate::config::Config;
use crate::http::TlsSession;

/// No session state without TLS.
#[derive(Debug, Clone)]
pub enum Sessions {}

impl Sessions {
    /// Always `None`: the configuration of this build has no `[tls]`.
    pub fn new(
        _cfg: &Config,
        _previous: Option<&Sessions>,
        _log: &dyn Fn() -> crate::log::Logger,
    ) -> Result<Option<Sessions>, String> {
        Ok(None)
    }
}

/// No setup without TLS.
#[derive(Debug, Clone)]
pub enum Setup {}

impl Setup {
    /// Always `None`.
    pub fn new(_cfg: &Config, _sessions: Option<&Sessions>) -> Result<Option<Setup>, String> {
        Ok(None)
    }
}

/// Never made without TLS.
#[derive(Debug)]
pub enum Acceptor {}

/// Never made without TLS.
#[derive(Debug)]
pub enum Slot {}

impl Acceptor {
    /// Unreachable: there is no acceptor.
    pub fn new(setup: &Setup) -> Acceptor {
        match *setup {}
    }

    /// Unreachable: there is no acceptor.
    pub fn slot(&self) -> Option<Slot> {
        match *self {}
    }

    /// Unreachable: there is no acceptor.
    pub fn rest(&self) {
        match *self {}
    }

    /// Unreachable: there is no acceptor.
    pub fn max_handshakes(&self) -> usize {
        match *self {}
    }

    /// Unreachable: there is no acceptor.
    pub fn has_room(&self) -> bool {
        match *self {}
    }

    /// Unreachable: there is no acceptor.
    pub fn wrap(&self, _tcp: Tcp, _slot: Slot, _now: Instant) -> io::Result<Tls> {
        match *self {}
    }
}

/// Never made without TLS.
#[derive(Debug)]
pub enum Tls {}

impl Tls {
    /// Unreachable: there is no TLS connection.
    pub fn tcp(&self) -> &Tcp {
        match *self {}
    }

    /// Unreachable: there is no TLS connection.
    pub fn tcp_mut(&mut self) -> &mut Tcp {
        match *self {}
    }

    /// Unreachable: there is no TLS connection.
    pub fn deadline(&self) -> Option<Instant> {
        match *self {}
    }

    /// Unreachable: there is no TLS connection.
    pub fn session(&self) -> Option<TlsSession> {
        match *self {}
    }

    /// Unreachable: there is no TLS connection.
    pub fn server_name(&self) -> Option<&str> {
        match *self {}
    }

    /// Unreachable: there is no TLS connection.
    pub fn hello_stalled(&self) -> bool {
        match *self {}
    }

    /// Unreachable: there is no TLS connection.
    pub fn alpn_h2(&self) -> bool {
        match *self {}
    }

    /// Unreachable: there is no TLS connection.
    pub fn rest(&mut self) {
        match *self {}
    }
}

impl Transport for Tls {
    fn read(&mut self, _buf: &mut Vec<u8>, _max: usize) -> io::Result<usize> {
        match *self {}
    }

    fn flush(&mut self, _out: &mut Out, _limit: super::Limit, _fin: bool) -> io::Result<Flushed> {
        match *self {}
    }

    fn shutdown_write(&mut self) {
        match *self {}
    }

    fn local_addr(&self) -> Option<SocketAddr> {
        match *self {}
    }
}
