//! The client core (`nox_client::ClientCore`, built without its tokio shell)
//! behind a handle: the host owns the sockets and the clock, the core owns the
//! protocol. Every call takes the host's time (`now_ms`: monotonic
//! milliseconds since an origin the host keeps fixed, e.g. `performance.now()`;
//! `now_unix`: wall-clock seconds).

use std::time::Duration;

use nox_client::profile::{CoverProfile, MobileProfile, PROFILE_NAMES};
use nox_client::{ClientConfig, ClientCore, Completed, Instant, Now, Outgoing};
use nox_message::{HttpRequestMsg, Kind, RequestBody};
use nox_sphinx::NodeId;
use rand_chacha::ChaCha20Rng;
use rand_core::{RngCore, SeedableRng};
use zeroize::Zeroizing;

use crate::api::{Module, Object, WasmError, bad};

/// The host's time for one call.
pub fn now(now_ms: u64, now_unix: u64) -> Now {
    Now { at: Instant::from_millis(now_ms), unix: now_unix }
}

/// A new client core: its handle, the reply gateway it drew (the host links
/// to it) and its mailbox there.
#[derive(Debug)]
pub struct NewClient {
    /// Handle of the core.
    pub handle: u32,
    /// The last-layer node replies come through.
    pub gateway: NodeId,
    /// The client's mailbox at the gateway.
    pub mailbox: [u8; 32],
}

/// Reads the JSON configuration: every field optional, unknown fields refused.
/// `profile` names the cover profile (`nox_cover::CoverProfile`, as `nox client --profile`:
/// `always-on` (default), `wallet`, `mobile`) and `mobile_budget_bytes_per_day` sets the
/// `mobile` profile's budget (default `nox_cover::MOBILE_DEFAULT_BUDGET`; refused with any
/// other profile).
fn config(json: &[u8]) -> Result<ClientConfig, WasmError> {
    let mut config = ClientConfig::default();
    if json.is_empty() {
        return Ok(config);
    }
    let mut budget = None;
    let value: serde_json::Value =
        serde_json::from_slice(json).map_err(|e| bad(format!("client config is not JSON: {e}")))?;
    let Some(fields) = value.as_object() else {
        return Err(bad("client config must be a JSON object"));
    };
    for (name, value) in fields {
        let number = || value.as_f64().ok_or_else(|| bad(format!("client config field {name} must be a number")));
        let whole = || value.as_u64().ok_or_else(|| bad(format!("client config field {name} must be a whole number")));
        match name.as_str() {
            "cover_rate" => config.cover_rate = number()?,
            "loss" => config.loss = number()?,
            "target" => config.target = number()?,
            "loop_fraction" => config.loop_fraction = number()?,
            "timeout_ms" => config.timeout = Duration::from_millis(whole()?),
            "max_pending" => config.max_pending = usize::try_from(whole()?).map_err(|_| bad("max_pending"))?,
            "queue_capacity" => config.queue_capacity = usize::try_from(whole()?).map_err(|_| bad("queue_capacity"))?,
            "parity_percent" => config.parity_percent = u16::try_from(whole()?).map_err(|_| bad("parity_percent"))?,
            "profile" => {
                let name = value.as_str().ok_or_else(|| {
                    bad(format!("client config field profile must be one of {}", PROFILE_NAMES.join(", ")))
                })?;
                config.profile = CoverProfile::from_name(name).map_err(|e| bad(e.to_string()))?;
            }
            "mobile_budget_bytes_per_day" => budget = Some(whole()?),
            _ => return Err(bad(format!("unknown client config field {name}"))),
        }
    }
    let finite = [config.cover_rate, config.loss, config.target, config.loop_fraction].iter().all(|x| x.is_finite());
    if !finite || config.cover_rate < 0.0 || !(0.0..1.0).contains(&config.loss) || !(0.0..1.0).contains(&config.target)
    {
        return Err(bad("client config: cover_rate ≥ 0, loss and target in [0, 1)"));
    }
    if !(0.0..=1.0).contains(&config.loop_fraction) {
        return Err(bad("client config: loop_fraction in [0, 1]"));
    }
    if let Some(bytes) = budget {
        let CoverProfile::Mobile(mobile) = config.profile else {
            return Err(bad("client config: mobile_budget_bytes_per_day needs profile \"mobile\""));
        };
        if bytes == 0 {
            return Err(bad("client config: mobile_budget_bytes_per_day must be positive"));
        }
        config.profile = CoverProfile::Mobile(MobileProfile { budget_bytes_per_day: bytes, ..mobile });
    }
    if config.profile != CoverProfile::AlwaysOn && config.cover_rate <= 0.0 {
        return Err(bad(format!(
            "client config: profile {} chooses which cover slots are used and needs cover_rate > 0",
            config.profile.name()
        )));
    }
    // No threads on wasm32: proof of work is solved on the calling thread.
    config.pow_threads = 1;
    Ok(config)
}

