//! dp-accounting
