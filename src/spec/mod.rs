//! The job spec (work in progress).
