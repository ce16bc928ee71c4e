//! The ports: the small traits through which the core reaches the outside world, each with its
//! own error type that says whether trying again may help (`is_transient`). The binary crate
//! holds the real implementations; the core's tests use the `mockall` mocks (`mock` feature).
//!
//! | port | trait | what it does |
//! | --- | --- | --- |
//! | [`llm`] | `LlmClient`, `TokenCounter` | one chat completion, routed by `provider/model`; prompt tokens before a call |
//! | [`runner`] | `TestRunner` | runs the project's tests into one result |
//! | [`chaos`] | `ChaosRunner` | how Chaos's test files fit the project; runs them into the same result schema |
//! | [`file_io`] | — | the read and write failures the ports' errors share |
//! | [`workspace`] | `Workspace` | the target, its test file, instructions, manifest and neighbourhood, read fresh; atomic writes of the target |
//! | [`store`] | `SessionStore` | the session folder: results, the iteration log, state, report |
//! | [`memory`] | `VectorStore`, `Embedder` | the MemoryVault's storage and embedding model |
//! | [`stream`] | a task-local sink | a model's reply as it streams, for the live views (the thought stream) |
//! | [`user`] | `User` | the person at the terminal, when there is one: the breaker asks before it stops |

pub mod chaos;
pub mod file_io;
pub mod llm;
pub mod memory;
pub mod runner;
pub mod store;
pub mod stream;
pub mod user;
pub mod workspace;
