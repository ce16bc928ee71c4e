//! The mock model: a local server that speaks a provider's protocol, answers each role from a
//! script, and records every request.

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;
use wiremock::matchers::{method, path, path_regex};
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

// A path: this file is loaded by `#[path]` (see `support.rs`).
#[path = "replies.rs"]
mod replies;
use replies::*;

/// A code block reply the Artisan could give.
pub fn code(lang: &str, body: &str) -> String {
    format!("Here is the whole file.\n\n```{lang}\n{body}```\n\nI fixed the median.")
}

/// One scripted answer.
#[derive(Clone, Debug)]
pub enum Answer {
    /// A reply; usage as a real server would report it: the prompt's size in tokens (about 4
    /// characters each) and `completion_tokens` capped by the request's `max_completion_tokens`.
    Text {
        text: String,
        completion_tokens: u64,
    },
    Status {
        status: u16,
        body: String,
        headers: Vec<(String, String)>,
    },
    Slow {
        text: String,
        delay: Duration,
    },
    /// A reply after `delay`, its usage the reply's own size (about 4 characters a token), as a
    /// real model's time and bill both follow the tokens it writes (the benchmarks' model).
    Paced {
        text: String,
        delay: Duration,
    },
    /// A reply made from the request's text (every string in its body, joined): a model that
    /// works on what it is shown.
    From(Reply),
    /// `then` when the request's prompt contains `needle`, else `otherwise`: a model that
    /// answers from what it is shown.
    IfPrompt {
        needle: String,
        then: Box<Answer>,
        otherwise: Box<Answer>,
    },
}

/// How an [`Answer::From`] makes its reply.
#[derive(Clone)]
pub struct Reply(pub Arc<dyn Fn(&str) -> String + Send + Sync>);

impl std::fmt::Debug for Reply {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Reply(..)")
    }
}

/// A reply made by `f` from the request's text.
pub fn from_prompt(f: impl Fn(&str) -> String + Send + Sync + 'static) -> Answer {
    Answer::From(Reply(Arc::new(f)))
}

/// Every string of a request's body, in order, joined by new lines: the prompt as the model
/// reads it, whatever the protocol.
pub fn prompt_of(body: &Value) -> String {
    fn walk(v: &Value, out: &mut Vec<String>) {
        match v {
            Value::String(s) => out.push(s.clone()),
            Value::Array(items) => items.iter().for_each(|i| walk(i, out)),
            Value::Object(map) => map.values().for_each(|i| walk(i, out)),
            _ => {}
        }
    }
    let mut out = Vec::new();
    walk(body, &mut out);
    out.join("\n")
}

pub fn if_prompt(needle: &str, then: Answer, otherwise: Answer) -> Answer {
    Answer::IfPrompt {
        needle: needle.into(),
        then: Box::new(then),
        otherwise: Box::new(otherwise),
    }
}

pub fn text(t: impl Into<String>) -> Answer {
    Answer::Text {
        text: t.into(),
        completion_tokens: 200,
    }
}

/// A reply after `delay`: a model slow enough for a test to act while it waits.
pub fn slow(t: impl Into<String>, delay: Duration) -> Answer {
    Answer::Slow {
        text: t.into(),
        delay,
    }
}

#[derive(Default)]
struct Script {
    queues: BTreeMap<String, VecDeque<Answer>>,
    /// Answers given when a role's queue is empty.
    fallback: BTreeMap<String, Answer>,
    /// How the server counts and bills, when not as usual.
    billing: Billing,
    /// Prompt prefixes marked with `cache_control` (Anthropic) so far: a later request with the
    /// same prefix reads it from the cache. The real API caches only prefixes of at least
    /// 1,024 tokens (most models); this mock caches any.
    cached: std::collections::BTreeSet<String>,
}

/// How the mock server counts a prompt and what it reports of a reply's cost.
#[derive(Clone, Debug, Default)]
pub struct Billing {
    /// Prompt tokens per character; `None`: 0.25 (about 4 characters a token).
    pub tokens_per_char: Option<f64>,
    /// Report 0 tokens in and out, as Gemini's final stream chunk did behind LiteLLM.
    pub zero_usage: bool,
    /// Send this as `x-litellm-response-cost`, as a LiteLLM proxy does.
    pub cost_header: Option<String>,
    /// Bill the scripted reply length whatever the request's `max_tokens`.
    pub ignore_max_tokens: bool,
}

