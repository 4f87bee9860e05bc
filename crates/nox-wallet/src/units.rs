//! Amounts and Ethereum addresses as a person types and reads them (moved unchanged from the
//! `nox wallet` command, issue 34): an asset's display [`Unit`] (`0.05 ETH`, `123wei`),
//! [`format_units`], and [`parse_eth_address`] (a shielded address or a viewing key says what it
//! is; a mixed-case address must carry a valid EIP-55 checksum). Pure.

use alloy_primitives::Address;

/// An amount a person typed that is not one.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum AmountError {
    /// Not a decimal number.
    #[error("amount {0:?}: not a number (e.g. 0.05, or 50000wei for base units)")]
    NotANumber(String),
    /// More decimals than the unit has.
    #[error("amount {text:?}: more than {decimals} decimals")]
    TooManyDecimals {
        /// What was typed.
        text: String,
        /// The unit's decimals.
        decimals: u8,
    },
    /// Too large for 128 bits.
    #[error("amount {text:?}: {source}")]
    TooLarge {
        /// What was typed.
        text: String,
        /// The parser's error.
        source: std::num::ParseIntError,
    },
    /// Zero.
    #[error("amount {0:?}: must be positive")]
    Zero(String),
}

/// Text that is not an Ethereum address.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum EthAddressError {
    /// A shielded address (`nox1…`, `noxpay:`).
    #[error(
        "{0:.12}… is a shielded address, not an Ethereum address: pay it privately with `nox wallet send --to {0:.12}…`"
    )]
    Shielded(String),
    /// A viewing key (`noxview1…`).
    #[error("this is a viewing key, not an Ethereum address")]
    ViewingKey,
    /// Not 0x and 40 hexadecimal digits.
    #[error("{0:?} is not an Ethereum address (0x followed by 40 hexadecimal digits)")]
    NotAnAddress(String),
    /// A mixed-case address whose EIP-55 checksum does not match.
    #[error("{0}: the EIP-55 checksum (the mix of upper and lower case) does not match: a typo?")]
    Checksum(String),
    /// The hexadecimal does not parse.
    #[error("{text}: {source}")]
    Hex {
        /// What was typed.
        text: String,
        /// The parser's error.
        source: alloy_primitives::hex::FromHexError,
    },
}

/// An Ethereum address as a command-line value: a shielded address says it is one, and a
/// mixed-case address must carry a valid EIP-55 checksum (a typo is refused, not sent to).
pub fn parse_eth_address(text: &str) -> Result<Address, EthAddressError> {
    let t = text.trim();
    if t.to_ascii_lowercase().starts_with("nox1") || t.starts_with("noxpay:") {
        return Err(EthAddressError::Shielded(t.to_owned()));
    }
    if t.to_ascii_lowercase().starts_with("noxview1") {
        return Err(EthAddressError::ViewingKey);
    }
    let hex_part = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")).unwrap_or(t);
    if hex_part.len() != 40 || !hex_part.bytes().all(|c| c.is_ascii_hexdigit()) {
        return Err(EthAddressError::NotAnAddress(t.to_owned()));
    }
    let mixed = hex_part.bytes().any(|c| c.is_ascii_uppercase()) && hex_part.bytes().any(|c| c.is_ascii_lowercase());
    if mixed {
        return Address::parse_checksummed(format!("0x{hex_part}"), None)
            .map_err(|_| EthAddressError::Checksum(t.to_owned()));
    }
    hex_part.parse().map_err(|source| EthAddressError::Hex { text: t.to_owned(), source })
}

/// An asset's display unit: symbol and decimals (ETH: `ETH`, 18).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unit {
    /// The symbol.
    pub symbol: String,
    /// Decimal places of one whole unit.
    pub decimals: u8,
}

impl Unit {
    /// Ether.
    pub fn eth() -> Self {
        Unit { symbol: "ETH".into(), decimals: 18 }
    }

    /// `value` base units as a decimal with the symbol (`0.05 ETH`).
    pub fn show(&self, value: u128) -> String {
        format!("{} {}", format_units(value, self.decimals), self.symbol)
    }