/// A request body from its kind byte (docs/spec/messages.md) and bytes.
fn request_body(kind: u8, body: &[u8]) -> Result<RequestBody, WasmError> {
    let kind = Kind::try_from(kind).map_err(|e| bad(format!("request kind: {e}")))?;
    Ok(match kind {
        Kind::Echo => RequestBody::Echo(body.to_vec()),
        Kind::Http => RequestBody::Http(HttpRequestMsg::decode(body).map_err(|e| bad(format!("HTTP request: {e}")))?),
        Kind::JsonRpc => RequestBody::JsonRpc(body.to_vec()),
        Kind::Relay => RequestBody::Relay(body.to_vec()),
        Kind::Stream => return Err(bad("stream messages are not requests of this API")),
    })
}

/// `entry (32) ‖ packet`.
pub fn outgoing_bytes(out: &mut Vec<u8>, packet: &Outgoing) {
    out.extend_from_slice(&packet.entry.0);
    out.extend_from_slice(&packet.packet);
}

/// `request id (u64 LE) ‖ 0 ‖ status (u8) ‖ response body` or
/// `request id ‖ 1 ‖ error text (UTF-8)`.
pub fn completed_bytes(done: &Completed) -> Vec<u8> {
    let mut out = done.id.0.to_le_bytes().to_vec();
    match &done.result {
        Ok(response) => {
            out.push(0);
            out.push(response.status as u8);
            out.extend_from_slice(&response.body);
        }
        Err(error) => {
            out.push(1);
            out.extend_from_slice(error.to_string().as_bytes());
        }
    }
    out
}

impl Module {
    fn client(&mut self, handle: u32) -> Result<&mut ClientCore, WasmError> {
        match self.objects.get_mut(&handle) {
            Some(Object::Client(core)) => Ok(core),
            Some(_) => Err(WasmError::WrongHandle { handle, expected: "client" }),
            None => Err(WasmError::UnknownHandle(handle)),
        }
    }

    /// A client core over a copy of the verified topology behind `topology`,
    /// configured by `config_json` (empty: defaults). Its two RNGs (packets;
    /// the cover schedule, kept apart so emission times cannot depend on
    /// traffic) are seeded from the module's host-seeded RNG.
    pub fn client_new(&mut self, topology: u32, config_json: &[u8], now: Now) -> Result<NewClient, WasmError> {
        let config = config(config_json)?;
        let topology = self.topology(topology)?.clone();
        let rng = self.rng()?;
        let mut seeds = Zeroizing::new([[0u8; 32]; 2]);
        rng.fill_bytes(&mut seeds[0]);
        rng.fill_bytes(&mut seeds[1]);
        let core =
            ClientCore::new(topology, config, ChaCha20Rng::from_seed(seeds[0]), ChaCha20Rng::from_seed(seeds[1]), now)?;
        let (gateway, mailbox) = (core.gateway(), core.mailbox().0);
        let handle = self.insert(Object::Client(Box::new(core)));
        Ok(NewClient { handle, gateway, mailbox })
    }

    /// Sends a request (`kind`: 1 echo, 2 HTTP (encoded `HttpRequestMsg`),
    /// 3 JSON-RPC, 4 relay) with SURBs for a reply of about
    /// `expected_reply_len` bytes. Returns its id and the packets to send now
    /// (none with cover traffic on: they wait for [`Module::client_poll_transmit`]).
    pub fn client_request(
        &mut self,
        handle: u32,
        kind: u8,
        body: &[u8],
        exit: &[u8],
        expected_reply_len: u32,
        now: Now,
    ) -> Result<(u64, Vec<Outgoing>), WasmError> {
        let body = request_body(kind, body)?;
        // Empty: a random exit; 32 bytes: that exit (a relayer's quote, then its bundle).
        let exit = match exit.len() {
            0 => None,
            _ => Some(crate::api::node_id(exit, "exit id")?),
        };
        let (id, packets) = self.client(handle)?.request_via(body, expected_reply_len as usize, exit, now)?;
        Ok((id.0, packets))
    }

