//! Questions on the terminal: never asked without one, so a script never hangs.

use std::io::{BufRead, IsTerminal, Write};

use crate::CliError;

/// Asks `question` on an interactive terminal; `false` without one (nothing can answer).
pub fn confirm(question: &str) -> Result<bool, CliError> {
    if !std::io::stdin().is_terminal() {
        return Ok(false);
    }
    ask(question)
}

/// Whether the command may go on: `--yes`, or no terminal on stdin (nothing is asked, so a
/// script never hangs on a question), or the user answers yes to `question` on the terminal.
/// The question names what is sent and where (an Ethereum address in its EIP-55 form, amounts
/// in the asset's unit), so a typo'd destination can still be refused (issue 35).
pub fn confirmed_on_terminal(yes: bool, question: &str) -> Result<bool, CliError> {
    if yes || !std::io::stdin().is_terminal() {
        return Ok(true);
    }
    ask(question)
}

/// Prints `question [y/N] ` and reads one line from stdin: yes only for an explicit yes.
fn ask(question: &str) -> Result<bool, CliError> {
    print!("{question} [y/N] ");
    std::io::stdout().flush()?;
    let mut answer = String::new();
    std::io::stdin().lock().read_line(&mut answer)?;
    Ok(is_yes(&answer))
}

/// An answer that means yes: `y` or `yes` (any of its usual capitalisations), nothing else.
pub fn is_yes(answer: &str) -> bool {
    matches!(answer.trim(), "y" | "Y" | "yes" | "Yes" | "YES")
}

#[cfg(test)]
mod tests {
    #[test]
    fn only_an_explicit_yes_is_yes() {
        for yes in ["y\n", "Y", " yes ", "Yes\r\n", "YES"] {
            assert!(super::is_yes(yes), "{yes:?}");
        }
        for no in ["", "\n", "n", "no", "yEs", "ye", "y y", "sure"] {
            assert!(!super::is_yes(no), "{no:?}");
        }
    }
}
