//! serde for a `git2::Oid` as its 40 hex digits, for the plan and the state file (a leaf every other
//! backport file may use).

use git2::Oid;
use serde::{Deserialize, Deserializer, Serializer};

/// Writes the oid as hex.
pub fn serialize<S: Serializer>(oid: &Oid, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&oid.to_string())
}

/// Reads an oid from hex.
pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Oid, D::Error> {
    let s = String::deserialize(d)?;
    Oid::from_str(&s).map_err(serde::de::Error::custom)
}
