//! SOCKS5 (RFC 1928) parsing: no authentication, `CONNECT` only. Pure:
//! each parser takes the bytes read so far and returns `Ok(None)` when it
//! needs more. Names are never resolved here: a domain target goes to the
//! exit in the stream's `OPEN`, and the exit resolves it.

use std::net::{Ipv4Addr, Ipv6Addr};

/// SOCKS version 5.
pub const VERSION: u8 = 5;
/// "No authentication required".
pub const NO_AUTH: u8 = 0x00;
/// "No acceptable methods".
pub const NO_ACCEPTABLE: u8 = 0xff;
/// The `CONNECT` command.
pub const CMD_CONNECT: u8 = 0x01;

/// Reply codes (RFC 1928 §6) the server uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Reply {
    /// Succeeded.
    Succeeded = 0x00,
    /// General SOCKS server failure.
    GeneralFailure = 0x01,
    /// Command not supported.
    CommandNotSupported = 0x07,
    /// Address type not supported.
    AddressTypeNotSupported = 0x08,
}

/// Why a SOCKS exchange was refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SocksError {
    /// Not SOCKS version 5.
    #[error("unsupported SOCKS version {0}")]
    BadVersion(u8),
    /// The greeting lists no methods.
    #[error("greeting lists no authentication methods")]
    NoMethods,
    /// The client does not offer "no authentication".
    #[error("client does not offer the no-authentication method")]
    NoAcceptableAuth,
    /// BIND, UDP ASSOCIATE or an unknown command.
    #[error("command {0:#04x} not supported (CONNECT only)")]
    CommandNotSupported(u8),
    /// An unknown address type.
    #[error("address type {0:#04x} not supported")]
    AddressTypeNotSupported(u8),
    /// The reserved byte is not zero.
    #[error("reserved byte is {0:#04x}, not zero")]
    BadReserved(u8),
    /// An empty or non-printable domain name.
    #[error("invalid domain name")]
    BadDomain,
}

impl SocksError {
    /// The reply code to send before closing, if the exchange got as far as
    /// a request (`None`: the greeting failed, answer with the method reply).
    pub fn reply(&self) -> Option<Reply> {
        match self {
            SocksError::BadVersion(_) | SocksError::NoMethods | SocksError::NoAcceptableAuth => None,
            SocksError::CommandNotSupported(_) => Some(Reply::CommandNotSupported),
            SocksError::AddressTypeNotSupported(_) => Some(Reply::AddressTypeNotSupported),
            SocksError::BadReserved(_) | SocksError::BadDomain => Some(Reply::GeneralFailure),
        }
    }
}

/// Where the client asked to connect.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Host {
    /// A name, unresolved.
    Domain(String),
    /// An IPv4 address.
    V4(Ipv4Addr),
    /// An IPv6 address.
    V6(Ipv6Addr),
}

/// A `CONNECT` target.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Target {
    /// Host.
    pub host: Host,
    /// TCP port.
    pub port: u16,
}

impl Target {
    /// The URL authority: `host:port`, IPv6 in brackets.
    pub fn authority(&self) -> String {
        match &self.host {
            Host::Domain(name) => format!("{name}:{}", self.port),
            Host::V4(ip) => format!("{ip}:{}", self.port),
            Host::V6(ip) => format!("[{ip}]:{}", self.port),
        }
    }
}

/// Parses the greeting `VER NMETHODS METHODS…`; returns its length once
/// complete. Refuses anything but version 5 offering "no authentication".
pub fn parse_greeting(buf: &[u8]) -> Result<Option<usize>, SocksError> {
    let Some(&version) = buf.first() else { return Ok(None) };
    if version != VERSION {
        return Err(SocksError::BadVersion(version));
    }
    let Some(&n) = buf.get(1) else { return Ok(None) };
    if n == 0 {
        return Err(SocksError::NoMethods);
    }
    let end = 2 + usize::from(n);
    let Some(methods) = buf.get(2..end) else { return Ok(None) };
    if !methods.contains(&NO_AUTH) {
        return Err(SocksError::NoAcceptableAuth);
    }
    Ok(Some(end))
}

/// The method-selection reply: "no authentication", or "no acceptable
/// methods" after a refused greeting.
pub fn method_reply(accepted: bool) -> [u8; 2] {
    [VERSION, if accepted { NO_AUTH } else { NO_ACCEPTABLE }]
}

