//! The console (book chapter 10's third adapter): a web page onto the
//! broker, served over HTTP by the broker itself. `ConsoleServer` serves
//! the page, its scripts and styles (compiled into the binary, no network
//! at run time: `assets.rs`) and a small HTTP+JSON API (`api/`) that
//! translates each request into one or a few read or admin operations of
//! the core, and each answer into JSON. Like every adapter it decides
//! nothing: what a partition's health is, where an offset reset goes,
//! which records are aborted — all of that is asked of `BrokerCluster`.
//!
//! The console has no authentication: it listens on loopback by default
//! and refuses requests whose `Host` is not a loopback name while it does
//! (so a web page cannot reach it through DNS rebinding), and changes
//! need a JSON body and a same-origin `Origin` (so a web page cannot post
//! to it either).

mod api;
mod assets;
mod http;
mod server;

pub use server::{ConsoleOptions, ConsoleServer};