/// The wire protocol a mock server speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Protocol {
    OpenAi,
    Azure,
    Anthropic,
    Gemini,
    Ollama,
}

/// A local server that speaks one provider's protocol, answers each role from a script, and
/// records every request.
pub struct MockLlm {
    pub server: MockServer,
    pub protocol: Protocol,
    script: Arc<Mutex<Script>>,
}

/// What the mock needs to know of a request, whatever its protocol.
struct Asked {
    /// The characters of an Anthropic request's prompt up to its `cache_control` breakpoint,
    /// and the breakpoint's text (system prompt and first block), if it has one.
    cache_prefix: Option<(usize, String)>,
    role: String,
    model: String,
    stream: bool,
    max_tokens: Option<u64>,
    prompt_chars: usize,
}

/// The system prompt of a request, wherever its protocol puts it.
pub fn system_text(protocol: Protocol, body: &Value) -> String {
    let text = match protocol {
        Protocol::Anthropic => body["system"].as_str(),
        Protocol::Gemini => body["systemInstruction"]["parts"][0]["text"].as_str(),
        _ => body["messages"][0]["content"].as_str(),
    };
    text.unwrap_or_default().to_string()
}

/// Which role a request is from, by the system prompt of the bundled templates: `judge` for the
/// Critic's judgement of Chaos's tests, `chaos` for Chaos.
pub fn role_of_system(system: &str) -> String {
    if system.contains("You plan a task") {
        return "planner".into();
    }
    if system.contains("Chaos, the team's adversary") {
        return "judge".into();
    }
    if system.contains("regression test for Chaos") {
        return "replay".into();
    }
    if system.contains("You are Chaos") {
        return "chaos".into();
    }
    if system.contains("You are a hook in ralph-loop") {
        return "hook".into();
    }
    for role in ["Librarian", "Artisan", "Critic"] {
        if system.contains(&format!("You are the {role}")) {
            return role.to_lowercase();
        }
    }
    "unknown".into()
}

/// Characters of the text fields in a request's messages, whatever their shape.
fn text_chars(v: &Value) -> usize {
    match v {
        Value::String(s) => s.chars().count(),
        Value::Array(a) => a.iter().map(text_chars).sum(),
        Value::Object(o) => o
            .iter()
            .filter(|(k, _)| matches!(k.as_str(), "content" | "text" | "parts"))
            .map(|(_, v)| text_chars(v))
            .sum(),
        _ => 0,
    }
}

fn asked(protocol: Protocol, request: &Request, body: &Value) -> Asked {
    let path = request.url.path().to_string();
    let str_of = |v: &Value| v.as_str().unwrap_or("").to_string();
    let (model, stream, max_tokens) = match protocol {
        Protocol::OpenAi => (
            str_of(&body["model"]),
            body["stream"].as_bool().unwrap_or(false),
            body["max_completion_tokens"].as_u64(),
        ),
        Protocol::Azure => (
            path.split('/').nth(3).unwrap_or("").to_string(),
            body["stream"].as_bool().unwrap_or(false),
            body["max_completion_tokens"]
                .as_u64()
                .or(body["max_tokens"].as_u64()),
        ),
        Protocol::Anthropic => (
            str_of(&body["model"]),
            body["stream"].as_bool().unwrap_or(false),
            body["max_tokens"].as_u64(),
        ),
        Protocol::Gemini => {
            let last = path.rsplit('/').next().unwrap_or("");
            let (model, method) = last.split_once(':').unwrap_or((last, ""));
            (
                model.to_string(),
                method == "streamGenerateContent",
                body["generationConfig"]["maxOutputTokens"].as_u64(),
            )
        }
        Protocol::Ollama => (
            str_of(&body["model"]),
            body["stream"].as_bool().unwrap_or(true),
            body["options"]["num_predict"].as_u64(),
        ),
    };
    let prompt_chars = match protocol {
        Protocol::Anthropic => text_chars(&body["messages"]) + text_chars(&body["system"]),
        Protocol::Gemini => text_chars(&body["contents"]) + text_chars(&body["systemInstruction"]),
        _ => text_chars(&body["messages"]),
    };
    let cache_prefix = match protocol {
        Protocol::Anthropic => {
            let block = &body["messages"][0]["content"][0];
            block.get("cache_control").map(|_| {
                let text = format!(
                    "{}{}",
                    body["system"].as_str().unwrap_or(""),
                    block["text"].as_str().unwrap_or("")
                );
                (text.chars().count(), text)
            })
        }
        _ => None,
    };
    Asked {
        cache_prefix,
        role: role_of_system(&system_text(protocol, body)),
        model,
        stream,
        max_tokens,
        prompt_chars,
    }
}

