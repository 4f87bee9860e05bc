//! Talking to an exit's relayer through the mixnet (docs/spec/relay.md): a quote, then the
//! bundle, each an anonymous request whose answer comes back through SURBs.

use nox_client::ClientHandle;
use nox_message::{RequestBody, Status};
use nox_relayer::{Outcome, Quote, RelayRequest, Submission};
use nox_sphinx::NodeId;

use crate::PayError;

/// The fee a client pays (`nox tx`) by default, as a percentage of the quote: the relayer's quote already
/// prices its margin at its maximum fee (next base fee × 1.25 + tip), so 125 % covers one full
/// block of base-fee rise (12.5 %) between quote and submission twice over.
pub const DEFAULT_FEE_PERCENT: u32 = 125;

/// Largest relay answer expected (a quote or an outcome is a few hundred bytes).
pub const REPLY_LEN: usize = 4096;

/// One exit's relayer, reached through a running mixnet client. The quote and the bundle must go
/// to the same exit (the payment names its relayer); the two requests are linked to each other
/// there and to nothing else.
#[derive(Clone)]
pub struct RelayClient {
    client: ClientHandle,
    exit: NodeId,
}

impl RelayClient {
    /// The relayer of the exit `exit` (one of `client.exits()`).
    pub fn new(client: ClientHandle, exit: NodeId) -> Self {
        Self { client, exit }
    }

    /// The exit this client talks to.
    pub fn exit(&self) -> NodeId {
        self.exit
    }

    /// The mixnet client.
    pub fn client(&self) -> &ClientHandle {
        &self.client
    }

    async fn ask(&self, request: &RelayRequest) -> Result<Vec<u8>, PayError> {
        let response = self
            .client
            .request_via(RequestBody::Relay(request.encode()), REPLY_LEN, Some(self.exit))
            .await
            .map_err(|e| PayError::Mixnet(e.to_string()))?;
        if response.status != Status::Ok {
            return Err(PayError::Exit {
                status: format!("{:?}", response.status),
                body: String::from_utf8_lossy(&response.body).into_owned(),
            });
        }
        Ok(response.body)
    }

    /// The relayer's current price list and fee plan.
    pub async fn quote(&self) -> Result<Quote, PayError> {
        let body = self.ask(&RelayRequest::Quote).await?;
        serde_json::from_slice(&body).map_err(|e| PayError::Answer(e.to_string()))
    }

    /// Sends a bundle and waits for the relayer's answer: included (with the receipt's figures),
    /// simulated, pending (still tracked by the relayer) or refused with a reason.
    pub async fn submit(&self, submission: Submission) -> Result<Outcome, PayError> {
        let body = self.ask(&RelayRequest::Submit(Box::new(submission))).await?;
        serde_json::from_slice(&body).map_err(|e| PayError::Answer(e.to_string()))
    }
}
