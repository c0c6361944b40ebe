//! The `brisk` command: parse the command line and config, then serve.

use brisk::config::{self, Command};

fn main() {
    let args: Vec<_> = std::env::args_os().skip(1).collect();
    let code = match config::from_args(args.clone()) {
        Ok(Command::Run(cfg)) => match config::Reload::new(args, &cfg)
            .map_err(|e| format!("cannot read the current directory: {e}"))
            .and_then(|reload| brisk::server::run(cfg, Some(reload)))
        {
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
