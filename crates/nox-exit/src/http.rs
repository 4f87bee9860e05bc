//! The HTTP(S) fetch service: request validation, resolve-once + check + pin, manual redirects.

use std::net::SocketAddr;

use bytes::Bytes;
use http::header::{self, HeaderName, HeaderValue};
use http::{Method, Request, StatusCode};
use http_body_util::Full;

use crate::Inner;
use crate::error::ExitError;
use crate::target::{self, Target, clip};
use crate::transport::{self, Fetched};

/// A request from a client.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct HttpRequest {
    /// `GET`, `HEAD`, `POST`, `PUT`, `DELETE`, `PATCH` or `OPTIONS`.
    pub method: String,
    /// Absolute `http://` or `https://` URL.
    pub url: String,
    /// Request headers; hop-by-hop headers are dropped, `Host` must agree with the URL.
    pub headers: Vec<(String, String)>,
    /// Request body.
    pub body: Vec<u8>,
}

/// The destination's answer (after redirects), hop-by-hop headers removed.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct HttpResponse {
    /// HTTP status code.
    pub status: u16,
    /// Response headers; values that are not UTF-8 are converted lossily.
    pub headers: Vec<(String, String)>,
    /// Response body.
    pub body: Vec<u8>,
}

/// Most request headers accepted.
const MAX_REQUEST_HEADERS: usize = 64;
/// Most addresses used from one resolution (streams use the same bound).
pub(crate) const MAX_ADDRESSES: usize = 16;

/// Headers that describe one connection, not the message (RFC 9110 §7.6.1), plus the ones the
/// exit sets itself (`content-length`, `host`).
const HOP_BY_HOP: &[&str] = &[
    "connection",
    "keep-alive",
    "proxy-connection",
    "proxy-authenticate",
    "proxy-authorization",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
];

/// Dropped when a redirect leaves the origin the client addressed.
const CREDENTIALS: &[HeaderName] = &[header::AUTHORIZATION, header::COOKIE];

fn bad(msg: impl Into<String>) -> ExitError {
    ExitError::BadRequest(msg.into())
}

fn is_hop_by_hop(name: &str, connection_tokens: &[String]) -> bool {
    HOP_BY_HOP.contains(&name) || connection_tokens.iter().any(|t| t == name)
}

fn connection_tokens<'a>(values: impl Iterator<Item = &'a str>) -> Vec<String> {
    values.flat_map(|v| v.split(',')).map(|t| t.trim().to_ascii_lowercase()).filter(|t| !t.is_empty()).collect()
}

fn parse_method(method: &str) -> Result<Method, ExitError> {
    let m = method.to_ascii_uppercase();
    match m.as_str() {
        "GET" | "HEAD" | "POST" | "PUT" | "DELETE" | "PATCH" | "OPTIONS" => {
            Method::from_bytes(m.as_bytes()).map_err(|_| bad("invalid method"))
        }
        "CONNECT" | "TRACE" => Err(ExitError::Unsupported(format!("method {m} is not offered"))),
        _ => Err(bad(format!("unknown method {}", clip(method, 16)))),
    }
}

/// Validate and convert the client's headers against the first target.
fn request_headers(headers: &[(String, String)], first: &Target) -> Result<Vec<(HeaderName, HeaderValue)>, ExitError> {
    if headers.len() > MAX_REQUEST_HEADERS {
        return Err(bad(format!("more than {MAX_REQUEST_HEADERS} request headers")));
    }
    let tokens = connection_tokens(
        headers.iter().filter(|(n, _)| n.eq_ignore_ascii_case("connection")).map(|(_, v)| v.as_str()),
    );
    let mut out = Vec::with_capacity(headers.len());
    for (name, value) in headers {
        let name = HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| bad(format!("invalid header name {}", clip(name, 32))))?;
        let value = HeaderValue::from_str(value)
            .map_err(|_| bad(format!("invalid value for header {}", clip(name.as_str(), 32))))?;
        if name == header::HOST {
            let v = value.to_str().unwrap_or_default();
            let agrees = v.eq_ignore_ascii_case(&first.host_header);
            if !agrees {
                return Err(ExitError::Forbidden(format!(
                    "Host header {} disagrees with the URL host {}",
                    clip(v, 64),
                    first.host_header
                )));
            }
            continue;
        }
        if name == header::CONTENT_LENGTH || is_hop_by_hop(name.as_str(), &tokens) {
            continue;
        }
        out.push((name, value));
    }
    Ok(out)
}

