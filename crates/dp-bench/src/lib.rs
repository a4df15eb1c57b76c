//! dp-bench
