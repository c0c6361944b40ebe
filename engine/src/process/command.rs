//! The `brisk` command's whole run, from its arguments to its exit
//! status: here rather than in the command's own package, so that what it
//! drops (a configuration, an error) has its drop code once in the
//! binary, not once a package (1.5 KiB with `tls`).

use std::ffi::OsString;
use std::io::Write;

use crate::config::{self, Command};
use crate::log::console;

/// Runs the command line `args` (without the program's name): parses it
/// and its configuration, then serves, checks, prints or signals.
/// Returns the exit status: 0, 1 (a failure at run time), 2 (a bad
/// command line or configuration).
pub fn command(args: Vec<OsString>) -> i32 {
    // (Started by an upgrade, the cargo feature `ops`: why it fails goes
    // to the previous brisk, which logs it; a daemon's standard error is
    // /dev/null.)
    #[cfg(feature = "ops")]
    let upgrade = crate::sys::upgrade::failure_pipe();
    let say = |e: &dyn std::fmt::Display| {
        console::say(format_args!("{e}"));
        #[cfg(feature = "ops")]
        if let Some(pipe) = &upgrade {
            crate::sys::upgrade::say_failed(pipe, &e.to_string());
        }
    };
    match config::from_args(args.clone()) {
        Ok(Command::Run(cfg)) => match config::Reload::new(args, &cfg)
            .map_err(super::Error::CurrentDir)
            .and_then(|reload| super::run(cfg, Some(reload)))
        {
            Ok(()) => 0,
            Err(e) => {
                say(&e);
                1
            }
        },
        Ok(Command::CheckOk(text) | Command::Help(text) | Command::Version(text)) => print(&text),
        Ok(Command::Signal {
            pid_file,
            signal,
            what,
        }) => match super::signal_running(&pid_file, signal) {
            Ok(pid) => print(&format!(
                "told brisk (pid {pid}, from {}) to {what}; its error log says how it went",
                pid_file.display()
            )),
            Err(e) => {
                console::say(format_args!("{e}"));
                1
            }
        },
        Err(e) => {
            say(&e);
            2
        }
    }
}

/// Prints `text` on standard output, ending with a newline; returns the
/// exit code.
/// A reader that stopped reading (`brisk --help | head -3`) is no error:
/// it had what it wanted, so brisk exits 0 without a word, where
/// `println!` would panic on the broken pipe. Any other failure (a full
/// disk) is reported and exits 1.
fn print(text: &str) -> i32 {
    let mut out = std::io::stdout().lock();
    match out
        .write_all(text.as_bytes())
        .and_then(|()| match text.ends_with('\n') {
            true => Ok(()),
            false => out.write_all(b"\n"),
        })
        .and_then(|()| out.flush())
    {
        Ok(()) => 0,
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => 0,
        Err(e) => {
            console::say(format_args!("cannot write to standard output: {e}"));
            1
        }
    }
}