    /// The packet for the next due Poisson slot, if one is due (call until `None`).
    pub fn client_poll_transmit(&mut self, handle: u32, now: Now) -> Result<Option<Outgoing>, WasmError> {
        Ok(self.client(handle)?.poll_transmit(now).transpose()?)
    }

    /// One record from the gateway link (`from`: the sending node's id, or
    /// empty if unknown). Returns the request it completed, if any.
    pub fn client_on_downstream(
        &mut self,
        handle: u32,
        from: &[u8],
        record: &[u8],
        now: Now,
    ) -> Result<Option<Completed>, WasmError> {
        let from = match from.len() {
            0 => None,
            32 => {
                let mut id = [0u8; 32];
                id.copy_from_slice(from);
                Some(NodeId(id))
            }
            n => return Err(bad(format!("sender id must be 32 bytes or empty, got {n}"))),
        };
        Ok(self.client(handle)?.on_downstream(from, record, now))
    }

    /// Requests that timed out by `now`.
    pub fn client_poll_timeouts(&mut self, handle: u32, now: Now) -> Result<Vec<Completed>, WasmError> {
        Ok(self.client(handle)?.poll_timeouts(now))
    }

    /// When the host should call again at the latest, in its monotonic
    /// milliseconds (rounded up): the next Poisson slot or request timeout
    /// (`None`: nothing scheduled).
    pub fn client_next_deadline_ms(&mut self, handle: u32) -> Result<Option<u64>, WasmError> {
        let core = self.client(handle)?;
        let next = match (core.next_transmit_at(), core.next_timeout()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        // Rounded up: a call at the returned millisecond finds the event due.
        Ok(next.map(|at| u64::try_from(at.offset().as_nanos().div_ceil(1_000_000)).unwrap_or(u64::MAX)))
    }

    /// Replaces the core's topology with a copy of the verified topology behind
    /// `topology` (the host fetches a new document every epoch; the old one's
    /// keys run out). Returns the new reply gateway if the current one left the
    /// network or is degraded (`None`: unchanged); the host then links to it with
    /// the same mailbox and keeps the links to every [`Module::client_gateways`]
    /// entry. A topology of another geometry is refused.
    pub fn client_set_topology(&mut self, handle: u32, topology: u32, now: Now) -> Result<Option<NodeId>, WasmError> {
        let topology = self.topology(topology)?.clone();
        Ok(self.client(handle)?.set_topology(topology, now)?)
    }

    /// Every gateway the host must keep a reply link to: the current one first,
    /// then former gateways that SURBs of requests still in flight name (a
    /// gateway change keeps them until those requests complete or time out).
    /// Links to gateways no longer listed can be closed.
    pub fn client_gateways(&mut self, handle: u32) -> Result<Vec<NodeId>, WasmError> {
        Ok(self.client(handle)?.reply_gateways())
    }

    /// Requests in flight and SURBs held, and the core's counters, as JSON.
    pub fn client_stats(&mut self, handle: u32) -> Result<String, WasmError> {
        let core = self.client(handle)?;
        let stats = core.stats();
        Ok(serde_json::json!({
            "pending": core.pending(),
            "surbs_held": core.surbs_held(),
            "queued": core.queued(),
            "requests": stats.requests,
            "completed": stats.completed,
            "timeouts": stats.timeouts,
            "real_packets": stats.real_packets,
            "cover_packets": stats.cover_packets,
            "loops_sent": stats.loops_sent,
            "replies": stats.replies,
            "bad_replies": stats.bad_replies,
            "malformed_downstream": stats.malformed_downstream,
            "degraded_nodes": stats.degraded_nodes,
            "reply_gateways_evicted": stats.reply_gateways_evicted,
        })
        .to_string())
    }
}
