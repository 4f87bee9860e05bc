//! A JSON reader that refuses what upstream parsers disagree on.
//!
//! serde_json keeps the last of two equal keys, Go's `encoding/json` (geth) matches keys
//! case-insensitively with Unicode folding (`"Method"`, `"ſ"` for `s`, `"K"` (Kelvin) for `k`),
//! other clients keep the first key. A body with two keys that any of them could take for one
//! is therefore refused here, at every depth, so that no two parsers can read it differently.

use std::fmt;

use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};

/// Parse `body` as exactly one JSON value, refusing keys that repeat within an object, exactly
/// or after case folding. serde_json's recursion limit (128 levels) applies.
pub(crate) fn parse(body: &[u8]) -> Result<Value, serde_json::Error> {
    let mut de = serde_json::Deserializer::from_slice(body);
    let value = Strict.deserialize(&mut de)?;
    de.end()?;
    Ok(value)
}

/// The key as a case-insensitive matcher sees it: full Unicode case folding approximated by
/// upper- then lower-casing, which maps `ſ` to `s` and the Kelvin sign to `k` like Go does.
pub(crate) fn fold(key: &str) -> String {
    key.chars().flat_map(char::to_uppercase).flat_map(char::to_lowercase).collect()
}

struct Strict;

impl<'de> DeserializeSeed<'de> for Strict {
    type Value = Value;

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Strict {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Value, E> {
        Number::from_f64(v).map(Value::Number).ok_or_else(|| E::custom("number out of range"))
    }

    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }

    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut out = Vec::new();
        while let Some(value) = seq.next_element_seed(Strict)? {
            out.push(value);
        }
        Ok(Value::Array(out))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut out = Map::new();
        let mut folded = std::collections::HashSet::new();
        while let Some(key) = map.next_key::<String>()? {
            if !folded.insert(fold(&key)) {
                let what =
                    if out.contains_key(&key) { "duplicate key" } else { "key differing only in case from another" };
                let shown: String = key.chars().take(32).collect();
                return Err(de::Error::custom(format!("{what} {shown:?}")));
            }
            let value = map.next_value_seed(Strict)?;
            out.insert(key, value);
        }
        Ok(Value::Object(out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn duplicates_and_case_variants_are_refused_at_any_depth() {
        for body in [
            r#"{"a":1,"a":2}"#,
            r#"{"method":"x","Method":"y"}"#,
            r#"[{"p":{"q":[{"k":1,"K":2}]}}]"#,
            "{\"s\":1,\"\u{17f}\":2}",
            "{\"k\":1,\"\u{212a}\":2}",
        ] {
            assert!(parse(body.as_bytes()).is_err(), "{body}");
        }
        assert!(parse(br#"{"a":{"b":1},"c":{"b":1}}"#).is_ok(), "equal keys in different objects are fine");
        assert!(parse(b"{} {}").is_err(), "trailing values are refused");
    }
}
