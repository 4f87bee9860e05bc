#![forbid(unsafe_code)]
//! Wires the exit services (`nox-exit`), the stream sessions (`nox-exit-streams`) and the paid
//! relayer (`nox-relayer`) into the node's exit end (`nox_node::ExitHandler`): message types
//! in, message types out. The node core knows nothing of HTTP or Ethereum; this adapter is the
//! only place the two meet. Moved out of the `nox` binary (`exit_glue.rs`, issue 34).

use std::{future::Future, pin::Pin, sync::Arc};

use nox_exit::{ErrorKind, ExitConfig, ExitError, ExitServices, HttpRequest};
use nox_message::{HttpResponseMsg, RequestBody, Response, Status};
use nox_node::ReplySender;
use nox_relayer::inserter::{InserterConfig, InserterHandle};
use nox_relayer::{Relayer, RelayerConfig};
use nox_sphinx::Surb;

use nox_exit_streams::StreamService;

/// Why the exit's services could not start; the `Display` texts are `nox node`'s messages.
#[derive(Debug, thiserror::Error)]
pub enum ExitAdapterError {
    /// A table of the configuration is malformed.
    #[error("[{section}]: {message}")]
    Config {
        /// `exit.services`, `exit.services.relay` or `exit.services.relay.inserter`.
        section: &'static str,
        /// Why.
        message: String,
    },
}

/// For shells whose errors are text (`nox node`).
impl From<ExitAdapterError> for String {
    fn from(error: ExitAdapterError) -> Self {
        error.to_string()
    }
}

fn config(section: &'static str, message: impl std::fmt::Display) -> ExitAdapterError {
    ExitAdapterError::Config { section, message: message.to_string() }
}

/// Bytes a response message adds around its body (version, status).
const RESPONSE_OVERHEAD: usize = 2;

/// The exit services behind the node's [`nox_node::ExitHandler`].
#[derive(Clone)]
pub struct ExitAdapter {
    services: Arc<ExitServices>,
    /// The paid relayer (`[exit.services.relay]`), if this exit is one.
    relayer: Option<Arc<Relayer>>,
    /// TCP streams (`[exit.services.streams]`, docs/spec/streams.md).
    streams: Arc<StreamService<ReplySender>>,
    /// The relayer's inserter (`[exit.services.relay.inserter]`, on by default): inserts the
    /// pool's queued commitments so no user has to.
    inserter: Option<Arc<InserterHandle>>,
}

impl ExitAdapter {
    /// Services built from the node's `[exit.services]` table; its `relay` sub-table, if
    /// present, starts the paid relayer (nox-relayer), which checks its chain endpoint and
    /// resumes its nonce journal before the node serves anything.
    pub async fn from_table(table: &toml::Table) -> Result<Self, ExitAdapterError> {
        let mut table = table.clone();
        let relay = table.remove("relay");
        let parsed: ExitConfig = table.try_into().map_err(|e: toml::de::Error| config("exit.services", e.message()))?;
        let mut adapter = Self::new(parsed)?;
        if let Some(mut relay) = relay {
            let inserter = match relay.as_table_mut().and_then(|t| t.remove("inserter")) {
                Some(t) => {
                    t.try_into().map_err(|e: toml::de::Error| config("exit.services.relay.inserter", e.message()))?
                }
                None => InserterConfig::default(),
            };
            let parsed: RelayerConfig =
                relay.try_into().map_err(|e: toml::de::Error| config("exit.services.relay", e.message()))?;
            let relayer = Relayer::start(parsed).await.map_err(|e| config("exit.services.relay", e))?;
            tracing::info!(account = %relayer.account(), "exit: paid relayer started");
            if inserter.enabled {
                let handle = nox_relayer::inserter::spawn(relayer.clone(), inserter)
                    .await
                    .map_err(|e| config("exit.services.relay.inserter", e))?;
                adapter.inserter = Some(Arc::new(handle));
            }
            adapter.relayer = Some(relayer);
        }
        Ok(adapter)
    }

    /// Services built from `config` (no relayer).
    pub fn new(parsed: ExitConfig) -> Result<Self, ExitAdapterError> {
        let services = Arc::new(ExitServices::new(parsed).map_err(|e| config("exit.services", e))?);
        let streams = Arc::new(StreamService::new(services.clone()));
        Ok(Self { services, relayer: None, streams, inserter: None })
    }

    /// The stream service (its counters: [`StreamService::metrics`]).
    pub fn streams(&self) -> &StreamService<ReplySender> {
        &self.streams
    }
}

/// The reply status of an exit error, by name (the numbering of the two
/// enums happens to agree, but nothing should rest on that).
fn status_of(error: &ExitError) -> Status {
    match error.kind() {
        ErrorKind::BadRequest => Status::BadRequest,
        ErrorKind::Forbidden => Status::Forbidden,
        ErrorKind::Timeout => Status::Timeout,
        ErrorKind::TooLarge => Status::TooLarge,
        ErrorKind::Upstream => Status::Upstream,
        ErrorKind::Busy => Status::Busy,
        ErrorKind::Unsupported => Status::Unsupported,
    }
}

