//! The `bport` binary: everything lives in the library; this only hands over to the CLI layer.

fn main() -> std::process::ExitCode {
    bport::cli::main()
}
