#![doc = include_str!("../README.md")]
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod analysis;
mod codec;
mod error;
mod layout;
mod parity;
mod reassembly;
mod wire;

pub use analysis::{CurvePoint, RecoveryCurve, SimulationResult, recovery_curve, simulate_recovery};
pub use codec::{EncodePlanError, Encoder, decode, decode_fragments, encode, fragment_message, max_message_len_for};
pub use error::{CodecError, FragmentError, LayoutError, LimitsError, PlanningError, ReassemblyError};
pub use layout::{Layout, MAX_TOTAL_SHARDS, MIN_FRAGMENT_LEN, Parity, ParityRatio, data_shards_for, shard_capacity};
pub use parity::{
    ParityChoice, ReplyPlan, choose_parity, delivery_without_fec, plan_reply, recovery_probability, surbs_for_reply,
};
pub use reassembly::{Accepted, PENDING_MESSAGE_OVERHEAD, Reassembler, ReassemblyLimits};
pub use wire::{FORMAT_VERSION, Fragment, FragmentHeader, HEADER_LEN, MESSAGE_ID_LEN, MessageId};
