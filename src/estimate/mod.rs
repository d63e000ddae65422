//! Estimators (work in progress).
