//! What every provider's request is made of alike: the model id the provider knows, the
//! temperature as the user wrote it, and the system prompt apart from alternating turns.

use ralph_actors::ports::llm::{ChatMessage, LlmError, Speaker};

/// The model id the provider knows: `anthropic/claude-x` → `claude-x`; a bare name as is.
pub(crate) fn model_id<'a>(provider: &str, model: &'a str) -> Result<&'a str, LlmError> {
    match model.split_once('/') {
        Some((p, id)) if p == provider && !id.is_empty() => Ok(id),
        None if !model.is_empty() => Ok(model),
        _ => Err(LlmError::Config {
            model: model.into(),
            message: format!("the {provider} client cannot serve this model"),
        }),
    }
}

/// The temperature as the user wrote it: `0.2f32` would serialise as `0.20000000298023224`.
pub(crate) fn temperature(t: f32) -> f64 {
    t.to_string().parse().unwrap_or(f64::from(t))
}

/// The system messages joined, and the others as alternating turns: consecutive messages of
/// one speaker are merged, since Anthropic and Gemini want user and model turns to alternate.
pub(crate) fn split_system(messages: &[ChatMessage]) -> (Option<String>, Vec<(Speaker, String)>) {
    let mut system: Vec<&str> = Vec::new();
    let mut turns: Vec<(Speaker, String)> = Vec::new();
    for m in messages {
        match (m.speaker, turns.last_mut()) {
            (Speaker::System, _) => system.push(&m.content),
            (s, Some((last, text))) if *last == s => {
                text.push_str("\n\n");
                text.push_str(&m.content);
            }
            (s, _) => turns.push((s, m.content.clone())),
        }
    }
    let system = (!system.is_empty()).then(|| system.join("\n\n"));
    (system, turns)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::providers::http::endpoint::resolve_base_url;
    use crate::providers::http::failure::says_too_long;

    #[test]
    fn merges_turns_and_joins_system_prompts() {
        let (system, turns) = split_system(&[
            ChatMessage::system("a"),
            ChatMessage::user("u1"),
            ChatMessage::user("u2"),
            ChatMessage::system("b"),
            ChatMessage::assistant("x"),
            ChatMessage::user("u3"),
        ]);
        assert_eq!(system.as_deref(), Some("a\n\nb"));
        assert_eq!(
            turns,
            vec![
                (Speaker::User, "u1\n\nu2".to_string()),
                (Speaker::Assistant, "x".to_string()),
                (Speaker::User, "u3".to_string()),
            ]
        );
        assert_eq!(split_system(&[ChatMessage::user("u")]).0, None);
    }

    #[test]
    fn small_helpers() {
        assert_eq!(temperature(0.2), 0.2);
        assert_eq!(model_id("acme", "acme/m-1").ok(), Some("m-1"));
        assert_eq!(model_id("acme", "m-1").ok(), Some("m-1"));
        assert!(model_id("acme", "other/m").is_err());
        assert!(says_too_long("The input token count (1200000) exceeds the maximum number of tokens allowed (1048576)."));
        assert!(!says_too_long("invalid temperature"));
        assert!(resolve_base_url("acme", Some("localhost:1".into()), "X", "http://d").is_err());
        let (base, _) =
            resolve_base_url("acme", Some(" http://h:1/ ".into()), "X", "http://d").expect("url");
        assert_eq!(base, "http://h:1");
    }
}
