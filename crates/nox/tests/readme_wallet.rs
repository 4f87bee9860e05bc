//! The README's `nox wallet` command lines are the commands as they are (issue 35: docs that
//! match the code): every `nox wallet …` line of the README's example block, with `$W` expanded
//! as the README defines it, parses with the real `nox wallet` argument parser — a renamed
//! subcommand or flag fails here instead of in a reader's terminal. And the argument checks the
//! README promises: a shielded address where an Ethereum address belongs is refused as such, as
//! is a mixed-case Ethereum address whose EIP-55 checksum does not match.

use clap::Parser;
use nox::wallet_cmd::WalletCommand;

#[derive(Parser)]
#[command(name = "nox")]
enum Cli {
    #[command(subcommand)]
    Wallet(WalletCommand),
}

/// `W`'s value in the README (`With W="…"`), whitespace collapsed.
fn readme_w(readme: &str) -> String {
    let start = readme.find("With `W=\"").expect("the README defines W") + "With `W=\"".len();
    let end = start + readme[start..].find('"').expect("W's closing quote");
    readme[start..end].split_whitespace().collect::<Vec<_>>().join(" ")
}

#[test]
fn every_wallet_command_line_in_the_readme_parses() {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../README.md")).expect("README");
    let w = readme_w(&readme);
    let lines: Vec<&str> =
        readme.lines().filter(|l| l.starts_with("nox wallet ")).map(|l| l.split('#').next().unwrap_or(l)).collect();
    assert!(lines.len() >= 10, "the README's wallet block: {lines:?}");
    let mut seen = Vec::new();
    for line in lines {
        let line = line
            .replace("$W", &w)
            .replace("nox1…", NOX1)
            .replace("0xFRESH", "0x5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a");
        let args: Vec<&str> = line.split_whitespace().collect();
        if let Err(e) = Cli::try_parse_from(&args) {
            panic!("README line `{line}` does not parse:\n{e}");
        }
        seen.push(args[2].to_owned());
    }
    for cmd in
        ["new", "address", "viewing-key", "deposit", "sync", "balance", "send", "split", "join", "withdraw", "restore"]
    {
        assert!(seen.iter().any(|c| c == cmd), "the README shows `nox wallet {cmd}`: {seen:?}");
    }
}

/// A syntactically valid `nox1…` string (the parser checks it only when the command runs).
const NOX1: &str =
    "nox1qqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqq";

#[test]
fn addresses_of_the_wrong_kind_or_with_a_bad_checksum_are_refused_by_name() {
    let withdraw = |to: &str| {
        Cli::try_parse_from(["nox", "wallet", "withdraw", "--amount", "0.1", "--to", to]).err().map(|e| e.to_string())
    };
    let shielded = withdraw(NOX1).expect("refused");
    assert!(shielded.contains("shielded address, not an Ethereum address"), "{shielded}");
    // EIP-55's own example address, then with one letter's case flipped.
    assert!(withdraw("0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed").is_none());
    let typo = withdraw("0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAeD").expect("refused");
    assert!(typo.contains("EIP-55 checksum"), "{typo}");
    assert!(withdraw("0x5aaeb6053f3e94c9b9a09f33669435e7ef1beaed").is_none(), "one case: no checksum to check");
}
