//! Without the features `upstreams` and `webdav` nothing is spliced
//! (only a proxied answer and a PUT's body are): no pipe can be had, so
//! the code that queues and sends one is left out of the build. The same
//! names as `splice.rs`.

use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;

/// A pipe: none can be made.
#[derive(Debug)]
pub enum Pipe {}

impl Pipe {
    /// None.
    pub fn take() -> Option<Pipe> {
        None
    }

    /// (Never called: no pipe is.)
    pub fn held(&self) -> usize {
        match *self {}
    }

    /// (Never called: no pipe is.)
    pub fn send_to(&self, _sock: &impl AsRawFd, _max: usize, _more: bool) -> io::Result<usize> {
        match *self {}
    }

    /// (Never called: no pipe is.)
    pub fn sent(&mut self, _n: usize) {
        match *self {}
    }

    /// (Never called: no pipe is.)
    pub fn room(&self) -> usize {
        match *self {}
    }

    /// (Never called: no pipe is.)
    pub fn fill_from(&mut self, _sock: &impl AsRawFd, _max: usize) -> io::Result<usize> {
        match *self {}
    }

    /// (Never called: no pipe is.)
    pub fn empty_into(&mut self, _file: &File) -> io::Result<()> {
        match *self {}
    }
}
