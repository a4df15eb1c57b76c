//! dp-glm
