//! URL parsing for outgoing requests: scheme, host, port, path, and redirect targets.

use std::net::IpAddr;

use http::Uri;

use crate::error::ExitError;

/// Longest URL accepted.
pub(crate) const MAX_URL_LEN: usize = 8 * 1024;

/// A parsed, validated destination.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Target {
    /// `https`?
    pub tls: bool,
    /// Host name (lower case) or IP literal without brackets; also the TLS server name.
    pub host: String,
    /// `Some` if the host is an IP literal: it is checked like a resolved address.
    pub ip: Option<IpAddr>,
    pub port: u16,
    /// Path and query, at least `/`.
    pub path: String,
    /// The `Host` header value derived from the URL.
    pub host_header: String,
}

impl Target {
    fn default_port(&self) -> u16 {
        if self.tls { 443 } else { 80 }
    }

    /// `scheme://host[:port]`.
    pub fn origin(&self) -> String {
        format!("{}://{}", if self.tls { "https" } else { "http" }, self.host_header)
    }

    /// Same scheme, host and port.
    pub fn same_origin(&self, other: &Target) -> bool {
        self.tls == other.tls && self.host == other.host && self.port == other.port
    }
}

/// At most `max` characters of client-supplied text, for error messages.
pub(crate) fn clip(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((i, _)) => format!("{}…", &text[..i]),
        None => text.to_owned(),
    }
}

fn bad(msg: impl Into<String>) -> ExitError {
    ExitError::BadRequest(msg.into())
}

/// Parse an absolute `http://` or `https://` URL. Userinfo is refused; the fragment is dropped.
pub(crate) fn parse(url: &str) -> Result<Target, ExitError> {
    if url.len() > MAX_URL_LEN {
        return Err(bad(format!("URL longer than {MAX_URL_LEN} bytes")));
    }
    let url = url.split('#').next().unwrap_or_default();
    let uri: Uri = url.parse().map_err(|e| bad(format!("malformed URL: {e}")))?;
    let tls = match uri.scheme_str() {
        Some(s) if s.eq_ignore_ascii_case("http") => false,
        Some(s) if s.eq_ignore_ascii_case("https") => true,
        Some(s) => return Err(bad(format!("URL scheme {} is not supported (only http and https)", clip(s, 16)))),
        None => return Err(bad("malformed URL: not absolute (expected http:// or https://)")),
    };
    let authority = uri.authority().ok_or_else(|| bad("malformed URL: no host"))?;
    if authority.as_str().contains('@') {
        return Err(bad("credentials (userinfo) in URLs are not accepted"));
    }
    let raw_host = authority.host();
    let bare = raw_host.strip_prefix('[').and_then(|h| h.strip_suffix(']')).unwrap_or(raw_host);
    if bare.is_empty() {
        return Err(bad("malformed URL: empty host"));
    }
    let ip = bare.parse::<IpAddr>().ok();
    let host = match ip {
        Some(ip) => ip.to_string(),
        None => {
            let valid = bare.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_'));
            if !valid || bare.len() > 253 {
                return Err(bad(format!("malformed URL: invalid host name {}", clip(bare, 64))));
            }
            bare.to_ascii_lowercase()
        }
    };
    let mut target = Target { tls, host, ip, port: 0, path: String::new(), host_header: String::new() };
    target.port = match explicit_port(authority.as_str())? {
        Some(port) => port,
        None => target.default_port(),
    };
    target.path = match uri.path_and_query().map(|p| p.as_str()) {
        Some(p) if p.starts_with('/') => p.to_owned(),
        Some(p) if !p.is_empty() => format!("/{p}"),
        _ => "/".to_owned(),
    };
    let host_part = match ip {
        Some(IpAddr::V6(v6)) => format!("[{v6}]"),
        _ => target.host.clone(),
    };
    target.host_header =
        if target.port == target.default_port() { host_part } else { format!("{host_part}:{}", target.port) };
    Ok(target)
}

