//! `ralph-loop agents list` and `ralph-loop agents models NAME [--refresh]`: the coding-agent
//! CLIs ralph-loop knows, which are installed and signed in here, and their models (`agents
//! add` is [`crate::app::agents_add`]).

use std::io::Write;

use crate::agents::definition::AuthState;
use crate::agents::registry::{self, Registry};
use crate::cli::{AgentsAction, AgentsArgs};
use crate::config;
use crate::error::{Error, Result};
use crate::process::groups::ProcessGroups;

pub fn run(args: AgentsArgs) -> Result<i32> {
    let cwd =
        std::env::current_dir().map_err(|e| Error::io("cannot read the current directory", e))?;
    let (config, _) = config::load_discovered(args.config.as_deref(), &cwd)?;
    let registry = Registry::new(&config.agents);
    let mut out = std::io::stdout().lock();
    match args.action {
        AgentsAction::List => {
            let found = registry.detect(&config.agents);
            if args.json {
                let _ = serde_json::to_writer_pretty(&mut out, &found);
                let _ = writeln!(out);
                return Ok(0);
            }
            for f in &found {
                let installed = match &f.binary {
                    Some(path) => path.display().to_string(),
                    None => "not installed".into(),
                };
                let auth = match (&f.binary, &f.auth) {
                    (None, _) => String::new(),
                    (Some(_), AuthState::Ready { how }) => format!("; signed in ({how})"),
                    (Some(_), AuthState::Missing { wanted }) => {
                        format!("; not signed in (needs {wanted})")
                    }
                    (Some(_), AuthState::Unknown) => "; sign-in unknown".into(),
                };
                let origin = if f.configured {
                    ", from config"
                } else if f.unverified {
                    "; unverified: its flags follow the vendor's docs, no test here runs it"
                } else {
                    ""
                };
                let wire = match (f.gateway, f.vendor_only) {
                    (Some(provider), _) => format!("; behind the model gateway ({provider})"),
                    (None, true) => {
                        "; calls its vendor's service only (nothing can stand between)".into()
                    }
                    (None, false) => "; calls its provider itself".to_string(),
                };
                let _ = writeln!(
                    out,
                    "{:<9} {:<30} {installed}{auth}; {}{wire}{origin}",
                    f.name, f.title, f.format
                );
            }
            let usable = found.iter().filter(|f| f.usable()).count();
            let _ = writeln!(
                out,
                "{usable} of {} agents installed and usable here",
                found.len()
            );
            Ok(0)
        }
        AgentsAction::Add(add) => crate::app::agents_add::run(*add, args.config.as_deref()),
        AgentsAction::Models { name, refresh } => {
            let def = registry.get(&name)?;
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|e| Error::io("cannot start the async runtime", e))?;
            let groups = ProcessGroups::new();
            let cache = registry::models_cache(&def.name);
            let models = runtime.block_on(registry::models(def, refresh, &cache, &groups))?;
            if args.json {
                let _ = serde_json::to_writer_pretty(&mut out, &models);
                let _ = writeln!(out);
            } else {
                for model in &models.names {
                    let _ = writeln!(out, "{model}");
                }
                let from = match (&models.listed_at, models.cached) {
                    (None, _) => {
                        let list = if config.agents.iter().any(|a| a.name == def.name) {
                            "a fixed list from config"
                        } else {
                            "built-in list"
                        };
                        format!("{list}: {} has no command that lists its models", def.title)
                    }
                    (Some(at), true) => {
                        format!("cached, listed {at}; --refresh to ask again")
                    }
                    (Some(at), false) => format!("listed now ({at})"),
                };
                eprintln!("{} models of {} ({from})", models.names.len(), def.title);
            }
            Ok(0)
        }
    }
}
