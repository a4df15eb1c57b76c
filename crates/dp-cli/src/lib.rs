//! dp-cli
