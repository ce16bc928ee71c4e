//! The body of an OpenAI-protocol chat request, with what differs between servers.

use async_openai::types::chat::{
    ChatCompletionRequestAssistantMessage, ChatCompletionRequestAssistantMessageContent,
    ChatCompletionRequestMessage, ChatCompletionRequestSystemMessage,
    ChatCompletionRequestSystemMessageContent, ChatCompletionRequestUserMessage,
    ChatCompletionRequestUserMessageContent, ChatCompletionStreamOptions,
    CreateChatCompletionRequest,
};
use ralph_actors::ports::llm::{ChatMessage, ChatRequest, Speaker};

/// What differs between servers in a request body.
pub(crate) struct ChatBody<'a> {
    pub model: &'a str,
    pub request: &'a ChatRequest,
    pub temperature: Option<f32>,
    /// Send the cap as `max_completion_tokens` (what reasoning models require).
    pub max_completion_tokens: bool,
    /// Send the cap as `max_tokens` too (servers that know only the older name).
    pub max_tokens: bool,
    pub stream: bool,
    /// Ask for the usage at the end of the stream (`stream_options.include_usage`).
    pub stream_usage: bool,
}

/// The request: the output cap is always sent, under the name(s) the server knows, since the
/// budget reserved for exactly that many output tokens.
pub(crate) fn chat_body(b: ChatBody<'_>) -> CreateChatCompletionRequest {
    #[allow(deprecated)]
    let body = CreateChatCompletionRequest {
        model: b.model.to_string(),
        messages: b.request.messages.iter().map(to_message).collect(),
        temperature: b.temperature,
        max_completion_tokens: b.max_completion_tokens.then_some(b.request.max_tokens),
        max_tokens: b.max_tokens.then_some(b.request.max_tokens),
        stream: b.stream.then_some(true),
        stream_options: b.stream_usage.then_some(ChatCompletionStreamOptions {
            include_usage: Some(true),
            include_obfuscation: None,
        }),
        ..Default::default()
    };
    body
}

fn to_message(m: &ChatMessage) -> ChatCompletionRequestMessage {
    let text = m.content.clone();
    match m.speaker {
        Speaker::System => ChatCompletionRequestSystemMessage {
            content: ChatCompletionRequestSystemMessageContent::Text(text),
            name: None,
        }
        .into(),
        Speaker::User => ChatCompletionRequestUserMessage {
            content: ChatCompletionRequestUserMessageContent::Text(text),
            name: None,
        }
        .into(),
        Speaker::Assistant => ChatCompletionRequestAssistantMessage {
            content: Some(ChatCompletionRequestAssistantMessageContent::Text(text)),
            ..Default::default()
        }
        .into(),
    }
}