struct Responder(Protocol, Arc<Mutex<Script>>);

impl Respond for Responder {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let body: Value = serde_json::from_slice(&request.body).unwrap_or(Value::Null);
        let asked = asked(self.0, request, &body);
        let answer = {
            let mut script = self.1.lock().unwrap();
            let next = script
                .queues
                .get_mut(&asked.role)
                .and_then(|q| q.pop_front());
            next.or_else(|| script.fallback.get(&asked.role).cloned())
        };
        // A choice may lead to a reply made from the prompt, and that to nothing further.
        let mut answer = answer;
        let answer = loop {
            answer = match answer {
                Some(Answer::From(Reply(f))) => Some(text(f(&prompt_of(&body)))),
                Some(Answer::IfPrompt {
                    needle,
                    then,
                    otherwise,
                }) => {
                    let prompt = String::from_utf8_lossy(&request.body).replace("\\n", "\n");
                    Some(if prompt.contains(&needle) {
                        *then
                    } else {
                        *otherwise
                    })
                }
                other => break other,
            };
        };
        // Usage as a real server reports it: the prompt's size (about 4 characters a token,
        // unless the test says otherwise) and a reply capped by the request's own limit.
        let (billing, cache) = {
            let mut script = self.1.lock().unwrap();
            // Anthropic's usage: a prefix seen before is read from the cache, a new one written.
            let cache = asked.cache_prefix.clone().map(|(chars, text)| {
                let tokens = (chars / 4) as u64;
                match script.cached.insert(text) {
                    true => Cache {
                        written: tokens,
                        read: 0,
                    },
                    false => Cache {
                        written: 0,
                        read: tokens,
                    },
                }
            });
            (script.billing.clone(), cache.unwrap_or_default())
        };
        let prompt = match billing.tokens_per_char {
            Some(ratio) => (asked.prompt_chars as f64 * ratio).ceil() as u64,
            None => (asked.prompt_chars / 4) as u64,
        };
        let billed = |r: ResponseTemplate| match &billing.cost_header {
            Some(cost) => r.insert_header("x-litellm-response-cost", cost.as_str()),
            None => r,
        };
        let zero = billing.zero_usage;
        let usage = |prompt: u64, out: u64| if zero { (0, 0) } else { (prompt, out) };
        match answer {
            None => ResponseTemplate::new(500)
                .set_body_string(format!("no scripted answer for {}", asked.role)),
            Some(Answer::Status {
                status,
                body,
                headers,
            }) => {
                let mut r = ResponseTemplate::new(status).set_body_raw(body, "application/json");
                for (k, v) in headers {
                    r = r.insert_header(k.as_str(), v.as_str());
                }
                r
            }
            Some(Answer::Text {
                text,
                completion_tokens,
            }) => {
                let cap = match billing.ignore_max_tokens {
                    true => u64::MAX,
                    false => asked.max_tokens.unwrap_or(u64::MAX),
                };
                let (prompt, out) = usage(prompt, completion_tokens.min(cap));
                billed(reply(self.0, &asked, &text, prompt, out, cache))
            }
            Some(Answer::Slow { text, delay }) => {
                let (prompt, out) = usage(prompt, 200);
                billed(reply(self.0, &asked, &text, prompt, out, cache)).set_delay(delay)
            }
            Some(Answer::Paced { text, delay }) => {
                let (prompt, out) = usage(prompt, (text.len() as u64).div_ceil(4));
                billed(reply(self.0, &asked, &text, prompt, out, cache)).set_delay(delay)
            }
            Some(Answer::IfPrompt { .. }) | Some(Answer::From(_)) => {
                unreachable!("resolved above")
            }
        }
    }
}

impl MockLlm {
    /// A server speaking OpenAI's chat completions.
    pub async fn start() -> Self {
        Self::start_with(Protocol::OpenAi).await
    }