    /// Parses `0.05` (whole units), or `123wei` (base units, any asset).
    pub fn parse(&self, text: &str) -> Result<u128, AmountError> {
        let t = text.trim().to_ascii_lowercase();
        let sym = self.symbol.to_ascii_lowercase();
        let (number, decimals) = match t.strip_suffix("wei") {
            Some(n) => (n.trim().to_owned(), 0),
            None => (t.strip_suffix(sym.as_str()).unwrap_or(&t).trim().to_owned(), self.decimals),
        };
        let (whole, frac) = number.split_once('.').unwrap_or((number.as_str(), ""));
        let digits = |s: &str| s.bytes().all(|c| c.is_ascii_digit());
        if (whole.is_empty() && frac.is_empty()) || !digits(whole) || !digits(frac) {
            return Err(AmountError::NotANumber(text.to_owned()));
        }
        let frac = frac.trim_end_matches('0');
        if frac.len() > usize::from(decimals) {
            return Err(AmountError::TooManyDecimals { text: text.to_owned(), decimals });
        }
        let padded = format!("{whole}{frac}{}", "0".repeat(usize::from(decimals) - frac.len()));
        let value: u128 = padded.trim_start_matches('0').parse().or_else(|source| {
            if padded.trim_start_matches('0').is_empty() {
                Ok(0)
            } else {
                Err(AmountError::TooLarge { text: text.to_owned(), source })
            }
        })?;
        if value == 0 {
            return Err(AmountError::Zero(text.to_owned()));
        }
        Ok(value)
    }
}

/// `value` with `decimals` decimal places, trailing zeros dropped (`50000000000000000`, 18 →
/// `0.05`).
pub fn format_units(value: u128, decimals: u8) -> String {
    let unit = 10u128.checked_pow(u32::from(decimals));
    let Some(unit) = unit else { return value.to_string() };
    let whole = value / unit;
    let frac = value % unit;
    if frac == 0 {
        return whole.to_string();
    }
    let frac = format!("{frac:0width$}", width = usize::from(decimals));
    format!("{whole}.{}", frac.trim_end_matches('0'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn amounts_in_units_and_base_units() {
        let eth = Unit::eth();
        assert_eq!(eth.parse("0.05").unwrap(), 50_000_000_000_000_000);
        assert_eq!(eth.parse("1").unwrap(), 1_000_000_000_000_000_000);
        assert_eq!(eth.parse("0.05 ETH").unwrap(), 50_000_000_000_000_000);
        assert_eq!(eth.parse("123wei").unwrap(), 123);
        assert!(eth.parse("0.0000000000000000001").is_err(), "19 decimals");
        assert!(eth.parse("0").is_err() && eth.parse("abc").is_err() && eth.parse("").is_err());
        assert_eq!(eth.show(50_000_000_000_000_000), "0.05 ETH");
        assert_eq!(eth.show(0), "0 ETH");
        let usdc = Unit { symbol: "USDC".into(), decimals: 6 };
        assert_eq!(usdc.parse("12.5").unwrap(), 12_500_000);
        assert_eq!(usdc.show(12_500_000), "12.5 USDC");
        assert_eq!(format_units(1, 18), "0.000000000000000001");
        // The messages the commands print (unchanged by the move to this crate, issue 34).
        assert_eq!(eth.parse("0").unwrap_err().to_string(), "amount \"0\": must be positive");
        assert_eq!(
            eth.parse("1.0000000000000000001").unwrap_err().to_string(),
            "amount \"1.0000000000000000001\": more than 18 decimals"
        );
    }

    #[test]
    fn ethereum_address_checks() {
        let lower = "0x52908400098527886e0f7030069857d2e4169ee7";
        assert!(parse_eth_address(lower).is_ok());
        // EIP-55's own example, then one letter's case flipped: a typo.
        assert!(parse_eth_address("0x52908400098527886E0F7030069857D2E4169EE7").is_ok(), "all upper case");
        assert!(parse_eth_address("0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed").is_ok());
        let typo = parse_eth_address("0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAeD").unwrap_err().to_string();
        assert!(typo.contains("checksum"), "{typo}");
        let shielded = parse_eth_address("nox1qqqqqqqqqqqqqqqqqqqq").unwrap_err().to_string();
        assert_eq!(
            shielded,
            "nox1qqqqqqqq… is a shielded address, not an Ethereum address: pay it privately with `nox wallet send \
             --to nox1qqqqqqqq…`"
        );
        assert!(parse_eth_address("0x1234").unwrap_err().to_string().contains("not an Ethereum address"));
    }
}
