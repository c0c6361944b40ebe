//! The `brisk` command.

fn main() {
    std::process::exit(0);
}
