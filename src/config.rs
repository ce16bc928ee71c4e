//! (being written)
#[derive(Debug, thiserror::Error)]
#[error("config")]
pub struct ConfigError;