fn error_response(error: &ExitError) -> Response {
    Response::error(status_of(error), &error.to_string())
}

impl nox_node::ExitHandler for ExitAdapter {
    fn handle(&self, body: RequestBody, max_reply_len: usize) -> Pin<Box<dyn Future<Output = Response> + Send>> {
        let services = self.services.clone();
        let relayer = self.relayer.clone();
        let budget = max_reply_len.saturating_sub(RESPONSE_OVERHEAD);
        Box::pin(async move {
            match body {
                RequestBody::Echo(data) => {
                    let echoed = services.echo(data).await;
                    if echoed.len() > budget {
                        Response::error(Status::TooLarge, "echo larger than the SURBs can carry")
                    } else {
                        Response::ok(echoed)
                    }
                }
                RequestBody::Http(message) => {
                    let request = HttpRequest {
                        method: message.method,
                        url: message.url,
                        headers: message.headers,
                        body: message.body,
                    };
                    match services.http(request, budget).await {
                        Ok(response) => {
                            let encoded = HttpResponseMsg {
                                status: response.status,
                                headers: response.headers,
                                body: response.body,
                            }
                            .encode();
                            if encoded.len() > budget {
                                Response::error(Status::TooLarge, "the HTTP response does not fit the SURBs sent")
                            } else {
                                Response::ok(encoded)
                            }
                        }
                        Err(error) => error_response(&error),
                    }
                }
                RequestBody::JsonRpc(json) => match services.json_rpc(&json, budget).await {
                    Ok(answer) => Response::ok(answer),
                    Err(error) => error_response(&error),
                },
                // The node hands stream messages to `ExitHandler::stream`, never here.
                RequestBody::Stream(_) => Response::error(Status::BadRequest, "a stream message outside a stream"),
                RequestBody::Relay(body) => match relayer {
                    None => Response::error(Status::Unsupported, "this exit is not a relayer"),
                    Some(relayer) => match relayer.handle(&body).await {
                        Ok(answer) if answer.len() > budget => {
                            Response::error(Status::TooLarge, "the relay answer does not fit the SURBs sent")
                        }
                        Ok(answer) => Response::ok(answer),
                        Err(why) => Response::error(Status::Upstream, &format!("relayer: {why}")),
                    },
                },
            }
        })
    }

    fn stream(&self, surbs: Vec<Surb>, body: Vec<u8>, replies: ReplySender) {
        self.streams.on_message(surbs, body, replies);
    }

    fn render_metrics(&self) -> String {
        let name = "nox_exit_json_rpc_mismatched_total";
        let help = "JSON-RPC upstream answers not matching their request (answered -32603 instead).";
        let count = self.services.json_rpc_mismatched();
        let inserter = self.inserter.as_ref().map(|i| i.metrics().render()).unwrap_or_default();
        format!(
            "{}# HELP {name} {help}\n# TYPE {name} counter\n{name} {count}\n{inserter}",
            self.streams.metrics().render()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A malformed table is refused naming its section, before anything starts.
    #[tokio::test]
    async fn bad_tables_are_named() {
        let table: toml::Table = toml::from_str("no_such_service = 1\n").unwrap();
        let Err(error) = ExitAdapter::from_table(&table).await else { panic!("an unknown key was accepted") };
        assert!(error.to_string().starts_with("[exit.services]: "), "{error}");
        let table: toml::Table = toml::from_str("[relay]\nno_such_key = 1\n").unwrap();
        let Err(error) = ExitAdapter::from_table(&table).await else { panic!("a bad relay table was accepted") };
        assert!(error.to_string().starts_with("[exit.services.relay]: "), "{error}");
        let table: toml::Table = toml::from_str("[relay.inserter]\nenabled = \"yes\"\n").unwrap();
        let Err(error) = ExitAdapter::from_table(&table).await else { panic!("a bad inserter table was accepted") };
        assert!(error.to_string().starts_with("[exit.services.relay.inserter]: "), "{error}");
    }

    /// An empty table is a working exit (echo only, no relayer).
    #[tokio::test]
    async fn an_empty_table_serves_echo() {
        use nox_node::ExitHandler;
        let adapter = ExitAdapter::from_table(&toml::Table::new()).await.expect("defaults");
        let response = adapter.handle(RequestBody::Echo(b"hi".to_vec()), 1024).await;
        assert_eq!(response.status, Status::Ok);
        assert_eq!(response.body, b"hi");
        let response = adapter.handle(RequestBody::Relay(Vec::new()), 1024).await;
        assert_eq!(response.status, Status::Unsupported);
    }
}