/// The port written in `authority` (`host:port` or `[v6]:port`), if any. An empty port
/// (`host:`) means the default (RFC 3986 §3.2.3); a port outside 1–65535 is a bad request,
/// never silently the default.
fn explicit_port(authority: &str) -> Result<Option<u16>, ExitError> {
    let after_host = match authority.rfind(']') {
        Some(close) => &authority[close + 1..],
        None => authority.rfind(':').map_or("", |colon| &authority[colon..]),
    };
    let Some(digits) = after_host.strip_prefix(':') else { return Ok(None) };
    if digits.is_empty() {
        return Ok(None);
    }
    let out_of_range = || bad(format!("malformed URL: port {} is outside 1-65535", clip(digits, 16)));
    if !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(bad(format!("malformed URL: port {} is not a number", clip(digits, 16))));
    }
    match digits.parse::<u16>() {
        Ok(0) | Err(_) => Err(out_of_range()),
        Ok(port) => Ok(Some(port)),
    }
}

/// Does `reference` start with a URI scheme (`ALPHA *( ALPHA / DIGIT / "+" / "-" / "." ) ":"`)?
fn has_scheme(reference: &str) -> bool {
    let Some(colon) = reference.find(':') else { return false };
    let scheme = &reference[..colon];
    let mut bytes = scheme.bytes();
    matches!(bytes.next(), Some(b) if b.is_ascii_alphabetic())
        && bytes.all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'-' | b'.'))
}

/// Resolve a redirect `Location` against the URL that produced it (RFC 3986 §5.2, without
/// dot-segment removal, which the destination server does itself).
pub(crate) fn resolve_location(base: &Target, location: &str) -> Result<Target, ExitError> {
    let location = location.trim();
    if location.is_empty() {
        return Err(ExitError::Upstream("redirect with an empty Location".into()));
    }
    let absolute = if has_scheme(location) {
        location.to_owned()
    } else if location.starts_with("//") {
        format!("{}:{location}", if base.tls { "https" } else { "http" })
    } else if location.starts_with('/') {
        format!("{}{location}", base.origin())
    } else {
        let path = base.path.split('?').next().unwrap_or("/");
        let dir = path.rfind('/').map_or("/", |i| &path[..=i]);
        if location.starts_with('?') {
            format!("{}{path}{location}", base.origin())
        } else {
            format!("{}{dir}{location}", base.origin())
        }
    };
    parse(&absolute).map_err(|e| match e {
        ExitError::BadRequest(msg) => ExitError::Upstream(format!("redirect to an unusable Location: {msg}")),
        other => other,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn base() -> Target {
        parse("https://Example.COM:8443/a/b/c?x=1").unwrap()
    }

    #[test]
    fn parse_normalises_host_port_path() {
        let t = base();
        assert_eq!((t.tls, t.host.as_str(), t.port, t.path.as_str()), (true, "example.com", 8443, "/a/b/c?x=1"));
        assert_eq!(t.host_header, "example.com:8443");
        let v6 = parse("http://[2001:db8::1]/").unwrap();
        assert_eq!((v6.host.as_str(), v6.host_header.as_str(), v6.port), ("2001:db8::1", "[2001:db8::1]", 80));
        assert!(v6.ip.is_some());
        assert_eq!(parse("http://example.com").unwrap().path, "/");
        assert_eq!(parse("HTTPS://example.com:443").unwrap().host_header, "example.com");
    }

    #[test]
    fn locations_resolve_against_the_base() {
        let cases = [
            ("/x", "https://example.com:8443/x"),
            ("d", "https://example.com:8443/a/b/d"),
            ("?y=2", "https://example.com:8443/a/b/c?y=2"),
            ("//other.example/p", "https://other.example/p"),
            ("http://third.example:81/q", "http://third.example:81/q"),
        ];
        for (location, expected) in cases {
            let t = resolve_location(&base(), location).unwrap();
            assert_eq!(format!("{}{}", t.origin(), t.path), expected, "{location}");
        }
        let err = resolve_location(&base(), "ftp://example.com/").unwrap_err();
        assert!(matches!(err, ExitError::Upstream(_)), "{err}");
        assert!(resolve_location(&base(), "  ").is_err());
    }

    #[test]
    fn clip_respects_char_boundaries() {
        assert_eq!(clip("ééé", 2), "éé…");
        assert_eq!(clip("ab", 2), "ab");
    }
}