/// Parses a request `VER CMD RSV ATYP DST.ADDR DST.PORT`; returns the
/// target and the request length once complete.
pub fn parse_request(buf: &[u8]) -> Result<Option<(Target, usize)>, SocksError> {
    let Some(fixed) = buf.get(..4) else {
        // Refuse early what can be refused early.
        if let Some(&version) = buf.first().filter(|&&v| v != VERSION) {
            return Err(SocksError::BadVersion(version));
        }
        return Ok(None);
    };
    let (version, command, reserved, atyp) = (fixed[0], fixed[1], fixed[2], fixed[3]);
    if version != VERSION {
        return Err(SocksError::BadVersion(version));
    }
    if command != CMD_CONNECT {
        return Err(SocksError::CommandNotSupported(command));
    }
    if reserved != 0 {
        return Err(SocksError::BadReserved(reserved));
    }
    let (host, addr_end) = match atyp {
        0x01 => {
            let Some(ip) = buf.get(4..8) else { return Ok(None) };
            (Host::V4(Ipv4Addr::new(ip[0], ip[1], ip[2], ip[3])), 8)
        }
        0x04 => {
            let Some(ip) = buf.get(4..20) else { return Ok(None) };
            let mut octets = [0u8; 16];
            octets.copy_from_slice(ip);
            (Host::V6(Ipv6Addr::from(octets)), 20)
        }
        0x03 => {
            let Some(&len) = buf.get(4) else { return Ok(None) };
            let end = 5 + usize::from(len);
            let Some(name) = buf.get(5..end) else { return Ok(None) };
            if name.is_empty() || !name.iter().all(|b| b.is_ascii_graphic()) || name.contains(&b'/') {
                return Err(SocksError::BadDomain);
            }
            let name = String::from_utf8(name.to_vec()).map_err(|_| SocksError::BadDomain)?;
            (Host::Domain(name), end)
        }
        other => return Err(SocksError::AddressTypeNotSupported(other)),
    };
    let Some(port) = buf.get(addr_end..addr_end + 2) else { return Ok(None) };
    let port = u16::from_be_bytes([port[0], port[1]]);
    Ok(Some((Target { host, port }, addr_end + 2)))
}

/// A reply with a zero IPv4 bound address (the proxy binds nothing).
pub fn reply(code: Reply) -> [u8; 10] {
    reply_code(code as u8)
}

/// A reply with any RFC 1928 §6 code (the exit's reason for a failed
/// `CONNECT`: 0x02 not allowed, 0x04 host unreachable, 0x05 refused, …).
pub fn reply_code(code: u8) -> [u8; 10] {
    [VERSION, code, 0, 0x01, 0, 0, 0, 0, 0, 0]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn greeting() {
        assert_eq!(parse_greeting(&[5, 1, 0]), Ok(Some(3)));
        assert_eq!(parse_greeting(&[5, 2, 2, 0, 0xaa]), Ok(Some(4)));
        assert_eq!(parse_greeting(&[4, 1, 0]), Err(SocksError::BadVersion(4)));
        assert_eq!(parse_greeting(&[5, 0]), Err(SocksError::NoMethods));
        assert_eq!(parse_greeting(&[5, 1, 2]), Err(SocksError::NoAcceptableAuth));
        assert_eq!(parse_greeting(&[5, 2, 1, 2]), Err(SocksError::NoAcceptableAuth));
        assert_eq!(method_reply(false), [5, 0xff]);
    }

    #[test]
    fn truncated_inputs_ask_for_more() {
        assert_eq!(parse_greeting(&[]), Ok(None));
        assert_eq!(parse_greeting(&[5]), Ok(None));
        assert_eq!(parse_greeting(&[5, 3, 0]), Ok(None));
        let full = [5, 1, 0, 3, 4, b'h', b'o', b's', b't', 0, 80];
        for cut in 0..full.len() {
            assert_eq!(parse_request(&full[..cut]), Ok(None), "cut at {cut}");
        }
        let (target, len) = parse_request(&full).unwrap().unwrap();
        assert_eq!(len, full.len());
        assert_eq!(target.authority(), "host:80");
    }

    #[test]
    fn address_types() {
        let v4 = [5, 1, 0, 1, 127, 0, 0, 1, 0x1f, 0x90];
        assert_eq!(parse_request(&v4).unwrap().unwrap().0.authority(), "127.0.0.1:8080");
        let mut v6 = vec![5, 1, 0, 4];
        v6.extend_from_slice(&Ipv6Addr::LOCALHOST.octets());
        v6.extend_from_slice(&[0, 80]);
        assert_eq!(parse_request(&v6).unwrap().unwrap().0.authority(), "[::1]:80");
        assert_eq!(parse_request(&[5, 1, 0, 9, 0, 0]), Err(SocksError::AddressTypeNotSupported(9)));
        assert_eq!(parse_request(&[5, 1, 0, 3, 0, 0, 80]), Err(SocksError::BadDomain));
        assert_eq!(parse_request(&[5, 1, 0, 3, 2, b'a', b' ', 0, 80]), Err(SocksError::BadDomain));
        assert_eq!(parse_request(&[5, 1, 0, 3, 3, b'a', b'/', b'b', 0, 80]), Err(SocksError::BadDomain));
    }

    #[test]
    fn bind_udp_and_bad_headers_are_refused() {
        let bind = [5, 2, 0, 1, 127, 0, 0, 1, 0, 80];
        let udp = [5, 3, 0, 1, 127, 0, 0, 1, 0, 80];
        assert_eq!(parse_request(&bind), Err(SocksError::CommandNotSupported(2)));
        assert_eq!(parse_request(&udp), Err(SocksError::CommandNotSupported(3)));
        assert_eq!(SocksError::CommandNotSupported(2).reply(), Some(Reply::CommandNotSupported));
        assert_eq!(parse_request(&[4, 1, 0, 1]), Err(SocksError::BadVersion(4)));
        assert_eq!(parse_request(&[4]), Err(SocksError::BadVersion(4)));
        assert_eq!(parse_request(&[5, 1, 1, 1, 0, 0, 0, 0, 0, 0]), Err(SocksError::BadReserved(1)));
        assert_eq!(reply(Reply::Succeeded), [5, 0, 0, 1, 0, 0, 0, 0, 0, 0]);
    }
}
