//! The Ethereum JSON-RPC endpoint: an HTTP/1.1 server (keep-alive, as
//! `cast`, viem and ethers send several POSTs per connection). Each POST
//! body goes to an exit as a `JsonRpc` request; the reply is returned as
//! `application/json`. Failures become JSON-RPC error objects with HTTP 200.

use std::convert::Infallible;

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper::{Method, Request, Response, StatusCode, header};
use hyper_util::rt::TokioIo;
use nox_message::{RequestBody, Status};
use tokio::net::TcpListener;

use crate::shell::Requester;

/// Settings of the RPC endpoint.
#[derive(Clone, Copy, Debug)]
pub struct RpcConfig {
    /// Expected reply size, for the SURB budget (default 16 KiB).
    pub expected_reply_len: usize,
    /// Largest request body accepted (default 256 KiB).
    pub max_body: usize,
}

impl Default for RpcConfig {
    fn default() -> Self {
        Self { expected_reply_len: 16 * 1024, max_body: 256 * 1024 }
    }
}

/// Serves JSON-RPC over HTTP/1.1 until the listener fails.
pub async fn serve_rpc(listener: TcpListener, client: impl Requester, config: RpcConfig) -> std::io::Result<()> {
    loop {
        let (stream, _) = listener.accept().await?;
        let client = client.clone();
        tokio::spawn(async move {
            let service = hyper::service::service_fn(move |request| handle(client.clone(), config, request));
            let connection = hyper::server::conn::http1::Builder::new()
                .keep_alive(true)
                .serve_connection(TokioIo::new(stream), service);
            if let Err(e) = connection.await {
                tracing::debug!("rpc connection: {e}");
            }
        });
    }
}

async fn handle(
    client: impl Requester,
    config: RpcConfig,
    request: Request<Incoming>,
) -> Result<Response<Full<Bytes>>, Infallible> {
    if request.method() != Method::POST {
        return Ok(plain(StatusCode::METHOD_NOT_ALLOWED, "POST JSON-RPC requests here\n"));
    }
    let body = match Limited::new(request.into_body(), config.max_body).collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(_) => return Ok(plain(StatusCode::PAYLOAD_TOO_LARGE, "request body too large or unreadable\n")),
    };
    if body.is_empty() {
        return Ok(json(rpc_error(&body, "empty request")));
    }
    let reply = match client.request(RequestBody::JsonRpc(body.to_vec()), config.expected_reply_len).await {
        Ok(response) if response.status == Status::Ok => response.body,
        Ok(response) => rpc_error(&body, response.error_message().unwrap_or("error from the exit")),
        Err(e) => rpc_error(&body, &e.to_string()),
    };
    Ok(json(reply))
}

fn json(body: Vec<u8>) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::from(body)));
    response.headers_mut().insert(header::CONTENT_TYPE, header::HeaderValue::from_static("application/json"));
    response
}

fn plain(status: StatusCode, text: &'static str) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::from_static(text.as_bytes())));
    *response.status_mut() = status;
    response
}

/// `{"jsonrpc":"2.0","id":<the request's id or null>,"error":{"code":-32000,"message":…}}`.
pub fn rpc_error(request: &[u8], message: &str) -> Vec<u8> {
    let id = serde_json::from_slice::<serde_json::Value>(request)
        .ok()
        .and_then(|v| v.get("id").cloned())
        .unwrap_or(serde_json::Value::Null);
    let error = serde_json::json!({ "jsonrpc": "2.0", "id": id, "error": { "code": -32000, "message": message } });
    error.to_string().into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_objects_carry_the_request_id() {
        let v: serde_json::Value =
            serde_json::from_slice(&rpc_error(br#"{"jsonrpc":"2.0","id":7,"method":"eth_chainId"}"#, "boom")).unwrap();
        assert_eq!(v["id"], 7);
        assert_eq!(v["error"]["code"], -32000);
        assert_eq!(v["error"]["message"], "boom");
        let v: serde_json::Value = serde_json::from_slice(&rpc_error(br#"{"id":"abc"}"#, "x")).unwrap();
        assert_eq!(v["id"], "abc");
        let v: serde_json::Value = serde_json::from_slice(&rpc_error(b"not json", "x")).unwrap();
        assert!(v["id"].is_null());
    }
}