    pub async fn start_with(protocol: Protocol) -> Self {
        let server = MockServer::start().await;
        let script = Arc::new(Mutex::new(Script::default()));
        let route = match protocol {
            Protocol::OpenAi => Mock::given(path("/v1/chat/completions")),
            Protocol::Azure => {
                Mock::given(path_regex(r"^/openai/deployments/[^/]+/chat/completions$"))
            }
            Protocol::Anthropic => Mock::given(path("/v1/messages")),
            Protocol::Gemini => Mock::given(path_regex(
                r"^/v1beta/models/[^/:]+:(generateContent|streamGenerateContent)$",
            )),
            Protocol::Ollama => Mock::given(path("/api/chat")),
        };
        route
            .and(method("POST"))
            .respond_with(Responder(protocol, script.clone()))
            .mount(&server)
            .await;
        Self {
            server,
            protocol,
            script,
        }
    }

    /// Queues answers for a role (`librarian`, `artisan`, `critic`), given in order.
    pub fn script(&self, role: &str, answers: impl IntoIterator<Item = Answer>) -> &Self {
        self.script
            .lock()
            .unwrap()
            .queues
            .entry(role.into())
            .or_default()
            .extend(answers);
        self
    }

    /// The answer a role gets whenever its queue is empty.
    pub fn always(&self, role: &str, answer: Answer) -> &Self {
        self.script
            .lock()
            .unwrap()
            .fallback
            .insert(role.into(), answer);
        self
    }

    /// The usual supporting cast: a Librarian that analyses and a Critic that approves.
    /// Counts and bills as `billing` says from now on.
    pub fn bill(&self, billing: Billing) -> &Self {
        self.script.lock().unwrap().billing = billing;
        self
    }

    pub fn helpful(&self) -> &Self {
        self.always(
            "librarian",
            text("The median of an even-length list must average the two middle values."),
        );
        self.always("critic", text("The change is correct.\nVERDICT: APPROVE"))
    }

    pub fn base_url(&self) -> String {
        format!("{}/v1", self.server.uri())
    }

    /// The environment that points an OpenAI client at this server.
    pub fn openai_env(&self) -> Vec<(&'static str, String)> {
        vec![
            ("OPENAI_BASE_URL", self.base_url()),
            ("OPENAI_API_KEY", "sk-test-key".into()),
        ]
    }

    /// The variables that point `ralph-loop` at this server, with a key, as its protocol names
    /// them.
    pub fn env(&self) -> Vec<(&'static str, String)> {
        let uri = self.uri();
        match self.protocol {
            Protocol::OpenAi => self.openai_env(),
            Protocol::Anthropic => vec![
                ("ANTHROPIC_BASE_URL", uri),
                ("ANTHROPIC_API_KEY", "sk-ant-test".into()),
            ],
            Protocol::Gemini => vec![
                ("GEMINI_BASE_URL", uri),
                ("GEMINI_API_KEY", "g-test".into()),
            ],
            Protocol::Azure => vec![
                ("AZURE_OPENAI_ENDPOINT", uri),
                ("AZURE_OPENAI_API_KEY", "az-test".into()),
            ],
            Protocol::Ollama => vec![("OLLAMA_HOST", uri)],
        }
    }

    /// Every request the server got so far, as it came.
    async fn received(&self) -> Vec<Request> {
        self.server.received_requests().await.unwrap_or_default()
    }

    /// Every chat request so far, as JSON, with its role.
    pub async fn requests(&self) -> Vec<(String, Value)> {
        self.received()
            .await
            .iter()
            .filter_map(|r| serde_json::from_slice::<Value>(&r.body).ok())
            .map(|b| (role_of_system(&system_text(self.protocol, &b)), b))
            .collect()
    }

    /// The model each request asked for, wherever its protocol puts it.
    pub async fn models(&self) -> Vec<String> {
        self.received()
            .await
            .iter()
            .map(|r| {
                let body = serde_json::from_slice::<Value>(&r.body).unwrap_or(Value::Null);
                asked(self.protocol, r, &body).model
            })
            .collect()
    }

    /// One header of every request.
    pub async fn headers(&self, name: &str) -> Vec<String> {
        self.received()
            .await
            .iter()
            .map(|r| {
                let value = r.headers.get(name).and_then(|v| v.to_str().ok());
                value.unwrap_or("").to_string()
            })
            .collect()
    }

    /// The server's root URL.
    pub fn uri(&self) -> String {
        self.server.uri()
    }

    /// The `Authorization` header of every request.
    pub async fn authorizations(&self) -> Vec<String> {
        self.headers("authorization").await
    }

    pub async fn requests_of(&self, role: &str) -> Vec<Value> {
        self.requests()
            .await
            .into_iter()
            .filter(|(r, _)| r == role)
            .map(|(_, b)| b)
            .collect()
    }
}
