//! The job spec: what a training job is (dataset, model, loaders, device,
//! ranks) and the budget it must fit, as YAML, an sbatch script or flags.
//! [`JobSpec`] is what the user wrote; [`Job`] is the validated, resolved form
//! every estimator takes.

mod fanout;
mod load;
mod resolve;
pub mod sbatch;
pub(crate) mod slurm_request;
mod stack;
mod types;
mod yaml_depth;

pub use yaml_depth::check as check_yaml_depth;

pub use fanout::parse_fanout;
pub use load::{Loaded, from_text, load};
pub use resolve::{Job, ModelKind};
pub use stack::Stack;
pub use types::*;
