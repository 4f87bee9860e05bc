//! `nox dashboard`: the command over the `nox-dashboard` crate (docs/design/dashboard.md).

pub use nox_dashboard::DashboardArgs;

/// Runs `nox dashboard` until SIGINT or SIGTERM.
pub fn run(args: &DashboardArgs) -> Result<(), String> {
    nox_dashboard::run(args, crate::stop_on_signal)
}
