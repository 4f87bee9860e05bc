//! Active and long-term attacks, each with an explicit adversary model.

mod compromise;
mod intersection;
mod n_minus_one;

pub use compromise::{CompromiseModel, CompromiseReport, compromised_paths};
pub use intersection::{Direction, IntersectionConfig, IntersectionReport, intersection_attack};
pub use n_minus_one::{NMinusOneConfig, NMinusOneReport, n_minus_one, n_minus_one_sweep};
