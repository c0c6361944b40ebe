//! The `brisk` command: parse the command line and config, then serve.

#![deny(unsafe_code)]

use std::io::Write;

use brisk::config::{self, Command};
use brisk::log::console;

fn main() {
    let args: Vec<_> = std::env::args_os().skip(1).collect();
    let code = match config::from_args(args.clone()) {
        Ok(Command::Run(cfg)) => match config::Reload::new(args, &cfg)
            .map_err(brisk::process::Error::CurrentDir)
            .and_then(|reload| brisk::process::run(cfg, Some(reload)))
        {
            Ok(()) => 0,
            Err(e) => {
                console::say(format_args!("{e}"));
                1
            }
        },
        Ok(Command::CheckOk(text) | Command::Help(text) | Command::Version(text)) => print(&text),
        Ok(Command::Signal {
            pid_file,
            signal,
            what,
        }) => match brisk::process::signal_running(&pid_file, signal) {
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
            console::say(format_args!("{e}"));
            2
        }
    };
    std::process::exit(code);
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
