//! The dashboard's page (`assets/`: HTML, one script, one style sheet, compiled in), and the
//! page exported as one self-contained file: the same page with its script, its style, and a
//! session's view (its events folded, as the server sends it) and diffs inlined, to open
//! anywhere without ralph-loop.

use std::collections::BTreeMap;

use ralph_actors::events::event::Envelope;

use crate::views::state::ViewState;

pub const INDEX: &str = include_str!("assets/index.html");
pub const APP_JS: &str = include_str!("assets/app.js");
pub const STYLE: &str = include_str!("assets/style.css");

/// The page of run `id` (its events folded into its view, and the diff of each iteration that
/// has one), standing alone: no server, no network.
pub fn export(id: &str, events: &[Envelope], diffs: &BTreeMap<u32, String>) -> String {
    let mut view = ViewState::new();
    for event in events {
        view.apply(event);
    }
    let data = serde_json::json!({
        "id": id,
        "view": view,
        "diffs": diffs,
        "exported": chrono::Utc::now().format("%Y-%m-%d %H:%M UTC").to_string(),
    });
    // `<` only occurs inside JSON strings, where `\u003c` means the same: no `</script>` or
    // `<!--` in a model's text can end the script element early.
    let data = data.to_string().replace('<', "\\u003c");
    INDEX
        .replace(
            r#"<link rel="stylesheet" href="style.css">"#,
            &format!("<style>\n{STYLE}</style>"),
        )
        .replace(
            r#"<script src="app.js"></script>"#,
            &format!(
                "<script id=\"ralph-export\" type=\"application/json\">{data}</script>\n<script>\n{APP_JS}</script>"
            ),
        )
}

#[cfg(test)]
mod tests {
    use super::*;
    use ralph_actors::events::event::Event;

    #[test]
    fn the_assets_stay_small_and_load_nothing_from_elsewhere() {
        let size = INDEX.len() + APP_JS.len() + STYLE.len();
        assert!(size < 1_500_000, "{size} bytes");
        for asset in [INDEX, APP_JS, STYLE] {
            assert!(!asset.contains("http://") && !asset.contains("https://"));
        }
    }

    #[test]
    fn the_export_stands_alone_and_a_models_markup_cannot_break_out() {
        let event = Envelope {
            session: "s".into(),
            seq: 1,
            time: chrono::Utc::now(),
            event: Event::Warning {
                message: "</script><script>alert(1)</script>".into(),
            },
        };
        let page = export("session-s", &[event], &BTreeMap::new());
        assert!(!page.contains("href=\"style.css\"") && !page.contains("src=\"app.js\""));
        assert!(page.contains("--bg:") && page.contains("function draw("));
        assert_eq!(page.matches("</script>").count(), 2, "only the page's own");
        let json = page
            .split("type=\"application/json\">")
            .nth(1)
            .unwrap()
            .split("</script>")
            .next()
            .unwrap();
        let back: serde_json::Value = serde_json::from_str(json).unwrap();
        assert_eq!(
            back["view"]["warnings"][0],
            "</script><script>alert(1)</script>"
        );
    }
}
