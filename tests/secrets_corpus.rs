//! No secret reaches the disk, whatever way it comes in.

#[path = "support/secrets.rs"]
mod secrets;
