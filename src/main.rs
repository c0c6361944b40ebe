//! The `brisk` command: parse the command line and config, then serve.

use brisk::config::{self, Command};

fn main() {
    let code = match config::from_args(std::env::args_os().skip(1)) {
        Ok(Command::Run(cfg)) => match brisk::server::run(cfg) {
            Ok(()) => 0,
            Err(e) => {
                eprintln!("brisk: {e}");
                1
            }
        },
        Ok(Command::CheckOk(text) | Command::Help(text) | Command::Version(text)) => {
            println!("{text}");
            0
        }
        Err(e) => {
            eprintln!("brisk: {e}");
            2
        }
    };
    std::process::exit(code);
}
