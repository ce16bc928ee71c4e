//! [`build`]: the embedder an [`EmbedderSpec`] describes, offline or over HTTP.

use std::sync::Arc;

use ralph_actors::ports::memory::Embedder;

use super::hashed::{HashedNgrams, DEFAULT_HASHED_DIMS};
use super::http::HttpEmbedder;
use super::spec::{EmbedError, EmbedProvider, EmbedderSpec};

/// Makes the embedder the settings describe, reading its key from the environment.
pub fn build(spec: &EmbedderSpec) -> Result<Arc<dyn Embedder>, EmbedError> {
    build_with_env(spec, |name| std::env::var(name).ok())
}

/// [`build`], with the environment given: tests pass a map rather than set process-wide
/// variables that other threads may be reading.
pub fn build_with_env(
    spec: &EmbedderSpec,
    env: impl Fn(&str) -> Option<String>,
) -> Result<Arc<dyn Embedder>, EmbedError> {
    Ok(match spec.provider {
        EmbedProvider::Hashed => {
            Arc::new(HashedNgrams::new(spec.dims.unwrap_or(DEFAULT_HASHED_DIMS))?)
        }
        _ => Arc::new(HttpEmbedder::new(spec, env)?),
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;
    use std::collections::HashMap;

    #[test]
    fn build_errors_say_what_to_set() {
        let missing = |provider, env: Option<&str>| {
            let s = EmbedderSpec {
                provider,
                api_key_env: env.map(str::to_string),
                ..EmbedderSpec::default()
            };
            build_with_env(&s, |_| None).err().map(|e| e.to_string())
        };
        assert_eq!(
            missing(EmbedProvider::OpenAi, None).as_deref(),
            Some("memory.embedder: openai needs an API key: set OPENAI_API_KEY")
        );
        assert_eq!(
            missing(EmbedProvider::Gemini, None).as_deref(),
            Some("memory.embedder: gemini needs an API key: set GEMINI_API_KEY")
        );
        assert_eq!(
            missing(EmbedProvider::OpenAi, Some("MY_KEY")).as_deref(),
            Some("memory.embedder: openai needs an API key: set MY_KEY")
        );
        assert_eq!(missing(EmbedProvider::Ollama, None), None);

        let keys: HashMap<&str, &str> = HashMap::from([("OPENAI_API_KEY", "sk")]);
        let env = |n: &str| keys.get(n).map(|k| k.to_string());
        let unknown = EmbedderSpec {
            provider: EmbedProvider::OpenAi,
            model: "my-finetune".into(),
            ..EmbedderSpec::default()
        };
        assert_eq!(
            build_with_env(&unknown, env).err().map(|e| e.to_string()).as_deref(),
            Some("memory.embedder: the dimension of openai model `my-finetune` is not known: set memory.embedder.dims")
        );
        let bad_url = EmbedderSpec {
            base_url: Some("not a url".into()),
            ..EmbedderSpec {
                provider: EmbedProvider::Ollama,
                ..EmbedderSpec::default()
            }
        };
        assert!(matches!(
            build_with_env(&bad_url, env),
            Err(EmbedError::BadUrl { .. })
        ));
        let zero = EmbedderSpec {
            dims: Some(0),
            ..unknown
        };
        assert!(matches!(
            build_with_env(&zero, env),
            Err(EmbedError::ZeroDims)
        ));
    }
}
