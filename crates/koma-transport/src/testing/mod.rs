//! What the tests and the fuzz targets share (the `testing` feature; never in
//! a published build): the fuzz targets' property checks, which the tests
//! also run over the fuzz corpus, and one seeded random generator.

pub mod frames;
pub mod lift;
pub mod rng;

pub use rng::Rng;
