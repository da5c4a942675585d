//! The messages of every client-facing API of Kafka 4.1 (controller,
//! KRaft and inter-broker APIs left out), one module per API, with the
//! table of what each schema says (`SCHEMAS`), the API keys, `Request` (the
//! decoded body of any request) and `served` (the advertised table and the
//! router).
//!
//! Generated when this crate is built: build.rs runs mk-protocol-gen over
//! `schema/` into Cargo's `OUT_DIR` (target/<profile>/build/
//! mk-adapter-kafka-<hash>/out/messages/). Edit the schemas, never the
//! output; `cargo xtask codegen --print <module>` (`produce`, `served`,
//! `mod`, ...) shows a generated module formatted.

include!(concat!(env!("OUT_DIR"), "/messages/mod.rs"));
