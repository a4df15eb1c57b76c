//! dp-optim