impl Inner {
    fn check_port(&self, target: &Target) -> Result<(), ExitError> {
        let ports = &self.config.http.ports;
        if ports.is_empty() || ports.contains(&target.port) {
            Ok(())
        } else {
            Err(ExitError::Forbidden(format!("destination port {} is not allowed", target.port)))
        }
    }

    /// Resolve `target` once and check every address; refuse the whole answer if any address
    /// is refused (a mixed answer is the signature of a rebinding attempt).
    ///
    /// An IP literal is the client's own text: its refusal names it and its class. A name's
    /// refusal is [`ExitError::Refused`], the same whether the name does not resolve, resolves
    /// to nothing or resolves to a refused address: it never reveals what the exit's resolver
    /// knows about private names.
    async fn resolve_checked(&self, target: &Target) -> Result<Vec<SocketAddr>, ExitError> {
        if let Some(ip) = target.ip {
            let addr = SocketAddr::new(ip, target.port);
            self.policy.check(addr).map_err(|ng| ExitError::NonGlobal {
                addr: ip,
                class: ng.class,
                network: ng.network,
            })?;
            return Ok(vec![addr]);
        }
        let refused = || ExitError::Refused { host: target.host.clone() };
        let mut addrs = self.resolver.resolve(&target.host, target.port).await.map_err(|_| refused())?;
        addrs.truncate(MAX_ADDRESSES);
        if addrs.is_empty() || addrs.iter().any(|addr| self.policy.check(*addr).is_err()) {
            return Err(refused());
        }
        Ok(addrs)
    }

    pub(crate) async fn fetch(&self, request: HttpRequest, cap: usize) -> Result<HttpResponse, ExitError> {
        let http = &self.config.http;
        let mut method = parse_method(&request.method)?;
        if request.body.len() > http.max_request_body {
            return Err(ExitError::RequestTooLarge(format!(
                "body of {} bytes exceeds the limit of {} bytes",
                request.body.len(),
                http.max_request_body
            )));
        }
        let mut target = target::parse(&request.url)?;
        self.check_port(&target)?;
        let mut headers = request_headers(&request.headers, &target)?;
        let first = target.clone();
        let mut body = Bytes::from(request.body);
        let mut hop = 0u8;
        loop {
            let addrs = self.resolve_checked(&target).await?;
            let mut builder = Request::builder().method(method.clone()).uri(target.path.as_str());
            builder = builder.header(header::HOST, target.host_header.as_str());
            for (name, value) in &headers {
                builder = builder.header(name, value);
            }
            let req = builder.body(Full::new(body.clone())).map_err(|e| bad(format!("invalid request: {e}")))?;
            let fetched = transport::exchange(&*self.dialer, &self.tls, &target, &addrs, req, cap).await?;
            let Some(next) = redirect_target(&fetched, &target)? else {
                return Ok(into_response(fetched));
            };
            if hop >= http.max_redirects {
                return Err(ExitError::Upstream(format!("too many redirects (limit {})", http.max_redirects)));
            }
            hop += 1;
            self.check_port(&next)?;
            let status = fetched.status;
            if status == StatusCode::SEE_OTHER
                || (matches!(status, StatusCode::MOVED_PERMANENTLY | StatusCode::FOUND) && method == Method::POST)
            {
                if method != Method::HEAD {
                    method = Method::GET;
                }
                body = Bytes::new();
                headers.retain(|(n, _)| !n.as_str().starts_with("content-"));
            }
            if !next.same_origin(&first) {
                headers.retain(|(n, _)| !CREDENTIALS.contains(n));
            }
            target = next;
        }
    }
}

fn redirect_target(fetched: &Fetched, base: &Target) -> Result<Option<Target>, ExitError> {
    let redirect = matches!(fetched.status.as_u16(), 301 | 302 | 303 | 307 | 308);
    let Some(location) = fetched.headers.get(header::LOCATION).filter(|_| redirect) else {
        return Ok(None);
    };
    let location = location.to_str().map_err(|_| ExitError::Upstream("redirect with an invalid Location".into()))?;
    target::resolve_location(base, location).map(Some)
}

fn into_response(fetched: Fetched) -> HttpResponse {
    let tokens = connection_tokens(fetched.headers.get_all(header::CONNECTION).iter().filter_map(|v| v.to_str().ok()));
    let headers = fetched
        .headers
        .iter()
        .filter(|(n, _)| !is_hop_by_hop(n.as_str(), &tokens))
        .map(|(n, v)| (n.as_str().to_owned(), String::from_utf8_lossy(v.as_bytes()).into_owned()))
        .collect();
    HttpResponse { status: fetched.status.as_u16(), headers, body: fetched.body }
}
