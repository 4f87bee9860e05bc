//! HTTP request and response bodies (kind 0x02).

use crate::{
    MessageError,
    wire::{Reader, check_len, put_u16_len, put_u32_len},
};

/// Longest method token, bytes.
pub const MAX_METHOD_LEN: usize = 16;
/// Longest URL, bytes.
pub const MAX_URL_LEN: usize = 8192;
/// Most headers in one request or response.
pub const MAX_HEADERS: usize = 64;
/// Longest header name, bytes.
pub const MAX_HEADER_NAME_LEN: usize = 256;
/// Longest header value, bytes.
pub const MAX_HEADER_VALUE_LEN: usize = 8192;

/// An HTTP request for the exit to perform.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HttpRequestMsg {
    /// Method: 1..=16 bytes, an RFC 9110 token without lowercase letters.
    pub method: String,
    /// Absolute URL, 1..=8192 bytes.
    pub url: String,
    /// At most 64 `(name, value)` pairs.
    pub headers: Vec<(String, String)>,
    /// Request body.
    pub body: Vec<u8>,
}

/// The answer to an [`HttpRequestMsg`], carried in an `Ok` response.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HttpResponseMsg {
    /// HTTP status code, 100..=999.
    pub status: u16,
    /// At most 64 `(name, value)` pairs.
    pub headers: Vec<(String, String)>,
    /// Response body.
    pub body: Vec<u8>,
}

/// `(name, value)` header pairs.
type Headers = Vec<(String, String)>;

/// RFC 9110 `tchar`.
fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

fn check_method(method: &str) -> Result<(), MessageError> {
    check_len("method", method.len(), 1, MAX_METHOD_LEN)?;
    if !method.bytes().all(|b| is_tchar(b) && !b.is_ascii_lowercase()) {
        return Err(MessageError::InvalidField { field: "method", reason: "not an uppercase token" });
    }
    Ok(())
}

fn check_url(url: &str) -> Result<(), MessageError> {
    check_len("url", url.len(), 1, MAX_URL_LEN)
}

fn check_header(name: &str, value: &str) -> Result<(), MessageError> {
    check_len("header name", name.len(), 1, MAX_HEADER_NAME_LEN)?;
    if !name.bytes().all(is_tchar) {
        return Err(MessageError::InvalidField { field: "header name", reason: "not a token" });
    }
    check_len("header value", value.len(), 0, MAX_HEADER_VALUE_LEN)?;
    if value.bytes().any(|b| matches!(b, b'\r' | b'\n' | 0)) {
        return Err(MessageError::InvalidField { field: "header value", reason: "contains CR, LF or NUL" });
    }
    Ok(())
}

fn check_headers(headers: &[(String, String)]) -> Result<(), MessageError> {
    check_len("header count", headers.len(), 0, MAX_HEADERS)?;
    headers.iter().try_for_each(|(name, value)| check_header(name, value))
}

fn check_body(body: &[u8]) -> Result<(), MessageError> {
    check_len("body", body.len(), 0, u32::MAX as usize)
}

fn utf8<'a>(field: &'static str, bytes: &'a [u8]) -> Result<&'a str, MessageError> {
    core::str::from_utf8(bytes).map_err(|_| MessageError::InvalidField { field, reason: "not UTF-8" })
}

/// Reads a LE16-prefixed UTF-8 string within `min..=max` bytes.
fn read_str(r: &mut Reader<'_>, field: &'static str, min: usize, max: usize) -> Result<String, MessageError> {
    let len = usize::from(r.u16(field)?);
    check_len(field, len, min, max)?;
    Ok(utf8(field, r.take(field, len)?)?.to_owned())
}

fn put_str(out: &mut Vec<u8>, s: &str) {
    put_u16_len(out, s.len());
    out.extend_from_slice(s.as_bytes());
}

