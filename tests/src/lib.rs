//! Workspace acceptance tests. The library part is empty on purpose; the
//! tests in `tests/tests/` cross crate boundaries and check repository rules
//! (every crate appears in docs/chapters.md, the behavior matrix names tests
//! that exist).
