//! The error every experiment returns.

use std::path::PathBuf;

/// Errors of the bench tooling.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    /// Reading or writing a file failed.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// The experiment could not run.
    #[error("{0}")]
    Failed(String),
    /// A Criterion estimates file is not what we expect.
    #[error("{0}: unexpected Criterion estimates format")]
    Format(PathBuf),
}

/// Maps any displayable error to a bench failure.
pub fn err(e: impl std::fmt::Display) -> BenchError {
    BenchError::Failed(e.to_string())
}