fn put_headers_and_body(out: &mut Vec<u8>, headers: &[(String, String)], body: &[u8]) {
    put_u16_len(out, headers.len());
    for (name, value) in headers {
        put_str(out, name);
        put_str(out, value);
    }
    put_u32_len(out, body.len());
    out.extend_from_slice(body);
}

/// Reads headers then the body, which must end the input exactly.
fn read_headers_and_body(mut r: Reader<'_>) -> Result<(Headers, Vec<u8>), MessageError> {
    let count = usize::from(r.u16("header count")?);
    check_len("header count", count, 0, MAX_HEADERS)?;
    let mut headers = Vec::with_capacity(count);
    for _ in 0..count {
        let name = read_str(&mut r, "header name", 1, MAX_HEADER_NAME_LEN)?;
        let value = read_str(&mut r, "header value", 0, MAX_HEADER_VALUE_LEN)?;
        check_header(&name, &value)?;
        headers.push((name, value));
    }
    let body_len = r.u32("body length")? as usize;
    let body = r.take("body", body_len)?.to_vec();
    r.finish()?;
    Ok((headers, body))
}

impl HttpRequestMsg {
    /// Checks every field against the format's bounds and character rules.
    pub fn validate(&self) -> Result<(), MessageError> {
        check_method(&self.method)?;
        check_url(&self.url)?;
        check_headers(&self.headers)?;
        check_body(&self.body)
    }

    /// Appends the encoding; does not validate (see [`Self::validate`]).
    pub(crate) fn encode_into(&self, out: &mut Vec<u8>) {
        put_str(out, &self.method);
        put_str(out, &self.url);
        put_headers_and_body(out, &self.headers, &self.body);
    }

    /// The encoding. Does not validate: an invalid message encodes to bytes
    /// that [`Self::decode`] refuses.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.encoded_len_hint());
        self.encode_into(&mut out);
        out
    }

    fn encoded_len_hint(&self) -> usize {
        let headers: usize = self.headers.iter().map(|(n, v)| 4 + n.len() + v.len()).sum();
        10 + self.method.len() + self.url.len() + headers + self.body.len()
    }

    /// Decodes a request body; it must consume `bytes` exactly.
    pub fn decode(bytes: &[u8]) -> Result<Self, MessageError> {
        let mut r = Reader::new(bytes);
        let method = read_str(&mut r, "method", 1, MAX_METHOD_LEN)?;
        check_method(&method)?;
        let url = read_str(&mut r, "url", 1, MAX_URL_LEN)?;
        let (headers, body) = read_headers_and_body(r)?;
        Ok(Self { method, url, headers, body })
    }
}

impl HttpResponseMsg {
    /// Checks every field against the format's bounds and character rules.
    pub fn validate(&self) -> Result<(), MessageError> {
        check_status(self.status)?;
        check_headers(&self.headers)?;
        check_body(&self.body)
    }

    /// The encoding (the body of an `Ok` response to an Http request). Does
    /// not validate: an invalid message encodes to bytes that
    /// [`Self::decode`] refuses.
    pub fn encode(&self) -> Vec<u8> {
        let headers: usize = self.headers.iter().map(|(n, v)| 4 + n.len() + v.len()).sum();
        let mut out = Vec::with_capacity(8 + headers + self.body.len());
        out.extend_from_slice(&self.status.to_le_bytes());
        put_headers_and_body(&mut out, &self.headers, &self.body);
        out
    }

    /// Decodes an `Ok` response body of an Http request; it must consume
    /// `bytes` exactly.
    pub fn decode(bytes: &[u8]) -> Result<Self, MessageError> {
        let mut r = Reader::new(bytes);
        let status = r.u16("http status")?;
        check_status(status)?;
        let (headers, body) = read_headers_and_body(r)?;
        Ok(Self { status, headers, body })
    }
}

fn check_status(status: u16) -> Result<(), MessageError> {
    if (100..=999).contains(&status) {
        Ok(())
    } else {
        Err(MessageError::InvalidField { field: "http status", reason: "not in 100..=999" })
    }
}
